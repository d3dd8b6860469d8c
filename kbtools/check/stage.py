"""A stage of kb check as the driver (kbtools.check.run) sees it: it judges one record and says what it read.

A stage is pure. It never asks whether a store exists, whether the run is scoped, or whether a judgement it
made before still holds: the driver answers all three. It gets a record and a Context, returns a Judgement
(its findings), and every question it asked of other records through the Context is kept beside them as a
Read with the answer's fingerprint. The driver keeps a judgement for as long as the record's bytes and
every fingerprint it read are the same, so a stage author writes the check and nothing about reuse.

`finish` makes the findings about the corpus as a whole (an orphan, a pair of near-duplicates), from every
record's judgement. That is Sphinx's split between the environment, which owns what is outdated, and a
collector, which only says what it learnt from one document.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from kbtools.diagnostics import Diagnostic
from kbtools.lang.markdown import headings

if TYPE_CHECKING:
    from kbtools.corpus import Corpus, Record

# a read: (what was asked, of what), and the answer's fingerprint then
Read = tuple[str, str, Any]
# a link: (source, target, the field it stands in, its line)
Edge = tuple[str, str, str, int]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Judgement:
    """What a stage found of one record, and what it read beyond the record's own file to find it."""

    findings: tuple[Diagnostic, ...] = ()
    reads: tuple[Read, ...] = field(default=())
    edges: tuple[Edge, ...] = ()


class Context:
    """What a stage may ask of the rest of the corpus while it judges one record. Every answer is noted as a
    read, so the driver can tell later whether the judgement still holds."""

    def __init__(self, corpus: Corpus, row: Any = None):
        self.corpus = corpus
        self.registry = corpus.registry
        self._row = row  # the judged file's row in the store, for of_bytes (None without a store)
        self._reads: dict[tuple[str, str], Any] = {}

    def resolve(self, target: str) -> tuple[Record | None, list[Record]]:
        """A reference as the corpus resolves it (kbtools.index): kept while it resolves the same."""
        self._note("resolves", target)
        return self.corpus.index.resolve(target)

    def keys_with_id(self, record_id: str) -> list[str]:
        """Every record with this id (one, unless ids clash): kept while the id resolves the same."""
        self._note("resolves", record_id)
        return self.corpus.index.by_id.keys_of(record_id)

    def read(self, record: Record) -> Record:
        """Another record, read for what it says: kept while its bytes are the same."""
        self._note("digest", record.key)
        return record

    def headings(self, record: Record) -> set[str]:
        """Another record's headings (an #anchor's targets): kept while they are the same, whatever else
        of the record changes."""
        self._note("headings", record.key)
        return headings(record.body)

    def of_bytes(self, name: str, compute: Callable[[], T]) -> T:
        """A function of the judged record's bytes alone (its body scan, its references), made once per
        version of the file and kept in its row: it reads nothing else, so it needs no read."""
        if self._row is not None and name in self._row:
            return self._row[name]
        value = compute()
        if self._row is not None:
            self._row[name] = value
        return value

    def reads(self) -> tuple[Read, ...]:
        return tuple((kind, what, fingerprint) for (kind, what), fingerprint in self._reads.items())

    def _note(self, kind: str, what: str) -> None:
        if (kind, what) not in self._reads:
            self._reads[(kind, what)] = fingerprint(self.corpus, kind, what)


_HEADINGS: dict[str, str] = {}  # a record's digest -> the fingerprint of its headings


def fingerprint(corpus: Corpus, kind: str, what: str) -> Any:
    """The answer a read had, reduced to what says whether it changed."""
    if kind == "resolves":
        return corpus.index.resolution(what)
    if kind == "digest":
        return corpus.index.digest_of(what)
    if kind == "headings":
        digest = corpus.index.digest_of(what)
        if digest is None:
            return None
        found = _HEADINGS.get(digest)  # the same bytes, the same headings: parsed once, not once per linker
        if found is None:
            if len(_HEADINGS) >= 4096:
                _HEADINGS.clear()
            text = "\n".join(sorted(headings(corpus.index.by_key[what].body)))
            found = _HEADINGS[digest] = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        return found
    raise ValueError(f"a read of an unknown kind: {kind!r}")


def still_holds(corpus: Corpus, reads: tuple[Read, ...]) -> bool:
    return all(fingerprint(corpus, kind, what) == was for kind, what, was in reads)


class Stored(Protocol):
    """What the store says of the records a scoped run does not judge: the corpus as the last run saw it.
    A whole run judges every record, and its Stored says nothing (kbtools.check.run.stages.NOTHING_STORED)."""

    def linked_from_outside(self, key: str, judged: frozenset[str] | set[str]) -> bool: ...

    def group_members(self, type_: str | None, kind: int, value: str) -> set[str]: ...

    def groups_of(self, key: str) -> tuple[str | None, ...]: ...


class Run(Protocol):
    """What the run that calls a stage tells it (kbtools.check.run.driver.CheckRun): the store (None: keep
    nothing), the scope of a scoped run (None: every record), whether every record's values are wanted, and
    whether they are decoded when first asked for. A Stage sees none of it (kbtools.check.run.stages runs it);
    compute, whose judgement reads other records' values, keeps its own reads table in the store."""

    store: Any
    scope: Any
    complete: bool
    on_demand: bool

    @property
    def stored(self) -> Stored: ...

    def judged(self, corpus: Corpus) -> list[Record]: ...

    def cover(self, stage: str, paths: Iterable[str]) -> None: ...


class Stage:
    """A stage of kb check: `judge` one record; `widen` says which other records a run that judged these
    must judge too; `finish` makes the corpus-level findings. Subclasses set `name`, the store's key for
    their judgements (so renaming the code changes nothing stored)."""

    name: ClassVar[str]
    progress: ClassVar[str | None] = None  # the words of a progress bar over its records, if it wants one

    def judge(self, record: Record, ctx: Context) -> Judgement:
        raise NotImplementedError

    def widen(self, corpus: Corpus, judged: Mapping[str, Judgement], stored: Stored) -> set[str]:
        """In a run that judges only some records (after an edit): who else their judgements can change."""
        return set()

    def finish(self, corpus: Corpus, judged: Mapping[str, Judgement], stored: Stored) -> list[Diagnostic]:
        return []
