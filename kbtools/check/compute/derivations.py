"""Fields: quantities parsed from what records write (competing values too), the schema's type-level
derivations (x-kb-derive) checked against stated figures, the type's functions, physical and plausible ranges."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kbtools.check.compute import parameters
from kbtools.check.compute.flow import FAILED, Cycle, ValueFailed
from kbtools.check.compute.provenance import derived_value
from kbtools.check.compute.values import (
    Value,
    _bounds,
    chosen_value,
    contested,
    differs,
    how_far,
    is_reference,
    matching,
    substituted,
)
from kbtools.corpus import FieldPath, Record, dotted
from kbtools.diagnostics import Diagnostic
from kbtools.fieldwalk import walk_plan
from kbtools.lang.formula import AbsentValue, Formula, FormulaError, MissingName, evaluate, in_unit, parse_formula
from kbtools.lang.units import (
    QuantityError,
    Written,
    check_dimension,
    format_quantity,
    parse_unit,
    parse_written,
    unit_registry,
)
from kbtools.registry import FieldPlan, PhysicalRange

if TYPE_CHECKING:
    from kbtools.check.compute.evaluation import Evaluator


def parse_quantities(c: Evaluator, record: Record) -> None:
    """Parse a record's quantity fields once, on first use (a partial run parses only what it reads)."""
    if record.key in c.parsed:
        return
    c.parsed.add(record.key)
    record_type = c.types.get(record.type) if record.type else None
    if record_type is None:
        return
    for path, value, plan in walk_plan(record_type.plan, dict(record.data)):
        if plan.quantity is not None and isinstance(value, list):
            parse_competing(c, record, path, value, plan.quantity, plan)
        elif plan.quantity is not None and value is not None:
            if isinstance(value, dict) and "value" not in value:
                continue  # the schema reports the shape
            try:
                written = parse_written(value, plan.quantity)
            except QuantityError as exc:
                c.report_value(exc.code, record, path, f"{dotted(path)}: {exc.message}")
                continue
            bare_number(c, record, path, value, plan.quantity, written)
            if possible(c, record, path, value, plan, written):
                c.written[(record.key, path)] = written
        elif plan.inputs and isinstance(value, dict):
            for name, item in value.items():
                field = record_type.plan.properties.get(name)  # an input named as a field sets it: its range holds
                if isinstance(item, list) and item and all(isinstance(x, dict) for x in item):
                    parse_competing(c, record, path + (name,), item, None, field)
                    continue
                if is_reference(item, c.corpus) or isinstance(item, list):
                    continue
                try:
                    written = parse_written(item, None if not isinstance(item, (int, float)) else "")
                except QuantityError as exc:
                    c.report_value(exc.code, record, path + (name,), f"inputs.{name}: {exc.message}")
                    continue
                if possible(c, record, path + (name,), item, field):
                    c.written[(record.key, path + (name,))] = written


def bare_number(c: Evaluator, record: Record, path: FieldPath, raw: Any, unit: str, written: Written) -> None:
    """KB406: a bare number in a field whose unit is not 1 takes the schema's unit silently, and a newcomer's
    `bandwidth: 3200` (meant as GB/s) becomes 3,200 TB/s. Say which unit kb assumed, so the writer can see it."""
    number = raw.get("value") if isinstance(raw, dict) else raw
    if isinstance(number, bool) or not isinstance(number, (int, float)) or unit in ("", "*", "1"):
        return
    if written.quantity.dimensionless:
        return
    where = path + ("value",) if isinstance(raw, dict) else path
    c.report_value(
        "KB406",
        record,
        where,
        f"{dotted(path)}: the bare number {number} was read as {format_quantity(written.quantity)} (the field's unit, "
        f"{unit}); write the unit, '{number} {unit}', or the figure you meant",
    )


