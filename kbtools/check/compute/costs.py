"""Cost blocks: a record's inputs and costs, tables over for_each rows, the stated figure compared with
its recomputation (KB500) and the bounds a measurement sets (KB520)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbtools.check.compute import derivations, parameters
from kbtools.check.compute.flow import FAILED, ValueFailed
from kbtools.check.compute.provenance import confidence, derived_value
from kbtools.check.compute.values import (
    Value,
    chosen_references,
    chosen_value,
    contested,
    is_reference,
)
from kbtools.corpus import Record
from kbtools.lang.formula import (
    ABSENT_FALLBACK,
    AbsentValue,
    Formula,
    FormulaError,
    MissingName,
    Table,
    evaluate,
    parse_formula,
)
from kbtools.lang.units import (
    QuantityError,
    check_dimension,
    describe_dimension,
    format_quantity,
    parse_quantity_text,
    parse_unit,
)

if TYPE_CHECKING:
    from kbtools.check.compute.evaluation import Evaluator

SKIPPED = object()  # a for_each row left out: its record has no value for what the formula reads


def cost_value(c: Evaluator, record: Record, name: str) -> Any:
    spec = record.costs[name]
    where = ("costs", name, "formula")
    if not isinstance(spec, dict) or not isinstance(spec.get("formula"), str) or not isinstance(spec.get("unit"), str):
        return FAILED  # the schema reports the shape
    try:
        formula = parse_formula(spec["formula"])
    except FormulaError as exc:
        c.report(exc.code, record, where, f"costs.{name}: {exc.message}")
        return FAILED
    try:
        unit_q = parse_unit(spec["unit"])
    except QuantityError as exc:
        c.report_value(exc.code, record, ("costs", name, "unit"), f"costs.{name}.unit: {exc.message}")
        return FAILED
    for_each = spec.get("for_each")
    table_only = [key for key in ("skip_missing", "beside") if key in spec]
    if table_only and not (isinstance(for_each, dict) and for_each):
        c.report(
            "KB508",
            record,
            ("costs", name, table_only[0]),
            f"costs.{name}.{table_only[0]}: only a for_each table has rows to leave out or show beside another",
        )
        return FAILED
    if isinstance(for_each, dict) and for_each and "stated" in spec:
        c.report(
            "KB508",
            record,
            ("costs", name, "stated"),
            f"costs.{name}: a for_each table has one figure per row, so 'stated' cannot be checked here; "
            "state one row as its own cost, or quote it in prose as {{ " + name + "[dir/id] }}",
        )
        return FAILED
    if isinstance(for_each, dict) and for_each:
        var, list_name = next(iter(for_each.items()))
        targets = row_records(c, record, name, list_name)
        if targets is None:
            return FAILED
        if not beside_ok(c, record, name, spec, list_name):
            return FAILED
        rows = []
        for target in targets:
            row = evaluate_cost(
                c,
                record,
                name,
                formula,
                spec,
                unit_q,
                {var: target},
                row_key=target.key,
                skip=spec.get("skip_missing") is True,
            )
            if row is SKIPPED:
                continue
            if row is FAILED:
                return FAILED
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
            min((v.confidence for _, v in rows), default=confidence(record)),
            sources,
            unit=spec["unit"],
            formula=formula,
            rows=tuple(rows),
        )
    return evaluate_cost(c, record, name, formula, spec, unit_q, {}, row_key=None)


def not_given(c: Evaluator, record: Record, name: str, missing: MissingName) -> bool:
    """Whether a cost the record's type supplies (x-kb-costs) does not apply: it reads a field the record
    leaves out, or a field a record it names has no value for (a workload on an accelerator whose record
    gives no host link). A type's cost is a question asked of every record; what the records cannot answer
    is said where the answer is shown (kb plan names the field), never an error of the record. A cost the
    record writes itself is its author's claim, and a gap in it stays an error."""
    record_type = c.types.get(record.type) if record.type else None
    if record_type is None or name not in record_type.costs:
        return False
    if isinstance(missing, AbsentValue) and missing.record != record.key:
        return True  # a field of another record, read through a reference or a function of it
    field = missing.name.split(".")[0]
    if "." in missing.name and field in record_type.plan.properties and field in record.data:
        return True  # model.weight_bytes: the record names the model, whose record lacks the field
    return field in record_type.plan.properties and field not in record.data and field not in record.mapping("inputs")


