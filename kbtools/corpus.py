"""The structures that flow through the pipeline.

A `Corpus` of immutable `Record`s goes from stage to stage; each stage returns a
new Corpus with what it learned (a graph, computed values) and the diagnostics it
found. Nothing here parses or validates: that is the stages' work.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from kbtools.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:
    from kbtools.index import CorpusIndex

# A path into a record's frontmatter: keys and list indexes, e.g. ("hardware_parameters", 0, "parameter").
FieldPath = tuple[str | int, ...]


def dotted(path: FieldPath) -> str:
    """A field path as a reader writes it: ('costs', 'x', 0) -> 'costs.x[0]'."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (("." if out else "") + str(part))
    return out


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Where the repository's parts are; everything is relative to `root`."""

    root: Path
    records_dir: str = "records"
    schema_dir: str = "schema"
    site_dir: str = "site"  # theme overrides (templates/, static/); pages go to its _build/ unless --out says otherwise
    title: str = "Knowledge base"  # the site's name
    tolerance: float = 0.01  # how far a stated figure may be from its recomputed one where a formula says nothing
    severity: tuple[tuple[str, str], ...] = ()  # code -> "error" | "warning" | "off", from the configuration
    severity_at: tuple[tuple[str, str, int, int], ...] = ()  # each configured code: (code, file, line, column)
    config_problems: tuple[Diagnostic, ...] = ()  # what is wrong with the configuration file (KB120)

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))  # a str given by a caller is a path all the same

    def as_json_text(self) -> str:
        """Every setting as one JSON text: what a memo of a run under these settings is keyed by."""
        fields = {name: getattr(self, name) for name in self.__dataclass_fields__}
        fields["config_problems"] = [d.as_json() for d in self.config_problems]
        return json.dumps(fields, default=str, ensure_ascii=False, separators=(",", ":"))

    @property
    def records_path(self) -> Path:
        return self.root / self.records_dir

    @property
    def schema_path(self) -> Path:
        return self.root / self.schema_dir

    @property
    def site_path(self) -> Path:
        return self.root / self.site_dir

    @property
    def build_path(self) -> Path:
        return self.site_path / "_build"

    @classmethod
    def configured(cls, root: Path) -> Settings:
        """The settings of the knowledge base at `root`: defaults, then its kb.toml or [tool.kb]."""
        from kbtools.config import load_config

        given, problems = load_config(root)
        return cls(root=root, **given, config_problems=tuple(problems))

    @classmethod
    def discover(cls, start: Path | None = None) -> Settings:
        """The nearest directory at or above `start` that is a knowledge base: it has a kb configuration
        (kb.toml, or [tool.kb] in pyproject.toml), or both records/ and schema/."""
        from kbtools.config import config_file

        here = (start or Path.cwd()).resolve()
        for candidate in (here, *here.parents):
            if config_file(candidate) is not None or (
                (candidate / "schema").is_dir() and (candidate / "records").is_dir()
            ):
                return cls.configured(candidate)
        return cls.configured(here)