def possible(
    c: Evaluator, record: Record, path: FieldPath, raw: Any, plan: FieldPlan | None, written: Written | None = None
) -> bool:
    """Whether a written value can be a figure of its field at all (x-kb-range): each figure of it outside the
    range (the value, either end of its band) is KB405 at its own text, and an impossible value is not computed
    with, as an unreadable one is not. `written` is the value as read in the field's unit; an input named as a
    field is read again in the field's unit (a bare 8192 is 8192 token there), unless it is of another kind,
    which the formulas reading it judge."""
    physical = plan.physical if plan is not None else None
    if physical is None or plan is None or plan.quantity is None:
        return True
    if written is None:
        try:
            written = parse_written(raw, plan.quantity)
        except QuantityError:
            return True
    label = dotted(path)
    field = next(str(part) for part in reversed(path) if isinstance(part, str))  # an input's, or a list item's
    ends = [(path, label, written.quantity)]
    ends += [(path + (end,), f"{label}.{end}", getattr(written, end)) for end in ("low", "high")]
    fits = True
    for where, said, figure in ends:
        if figure is not None and not physical.allows(figure):
            c.report_value("KB405", record, where, impossible(said, format_quantity(figure), field, physical))
            fits = False
    return fits


def impossible(label: str, shown: str, field: str, physical: PhysicalRange) -> str:
    """The message of KB405: the figure, and the range its field has, with the schema's reason."""
    reason = f" ({physical.reason})" if physical.reason else ""
    return f"{label}: {shown} is impossible: {field} is {physical.words()}{reason}"


def parse_competing(
    c: Evaluator, record: Record, path: FieldPath, items: list, canonical: str | None, plan: FieldPlan | None
) -> None:
    """A field written as several ranked, sourced values: the preferred one is computed with, the others
    are kept beside it; values that disagree beyond the tolerance make the record contested (KB530). Each must
    be possible for the field (x-kb-range), or none is computed with."""
    parsed: list[Written] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict) or "value" not in item:
            return  # the schema reports the shape
        try:
            parsed.append(parse_written(item, canonical))
        except QuantityError as exc:
            c.report_value(exc.code, record, path + (index,), f"{dotted(path + (index,))}: {exc.message}")
            return
        if canonical is not None:
            bare_number(c, record, path + (index,), item, canonical, parsed[-1])
    in_field_unit = canonical is not None and plan is not None and canonical == plan.quantity
    if not all(
        [
            possible(c, record, path + (i,), item, plan, parsed[i] if in_field_unit else None)
            for i, item in enumerate(items)
        ]
    ):
        return
    preferred = [w for w in parsed if w.rank == "preferred"]
    if len(preferred) != 1:
        c.report(
            "KB531",
            record,
            path,
            f"{dotted(path)}: {len(preferred)} values are ranked preferred; exactly one must be "
            "(the one kb computes with), the others normal or deprecated",
        )
        return
    best = preferred[0]
    c.written[(record.key, path)] = best
    c.competing[(record.key, path)] = [w for w in parsed if w is not best]
    tolerance = field_tolerance(c, record, path)
    base = float(best.quantity.magnitude)
    for index, other in enumerate(parsed):
        if other is best or other.rank == "deprecated" or contested(record) or other.condition or best.condition:
            continue  # values that hold under different conditions are choices, not a disagreement
        if differs(base, float(other.quantity.to(best.quantity.units).magnitude), tolerance):
            c.report(
                "KB530",
                record,
                path + (index,),
                f"{dotted(path)}: {format_quantity(other.quantity)} ({other.source}) disagrees with the preferred "
                f"{format_quantity(best.quantity)} ({best.source}) by more than {tolerance * 100:g}%: mark the record "
                "contested and say which is right and why, or rank the wrong one deprecated",
            )


def field_tolerance(c: Evaluator, record: Record, path: FieldPath) -> float:
    spec = derivation(c, record, path[0]) if len(path) == 1 and isinstance(path[0], str) else None
    default = c.corpus.settings.tolerance
    return float(spec.get("tolerance", default)) if spec else default


def field_value(c: Evaluator, record: Record, name: str) -> Any:
    parse_quantities(c, record)
    record_type = c.types[record.type]
    plan = record_type.plan.properties.get(name)
    unit = plan.quantity if plan is not None and plan.quantity not in (None, "*") else None
    written = c.written.get((record.key, (name,)))
    raw = record.data.get(name)
    stated = None
    if written is not None:
        stated = c.stated_value(record, (name,), name, written, unit)
    elif isinstance(raw, (int, float)) and not isinstance(raw, bool) and (plan is None or plan.quantity is None):
        ureg = unit_registry()
        stated = c.stated_value(record, (name,), name, Written(ureg.Quantity(raw, ureg.dimensionless)), None)
    elif raw is not None and plan is not None and plan.quantity is not None:
        return FAILED  # written but unparseable: already reported
    spec = derivation(c, record, name)
    if spec is None:
        return stated
    formula = schema_formula(c, record, spec)
    if formula is None:
        return stated
    try:
        derived = derive(c, record, name, formula, unit, plan)
    except ValueFailed:
        return stated if stated is not None else FAILED
    if not isinstance(derived, Value):
        return stated if derived is None else FAILED
    if stated is None:
        return other_end(c, record, name, spec, derived, unit, plan)
    compare(c, record, (name,), name, stated.quantity, derived, spec.get("tolerance", c.corpus.settings.tolerance))
    return Value(**{**stated.__dict__, "recomputed": derived})


