"""Stage 5: quantities and recomputation.

Parses every quantity field with its unit, computes the schema's type-level
derivations (`x-kb-derive`) and each record's cost blocks (`inputs` + `costs`),
and compares every stated figure with its recomputation. Evaluation is lazy and
memoised over the whole corpus, which gives dependency order for free; a value
requested while it is being computed is a cycle. A value whose inputs failed is
not reported again: only the root cause is.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from kbtools.check.links import QUALIFIED, Index, walk_plan
from kbtools.check.prose import check_prose
from kbtools.corpus import Corpus, FieldPath, Record, RecordValues, dotted
from kbtools.diagnostics import Diagnostic, internal_error
from kbtools.lang.formula import Formula, FormulaError, MissingName, Table, evaluate, parse_formula, written_out
from kbtools.lang.markdown import find_inline_values
from kbtools.lang.units import (
    QuantityError,
    Written,
    check_dimension,
    describe_dimension,
    format_quantity,
    parse_quantity_text,
    parse_unit,
    parse_written,
    unit_registry,
)
from kbtools.progress import track

_ROW = re.compile(
    r"^(?:([a-z0-9][a-z0-9_-]*/[a-z0-9]+(?:-[a-z0-9]+)*)\.)?([a-z_][a-z0-9_]*)\[\s*([a-z0-9][a-z0-9_-]*/[a-z0-9-]+|[a-z0-9-]+)\s*\]$"
)
_QUALIFIED_FIELD = re.compile(r"\b([a-z0-9][a-z0-9_-]*/[a-z0-9]+(?:-[a-z0-9]+)*)\.([a-z_][a-z0-9_]*)")
BASIS_RANK = {"unverified": 0, "secondary": 1, "derived": 2, "measured": 3, "vendor-spec": 3}
DEFAULT_TOLERANCE = 0.01


@dataclass(frozen=True)
class Value:
    """A figure with its provenance: where it stands, how it is known, what it rests on."""

    quantity: Any  # pint.Quantity; None for a table
    record: str  # dir/id
    name: str  # field or cost name, with [row] for a table row
    path: str  # the record's file
    line: int
    basis: str
    confidence: float
    sources: tuple[str, ...]
    unit: str | None = None  # the unit to show it in
    formula: Formula | None = None
    inputs: tuple[tuple[str, Value], ...] = ()
    recomputed: Value | None = None  # for a stated figure that a derivation checks
    rows: tuple[tuple[str, Value], ...] | None = None
    vendor_claim: bool = False
    note: str | None = None
    alternatives: tuple[Value, ...] = ()  # the other sourced values of a field written as competing values
    rank: str | None = None
    weakest: str | None = None  # the weakest basis of everything it rests on, set when derived (a chain can be long)
    # The figure again for each competing value it rests on, one swapped in at a time: (which value, figure).
    # Built bottom-up as values are made, so a long chain costs no recursion; empty when nothing it reads competes.
    variants: tuple[tuple[str, Any], ...] = ()

    @property
    def computed(self) -> bool:
        return self.formula is not None

    @property
    def input_basis(self) -> str:
        """The weakest basis among everything this value rests on."""
        if self.weakest is not None:
            return self.weakest
        return weakest_basis(self.inputs, self.basis)

    @property
    def spread(self) -> tuple[Any, Any] | None:
        """The lowest and highest figure over the preferred value and its competing (non-deprecated) values."""
        if not self.variants:
            return None
        figures = [self.quantity, *(q for _, q in self.variants)]
        return min(figures), max(figures)

    def spread_shown(self, unit: str | None = None) -> str | None:
        """'low to high' over the competing values, or None when nothing this figure rests on competes."""
        spread = self.spread
        if spread is None:
            return None
        digits = 4 if self.computed else 6
        return f"{format_quantity(spread[0], unit or self.unit, digits)} to {format_quantity(spread[1], unit or self.unit, digits)}"

    def shown(self, unit: str | None = None) -> str:
        """Computed figures to 4 significant digits; stated ones as precisely as a record writes them."""
        if self.quantity is None:
            return f"table of {len(self.rows or ())} rows"
        return format_quantity(self.quantity, unit or self.unit, 4 if self.computed else 6)


class _Failed(Exception):
    """An input already reported its own error; the dependent stays silent."""


class _Cycle(Exception):
    def __init__(self, chain: list[str]):
        shown = chain if len(chain) <= 12 else chain[:6] + [f"… {len(chain) - 11} more …"] + chain[-5:]
        super().__init__(" → ".join(shown))
        self.chain = chain


class _Deferred(BaseException):
    """Raised when a value is needed DEFER_DEPTH values deep: the stack unwinds, the driver computes that
    value first at the top, then retries. So a chain of any length is evaluated on an explicit stack
    (Computer.drive) with bounded Python recursion, and a cycle of any length is found. A BaseException,
    so that no `except Exception` between here and the driver can swallow it."""

    def __init__(self, record: Record, name: str, compute, path: list[tuple[str, str]]):
        super().__init__(f"{record.key}.{name}")
        self.record, self.name, self.compute = record, name, compute
        self.path = path  # the values being computed, outermost first, when this one was needed


DEFER_DEPTH = 8  # values computed inside one another before the driver takes over (each costs ~15 frames)


_FAILED = object()


@dataclass
class Computer:
    corpus: Corpus
    diagnostics: list[Diagnostic] = field(default_factory=list)
    written: dict[tuple[str, FieldPath], Written] = field(default_factory=dict)
    competing: dict[tuple[str, FieldPath], list[Written]] = field(default_factory=dict)  # the non-preferred values
    memo: dict[tuple[str, str], Any] = field(default_factory=dict)
    broken_schema_formulas: set[tuple[str, str]] = field(default_factory=set)
    active: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.index = Index(self.corpus)
        self.types = self.corpus.registry.types
        # for the cache: which records each record's values read, and how its references resolved
        self.stack: list[str] = []
        self.deps: dict[str, set[str]] = {}
        self.resolved: dict[str, dict[str, Any]] = {}
        self.parsed: set[str] = set()

    def resolve(self, query: str):
        target, candidates = self.index.resolve(query)
        if self.stack:
            self.resolved.setdefault(self.stack[-1], {})[query] = resolution_key(target, candidates)
        return target, candidates

    # ------------------------------------------------------------ helpers
    def report(self, code: str, record: Record, path: FieldPath, message: str, line: int | None = None) -> None:
        at_line, col = record.position(path)
        self.diagnostics.append(
            Diagnostic.make(code, record.path, line or at_line, col if line is None else 1, message)
        )

    def report_value(self, code: str, record: Record, path: FieldPath, message: str) -> None:
        """A finding about what a value says (its unit, its number): at the value's own text, not its key."""
        line, col = record.value_position(path)
        self.diagnostics.append(Diagnostic.make(code, record.path, line, col, message))

    def default_basis(self, record: Record) -> str:
        basis = record.data.get("basis")
        return basis if isinstance(basis, str) else "unverified"

    def confidence(self, record: Record) -> float:
        value = record.data.get("confidence")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.5

    def record_sources(self, record: Record) -> tuple[str, ...]:
        sources = record.data.get("sources")
        return tuple(s for s in sources if isinstance(s, str)) if isinstance(sources, list) else ()

    def stated_value(
        self, record: Record, path: FieldPath, name: str, written: Written, unit: str | None, alone: bool = False
    ) -> Value:
        line, _ = record.position(path)
        alternatives = (
            ()
            if alone
            else tuple(
                self.stated_value(record, path, name, other, unit, alone=True)
                for other in self.competing.get((record.key, path), ())
            )
        )
        variants = tuple(
            (
                f"{record.key}.{name} = {other.shown(unit)} ({', '.join(other.sources)})",
                other.quantity.to(written.quantity.units),
            )
            for other in alternatives
            if other.rank != "deprecated"
        )
        return Value(
            written.quantity,
            record.key,
            name,
            record.path,
            line,
            written.basis or self.default_basis(record),
            self.confidence(record),
            (written.source,) if written.source else self.record_sources(record),
            unit=unit,
            vendor_claim=written.vendor_claim,
            note=written.note,
            alternatives=alternatives,
            rank=written.rank,
            variants=variants,
        )

    def derived_value(
        self,
        record: Record,
        path: FieldPath,
        name: str,
        quantity: Any,
        formula: Formula,
        inputs: dict[str, Value],
        unit: str | None,
    ) -> Value:
        line, _ = record.position(path)
        if unit is not None:
            quantity = quantity.to(parse_unit(unit))
        used = tuple(inputs.items())
        sources = tuple(dict.fromkeys(s for _, v in used for s in v.sources))
        confidence = min((v.confidence for _, v in used), default=self.confidence(record))
        return Value(
            quantity,
            record.key,
            name,
            record.path,
            line,
            "derived",
            confidence,
            sources,
            unit=unit,
            formula=formula,
            inputs=used,
            weakest=weakest_basis(used, "derived"),
            variants=variants_of(formula, used, quantity.units),
        )

    # ------------------------------------------------------------ stage entry
    def run(self, only: set[str] | None = None) -> dict[str, RecordValues]:
        """Compute every record's values (or only those of the records in `only`)."""
        computed: dict[str, RecordValues] = {}
        for record in track(list(self.corpus.records.values()), "Recomputing figures"):
            if only is not None and record.key not in only:
                continue
            self.stack.append(record.key)
            try:
                entry = self.drive(lambda record=record: self.record_values(record))
            except (_Failed, _Cycle):
                entry = None
            except Exception as exc:  # pint or kb failing deep inside: one diagnostic, the rest goes on
                self.diagnostics.append(internal_error(record.path, exc))
                entry = None
            finally:
                self.stack.pop()
            if entry is not None:
                computed[record.key] = entry
        return computed

    def drive(self, work):
        """Run `work`, first computing on an explicit stack every value it (or they) needed too deep to compute in place."""
        pending: list[_Deferred] = []
        while True:
            try:
                if not pending:
                    return work()
                top = pending[-1]
                saved, self.stack = self.stack, [top.record.key]
                try:
                    self.memoised(top.record, top.name, top.compute)
                except (_Failed, _Cycle):
                    pass  # reported (or to be reported) where it is used
                finally:
                    self.stack = saved
                pending.pop()
            except _Deferred as deferred:
                key = (deferred.record.key, deferred.name)
                waiting = [(d.record.key, d.name) for d in pending]
                if key in waiting:  # the value waits, through the others, on itself
                    start = waiting.index(key)
                    self.report_cycle([*pending[start + 1 :], deferred], key)
                    del pending[start:]
                else:
                    pending.append(deferred)

    def report_cycle(self, links: list[_Deferred], key: tuple[str, str]) -> None:
        """A cycle found on the explicit stack: each link's path leads from the value before it to it."""
        chain = [step for link in links for step in link.path] + [key]
        cycle = _Cycle([f"{r}.{n}" for r, n in chain])
        for record_key, name in dict.fromkeys(chain):
            if self.memo.get((record_key, name)) is _FAILED:
                continue
            self.memo[(record_key, name)] = _FAILED
            record = self.corpus.records[record_key]
            where = ("costs", name.removeprefix("costs."), "formula") if name.startswith("costs.") else (name,)
            self.report("KB506", record, where, f"{name}: cycle of {len(chain) - 1} values: {cycle}")

    def record_values(self, record: Record) -> RecordValues | None:
        self.parse_quantities(record)
        self.check_carried_by(record)
        record_type = self.types.get(record.type) if record.type else None
        if record_type is None:
            return None
        fields = {}
        for name in record_type.plan.properties:
            if record_type.plan.properties[name].quantity is not None or name in record_type.derive:
                value = self.settled(self.field, record, name)
                if value is not None:
                    fields[name] = value
                    if record_type.plan.properties[name].plausible:
                        self.check_plausible(record, name, value, record_type.plan.properties[name].plausible)
        costs = {}
        cost_specs = record.data.get("costs")
        if isinstance(cost_specs, dict):
            for name in cost_specs:
                value = self.cost_or_none(record, name)
                if value is not None:
                    costs[name] = value
        self.diagnostics.extend(check_prose(self, record, fields, costs))
        return RecordValues(fields, costs, self.hardware_tables(record), tuple(self.inline_values(record)))

    def settled(self, compute, record: Record, name: str) -> Value | None:
        """A value, or None when it failed (its root cause is already reported)."""
        try:
            return compute(record, name)
        except _Failed:
            return None
        except _Cycle as cycle:
            self.report("KB506", record, (name,), f"{name}: cycle {cycle}")
            return None

    # ------------------------------------------------------------ quantities
    def parse_quantities(self, record: Record) -> None:
        """Parse a record's quantity fields once, on first use (a partial run parses only what it reads)."""
        if record.key in self.parsed:
            return
        self.parsed.add(record.key)
        record_type = self.types.get(record.type) if record.type else None
        if record_type is None:
            return
        for path, value, plan in walk_plan(record_type.plan, dict(record.data)):
            if plan.quantity is not None and isinstance(value, list):
                self.parse_competing(record, path, value, plan.quantity)
            elif plan.quantity is not None and value is not None:
                if isinstance(value, dict) and "value" not in value:
                    continue  # the schema reports the shape
                try:
                    self.written[(record.key, path)] = parse_written(value, plan.quantity)
                except QuantityError as exc:
                    self.report_value(exc.code, record, path, f"{dotted(path)}: {exc.message}")
            elif plan.inputs and isinstance(value, dict):
                for name, item in value.items():
                    if _is_reference(item, self.corpus) or isinstance(item, list):
                        continue
                    try:
                        self.written[(record.key, path + (name,))] = parse_written(
                            item, None if not isinstance(item, (int, float)) else ""
                        )
                    except QuantityError as exc:
                        self.report_value(exc.code, record, path + (name,), f"inputs.{name}: {exc.message}")

    def parse_competing(self, record: Record, path: FieldPath, items: list, canonical: str) -> None:
        """A field written as several ranked, sourced values: the preferred one is computed with, the others
        are kept beside it; values that disagree beyond the tolerance make the record contested (KB530)."""
        parsed: list[Written] = []
        for index, item in enumerate(items):
            if not isinstance(item, dict) or "value" not in item:
                return  # the schema reports the shape
            try:
                parsed.append(parse_written(item, canonical))
            except QuantityError as exc:
                self.report_value(exc.code, record, path + (index,), f"{dotted(path + (index,))}: {exc.message}")
                return
        preferred = [w for w in parsed if w.rank == "preferred"]
        if len(preferred) != 1:
            self.report(
                "KB531",
                record,
                path,
                f"{dotted(path)}: {len(preferred)} values are ranked preferred; exactly one must be "
                "(the one kb computes with), the others normal or deprecated",
            )
            return
        best = preferred[0]
        self.written[(record.key, path)] = best
        self.competing[(record.key, path)] = [w for w in parsed if w is not best]
        tolerance = self.field_tolerance(record, path)
        base = float(best.quantity.magnitude)
        for index, other in enumerate(parsed):
            if other is best or other.rank == "deprecated" or contested(record):
                continue
            if differs(base, float(other.quantity.to(best.quantity.units).magnitude), tolerance):
                self.report(
                    "KB530",
                    record,
                    path + (index,),
                    f"{dotted(path)}: {format_quantity(other.quantity)} ({other.source}) disagrees with the preferred "
                    f"{format_quantity(best.quantity)} ({best.source}) by more than {tolerance * 100:g}%: mark the record "
                    "contested and say which is right and why, or rank the wrong one deprecated",
                )

    def field_tolerance(self, record: Record, path: FieldPath) -> float:
        spec = self.derivation(record, path[0]) if len(path) == 1 and isinstance(path[0], str) else None
        return float(spec.get("tolerance", DEFAULT_TOLERANCE)) if spec else DEFAULT_TOLERANCE

    # ------------------------------------------------------------ fields and derivations
    def memoised(self, record: Record, name: str, compute) -> Any:
        """Compute once per (record, name); re-entry while computing is a cycle; failures stick."""
        key = (record.key, name)
        if self.stack and self.stack[-1] != record.key:
            self.deps.setdefault(self.stack[-1], set()).add(record.key)
        if key in self.memo:
            result = self.memo[key]
        else:
            if key in self.active:
                raise _Cycle([f"{r}.{n}" for r, n in self.active[self.active.index(key) :]] + [f"{record.key}.{name}"])
            if len(self.active) >= DEFER_DEPTH:
                raise _Deferred(record, name, compute, list(self.active))
            self.active.append(key)
            self.stack.append(record.key)
            try:
                result = compute(record, name.removeprefix("costs."))
            except _Failed:
                result = _FAILED
            finally:
                self.active.pop()
                self.stack.pop()
            self.memo[key] = result
        if result is _FAILED:
            raise _Failed()
        return result

    def field(self, record: Record, name: str) -> Value | None:
        return self.memoised(record, name, self._field)

    def _field(self, record: Record, name: str) -> Any:
        self.parse_quantities(record)
        record_type = self.types[record.type]
        plan = record_type.plan.properties.get(name)
        unit = plan.quantity if plan is not None and plan.quantity not in (None, "*") else None
        written = self.written.get((record.key, (name,)))
        raw = record.data.get(name)
        stated = None
        if written is not None:
            stated = self.stated_value(record, (name,), name, written, unit)
        elif isinstance(raw, (int, float)) and not isinstance(raw, bool) and (plan is None or plan.quantity is None):
            ureg = unit_registry()
            stated = self.stated_value(record, (name,), name, Written(ureg.Quantity(raw, ureg.dimensionless)), None)
        elif raw is not None and plan is not None and plan.quantity is not None:
            return _FAILED  # written but unparseable: already reported
        spec = self.derivation(record, name)
        if spec is None:
            return stated
        formula = self.schema_formula(record, spec)
        if formula is None:
            return stated
        inputs: dict[str, Value] = {}
        try:
            quantity = evaluate(
                formula,
                self.derivation_lookup(record, inputs),
                self.param_lookup(record, {}, inputs),
                self.call_lookup(record, {}, inputs),
            )
        except MissingName:
            return stated  # inputs absent: nothing to derive
        except _Failed:
            return stated if stated is not None else _FAILED
        except _Cycle as cycle:
            self.report("KB506", record, (name,), f"{name}: cycle {cycle}")
            return _FAILED
        except FormulaError as exc:
            self.report(exc.code, record, (name,), f"{name}: {exc.message} (in {formula.text})")
            return _FAILED
        if unit is not None:
            try:
                check_dimension(quantity, unit)
            except QuantityError as exc:
                self.report("KB504", record, (name,), f"{name}: {formula.text} gives {exc.message}")
                return _FAILED
        derived = self.derived_value(record, (name,), name, quantity, formula, inputs, unit)
        if stated is None:
            return derived
        self.compare(record, (name,), name, stated.quantity, derived, spec.get("tolerance", DEFAULT_TOLERANCE))
        return Value(**{**stated.__dict__, "recomputed": derived})

    def derivation(self, record: Record, name: str) -> dict[str, Any] | None:
        return matching(record, self.types[record.type].derive.get(name))

    def schema_formula(self, record: Record, spec: dict[str, Any]) -> Formula | None:
        try:
            return parse_formula(spec.get("formula", ""))
        except FormulaError as exc:
            key = (record.type or "", str(spec.get("formula")))
            if key not in self.broken_schema_formulas:  # one report per schema formula, not one per record
                self.broken_schema_formulas.add(key)
                schema_path = self.types[record.type].schema_path
                self.diagnostics.append(
                    Diagnostic.make(
                        "KB210", schema_path, 1, 1, f"x-kb-derive formula {spec.get('formula')!r}: {exc.message}"
                    )
                )
            return None

    def derivation_lookup(self, record: Record, used: dict[str, Value]):
        """Names in a type-level derivation: the record's own fields, and ref_field.field."""

        def lookup(parts: tuple[str, ...]) -> Any:
            if len(parts) == 1:
                value = self.field(record, parts[0])
            else:
                target = self.referenced(record, parts[0], {})
                if target is None:
                    raise MissingName(".".join(parts))
                value = self.field_or_cost(target, parts[1])
            if value is None:
                raise MissingName(".".join(parts))
            used[".".join(parts)] = value
            return value.quantity

        return lookup

    def referenced(self, record: Record, name: str, bindings: dict[str, Record]) -> Record | None:
        """The record a name stands for: a for_each binding, a reference input, or a reference field."""
        if name in bindings:
            return bindings[name]
        inputs = record.mapping("inputs")
        is_input = name in inputs
        raw = inputs.get(name) if is_input else record.data.get(name)
        if is_input and not _is_reference(raw, self.corpus):
            # a quantity (or a list): `n.value` where n is '4 GB' names nothing, and must say so
            raise FormulaError(
                "KB502",
                f"'{name}' is a quantity input ({raw!r}), not a record reference, so it has no fields; "
                f"write {name} alone",
            )
        if isinstance(raw, str):
            target, _ = self.resolve(raw)
            if target is None and (is_input or self.is_reference_field(record, name)):
                raise _Failed()  # a dangling reference: the links stage has reported it
            return target
        return None

    def is_reference_field(self, record: Record, name: str) -> bool:
        plan = self.types[record.type].plan.properties.get(name) if record.type in self.types else None
        return bool(plan and plan.ref_types)

    def field_or_cost(self, record: Record, name: str) -> Value | None:
        costs = record.data.get("costs")
        if isinstance(costs, dict) and name in costs:
            return self.cost(record, name)
        if record.type in self.types:
            return self.field(record, name)
        return None

    # ------------------------------------------------------------ costs
    def cost_or_none(self, record: Record, name: str) -> Value | None:
        try:
            return self.cost(record, name)
        except _Failed:
            return None
        except _Cycle as cycle:
            self.report("KB506", record, ("costs", name, "formula"), f"costs.{name}: cycle {cycle}")
            self.memo[(record.key, f"costs.{name}")] = _FAILED
            return None

    def cost(self, record: Record, name: str) -> Value:
        return self.memoised(record, f"costs.{name}", self._cost)

    def _cost(self, record: Record, name: str) -> Any:
        spec = record.data["costs"][name]
        where = ("costs", name, "formula")
        if (
            not isinstance(spec, dict)
            or not isinstance(spec.get("formula"), str)
            or not isinstance(spec.get("unit"), str)
        ):
            return _FAILED  # the schema reports the shape
        try:
            formula = parse_formula(spec["formula"])
        except FormulaError as exc:
            self.report(exc.code, record, where, f"costs.{name}: {exc.message}")
            return _FAILED
        try:
            unit_q = parse_unit(spec["unit"])
        except QuantityError as exc:
            self.report_value(exc.code, record, ("costs", name, "unit"), f"costs.{name}.unit: {exc.message}")
            return _FAILED
        for_each = spec.get("for_each")
        if isinstance(for_each, dict) and for_each and "stated" in spec:
            self.report(
                "KB508",
                record,
                ("costs", name, "stated"),
                f"costs.{name}: a for_each table has one figure per row, so 'stated' cannot be checked here; "
                "state one row as its own cost, or quote it in prose as {{ " + name + "[dir/id] }}",
            )
            return _FAILED
        if isinstance(for_each, dict) and for_each:
            var, list_name = next(iter(for_each.items()))
            targets = self.row_records(record, name, list_name)
            if targets is None:
                return _FAILED
            rows = []
            for target in targets:
                row = self.evaluate_cost(record, name, formula, spec, unit_q, {var: target}, row_key=target.key)
                if row is _FAILED:
                    return _FAILED
                rows.append((target.key, row))
            line, _ = record.position(where)
            sources = tuple(dict.fromkeys(s for _, v in rows for s in v.sources))
            return Value(
                None,
                record.key,
                name,
                record.path,
                line,
                "derived",
                min((v.confidence for _, v in rows), default=self.confidence(record)),
                sources,
                unit=spec["unit"],
                formula=formula,
                rows=tuple(rows),
            )
        return self.evaluate_cost(record, name, formula, spec, unit_q, {}, row_key=None)

    def row_records(self, record: Record, name: str, list_name: str) -> list[Record] | None:
        inputs = record.data.get("inputs")
        raw = inputs.get(list_name) if isinstance(inputs, dict) and list_name in inputs else record.data.get(list_name)
        if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
            self.report(
                "KB508",
                record,
                ("costs", name, "for_each"),
                f"costs.{name}.for_each: '{list_name}' is not a list of record references",
            )
            return None
        targets = []
        for item in raw:
            target, _ = self.resolve(item)
            if target is None:
                return None  # the links stage reports it
            targets.append(target)
        return targets

    def evaluate_cost(
        self,
        record: Record,
        name: str,
        formula: Formula,
        spec: dict,
        unit_q,
        bindings: dict[str, Record],
        row_key: str | None,
    ) -> Any:
        where = ("costs", name, "formula")
        used: dict[str, Value] = {}
        label = f"costs.{name}" + (f"[{row_key}]" if row_key else "")
        try:
            quantity = evaluate(
                formula,
                self.cost_lookup(record, name, bindings, row_key, used),
                self.param_lookup(record, bindings, used),
                self.call_lookup(record, bindings, used),
            )
        except MissingName as exc:
            self.report("KB502", record, where, f"{label}: {exc.message}")
            return _FAILED
        except FormulaError as exc:
            self.report(exc.code, record, where, f"{label}: {exc.message}")
            return _FAILED
        if not quantity.is_compatible_with(unit_q):
            self.report(
                "KB504",
                record,
                ("costs", name, "unit"),
                f"{label}: {formula.text} gives {describe_dimension(quantity.dimensionality)} "
                f"({format_quantity(quantity)}), but its unit is {spec['unit']} ({describe_dimension(unit_q.dimensionality)})",
            )
            return _FAILED
        value = self.derived_value(
            record,
            where,
            name if row_key is None else f"{name}[{row_key}]",
            quantity.to(unit_q),
            formula,
            used,
            spec["unit"],
        )
        for bound in ("at_most", "at_least"):
            if bound in spec:
                self.check_bound(record, name, label, value, spec, bound)
        if "stated" in spec and row_key is None:
            try:
                stated = parse_quantity_text(
                    spec["stated"]["value"] if isinstance(spec["stated"], dict) else spec["stated"], spec["unit"]
                )
                check_dimension(stated, spec["unit"])
            except (QuantityError, KeyError) as exc:
                message = exc.message if isinstance(exc, QuantityError) else "stated needs a value"
                self.report_value(
                    getattr(exc, "code", "KB400"), record, ("costs", name, "stated"), f"costs.{name}.stated: {message}"
                )
                return _FAILED
            self.compare(
                record,
                ("costs", name, "stated"),
                f"costs.{name}",
                stated,
                value,
                spec.get("tolerance", DEFAULT_TOLERANCE),
            )
        return value

    def cost_lookup(
        self, record: Record, cost_name: str, bindings: dict[str, Record], row_key: str | None, used: dict[str, Value]
    ):
        inputs, costs = record.mapping("inputs"), record.mapping("costs")
        self.parse_quantities(record)

        def lookup(parts: tuple[str, ...]) -> Any:
            shown = ".".join(parts)
            if len(parts) == 2:
                target = self.referenced(record, parts[0], bindings)
                if target is None:
                    raise MissingName(
                        shown,
                        f"'{parts[0]}' is not a record reference (an input, a for_each variable or a reference field)",
                    )
                value = self.field_or_cost(target, parts[1])
                if value is None:
                    raise MissingName(shown, f"{target.key} has no value for '{parts[1]}'")
            else:
                name = parts[0]
                if name in bindings or (name in inputs and _is_reference(inputs[name], self.corpus)):
                    raise FormulaError("KB502", f"'{name}' is a record; name one of its fields, like {name}.<field>")
                if name in inputs:
                    written = self.written.get((record.key, ("inputs", name)))
                    if written is None:
                        raise _Failed()
                    value = self.stated_value(record, ("inputs", name), name, written, None)
                elif name in costs:
                    value = self.cost(record, name)
                else:
                    value = self.field(record, name) if record.type in self.types else None
                    if value is None:
                        raise MissingName(name, f"'{name}' is not an input, a cost or a field of {record.key}")
            if value.rows is not None:
                rows = dict(value.rows)
                if row_key is not None and row_key in rows:
                    value = rows[row_key]
                else:
                    used[shown] = value
                    return Table({k: v.quantity for k, v in value.rows or ()})
            used[shown] = value
            return value.quantity

        return lookup

    def param_lookup(self, record: Record, bindings: dict[str, Record], used: dict[str, Value]):
        """param(x, 'hardware-parameter-id'): the field that carries that parameter on x's type."""

        def lookup(var: str, parameter_id: str) -> Any:
            target = self.referenced(record, var, bindings)
            if target is None:
                raise MissingName(var, f"param(): '{var}' is not a record reference")
            parameter, _ = self.resolve(parameter_id)
            if parameter is None or not self.corpus.registry.has_role(parameter.type, "parameter"):
                raise FormulaError("KB502", f"param(): no hardware parameter '{parameter_id}'")
            carried = parameter.data.get("carried_by", {})
            field_name = carried.get(target.type) if isinstance(carried, dict) else None
            if field_name is None:
                raise MissingName(var, f"param(): {parameter_id} is not carried by type '{target.type}' ({target.key})")
            value = self.field(target, field_name)
            if value is None:
                raise MissingName(var, f"param(): {target.key} has no {field_name}")
            used[f"param({var}, '{parameter_id}')"] = value  # keyed as the call reads, so it is shown in its place
            return value.quantity

        return lookup

    def call_lookup(self, record: Record, bindings: dict[str, Record], used: dict[str, Value]):
        """record.function(args): a function the record's type declares in its schema (x-kb-functions),
        evaluated over that record's fields with the arguments bound to its parameters."""

        def call(var: str, function: str, args: list, text: str) -> Any:
            target = self.referenced(record, var, bindings)
            if target is None:
                raise MissingName(var, f"{text}: '{var}' is not a record reference")
            declared = self.types[target.type].functions if target.type in self.types else {}
            spec = matching(target, declared.get(function))
            if not isinstance(spec, dict) or not isinstance(spec.get("formula"), str):
                known = ", ".join(sorted(declared)) or "none"
                raise FormulaError(
                    "KB502",
                    f"{text}: {target.key} is a {target.type}, whose schema declares no function "
                    f"'{function}' (it declares: {known})",
                )
            parameters: dict[str, Any] = spec["parameters"] if isinstance(spec.get("parameters"), dict) else {}
            if len(args) != len(parameters):
                raise FormulaError(
                    "KB502",
                    f"{text}: {function}() takes {len(parameters)} argument(s) "
                    f"({', '.join(parameters)}), not {len(args)}",
                )
            bound: dict[str, Any] = {}
            for (name, unit), arg in zip(parameters.items(), args, strict=True):
                if isinstance(unit, str) and not arg.is_compatible_with(parse_unit(unit)):
                    raise FormulaError(
                        "KB503", f"{text}: {function}()'s {name} is in {unit}, not {format_quantity(arg)}"
                    )
                bound[name] = arg
            formula = parse_formula(spec["formula"])
            inner: dict[str, Value] = {}
            line, _ = record.position(())
            fields = self.derivation_lookup(target, inner)

            def lookup(parts: tuple[str, ...]) -> Any:
                if len(parts) == 1 and parts[0] in bound:
                    inner[parts[0]] = Value(
                        bound[parts[0]], record.key, parts[0], record.path, line, "derived", 1.0, ()
                    )
                    return bound[parts[0]]
                return fields(parts)

            quantity = evaluate(formula, lookup, self.param_lookup(target, {}, inner))
            unit = spec.get("unit") if isinstance(spec.get("unit"), str) else None
            if unit is not None and not quantity.is_compatible_with(parse_unit(unit)):
                raise FormulaError("KB504", f"{text}: {function}() gives {format_quantity(quantity)}, not {unit}")
            value = self.derived_value(target, (), text, quantity, formula, inner, unit)
            used[text] = value  # keyed as the call reads, so it is shown (and varied) in its place
            return value.quantity

        return call

    # ------------------------------------------------------------ checks
    def compare(
        self, record: Record, path: FieldPath, label: str, stated: Any, computed: Value, tolerance: float
    ) -> None:
        recomputed = computed.quantity.to(stated.units)
        stated_m, computed_m = float(stated.magnitude), float(recomputed.magnitude)
        if not differs(stated_m, computed_m, tolerance):
            return
        how = how_far(stated_m, computed_m)
        self.report(
            "KB500",
            record,
            path,
            f"{label}: stated {format_quantity(stated)} but {computed.formula.text if computed.formula else computed.name} = {substituted(computed)} "
            f"= {format_quantity(recomputed)}; {how} (tolerance {tolerance * 100:g}%)",
        )

    def check_bound(self, record: Record, name: str, label: str, value: Value, spec: dict, bound: str) -> None:
        """A cross-check: a computed figure against the bound the model sets for it (KB520). A contested
        record keeps its disagreement on show (the site prints both figures) instead of failing the check."""
        raw = spec[bound]["value"] if isinstance(spec[bound], dict) else spec[bound]
        try:
            limit = parse_quantity_text(raw, spec["unit"])
            check_dimension(limit, spec["unit"])
        except QuantityError as exc:
            self.report_value(exc.code, record, ("costs", name, bound), f"costs.{name}.{bound}: {exc.message}")
            return
        figure = float(value.quantity.to(limit.units).magnitude)
        broken = figure > float(limit.magnitude) if bound == "at_most" else figure < float(limit.magnitude)
        if broken and not contested(record):
            relation = "exceeds" if bound == "at_most" else "falls below"
            self.report(
                "KB520",
                record,
                ("costs", name, bound),
                f"{label} = {value.shown()} {relation} its bound {format_quantity(limit)}: the measurement and the model "
                "disagree; keep both, mark the record contested and say why",
            )

    def check_plausible(self, record: Record, name: str, value: Value, spec: dict) -> None:
        """A figure outside the range real hardware has (the schema's x-kb-plausible) is a warning: a unit
        slip, or on-chip SRAM stored as memory bandwidth, looks like this (KB540)."""
        try:
            low, high = _bounds(str(spec.get("min", "")), str(spec.get("max", "")))
        except QuantityError:
            return  # the schema's own mistake; the registry reports schema errors elsewhere
        reason = spec.get("reason", "")
        for figure in [value, *[a for a in value.alternatives if a.rank != "deprecated"]]:
            quantity = figure.quantity
            if quantity is None or any(b is not None and not quantity.is_compatible_with(b) for b in (low, high)):
                continue
            if (low is not None and quantity < low) or (high is not None and quantity > high):
                span = " to ".join(format_quantity(b) for b in (low, high) if b is not None)
                which = "at least " if high is None else "at most " if low is None else ""
                self.report_value(
                    "KB540",
                    record,
                    (name,),
                    f"{name} = {format_quantity(quantity)} is outside the range real values fall in ({which}{span})"
                    + (f": {reason}" if reason else "")
                    + "; check the unit and what was measured",
                )

    def check_carried_by(self, record: Record) -> None:
        carried = record.data.get("carried_by")
        dimension = record.data.get("dimension")
        if (
            not self.corpus.registry.has_role(record.type, "parameter")
            or not isinstance(carried, dict)
            or not isinstance(dimension, str)
        ):
            return
        try:
            unit = parse_unit(dimension)
        except QuantityError as exc:
            self.report(exc.code, record, ("dimension",), f"dimension: {exc.message}")
            return
        for type_name, field_name in carried.items():
            record_type = self.types.get(type_name)
            plan = record_type.plan.properties.get(field_name) if record_type else None
            if record_type is None:
                self.report("KB510", record, ("carried_by", type_name), f"carried_by: no record type '{type_name}'")
            elif plan is None or plan.quantity in (None, "*"):
                self.report(
                    "KB510",
                    record,
                    ("carried_by", type_name),
                    f"carried_by.{type_name}: '{field_name}' is not a quantity field of {type_name}",
                )
            elif not parse_unit(plan.quantity).dimensionality == unit.dimensionality:
                self.report(
                    "KB510",
                    record,
                    ("carried_by", type_name),
                    f"carried_by.{type_name}: {field_name} is in {plan.quantity}, not {dimension}",
                )

    # ------------------------------------------------------------ hardware parameter tables
    def hardware_tables(self, record: Record) -> dict[str, dict[str, Value | None]]:
        rows = record.data.get("hardware_parameters")
        tables: dict[str, dict[str, Value | None]] = {}
        if not isinstance(rows, list):
            return tables
        for index, row in enumerate(rows):
            if not isinstance(row, dict) or not isinstance(row.get("parameter"), str):
                continue
            parameter, _ = self.resolve(row["parameter"])
            if parameter is None or not self.corpus.registry.has_role(parameter.type, "parameter"):
                continue
            carried = parameter.data.get("carried_by") if isinstance(parameter.data.get("carried_by"), dict) else {}
            table: dict[str, Value | None] = {}
            for position, item in enumerate(row.get("values_for") or []):
                target, _ = self.resolve(item) if isinstance(item, str) else (None, [])
                if target is None:
                    continue
                field_name = carried.get(target.type)
                value = None
                try:
                    value = self.field(target, field_name) if field_name else None
                except (_Failed, _Cycle):
                    value = None
                if value is None:
                    what = (
                        f"no {field_name}" if field_name else f"a {target.type}, which {parameter.id} is not carried by"
                    )
                    self.report(
                        "KB511",
                        record,
                        ("hardware_parameters", index, "values_for", position),
                        f"hardware_parameters[{index}]: {target.key} has {what}",
                    )
                table[target.key] = value
            tables[parameter.id] = table
        return tables

    # ------------------------------------------------------------ inline values in prose
    def inline_values(self, record: Record) -> list[InlineValue]:
        out = []
        for found in find_inline_values(record.body):
            line = record.body_line + found.line
            expression, _, unit_text = found.content.partition("|")
            expression, unit = expression.strip(), unit_text.strip() or None
            value, rendered = None, None
            try:
                value = self.inline_value(record, expression)
                if value.quantity is None:
                    raise FormulaError("KB509", f"'{expression}' is a table; quote one row or min()/max()")
                if unit == VERDICT:
                    rendered = verdict(value)
                elif unit == RANGE:
                    rendered = value.spread_shown() or value.shown()
                else:
                    if unit:
                        check_dimension(value.quantity, unit)
                    rendered = value.shown(unit)
            except (FormulaError, QuantityError) as exc:
                code = exc.code if exc.code == "KB512" else "KB509"
                self.diagnostics.append(
                    Diagnostic.make(
                        code,
                        record.path,
                        line,
                        found.column,
                        f"inline value {{{{ {found.content.strip()} }}}}: {exc.message}",
                    )
                )
            except (_Failed, _Cycle):
                pass
            out.append(InlineValue(line, found.column, found.content, value, rendered))
        return out

    def inline_value(self, record: Record, expression: str) -> Value:
        row = _ROW.match(expression)
        if row:  # one row of a table: cost[dir/id], or another record's: dir/id.cost[dir/id]
            owner = record
            if row.group(1):
                owner, _ = self.resolve(row.group(1))
                if owner is None:
                    raise FormulaError("KB509", f"no record '{row.group(1)}'")
            table = self.field_or_cost(owner, row.group(2))
            target, _ = self.resolve(row.group(3))
            rows = dict(table.rows or ()) if table is not None else {}
            if target is None or target.key not in rows:
                raise FormulaError(
                    "KB509",
                    f"'{row.group(2)}' has no row for '{row.group(3)}'"
                    + (f" (rows: {', '.join(rows)})" if rows else ""),
                )
            return rows[target.key]
        qualified = _QUALIFIED_FIELD.fullmatch(expression)
        if qualified:  # dir/id.field alone: that record's own value, with its own provenance
            target, _ = self.resolve(qualified.group(1))
            if target is None:
                raise FormulaError("KB509", f"no record '{qualified.group(1)}'")
            value = self.field_or_cost(target, qualified.group(2))
            if value is None:
                raise FormulaError("KB509", f"{target.key} has no value for '{qualified.group(2)}'")
            return value
        # dir/id.field inside arithmetic: each qualified record becomes a bound name
        bindings: dict[str, Record] = {}

        def bind(match: re.Match) -> str:
            target, _ = self.resolve(match.group(1))
            if target is None:
                raise FormulaError("KB509", f"no record '{match.group(1)}'")
            name = f"ref{len(bindings) + 1}"
            bindings[name] = target
            return f"{name}.{match.group(2)}"

        formula = parse_formula(_QUALIFIED_FIELD.sub(bind, expression))
        used: dict[str, Value] = {}
        try:
            quantity = evaluate(
                formula,
                self.cost_lookup(record, "", bindings, None, used),
                self.param_lookup(record, bindings, used),
                self.call_lookup(record, bindings, used),
            )
        except MissingName as exc:
            raise FormulaError("KB509", exc.message) from None
        if len(used) == 1 and isinstance(formula.tree, (ast.Name, ast.Attribute)):
            return next(iter(used.values()))
        return self.derived_value(record, (), expression, quantity, formula, used, None)


