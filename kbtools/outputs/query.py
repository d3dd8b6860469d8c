"""`kb query`: filter the checked corpus by type, status, fields with units and links.

Filters (all must hold):
    type:model  status:verified  vendor:NVIDIA     equality (membership for list fields)
    memory_bandwidth>=4 TB/s  kv_bytes_per_token<100 KB/token   unit-aware comparison (= != < <= > >=)
    hit_time.high<1 s  ridge_point.low>=200 FLOP/B     one end of a figure's range over its conditions
    links-to:engines/lmcache                       the record links to that record (any field or the body)
    updated:2026-11-29  published:2024  published<2025-06   a date, or the period a shorter date names

A per-row figure (a cost computed `for_each` entry of a table, as a workload's hit_time is for each storage
tier) is filtered row by row: a record matches when one of its rows meets every filter on that figure, and
the figure's column shows the rows that met them ("storage-tiers/gpu-hbm-h100: 0.8013 ms; ..."), every row
when no filter names it. JSON gives the rows as {row: number} with the unit beside it; CSV as that JSON.

Columns: key, then name, then the --fields in the order asked, then any filtered field not among them.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kbtools.corpus import Corpus, Record
from kbtools.diagnostics import UsageError
from kbtools.index import CorpusIndex
from kbtools.lang.units import NUMBER, QuantityError, format_quantity, parse_quantity_text, parse_unit
from kbtools.outputs.cells import csv_text, terminal_text
from kbtools.outputs.report import counted

FILTER = re.compile(
    r"^(?P<field>[a-z_][a-z0-9_-]*)(?:\.(?P<end>low|high|preferred))?\s*(?P<op>>=|<=|!=|=|>|<|:)\s*(?P<value>.+)$"
)
DATE = re.compile(r"^\d{4}(?:-\d{2}(?:-\d{2})?)?$")  # a date as records write one: 2026, 2026-11 or 2026-11-29
ENDS = ("low", "high", "preferred")  # field.low>=X: a figure's range over the conditions it rests on, at one end


class QueryError(UsageError):
    pass


@dataclass(frozen=True)
class Filter:
    field: str
    op: str
    value: str
    quantity: Any = None  # the value read as 'VALUE UNIT' once, when it is one


def parse_filters(corpus: Corpus, texts: list[str]) -> list[Filter]:
    known = set(corpus.registry.envelope_fields) | {"links-to"}
    for record_type in corpus.registry.types.values():
        known |= set(record_type.plan.properties) | set(record_type.derive)
    known |= {name for record in corpus.records.values() for name in record.costs}
    filters = []
    for text in texts:
        match = FILTER.match(text.strip())
        if not match:
            raise QueryError(f"cannot read filter '{text}': write field:value, field>=VALUE UNIT or links-to:dir/id")
        if match["field"] not in known:
            raise QueryError(f"unknown field '{match['field']}' in '{text}'{_did_you_mean(match['field'], known)}")
        value = match["value"].strip()
        if match["op"] in (":", "=", "!=") and not match["end"]:
            allowed, listed = _vocabulary(corpus, match["field"])
            if allowed and value not in allowed:
                # a value no record can have answers nothing: a typo, said as one, never an empty result
                raise QueryError(
                    f"{match['field']} is never '{value}'{_did_you_mean(value, allowed)}; "
                    f"it is one of: {', '.join(sorted(allowed))}"
                )
            if listed and value not in listed and _did_you_mean(value, listed):
                # an extensible vocabulary takes a user's own word, but one close to a listed or used word that no
                # record has is a typo, said as one
                raise QueryError(
                    f"no record has {match['field']} '{value}'{_did_you_mean(value, listed)}; an extensible "
                    f"vocabulary takes new words, and this one is close to one kb knows"
                )
        number, quantity = (None if DATE.match(value) else NUMBER.match(value)), None
        if number and number.group(2):  # 'VALUE UNIT': read now, so a bad unit is an error even if no record has it
            try:
                quantity = parse_quantity_text(value, None)
            except QuantityError as exc:
                raise QueryError(f"{text}: {exc.message}") from None
        field = match["field"] + (f".{match['end']}" if match["end"] else "")
        filters.append(Filter(field, match["op"], value, quantity))
    return filters


def _did_you_mean(word: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def _vocabulary(corpus: Corpus, field: str) -> tuple[set[str], set[str]]:
    """What the schemas say a field's values are, in one walk of them: (allowed, listed).
    allowed: the values it can take when every schema of it lists them (a type name for `type`, an enum's
    members over every type that has the field); empty when any value goes.
    listed: for a vocabulary a user may extend (an enum beside any other word, in an anyOf), the words the
    schemas list and the words records use; empty otherwise."""
    if field == "type":
        return set(corpus.registry.types), set()
    allowed: set[str] | None = set()
    listed: set[str] = set()
    for record_type in corpus.registry.types.values():
        for spec in _specs(record_type.inlined_schema, field):
            if isinstance(spec.get("enum"), list):
                if allowed is not None:
                    allowed |= {str(v) for v in spec["enum"]}
                continue
            allowed = None  # some type takes any value there
            for part in spec.get("anyOf", []) if isinstance(spec.get("anyOf"), list) else []:
                if isinstance(part, dict) and isinstance(part.get("enum"), list):
                    listed |= {str(v) for v in part["enum"]}
    if allowed:
        return allowed, set()
    if listed:
        listed |= {str(r.data[field]) for r in corpus.records.values() if isinstance(r.data.get(field), str)}
    return set(), listed


def _specs(schema: Any, field: str) -> Iterator[dict[str, Any]]:
    """The schema of `field` in each part of this schema that declares it (properties, under allOf/anyOf/oneOf)."""
    if isinstance(schema, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict) and isinstance(properties.get(field), dict):
            yield properties[field]
        for key in ("allOf", "anyOf", "oneOf"):
            for part in schema.get(key, []) if isinstance(schema.get(key), list) else []:
                yield from _specs(part, field)


@dataclass(frozen=True)
class Rows:
    """A per-row (for_each) figure in a column: (row, figure) for each row shown, a row named by the key of
    the record it is for."""

    items: tuple[tuple[str, Any], ...]

    def only(self, kept: set[str]) -> Rows:
        return Rows(tuple((row, figure) for row, figure in self.items if row in kept))

    def shown(self) -> str:
        return "; ".join(f"{row}: {format_quantity(figure)}" for row, figure in self.items)

    def machine(self) -> tuple[dict[str, float], str | None]:
        """{row: number} in one unit (the first row's), and that unit."""
        if not self.items:
            return {}, None
        unit = self.items[0][1].units
        return {row: float(figure.to(unit).magnitude) for row, figure in self.items}, f"{unit:~P}"


def _end(value: Any, end: str) -> Any:
    return value.low if end == "low" else value.high if end == "high" else value.quantity


def _value(corpus: Corpus, record: Record, column: str) -> Any:
    field, _, end = column.partition(".")
    value = corpus.values(record.key).value(field)
    if value is not None and value.quantity is not None:
        figure = _end(value, end)
        record_type = corpus.registry.types.get(record.type)
        unit = record_type.canonical_unit(field) if record_type else None
        if unit is not None:
            return figure.to(parse_unit(unit))  # one unit per column, whatever each record wrote
        return figure
    if value is not None and value.rows is not None:  # a per-row figure: each row's, at the end asked
        return Rows(tuple((row, _end(v, end)) for row, v in value.rows if v.quantity is not None))
    return None if end else record.data.get(field)


def _matches(corpus: Corpus, index: CorpusIndex[Record], record: Record, flt: Filter) -> bool | set[str]:
    """Whether the record meets the filter; for a per-row figure, the rows that meet it."""
    if flt.field == "links-to":
        target, _ = index.resolve(flt.value)
        return target is not None and any(s == record.key and t == target.key for s, t, _, _ in corpus.edges or ())
    actual = _value(corpus, record, flt.field)
    if isinstance(actual, Rows):
        return {row for row, figure in actual.items if _holds(figure, flt)}
    return _holds(actual, flt)


def _holds(actual: Any, flt: Filter) -> bool:
    if actual is None:
        return False
    left: Any  # numbers compare as numbers, anything else as its text (both sides alike)
    right: Any
    if hasattr(actual, "magnitude"):  # a quantity: compare with units
        try:
            wanted = flt.quantity if flt.quantity is not None else parse_quantity_text(flt.value, None)
        except QuantityError as exc:
            raise QueryError(f"{flt.field}{flt.op}{flt.value}: {exc.message}") from None
        if not actual.is_compatible_with(wanted):
            raise QueryError(f"{flt.field} is in {actual.units:~P}; cannot compare it with {flt.value}")
        left, right = float(actual.to(wanted.units).magnitude), float(wanted.magnitude)
    elif isinstance(actual, list):
        if flt.op not in (":", "=", "!="):
            raise QueryError(f"{flt.field} is a list: use {flt.field}:VALUE")
        found = flt.value in [str(v) for v in actual]
        return found if flt.op != "!=" else not found
    elif DATE.match(flt.value) and (
        isinstance(actual, dt.date) or (isinstance(actual, (int, str)) and DATE.match(str(actual)))
    ):
        return _in_period(actual.isoformat() if isinstance(actual, dt.date) else str(actual), flt.op, flt.value)
    elif isinstance(actual, (int, float)) and not isinstance(actual, bool) and flt.op not in (":",):
        try:
            left, right = float(actual), float(flt.value)
        except ValueError:
            raise QueryError(f"{flt.field} is a number; '{flt.value}' is not") from None
    else:
        left, right = str(actual), flt.value
    return {
        ":": left == right,
        "=": left == right,
        "!=": left != right,
        "<": left < right,
        "<=": left <= right,
        ">": left > right,
        ">=": left >= right,
    }[flt.op]


def _in_period(date: str, op: str, period: str) -> bool:
    """A date (ISO text, of any precision) against a period written as a date: `published:2024` holds for any
    day of 2024, `published>2024` for one after it, `published<2024-05` for one before May. ISO text orders
    as time does, and a date lies in a period when the period's text begins it."""
    within = date.startswith(period)
    before = date < period and not within
    return {
        ":": within,
        "=": within,
        "!=": not within,
        "<": before,
        "<=": before or within,
        ">": not before and not within,
        ">=": not before,
    }[op]


def _columns(filters: list[Filter], extra_fields: list[str]) -> list[str]:
    """key, then name (where --fields puts it, if it does), then --fields in the order asked, then each
    filtered field not among them: each column once."""
    filtered = [f.field for f in filters if f.field not in ("type", "links-to")]
    asked = [c for c in dict.fromkeys([*extra_fields, *filtered]) if c != "key"]
    return ["key"] + ([] if "name" in asked else ["name"]) + asked


def run_query(corpus: Corpus, texts: list[str], extra_fields: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    filters = parse_filters(corpus, texts)
    index = corpus.index
    columns = _columns(filters, extra_fields)
    rows = []
    for key, record in sorted(corpus.records.items()):
        kept: dict[str, set[str]] = {}  # a per-row figure -> the rows that met every filter on it so far
        for flt in filters:
            met = _matches(corpus, index, record, flt)
            if isinstance(met, set):  # one row must meet every filter on its figure, at whichever end
                figure = flt.field.partition(".")[0]
                met = kept[figure] = met & kept[figure] if figure in kept else met
            if not met:
                break
        else:
            row: dict[str, Any] = {"key": key}
            for column in columns[1:]:
                if column == "name":
                    row[column] = record.data.get("name", "")
                    continue
                value = _value(corpus, record, column)  # quantities stay quantities until rendered
                figure = column.partition(".")[0]
                row[column] = value.only(kept[figure]) if isinstance(value, Rows) and figure in kept else value
            rows.append(row)
    return columns, rows


def _machine(columns: list[str], rows: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """For JSON and CSV: each quantity as a plain number plus a `<column>_unit` column."""
    quantity_columns = {
        c for c in columns for row in rows if hasattr(row.get(c), "magnitude") or isinstance(row.get(c), Rows)
    }
    out_columns = [x for c in columns for x in ([c, f"{c}_unit"] if c in quantity_columns else [c])]
    out_rows = []
    for row in rows:
        new: dict[str, Any] = {}
        for column in columns:
            value = row.get(column)
            if isinstance(value, Rows):
                new[column], new[f"{column}_unit"] = value.machine()
            elif column in quantity_columns:
                known = value is not None and hasattr(value, "magnitude")
                new[column] = float(value.magnitude) if known else None  # type: ignore[union-attr]
                new[f"{column}_unit"] = f"{value.units:~P}" if known else None  # type: ignore[union-attr]
            else:
                new[column] = value
        out_rows.append(new)
    return out_columns, out_rows


def _shown(value: Any) -> Any:
    if isinstance(value, Rows):
        return value.shown() or None
    return format_quantity(value) if hasattr(value, "magnitude") else value


def format_rows(columns: list[str], rows: list[dict[str, Any]], fmt: str) -> str:
    if fmt in ("json", "csv"):
        columns, rows = _machine(columns, rows)
    else:
        rows = [{k: _shown(v) for k, v in row.items()} for row in rows]
    if fmt == "json":
        return json.dumps(rows, indent=2, ensure_ascii=False, default=str) + "\n"
    if fmt == "csv":
        # a record's name or field can start a spreadsheet formula: csv_text neutralises it
        return csv_text(
            columns, ({k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in row.items()} for row in rows)
        )
    # a record's name or field can hold an escape sequence: shown as text, never sent to the terminal raw
    texts = [[terminal_text(row[c]) if row.get(c) is not None else "" for c in columns] for row in rows]
    headers = [terminal_text(c) for c in columns]  # --fields is the user's, but one line all the same
    widths = [max([len(c)] + [len(t[i]) for t in texts]) for i, c in enumerate(headers)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(t, widths, strict=True)) for t in texts]
    lines.append(counted(len(rows), "record"))
    return "\n".join(lines) + "\n"
