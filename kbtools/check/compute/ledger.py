"""Kind: a case of the prediction ledger, a published run set against what kb predicts for it.

A type with `x-kb-ledger` (the measurement's schema) says which field holds a case ({workload, figure, tier,
recompute, band, quote}), which field is the measured figure, and, per figure a case may name, the formula of
kb's prediction over the case's references: `workload.hit_ttft_overlapped`, read at the row of the case's
tier. So the model stays in the schema; this module only evaluates it, as a for_each row is evaluated:

- `ledger_predicted`: the prediction, with the range its inputs span (nominal to measured rates);
- `ledger_error`: (predicted - measured) / measured, signed, over the same range.

A case whose error at the nominal end is outside its band (its own, or the type's) is KB621, which names the
run's sources and the workload behind the prediction: a change to a formula or a record shows on every case.
A case kb cannot predict (the workload gives no figure for that tier) is KB621 too, saying what is missing:
the record and field the prediction reads and could not, which kb refused (a unit error: the finding that says
so is its cause, and kbtools.outputs.report lists this one under it) or which that record leaves out.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kbtools.check.compute.costs import cost_lookup
from kbtools.check.compute.derivations import call_lookup
from kbtools.check.compute.flow import FAILED, QUERY, RAW, ValueFailed
from kbtools.check.compute.parameters import param_lookup
from kbtools.check.compute.provenance import derived_value
from kbtools.corpus import Record
from kbtools.diagnostics import WHICH_KB_REFUSED
from kbtools.lang.formula import Formula, FormulaError, MissingName, evaluate, parse_formula
from kbtools.lang.units import format_quantity

if TYPE_CHECKING:
    from kbtools.check.compute.evaluation import Evaluator
    from kbtools.check.compute.values import Value

PREDICTED, ERROR = "ledger_predicted", "ledger_error"
NAMES = (PREDICTED, ERROR)  # the costs a case has beside its own, which prose and other records may quote
CODE = "KB621"


def ledger_values(c: Evaluator, record: Record, spec: dict[str, Any], report: bool = True) -> dict[str, Value]:
    """The case's prediction and its signed error ({} for a record that is no case, or that kb cannot predict).
    The record's own evaluation reports KB621 (`report`); another record quoting its figures only reads them."""
    case = record.data.get(spec.get("case", ""))
    measured_name = spec.get("measured", "")
    if not isinstance(case, dict) or not isinstance(measured_name, str):
        return {}
    where = (spec["case"],)
    formula_text = (spec.get("predicted") or {}).get(case.get("figure"))
    workload, _ = c.resolve(case["workload"]) if isinstance(case.get("workload"), str) else (None, [])
    tier, _ = c.resolve(case["tier"]) if isinstance(case.get("tier"), str) else (None, [])
    if workload is None or not isinstance(formula_text, str) or (isinstance(case.get("tier"), str) and tier is None):
        return {}  # a dangling reference is the links stage's finding, a figure outside the enum the schema's
    measured = c.field(record, measured_name)
    if measured is None:
        return {}
    bindings = {"workload": workload, **({"tier": tier} if tier is not None else {})}
    row = tier.key if tier is not None else None
    try:
        predicted = _evaluated(c, record, PREDICTED, formula_text, bindings, row, where, measured.unit)
        error = _evaluated(
            c, record, ERROR, f"(({formula_text}) - {measured_name}) / {measured_name}", bindings, row, where, "1"
        )
    except _Unpredicted as missing:
        if not report:
            return {}
        c.report(
            CODE,
            record,
            where,
            f"kb cannot predict this run: {formula_text}"
            + (f" at {tier.key}" if tier is not None else "")
            + f", of {workload.key}, {missing}",
        )
        return {}
    if report:
        _judge_band(c, record, case, spec, where, predicted, measured, error, workload, tier)
    return {PREDICTED: predicted, ERROR: error}


def band_of(case: dict[str, Any], spec: dict[str, Any]) -> tuple[float, float] | None:
    """Where a case's signed error is expected to stay, (low, high): its own band (±x, or [low, high]), else its
    type's x-kb-ledger band; None when neither gives one."""
    band = case.get("band", spec.get("band"))
    if isinstance(band, bool) or band is None:
        return None
    if isinstance(band, int | float):
        return -float(band), float(band)
    return float(band[0]), float(band[1])


class _Unpredicted(Exception):
    """The workload gives no figure for the case: the reason, as kb would say it."""


