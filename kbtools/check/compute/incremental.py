"""kb check on a warm cache: which records' values must be computed again, and what is kept for the next run.

A record is recomputed when its file changed, when it is new, when a reference it (or a value it read)
resolved would now resolve differently, or when a value it read, transitively, came out differently
this run. The last is the early cut-off: an edit that leaves what others read unchanged (a sentence of
the body, a field nobody reads) recomputes the edited record alone. What each record read is kept in
the cache's reverse-dependency table, one row per (reader, record read) with a fingerprint of every
value read, so a run asks only for the readers of what it recomputed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from kbtools.check.compute.flow import FAILED, QUERY, RAW
from kbtools.check.compute.stored import Decoder, Encoder
from kbtools.corpus import Corpus, Record, RecordValues
from kbtools.diagnostics import Diagnostic

if TYPE_CHECKING:
    from kbtools.check.compute.engine import Computer
    from kbtools.check.stage import Run


def resolution_key(target: Record | None, candidates: list[Record]) -> Any:
    return target.key if target is not None else tuple(sorted(c.key for c in candidates))


_UNIT_TEXT: dict[Any, str] = {}  # pint formats a unit in tens of microseconds, and a run fingerprints ~10 per value


def _quantity(q: Any) -> str | None:
    if q is None:
        return None
    units = q._units  # pint's hashable container of unit names and exponents, one per distinct unit
    text = _UNIT_TEXT.get(units)
    if text is None:
        text = _UNIT_TEXT[units] = str(q.units)
    return f"{q.magnitude!r} {text}"


def fingerprint(value: Any) -> str:
    """What a reader can see of a value (its figure, unit, provenance, formula and the figures it was made
    of), hashed. Shallow on purpose: a reader of a value sees its inputs' figures, not their provenance."""
    if value is None or value is FAILED:
        return "failed" if value is FAILED else "none"
    if not hasattr(value, "quantity"):
        return hashlib.blake2b(json.dumps(value, sort_keys=True, default=str).encode(), digest_size=12).hexdigest()
    shown = [
        _quantity(value.quantity),
        value.record,
        value.name,
        value.path,
        value.line,
        value.basis,
        value.confidence,
        list(value.sources),
        value.unit,
        value.formula.text if value.formula is not None else None,
        [(n, _quantity(v.quantity), v.basis) for n, v in value.inputs],
        _quantity(value.recomputed.quantity) if value.recomputed is not None else None,
        [(n, fingerprint(v)) for n, v in value.rows] if value.rows is not None else None,
        value.vendor_claim,
        value.note,
        [fingerprint(a) for a in value.alternatives],
        value.rank,
        value.weakest,
        [(scenario, _quantity(q)) for scenario, q in value.variants],
        [_quantity(q) for q in value.bounds] if value.bounds is not None else None,
    ]
    return hashlib.blake2b(json.dumps(shown, default=str).encode(), digest_size=12).hexdigest()


def _raw(record: Record, name: str) -> str:
    return fingerprint({"raw": record.data.get(name.removeprefix(RAW))})


def dirty_records(corpus: Corpus, run: Run, computer: Computer) -> set[str]:
    """Records whose values cannot be reused before anything is computed: changed, new, resolving a
    reference differently, or reading a record that is gone."""
    cache = run.store
    records = corpus.records
    index = computer.index
    same_index = cache.index_fingerprint == index.fingerprint()
    dirty = set()
    for record in run.judged(corpus):
        key = record.key
        entry = cache.compute.get(key)
        if entry is None or entry["digest"] != record.digest:
            dirty.add(key)
        elif not same_index:  # records came or went: a reference may resolve differently
            for query, was in entry["resolved"].items():
                if resolution_key(*index.resolve(query)) != (tuple(was) if isinstance(was, list) else was):
                    dirty.add(key)
                    break
    for key in [k for k in cache.compute if k not in records]:  # deleted: whoever read it is dirty
        dirty.update(r for r in cache.reads.dependents(key) if r in records)
    return dirty


