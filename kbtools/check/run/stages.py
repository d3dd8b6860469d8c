"""How the driver (kbtools.check.run.driver) runs one Stage: which records it judges, which judgements it
reuses, and where they are kept. A Stage (kbtools.check.stage) only judges.

A judgement is kept in the store's row for the record's file, under the stage's name, with the reads it
rested on and the links it found. It is reused while the file's bytes are the same (the row is keyed by them;
the store itself by kb's code and the schemas) and every read's fingerprint is what it was. A whole run judges
every record. A scoped run (after a few edits) judges the records of its scope, then those the stage's
`widen` names, and tells the scope it covered them, so that their stored findings give way to these: which
keys, not which code path.

Compute is the one stage that is not a Stage: its judgement reads other records' values, and its own reads
table (kbtools.check.compute.incremental) decides what it computes again; the driver calls it with the run.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kbtools.check.stage import Context, Edge, Judgement, Run, Stage, Stored, still_holds
from kbtools.corpus import Corpus, Record
from kbtools.diagnostics import Diagnostic
from kbtools.progress import track


class NothingStored:
    """A whole run's Stored: every record is judged, so nothing lies outside it."""

    def linked_from_outside(self, key: str, judged: frozenset[str] | set[str]) -> bool:
        return False

    def group_members(self, type_: str | None, kind: int, value: str) -> set[str]:
        return set()

    def groups_of(self, key: str) -> tuple[str | None, ...]:
        return ()


NOTHING_STORED = NothingStored()


def run_stage(stage: Stage, corpus: Corpus, run: Run | None = None) -> Corpus:
    """The corpus with the stage's findings (each judged record's, kept or made now, then the corpus's) and,
    for a stage that finds links, its edges. Without a run: every record judged, nothing kept."""
    judged: dict[str, Judgement] = {}
    records = sorted(run.judged(corpus) if run is not None else corpus.records.values(), key=lambda r: r.path)
    cache = run.store if run is not None else None
    _judge(stage, corpus, cache, track(records, stage.progress) if stage.progress else records, judged)
    stored: Stored = run.stored if run is not None else NOTHING_STORED
    if run is not None and run.scope is not None:
        more = sorted(stage.widen(corpus, judged, stored) - judged.keys())
        _judge(stage, corpus, cache, (corpus.records[k] for k in more), judged)
        run.cover(stage.name, (corpus.records[k].path for k in more))
    found: list[Diagnostic] = [d for j in judged.values() for d in j.findings]
    found += stage.finish(corpus, judged, stored)
    edges: list[Edge] = [e for j in judged.values() for e in j.edges]
    return corpus.with_diagnostics(found, edges=tuple(edges)) if edges else corpus.with_diagnostics(found)


def _judge(stage: Stage, corpus: Corpus, cache: Any, records: Iterable[Record], judged: dict[str, Judgement]) -> None:
    for record in records:
        row = cache.files.file(record.path, record.digest) if cache is not None else None
        kept = _kept(row.get(stage.name)) if row is not None else None
        if kept is None or not still_holds(corpus, kept.reads):
            ctx = Context(corpus, row)
            made = stage.judge(record, ctx)
            kept = Judgement(made.findings, ctx.reads(), made.edges)
            if row is not None:
                row[stage.name] = {
                    "findings": list(kept.findings),
                    "reads": [list(r) for r in kept.reads],
                    "edges": [list(e) for e in kept.edges],
                }
        judged[record.key] = kept


def _kept(stored: Any) -> Judgement | None:
    """A judgement as the store keeps it, or None for anything else (a row of another layout is judged anew)."""
    if not isinstance(stored, dict):
        return None
    findings, reads, edges = stored.get("findings"), stored.get("reads"), stored.get("edges")
    if not isinstance(findings, list) or not all(isinstance(d, Diagnostic) for d in findings):
        return None
    if not isinstance(reads, list) or not all(
        isinstance(r, list) and len(r) == 3 and isinstance(r[0], str) and isinstance(r[1], str) for r in reads
    ):
        return None
    if not isinstance(edges, list) or not all(
        isinstance(e, list)
        and len(e) == 4
        and all(isinstance(x, str) for x in e[:3])
        and isinstance(e[3], int)
        and not isinstance(e[3], bool)
        for e in edges
    ):
        return None
    return Judgement(
        tuple(findings), tuple((r[0], r[1], r[2]) for r in reads), tuple((e[0], e[1], e[2], e[3]) for e in edges)
    )
