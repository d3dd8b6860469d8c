"""The driver of kb check: what a run judges, what it reuses, and the store it keeps.

- driver: CheckRun, the one owner of reuse, scope and the store;
- stages: how it runs one Stage (kbtools.check.stage) over the records it chose;
- scope: the records a few edits can change, found in the store's index;
- memo: the last whole run's answer, while nothing it read has changed.

Nothing is imported here: a warm `kb check` imports the memo alone.
"""