def cut_off(corpus: Corpus, cache: Any, computer: Computer, recomputed: set[str], dirty: set[str]) -> set[str]:
    """The readers of the records just recomputed for whom something they read came out differently."""
    more = set()
    for dep in sorted(recomputed):
        record = corpus.records.get(dep)
        for reader, seen in cache.reads.dependents(dep).items():
            if reader in dirty or reader in more or reader not in corpus.records:
                continue
            for name, was in seen.items():
                if record is None:
                    now = None
                elif name.startswith(RAW):
                    now = _raw(record, name)
                else:
                    key = (dep, name)
                    now = fingerprint(computer.memo[key]) if key in computer.memo else None
                if now != was:
                    more.add(reader)
                    break
    return more


def with_kept_diagnostics(corpus: Corpus, run: Run, diagnostics: list[Diagnostic], only: set[str]) -> list[Diagnostic]:
    """This run's findings for the records it computed, and the kept ones for every record it did not."""
    cache = run.store
    record_paths = corpus.record_paths()
    driven_paths = {corpus.records[k].path for k in only}
    out = [d for d in diagnostics if d.path in driven_paths or d.path not in record_paths]
    for record in run.judged(corpus):  # in a scoped run, the others' findings are the stored ones
        if record.key not in only:
            out.extend(cache.compute[record.key]["diagnostics"])
    run.cover("recompute_costs", driven_paths)
    out.extend(cache.compute_global)
    return out


def with_stored_values(
    corpus: Corpus, cache: Any, computer: Computer, computed: dict[str, RecordValues], only: set[str]
) -> dict[str, RecordValues]:
    """Every record's values: those computed this run, the rest read from the store. A record whose stored
    values are missing (kb check keeps none) or do not decode is computed now and joins `only`; a stored
    reference that names nothing makes every stored value suspect, and all are computed."""
    cache.reads.hold_reads()  # what a build's pages rest on, from the snapshot these values come from
    decoder, unknown = Decoder(), set()
    decoded: dict[str, RecordValues | None] = {}
    for key in corpus.records:
        if key in only:
            continue
        entry = cache.compute.get(key)
        stored = entry.get("values") if entry is not None else None
        try:
            decoded[key] = decoder.record(key, stored)
        except Exception:  # noqa: BLE001 -- whatever a row holds that kb cannot read costs a recomputation
            unknown.add(key)
    if unknown:
        only |= unknown
        computed.update(computer.run(unknown))
    everything: dict[str, RecordValues | None] = {**computed, **decoded}
    try:
        broken = decoder.resolve(everything)
    except Exception:  # noqa: BLE001
        broken = set(decoded)
    if broken:
        only |= set(decoded)
        computed.update(computer.run(set(decoded)))
        everything = dict(computed)
    return {key: found for key in corpus.records if (found := everything.get(key)) is not None}


