"""The last stage: diagnostics -> text, JSON, GitHub annotations or SARIF.

A record file that does not parse (or cannot be read) yields no record, so every reference, link and
inline value naming that record is a finding too: one that follows from the first. So is a finding that a
record has no FIELD (a hardware_parameters row's KB511, a ledger case's KB621 that cannot read it) where kb
refused what that record writes there (a unit error, an impossible figure), or a figure the field is derived
from: the refusal is the cause. The text report prints such a cause first, with what follows from it indented
under it; JSON marks each of those with the finding it follows from (`caused_by`), and every format still
lists every finding. Which findings follow from which is read from the findings alone (their codes, files and
messages), so a memo's stored answer is worded as the run that made it was (kbtools.check.run.memo), and
nothing here imports a stage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from urllib.parse import quote

from kbtools.diagnostics import CODES, REFUSED_OR_DERIVED, WHICH_KB_REFUSED, Diagnostic, Severity, one_line
from kbtools.version import __version__


def summarize(diagnostics: Sequence[Diagnostic], records: int) -> dict[str, int]:
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    return {"records": records, "errors": errors, "warnings": len(diagnostics) - errors}


# the codes with which the loader makes no record of a file (kbtools.check.load): it did not parse, or kb did
# not read it. KB403 and KB900 are also found in records that loaded; such a one is a cause only when a finding
# names its record as missing, which a record that loaded under its file's name never is
UNPARSED = frozenset(
    {"KB100", "KB101", "KB102", "KB103", "KB104", "KB105", "KB106", "KB111", "KB112", "KB113", "KB403", "KB900"}
)
NOT_READ = frozenset({"KB112", "KB113"})  # of those, the file was not read at all
FOLLOWING = frozenset({"KB300", "KB302", "KB509"})  # a reference, a [[link]], an inline value: "no record 'x'"
# the codes with which kb refuses what a record writes in a field (kbtools.check.compute): it is not computed
# with, so a finding elsewhere that the record has no such field follows from it. Each message starts with the
# field's path ('memory_bandwidth: ...', 'memory_bandwidth.low: ...', 'memory_bandwidth[1]: ...')
REFUSING = frozenset(
    {"KB400", "KB401", "KB402", "KB403", "KB404", "KB405", "KB501", "KB502", "KB503", "KB504", "KB505", "KB506"}
    | {"KB507", "KB531"}
)
# the codes with which kb says a record has no FIELD because kb refused it (or a figure it is derived from): a
# hardware_parameters row naming a refused figure (KB511: "dir/id has no FIELD (kb refused it, ...)"), a ledger
# case whose prediction reads one (KB621: "it reads dir/id.FIELD, which kb refused")
LACKING = frozenset({"KB511", "KB621"})
# their words where the record's figure was refused (kbtools.diagnostics.REFUSED_OR_DERIVED and WHICH_KB_REFUSED),
# the record and field named in either order of words; a record that
# writes no such field is said to have none (or to leave it out), and that finding stands alone
_HAS_NO = re.compile(
    rf" (?:([^\s/]+/[^\s/]+) has no ([A-Za-z_][A-Za-z0-9_]*) \({re.escape(REFUSED_OR_DERIVED)}\)"
    rf"|reads ([^\s/]+/[^\s/]+)\.([A-Za-z_][A-Za-z0-9_]*), {re.escape(WHICH_KB_REFUSED)})$"
)
_GUESS = re.compile(r" \(did you mean [^)]*\?\)$")
_NAMES_NO_RECORD = re.compile(r": no record '([^']*)'(?: \(did you mean [^)]*\?\))?$")  # a suggestion may follow


@dataclass(frozen=True)
class Group:
    """A finding at a record file that yields no record, and the findings that follow from it: those that
    name its record (`key`, dir/id) as missing."""

    cause: Diagnostic
    key: str
    follows: tuple[Diagnostic, ...]
    field: str | None = None  # the field of `key` that the findings following from a refusal say it lacks

    @property
    def what(self) -> str:
        """What became of the file (or of the field), as the report says it."""
        if self.field is not None:
            return f"whose {self.field} kb refused" if self._refuses_field() else f"whose {self.field} rests on it"
        return "which kb did not read" if self.cause.code in NOT_READ else "which did not parse"

    def _refuses_field(self) -> bool:
        """Whether the cause refuses the field itself, not a figure the field is derived from."""
        return refused_field(self.cause) == (self.key, self.field)

    def summary(self) -> str:
        """'and 116 errors that follow from it: references to accelerators/x, which did not parse'; 'and 10
        warnings that follow from it: uses of accelerators/x.memory_bandwidth, which kb refused'."""
        errors = sum(d.severity is Severity.ERROR for d in self.follows)
        warnings = len(self.follows) - errors
        counted = " and ".join(counts(errors=errors, warnings=warnings, keep_zero=False))
        verb = "follows" if len(self.follows) == 1 else "follow"
        if self.field is not None:
            why = "which kb refused" if self._refuses_field() else "which kb derives from what it refused"
            return f"and {counted} that {verb} from it: uses of {self.key}.{self.field}, {why}"
        return f"and {counted} that {verb} from it: references to {self.key}, {self.what}"