def beside_ok(c: Evaluator, record: Record, name: str, spec: dict, list_name: str) -> bool:
    """`beside: other` shows this table as a column of another table over the same rows."""
    other = spec.get("beside")
    if other is None:
        return True
    theirs = record.costs.get(other)
    each = theirs.get("for_each") if isinstance(theirs, dict) else None
    if other == name or not isinstance(each, dict) or list(each.values()) != [list_name]:
        c.report(
            "KB508",
            record,
            ("costs", name, "beside"),
            f"costs.{name}.beside: '{other}' is not another for_each cost of this record over '{list_name}'",
        )
        return False
    return True


def row_records(c: Evaluator, record: Record, name: str, list_name: str) -> list[Record] | None:
    inputs = record.data.get("inputs")
    raw = inputs.get(list_name) if isinstance(inputs, dict) and list_name in inputs else record.data.get(list_name)
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        c.report(
            "KB508",
            record,
            ("costs", name, "for_each"),
            f"costs.{name}.for_each: '{list_name}' is not a list of record references",
        )
        return None
    targets = []
    for item in raw:
        target, _ = c.resolve(item)
        if target is None:
            return None  # the links stage reports it
        targets.append(target)
    return targets


def evaluate_cost(
    c: Evaluator,
    record: Record,
    name: str,
    formula: Formula,
    spec: dict,
    unit_q,
    bindings: dict[str, Record],
    row_key: str | None,
    skip: bool = False,
) -> Any:
    """One figure of a cost (one row of a for_each table); SKIPPED for a row whose record has no value
    for a field the formula reads, when the cost says skip_missing."""
    where = ("costs", name, "formula")
    used: dict[str, Value] = {}
    label = f"costs.{name}" + (f"[{row_key}]" if row_key else "")
    try:
        quantity = evaluate(
            formula,
            cost_lookup(c, record, name, bindings, row_key, used),
            parameters.param_lookup(c, record, bindings, used),
            derivations.call_lookup(c, record, bindings, used),
        )
    except MissingName as exc:
        if skip and isinstance(exc, AbsentValue) and exc.record in {t.key for t in bindings.values()}:
            return SKIPPED
        if not_given(c, record, name, exc):
            return FAILED  # a cost of the record's type reading a field the record leaves out: it does not apply
        c.report("KB502", record, where, f"{label}: {exc.message}")
        return FAILED
    except FormulaError as exc:
        c.report(exc.code, record, where, f"{label}: {exc.message}")
        return FAILED
    if not quantity.is_compatible_with(unit_q):
        c.report(
            "KB504",
            record,
            ("costs", name, "unit"),
            f"{label}: {formula.text} gives {describe_dimension(quantity.dimensionality)} "
            f"({format_quantity(quantity)}), but its unit is {spec['unit']} ({describe_dimension(unit_q.dimensionality)})",
        )
        return FAILED
    try:
        value = derived_value(
            record,
            where,
            name if row_key is None else f"{name}[{row_key}]",
            quantity,
            formula,
            used,
            spec["unit"],
            lambda again: derivations.call_lookup(c, record, bindings, again),
        )
    except FormulaError as exc:  # finite as computed, but not in the cost's unit
        c.report(exc.code, record, where, f"{label}: {exc.message}")
        return FAILED
    for bound in ("at_most", "at_least"):
        if bound in spec:
            check_bound(c, record, name, label, value, spec, bound)
    if "stated" in spec and row_key is None:
        try:
            stated = parse_quantity_text(
                spec["stated"]["value"] if isinstance(spec["stated"], dict) else spec["stated"], spec["unit"]
            )
            check_dimension(stated, spec["unit"])
        except (QuantityError, KeyError) as exc:
            message = exc.message if isinstance(exc, QuantityError) else "stated needs a value"
            c.report_value(
                getattr(exc, "code", "KB400"), record, ("costs", name, "stated"), f"costs.{name}.stated: {message}"
            )
            return FAILED
        derivations.compare(
            c,
            record,
            ("costs", name, "stated"),
            f"costs.{name}",
            stated,
            value,
            spec.get("tolerance", c.corpus.settings.tolerance),
        )
    return value


