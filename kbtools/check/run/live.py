"""A checked corpus kept in memory by a long-lived process (`kb serve`), brought up to date after an edit.

The first check is whole and complete: every record and every computed value. After that, a refresh is a
scoped run (kbtools.check.run.scope): it reads the changed files and judges again what they can change, with
findings identical to a cold run. What it did not judge is the same as in the corpus held here, so the two
are merged: the changed records, their links and the values computed again replace their old selves, and
everything else is kept. A scoped run changes no id and adds or removes no record, so a record that was not
read again links to the same targets as before, and compute's cut-off says that a value it did not compute
again came out the same. Whatever the scoped run cannot answer (a record added or deleted, many edits, a
store another kb process wrote meanwhile) costs a whole, complete run, as the first one did.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from kbtools.check.pipeline import checked, start_run
from kbtools.check.run.driver import CheckRun
from kbtools.corpus import Corpus, Settings


class LiveCorpus:
    """The checked corpus of a knowledge base, complete (every record and value), refreshed on demand."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.corpus: Corpus | None = None
        self.run: CheckRun | None = None  # the last refresh's, whose store its corpus reads until `close`
        self.last_was_scoped = False  # what the last refresh did, for the terminal and the tests

    def refresh(self) -> Corpus:
        held = self.corpus
        self.close()
        run = start_run(self.settings, use_cache=True, complete=True, scoped=held is not None)
        fresh = checked(run)
        merged = merge(held, fresh) if held is not None and run.scope is not None else None
        if merged is None and run.scope is not None:  # scoped, but not against what this process holds
            run.close()
            run = start_run(self.settings, use_cache=True, complete=True)
            fresh = checked(run)
        self.run, self.last_was_scoped = run, merged is not None
        self.corpus = merged if merged is not None else fresh
        return self.corpus

    def close(self) -> None:
        """Let go of the store: it is read again at the next refresh, by then maybe written by another kb."""
        if self.run is not None:
            self.run.close()


def merge(held: Corpus, scoped: Corpus) -> Corpus | None:
    """The held corpus with a scoped run's changes in place; None when the run was scoped against a store
    that is not the held corpus's (another kb saved in between), so what changed is not only what it read."""
    stored = scoped.records
    fresh = getattr(stored, "fresh", None)
    known = getattr(getattr(stored, "index", None), "known", None)
    if fresh is None or known is None or set(known) != set(held.records):
        return None
    if any(entry.digest != held.records[key].digest for key, entry in known.items()):
        return None  # the store's last save is another kb process's: what it saw changed is not read here
    changed = {key for key, record in fresh.items() if record.digest != held.records[key].digest}
    records = {key: fresh[key] if key in changed else record for key, record in held.records.items()}
    edges_from: dict[str, list[tuple]] = {}
    for edge in held.edges or ():
        if edge[0] not in changed:
            edges_from.setdefault(edge[0], []).append(edge)
    for edge in scoped.edges or ():
        if edge[0] in changed:
            edges_from.setdefault(edge[0], []).append(edge)
    edges = tuple(edge for key in records for edge in edges_from.get(key, ()))  # in the cold run's order
    computed = MappingProxyType({**held.computed, **scoped.computed})
    return replace(scoped, records=records, edges=edges, computed=computed)
