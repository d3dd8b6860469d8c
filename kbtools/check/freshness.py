"""Freshness: a record's KB620, and the one filter that decides which of its findings a run reports on the day it
runs (the stage that judges each record is kbtools.check.shelf).

A type's schema gives its time-bound figures a shelf life (`x-kb-shelf-life`: {field, days, reason}, or a
list of them with `when`, read by kbtools.registry). Each record whose date field is set gets one KB620 at
that date, carrying `due`: the date plus the shelf life. The stage reads no clock, so what it finds is a
function of the record's bytes and its schema alone, and the store (cache, scope, memo) keeps it like any
other finding, whatever the day.

What a run reports is decided at its very end by `reported`: a finding due after today is dropped, and the
age of each one kept is written into its message. Today is KB_TODAY (YYYY-MM-DD) when it is set, else the
UTC date; a KB_TODAY that is no date is KB121, and then no age is judged. The day never enters Settings or
a store's key: a key with the day in it would throw the store away every morning.

A date of month or year precision (`published: 2022-05`, `published: 2022`) is judged from its last day
(2022-05-31, 2022-12-31): the figure may be that recent, so it is never called stale before it could be, and the
message says which day it counted from.

It refuses to guess: a record without the date is not judged (no date is invented), and a record that
names the record replacing it in `superseded_by` (a reference the links stage checks) is history, kept on
purpose, and not judged either.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from kbtools.diagnostics import Diagnostic, clipped

if TYPE_CHECKING:
    from kbtools.corpus import Record
    from kbtools.registry import RecordType

SHELF_LIFE_CODE = "KB620"
TODAY_CODE = "KB121"
TODAY_VARIABLE = "KB_TODAY"
# the field a record names its replacement in: kb's own word, as `unknown` and `sources` are
SUPERSEDED_BY = "superseded_by"

_ISO_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
# a date of month or year precision (defs.schema.json#/$defs/date): judged from the month's or the year's last day
_ISO_MONTH = re.compile(r"^[0-9]{4}-[0-9]{2}$")
_ISO_YEAR = re.compile(r"^[0-9]{4}$")
# Where a stored message holds an age: the stage knows the date it counts from, only the filter knows today.
# The other words of the message come from the schema (a type's and a field's name, the reason) or are the
# record's date, so nothing a record says can take this shape.
_AGE = re.compile(r"\{age since ([0-9]{4}-[0-9]{2}-[0-9]{2})\}")


def past_shelf_life(record: Record, record_type: RecordType) -> Diagnostic | None:
    """The record's KB620, due on its date plus its shelf life; None when it has no shelf life, no date, or
    names its replacement."""
    # imported here, not at the top: the memo's answer imports this module for its filter, and must not pay
    # for the units and formula modules compute.values brings
    from kbtools.check.compute.values import matching

    if record.data.get(SUPERSEDED_BY):
        return None  # kept as history: what it says is the record it names
    spec = matching(record, list(record_type.shelf_life))
    if spec is None:
        return None
    field, days = spec["field"], spec["days"]
    written = record.data.get(field)
    dated = _last_day(written)
    if dated is None:
        return None  # not given, or no calendar date: the schema reports the second, and nothing is invented
    try:
        due = dated + timedelta(days=days)
    except OverflowError:  # past the last date Python holds: never due
        return None
    line, column = record.value_position((field,))
    reason = spec.get("reason")
    article = "an" if record_type.name[:1].lower() in "aeiou" else "a"
    remedy = "renew it from its source"
    if SUPERSEDED_BY in record_type.plan.properties:
        remedy += f", or name the record that replaces it in {SUPERSEDED_BY}"
    return Diagnostic.make(
        SHELF_LIFE_CODE,
        record.path,
        line,
        column,
        f"{field} {_as_judged(written, dated)} is {{age since {dated.isoformat()}}} old, past the {days:,}-day shelf life "
        f"of {article} {record_type.name}" + (f" ({reason})" if reason else "") + f"; {remedy}",
        due=due.isoformat(),
    )


def _date(value: Any) -> date | None:
    """A YYYY-MM-DD text as a date (frontmatter dates stay text); None for anything else."""
    if not isinstance(value, str) or not _ISO_DATE.match(value):
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def _last_day(value: Any) -> date | None:
    """The day a record's date is judged from: the day itself (YYYY-MM-DD), or the last day of a month (YYYY-MM)
    or of a year (YYYY, or the YAML number 2022), so a figure is never taken older than its source says; None for
    anything else (the schema reports it, and no day is invented)."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 9999:
        return date(value, 12, 31)
    if not isinstance(value, str):
        return None
    if _ISO_YEAR.fullmatch(value):
        return date(int(value), 12, 31) if int(value) >= 1 else None
    if _ISO_MONTH.fullmatch(value):
        year, month = int(value[:4]), int(value[5:])
        if year < 1 or not 1 <= month <= 12:
            return None
        return date(year, 12, 31) if month == 12 else date(year, month + 1, 1) - timedelta(days=1)
    return _date(value)


def _as_judged(written: Any, dated: date) -> str:
    """The date as the record writes it, and for a month or a year the day it is judged from."""
    if isinstance(written, str) and written == dated.isoformat():
        return written
    precision = "a month" if isinstance(written, str) and _ISO_MONTH.fullmatch(written) else "a year"
    return f"{written} ({precision}, judged from its last day, {dated.isoformat()})"


def today() -> date | Diagnostic:
    """The day findings are judged on: KB_TODAY, else the UTC date; a KB121 when KB_TODAY is no date."""
    raw = os.environ.get(TODAY_VARIABLE, "")
    if not raw:  # unset, or cleared by `KB_TODAY= kb check`
        return datetime.now(UTC).date()
    parsed = _date(raw)
    if parsed is not None:
        return parsed
    return Diagnostic.make(
        TODAY_CODE,
        TODAY_VARIABLE,
        1,
        1,
        f"{TODAY_VARIABLE}={clipped(raw)!r} is not a date (YYYY-MM-DD): no figure's age was judged",
        hint=f"set it to a date such as {TODAY_VARIABLE}=2026-12-31, or unset it to judge ages against today's "
        "UTC date",
    )


def reported(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The one filter: the findings a run reports today, in their order. A finding with a due date after
    today is dropped, and each one kept has its age written in. A bad KB_TODAY drops every dated finding
    (no age can be judged) and adds its KB121."""
    when = today()
    out: list[Diagnostic] = []
    for d in diagnostics:
        if d.due is None:
            out.append(d)
            continue
        due = _date(d.due)
        if isinstance(when, date) and due is not None and due <= when:
            out.append(replace(d, message=_AGE.sub(lambda m: _age(m[1], when), d.message)))
    if isinstance(when, Diagnostic):
        out.append(when)
    return out


def as_stored(reported: list[Diagnostic], dated: tuple[Diagnostic, ...]) -> list[Diagnostic]:
    """What the memo keeps of a run's answer: the findings the filter did not make or word (no due date, no
    KB121), and every dated finding the stages made, unworded and due or not (Corpus.dated)."""
    return [d for d in reported if d.due is None and d.code != TODAY_CODE] + list(dated)


def _age(since: str, when: date) -> str:
    start = _date(since)
    if start is None:  # the stage writes only real dates here; anything else is left as it is
        return f"{{age since {since}}}"
    days = (when - start).days
    return "1 day" if days == 1 else f"{days:,} days"
