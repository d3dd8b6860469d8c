"""The prose a record's body holds, as the figure checks read it (kbtools.check.prose, KB600's stale check): its
lines with code, quotations, struck-through figures, URLs and inline values blanked; its sentences; and the
figures written in them ("31.5 GB/s", "3x", "$2.10 per hour"), each read with kb's unit registry."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kbtools.lang.markdown import blank_inline_values, too_large
from kbtools.lang.units import QuantityError, parse_unit, unit_registry

_NUMBER = r"(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
_FIGURE = re.compile(
    r"(?<![\w.,/{$~–-])" + _NUMBER + r"(?:(×)(?!\s*[\dA-Z(])|(\s)([A-Za-zµ]+(?:/[A-Za-z]+)?)(?![\w/]))"
    r"|(?<![\w.$])\$" + _NUMBER + r"(?:\s?/\s?([A-Za-z]+)(?![\w/])|\s+per\s+([A-Za-z]+)(?![\w/]))?"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[*_`{])|(?<=;)\s+|\n\s*\n")
_NOT_PROSE = re.compile(
    r"`[^`\n]*`|~~.*?~~|\]\([^)\s]*\)|https?://\S+|<[^>\n]*>"
    r'|"[^"\n]*"|“[^”\n]*”|‘[^’\n]*’'
    r"|(?<![\w'])'[^'\n]*'(?!\w)"  # single quotes, not an apostrophe (the vendor's, the models')
)  # quoted: a document's words, figures as printed


@dataclass(frozen=True)
class Figure:
    text: str  # as written, e.g. "31.5 GB/s"
    number: str  # the digits as written
    unit: str
    quantity: Any  # pint.Quantity
    start: int  # offset in the text it was found in
    end: int


def blank_not_prose(text: str) -> str:
    """Inline values, quoted code, struck-through (old) figures, quotations, URLs and HTML blanked, columns
    kept (inline values by a linear scan: a line of unclosed {{ must not cost a search from each): what is
    not the record's own words, to the figure checks and to KB116's search for a template's leftovers."""
    return _NOT_PROSE.sub(lambda m: " " * len(m.group(0)), blank_inline_values(text))


def prose_lines(body: str) -> Iterator[tuple[int, str]]:
    """A body's prose, line by line (0-based offset, text): code blocks left out; inline values, quoted code,
    struck-through figures, quotations, URLs and HTML blanked, columns kept. What the figure checks read
    (this one and KB600's), so an old figure struck through is quiet for both. A body too large to check
    (KB114/KB115) gives nothing."""
    if too_large(body) is not None:
        return
    fenced = False
    for offset, text in enumerate(body.splitlines()):
        if text.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced and not text.startswith("    "):
            yield offset, blank_not_prose(text)


def sentences(text: str, blanked: bool = False) -> Iterator[tuple[str, int]]:
    if not blanked:
        text = blank_not_prose(text)
    start = 0
    for boundary in _SENTENCE.finditer(text):
        yield text[start : boundary.start()], start
        start = boundary.end()
    yield text[start:], start


def figures_in(sentence: str) -> Iterator[Figure]:
    for match in _FIGURE.finditer(sentence):
        if match.group(1) is not None:
            number = match.group(1) + (match.group(2) or "")
            if match.group(3):
                unit_text, unit = "×", unit_registry().dimensionless
            else:
                unit_text = match.group(5)
                unit = unit_of(unit_text)
                if unit is None or unit.dimensionless:  # "16 lanes" is a count, not a quantity
                    continue
        else:
            number = match.group(6) + (match.group(7) or "")
            per = match.group(8) or match.group(9)
            unit_text = "USD" + (f"/{per}" if per else "")
            unit = unit_of(unit_text)
            if unit is None:
                unit_text, unit = "USD", unit_of("USD")
        magnitude = float(number.replace(",", ""))
        if not math.isfinite(magnitude):
            continue
        yield Figure(
            match.group(0), number, unit_text, unit_registry().Quantity(magnitude, unit), match.start(), match.end()
        )


@lru_cache(maxsize=512)
def unit_of(text: str):
    try:
        return parse_unit(text)
    except QuantityError:
        return None