@lru_cache(maxsize=256)
def _bounds(low: str, high: str) -> tuple[Any, Any]:
    """An x-kb-plausible range read once per schema, not once per record (every record's field checks it)."""
    return (parse_quantity_text(low, None) if low else None, parse_quantity_text(high, None) if high else None)


def how_far(stated: float, computed: float) -> str:
    """How a stated figure stands to its recomputation, in words a reader takes in at once:
    'twice', 'half', '0.977×' or '3,600×' the recomputed one; a zero on either side said as such."""
    if computed == 0:
        return "the recomputed figure is 0"
    if stated == 0:
        return "the stated figure is 0"
    ratio = stated / computed
    if abs(ratio - 2) < 0.005:
        return "the stated figure is twice the recomputed one"
    if abs(ratio - 0.5) < 0.0025:
        return "the stated figure is half the recomputed one"
    shown = f"{ratio:,.0f}" if abs(ratio) >= 1000 else f"{ratio:.3g}"
    return f"the stated figure is {shown}× the recomputed one"


def matching(record: Record, specs: Any) -> dict[str, Any] | None:
    """The first of a derivation's or function's specs whose `when` the record meets (a value, a list of
    values, or null for a field the record leaves out), or the spec itself when there is one."""
    for spec in specs if isinstance(specs, list) else [specs] if specs else []:
        when = spec.get("when", {}) if isinstance(spec, dict) else None
        if isinstance(when, dict) and all(
            record.data.get(k) in (v if isinstance(v, list) else [v]) for k, v in when.items()
        ):
            return spec
    return None