class ValuesOnDemand(Mapping[str, RecordValues]):
    """Every record's values for a run that reads a few of them and writes nothing (kb plan, kb explain):
    those computed this run, and each other record's decoded from the store when first asked for, with the
    records its references name, rather than all 10,000 at once; a record whose values were never kept (kb
    check keeps none) is computed then, which computes only what it reads. A row that does not decode, or a
    reference that names nothing, makes every stored value suspect, as in with_stored_values: all are
    computed then (and the next run that writes values repairs the rows)."""

    def __init__(self, corpus: Corpus, cache: Any, computer: Computer, computed: dict[str, RecordValues]):
        self._keys = list(corpus.records)
        self._known = set(self._keys)
        self._cache, self._computer = cache, computer
        self._values: dict[str, RecordValues | None] = dict(computed)
        self._everything = False

    def __getitem__(self, key: str) -> RecordValues:
        if key not in self._values and key in self._known:
            self._decode(key)
        found = self._values.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[str]:
        for key in self._keys:
            if key not in self._values:
                self._decode(key)
        return (key for key in self._keys if self._values.get(key) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def _decode(self, key: str) -> None:
        if self._everything:
            return
        decoder, batch, todo, unstored = Decoder(), {}, [key], set()
        try:
            while todo:
                wanted = todo.pop()
                if wanted in self._values or wanted in batch or wanted in unstored or wanted not in self._known:
                    continue
                entry = self._cache.compute.get(wanted)
                stored = entry.get("values") if entry is not None else None
                if stored is None:  # never kept (kb check keeps no values): computed, with what it reads alone
                    unstored.add(wanted)
                    continue
                batch[wanted] = decoder.record(wanted, stored)
                todo.extend(decoder.named() - batch.keys() - self._values.keys() - unstored)
            if unstored:
                fresh = self._computer.run(unstored)
                self._values.update({k: fresh.get(k) for k in unstored})
            broken = decoder.resolve(_Overlay(self._values, batch), batch)
        except Exception:  # noqa: BLE001 -- whatever a row holds that kb cannot read costs a recomputation
            broken = {key}
        if broken:
            self._everything = True
            fresh = self._computer.run({k for k in self._keys if k not in self._values or k in batch})
            self._values.update({k: fresh.get(k) for k in self._keys if k not in self._values})
            return
        self._values.update(batch)


class _Overlay(Mapping[str, "RecordValues | None"]):
    """Two mappings read as one, the second first: what a batch's references resolve against."""

    def __init__(self, base: Mapping[str, RecordValues | None], top: Mapping[str, RecordValues | None]):
        self.base, self.top = base, top

    def __getitem__(self, key: str) -> RecordValues | None:
        return self.top[key] if key in self.top else self.base[key]

    def __iter__(self) -> Iterator[str]:
        return iter({**self.base, **self.top})

    def __len__(self) -> int:
        return len({**self.base, **self.top})


def keep_for_next_run(
    corpus: Corpus,
    cache: Any,
    computer: Computer,
    only: set[str] | None,
    reuse: bool,
    values: Mapping[str, RecordValues] | None = None,
) -> None:
    """Per record computed: its digest, how the references it relied on resolved, its findings, and (given
    `values`, a run that has every record's) its values; and in the reverse-dependency table, the
    fingerprint of every value it read of every other record."""
    cache.index_fingerprint = computer.index.fingerprint()
    if only is not None and not only and len(cache.compute) == len(corpus.records):
        return  # nothing was computed and nothing was added or removed
    encoder = Encoder(computer.memo, values) if values is not None else None
    record_paths = corpus.record_paths()
    by_path: dict[str, list[Diagnostic]] = {}
    for d in computer.diagnostics:
        by_path.setdefault(d.path, []).append(d)
    for key in only if only is not None else corpus.records:
        record = corpus.records[key]
        resolved: dict[str, Any] = {}
        reads: dict[str, dict[str, str]] = {}
        for dep, name in computer.reads.get(key, ()):
            if dep == QUERY:
                resolved[name] = resolution_key(*computer.index.resolve(name))
            elif dep != key and dep in corpus.records:
                value = (
                    _raw(corpus.records[dep], name)
                    if name.startswith(RAW)
                    else fingerprint(computer.memo.get((dep, name)))
                )
                reads.setdefault(dep, {})[name] = value
        kept = {"digest": record.digest, "resolved": resolved, "diagnostics": by_path.get(record.path, [])}
        if encoder is not None:
            stored = encoder.encode(record, values.get(key))  # type: ignore[union-attr]
            if stored is not None:
                kept["values"] = stored
        cache.compute[key] = kept
        cache.reads.set_reads(key, reads)
    for key in [k for k in cache.compute if k not in corpus.records]:
        del cache.compute[key]
        cache.reads.set_reads(key, {})
    globals_now = [d for d in computer.diagnostics if d.path not in record_paths]
    cache.set_global(list(dict.fromkeys(cache.compute_global + globals_now)) if reuse else globals_now)
