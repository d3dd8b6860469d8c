"""What a record id is, decided in one place: every command that accepts an id (a file name, `kb new
--id`, `kb mv`'s target, a record kb writes) asks here, so no two of them can disagree."""

from __future__ import annotations

import re

ID_PATTERN = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
# A file name is at most 255 bytes; a record's temporaries add a dot, ".md" and a mark to its id, and a
# page adds ".html". 100 characters is longer than any id a person types (the longest here is 57).
MAX_ID_LENGTH = 100
RULE = f"lower-case letters and digits in words joined by single hyphens, at most {MAX_ID_LENGTH} characters"


def id_problem(text: object) -> str | None:
    """Why `text` is not a valid id, or None when it is one. fullmatch: a trailing newline is not an id."""
    if not isinstance(text, str) or not text:
        return "an id is a non-empty string"
    if len(text) > MAX_ID_LENGTH:
        return f"an id is at most {MAX_ID_LENGTH} characters (this one has {len(text)})"
    if ID_PATTERN.fullmatch(text) is None:
        return f"an id is {RULE}, e.g. nvidia-h200-sxm"
    return None


def is_id(text: object) -> bool:
    return id_problem(text) is None