def differs(a: float, b: float, tolerance: float) -> bool:
    """Two figures further apart than `tolerance`, relative to the larger: the one test for KB500 and KB530."""
    reference = max(abs(a), abs(b))
    return a != b and bool(reference) and abs(a - b) / reference > tolerance


def contested(record: Record) -> bool:
    """A contested record shows its disagreements on its page instead of failing the check (KB520, KB530)."""
    return record.data.get("status") == "contested"


VERDICT = "verdict"  # {{ a_over_b | verdict }}: a computed ratio of two times, quoted as faster / slower
RANGE = "range"  # {{ x | range }}: 'low to high' over the competing values x rests on (x itself when none compete)


def _verdict_word(ratio: float) -> str:
    return "as fast" if abs(ratio - 1) < 0.01 else "faster" if ratio < 1 else "slower"


def verdict(value: Value) -> str:
    """A ratio of two times in words, from the figure itself: prose never carries a hand-typed verdict."""
    if not value.quantity.dimensionless:
        raise FormulaError(
            "KB512",
            f"{value.shown()} is {describe_dimension(value.quantity.dimensionality)}, not a ratio; "
            "'| verdict' quotes a plain number such as time_a / time_b",
        )
    ratio = float(value.quantity.to("dimensionless").magnitude)
    word = _verdict_word(ratio)
    shown = f"{word} ({format_quantity(value.quantity.to('dimensionless'), None, 3)}× the time"
    flips = [label for label, q in value.variants if _verdict_word(float(q.to("dimensionless").magnitude)) != word]
    spread = value.spread
    if flips and spread is not None:  # a competing input value turns the verdict round: say so, never hide it
        low, high = spread
        shown += (
            f"; {format_quantity(low.to('dimensionless'), None, 3)}× to {format_quantity(high.to('dimensionless'), None, 3)}× "
            f"over competing values, so the verdict turns on {', '.join(flip.split(' = ')[0] for flip in flips)}"
        )
    return shown + ")"