def unparsed_key(d: Diagnostic) -> str | None:
    """The record (dir/id) the file of `d` would have been, when `d` is a finding with which a record file
    yields no record; else None. A record file lies at records/<dir>/<id>.md."""
    if d.code not in UNPARSED:
        return None
    parts = d.path.split("/")
    if len(parts) < 3 or not parts[-1].endswith(".md") or len(parts[-1]) == 3:
        return None
    return f"{parts[-2]}/{parts[-1][:-3]}"


def missing_name(d: Diagnostic) -> str | None:
    """The record a finding says is missing ('x' or 'dir/x'), when it is one that can follow from a cause."""
    if d.code not in FOLLOWING:
        return None
    found = _NAMES_NO_RECORD.search(d.message)
    return found.group(1) if found else None


def lacking_field(d: Diagnostic) -> tuple[str, str] | None:
    """(dir/id, field) of a finding that says a record has no such field because kb refused it, or a figure
    it is derived from."""
    if d.code not in LACKING:
        return None
    found = _HAS_NO.search(d.message)
    if found is None:
        return None
    return (found.group(1), found.group(2)) if found.group(1) else (found.group(3), found.group(4))


def refused_field(d: Diagnostic) -> tuple[str, str] | None:
    """(dir/id, field) of a finding with which kb refused a field of the record at its file: the field is
    the first name of the path its message starts with."""
    if d.code not in REFUSING:
        return None
    parts = d.path.split("/")
    if len(parts) < 3 or not parts[-1].endswith(".md"):
        return None
    found = re.match(r"([A-Za-z_][A-Za-z0-9_]*)[:.\[]", d.message)
    return (f"{parts[-2]}/{parts[-1][:-3]}", found.group(1)) if found else None


def _causes(diagnostics: Sequence[Diagnostic]) -> dict[int, int]:
    """Index of each finding that follows from another -> index of that other. A finding naming a bare id
    follows from the first file of that name that yields no record; one naming dir/id, from that file. A
    finding that dir/id has no FIELD, which kb refused, follows from the first finding refusing that record's
    FIELD, or else (the field is derived from what kb refused) from the record's first refusal of any field."""
    by_key: dict[str, int] = {}
    by_id: dict[str, int] = {}
    by_field: dict[tuple[str, str], int] = {}
    by_record: dict[str, int] = {}
    for n, d in enumerate(diagnostics):
        key = unparsed_key(d)
        if key is not None and key not in by_key:
            by_key[key] = n
            by_id.setdefault(key.rpartition("/")[2], n)
        refused = refused_field(d)
        if refused is not None:
            by_field.setdefault(refused, n)
            by_record.setdefault(refused[0], n)
    if not by_key and not by_field:
        return {}
    causes = {}
    for n, d in enumerate(diagnostics):
        name = missing_name(d)
        lacking = lacking_field(d)
        if name is not None:
            cause = (by_key if "/" in name else by_id).get(name)
        elif lacking is not None:
            cause = by_field.get(lacking, by_record.get(lacking[0]))
        else:
            cause = None
        if cause is not None and diagnostics[cause].path != d.path:
            causes[n] = cause
    return causes


def grouped(diagnostics: Sequence[Diagnostic]) -> tuple[list[Group], list[Diagnostic]]:
    """The causes that something follows from, in the order given, each with what follows from it (in the
    order given), and every other finding, in the order given."""
    causes = _causes(diagnostics)
    follows: dict[int, list[Diagnostic]] = {}
    for n, cause in causes.items():
        follows.setdefault(cause, []).append(diagnostics[n])
    groups = [_group(diagnostics[n], tuple(follows[n])) for n in sorted(follows)]
    rest = [d for n, d in enumerate(diagnostics) if n not in follows and n not in causes]
    return groups, rest


def _group(cause: Diagnostic, follows: tuple[Diagnostic, ...]) -> Group:
    """A cause and what follows from it: a file that yields no record, or a refused figure of a record."""
    lacking = next((found for found in map(lacking_field, follows) if found is not None), None)
    if lacking is None:
        return Group(cause, unparsed_key(cause) or "", follows)
    return Group(cause, lacking[0], follows, lacking[1])


def without_guess(message: str) -> str:
    """A follow-on finding's message as shown under its cause: the record it names exists but did not parse,
    so a guess at another record would mislead."""
    guess = _GUESS.search(message)
    return message[: guess.start()] if guess else message


