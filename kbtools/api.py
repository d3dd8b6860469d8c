"""kb's Python API: `kbtools.open(path)` is the checked knowledge base, for scripts and notebooks.

Its contract is docs/api.md, and tests/test_api.py runs every example there. It starts the run kb plan and kb
explain start (kbtools.check.pipeline: a whole, complete run over the store in kb's state directory, each
record's computed values decoded from the store when first asked for), so it costs what a warm check costs
and nothing is parsed twice. The run's store stays open until `close()`, or the end of a `with` block.

What it hands out are read-only views over the corpus: a record's frontmatter as written (`data`) and as its
schema types it (`record[field]`: a quantity is a Figure with its unit and range, a date a datetime.date), its
computed values (Figure), its links and its diagnostics. Nothing here writes a record.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

from kbtools.corpus import Corpus, Record, Settings
from kbtools.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:
    from kbtools.check.run.driver import CheckRun


class Link(NamedTuple):
    """One link: a typed reference in the frontmatter (`field` is its field, e.g. `host_link` or
    `hardware_parameters[].parameter`) or a [[wikilink]] in the body (`field` is "body"), at `line` of the
    source record's file."""

    source: str  # dir/id
    target: str  # dir/id
    field: str
    line: int


class ClosedError(RuntimeError):
    """A computed value asked for after the knowledge base was closed: its store is gone."""


@dataclass(frozen=True)
class Figure:
    """A value kb knows of a record: a quantity field as the record states it, a value the schema derives,
    or a cost. `value` is in `unit`; `low` and `high` are the ends of its range over every combination of the
    conditions it rests on (competing values, bands), and equal `value` when none of them varies. A table (a
    cost computed for each of several records) has `rows` (record key -> Figure) and no value."""

    record: str  # dir/id
    name: str
    value: float | None
    unit: str | None
    low: float | None
    high: float | None
    basis: str
    computed: bool  # recomputed by a formula (a stated figure is not)
    formula: str | None
    sources: tuple[str, ...]
    quantity: Any  # the pint Quantity, in kb's unit registry (None for a table)
    rows: Mapping[str, Figure] | None = None

    def to(self, unit: str) -> float:
        """The value in another unit of the same dimension ('GB/s', 'TB/s', 'ms' ...): a number."""
        if self.quantity is None:
            raise ValueError(f"{self.record}.{self.name} is a table of {len(self.rows or {})} rows, not one figure")
        return float(self.quantity.to(unit).magnitude)

    def __str__(self) -> str:
        """As kb shows it: a computed figure to 4 significant digits, a stated one to 6, its range beside it."""
        if self.value is None or self.low is None or self.high is None:
            return f"table of {len(self.rows or {})} rows"
        from kbtools.lang.units import format_number

        digits = 4 if self.computed else 6
        unit = f" {self.unit}" if self.unit and self.unit != "1" else ""
        shown = format_number(self.value, digits) + unit
        if self.low != self.high:
            shown += f" ({format_number(self.low, digits)} to {format_number(self.high, digits)}{unit})"
        return shown