def _labels(value: Value) -> list[str]:
    if value.rows is not None:
        return [label for _, row in value.rows for label, _ in row.variants]
    return [label for label, _ in value.variants]


def _under(value: Value, label: str) -> Any:
    """A value's figure (or table) when the competing value `label` is taken instead of the preferred one."""
    if value.rows is not None:
        return Table({key: _under(row, label) for key, row in value.rows})
    return dict(value.variants).get(label, value.quantity)


def variants_of(formula: Formula, used: tuple[tuple[str, Value], ...], units: Any) -> tuple[tuple[str, Any], ...]:
    """The formula evaluated again with each competing value among its inputs swapped in, one at a time.
    The inputs are keyed as the formula reads them (a name, a.field, or the param() call)."""
    labels = dict.fromkeys(label for _, value in used for label in _labels(value))
    if not labels:
        return ()
    values = dict(used)
    out = []

    def pick(key: str, label: str) -> Any:
        if key not in values:
            raise MissingName(key)  # a name default() stood in for: the same fallback applies
        return _under(values[key], label)

    for label in labels:

        def name(parts: tuple[str, ...], label: str = label) -> Any:
            return pick(".".join(parts), label)

        def param(var: str, pid: str, label: str = label) -> Any:
            return pick(f"param({var}, '{pid}')", label)

        def call(var: str, function: str, args: list, text: str, label: str = label) -> Any:
            return pick(text, label)

        try:
            figure = evaluate(formula, name, param, call)
            out.append((label, figure.to(units)))
        except (FormulaError, KeyError, ArithmeticError, QuantityError, ValueError):
            continue  # this variant cannot be computed (say, a division by zero): the range leaves it out
    return tuple(out)


