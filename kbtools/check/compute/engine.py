"""The evaluator: values computed lazily and memoised over the whole corpus, which gives dependency
order for free; a value asked for while it is being computed is a cycle (KB506); a value whose inputs
failed is not reported again. Deep chains run on an explicit stack instead of Python's. The kinds of
value live in their own modules: derivations, costs, parameters, inline."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from kbtools.check.compute import costs, derivations, inline, ledger, parameters
from kbtools.check.compute.flow import DEFER_DEPTH, FAILED, QUERY, RAW, Cycle, Deferred, ValueFailed
from kbtools.check.compute.provenance import stated_value
from kbtools.check.compute.values import (
    Value,
    chosen_references,
    is_reference,
)
from kbtools.check.prose import check_prose
from kbtools.corpus import Corpus, FieldPath, Record, RecordValues
from kbtools.diagnostics import Diagnostic, internal_error
from kbtools.lang.formula import FormulaError
from kbtools.lang.units import (
    Written,
)
from kbtools.progress import track

if TYPE_CHECKING:
    from kbtools.check.compute.evaluation import Evaluator


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
        self.index = self.corpus.index
        self.types = self.corpus.registry.types
        # For the cache, what each driven record's values read, transitively: (record key, value name) of
        # every value of another record, and ("?", query) of every reference resolved. Each value under
        # computation has a frame collecting its reads; a memoised value keeps its reads (value_reads), so
        # a later use of it, found in the memo, counts them again.
        self.stack: list[str] = []
        self.frames: list[set[tuple[str, str]]] = []
        self.value_reads: dict[tuple[str, str], frozenset[tuple[str, str]]] = {}
        self.reads: dict[str, set[tuple[str, str]]] = {}
        self.parsed: set[str] = set()
        # how a field and a cost are computed, bound once: memoised() is the hottest call of a check
        self.compute_field = partial(derivations.field_value, self)
        self.compute_cost = partial(costs.cost_value, self)

    def resolve(self, query: str):
        if self.frames:
            self.frames[-1].add((QUERY, query))
        return self.index.resolve(query)

    def peek(self, record: Record, key: str) -> Any:
        """Another record's frontmatter field read as it is written (not as a value): tracked for the cache. Its
        cost specs are its type's and its own (Record.costs): a type's stand beside the data, not in it."""
        if self.frames:
            self.frames[-1].add((record.key, RAW + key))
        return record.costs if key == "costs" else record.data.get(key)

    def report(self, code: str, record: Record, path: FieldPath, message: str, line: int | None = None) -> None:
        at_line, col = record.position(path)
        self.diagnostics.append(
            Diagnostic.make(code, record.path, line or at_line, col if line is None else 1, message)
        )

    def report_value(self, code: str, record: Record, path: FieldPath, message: str) -> None:
        """A finding about what a value says (its unit, its number): at the value's own text, not its key."""
        line, col = record.value_position(path)
        self.diagnostics.append(Diagnostic.make(code, record.path, line, col, message))

    def stated_value(self, record: Record, path: FieldPath, name: str, written: Written, unit: str | None) -> Value:
        """A figure as the record writes it, with the field's competing values beside it (provenance)."""
        return stated_value(record, path, name, written, unit, self.competing.get((record.key, path), ()))

    def run(self, only: set[str] | None = None) -> dict[str, RecordValues]:
        """Compute every record's values (or only those of the records in `only`)."""
        computed: dict[str, RecordValues] = {}
        records = self.corpus.records
        chosen = (
            list(records.values())
            if only is None
            else sorted((records[k] for k in only if k in records), key=lambda r: r.path)
        )
        for record in track(chosen, "Recomputing figures"):
            self.stack.append(record.key)
            self.frames.append(self.reads.setdefault(record.key, set()))
            try:
                entry = self.drive(lambda record=record: self.record_values(record))
            except (ValueFailed, Cycle):
                entry = None
            except Exception as exc:  # pint or kb failing deep inside: one diagnostic, the rest goes on
                self.diagnostics.append(internal_error(record.path, exc))
                entry = None
            finally:
                self.stack.pop()
                self.frames.pop()
            if entry is not None:
                computed[record.key] = entry
        return computed

    def drive(self, work):
        """Run `work`, first computing on an explicit stack every value it (or they) needed too deep to compute in place."""
        pending: list[Deferred] = []
        while True:
            try:
                if not pending:
                    return work()
                top = pending[-1]
                saved, self.stack = self.stack, [top.record.key]
                saved_frames, self.frames = self.frames, []
                try:
                    self.memoised(top.record, top.name, top.compute)
                except (ValueFailed, Cycle):
                    pass  # reported (or to be reported) where it is used
                finally:
                    self.stack, self.frames = saved, saved_frames
                pending.pop()
            except Deferred as deferred:
                key = (deferred.record.key, deferred.name)
                waiting = [(d.record.key, d.name) for d in pending]
                if key in waiting:  # the value waits, through the others, on itself
                    start = waiting.index(key)
                    self.report_cycle([*pending[start + 1 :], deferred], key)
                    del pending[start:]
                else:
                    pending.append(deferred)

    def report_cycle(self, links: list[Deferred], key: tuple[str, str]) -> None:
        """A cycle found on the explicit stack: each link's path leads from the value before it to it."""
        chain = [step for link in links for step in link.path] + [key]
        cycle = Cycle([f"{r}.{n}" for r, n in chain])
        for record_key, name in dict.fromkeys(chain):
            if self.memo.get((record_key, name)) is FAILED:
                continue
            self.memo[(record_key, name)] = FAILED
            record = self.corpus.records[record_key]
            where = ("costs", name.removeprefix("costs."), "formula") if name.startswith("costs.") else (name,)
            self.report("KB506", record, where, f"{name}: cycle of {len(chain) - 1} values: {cycle}")

    def record_values(self, record: Record) -> RecordValues | None:
        derivations.parse_quantities(self, record)
        parameters.check_carried_by(self, record)
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
                        derivations.check_plausible(
                            self, record, name, value, record_type.plan.properties[name].plausible
                        )
        costs = {}
        for name in record.costs:
            value = self.cost_or_none(record, name)
            if value is not None:
                costs[name] = value
        if record_type.ledger:  # a case of the prediction ledger: kb's prediction for the run, and its error
            costs.update(ledger.ledger_values(self, record, record_type.ledger))
        self.diagnostics.extend(check_prose(self, record, fields, costs))
        return RecordValues(
            fields, costs, parameters.hardware_tables(self, record), tuple(inline.inline_values(self, record))
        )

    def settled(self, compute, record: Record, name: str) -> Value | None:
        """A value, or None when it failed (its root cause is already reported)."""
        try:
            return compute(record, name)
        except ValueFailed:
            return None
        except Cycle as cycle:
            self.report("KB506", record, (name,), f"{name}: cycle {cycle}")
            return None

    def memoised(self, record: Record, name: str, compute) -> Any:
        """Compute once per (record, name); re-entry while computing is a cycle; failures stick."""
        key = (record.key, name)
        if key in self.memo:
            result = self.memo[key]
        else:
            if key in self.active:
                raise Cycle([f"{r}.{n}" for r, n in self.active[self.active.index(key) :]] + [f"{record.key}.{name}"])
            if len(self.active) >= DEFER_DEPTH:
                raise Deferred(record, name, compute, list(self.active))
            self.active.append(key)
            self.stack.append(record.key)
            frame: set[tuple[str, str]] = set()
            self.frames.append(frame)
            try:
                result = compute(record, name.removeprefix("costs."))
            except ValueFailed:
                result = FAILED
            finally:
                self.active.pop()
                self.stack.pop()
                self.frames.pop()
            self.memo[key] = result
            self.value_reads[key] = frozenset(frame)
        if self.frames:
            self.frames[-1].add(key)
            self.frames[-1].update(self.value_reads.get(key, ()))
        if result is FAILED:
            raise ValueFailed()
        return result

    def field(self, record: Record, name: str) -> Value | None:
        return self.memoised(record, name, self.compute_field)

    def referenced(self, record: Record, name: str, bindings: dict[str, Record]) -> Record | None:
        """The record a name stands for: a for_each binding, a reference input, or a reference field."""
        if name in bindings:
            return bindings[name]
        inputs = record.mapping("inputs")
        is_input = name in inputs
        raw = inputs.get(name) if is_input else record.data.get(name)
        options = chosen_references(raw)
        if options:
            raw = options[0]  # the preferred choice; chosen() gives the others as a condition
        if is_input and not is_reference(raw, self.corpus):
            # a quantity (or a list): `n.value` where n is '4 GB' names nothing, and must say so
            raise FormulaError(
                "KB502",
                f"'{name}' is a quantity input ({raw!r}), not a record reference, so it has no fields; "
                f"write {name} alone",
            )
        if isinstance(raw, str):
            target, _ = self.resolve(raw)
            if target is None and (is_input or self.is_reference_field(record, name)):
                raise ValueFailed()  # a dangling reference: the links stage has reported it
            return target
        return None

    def is_reference_field(self, record: Record, name: str) -> bool:
        plan = self.types[record.type].plan.properties.get(name) if record.type in self.types else None
        return bool(plan and plan.ref_types)

    def field_or_cost(self, record: Record, name: str) -> Value | None:
        costs = self.peek(record, "costs")
        if isinstance(costs, dict) and name in costs:
            return self.cost(record, name)
        if name in ledger.NAMES and record.type in self.types and self.types[record.type].ledger:
            return ledger.ledger_values(self, record, self.types[record.type].ledger, report=False).get(name)
        if record.type in self.types:
            return self.field(record, name)
        return None

    def cost_or_none(self, record: Record, name: str) -> Value | None:
        try:
            return self.cost(record, name)
        except ValueFailed:
            return None
        except Cycle as cycle:
            self.report("KB506", record, ("costs", name, "formula"), f"costs.{name}: cycle {cycle}")
            self.memo[(record.key, f"costs.{name}")] = FAILED
            return None

    def cost(self, record: Record, name: str) -> Value:
        return self.memoised(record, f"costs.{name}", self.compute_cost)


if TYPE_CHECKING:  # the kinds ask the evaluator only through Evaluator: mypy holds the Computer to it here

    def _an_evaluator(computer: Computer) -> Evaluator:
        return computer
