"""The corpus's look-ups by id and by `dir/id`: what every stage, output and page that names a record asks.

A `CorpusIndex` is built over a `RecordSource`, records by key that also answer what the index needs without
decoding a record: which keys an id belongs to, a record's file and digest, a fingerprint of every id, dir and
type, and whether every record is in hand. Records held in memory answer it through `RecordsInMemory`; a
scoped run's records, most of them left in kb's store until asked for, answer it themselves
(kbtools.check.run.scope.StoredRecords). The index never asks which of the two it has. `Corpus.index` builds it,
once per corpus.

This module imports nothing of kb: the corpus builds the index, so the index reads a record through the few
attributes it needs (`IndexedRecord`), not through kbtools.corpus.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

# A qualified reference, `dir/id`.
QUALIFIED = re.compile(r"^([a-z0-9][a-z0-9_-]*)/([a-z0-9]+(?:-[a-z0-9]+)*)$")


class IndexedRecord(Protocol):
    """What the index reads of a record (kbtools.corpus.Record)."""

    @property
    def key(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def type(self) -> str | None: ...
    @property
    def path(self) -> str: ...
    @property
    def digest(self) -> str: ...
    @property
    def data(self) -> Mapping[str, Any]: ...


R = TypeVar("R", bound=IndexedRecord)
R_co = TypeVar("R_co", bound=IndexedRecord, covariant=True)


@runtime_checkable
class RecordSource(Protocol[R_co]):
    """Every record of a corpus by key (`dir/id`), as a mapping does, and what the index asks besides."""

    def __getitem__(self, key: str) -> R_co: ...
    def __contains__(self, key: object) -> bool: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def values(self) -> Iterable[R_co]: ...

    @property
    def keys_by_id(self) -> Mapping[str, list[str]]:
        """id -> the keys of the records that have it."""
        ...

    def path_of(self, key: str) -> str:
        """The file of the record `key` (which is in the source)."""
        ...

    def digest_of(self, key: str) -> str:
        """The digest of the record `key`'s file (which is in the source)."""
        ...

    def fingerprint(self) -> str:
        """Changes whenever a reference anywhere could resolve differently: ids, dirs or types."""
        ...

    @property
    def in_hand(self) -> bool:
        """Every record is held, so a search may visit them all; False when visiting one decodes it."""
        ...


def fingerprint_of(records: Mapping[str, IndexedRecord]) -> str:
    """The fingerprint of records held in memory: every key with its type (a key holds the id and the dir)."""
    text = "\n".join(f"{key}\t{record.type}" for key, record in sorted(records.items()))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class RecordsInMemory(Mapping[str, R]):
    """Records held in memory (a whole run's, or a corpus made by hand) as a RecordSource."""

    in_hand = True

    def __init__(self, records: Mapping[str, R]):
        self._records = records
        self._fingerprint: str | None = None
        keys_by_id: dict[str, list[str]] = {}
        for key, record in records.items():
            keys_by_id.setdefault(record.id, []).append(key)
        self.keys_by_id = keys_by_id

    def __getitem__(self, key: str) -> R:
        return self._records[key]

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def path_of(self, key: str) -> str:
        return self._records[key].path

    def digest_of(self, key: str) -> str:
        return self._records[key].digest

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = fingerprint_of(self._records)
        return self._fingerprint


def source_of(records: Mapping[str, R]) -> RecordSource[R]:
    """`records` as a RecordSource: as they are when they answer it (the store's), else held in memory."""
    if isinstance(records, RecordSource):
        return records
    return RecordsInMemory(records)


