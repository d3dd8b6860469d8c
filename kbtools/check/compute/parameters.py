"""Hardware parameters: param() in formulas, the carried_by check (KB510) and the tables a record's
hardware_parameters rows name (KB511). The type that plays the 'parameter' role has them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbtools.check.compute.flow import Cycle, ValueFailed
from kbtools.check.compute.values import (
    Value,
)
from kbtools.corpus import Record
from kbtools.diagnostics import REFUSED_OR_DERIVED
from kbtools.lang.formula import FormulaError, MissingName
from kbtools.lang.units import (
    QuantityError,
    parse_unit,
)

if TYPE_CHECKING:
    from kbtools.check.compute.evaluation import Evaluator


def param_lookup(c: Evaluator, record: Record, bindings: dict[str, Record], used: dict[str, Value]):
    """param(x, 'hardware-parameter-id'): the field that carries that parameter on x's type."""

    def lookup(var: str, parameter_id: str) -> Any:
        target = c.referenced(record, var, bindings)
        if target is None:
            raise MissingName(var, f"param(): '{var}' is not a record reference")
        parameter, _ = c.resolve(parameter_id)
        if parameter is None or not c.corpus.registry.has_role(parameter.type, "parameter"):
            raise FormulaError("KB502", f"param(): no hardware parameter '{parameter_id}'")
        carried = c.peek(parameter, "carried_by") or {}
        field_name = carried.get(target.type) if isinstance(carried, dict) else None
        if field_name is None:
            raise MissingName(var, f"param(): {parameter_id} is not carried by type '{target.type}' ({target.key})")
        value = c.field(target, field_name)
        if value is None:
            raise MissingName(var, f"param(): {target.key} has no {field_name}")
        used[f"param({var}, '{parameter_id}')"] = value  # keyed as the call reads, so it is shown in its place
        return value.quantity

    return lookup


def check_carried_by(c: Evaluator, record: Record) -> None:
    carried = record.data.get("carried_by")
    dimension = record.data.get("dimension")
    if (
        not c.corpus.registry.has_role(record.type, "parameter")
        or not isinstance(carried, dict)
        or not isinstance(dimension, str)
    ):
        return
    try:
        unit = parse_unit(dimension)
    except QuantityError as exc:
        c.report(exc.code, record, ("dimension",), f"dimension: {exc.message}")
        return
    for type_name, field_name in carried.items():
        record_type = c.types.get(type_name)
        plan = record_type.plan.properties.get(field_name) if record_type else None
        if record_type is None:
            c.report("KB510", record, ("carried_by", type_name), f"carried_by: no record type '{type_name}'")
        elif plan is None or plan.quantity in (None, "*"):
            c.report(
                "KB510",
                record,
                ("carried_by", type_name),
                f"carried_by.{type_name}: '{field_name}' is not a quantity field of {type_name}",
            )
        elif not parse_unit(plan.quantity).dimensionality == unit.dimensionality:
            c.report(
                "KB510",
                record,
                ("carried_by", type_name),
                f"carried_by.{type_name}: {field_name} is in {plan.quantity}, not {dimension}",
            )


def hardware_tables(c: Evaluator, record: Record) -> dict[str, dict[str, Value | None]]:
    rows = record.data.get("hardware_parameters")
    tables: dict[str, dict[str, Value | None]] = {}
    if not isinstance(rows, list):
        return tables
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("parameter"), str):
            continue
        parameter, _ = c.resolve(row["parameter"])
        if parameter is None or not c.corpus.registry.has_role(parameter.type, "parameter"):
            continue
        carried = c.peek(parameter, "carried_by")
        carried = carried if isinstance(carried, dict) else {}
        table: dict[str, Value | None] = {}
        for position, item in enumerate(row.get("values_for") or []):
            target, _ = c.resolve(item) if isinstance(item, str) else (None, [])
            if target is None:
                continue
            field_name = carried.get(target.type)
            value, refused = None, False
            try:
                value = c.field(target, field_name) if field_name else None
            except (ValueFailed, Cycle):  # kb refused the field, or a figure it is derived from, saying why there
                value, refused = None, True
            if value is None:
                # a refused field's finding follows from the refusal (kbtools.outputs.report groups it there)
                what = (
                    f"no {field_name}" + (f" ({REFUSED_OR_DERIVED})" if refused else "")
                    if field_name
                    else f"a {target.type}, which {parameter.id} is not carried by"
                )
                c.report(
                    "KB511",
                    record,
                    ("hardware_parameters", index, "values_for", position),
                    f"hardware_parameters[{index}]: {target.key} has {what}",
                )
            table[target.key] = value
        tables[parameter.id] = table
    return tables
