"""The driver of kb check's stages: which records a stage judges, which judgements it reuses, and where they
are kept. A Stage (kbtools.check.stage) only judges; this module owns reuse and the store.

A judgement is kept in the store's row for the record's file, under the stage's name, with the reads it
rested on. It is reused while the file's bytes are the same (the row is keyed by them; the store itself by
kb's code and the schemas) and every read's fingerprint is what it was. A whole run judges every record and
a scoped run the records of its scope (Corpus.judged); which keys, not which code path.

The stages not yet written as a Stage (links, near-duplicates, compute, freshness) are still functions of
the corpus, and the pipeline calls them as they are.
"""

from __future__ import annotations

from typing import Any

from kbtools.check.stage import Context, Judgement, Stage, still_holds
from kbtools.corpus import Corpus
from kbtools.diagnostics import Diagnostic
from kbtools.progress import track


def run_stage(stage: Stage, corpus: Corpus) -> Corpus:
    """The corpus with the stage's findings: each judged record's, kept or made now, then the whole corpus's."""
    cache = corpus.cache
    judged: dict[str, Judgement] = {}
    records = sorted(corpus.judged(), key=lambda r: r.path)
    for record in track(records, stage.progress) if stage.progress else records:
        entry = cache.file(record.path, record.digest) if cache is not None else None
        kept = _kept(entry.get(stage.name)) if entry is not None else None
        if kept is None or not still_holds(corpus, kept.reads):
            ctx = Context(corpus)
            made = stage.judge(record, ctx)
            kept = Judgement(made.findings, ctx.reads())
            if entry is not None:
                entry[stage.name] = {"findings": list(kept.findings), "reads": [list(r) for r in kept.reads]}
        judged[record.key] = kept
    found: list[Diagnostic] = [d for j in judged.values() for d in j.findings]
    return corpus.with_diagnostics(found + stage.finish(corpus, judged))


def _kept(stored: Any) -> Judgement | None:
    """A judgement as the store keeps it, or None for anything else (a row of another layout is judged anew)."""
    if not isinstance(stored, dict):
        return None
    findings, reads = stored.get("findings"), stored.get("reads")
    if not isinstance(findings, list) or not all(isinstance(d, Diagnostic) for d in findings):
        return None
    if not isinstance(reads, list) or not all(
        isinstance(r, list) and len(r) == 3 and isinstance(r[0], str) and isinstance(r[1], str) for r in reads
    ):
        return None
    return Judgement(tuple(findings), tuple((r[0], r[1], r[2]) for r in reads))