class RecordView:
    """One checked record. `kb.records["accelerators/nvidia-h200-sxm"]` or `kb.record("nvidia-h200-sxm")`."""

    def __init__(self, kb: KnowledgeBase, record: Record):
        self._kb, self._record = kb, record

    key = property(lambda self: self._record.key, doc="dir/id, as links name it")
    id = property(lambda self: self._record.id)
    type = property(lambda self: self._record.type, doc="its type's name (None in a directory no type owns)")
    path = property(lambda self: self._record.path, doc="its file, relative to the repository")
    body = property(lambda self: self._record.body, doc="the Markdown after the frontmatter")

    @property
    def data(self) -> Mapping[str, Any]:
        """The frontmatter as written: what any YAML frontmatter reader reads of the file (dates as ISO text)."""
        return MappingProxyType(dict(self._record.data))

    def __contains__(self, name: object) -> bool:
        return name in self._record.data

    def __getitem__(self, name: str) -> Any:
        """A field as its schema types it: a quantity field is a Figure (unit, range), a date field a
        datetime.date, anything else the value as written. KeyError when the record does not have it."""
        raw = self._record.data[name]
        if name in self._kb._date_fields(self.type) and isinstance(raw, str):
            try:
                return datetime.date.fromisoformat(raw)
            except ValueError:
                return raw  # kb check reports it (KB200); the text stays readable
        if name in self._kb._quantity_fields(self.type):
            figure = self.figures.get(name)
            if figure is not None:
                return figure
        return raw

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self._record.data else default

    @property
    def figures(self) -> Mapping[str, Figure]:
        """Every value kb knows of it, stated or computed, by field or cost name."""
        return self._kb._figures(self._record.key)

    def figure(self, name: str) -> Figure:
        """One of `figures`, by name; KeyError (naming the ones it has) otherwise."""
        found = self.figures.get(name)
        if found is None:
            raise KeyError(f"{self.key} has no value {name!r}; it has: {', '.join(sorted(self.figures)) or 'none'}")
        return found

    @property
    def links(self) -> list[Link]:
        """The links it makes, in the order found."""
        graph = self._kb.corpus.graph
        out = graph.out_links(self.key) if graph is not None else ()
        return [Link(self.key, target, field, line) for target, field, line in out]

    @property
    def backlinks(self) -> list[Link]:
        """The links other records (and itself) make to it."""
        graph = self._kb.corpus.graph
        into = graph.in_links(self.key) if graph is not None else ()
        return [Link(source, self.key, field, line) for source, field, line in into]

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """What kb check reports in its file."""
        return list(self._kb._by_path.get(self.path, ()))

    def __repr__(self) -> str:
        return f"<record {self.key}>"


class KnowledgeBase:
    """The checked corpus of a knowledge base (`kbtools.open`). Use it in a `with` block, or call close():
    computed values are read from kb's store while it is open."""

    def __init__(self, run: CheckRun, corpus: Corpus):
        self._run: CheckRun | None = run
        self.corpus = corpus  # kbtools.corpus.Corpus: what kb's own outputs start from (to_networkx takes it)
        self._views = {key: RecordView(self, record) for key, record in sorted(corpus.records.items())}
        self._figures_of: dict[str, Mapping[str, Figure]] = {}
        self._typed: dict[tuple[str, str | None], frozenset[str]] = {}

    # ------------------------------------------------------------------ what it holds
    @property
    def root(self) -> Path:
        return self.corpus.settings.root

    @property
    def records(self) -> Mapping[str, RecordView]:
        """Every record by its key, dir/id, in key order."""
        return MappingProxyType(self._views)

    def record(self, name: str) -> RecordView:
        """A record by dir/id, or by a bare id when one record has it; KeyError otherwise."""
        if name in self._views:
            return self._views[name]
        found, candidates = self.corpus.index.resolve(name)
        if found is not None and found.key in self._views:
            return self._views[found.key]
        if candidates:
            raise KeyError(f"{name!r} is ambiguous: {', '.join(sorted(c.key for c in candidates))}")
        raise KeyError(f"no record {name!r}")

    def of_type(self, type_name: str) -> list[RecordView]:
        """The records of one type (a schema's name: 'accelerator', 'model' ...), in key order."""
        return [view for view in self._views.values() if view.type == type_name]

    @property
    def types(self) -> list[str]:
        """Every record type the schemas define, by name."""
        return sorted(self.corpus.registry.types)

    @property
    def links(self) -> list[Link]:
        """Every link between records, in the order kb check found them."""
        return [Link(*edge) for edge in self.corpus.edges or ()]

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """What `kb check` reports, in its order (the configuration's severities applied)."""
        return list(self._sorted)

    @cached_property
    def _sorted(self) -> tuple[Diagnostic, ...]:
        return tuple(sorted(self.corpus.diagnostics, key=Diagnostic.sort_key))

    @cached_property
    def _by_path(self) -> dict[str, list[Diagnostic]]:
        """Each file's findings, in kb check's order: read by every record's view, so sorted and grouped once."""
        found: dict[str, list[Diagnostic]] = {}
        for d in self._sorted:
            found.setdefault(d.path, []).append(d)
        return found

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self._sorted if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self._sorted if d.severity is Severity.WARNING]

    # ------------------------------------------------------------------ the store
    @property
    def closed(self) -> bool:
        return self._run is None

    def close(self) -> None:
        """Let go of kb's store. Records, links, diagnostics and the values already read stay readable."""
        run, self._run = self._run, None
        if run is not None:
            run.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 -- at interpreter exit, what close() needs may be gone already
            pass

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<knowledge base {self.root}: {len(self._views)} records, {state}>"

    # ------------------------------------------------------------------ typing a record's fields
    def _figures(self, key: str) -> Mapping[str, Figure]:
        found = self._figures_of.get(key)
        if found is not None:
            return found
        if self._run is None:
            raise ClosedError(
                f"the values of {key} were not read before the knowledge base was closed: read them inside "
                "its with-block (kbtools.open(...) as kb)"
            )
        values = self.corpus.values(key)
        record = self.corpus.records[key]
        figures: dict[str, Figure] = {}
        for name, value in values.fields.items():
            figures[name] = _figure(key, name, value, self._canonical_unit(record.type, name))
        for name, value in values.costs.items():
            figures[name] = _figure(key, name, value, None)
        found = self._figures_of[key] = MappingProxyType(dict(sorted(figures.items())))
        return found

    def _canonical_unit(self, type_name: str | None, name: str) -> str | None:
        record_type = self.corpus.registry.types.get(type_name) if type_name else None
        return record_type.canonical_unit(name) if record_type is not None else None

    def _quantity_fields(self, type_name: str | None) -> frozenset[str]:
        key = ("quantity", type_name)
        if key not in self._typed:
            record_type = self.corpus.registry.types.get(type_name) if type_name else None
            properties = record_type.plan.properties if record_type is not None else {}
            self._typed[key] = frozenset(name for name, plan in properties.items() if plan.quantity)
        return self._typed[key]

    def _date_fields(self, type_name: str | None) -> frozenset[str]:
        record_type = self.corpus.registry.types.get(type_name) if type_name else None
        return record_type.date_fields if record_type is not None else frozenset()


