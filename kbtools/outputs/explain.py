"""`kb explain`: how a value was obtained, from which records and sources, recursively."""

from __future__ import annotations

from kbtools.check.compute import Value, scenario_text, substituted
from kbtools.corpus import Corpus
from kbtools.diagnostics import UsageError
from kbtools.index import no_record
from kbtools.lang.units import format_quantity

MAX_DEPTH = 8


class ExplainError(UsageError):
    """A target kb cannot explain: no such record, or no such value, with what there is instead."""


def explain_target(corpus: Corpus, target: str) -> list[str]:
    """`DIR/ID` (every value of a record) or `DIR/ID.FIELD` (one value), as `kb explain` takes it;
    a path to the record's file works too."""
    ref, _, name = target.removeprefix(corpus.settings.records_dir + "/").removesuffix(".md").partition(".")
    record, candidates, close = corpus.index.named(ref)
    if record is None:
        raise ExplainError(no_record(ref, candidates, close))
    if not name:
        return explain_record(corpus, record.key)
    value = find_value(corpus, record.key, name)
    if value is None:
        known = corpus.values(record.key).names
        raise ExplainError(f"{record.key} has no value '{name}' (it has: {', '.join(known) or 'none'})")
    return explain_value(corpus, value, f"{record.key}.{name}")


def find_value(corpus: Corpus, key: str, name: str) -> Value | None:
    return corpus.values(key).value(name)


def explain_record(corpus: Corpus, key: str) -> list[str]:
    """One line per value of a record: its figure and how it is known."""
    values = corpus.values(key)
    lines = [f"{key} ({corpus.records[key].path})"]
    for group in (values.fields, values.costs):
        for name, value in group.items():
            how = f"= {value.formula.text if value.formula else value.name}" if value.computed else f"[{value.basis}]"
            if value.recomputed is not None:
                how += f"; recomputed {value.recomputed.shown()} = {value.recomputed.formula.text}"
            if value.spread_shown() is not None:
                how += f"; range {value.spread_shown()} over the conditions it rests on"
            lines.append(f"  {name} = {value.shown()}  {how}")
    return lines


def explain_value(corpus: Corpus, value: Value, label: str) -> list[str]:
    lines = [f"{label} = {value.shown()}"]
    lines.extend(_explain(corpus, value, "  ", 0, top=True))
    return lines


def _where(corpus: Corpus, value: Value) -> str:
    return f"{value.record} ({value.path}:{value.line})"


def _sources(value: Value) -> str:
    return ", ".join(value.sources) if value.sources else "none cited"


CASES_SHOWN = 16  # combinations listed under a figure; the range covers them all


def _cases(value: Value, indent: str) -> list[str]:
    """The range, and the figure under each combination of the conditions it rests on."""
    low, high = value.spread or (value.quantity, value.quantity)
    count = len(value.conditions())
    lines = [
        f"{indent}range: low {format_quantity(low, value.unit, 4)}, preferred {value.shown()}, "
        f"high {format_quantity(high, value.unit, 4)}, over {count} condition{'' if count == 1 else 's'}"
        + (" (an interval enclosure: too many combinations to take each)" if value.bounds is not None else "")
    ]
    for scenario, figure in value.variants[:CASES_SHOWN]:
        lines.append(f"{indent}  if {scenario_text(scenario)}: {format_quantity(figure, value.unit, 4)}")
    if len(value.variants) > CASES_SHOWN:
        lines.append(f"{indent}  … and {len(value.variants) - CASES_SHOWN} more combinations")
    return lines


def _explain(corpus: Corpus, value: Value, indent: str, depth: int, top: bool = False) -> list[str]:
    lines: list[str] = []
    if value.rows is not None:
        lines.append(f"{indent}for each row: {value.formula.text if value.formula else value.name}  [{value.unit}]")
        for row_key, row in value.rows:
            spread = (
                f"  (range {row.spread_shown()} over the conditions it rests on)"
                if row.spread_shown() is not None
                else ""
            )
            lines.append(f"{indent}  {row_key}: {row.shown()} = {substituted(row)}{spread}")
        return lines
    checked = value.recomputed
    if value.computed:
        lines.append(f"{indent}= {value.formula.text if value.formula else value.name}")
        lines.append(f"{indent}= {substituted(value)}")
        lines.append(f"{indent}≈ {value.shown()}")
        lines.append(
            f"{indent}basis: derived (weakest input basis: {value.input_basis}); confidence {value.confidence:g}; "
            f"at {_where(corpus, value)}"
        )
        lines.append(f"{indent}sources: {_sources(value)}")
        if value.spread is not None:
            lines.extend(_cases(value, indent))
        stated = _stated(corpus, value) if top else None
        if stated:
            lines.append(f"{indent}stated: {stated} (checked against the recomputed figure)")
        if depth >= MAX_DEPTH:
            return lines + [f"{indent}..."]
        lines.append(f"{indent}inputs:")
        for name, used in value.inputs:
            lines.append(f"{indent}  {name} = {used.shown()}  from {_where(corpus, used)}")
            lines.extend(_explain(corpus, used, indent + "    ", depth + 1))
        return lines
    claim = ", vendor claim" if value.vendor_claim else ""
    lines.append(
        f"{indent}stated in {_where(corpus, value)}; basis {value.basis}{claim}; confidence {value.confidence:g}; "
        f"sources: {_sources(value)}"
    )
    if value.note:
        lines.append(f"{indent}note: {value.note}")
    if value.spread is not None and not value.alternatives:  # a band, or a field read through a choice of records
        lines.extend(_cases(value, indent))
    if value.alternatives:
        if value.spread is not None:  # a stated value's variants are its values not deprecated
            lines.append(
                f"{indent}rank preferred (kb computes with it); range over the values not deprecated: {value.spread_shown()}"
            )
        for other in value.alternatives:
            lines.append(
                f"{indent}also, ranked {other.rank}: {other.shown(value.unit)} (basis {other.basis}; source {_sources(other)})"
                + (f"; note: {other.note}" if other.note else "")
            )
    if checked is not None and depth < MAX_DEPTH:
        lines.append(f"{indent}recomputed as {checked.shown()}:")
        lines.extend(_explain(corpus, checked, indent + "  ", depth + 1))
    return lines


def _stated(corpus: Corpus, value: Value) -> str | None:
    record = corpus.records.get(value.record)
    spec = record.costs.get(value.name) if record else None
    if isinstance(spec, dict) and "stated" in spec:
        stated = spec["stated"]
        return str(stated["value"] if isinstance(stated, dict) else stated)
    return None
