"""Inline values: each {{ expression | unit }} in a body computed in the record's scope (KB509, KB512)."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from kbtools.check.compute import costs, derivations, parameters
from kbtools.check.compute.flow import Cycle, ValueFailed
from kbtools.check.compute.provenance import derived_value
from kbtools.check.compute.values import (
    RANGE,
    VERDICT,
    InlineValue,
    Value,
    verdict,
)
from kbtools.corpus import Record
from kbtools.diagnostics import Diagnostic
from kbtools.lang.formula import FormulaError, MissingName, evaluate, in_unit, parse_formula
from kbtools.lang.markdown import find_inline_values
from kbtools.lang.units import (
    QuantityError,
    check_dimension,
    parse_unit,
)

if TYPE_CHECKING:
    from kbtools.check.compute.evaluation import Evaluator


_ROW = re.compile(
    r"^(?:([a-z0-9][a-z0-9_-]*/[a-z0-9]+(?:-[a-z0-9]+)*)\.)?([a-z_][a-z0-9_]*)\[\s*([a-z0-9][a-z0-9_-]*/[a-z0-9-]+|[a-z0-9-]+)\s*\]$"
)


_QUALIFIED_FIELD = re.compile(r"\b([a-z0-9][a-z0-9_-]*/[a-z0-9]+(?:-[a-z0-9]+)*)\.([a-z_][a-z0-9_]*)")


def inline_values(c: Evaluator, record: Record) -> list[InlineValue]:
    out = []
    for found in find_inline_values(record.body):
        line = record.body_line + found.line
        expression, _, unit_text = found.content.partition("|")
        expression, unit = expression.strip(), unit_text.strip() or None
        value, rendered = None, None
        try:
            value = inline_value(c, record, expression)
            if value.quantity is None:
                raise FormulaError("KB509", f"'{expression}' is a table; quote one row or min()/max()")
            if unit == VERDICT:
                rendered = verdict(value)
            elif unit is not None and unit.split()[0] == RANGE:  # '| range', or '| range GB' in a unit asked for
                shown_in = unit[len(RANGE) :].strip() or None
                if shown_in:
                    check_dimension(value.quantity, shown_in)
                    in_unit(value.quantity, parse_unit(shown_in))
                rendered = value.spread_shown(shown_in) or value.shown(shown_in)
            else:
                if unit:
                    check_dimension(value.quantity, unit)
                    in_unit(value.quantity, parse_unit(unit))  # KB507 when it overflows in the unit asked for
                rendered = value.shown(unit)
        except (FormulaError, QuantityError) as exc:
            code = exc.code if exc.code == "KB512" else "KB509"
            c.diagnostics.append(
                Diagnostic.make(
                    code,
                    record.path,
                    line,
                    found.column,
                    f"inline value {{{{ {found.content.strip()} }}}}: {exc.message}",
                )
            )
        except (ValueFailed, Cycle):
            pass
        out.append(InlineValue(line, found.column, found.content, value, rendered))
    return out


def inline_value(c: Evaluator, record: Record, expression: str) -> Value:
    row = _ROW.match(expression)
    if row:  # one row of a table: cost[dir/id], or another record's: dir/id.cost[dir/id]
        owner: Record | None = record
        if row.group(1):
            owner, _ = c.resolve(row.group(1))
        if owner is None:
            raise FormulaError("KB509", f"no record '{row.group(1)}'")
        table = c.field_or_cost(owner, row.group(2))
        target, _ = c.resolve(row.group(3))
        rows = dict(table.rows or ()) if table is not None else {}
        if target is None or target.key not in rows:
            raise FormulaError(
                "KB509",
                f"'{row.group(2)}' has no row for '{row.group(3)}'" + (f" (rows: {', '.join(rows)})" if rows else ""),
            )
        return rows[target.key]
    qualified = _QUALIFIED_FIELD.fullmatch(expression)
    if qualified:  # dir/id.field alone: that record's own value, with its own provenance
        target, _ = c.resolve(qualified.group(1))
        if target is None:
            raise FormulaError("KB509", f"no record '{qualified.group(1)}'")
        value = c.field_or_cost(target, qualified.group(2))
        if value is None:
            raise FormulaError("KB509", f"{target.key} has no value for '{qualified.group(2)}'")
        return value
    # dir/id.field inside arithmetic: each qualified record becomes a bound name
    bindings: dict[str, Record] = {}

    def bind(match: re.Match) -> str:
        target, _ = c.resolve(match.group(1))
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
            costs.cost_lookup(c, record, "", bindings, None, used),
            parameters.param_lookup(c, record, bindings, used),
            derivations.call_lookup(c, record, bindings, used),
        )
    except MissingName as exc:
        raise FormulaError("KB509", exc.message) from None
    if len(used) == 1 and isinstance(formula.tree, (ast.Name, ast.Attribute)):
        return next(iter(used.values()))
    return derived_value(record, (), expression, quantity, formula, used, None)