def caused_by(diagnostics: Sequence[Diagnostic]) -> dict[int, Diagnostic]:
    """For each finding that follows from another (by its index in `diagnostics`), that other."""
    return {n: diagnostics[cause] for n, cause in _causes(diagnostics).items()}


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """'1 record', '2 records', '0 records': a number and its noun, singular for one (`plural` where adding an
    s is wrong: 'repositories')."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def counts(records: int | None = None, errors: int = 0, warnings: int = 0, keep_zero: bool = True) -> list[str]:
    """'1 record', '2 errors', '0 warnings' (counted), leaving out what is None, and zeros unless keep_zero."""
    return [
        counted(n, noun)
        for n, noun in ((records, "record"), (errors, "error"), (warnings, "warning"))
        if n is not None and (n or keep_zero)
    ]


def summary_line(summary: dict[str, int]) -> str:
    """'checked 480 records: 1 error, 0 warnings'."""
    records, *found = counts(summary["records"], summary["errors"], summary["warnings"])
    return f"checked {records}: {', '.join(found)}"


def format_line(d: Diagnostic) -> str:
    """One finding as Hugo prints one: `path:line:col: severity CODE message (hint: ...)`."""
    return f"{one_line(d.path)}:{d.line}:{d.column}: {d.severity.value} {d.code} {one_line(with_hint(d))}"


def format_text(diagnostics: Sequence[Diagnostic], summary: dict[str, int], shown: int | None = None) -> str:
    """One line per finding, then the summary. A cause comes first, saying what follows from it, and those
    findings are indented under it (all of them; with `shown`, that many and how many more: kb serve's
    terminal)."""
    groups, rest = grouped(diagnostics)
    lines = []
    for group in groups:
        lines.append(f"{format_line(group.cause)} ({group.summary()})")
        listed = group.follows if shown is None else group.follows[:shown]
        lines.extend(f"  {format_line(replace(d, message=without_guess(d.message)))}" for d in listed)
        if len(listed) < len(group.follows):
            lines.append(f"  … and {len(group.follows) - len(listed)} more (kb check lists every one)")
    lines.extend(format_line(d) for d in rest)
    lines.append(summary_line(summary))
    return "\n".join(lines) + "\n"


def with_hint(d: Diagnostic) -> str:
    """The message, and the hint after it when there is one (JSON keeps them apart)."""
    return f"{d.message} (hint: {d.hint})" if d.hint else d.message


def format_json(diagnostics: Sequence[Diagnostic], summary: dict[str, int]) -> str:
    """Every finding in the order given; one that follows from another says which (`caused_by`: its path,
    line, column and code)."""
    causes = caused_by(diagnostics)
    payload = {
        "diagnostics": [
            {**d.as_json(), **({"caused_by": _position(causes[n])} if n in causes else {})}
            for n, d in enumerate(diagnostics)
        ],
        "summary": summary,
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def _position(d: Diagnostic) -> dict[str, object]:
    return {"path": d.path, "line": d.line, "column": d.column, "code": d.code}


def _escape_property(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A").replace(",", "%2C")


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def format_github(diagnostics: Sequence[Diagnostic], summary: dict[str, int]) -> str:
    """GitHub Actions workflow commands: annotations on the lines of the pull request."""
    lines = []
    for d in diagnostics:
        level = "error" if d.severity is Severity.ERROR else "warning"
        props = f"file={_escape_property(d.path)},line={d.line},col={d.column},title={_escape_property(d.code)}"
        lines.append(f"::{level} {props}::{_escape_data(with_hint(d))}")
    lines.append(summary_line(summary))
    return "\n".join(lines) + "\n"


def format_sarif(diagnostics: Sequence[Diagnostic], summary: dict[str, int]) -> str:
    """SARIF 2.1.0, for code-scanning upload."""
    first: dict[str, Diagnostic] = {}
    for d in diagnostics:
        first.setdefault(d.code, d)
    # a code a schema's constraint declares is not in CODES: its first finding describes it
    rules = [
        {
            "id": code,
            "shortDescription": {"text": CODES[code].summary if code in CODES else first[code].message},
            "defaultConfiguration": {
                "level": "error"
                if (CODES[code].severity if code in CODES else first[code].severity) is Severity.ERROR
                else "warning"
            },
        }
        for code in sorted(first)
    ]
    order = {code: n for n, code in enumerate(sorted(first))}
    results = [
        {
            "ruleId": d.code,
            "ruleIndex": order[d.code],
            "level": "error" if d.severity is Severity.ERROR else "warning",
            "message": {"text": with_hint(d)},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": quote(d.path, safe="/"), "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": d.line, "startColumn": d.column},
                    }
                }
            ],
        }
        for d in diagnostics
    ]
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kb",
                        "version": __version__,
                        "informationUri": "https://github.com/",
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


FORMATTERS: dict[str, Callable[[Sequence[Diagnostic], dict[str, int]], str]] = {
    "text": format_text,
    "json": format_json,
    "github": format_github,
    "sarif": format_sarif,
}