def other_end(
    c: Evaluator,
    record: Record,
    name: str,
    spec: dict[str, Any],
    derived: Value,
    unit: str | None,
    plan: FieldPlan | None,
) -> Value:
    """A derivation with an `or` (x-kb-derive `{"formula": nominal, "as": ..., "or": {"formula": measured,
    "as": ...}}`) makes the field a condition with two ends, each said by its `as`: the nominal figure, which
    is computed with, and the other wherever the record has what its formula reads (a measured rate). Every
    figure that reads the field then spans both, and says which end is which."""
    alternative = spec.get("or")
    if not isinstance(alternative, dict):
        return derived
    formula = schema_formula(c, record, alternative)
    try:
        other = derive(c, record, name, formula, unit, plan) if formula is not None else None
    except ValueFailed:
        return derived  # what the other end reads failed, and was reported there
    if not isinstance(other, Value) or other.quantity == derived.quantity:
        return derived  # nothing recorded for the other end, or it is the same figure

    def said(value: Value, words: Any) -> str:
        how = words if isinstance(words, str) else value.formula.text if value.formula else name
        return f"{record.key}.{name} at {how}, {format_quantity(value.quantity, unit, 4)}"

    condition = f"{record.key}.{name}"
    ends = [(said(derived, spec.get("as")), derived), (said(other, alternative.get("as")), other)]
    return chosen_value(condition, ends, derived)


def derive(
    c: Evaluator, record: Record, name: str, formula: Formula, unit: str | None, plan: FieldPlan | None
) -> Value | None | object:
    """The field's figure by one of its schema's formulas: a Value, None when what it reads is absent, or
    FAILED once reported; ValueFailed when a value it reads failed."""
    inputs: dict[str, Value] = {}
    try:
        quantity = evaluate(
            formula,
            derivation_lookup(c, record, inputs),
            parameters.param_lookup(c, record, {}, inputs),
            call_lookup(c, record, {}, inputs),
        )
    except MissingName:
        return None  # inputs absent: nothing to derive
    except Cycle as cycle:
        c.report("KB506", record, (name,), f"{name}: cycle {cycle}")
        return FAILED
    except FormulaError as exc:
        c.report(exc.code, record, (name,), f"{name}: {exc.message} (in {formula.text})")
        return FAILED
    if unit is not None:
        try:
            check_dimension(quantity, unit)
        except QuantityError as exc:
            c.report("KB504", record, (name,), f"{name}: {formula.text} gives {exc.message}")
            return FAILED
    try:
        derived = derived_value(
            record, (name,), name, quantity, formula, inputs, unit, lambda again: call_lookup(c, record, {}, again)
        )
    except FormulaError as exc:  # finite as computed, but not in the field's unit
        c.report(exc.code, record, (name,), f"{name}: {exc.message} (in {formula.text})")
        return FAILED
    return derived if derived_possible(c, record, name, plan, derived) else FAILED


def derived_possible(c: Evaluator, record: Record, name: str, plan: FieldPlan | None, derived: Value) -> bool:
    """Whether a derived figure can be one of its field (x-kb-range), under every condition it rests on: a
    formula can give what none of its inputs is (a layer count minus more layers than it has). KB405 at the
    first of the record's own fields it read, and nothing is computed from it."""
    physical = plan.physical if plan is not None else None
    if physical is None:
        return True
    broken = next((q for q in (derived.quantity, *(derived.spread or ())) if not physical.allows(q)), None)
    if broken is None:
        return True
    formula = derived.formula.text if derived.formula is not None else name
    lines = [v.line for _, v in derived.inputs if v.record == record.key]
    c.report(
        "KB405",
        record,
        (name,),
        impossible(f"{name} = {formula}", format_quantity(broken, derived.unit, 4), name, physical),
        line=min(lines) if lines else None,
    )
    return False