def cost_lookup(
    c: Evaluator,
    record: Record,
    cost_name: str,
    bindings: dict[str, Record],
    row_key: str | None,
    used: dict[str, Value],
):
    inputs, costs = record.mapping("inputs"), record.costs
    derivations.parse_quantities(c, record)

    def lookup(parts: tuple[str, ...]) -> Any:
        shown = ".".join(parts)
        if len(parts) == 2:
            target = c.referenced(record, parts[0], bindings)
            if target is None:
                raise MissingName(
                    shown,
                    f"'{parts[0]}' is not a record reference (an input, a for_each variable or a reference field)",
                )
            value = c.field_or_cost(target, parts[1])
            choice = parts[0] not in bindings and chosen_references(inputs.get(parts[0]))
            if value is None and choice and ABSENT_FALLBACK.get() is None:
                raise AbsentValue(shown, target.key, f"{target.key} has no value for '{parts[1]}'")
            if choice:  # each choice's own figure, or default()'s fallback where a choice has none
                value = chosen(c, record, parts[0], parts[1], value)
            elif value is None:
                raise AbsentValue(shown, target.key, f"{target.key} has no value for '{parts[1]}'")
        else:
            name = parts[0]
            if name in bindings or (name in inputs and is_reference(inputs[name], c.corpus)):
                raise FormulaError("KB502", f"'{name}' is a record; name one of its fields, like {name}.<field>")
            if name in inputs:
                written = c.written.get((record.key, ("inputs", name)))
                if written is None:
                    raise ValueFailed()
                value = c.stated_value(record, ("inputs", name), name, written, None)
            elif name in costs:
                value = c.cost(record, name)
            else:
                value = c.field(record, name) if record.type in c.types else None
                if (
                    value is None and record.type in c.types
                ):  # a figure its type gives beside its costs (a ledger case's)
                    value = c.field_or_cost(record, name)
                if value is None:
                    raise MissingName(name, f"'{name}' is not an input, a cost or a field of {record.key}")
        if value.rows is not None:
            rows = dict(value.rows)
            if row_key is not None and row_key in rows:
                value = rows[row_key]
            elif row_key is not None and same_rows(costs, cost_name, shown):
                # a row the table left out (skip_missing) is left out of a table over the same rows reading it
                raise AbsentValue(shown, row_key, f"{shown} has no row for {row_key}")
            else:
                used[shown] = value
                return Table({k: v.quantity for k, v in value.rows or ()})
        used[shown] = value
        return value.quantity

    return lookup


def same_rows(costs: dict, reader: str, read: str) -> bool:
    """Two for_each costs of a record over the same list: a row of one stands for the same row of the other."""
    lists = []
    for name in (reader, read):
        spec = costs.get(name)
        each = spec.get("for_each") if isinstance(spec, dict) else None
        if not isinstance(each, dict) or not each:
            return False
        lists.append(list(each.values()))
    return lists[0] == lists[1]


def check_bound(c: Evaluator, record: Record, name: str, label: str, value: Value, spec: dict, bound: str) -> None:
    """A cross-check: a computed figure against the bound the model sets for it (KB520). A contested
    record keeps its disagreement on show (the site prints both figures) instead of failing the check."""
    raw = spec[bound]["value"] if isinstance(spec[bound], dict) else spec[bound]
    try:
        limit = parse_quantity_text(raw, spec["unit"])
        check_dimension(limit, spec["unit"])
    except QuantityError as exc:
        c.report_value(exc.code, record, ("costs", name, bound), f"costs.{name}.{bound}: {exc.message}")
        return
    figure = float(value.quantity.to(limit.units).magnitude)
    broken = figure > float(limit.magnitude) if bound == "at_most" else figure < float(limit.magnitude)
    if broken and not contested(record):
        relation = "exceeds" if bound == "at_most" else "falls below"
        c.report(
            "KB520",
            record,
            ("costs", name, bound),
            f"{label} = {value.shown()} {relation} its bound {format_quantity(limit)}: the measurement and the model "
            "disagree; keep both, mark the record contested and say why",
        )


def chosen(c: Evaluator, record: Record, name: str, field: str, preferred: Value | None) -> Value:
    """A field read through an input that chooses among records (`choose: [engines/a, engines/b]`): a
    condition whose choices are those records, each with the field's figure on it, or, read as
    default(name.field, fallback), the fallback's on a choice that has none (`preferred` is then None
    when the first choice has none)."""
    options = []
    for reference in chosen_references(record.mapping("inputs").get(name)) or ():
        target, _ = c.resolve(reference)
        if target is None:
            raise ValueFailed()  # the links stage reports a dangling reference
        value = c.field_or_cost(target, field)
        fallback = ABSENT_FALLBACK.get()
        if value is None and fallback is not None:  # default(engine.field, x): this choice takes x
            line, _ = record.position(("inputs", name))
            value = Value(fallback(), record.key, f"{name}.{field}", record.path, line, "derived", 1.0, ())
        if value is None:
            raise AbsentValue(
                f"{name}.{field}", target.key, f"{target.key}, one of {name}'s choices, has no value for '{field}'"
            )
        options.append((f"{name} is {target.data.get('name') or target.key}", value))
    return chosen_value(f"{record.key}.inputs.{name}", options, preferred or options[0][1])