class CorpusIndex(Generic[R]):
    """Look-ups over the corpus by id and by dir/id. Over records left in the store it answers from the store's
    id table, and a record is decoded only when a look-up returns it."""

    def __init__(self, source: RecordSource[R]):
        self.by_key = source
        self.by_id = RecordsById(source.keys_by_id, source)

    def fingerprint(self) -> str:
        """Changes whenever a reference anywhere could resolve differently: ids, dirs or types."""
        return self.by_key.fingerprint()

    def digest_of(self, key: str) -> str | None:
        return self.by_key.digest_of(key) if key in self.by_key else None

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
        return self.by_key.path_of(key)

    def named(self, text: str) -> tuple[R | None, list[R], list[str]]:
        """A record as a person names it on the command line: its dir/id or id, else one of its `aliases`
        or its name, in any case ('h200' for the record that lists H200). (record, [], []) when found; (None,
        candidates, []) when the name is ambiguous; (None, [], close spellings) when nothing answers to it.
        Records' own references resolve by id alone (resolve): an alias is a reader's word, not a link."""
        found, candidates = self.resolve(text)
        if found is not None or candidates:
            return found, candidates, []
        folded = text.strip().casefold()
        if folded and self.by_key.in_hand:  # the search visits every record: not over records left in the store
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
        return None, [], self.suggestions(text)

    def suggestions(self, text: str, n: int = 5) -> list[str]:
        """What a person may have meant by `text`, a name that resolves to nothing: ids (dir/id keys when
        `text` is one), best first. First the same id in another dir, then those that begin with it
        (nvidia-h100 -> nvidia-h100-sxm), then those holding its words in order (h100 -> nvidia-h100-sxm,
        llama-70b -> llama-3-1-70b), fewest other words first, then close spellings. Read from the id table
        alone: no record is decoded."""
        wanted = text.strip().casefold()
        qualified = "/" in wanted
        words = sorted(self.by_key) if qualified else sorted(self.by_id)
        wanted_dir, _, wanted_id = wanted.rpartition("/")
        tokens = [t for t in wanted_id.split("-") if t]
        ranked: list[tuple[tuple[int, int, int, int], str]] = []
        if len(wanted_id) >= 2:
            for word in words:
                word_dir, _, word_id = word.rpartition("/")
                other_dir = int(word_dir != wanted_dir)
                if word_id == wanted_id:
                    if other_dir:  # gpus/nvidia-h100-sxm -> accelerators/nvidia-h100-sxm
                        ranked.append(((0, 0, 0, 0), word))
                elif word_id.startswith(wanted_id):
                    ranked.append(((1, other_dir, len(word_id), 0), word))
                else:
                    start = _in_order(tokens, word_id.split("-"))
                    if start is not None:
                        extra = word_id.count("-") + 1 - len(tokens)
                        ranked.append(((2, other_dir, extra, start), word))
        found = [word for _, word in sorted(ranked)][:n]
        if len(found) < n:
            close = difflib.get_close_matches(text.strip(), words, n=n, cutoff=0.6)
            found += [word for word in close if word not in found][: n - len(found)]
        return found

    def resolve(self, target: str) -> tuple[R | None, list[R]]:
        """(the record, []) when found; (None, candidates) when a bare id is ambiguous or missing."""
        if "/" in target:
            return (self.by_key[target] if target in self.by_key else None), []
        candidates = self.by_id.get(target, [])
        if len(candidates) == 1:
            return candidates[0], []
        return None, candidates


def _in_order(tokens: list[str], words: list[str]) -> int | None:
    """Where the first of `tokens` stands in `words` when all of them stand there in order, else None."""
    if not tokens:
        return None
    start, at = None, 0
    for token in tokens:
        while at < len(words) and words[at] != token:
            at += 1
        if at == len(words):
            return None
        start = at if start is None else start
        at += 1
    return start


def did_you_mean(close: Sequence[str]) -> str:
    """' (did you mean a, b or c?)', or nothing when there is nothing close."""
    if not close:
        return ""
    said = close[0] if len(close) == 1 else f"{', '.join(close[:-1])} or {close[-1]}"
    return f" (did you mean {said}?)"


def no_record(text: str, candidates: Sequence[IndexedRecord], close: list[str]) -> str:
    """What a command says when `text` names no one record: the records it could be, or close spellings."""
    if candidates:
        return f"'{text}' could be any of {', '.join(c.key for c in candidates)}: name one as dir/id"
    return f"no record '{text}'{did_you_mean(close)}"


class RecordsById(Mapping[str, list[R]]):
    """id -> the records that have it; `keys_of` answers without decoding a stored record."""

    def __init__(self, keys_by_id: Mapping[str, list[str]], records: RecordSource[R]):
        self._keys, self._records = keys_by_id, records

    def keys_of(self, record_id: str) -> list[str]:
        return self._keys.get(record_id, [])

    def __getitem__(self, record_id: str) -> list[R]:
        keys = self._keys.get(record_id)  # never [record_id]: a defaultdict would keep every id looked up
        if keys is None:
            raise KeyError(record_id)
        return [self._records[key] for key in keys]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)
