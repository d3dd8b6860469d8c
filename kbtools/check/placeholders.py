"""Placeholders left in a record: what `kb new` (or a person) wrote to be replaced, still there.

`kb new` writes a draft that passes `kb check`, so that a user can fill it in a step at a time; every value
it makes up for them is marked, by a comment on its line ("# fill in", "# an example: replace it", "# one
of: ...: pick one") or by being the word TODO, and its body by a sentence asking for the record's own words.
Left in place, such a value reads as a fact: `publisher: "TODO"`, `power_capacity: "1 MW"  # fill in`.
Each is KB117: a warning (so `kb check --strict` fails until it is replaced), and an error in a record whose
status says it is verified. Found from the file's bytes alone, where its comments still are, so a check
remembers it with the file (load stage).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from kbtools.diagnostics import Diagnostic, Severity, clipped

CODE = "KB117"
# the words kb new's placeholder comments end with (authoring/new.py writes them; keep the two in step)
FILL_IN, REPLACE_IT, PICK_ONE = "fill in", "replace it", "pick one"
BODY = "in your own words, with the figures it is known for"  # the sentence kb new's draft body asks with
_COMMENT = re.compile(r"\s#\s*(?P<text>.*)$")
_ASKS = re.compile(rf"\b(?:{FILL_IN}|{REPLACE_IT}|{PICK_ONE})\b", re.IGNORECASE)
_WORDS = frozenset({"TODO", "TBD", "FIXME", "XXX"})


def find_placeholders(
    frontmatter: list[str],
    first_line: int,
    data: Mapping[str, Any],
    positions: Mapping[tuple, tuple[int, int]],
    body: str,
    body_line: int,
    path: str,
) -> list[Diagnostic]:
    """KB117 for each placeholder: a frontmatter line whose comment asks for a value, a string value that is
    only a TODO word (anywhere in the frontmatter), and kb new's draft body."""
    severity = Severity.ERROR if data.get("status") == "verified" else Severity.WARNING
    found: dict[int, Diagnostic] = {}  # one finding a line

    def add(line: int, column: int, message: str) -> None:
        if severity is Severity.ERROR:
            message += " (a verified record cannot hold one)"
        found.setdefault(
            line, Diagnostic(code=CODE, severity=severity, path=path, line=line, column=column, message=message)
        )

    for offset, text in enumerate(frontmatter):
        comment = _COMMENT.search(text)
        if comment is not None and _ASKS.search(comment["text"]) and not _quoted(text, comment.start()):
            asked = clipped(comment["text"].strip(), 60)
            add(
                first_line + offset,
                1,
                f"{text[: comment.start()].strip()}: a placeholder ('# {asked}'); write what the source says, "
                "and remove the comment",
            )
    for where, value in _strings(data, ()):
        if value.strip().upper() in _WORDS:
            line, column = positions.get(where, (first_line, 1))
            add(
                line,
                column,
                f"{'.'.join(map(str, where))}: '{clipped(value, 20)}' is a placeholder; write what the source says",
            )
    if BODY in body:
        for offset, text in enumerate(body.splitlines()):
            if BODY.split(",")[0] in text:
                add(body_line + offset, 1, "body: kb new's draft sentence; write what the record is, in your own words")
                break
    return sorted(found.values(), key=lambda d: d.line)


def _strings(value: Any, path: tuple) -> Iterator[tuple[tuple, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def _quoted(text: str, at: int) -> bool:
    """A '#' inside a quoted scalar is text, not a comment."""
    before = text[:at]
    return before.count('"') % 2 == 1 or before.count("'") % 2 == 1