def _figure(key: str, name: str, value: Any, canonical: str | None) -> Figure:
    formula = value.formula.text if value.formula is not None else None
    if value.quantity is None:  # a table: one figure per row
        rows = {row: _figure(key, f"{name}[{row}]", item, None) for row, item in value.rows or ()}
        return Figure(key, name, None, None, None, None, "derived", True, formula, (), None, MappingProxyType(rows))
    unit = canonical or value.unit
    quantity = value.quantity.to(unit) if unit else value.quantity
    spread = value.spread
    low, high = (spread[0].to(quantity.units), spread[1].to(quantity.units)) if spread else (quantity, quantity)
    return Figure(
        record=key,
        name=name,
        value=float(quantity.magnitude),
        unit=unit or (f"{quantity.units:~P}" or "1"),
        low=float(low.magnitude),
        high=float(high.magnitude),
        basis=value.basis,
        computed=value.computed,
        formula=formula,
        sources=tuple(value.sources),
        quantity=quantity,
    )


def open(path: str | Path = ".", *, cache: bool = True) -> KnowledgeBase:  # noqa: A001 -- kbtools.open, as asked
    """The checked knowledge base at `path` (its root, or any directory in it; default: the current one):
    what `kb check` reports, every record, its values and links. `cache=False` checks cold and keeps nothing
    (no state directory is read or written). Close it when done, or use it in a `with` block."""
    from kbtools.check.pipeline import checked, start_run

    settings = Settings.discover(Path(path))
    if not settings.schema_path.is_dir():
        raise FileNotFoundError(f"no knowledge base at {Path(path).resolve()}: no {settings.schema_dir}/ directory")
    run = start_run(settings, use_cache=cache, complete=True, on_demand=cache)
    try:
        corpus = checked(run)
    except BaseException:
        run.close()
        raise
    return KnowledgeBase(run, corpus)
