"""A value's provenance: a figure as a record states it (its basis, confidence, source, competing values and
band, as the conditions every figure that reads it is computed under), or as a formula derives it (what it
was made of, the weakest basis among them, its range over the conditions they rest on). Pure functions of
their arguments: the evaluator and the kinds of value both make values with them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kbtools.check.compute.values import Recall, Value, choices, variants_of, weakest_basis
from kbtools.corpus import FieldPath, Record
from kbtools.lang.formula import Formula, in_unit
from kbtools.lang.units import Written, parse_unit


def default_basis(record: Record) -> str:
    basis = record.data.get("basis")
    return basis if isinstance(basis, str) else "unverified"


def confidence(record: Record) -> float:
    value = record.data.get("confidence")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.5


def record_sources(record: Record) -> tuple[str, ...]:
    sources = record.data.get("sources")
    return tuple(s for s in sources if isinstance(s, str)) if isinstance(sources, list) else ()


def stated_value(
    record: Record,
    path: FieldPath,
    name: str,
    written: Written,
    unit: str | None,
    competing: Iterable[Written] = (),
    alone: bool = False,
) -> Value:
    line, _ = record.position(path)
    competing = tuple(competing)
    alternatives = (
        () if alone else tuple(stated_value(record, path, name, other, unit, alone=True) for other in competing)
    )
    variants = () if alone else choices(record, name, written, list(competing), unit)
    return Value(
        written.quantity,
        record.key,
        name,
        record.path,
        line,
        written.basis or default_basis(record),
        confidence(record),
        (written.source,) if written.source else record_sources(record),
        unit=unit,
        vendor_claim=written.vendor_claim,
        note=written.note,
        alternatives=alternatives,
        rank=written.rank,
        variants=variants,
    )


def derived_value(
    record: Record,
    path: FieldPath,
    name: str,
    quantity: Any,
    formula: Formula,
    inputs: dict[str, Value],
    unit: str | None,
    recall: Recall | None = None,
) -> Value:
    line, _ = record.position(path)
    if unit is not None:
        quantity = in_unit(quantity, parse_unit(unit))  # FormulaError KB507 when it overflows there
    used = tuple(inputs.items())
    sources = tuple(dict.fromkeys(s for _, v in used for s in v.sources))
    trust = min((v.confidence for _, v in used), default=confidence(record))
    variants, bounds = variants_of(formula, used, quantity.units, recall)
    return Value(
        quantity,
        record.key,
        name,
        record.path,
        line,
        "derived",
        trust,
        sources,
        unit=unit,
        formula=formula,
        inputs=used,
        weakest=weakest_basis(used, "derived"),
        variants=variants,
        bounds=bounds,
    )