def weakest_basis(inputs: tuple[tuple[str, Value], ...], default: str) -> str:
    """One level only: each derived input already carries its own weakest basis."""
    bases = [v.input_basis if v.computed else v.basis for _, v in inputs] or [default]
    return min(bases, key=lambda b: BASIS_RANK.get(b, 0))


@dataclass(frozen=True)
class InlineValue:
    line: int
    column: int
    source: str  # what stands between {{ and }}
    value: Value | None
    rendered: str | None


SUBSTITUTE_DEPTH = 3  # derived inputs expanded in place this many levels; deeper ones show their figure


def substituted(value: Value, depth: int = 0) -> str:
    """The formula with each input replaced by its figure, expanding derived inputs in place."""
    if value.formula is None:
        return value.shown()
    inputs = dict(value.inputs)

    def name_text(node: ast.AST) -> str | None:
        found = inputs.get(ast.unparse(node))
        if found is None:
            return None
        if (
            found.computed
            and found.formula is not None
            and found.rows is None
            and found.recomputed is None
            and depth < SUBSTITUTE_DEPTH
        ):
            return f"({substituted(found, depth + 1)})"
        return found.shown()

    return written_out(value.formula.tree, name_text)


def _is_reference(item: Any, corpus: Corpus) -> bool:
    if isinstance(item, list):
        return all(_is_reference(x, corpus) for x in item)
    match = QUALIFIED.match(item) if isinstance(item, str) else None
    return bool(match and match.group(1) in corpus.registry.dirs)


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


def recompute_costs(corpus: Corpus) -> Corpus:
    """Compute every value; with a cache, only for records whose inputs changed (for kb check)."""
    computer = Computer(corpus)
    cache = corpus.cache
    reuse = cache is not None and not corpus.complete
    only = dirty_records(corpus, cache, computer.index) if reuse else None
    computed = computer.run(only)
    diagnostics = list(computer.diagnostics)
    record_paths = {r.path: r.key for r in corpus.records.values()}
    if reuse and only is not None:
        driven_paths = {corpus.records[k].path for k in only}
        diagnostics = [d for d in diagnostics if d.path in driven_paths or d.path not in record_paths]
        for key in corpus.records:
            if key not in only:
                diagnostics.extend(cache.compute[key]["diagnostics"])
        diagnostics.extend(cache.compute_global)
    if cache is not None and (only is None or only or len(cache.compute) != len(corpus.records)):
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
    unique = list(dict.fromkeys(diagnostics))
    if not corpus.complete:
        computed = {}  # kb check keeps diagnostics only: the values would be most of its memory
    return corpus.with_diagnostics(unique, computed=MappingProxyType(computed))
