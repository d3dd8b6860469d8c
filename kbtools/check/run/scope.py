"""What a warm `kb check` judges again, found by query in the store, and what it keeps of the last run.

The store (kbtools.check.store, in kb's state directory) holds, beside each file's stage results, an index
of the corpus as the last run saw it: every record's id, type and digest and the keys its near-duplicate
check groups by (`ids`), every link (`edges`), and every file's findings per stage (`findings`). When a
few files changed and none of them came, went, or changed its id, a run reads those files only and judges
again exactly the records whose findings can depend on them:

- the changed records themselves (every stage);
- the records linking to one (a heading they link to may be gone; the sources a constraint reads);
- the records a changed one linked to before or links to now (whether they are orphans);
- the members of the near-duplicate groups a changed record left or joined (kbtools.check.similar);
- the readers of a value that came out differently (compute's own cut-off, kbtools.check.compute).

Every other file's findings are the stored ones. Anything this cannot decide (a file added, deleted or
renamed, an id edited, a store that cannot be read or that another kb wrote meanwhile) makes the run a
whole one, which rewrites the index: a scoped run is an optimisation, never a different answer (tests
compare it with a cold run over random edits, two runs at once, and a corrupted store).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kbtools.check.load import LoadError, discover, parse_all, read_regular
from kbtools.check.store import Cache, encode, revive
from kbtools.check.store.index import StoredIndex, StoreFailed
from kbtools.corpus import Corpus, Record, Settings
from kbtools.diagnostics import Diagnostic
from kbtools.files import digest
from kbtools.registry import TypeRegistry

SCOPED_MAX = 0.05  # beyond this share of the files changed, a whole run is as fast (and simpler)


def group_keys(record: Record, registry: Any) -> tuple[str | None, str | None]:
    from kbtools.check.similar import document_key, name_of

    return name_of(record), document_key(registry)(record)


class StoredRecords(Mapping[str, Record]):
    """Every record of the corpus by key, as a mapping: the records read this run, and the others decoded
    from the store when first asked for. Iterating it decodes every record (correct, and slow): the stages
    of a scoped run visit the run's judged records only (kbtools.check.run.driver). A RecordSource (kbtools.index): the corpus's index answers
    from the store's id table, and its fingerprint is the one the last run stored, unchanged since (no id,
    dir or type changed, or the run would not be scoped)."""

    in_hand = False  # a search over every record would decode them all

    def __init__(self, index: StoredIndex, fresh: dict[str, Record], cache: Any, fingerprint: str):
        self.index, self.fresh, self.cache = index, fresh, cache
        self.keys_in_order = list(index.known)
        self._fingerprint = fingerprint

    def __getitem__(self, key: str) -> Record:
        if key in self.fresh:
            return self.fresh[key]
        known = self.index.known[key]  # KeyError: no such record
        entry = self.cache.files.get(known.path)
        record = entry.get("record") if entry is not None else None
        if not isinstance(record, Record) or record.digest != known.digest:
            raise StoreFailed(f"the store holds no record for {known.path}")
        self.fresh[key] = record
        return record

    def __contains__(self, key: object) -> bool:
        return key in self.index.known

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_in_order)

    def __len__(self) -> int:
        return len(self.index.known)

    @cached_property
    def keys_by_id(self) -> dict[str, list[str]]:
        """id -> the keys of the records that have it (in path order): what the corpus's index looks up."""
        out: dict[str, list[str]] = {}
        for key, known in self.index.known.items():
            out.setdefault(known.id, []).append(key)
        return out

    @cached_property
    def paths(self) -> frozenset[str]:
        return frozenset(known.path for known in self.index.known.values())

    def path_of(self, key: str) -> str:
        return self.index.known[key].path

    def digest_of(self, key: str) -> str:
        return self.fresh[key].digest if key in self.fresh else self.index.known[key].digest

    def fingerprint(self) -> str:
        return self._fingerprint


@dataclass
class Scope:
    """The records a scoped run judges again, and per stage the files whose findings it replaced."""

    keys: frozenset[str]
    changed_paths: frozenset[str]  # files read this run (a record's, or one that failed to load)
    index: StoredIndex
    covered: dict[str, set[str]] = field(default_factory=dict)  # stage -> paths judged beyond the scope's

    def cover(self, stage: str, paths: Iterable[str]) -> None:
        self.covered.setdefault(stage, set()).update(paths)


def changed_files(files: list[str], root: Any, cache: Any) -> tuple[list[str], dict[str, os.stat_result]] | None:
    """The files whose stat differs from the store's (or that are too new to trust by stat), with their stat;
    None when files came or went."""
    stats = cache.files.field_of_all("stat")
    if cache.read_failed or set(stats) != set(files):
        return None
    changed: list[str] = []
    taken: dict[str, os.stat_result] = {}
    for rel in files:
        try:
            st = os.stat(os.path.join(root, rel))
        except OSError:
            return None
        if not cache.files.same_stat(stats[rel], st):
            changed.append(rel)
            taken[rel] = st
    return changed, taken


def too_many(edited: int, files: int) -> bool:
    """Beyond this many edited files a whole run is as quick, and simpler."""
    return edited > max(20, SCOPED_MAX * files)


def decode_findings(rows: list[tuple[str, str, str]], covered: Mapping[str, set[str]]) -> list[Diagnostic]:
    """The stored findings of every (file, stage) this run did not judge again."""
    out: list[Diagnostic] = []
    for path, stage, body in rows:
        if path in covered.get(stage, ()):
            continue
        try:
            found = revive(json.loads(body))
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            raise StoreFailed(f"unreadable findings for {path}") from None
        if not isinstance(found, list) or not all(isinstance(d, Diagnostic) for d in found):
            raise StoreFailed(f"unreadable findings for {path}")
        out.extend(found)
    return out