@dataclass(frozen=True)
class Record:
    """One record file as loaded: frontmatter data, where each key stands, and the body."""

    path: str  # relative to the repository root, POSIX separators
    dir: str  # the directory under records/ (= the type's x-kb-dir)
    stem: str
    data: Mapping[str, Any]  # JSON-compatible frontmatter (dates kept as ISO strings)
    positions: Mapping[FieldPath, tuple[int, int]]  # field path -> (line, column) of its key, 1-based
    body: str
    body_line: int  # file line on which the body starts
    type: str | None = None  # the type of its directory, when known
    digest: str = ""  # hash of the file's bytes (the cache key)
    value_positions: Mapping[FieldPath, tuple[int, int]] = field(
        default_factory=dict
    )  # field path -> where its scalar value's text starts
    # its type's cost specs (x-kb-costs), kept beside the data the file holds, never merged into it: `data` is
    # what any frontmatter reader reads of the file, and `costs` is what kb computes
    type_costs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The qualified name `dir/id` used in links and the graph."""
        return f"{self.dir}/{self.stem}"

    @property
    def id(self) -> str:
        value = self.data.get("id")
        return value if isinstance(value, str) else self.stem

    @cached_property
    def costs(self) -> dict[str, Any]:
        """The cost specs kb computes for it: its type's and its own `costs:` block, its own winning by name. A
        block that is no mapping gives none, not even the type's (the schema stage reports the shape). Merged
        once: compute asks for them at every cost it evaluates."""
        own = self.data.get("costs")
        if own is not None and not isinstance(own, dict):
            return {}
        return {**self.type_costs, **(own or {})} if self.type_costs else (own or {})

    def mapping(self, name: str) -> dict[str, Any]:
        """A field that should be a mapping (inputs, costs, carried_by), or {} when it is absent or is not one
        (the schema stage reports that)."""
        value = self.data.get(name)
        return value if isinstance(value, dict) else {}

    @property
    def unknown(self) -> dict[str, str]:
        """The `unknown:` block: field -> why it is not known yet (a required field listed there may be left out)."""
        block = self.data.get("unknown")
        if not isinstance(block, Mapping):
            return {}
        return {k: v for k, v in block.items() if isinstance(k, str) and isinstance(v, str) and v.strip()}

    def position(self, path: FieldPath) -> tuple[int, int]:
        """Line and column of the deepest key of `path` that exists (the record start otherwise)."""
        for end in range(len(path), 0, -1):
            pos = self.positions.get(tuple(path[:end]))
            if pos:
                return pos
        return self.positions.get((), (1, 1))

    def value_position(self, path: FieldPath) -> tuple[int, int]:
        """Line and column of a scalar value's own text (a long-form quantity: of its `value`), else of its key."""
        for candidate in (tuple(path) + ("value",), tuple(path)):
            if candidate in self.value_positions:
                return self.value_positions[candidate]
        return self.position(path)


