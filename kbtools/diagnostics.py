"""Diagnostics: what every stage reports instead of raising.

Each code is declared once here with its severity, a one-line summary and an
example; docs/diagnostics.md is rendered from this table (a test keeps them equal),
so a code cannot exist without documentation.
"""
from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


class Code(NamedTuple):
    severity: Severity
    summary: str
    example: str


E, W = Severity.ERROR, Severity.WARNING

CODES: dict[str, Code] = {
    # load: files and frontmatter
    "KB100": Code(E, "The file is not valid UTF-8.", "records/models/x.md:3:7: error KB100 invalid UTF-8 byte 0xff"),
    "KB101": Code(E, "The file is empty.", "records/models/x.md:1:1: error KB101 empty file: a record needs a --- frontmatter block"),
    "KB102": Code(E, "The file does not start with a `---` frontmatter fence.", "records/models/x.md:1:1: error KB102 missing frontmatter: the first line must be '---'"),
    "KB103": Code(E, "The frontmatter fence is opened but never closed.", "records/models/x.md:1:1: error KB103 frontmatter opened here is never closed by a '---' line"),
    "KB104": Code(E, "The frontmatter is not valid YAML (tabs, bad indentation, unclosed quotes...).", "records/models/x.md:4:1: error KB104 invalid YAML: found character '\\t' that cannot start any token"),
    "KB105": Code(E, "A key appears twice in one mapping (YAML would silently keep the last).", "records/models/x.md:9:1: error KB105 duplicate key 'name' (first at line 4)"),
    "KB106": Code(E, "The frontmatter is not a mapping of keys to values.", "records/models/x.md:2:1: error KB106 frontmatter must be a mapping of keys to values, not a list"),
    "KB107": Code(E, "The record's `id` is not its file name.", "records/models/x.md:2:5: error KB107 id 'y' does not match the file name 'x'"),
    "KB108": Code(E, "The id (or file name) is not a kebab-case slug.", "records/models/My_Model.md:2:5: error KB108 id 'My_Model' must match ^[a-z0-9]+(-[a-z0-9]+)*$"),
    "KB109": Code(E, "The record's `type` is not the type of its directory.", "records/models/x.md:3:7: error KB109 type 'engine' does not match directory 'models/' (type 'model')"),
    "KB110": Code(E, "A Markdown file sits in a directory that is no record type.", "records/widgets/x.md:1:1: error KB110 'widgets/' is not a record directory (known: accelerators, engines, ...)"),
    "KB111": Code(E, "The frontmatter is too large or too deeply nested to load safely.", "records/models/x.md:2:1: error KB111 frontmatter expands to more than 100000 YAML nodes (alias bomb?)"),
    "KB112": Code(E, "A path given on the command line is not a record file.", "notes.txt:1:1: error KB112 not a record: expected records/<dir>/<id>.md"),
    # schema
    "KB200": Code(E, "A field breaks its type's JSON Schema.", "records/models/x.md:5:1: error KB200 status: 'done' is not one of ['verified', 'draft', 'contested', 'deprecated']"),
    "KB201": Code(E, "A field is not part of its type's schema (misspelt or unknown).", "records/models/x.md:7:1: error KB201 unknown field 'num_layer' for type 'model'"),
    "KB202": Code(E, "A required field is missing.", "records/models/x.md:1:1: error KB202 missing required field 'status'"),
    "KB210": Code(E, "A schema file is broken: not JSON, not a valid JSON Schema, or a bad kb annotation.", "schema/model.schema.json:12:5: error KB210 invalid schema: 'strin' is not valid under any of the given schemas"),
    # links
    "KB300": Code(E, "A reference field names a record that does not exist.", "records/accelerators/x.md:14:12: error KB300 host_link: no record 'pcie-9-x16'"),
    "KB301": Code(E, "A reference field names a record of the wrong type.", "records/flops/x.md:8:5: error KB301 affected_by_hardware: 'memory-bandwidth' is a hardware_parameter, expected accelerator"),
    "KB302": Code(E, "A [[wikilink]] in the body points nowhere.", "records/flops/x.md:31:12: error KB302 dangling link [[engines/lmcach]]"),
    "KB303": Code(E, "A bare [[id]] wikilink matches records in several directories.", "records/flops/x.md:31:12: error KB303 ambiguous link [[lmcache]]: engines/lmcache, sources/lmcache; qualify it as [[dir/id]]"),
    "KB304": Code(E, "The same id is used by records in two places.", "records/sources/lmcache.md:2:5: error KB304 id 'lmcache' is also used by records/engines/lmcache.md"),
    "KB305": Code(W, "A [[dir/id#heading]] link names a heading the target does not have.", "records/flops/x.md:12:3: warning KB305 no heading 'setup' in engines/lmcache"),
    "KB306": Code(W, "Nothing links to this record.", "records/models/x.md:2:5: warning KB306 orphan: no record links to models/x"),
    "KB307": Code(W, "No record cites this source.", "records/sources/x.md:2:5: warning KB307 source 'x' is cited by no record"),
    # internal
    "KB900": Code(E, "kb itself failed; please report it with the file named.", "records/models/x.md:1:1: error KB900 internal error: ..."),
}


class Diagnostic(BaseModel):
    """One finding, positioned at a file, line and column (1-based)."""

    model_config = ConfigDict(frozen=True)

    code: str
    severity: Severity
    path: str
    line: int = 1
    column: int = 1
    message: str
    hint: str | None = None

    @classmethod
    def make(cls, code: str, path: str, line: int, column: int, message: str, hint: str | None = None) -> "Diagnostic":
        return cls(code=code, severity=CODES[code].severity, path=path, line=max(line, 1),
                   column=max(column, 1), message=message, hint=hint)

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code, self.message)


def render_reference() -> str:
    """The diagnostics reference page (docs/diagnostics.md)."""
    lines = [
        "# Diagnostics reference",
        "",
        "Every finding `kb check` reports has a stable code. Text output is one line per finding:",
        "`path:line:col: severity CODE message`. Errors make `kb check` exit 1; warnings do not,",
        "unless `--strict` is given. This page is generated from `kbtools/diagnostics.py`.",
        "",
        "| Code | Severity | Meaning | Example |",
        "|---|---|---|---|",
    ]
    for code, c in CODES.items():
        example = c.example.replace("|", "\\|")
        lines.append(f"| {code} | {c.severity.value} | {c.summary} | `{example}` |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m kbtools.diagnostics > docs/diagnostics.md
    print(render_reference(), end="")
