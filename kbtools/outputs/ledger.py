"""The prediction ledger: every published run the corpus holds as a case, against what kb predicts for it.

A case is a record of a type with `x-kb-ledger` whose case block names a workload (check/compute/ledger.py
computes `ledger_predicted` and `ledger_error` for it). This module reads those values from the checked corpus,
pairs each hit with the recompute measured beside it, and words the table for `kb plan --ledger` and the
site's page: the signed error of every case, the median |error|, and whether kb's verdict (is the hit faster
than the recompute?) agrees with the one measured.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, replace
from typing import Any

from kbtools.check.compute.ledger import ERROR, PREDICTED, band_of
from kbtools.check.compute.values import Value, ratio_word
from kbtools.corpus import Corpus, Record
from kbtools.lang.units import format_quantity
from kbtools.outputs.cells import csv_text, terminal_text
from kbtools.outputs.report import counted


@dataclass(frozen=True)
class Case:
    record: Record
    workload: str
    figure: str
    tier: str | None
    measured: Value | None
    predicted: Value | None
    error: Value | None
    band: tuple[float, float] | None  # where its signed error is expected to stay; None: nowhere said
    publisher: str
    sources: tuple[str, ...]  # the run's (its measured value's)
    workload_sources: tuple[str, ...]  # the prediction's (its workload's)
    recompute: str | None = None  # a hit case's recompute case, as the block names it
    measured_ratio: float | None = None  # a hit case's measured hit ÷ its recompute's, where both are measured
    predicted_ratio: float | None = None  # the same of kb's predictions

    @property
    def key(self) -> str:
        return self.record.key

    @property
    def is_hit(self) -> bool:
        """A hit reads its KV from a tier; a recompute names none."""
        return self.tier is not None

    @property
    def signed(self) -> float | None:
        return _number(self.error)

    @property
    def within_band(self) -> bool | None:
        signed = self.signed
        return None if signed is None or self.band is None else self.band[0] <= signed <= self.band[1]

    @property
    def verdicts_agree(self) -> bool | None:
        if self.measured_ratio is None or self.predicted_ratio is None:
            return None
        return ratio_word(self.measured_ratio) == ratio_word(self.predicted_ratio)


@dataclass(frozen=True)
class Ledger:
    cases: tuple[Case, ...]

    @property
    def predicted(self) -> list[Case]:
        return [c for c in self.cases if c.signed is not None]

    def median_abs_error(self, hits_only: bool = False) -> float | None:
        errors = [abs(c.signed) for c in self.predicted if c.signed is not None and (c.is_hit or not hits_only)]
        return statistics.median(errors) if errors else None

    @property
    def verdicts(self) -> tuple[int, int]:
        """(agreeing, judged): the hit cases whose recompute was measured too, and kb predicts both."""
        judged = [c.verdicts_agree for c in self.cases if c.verdicts_agree is not None]
        return sum(judged), len(judged)

    @property
    def publishers(self) -> list[str]:
        return sorted({c.publisher for c in self.cases if c.publisher})


def ledger(corpus: Corpus) -> Ledger:
    """Every case of the corpus, in key order, with its recompute paired."""
    cases: dict[str, Case] = {}
    for record_type in corpus.registry.types.values():
        spec = record_type.ledger
        if not spec:
            continue
        for key in sorted(k for k in corpus.records if k.startswith(f"{record_type.dir}/")):
            record = corpus.records[key]
            block = record.data.get(spec["case"])
            if isinstance(block, dict):
                cases[key] = _case(corpus, record, block, spec)
    paired = []
    for case in cases.values():
        other = _recompute_of(corpus, case, cases)
        if other is not None:
            case = replace(
                case,
                measured_ratio=_ratio(case.measured, other.measured),
                predicted_ratio=_ratio(case.predicted, other.predicted),
            )
        paired.append(case)
    return Ledger(tuple(paired))


def _case(corpus: Corpus, record: Record, block: dict[str, Any], spec: dict[str, Any]) -> Case:
    values = corpus.values(record.key)
    measured = values.fields.get(spec["measured"])
    workload, _ = corpus.index.resolve(str(block.get("workload", "")))
    tier, _ = corpus.index.resolve(str(block["tier"])) if isinstance(block.get("tier"), str) else (None, [])
    sources = tuple(measured.sources) if measured is not None else tuple(record.data.get("sources") or ())
    return Case(
        record=record,
        workload=workload.key if workload is not None else str(block.get("workload")),
        figure=str(block.get("figure")),
        tier=tier.key if tier is not None else None,
        measured=measured,
        predicted=values.costs.get(PREDICTED),
        error=values.costs.get(ERROR),
        band=band_of(block, spec),
        publisher=_publisher(corpus, sources),
        sources=sources,
        workload_sources=tuple(str(s) for s in (workload.data.get("sources") or ())) if workload is not None else (),
        recompute=block["recompute"] if isinstance(block.get("recompute"), str) else None,
    )


def _recompute_of(corpus: Corpus, case: Case, cases: dict[str, Case]) -> Case | None:
    if not case.is_hit or case.recompute is None:
        return None
    target, _ = corpus.index.resolve(case.recompute)
    return cases.get(target.key) if target is not None else None


def _publisher(corpus: Corpus, sources: tuple[str, ...]) -> str:
    """Who published the run: the first of its sources that names a publisher."""
    for name in sources:
        source, _ = corpus.index.resolve(name)
        publisher = source.data.get("publisher") if source is not None else None
        if isinstance(publisher, str) and publisher.strip():
            return publisher.strip()
    return ""


def _number(value: Value | None) -> float | None:
    return float(value.quantity.to("dimensionless").magnitude) if value is not None else None


def _ratio(a: Value | None, b: Value | None) -> float | None:
    if a is None or b is None:
        return None
    return float((a.quantity / b.quantity).to("dimensionless").magnitude)


# ---------------------------------------------------------------- the three forms


def _percent(x: float | None) -> str:
    return "" if x is None else f"{x:+.0%}"


def _range(value: Value | None) -> tuple[float, float] | None:
    """The signed error's range over the conditions the prediction rests on, where it has one."""
    spread = value.spread if value is not None else None
    if spread is None:
        return None
    return float(spread[0].to("dimensionless").magnitude), float(spread[1].to("dimensionless").magnitude)


