"""Stage 4: resolve every typed reference and [[wikilink]] into one link graph.

Nodes are records (`dir/id`); each edge carries the field it comes from
("sources", "hardware_parameters[].parameter", "body", ...) and the line it stands
on, so backlinks can be grouped by field and every broken link reported in place.
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial
from typing import Any

from kbtools.check.store import remembered
from kbtools.corpus import Corpus, Record, Reference
from kbtools.diagnostics import Diagnostic
from kbtools.fieldwalk import iter_references
from kbtools.index import CorpusIndex
from kbtools.lang.markdown import BodyScan, headings, remember_scan, scan_body
from kbtools.registry import FieldPlan


def resolve_links(corpus: Corpus) -> Corpus:
    index = corpus.index
    found: list[Diagnostic] = []
    dirs = set(corpus.registry.dirs)
    heading_cache: dict[str, set[str]] = {}
    edges: list[tuple[str, str, str, int]] = []  # (source, target, field, line): tuples, not dicts, at 100k records

    def still_valid(cached: dict) -> bool:
        # valid while the record, what each of its targets resolves to, and its anchors' targets stay the same
        return index.resolves_as_before(cached["resolved"]) and all(
            index.digest_of(key) == d for key, d in cached["anchors"].items()
        )

    def judge(record: Record) -> None:
        others = [index.path_of(key) for key in index.by_id.keys_of(record.id) if key != record.key]
        if others:
            line, col = record.position(("id",))
            found.append(
                Diagnostic.make(
                    "KB304",
                    record.path,
                    line,
                    col,
                    f"id '{record.id}' is also used by {', '.join(others)}; ids must be unique across the repository",
                )
            )
        result = remembered(
            corpus.cache,
            record,
            "links",
            partial(_link_record, corpus, record, index, dirs, heading_cache),
            valid=still_valid,
        )
        found.extend(result["diagnostics"])
        edges.extend(map(tuple, result["edges"]))  # JSON gives lists

    judged = corpus.judged()
    for record in judged:
        judge(record)
    scope = corpus.scope
    if scope is not None:
        # a record a judged one links to now may have been an orphan until this edit: judged too (its own
        # links are as stored, so whom it links to is unchanged and the widening stops here)
        keys = {r.key for r in judged}
        gained = [corpus.records[k] for k in sorted({t for _, t, _, _ in edges} - keys, key=index.path_of)]
        for record in gained:
            judge(record)
        judged = judged + gained
        scope.cover("resolve_links", (r.path for r in gained))
    judged_keys = frozenset(r.key for r in judged)
    linked = {target for source, target, _, _ in edges if source != target}
    for record in judged:
        if record.key in linked or (scope is not None and scope.index.linked_from_outside(record.key, judged_keys)):
            continue
        line, col = record.position(("id",))
        if corpus.registry.has_role(record.type, "source"):
            found.append(
                Diagnostic.make("KB307", record.path, line, col, f"source '{record.id}' is cited by no record")
            )
        else:
            found.append(
                Diagnostic.make(
                    "KB306",
                    record.path,
                    line,
                    col,
                    f"orphan: no record links to {record.key}",
                    hint="link it from a related record, or delete it",
                )
            )
    return corpus.with_diagnostics(found, edges=tuple(edges))


def _link_record(
    corpus: Corpus,
    record: Record,
    index: CorpusIndex[Record],
    dirs: set[str],
    heading_cache: dict[str, set[str]],
) -> dict[str, Any]:
    """One record's links: its diagnostics, its edges, and the link targets whose headings it relied on."""
    mine: list[Diagnostic] = []
    my_edges: list[tuple[str, str, str, int]] = []
    anchors: dict[str, str] = {}
    scan = record_scan(corpus, record)
    if scan.skipped:
        mine.append(Diagnostic.make(scan.skipped[0], record.path, record.body_line, 1, scan.skipped[1]))
    record_type = corpus.registry.types.get(record.type) if record.type else None
    refs = record_references(corpus, record, record_type.plan, dirs) if record_type is not None else []
    for ref in refs:
        mine.extend(_link_reference(record, ref, index, my_edges))
    for link in scan.links:
        line = record.body_line + link.line
        target, candidates = index.resolve(link.target)
        if target is None:
            if candidates:
                names = ", ".join(sorted(c.key for c in candidates))
                mine.append(
                    Diagnostic.make(
                        "KB303",
                        record.path,
                        line,
                        link.column,
                        f"ambiguous link {link.text}: {names}; qualify it as [[dir/id]]",
                    )
                )
            else:
                mine.append(
                    Diagnostic.make(
                        "KB302",
                        record.path,
                        line,
                        link.column,
                        f"dangling link {link.text}: no record '{link.target}'",
                    )
                )
            continue
        my_edges.append((record.key, target.key, "body", line))
        if link.anchor:
            anchors[target.key] = target.digest
            if target.key not in heading_cache:
                heading_cache[target.key] = headings(target.body)
            if link.anchor.lower() not in heading_cache[target.key]:
                mine.append(
                    Diagnostic.make(
                        "KB305", record.path, line, link.column, f"no heading '{link.anchor}' in {target.key}"
                    )
                )
    resolved = {ref.value: index.resolution(ref.value) for ref in refs} | {
        link.target: index.resolution(link.target) for link in scan.links
    }
    return {"resolved": resolved, "anchors": anchors, "diagnostics": mine, "edges": my_edges}


def record_references(corpus: Corpus, record: Record, plan: FieldPlan, dirs: set[str]) -> list[Reference]:
    """The record's typed references: from the cache when the file (and schema) are unchanged."""
    return remembered(corpus.cache, record, "refs", lambda: list(iter_references(record, plan, dirs)))


def record_scan(corpus: Corpus, record: Record) -> BodyScan:
    """The body's links and inline values: from the cache when the file is unchanged."""
    scan = remembered(corpus.cache, record, "scan", lambda: scan_body(record.body))
    remember_scan(record.body, scan)  # later stages ask the scanner again, and get this one
    return scan


def _link_reference(record: Record, ref: Reference, index: CorpusIndex[Record], edges: list) -> list[Diagnostic]:
    line, col = record.position(ref.path)
    target, candidates = index.resolve(ref.value)
    if target is None:
        if candidates:
            typed = [c for c in candidates if c.type in ref.types]
            if len(typed) == 1:
                target = typed[0]
            else:
                names = ", ".join(sorted(c.key for c in candidates))
                return [
                    Diagnostic.make(
                        "KB303", record.path, line, col, f"{ref.field}: '{ref.value}' is ambiguous: {names}"
                    )
                ]
        else:
            return [Diagnostic.make("KB300", record.path, line, col, f"{ref.field}: no record '{ref.value}'")]
    edges.append((record.key, target.key, ref.field, line))
    if ref.types and target.type not in ref.types:
        expected = " or ".join(ref.types)
        return [
            Diagnostic.make(
                "KB301", record.path, line, col, f"{ref.field}: '{ref.value}' is a {target.type}, expected {expected}"
            )
        ]
    return []


def backlinks(corpus: Corpus, key: str) -> dict[str, list[str]]:
    """Records linking to `key`, grouped by the field the link stands in ('body' for wikilinks)."""
    grouped: dict[str, list[str]] = defaultdict(list)
    if corpus.graph is None:
        return {}
    for source, field, _ in corpus.graph.in_links(key):
        if source != key and source not in grouped[field]:
            grouped[field].append(source)
    return {field: sorted(keys) for field, keys in sorted(grouped.items())}