def derivation(c: Evaluator, record: Record, name: str) -> dict[str, Any] | None:
    return matching(record, c.types[record.type].derive.get(name))


def schema_formula(c: Evaluator, record: Record, spec: dict[str, Any]) -> Formula | None:
    try:
        return parse_formula(spec.get("formula", ""))
    except FormulaError as exc:
        key = (record.type or "", str(spec.get("formula")))
        if key not in c.broken_schema_formulas:  # one report per schema formula, not one per record
            c.broken_schema_formulas.add(key)
            schema_path = c.types[record.type].schema_path
            c.diagnostics.append(
                Diagnostic.make(
                    "KB210", schema_path, 1, 1, f"x-kb-derive formula {spec.get('formula')!r}: {exc.message}"
                )
            )
        return None


def derivation_lookup(c: Evaluator, record: Record, used: dict[str, Value]):
    """Names in a type-level derivation: the record's own fields, and ref_field.field."""

    def lookup(parts: tuple[str, ...]) -> Any:
        if len(parts) == 1:
            value = c.field(record, parts[0])
        else:
            target = c.referenced(record, parts[0], {})
            if target is None:
                raise MissingName(".".join(parts))
            value = c.field_or_cost(target, parts[1])
        if value is None:
            raise MissingName(".".join(parts))
        used[".".join(parts)] = value
        return value.quantity

    return lookup


def check_plausible(c: Evaluator, record: Record, name: str, value: Value, spec: dict) -> None:
    """A figure outside the range real hardware has (the schema's x-kb-plausible) is a warning: a unit
    slip, or on-chip SRAM stored as memory bandwidth, looks like this (KB540). A figure the schema itself
    fixes for the record is not judged: a derivation that reads no field states what the record's kind
    implies, such as the 0 B/token of KV of a model with `attention: none`, which has no cache."""
    try:
        low, high = _bounds(str(spec.get("min", "")), str(spec.get("max", "")))
    except QuantityError:
        return  # the schema's own mistake; the registry reports schema errors elsewhere
    reason = spec.get("reason", "")
    fixed = schema_fixed(value)
    for figure in [value, *[a for a in value.alternatives if a.rank != "deprecated"]]:
        quantity = figure.quantity
        if quantity is None or any(b is not None and not quantity.is_compatible_with(b) for b in (low, high)):
            continue
        if fixed is not None and quantity.is_compatible_with(fixed) and quantity == fixed:
            continue
        if (low is not None and quantity < low) or (high is not None and quantity > high):
            span = " to ".join(format_quantity(b) for b in (low, high) if b is not None)
            which = "at least " if high is None else "at most " if low is None else ""
            c.report_value(
                "KB540",
                record,
                (name,),
                f"{name} = {format_quantity(quantity)} is outside the range real values fall in ({which}{span})"
                + (f": {reason}" if reason else "")
                + "; check the unit and what was measured",
            )


def schema_fixed(value: Value) -> Any:
    """The figure the schema's derivation gives a field without reading any of the record's fields (a
    constant its `when` picks by the record's kind), or None: what a value derived so, or checked against
    such a derivation, must be."""
    derived = value if value.formula is not None else value.recomputed
    if derived is None or derived.formula is None or derived.formula.names or derived.quantity is None:
        return None
    return derived.quantity


