"""Stale figures: prose still quoting a value that a commit changed in a field.

The defect the prior-art audit ranked first (a PCIe 6.0 figure corrected from 128 to 242
GB/s in its field while the notes kept saying 128). For every quantity field whose value
changed since a git revision, the bodies of that record and of the records linking to it
are searched for the old figure: a number with a unit of the same dimension that equals
the old value at the precision it is written with.
"""

from __future__ import annotations

import math
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbtools.check.load import LoadError, parse_record_bytes
from kbtools.check.prose_text import prose_lines
from kbtools.corpus import Corpus, Settings
from kbtools.diagnostics import Diagnostic
from kbtools.fieldwalk import walk_plan
from kbtools.lang.units import QuantityError, format_quantity, parse_unit, parse_written

MENTION = re.compile(r"(?<![\w.{])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s?([A-Za-zµ]+(?:/[A-Za-z]+)?)")


def git_lines(root: Path, *args: str) -> list[str] | None:
    try:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.splitlines() if proc.returncode == 0 else None


def git_show(root: Path, rev: str, rel: str) -> bytes | None:
    try:
        proc = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=root, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def changed_since(settings: Settings, rev: str) -> list[str] | None:
    """Record files that differ between `rev` and the working tree (None: not a git repo / bad rev)."""
    root, records = settings.root, settings.records_dir + "/"
    if git_lines(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}") is None:
        return None
    names = git_lines(root, "diff", "--name-only", rev, "--", records)
    untracked = git_lines(root, "ls-files", "--others", "--exclude-standard", "--", records) or []
    return sorted(set((names or []) + untracked))


def _quantities(corpus: Corpus, type_name: str | None, data: dict) -> dict[str, Any]:
    record_type = corpus.registry.types.get(type_name) if type_name else None
    out: dict[str, Any] = {}
    if record_type is None:
        return out
    for path, value, plan in walk_plan(record_type.plan, data):
        if plan.quantity is not None and value is not None and not isinstance(value, list):
            try:
                out[".".join(map(str, path))] = parse_written(value, plan.quantity).quantity
            except (QuantityError, TypeError, KeyError):
                continue
    return out


def _significant(text: str) -> int:
    digits = text.replace(",", "").replace(".", "").lstrip("0")
    return max(len(digits), 1)


def _round(value: float, digits: int) -> float:
    if value == 0:
        return 0.0
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def stale_figures(
    corpus: Corpus, rev: str, changed: list[str], linking_to: Callable[[str], set[str]]
) -> list[Diagnostic]:
    """The mentions of an old figure in the changed records and in those `linking_to` them (the run says
    which: in a scoped run, the stored links of the records it did not judge again count too)."""
    root = corpus.settings.root
    records_dir = corpus.settings.records_dir.rstrip("/") + "/"
    found: list[Diagnostic] = []
    for rel in changed:
        # a record's key is its path under records/ without .md: no record is decoded to find one
        key = rel[len(records_dir) : -len(".md")] if rel.startswith(records_dir) and rel.endswith(".md") else None
        record = corpus.records.get(key) if key is not None else None
        if record is not None and record.path != rel:
            record = None
        old_bytes = git_show(root, rev, rel)
        if record is None or old_bytes is None:
            continue
        try:
            old_data, _, _, _ = parse_record_bytes(old_bytes)
        except LoadError:
            continue
        old = _quantities(corpus, record.type, old_data)
        new = _quantities(corpus, record.type, dict(record.data))
        readers = linking_to(record.key) | {record.key}
        for field, old_value in old.items():
            new_value = new.get(field)
            if new_value is None or not new_value.is_compatible_with(old_value):
                continue
            if math.isclose(float(new_value.to(old_value.units).magnitude), float(old_value.magnitude), rel_tol=1e-9):
                continue
            line, _ = record.position(tuple(int(p) if p.isdigit() else p for p in field.split(".")))
            for key in sorted(readers):
                found.extend(_mentions(corpus.records[key], old_value, new_value, record, field, line, rev))
    return found


def _mentions(reader, old_value, new_value, owner, field: str, field_line: int, rev: str) -> list[Diagnostic]:
    out = []
    for offset, text in prose_lines(reader.body):  # the prose KB610/611 read: an old figure struck through is quiet
        for match in MENTION.finditer(text):
            number = match.group(1) + (match.group(2) or "")
            try:
                unit = parse_unit(match.group(3))
            except QuantityError:
                continue
            if not (1 * unit).is_compatible_with(old_value):
                continue
            written = float(number.replace(",", ""))
            old_in_unit = float(old_value.to(unit).magnitude)
            new_in_unit = float(new_value.to(unit).magnitude)
            digits = _significant(number)
            if _round(old_in_unit, digits) == _round(written, digits) and _round(new_in_unit, digits) != _round(
                written, digits
            ):
                out.append(
                    Diagnostic.make(
                        "KB600",
                        reader.path,
                        reader.body_line + offset,
                        match.start() + 1,
                        f"quotes {number} {match.group(3)}, the old value of {owner.key}.{field} (now {format_quantity(new_value)}, "
                        f"changed since {rev} at {owner.path}:{field_line}); quote it as {{{{ {owner.key}.{field.split('.')[0]} }}}} instead",
                    )
                )
    return out