@dataclass
class IndexUpdate:
    """What a run writes to the store's index: all of it (a whole run) or the rows it judged again."""

    whole: bool
    ids: list[tuple[str, str, str, str | None, str, str | None, str | None]]
    edge_sources: set[str]  # whose stored links are replaced (a scoped run)
    edges: list[tuple[str, str, str, int]]
    findings: dict[tuple[str, str], str | None]  # (path, stage) -> diagnostics as JSON; None: none any more

    @property
    def empty(self) -> bool:
        return not (self.whole or self.ids or self.edge_sources or self.findings)


def _id_row(record: Record, registry: Any) -> tuple[str, str, str, str | None, str, str | None, str | None]:
    name_key, url_key = group_keys(record, registry)
    return (record.key, record.path, record.id, record.type, record.digest, name_key, url_key)


def _findings(
    found: Mapping[str, list[Diagnostic]], paths: Callable[[str], set[str]]
) -> dict[tuple[str, str], list[Diagnostic]]:
    """Each stage's findings by file, for the files `paths(stage)` (a record's file, never a schema's)."""
    out: dict[tuple[str, str], list[Diagnostic]] = {}
    for stage, diagnostics in found.items():
        judged = paths(stage)
        for d in diagnostics:
            if d.path in judged:
                out.setdefault((d.path, stage), []).append(d)
    return out


def _encoded(findings: dict[tuple[str, str], list[Diagnostic]]) -> dict[tuple[str, str], str | None]:
    return {where: encode(diagnostics) for where, diagnostics in findings.items()}


def whole_index(corpus: Any, found: Mapping[str, list[Diagnostic]], files: set[str]) -> IndexUpdate:
    """The index of a whole run: every record, every link, every file's findings."""
    ids = [_id_row(record, corpus.registry) for record in corpus.records.values()]
    return IndexUpdate(True, ids, set(), list(corpus.edges or ()), _encoded(_findings(found, lambda stage: files)))


def scoped_index(
    corpus: Any, scope: Scope, found: Mapping[str, list[Diagnostic]], covered: Mapping[str, set[str]]
) -> IndexUpdate:
    """The rows a scoped run judged again: the changed records' ids, the links of every record the links
    stage judged, and the findings of every (file, stage) it covered (emptied where nothing is found now)."""
    fresh = [corpus.records[k] for k in scope.keys if corpus.records[k].path in scope.changed_paths]
    linked = set(scope.keys) | {k for k in corpus.records.fresh if corpus.records[k].path in covered["links"]}
    findings: dict[tuple[str, str], str | None] = {
        (path, stage): None for stage, paths in covered.items() for path in paths
    }
    findings.update(_encoded(_findings(found, lambda stage: covered.get(stage, set()))))
    edges = [edge for edge in corpus.edges or () if edge[0] in linked]
    return IndexUpdate(False, [_id_row(r, corpus.registry) for r in fresh], linked, edges, findings)


def load_scoped(settings: Settings, registry: TypeRegistry, cache: Cache) -> tuple[Corpus, Scope] | None:
    """A scoped run's corpus and scope: the changed files read and parsed, every other record left in the
    store until a stage asks for it. None when a whole run is needed: no index in the store,
    files that came or went, too many changes, or a record that appeared, vanished or changed its id."""
    if not (cache.trusted and cache.indexed) or cache.reader is None or cache.index_fingerprint is None:
        return None
    files, diagnostics = discover(settings, registry)
    changes = changed_files(files, str(settings.root), cache)
    if changes is None:
        return None
    changed, stats = changes
    index = StoredIndex(cache.reader)
    key_at = {known.path: key for key, known in index.known.items()}
    to_parse: list[tuple[int, str, str, bytes, str]] = []
    for rel in changed:
        try:
            raw, stats[rel] = read_regular(settings.root / rel)
        except LoadError:
            return None  # unreadable now: the whole run reports it
        file_digest = digest(raw)
        if cache.files.file(rel, file_digest) is not None:  # touched, not edited
            cache.files.note_stat(rel, stats[rel])
        else:
            to_parse.append((0, rel, str(settings.root / rel), raw, file_digest))
            if too_many(len(to_parse), len(files)):
                return None
    fresh: dict[str, Record] = {}
    found: list[Diagnostic] = []
    for (_, rel, _, _, file_digest), (record, load_found, extra) in zip(
        to_parse, parse_all(to_parse, registry, with_stages=True), strict=True
    ):
        known = index.known.get(key_at.get(rel, ""))
        if (record is None) != (known is None):
            return None  # a record came or went: references anywhere may resolve differently
        if record is not None and known is not None and (record.id, record.type) != (known.id, known.type):
            return None  # an id edited in place: the same
        cache.files.store_file(rel, file_digest, record=record, load=load_found, **extra)
        cache.files.note_stat(rel, stats[rel])
        found.extend(load_found)
        if record is not None:
            fresh[record.key] = record
    keys = set(fresh) | index.sources_into(fresh) | index.targets_from(fresh)
    scope = Scope(frozenset(keys), frozenset(rel for _, rel, _, _, _ in to_parse), index)
    corpus = Corpus(
        settings=settings,
        registry=registry,
        records=StoredRecords(index, fresh, cache, cache.index_fingerprint),
        diagnostics=tuple(registry.diagnostics) + tuple(diagnostics) + tuple(found),
    )
    return corpus, scope
