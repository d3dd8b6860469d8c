"""A knowledge base's own settings: `kb.toml`, or the `[tool.kb]` table of `pyproject.toml`.

    [tool.kb]
    title = "Inference cost KB"      # the site's name
    tolerance = 0.01                 # a stated figure's leeway where its formula gives none (1%)
    records = "records"              # where the records, schemas and theme overrides live
    schema = "schema"
    site = "site"

    [tool.kb.severity]               # a code's severity: "error", "warning" or "off"
    KB540 = "off"
    KB611 = "warning"                # advice kb gives only when asked (OPT_IN)

A mistake here never passes silently: an unknown key, a code kb does not have or a severity it does
not know is a diagnostic at its line (KB120), and so is a file that is not TOML.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from kbtools.diagnostics import Diagnostic
from kbtools.files import MAX_CONFIG_BYTES, NotReadable, read_regular_file

FILES = ("kb.toml", "pyproject.toml")  # the first that holds kb's table wins
SEVERITIES = ("error", "warning", "off")
PATHS = {"records": "records_dir", "schema": "schema_dir", "site": "site_dir"}
KEYS = {"title", "tolerance", *PATHS, "severity"}
# the codes about the configuration itself: turning them off would hide the mistake that turned them off
FIXED = frozenset({"KB120", "KB900"})
# advice, not findings: off unless the configuration gives them a severity. KB611 (a figure typed by hand where
# an inline value would keep it true) is a house style: on a knowledge base kb did not write it flagged prose
# that was right (issue 46), so it is reported only to those who ask for it (KB611 = "warning")
OPT_IN = frozenset({"KB611"})
NAME = re.compile(r"^[A-Za-z0-9_-]+$")
# a diagnostic code: kb's own (KB540) and a schema rule's (x-kb-constraints: KB561, or a project's XY100)
CODE = re.compile(r"^[A-Z]{2}[0-9]{3}$")


def config_file(root: Path) -> Path | None:
    """The file holding this knowledge base's kb table, if any."""
    for name in FILES:
        path = root / name
        if name == "kb.toml" and os.path.lexists(path):
            return path  # whatever it is: one that is no readable file is reported (KB120), never skipped
        if path.is_file() and _has_kb_table(path):
            return path
    return None


def _has_kb_table(path: Path) -> bool:
    try:
        text = read_regular_file(path, MAX_CONFIG_BYTES)[0].decode("utf-8")
        return re.search(r"^\s*\[\s*tool\.kb\s*[\].]", text, re.M) is not None
    except (OSError, UnicodeDecodeError):
        return False


def _read(root: Path) -> tuple[str, Any, _Locator, str] | Diagnostic | None:
    """(file, kb's table, a locator of its keys, the table's name), a KB120 when the file is unreadable
    or not TOML, or None when there is no configuration."""
    path = config_file(root)
    if path is None:
        return None
    rel = path.relative_to(root).as_posix()
    try:
        text = read_regular_file(path, MAX_CONFIG_BYTES)[0].decode("utf-8")
        document = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        return Diagnostic.make("KB120", rel, 1, 1, f"not UTF-8: {exc.reason}")
    except NotReadable as exc:
        return Diagnostic.make("KB120", rel, 1, 1, str(exc))
    except OSError as exc:
        return Diagnostic.make("KB120", rel, 1, 1, f"cannot read: {exc.strerror or exc}")
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line, column = (int(where[1]), int(where[2])) if where else (1, 1)
        return Diagnostic.make("KB120", rel, line, column, f"not valid TOML: {str(exc).split(' (at')[0]}")
    prefix = () if path.name == "kb.toml" else ("tool", "kb")
    table: Any = document
    for part in prefix:
        table = table.get(part, {}) if isinstance(table, dict) else {}
    return rel, table, _Locator(text, prefix), ".".join(prefix) or "kb.toml"


def unknown_codes(settings, known: set[str]) -> list[Diagnostic]:
    """A severity given for a code neither kb nor the schemas' constraints have (known once the schemas
    are read, so checked by the pipeline from where load_config found each code, not read again)."""
    return [
        Diagnostic.make("KB120", rel, line, column, f"no code {code} in kb or the schemas (docs/diagnostics.md)")
        for code, rel, line, column in settings.severity_at
        if code not in known
    ]


