"""Stage: near-duplicates, the records an auditor finds twice.

Two records of one type whose names differ only in case, spacing or punctuation ("NVIDIA H100 SXM"
and "Nvidia H100-SXM") are KB309. Two sources that point at one document are KB310: the same URL
once the scheme, a leading www., the host's case, a default port, a trailing slash, the fragment
and tracking parameters are set aside, or the same DOI. Both are warnings that name the other
record. Records that are distinct on purpose say so with `distinct_from: [dir/id]` on either one.

One pass over the corpus, grouping by a key (kbtools.lang.normal): no pairwise comparison, so it stays linear.
"""

from __future__ import annotations

from collections.abc import Mapping

from kbtools.check.stage import Context, Judgement, Stage, Stored
from kbtools.corpus import Corpus, Record
from kbtools.diagnostics import Diagnostic
from kbtools.index import CorpusIndex
from kbtools.lang.normal import name_key, url_key


class SimilarStage(Stage):
    """Near-duplicates are a finding about a group, never about one record: `judge` finds nothing, `widen`
    closes a scoped run over the groups its records are in now or were in before the edit, and `finish` groups
    what was judged."""

    name = "similar"

    def judge(self, record: Record, ctx: Context) -> Judgement:
        return Judgement()

    def widen(self, corpus: Corpus, judged: Mapping[str, Judgement], stored: Stored) -> set[str]:
        """Every member of a group a judged record is in, or was in (the store's id table), closed over the
        members' own groups, so that each group finish sees is whole."""
        document_of = document_key(corpus.registry)
        chosen = set(judged)
        frontier = list(judged)
        seen: set[tuple[str | None, int, str]] = set()
        while frontier:
            record = corpus.records[frontier.pop()]
            keys = {(0, name_of(record)), (1, document_of(record)), *enumerate(stored.groups_of(record.key))}
            for kind, value in keys:
                if value is None or (record.type, kind, value) in seen:
                    continue
                seen.add((record.type, kind, value))
                for key in stored.group_members(record.type, kind, value) - chosen:
                    chosen.add(key)
                    frontier.append(key)
        return chosen

    def finish(self, corpus: Corpus, judged: Mapping[str, Judgement], stored: Stored) -> list[Diagnostic]:
        found: list[Diagnostic] = []
        document_of = document_key(corpus.registry)
        members = sorted((corpus.records[k] for k in judged), key=lambda r: r.path)
        for code, key_of, field in (("KB309", name_of, "name"), ("KB310", document_of, "url")):
            groups: dict[tuple[str, str], list[Record]] = {}
            for record in members:
                key = key_of(record)
                if key is not None:
                    groups.setdefault((record.type or "", key), []).append(record)
            for records in groups.values():
                first = records[0]
                for other in records[1:]:
                    if _distinct(corpus.index, first, other):  # the index is asked only when a group holds two
                        continue
                    line, col = other.value_position((field,))
                    found.append(Diagnostic.make(code, other.path, line, col, _message(code, first, other)))
        return found


def _message(code: str, first: Record, other: Record) -> str:
    if code == "KB309":
        return (
            f"name {other.data.get('name')!r} is the same as {first.key}'s {first.data.get('name')!r} but for "
            f"case, spacing or punctuation: merge the two, or name them apart (distinct_from: [{first.key}] "
            "if they are different things)"
        )
    return (
        f"url is the same document as {first.key}'s ({first.data.get('url')}): one document, two "
        f"source records; merge them (distinct_from: [{first.key}] if they are different documents)"
    )


def name_of(record: Record) -> str | None:
    """The key KB309 groups a record's name by."""
    name = record.data.get("name")
    return name_key(name) or None if isinstance(name, str) else None


def document_key(registry):
    """A record's document key (what KB310 groups by), for records of the type that plays the source role."""
    sources = registry.with_role("source")
    source_type = sources.name if sources else None

    def document_of(record: Record) -> str | None:
        url = record.data.get("url")
        return url_key(url) if isinstance(url, str) and source_type is not None and record.type == source_type else None

    return document_of


def _distinct(index: CorpusIndex[Record], a: Record, b: Record) -> bool:
    """Either record says, with distinct_from, that the other is a different thing."""
    for this, that in ((a, b), (b, a)):
        declared = this.data.get("distinct_from")
        for item in declared if isinstance(declared, list) else []:
            target, _ = index.resolve(item) if isinstance(item, str) else (None, [])
            if target is not None and target.key == that.key:
                return True
    return False
