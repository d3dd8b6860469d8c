"""The last stage: diagnostics -> text, JSON, GitHub annotations or SARIF."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from urllib.parse import quote

from kbtools import __version__
from kbtools.diagnostics import CODES, Diagnostic, Severity, one_line


def summarize(diagnostics: Sequence[Diagnostic], records: int) -> dict[str, int]:
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    return {"records": records, "errors": errors, "warnings": len(diagnostics) - errors}


def format_line(d: Diagnostic) -> str:
    """One finding as Hugo prints one: `path:line:col: severity CODE message (hint: ...)`."""
    return f"{one_line(d.path)}:{d.line}:{d.column}: {d.severity.value} {d.code} {one_line(with_hint(d))}"


def format_text(diagnostics: Sequence[Diagnostic], summary: dict[str, int]) -> str:
    lines = [format_line(d) for d in diagnostics]
    lines.append(f"checked {summary['records']} records: {summary['errors']} errors, {summary['warnings']} warnings")
    return "\n".join(lines) + "\n"


def with_hint(d: Diagnostic) -> str:
    """The message, and the hint after it when there is one (JSON keeps them apart)."""
    return f"{d.message} (hint: {d.hint})" if d.hint else d.message


def format_json(diagnostics: Sequence[Diagnostic], summary: dict[str, int]) -> str:
    payload = {"diagnostics": [d.as_json() for d in diagnostics], "summary": summary}
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


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
    lines.append(f"checked {summary['records']} records: {summary['errors']} errors, {summary['warnings']} warnings")
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
