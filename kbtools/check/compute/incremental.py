"""kb check on a warm cache: which records' values must be computed again (they changed, or read
something that did), and what is kept for the next run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbtools.check.links import Index
from kbtools.corpus import Corpus, Record
from kbtools.diagnostics import Diagnostic

if TYPE_CHECKING:
    from kbtools.check.compute.engine import Computer


def resolution_key(target: Record | None, candidates: list[Record]) -> Any:
    return target.key if target is not None else tuple(sorted(c.key for c in candidates))


def dirty_records(corpus: Corpus, cache: Any, index: Index) -> set[str]:
    """Records whose compute results cannot be reused: changed, new, or reading something that changed."""
    records = corpus.records
    dirty = set()
    dependents: dict[str, set[str]] = {}
    for key, record in records.items():
        entry = cache.compute.get(key)
        if entry is None or entry["digest"] != record.digest:
            dirty.add(key)
            continue
        for dep, dep_digest in entry["deps"].items():
            dependents.setdefault(dep, set()).add(key)
            if dep not in records or records[dep].digest != dep_digest:
                dirty.add(key)
        for query, was in entry["resolved"].items():
            if resolution_key(*index.resolve(query)) != (tuple(was) if isinstance(was, list) else was):
                dirty.add(key)
    for key in cache.compute:
        if key not in records:  # deleted: whoever read it is dirty (found above by digest)
            dirty.update(dependents.get(key, ()))
    queue = list(dirty)
    while queue:  # what reads a dirty record is dirty too
        for dependent in dependents.get(queue.pop(), ()):
            if dependent not in dirty:
                dirty.add(dependent)
                queue.append(dependent)
    return dirty


def with_kept_diagnostics(
    corpus: Corpus, cache: Any, diagnostics: list[Diagnostic], only: set[str]
) -> list[Diagnostic]:
    """This run's findings for the records it computed, and the kept ones for every record it did not."""
    record_paths = {r.path for r in corpus.records.values()}
    driven_paths = {corpus.records[k].path for k in only}
    out = [d for d in diagnostics if d.path in driven_paths or d.path not in record_paths]
    for key in corpus.records:
        if key not in only:
            out.extend(cache.compute[key]["diagnostics"])
    out.extend(cache.compute_global)
    return out


def keep_for_next_run(corpus: Corpus, cache: Any, computer: Computer, only: set[str] | None, reuse: bool) -> None:
    """Per record computed: its digest, the records its values read, how its references resolved, its findings."""
    if only is not None and not only and len(cache.compute) == len(corpus.records):
        return  # nothing was computed and nothing was added or removed
    record_paths = {r.path for r in corpus.records.values()}
    by_path: dict[str, list[Diagnostic]] = {}
    for d in computer.diagnostics:
        by_path.setdefault(d.path, []).append(d)
    for key in only if only is not None else corpus.records:
        record = corpus.records[key]
        deps = computer.deps.get(key, set())
        cache.compute[key] = {
            "digest": record.digest,
            "deps": {dep: corpus.records[dep].digest for dep in deps if dep in corpus.records},
            "resolved": computer.resolved.get(key, {}),
            "diagnostics": by_path.get(record.path, []),
        }
    for key in [k for k in cache.compute if k not in corpus.records]:
        del cache.compute[key]
    globals_now = [d for d in computer.diagnostics if d.path not in record_paths]
    cache.set_global(list(dict.fromkeys(cache.compute_global + globals_now)) if reuse else globals_now)
