"""Stage 4: resolve every typed reference and [[wikilink]] into one link graph.

Nodes are records (`dir/id`); each edge carries the field it comes from
("sources", "hardware_parameters[].parameter", "body", ...) and the line it stands
on, so backlinks can be grouped by field and every broken link reported in place.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

from kbtools.check.cache import remembered
from kbtools.check.scope import StoredRecords
from kbtools.corpus import Corpus, FieldPath, Record, Reference
from kbtools.diagnostics import Diagnostic
from kbtools.lang.markdown import BodyScan, headings, remember_scan, scan_body
from kbtools.registry import FieldPlan

QUALIFIED = re.compile(r"^([a-z0-9][a-z0-9_-]*)/([a-z0-9]+(?:-[a-z0-9]+)*)$")


def walk_plan(plan: FieldPlan | None, value: Any, path: FieldPath = ()) -> Iterator[tuple[FieldPath, Any, FieldPlan]]:
    """Every (path, value, plan) in a record's data, following the schema's shape."""
    if plan is None:
        return
    yield path, value, plan
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk_plan(plan.child(key), item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk_plan(plan.items, item, path + (index,))


def iter_references(record: Record, plan: FieldPlan, dirs: set[str]) -> Iterator[Reference]:
    for path, value, node in walk_plan(plan, dict(record.data)):
        if node.ref_types and isinstance(value, str):
            yield Reference(path, value, node.ref_types)
        elif node.inputs and isinstance(value, dict):
            # Cost inputs: a string (or list of strings) 'dir/id' with a known dir is a reference.
            for name, item in value.items():
                chosen = isinstance(item, dict) and isinstance(item.get("choose"), list)
                items = item["choose"] if chosen else item if isinstance(item, list) else [item]
                for index, entry in enumerate(items):
                    match = QUALIFIED.match(entry) if isinstance(entry, str) else None
                    if match and match.group(1) in dirs:
                        sub = (
                            path + (name, "choose", index)
                            if chosen
                            else path + (name, index)
                            if isinstance(item, list)
                            else path + (name,)
                        )
                        yield Reference(sub, entry, ())


class Index:
    """Look-ups over the corpus by id and by dir/id. Over a scoped run's StoredRecords it is built from the
    store's id table, and a record is decoded only when a look-up returns it."""

    def __init__(self, corpus: Corpus):
        records = corpus.records
        self.by_key: Mapping[str, Record] = records
        if isinstance(records, StoredRecords):
            keys_by_id = records.keys_by_id  # built once per run from the store's id table
        else:
            keys_by_id = defaultdict(list)
            for key, record in records.items():
                keys_by_id[record.id].append(key)
        self.by_id = RecordsById(keys_by_id, records)
        self._fingerprint = corpus.scope.fingerprint if corpus.scope is not None else None

    def fingerprint(self) -> str:
        """Changes whenever a reference anywhere could resolve differently: ids, dirs or types."""
        if self._fingerprint is None:
            text = "\n".join(f"{key}\t{record.type}" for key, record in sorted(self.by_key.items()))
            self._fingerprint = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        return self._fingerprint

    def digest_of(self, key: str) -> str | None:
        if key not in self.by_key:
            return None
        if isinstance(self.by_key, StoredRecords):
            return self.by_key.digest_of(key)
        return self.by_key[key].digest

    def resolution(self, target: str) -> str | list[str]:
        """What `target` resolves to, as kept with a result that relied on it: the key found, or the sorted
        keys of the candidates (none: dangling). A result stays valid while each of its targets resolves
        the same, so a record added or removed re-judges only the records naming it."""
        if "/" in target:
            return target if target in self.by_key else []
        keys = self.by_id.keys_of(target)
        return keys[0] if len(keys) == 1 else sorted(keys)

    def resolves_as_before(self, kept: Mapping[str, Any]) -> bool:
        return all(self.resolution(target) == was for target, was in kept.items())

    def path_of(self, key: str) -> str:
        return self.by_key.path_of(key) if isinstance(self.by_key, StoredRecords) else self.by_key[key].path

    def named(self, text: str) -> tuple[Record | None, list[Record], list[str]]:
        """A record as a person names it on the command line: its dir/id or id, else one of its `aliases`
        or its name, in any case ('h200' for the record that lists H200). (record, [], []) when found; (None,
        candidates, []) when the name is ambiguous; (None, [], close spellings) when nothing answers to it.
        Records' own references resolve by id alone (resolve): an alias is a reader's word, not a link."""
        found, candidates = self.resolve(text)
        if found is not None or candidates:
            return found, candidates, []
        folded = text.strip().casefold()
        if folded and not isinstance(self.by_key, StoredRecords):  # a whole corpus: every record is in hand
            matching = [
                record
                for record in self.by_key.values()
                if any(
                    isinstance(word, str) and word.strip().casefold() == folded
                    for word in [*(record.data.get("aliases") or []), record.data.get("name"), record.id]
                )
            ]
            if len(matching) == 1:
                return matching[0], [], []
            if matching:
                return None, sorted(matching, key=lambda r: r.key), []
        words = list(self.by_id) + [k for k in self.by_key if "/" in text]
        return None, [], difflib.get_close_matches(text, words, n=3, cutoff=0.6)

    def resolve(self, target: str) -> tuple[Record | None, list[Record]]:
        """(the record, []) when found; (None, candidates) when a bare id is ambiguous or missing."""
        if "/" in target:
            return self.by_key.get(target), []
        candidates = self.by_id.get(target, [])
        if len(candidates) == 1:
            return candidates[0], []
        return None, candidates


def no_record(text: str, candidates: list[Record], close: list[str]) -> str:
    """What a command says when `text` names no one record: the records it could be, or close spellings."""
    if candidates:
        return f"'{text}' could be any of {', '.join(c.key for c in candidates)}: name one as dir/id"
    return f"no record '{text}'" + (f" (did you mean {' or '.join(close)}?)" if close else "")


class RecordsById(Mapping[str, list[Record]]):
    """id -> the records that have it; `keys_of` answers without decoding a stored record."""

    def __init__(self, keys_by_id: dict[str, list[str]], records: Mapping[str, Record]):
        self._keys, self._records = keys_by_id, records

    def keys_of(self, record_id: str) -> list[str]:
        return self._keys.get(record_id, [])

    def __getitem__(self, record_id: str) -> list[Record]:
        keys = self._keys.get(record_id)  # never [record_id]: a defaultdict would keep every id looked up
        if keys is None:
            raise KeyError(record_id)
        return [self._records[key] for key in keys]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def resolve_links(corpus: Corpus) -> Corpus:
    index = Index(corpus)
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
    index: Index,
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


def _link_reference(record: Record, ref: Reference, index: Index, edges: list) -> list[Diagnostic]:
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