def _evaluated(
    c: Evaluator,
    record: Record,
    name: str,
    text: str,
    bindings: dict[str, Record],
    row: str | None,
    where: tuple[str, ...],
    unit: str | None,
) -> Value:
    def compute(record: Record, _: str) -> Value:
        formula = parse_formula(text)
        used: dict[str, Value] = {}
        quantity = evaluate(
            formula,
            cost_lookup(c, record, name, bindings, row, used),
            param_lookup(c, record, bindings, used),
            call_lookup(c, record, bindings, used),
        )
        return derived_value(
            record, where, name, quantity, formula, used, unit, lambda again: call_lookup(c, record, bindings, again)
        )

    try:
        return c.memoised(record, f"costs.{name}", compute)
    except (MissingName, FormulaError) as exc:
        raise _Unpredicted(f"fails: {exc.message}") from None
    except ValueFailed:
        raise _Unpredicted(f"has no value: it reads {_unread(c, (record.key, f'costs.{name}'))}") from None


# KB621's words for a figure the prediction reads and kb refused: kbtools.outputs.report reads them (`reads
# dir/id.FIELD, which kb refused` at the end of the message) to list the finding under that refusal
LEFT_OUT = "which it leaves out (kb plan names it under that workload's figures)"  # the record read

Key = tuple[str, str]  # (record key, value name) as the evaluator memoises a value: a field, or costs.NAME


def _unread(c: Evaluator, failed: Key) -> str:
    """What a prediction that failed reads and could not, as KB621 says it: 'dir/id.field, which kb refused'
    (a field the record writes, whose own finding says why), or 'dir/id.field, which it leaves out' (what a
    figure of the workload, or of a record it names, reads and that record does not write). Found among what
    the prediction read this run, transitively (the evaluator's memo and value_reads): the root of a failure
    is a value that failed although nothing it read failed."""
    memo, reads = c.memo, c.value_reads

    def read(by: Key) -> list[Key]:
        return sorted(k for k in reads.get(by, ()) if k[0] != QUERY and not k[1].startswith(RAW) and k in memo)

    roots = [k for k in read(failed) if memo[k] is FAILED and not any(memo[r] is FAILED for r in read(k))]
    refused = [k for k in roots if not k[1].startswith("costs.")]
    if refused:
        return f"{_dotted(refused[0])}, {WHICH_KB_REFUSED}"
    for root in roots:  # a figure that failed with nothing it read failing: it reads a field with no value
        absent = _absent(c, root, read, memo)
        if absent is not None:
            return f"{_dotted(absent)}, {LEFT_OUT}"
    return f"a field that the workload, or a record it names, {LEFT_OUT.removeprefix('which it ')}"


def _absent(c: Evaluator, figure: Key, read: Callable[[Key], list[Key]], memo: dict[Key, Any]) -> Key | None:
    """The field a failed figure read and found no value for: one with no value that the figure's formula
    does not read through default() (which stands in for a missing one), read by the figure itself rather than
    through another value it read (a derived field with no value, not the inputs it was not derived from)."""
    record = c.corpus.records.get(figure[0])
    spec = record.costs.get(figure[1].removeprefix("costs.")) if record is not None else None
    text = spec.get("formula") if isinstance(spec, dict) else None
    try:
        defaulted = _defaulted(parse_formula(text)) if isinstance(text, str) else set()
    except FormulaError:
        defaulted = set()
    empty = [k for k in read(figure) if memo[k] is None and not k[1].startswith("costs.") and k[1] not in defaulted]
    through = {r for k in read(figure) for r in read(k)}
    return next((k for k in empty if k not in through), empty[0] if empty else None)


def _defaulted(formula: Formula) -> set[str]:
    """The fields a formula reads as default(x, fallback)'s x (a name, or record.name's name)."""
    out = set()
    for node in ast.walk(formula.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "default" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Attribute):
                out.add(first.attr)
            elif isinstance(first, ast.Name):
                out.add(first.id)
    return out


def _dotted(key: Key) -> str:
    return f"{key[0]}.{key[1]}"


def _judge_band(
    c: Evaluator,
    record: Record,
    case: dict[str, Any],
    spec: dict[str, Any],
    where: tuple[str, ...],
    predicted: Value,
    measured: Value,
    error: Value,
    workload: Record,
    tier: Record | None,
) -> None:
    band = band_of(case, spec)
    if band is None:
        return
    low, high = band
    signed = float(error.quantity.to("dimensionless").magnitude)
    if low <= signed <= high:
        return
    figure = f"{case.get('figure')}" + (f" from {tier.key}" if tier is not None else "")
    sources = ", ".join(measured.sources) or "none named"
    theirs = ", ".join(str(s) for s in workload.data.get("sources") or []) or "none named"
    c.report(
        CODE,
        record,
        where + (("band",) if "band" in case else ()),
        f"kb predicts {format_quantity(predicted.quantity)} for this run ({workload.key}, {figure}), measured "
        f"{format_quantity(measured.quantity)}: off by {signed:+.0%}, outside the band of "
        f"{_band_text(low, high)} (the run's sources: {sources}; the prediction's workload cites: {theirs})",
    )


def _band_text(low: float, high: float) -> str:
    return f"±{high:.0%}" if low == -high else f"{low:+.0%} to {high:+.0%}"