def verdict_word(ratio: float | None) -> str:
    """A hit ÷ its recompute as kb words a verdict ('hit faster', 'hit as fast', 'hit slower'); '' without one."""
    return "" if ratio is None else f"hit {ratio_word(ratio)}"


def _in_measured_unit(case: Case) -> tuple[str, float | None, float | None]:
    """The measured figure's unit, and both figures as numbers in it (for JSON and CSV readers)."""
    if case.measured is None:
        return "", None, None
    unit = case.measured.quantity.units
    predicted = float(case.predicted.quantity.to(unit).magnitude) if case.predicted is not None else None
    return f"{unit:~P}", float(case.measured.quantity.magnitude), predicted


def rows(book: Ledger) -> list[dict[str, Any]]:
    out = []
    for case in book.cases:
        spread = _range(case.error)
        unit, measured_value, predicted_value = _in_measured_unit(case)
        out.append(
            {
                "case": case.key,
                "publisher": case.publisher,
                "workload": case.workload,
                "figure": case.figure,
                "tier": case.tier or "",
                "measured": format_quantity(case.measured.quantity) if case.measured else "",
                "predicted": format_quantity(case.predicted.quantity) if case.predicted else "",
                "unit": unit,
                "measured_value": measured_value,
                "predicted_value": predicted_value,
                "error": case.signed,
                "error_low": spread[0] if spread else case.signed,
                "error_high": spread[1] if spread else case.signed,
                "band_low": case.band[0] if case.band else None,
                "band_high": case.band[1] if case.band else None,
                "within_band": case.within_band,
                "measured_verdict": verdict_word(case.measured_ratio),
                "predicted_verdict": verdict_word(case.predicted_ratio),
                "verdicts_agree": case.verdicts_agree,
                "sources": list(case.sources),
                "workload_sources": list(case.workload_sources),
            }
        )
    return out


def summary(book: Ledger) -> dict[str, Any]:
    agree, judged = book.verdicts
    return {
        "cases": len(book.cases),
        "predicted": len(book.predicted),
        "publishers": len(book.publishers),
        "median_abs_error": book.median_abs_error(),
        "median_abs_error_hits": book.median_abs_error(hits_only=True),
        "verdicts_agree": agree,
        "verdicts_judged": judged,
    }


def as_json(book: Ledger) -> str:
    return json.dumps({"summary": summary(book), "cases": rows(book)}, indent=2, ensure_ascii=False) + "\n"


def as_csv(book: Ledger) -> str:
    table = rows(book)
    flat = [
        {**row, "sources": " ".join(row["sources"]), "workload_sources": " ".join(row["workload_sources"])}
        for row in table
    ]
    return csv_text(list(table[0]) if table else ["case"], flat)


def as_text(book: Ledger) -> str:
    if not book.cases:
        return "kb plan --ledger: no case in this knowledge base (a measurement with a ledger block)\n"
    lines = ["the prediction ledger: kb plan's figure for each published run, against the run", ""]
    width = max(len(c.key) for c in book.cases)
    for case in book.cases:
        spread = _range(case.error)
        shown = _percent(case.signed) if case.signed is not None else "no prediction"
        if spread and (spread[0] != spread[1]):
            shown += f" ({_percent(spread[0])} to {_percent(spread[1])})"
        flag = "" if case.within_band in (True, None) else "  outside its band"
        verdict = ""
        if case.verdicts_agree is not None:
            verdict = (
                f"  verdict {'agrees' if case.verdicts_agree else 'DISAGREES'} ({verdict_word(case.measured_ratio)})"
            )
        measured = format_quantity(case.measured.quantity) if case.measured else "?"
        predicted = format_quantity(case.predicted.quantity) if case.predicted else "?"
        where = case.figure + (f" from {case.tier}" if case.tier else "")
        lines.append(
            terminal_text(
                f"{case.key:<{width}}  {where}: measured {measured}, predicted {predicted}, error {shown}{flag}{verdict}"
            )
        )
    facts = summary(book)
    agree, judged = book.verdicts
    median = facts["median_abs_error"]
    hits = facts["median_abs_error_hits"]
    lines += [
        "",
        f"{counted(facts['cases'], 'case')} from {counted(facts['publishers'], 'publisher')}, "
        f"{facts['predicted']} predicted; "
        f"median |error| {('%.0f%%' % (median * 100)) if median is not None else 'n/a'} "
        f"(hits: {('%.0f%%' % (hits * 100)) if hits is not None else 'n/a'}); "
        f"verdicts agree on {agree} of {judged}",
    ]
    return "\n".join(lines) + "\n"