def call_lookup(c: Evaluator, record: Record, bindings: dict[str, Record], used: dict[str, Value]):
    """record.function(args): a function the record's type declares in its schema (x-kb-functions),
    evaluated over that record's fields with the arguments bound to its parameters."""

    def call(var: str, function: str, arguments: Callable[[], list], text: str) -> Any:
        target = callee(c, record, var, bindings, text)
        declared = c.types[target.type].functions if target.type in c.types else {}
        spec = matching(target, declared.get(function))
        if not isinstance(spec, dict) or not isinstance(spec.get("formula"), str):
            known = ", ".join(sorted(declared)) or "none"
            raise FormulaError(
                "KB502",
                f"{text}: {target.key} is a {target.type}, whose schema declares no function "
                f"'{function}' (it declares: {known})",
            )
        signature: dict[str, Any] = spec["parameters"] if isinstance(spec.get("parameters"), dict) else {}
        args = arguments()  # read only now that the call is known to be a record's declared function
        if len(args) != len(signature):
            raise FormulaError(
                "KB502",
                f"{text}: {function}() takes {len(signature)} argument(s) ({', '.join(signature)}), not {len(args)}",
            )
        bound: dict[str, Any] = {}
        for (name, unit), arg in zip(signature.items(), args, strict=True):
            if isinstance(unit, str) and not arg.is_compatible_with(parse_unit(unit)):
                raise FormulaError("KB503", f"{text}: {function}()'s {name} is in {unit}, not {format_quantity(arg)}")
            bound[name] = arg
        formula = parse_formula(spec["formula"])
        inner: dict[str, Value] = {}
        line, _ = record.position(())
        fields = derivation_lookup(c, target, inner)

        def lookup(parts: tuple[str, ...]) -> Any:
            if len(parts) == 1 and parts[0] in bound:
                inner[parts[0]] = Value(bound[parts[0]], record.key, parts[0], record.path, line, "derived", 1.0, ())
                return bound[parts[0]]
            return fields(parts)

        try:
            quantity = evaluate(formula, lookup, parameters.param_lookup(c, target, {}, inner))
        except MissingName as exc:
            if isinstance(exc, AbsentValue):
                raise
            # a field of the called record that it leaves out: the record's own gap, as `tier.field` would be
            # (a for_each with skip_missing leaves its row out), named with the record
            raise AbsentValue(exc.name, target.key, f"{target.key} has no value for '{exc.name}'") from None
        unit = spec.get("unit") if isinstance(spec.get("unit"), str) else None
        if unit is not None and not quantity.is_compatible_with(parse_unit(unit)):
            raise FormulaError("KB504", f"{text}: {function}() gives {format_quantity(quantity)}, not {unit}")
        value = derived_value(target, (), text, quantity, formula, inner, unit)
        used[text] = value  # keyed as the call reads, so it is shown (and varied) in its place
        return value.quantity

    return call


def callee(c: Evaluator, record: Record, var: str, bindings: dict[str, Record], text: str) -> Record:
    """The record `var` names in a call var.function(...). A call on a quantity is a construct the language
    does not have (KB501): `n.to('s')` reaches for the number's own methods, which no formula may call."""
    try:
        target = c.referenced(record, var, bindings)
    except FormulaError:  # a quantity input, which has no fields and no functions
        target = None
    if target is not None:
        return target
    raw = record.mapping("inputs").get(var, record.data.get(var))
    if raw is not None or var in record.costs:
        kind = "a list" if isinstance(raw, list) else "a quantity"
        raise FormulaError(
            "KB501",
            f"{text}: '{var}' is {kind}, not a record, so it has no functions; only a function a record's type "
            "declares can be called, as record.name(...), and units are converted by the cost's or field's unit",
        )
    raise MissingName(var, f"{text}: '{var}' is not a record reference")


def within(stated: Any, computed: Value, tolerance: float) -> bool:
    """A stated figure inside the recomputed range, widened at each end by the tolerance, agrees with it:
    it holds under one of the conditions the figure rests on."""
    spread = computed.spread
    if spread is None:
        return False
    low, high = (float(q.to(stated.units).magnitude) for q in spread)
    figure = float(stated.magnitude)
    return low - tolerance * abs(low) <= figure <= high + tolerance * abs(high)


def compare(
    c: Evaluator, record: Record, path: FieldPath, label: str, stated: Any, computed: Value, tolerance: float
) -> None:
    try:
        recomputed = in_unit(computed.quantity, stated.units)
    except FormulaError as exc:  # the recomputed figure overflows in the stated figure's unit
        c.report(exc.code, record, path, f"{label}: {exc.message}")
        return
    stated_m, computed_m = float(stated.magnitude), float(recomputed.magnitude)
    if not differs(stated_m, computed_m, tolerance) or within(stated, computed, tolerance):
        return
    how = how_far(stated_m, computed_m)
    c.report(
        "KB500",
        record,
        path,
        f"{label}: stated {format_quantity(stated)} but {computed.formula.text if computed.formula else computed.name} = {substituted(computed)} "
        f"= {format_quantity(recomputed)}; {how} (tolerance {tolerance * 100:g}%)"
        + (
            f", and outside its range {computed.spread_shown()} over the conditions it rests on"
            if computed.spread
            else ""
        ),
    )
