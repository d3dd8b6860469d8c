"""Stage 4: resolve every typed reference and [[wikilink]] into one link graph.

Nodes are records (`dir/id`); each edge carries the field it comes from
("sources", "hardware_parameters[].parameter", "body", ...) and the line it stands
on, so backlinks can be grouped by field and every broken link reported in place.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from kbtools.check.stage import Context, Edge, Judgement, Stage, Stored
from kbtools.corpus import Corpus, Record, Reference
from kbtools.diagnostics import Diagnostic
from kbtools.fieldwalk import iter_references
from kbtools.index import did_you_mean
from kbtools.lang.markdown import WikiLink, remember_scan, scan_body


class LinksStage(Stage):
    """A record's typed references and [[wikilinks]]: each resolved (KB300-KB303), the field's type checked
    (KB301), an #anchor's heading looked up (KB305), and its id unique (KB304). Its links become the corpus's
    edges; `finish` finds the records nothing links to (KB306, KB307)."""

    name = "links"

    def judge(self, record: Record, ctx: Context) -> Judgement:
        mine: list[Diagnostic] = []
        others = [ctx.corpus.index.path_of(key) for key in ctx.keys_with_id(record.id) if key != record.key]
        if others:
            line, col = record.position(("id",))
            mine.append(
                Diagnostic.make(
                    "KB304",
                    record.path,
                    line,
                    col,
                    f"id '{record.id}' is also used by {', '.join(others)}; ids must be unique across the repository",
                )
            )
        edges: list[Edge] = []
        scan = ctx.of_bytes("scan", lambda: scan_body(record.body))
        remember_scan(record.body, scan)  # later stages ask the scanner again, and get this one
        if scan.skipped:
            mine.append(Diagnostic.make(scan.skipped[0], record.path, record.body_line, 1, scan.skipped[1]))
        record_type = ctx.registry.types.get(record.type) if record.type else None
        if record_type is not None:
            dirs = set(ctx.registry.dirs)
            refs = ctx.of_bytes("refs", lambda: list(iter_references(record, record_type.plan, dirs)))
            for ref in refs:
                mine.extend(_link_reference(record, ref, ctx, edges))
        for link in scan.links:
            mine.extend(_link_body(record, link, ctx, edges))
        return Judgement(tuple(mine), edges=tuple(edges))

    def widen(self, corpus: Corpus, judged: Mapping[str, Judgement], stored: Stored) -> set[str]:
        # a record a judged one links to now may have been an orphan until this edit: judged too (its own
        # links are as stored, so whom it links to is unchanged and the widening stops there)
        return {target for j in judged.values() for _, target, _, _ in j.edges}

    def finish(self, corpus: Corpus, judged: Mapping[str, Judgement], stored: Stored) -> list[Diagnostic]:
        found: list[Diagnostic] = []
        keys = frozenset(judged)
        linked = {target for j in judged.values() for source, target, _, _ in j.edges if source != target}
        for key in sorted(judged, key=corpus.index.path_of):
            if key in linked or stored.linked_from_outside(key, keys):
                continue
            record = corpus.records[key]
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
        return found


def _link_body(record: Record, link: WikiLink, ctx: Context, edges: list[Edge]) -> list[Diagnostic]:
    line = record.body_line + link.line
    target, candidates = ctx.resolve(link.target)
    if target is None:
        if candidates:
            names = ", ".join(sorted(c.key for c in candidates))
            text = f"ambiguous link {link.text}: {names}; qualify it as [[dir/id]]"
            return [Diagnostic.make("KB303", record.path, line, link.column, text)]
        text = f"dangling link {link.text}: no record '{link.target}'{_near_misses(link.target, ctx)}"
        return [Diagnostic.make("KB302", record.path, line, link.column, text)]
    edges.append((record.key, target.key, "body", line))
    if link.anchor and link.anchor.lower() not in ctx.headings(target):
        return [Diagnostic.make("KB305", record.path, line, link.column, f"no heading '{link.anchor}' in {target.key}")]
    return []


def _link_reference(record: Record, ref: Reference, ctx: Context, edges: list[Edge]) -> list[Diagnostic]:
    line, col = record.position(ref.path)
    target, candidates = ctx.resolve(ref.value)
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
            text = f"{ref.field}: no record '{ref.value}'{_near_misses(ref.value, ctx)}"
            return [Diagnostic.make("KB300", record.path, line, col, text)]
    edges.append((record.key, target.key, ref.field, line))
    if ref.types and target.type not in ref.types:
        expected = " or ".join(ref.types)
        return [
            Diagnostic.make(
                "KB301", record.path, line, col, f"{ref.field}: '{ref.value}' is a {target.type}, expected {expected}"
            )
        ]
    return []


def _near_misses(target: str, ctx: Context) -> str:
    """' (did you mean a, b or c?)': the records a reference that resolves to nothing may have meant, as
    `kb plan` and `kb explain` offer them. Each one offered is a read, so the finding is judged again when
    one of them is renamed or removed (a record added later that would be a better guess is offered the
    next time the record is judged)."""
    close = ctx.corpus.index.suggestions(target)
    for word in close:
        ctx.resolve(word)
    return did_you_mean(close)


def backlinks(corpus: Corpus, key: str) -> dict[str, list[str]]:
    """Records linking to `key`, grouped by the field the link stands in ('body' for wikilinks)."""
    grouped: dict[str, list[str]] = defaultdict(list)
    if corpus.graph is None:
        return {}
    for source, field, _ in corpus.graph.in_links(key):
        if source != key and source not in grouped[field]:
            grouped[field].append(source)
    return {field: sorted(keys) for field, keys in sorted(grouped.items())}