def load_config(root: Path) -> tuple[dict[str, Any], list[Diagnostic]]:
    """The settings the configuration file gives (Settings' field names), and what is wrong with it."""
    read = _read(root)
    if read is None:
        return {}, []
    if isinstance(read, Diagnostic):
        return {}, [read]
    rel, table, locate, shown = read
    settings: dict[str, Any] = {}
    problems: list[Diagnostic] = []

    def problem(keys: tuple[str, ...], message: str) -> None:
        problems.append(Diagnostic.make("KB120", rel, *locate(keys), message))

    if not isinstance(table, dict):
        problem((), f"[{shown}] must be a table")
        return {}, problems
    for key, value in table.items():
        if key not in KEYS:
            problem((key,), f"unknown key '{key}' in [{shown}] (known: {', '.join(sorted(KEYS))})")
        elif key == "title":
            if isinstance(value, str) and value.strip():
                settings["title"] = value.strip()
            else:
                problem((key,), "title must be a non-empty string")
        elif key == "tolerance":
            if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1:
                settings["tolerance"] = float(value)
            else:
                problem((key,), f"tolerance must be a fraction from 0 to below 1 (0.01 is 1%), not {value!r}")
        elif key in PATHS:
            if isinstance(value, str) and NAME.match(value):
                settings[PATHS[key]] = value
            else:
                problem((key,), f"{key} must be the name of one directory in the repository, not {value!r}")
        elif key == "severity":
            if not isinstance(value, dict):
                problem((key,), f"severity must be a table of codes ([{shown}.severity])")
                continue
            chosen: dict[str, str] = {}
            where: list[tuple[str, str, int, int]] = []  # code -> where it stands, for unknown_codes
            for code, severity in value.items():
                if not CODE.match(code):
                    problem(
                        (key, code),
                        f"'{code}' is not a diagnostic code (two capital letters and three digits, like KB540)",
                    )
                elif code in FIXED:
                    problem((key, code), f"{code} cannot be configured: it reports the configuration itself")
                elif severity not in SEVERITIES:
                    problem((key, code), f"{code}: severity must be one of {', '.join(SEVERITIES)}, not {severity!r}")
                else:
                    chosen[code] = severity
                    where.append((code, rel, *locate((key, code))))
            settings["severity"] = tuple(sorted(chosen.items()))
            settings["severity_at"] = tuple(where)
    for key, message in _shared_directories(root, settings):
        problem((key,), message)
    return settings, problems


def _shared_directories(root: Path, settings: dict[str, Any]) -> list[tuple[str, str]]:
    """(key, why) for each of records, schema and site the configuration gives that names the directory
    another of them has, each such setting taken out of `settings` (as any bad setting: reported, and its
    default stands in). One directory for two would have kb build a site inside the records (site =
    "records"), or read the theme's files as schemas or the schemas as records. Of a pair, the later key
    set in the file is the one reported; a setting taken out can make its default collide in turn."""
    found: list[tuple[str, str]] = []
    while True:
        names = {key: settings.get(attribute, key) for key, attribute in PATHS.items()}  # each default is its key
        pairs = [(a, b) for i, b in enumerate(PATHS) for a in list(PATHS)[:i]]
        clash = next(
            (
                (b, a) if PATHS[b] in settings else (a, b)
                for a, b in pairs
                if (PATHS[a] in settings or PATHS[b] in settings) and _same_directory(root, names[a], names[b])
            ),
            None,
        )
        if clash is None:
            return found
        key, other = clash
        found.append(
            (key, f"{key} = {names[key]!r} is the {other} directory too ({names[other]}/); give {key} one of its own")
        )
        settings.pop(PATHS[key])


def _same_directory(root: Path, name: str, other: str) -> bool:
    """Two names of one directory: the same name, or (on a file system that folds case, or through a link)
    two names that lead to one directory."""
    if name == other:
        return True
    try:
        return os.path.samefile(root / name, root / other)
    except OSError:  # one of them does not exist (yet): two names, two directories
        return False


class _Locator:
    """Line and column of a key in the TOML text (tomllib keeps no positions): the table header
    `[a.b]` or a dotted key `a.b = ` counts for the tables the key lies in."""

    def __init__(self, text: str, prefix: tuple[str, ...]):
        self.lines = text.splitlines()
        self.prefix = prefix

    def __call__(self, keys: tuple[str, ...]) -> tuple[int, int]:
        full = (*self.prefix, *keys)
        table: tuple[str, ...] = ()
        best = (1, 1)
        for number, line in enumerate(self.lines, 1):
            stripped = line.strip()
            header = re.match(r"^\[\s*([^\[\]]+?)\s*\]", stripped)
            if header:
                table = tuple(p.strip().strip('"') for p in header[1].split("."))
                if table == full[: len(table)] and len(table) >= len(self.prefix):
                    best = (number, line.index("[") + 1)
                continue
            assignment = re.match(r"^([A-Za-z0-9_.\"-]+?)\s*=", stripped)
            if assignment:
                key = tuple(p.strip().strip('"') for p in assignment[1].split("."))
                if (*table, *key) == full:
                    return number, line.index(stripped[0]) + 1
                if (*table, *key) == full[: len(table) + len(key)] and len(table) + len(key) > len(self.prefix):
                    best = (number, line.index(stripped[0]) + 1)
        return best


def apply_severity(diagnostics: list[Diagnostic], severity: tuple[tuple[str, str], ...]) -> list[Diagnostic]:
    """The diagnostics as the configuration wants them: a code set off is dropped, another given its severity;
    advice (OPT_IN) is dropped unless the configuration gives it a severity."""
    chosen = dict(severity)
    out = []
    for d in diagnostics:
        wanted = chosen.get(d.code, "off" if d.code in OPT_IN else None)
        if wanted == "off":
            continue
        if wanted is not None and wanted != d.severity.value:
            d = d.with_severity(type(d.severity)(wanted))
        out.append(d)
    return out