def text_fields(value: Any, skip: frozenset[str] | set[str], path: FieldPath = ()) -> Iterator[tuple[FieldPath, str]]:
    """Every string in a record's frontmatter with its path, leaving out the keys in `skip` (and what is
    under them): the text a reader reads, for the checks of what prose says."""
    if isinstance(value, str):
        if path:
            yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and key not in skip:
                yield from text_fields(item, skip, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from text_fields(item, skip, path + (index,))


@dataclass(frozen=True, slots=True)
class Reference:
    """A value in a record's frontmatter that names another record."""

    path: FieldPath
    value: str
    types: tuple[str, ...]  # accepted target types; () = any

    @property
    def field(self) -> str:
        """The field as shown to people: list indexes folded, e.g. hardware_parameters[].parameter."""
        out = ""
        for part in self.path:
            out += "[]" if isinstance(part, int) else (("." if out else "") + part)
        return out


@dataclass(frozen=True)
class RecordValues:
    """What the compute stage found for one record: its fields' values and its costs (compute's Value),
    the hardware tables its rows name (parameter id -> record key -> Value or None), and its body's
    inline values in order."""

    fields: Mapping[str, Any] = field(default_factory=dict)
    costs: Mapping[str, Any] = field(default_factory=dict)
    hardware: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    inline: tuple[Any, ...] = ()

    def value(self, name: str) -> Any | None:
        """A cost or a field by name (a record's cost names and field names do not overlap)."""
        return self.costs.get(name) or self.fields.get(name)

    @property
    def names(self) -> list[str]:
        return sorted({*self.fields, *self.costs})


NO_VALUES = RecordValues()


class LinkGraph:
    """Every link as the links stage found it, by the record it leaves and the record it reaches: each
    record's targets (and sources) in the order of their first link, and the links between two records in
    the order found. (networkx's MultiDiGraph gave the same orders, and took seconds to build at 100,000
    links; nothing here needs a graph algorithm.)"""

    def __init__(self, nodes: Iterable[str], edges: Iterable[tuple[str, str, str, int]]):
        self.succ: dict[str, dict[str, list[tuple[str, int]]]] = {node: {} for node in nodes}
        self.pred: dict[str, dict[str, list[tuple[str, int]]]] = {node: {} for node in self.succ}
        collecting = gc.isenabled()
        gc.disable()  # ~10^5 small lists made at once over a corpus of ~10^6 objects: collections cost seconds
        succ, pred = self.succ, self.pred
        try:
            for source, target, field_name, line in edges:
                out = succ.get(source)
                if out is None:
                    out, pred[source] = succ.setdefault(source, {}), {}
                if target not in succ:
                    succ[target], pred[target] = {}, {}
                between = out.get(target)
                if between is None:
                    between = out[target] = pred[target][source] = []
                between.append((field_name, line))
        finally:
            if collecting:
                gc.enable()

    def __contains__(self, key: object) -> bool:
        return key in self.succ

    def links_between(self, source: str, target: str) -> list[tuple[str, int]]:
        """The links from `source` to `target` as (field, line), in the order found; none: []."""
        return self.succ.get(source, {}).get(target, [])

    def out_links(self, key: str) -> Iterator[tuple[str, str, int]]:
        """(target, field, line) of every link `key` makes."""
        for target, between in self.succ.get(key, {}).items():
            for field_name, line in between:
                yield target, field_name, line

    def in_links(self, key: str) -> Iterator[tuple[str, str, int]]:
        """(source, field, line) of every link into `key`."""
        for source, between in self.pred.get(key, {}).items():
            for field_name, line in between:
                yield source, field_name, line


class ValueReads(Protocol):
    """What each record's values read of other records, with a fingerprint of each value read (the store's
    reverse-dependency table, kbtools.check.store.reads); `version` names the code and schemas behind them."""

    @property
    def version(self) -> str: ...

    def records_read(self, reader: str) -> dict[str, dict[str, str]]: ...

    def all_records_read(self) -> dict[str, dict[str, dict[str, str]]]: ...


@dataclass(frozen=True)
class Corpus:
    """All records of a repository plus everything the stages have learned about them."""

    settings: Settings
    registry: Any  # schema.TypeRegistry (Any avoids an import cycle)
    records: Mapping[str, Record] = field(default_factory=dict)  # by key dir/id
    diagnostics: tuple[Diagnostic, ...] = ()
    edges: tuple | None = None  # (source key, target key, field, line) for every link; set by the links stage
    computed: Mapping[str, RecordValues] = field(default_factory=lambda: MappingProxyType({}))
    # what each record's values read of others, with fingerprints, as the store keeps them: what a site page
    # rests on (None: no store, so every page is rendered)
    value_reads: ValueReads | None = None
    # every finding that depends on the day (a due date), due or not and its age unworded, as the stages made
    # them: what the memo keeps, so that it answers a later day as a run would (kbtools.check.freshness)
    dated: tuple[Diagnostic, ...] = ()

    @cached_property
    def graph(self) -> LinkGraph | None:
        """The link graph, built on first use: `kb check` never needs it."""
        if self.edges is None:
            return None
        return LinkGraph(self.records, self.edges)

    @cached_property
    def index(self) -> CorpusIndex[Record]:
        """The records by id and by dir/id (kbtools.index), built on first use. A corpus never changes its
        records: one made from it with the same records (`with_diagnostics`, `changed`) keeps this index, and
        one made with other records (live.merge, a plan's scratch corpus) builds its own."""
        from kbtools.index import CorpusIndex, source_of

        return CorpusIndex(source_of(self.records))

    def record_paths(self) -> set[str]:
        """Every record's file, without decoding a stored record."""
        stored = getattr(self.records, "paths", None)  # scope.StoredRecords: from the store's id table
        if stored is not None:
            return set(stored)
        return {record.path for record in self.records.values()}

    def with_diagnostics(self, more: list[Diagnostic] | tuple[Diagnostic, ...], **changes: Any) -> Corpus:
        return self.changed(diagnostics=self.diagnostics + tuple(more), **changes)

    def changed(self, **changes: Any) -> Corpus:
        """This corpus with `changes` (as dataclasses.replace), keeping its index while the records stay the
        same object: the stages of one run build one index between them, not one each."""
        out = replace(self, **changes)
        index = self.__dict__.get("index")  # built already (functools.cached_property keeps it there)
        if index is not None and out.records is self.records:
            out.__dict__["index"] = index
        return out

    def values(self, key: str) -> RecordValues:
        """A record's computed values (none when compute did not reach it, or kb check kept only diagnostics)."""
        return self.computed.get(key, NO_VALUES)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]
