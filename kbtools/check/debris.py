"""Stage: debris, what a template or a tool left behind in what a record says.

A printf or format placeholder (`%s`, `%d`, `{0}`, `{name}` outside an inline value), an unfilled
TODO/TBD/FIXME/XXX marker, or lorem ipsum in a record's frontmatter text or body is KB116, a
warning at the text's line. Such text reads as a figure or a claim to a hurried reader and says
nothing. kb new's own placeholder ("TODO") is what this catches once a draft is meant to be done.
What the record quotes is not its own text, and is read as the figure checks read it (prose.py): code
(backticks, code blocks), quotations ("...", '...'), URLs (a template `https://github.com/{owner}/{repo}`
among them) and HTML are left out.
"""

from __future__ import annotations

import re

from kbtools.check.prose_text import blank_not_prose, prose_lines
from kbtools.check.stage import Context, Judgement, Stage
from kbtools.corpus import Record, dotted, text_fields
from kbtools.diagnostics import Diagnostic

_DEBRIS = re.compile(
    r"(?<![%\w])%(?:\([a-z_]+\))?[sdifr](?![\w%])"  # printf placeholders: %s, %d, %(name)s
    r"|(?<!\{)\{(?:\d+|[a-z_]+(?::[^{}]*)?)?\}(?!\})"  # str.format placeholders: {}, {0}, {name}, {x:.2f}
    r"|\b(?:TODO|TBD|FIXME|XXX)\b"
    r"|\blorem ipsum\b",
    re.IGNORECASE,
)
_MARKERS = ("todo", "tbd", "fixme", "xxx", "lorem")  # a match holds % or { or one of these, in any case
_MARKER = re.compile("|".join(_MARKERS), re.IGNORECASE)
_NOT_TEXT = frozenset({"formula", "url", "config_url", "docs_url", "repository"})  # code and addresses, not prose


class DebrisStage(Stage):
    """A function of the record's bytes alone: it reads nothing else."""

    name = "debris"

    def judge(self, record: Record, ctx: Context) -> Judgement:
        return Judgement(tuple(_record_debris(record)))


def _record_debris(record: Record) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    texts = list(text_fields(record.data, _NOT_TEXT))
    if not _may_hold_debris("\n".join([record.body or "", *(text for _, text in texts)])):
        return found  # most records: nothing in all of it could match (the pattern spans no newline)
    for path, text in texts:
        if text.upper() == text and len(text) <= 4:  # a whole value such as "TBD" is the schema's business
            continue
        match = _DEBRIS.search(blank_not_prose(text))
        if match:
            line, col = record.value_position(path)
            found.append(_diagnostic(record, line, col, dotted(path), match))
    for offset, line_text in prose_lines(record.body or ""):
        match = _DEBRIS.search(line_text)
        if match:
            found.append(_diagnostic(record, record.body_line + offset, match.start() + 1, "body", match))
    return found


def _may_hold_debris(text: str) -> bool:
    """Whether _DEBRIS could match anywhere in the text, found by substring tests where they are exact: the
    pattern's lookarounds cost a tenth of a millisecond a record, over most of a cold check's records that
    hold none of it. Outside ASCII, case-insensitive matching knows foldings str.lower() does not ('ſ', 'K'),
    so the markers are searched by the same engine there."""
    if "%" in text or "{" in text:
        return _DEBRIS.search(text) is not None
    if not text.isascii():
        return _MARKER.search(text) is not None and _DEBRIS.search(text) is not None
    lowered = text.lower()
    return any(marker in lowered for marker in _MARKERS) and _DEBRIS.search(text) is not None


def _diagnostic(record: Record, line: int, col: int, where: str, match: re.Match) -> Diagnostic:
    return Diagnostic.make(
        "KB116",
        record.path,
        line,
        col,
        f"{where}: {match.group()!r} looks like a template's or a tool's leftover; "
        "write what it stands for, or remove it",
    )
