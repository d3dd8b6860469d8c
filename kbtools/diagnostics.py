"""Diagnostics: what every stage reports instead of raising.

Each code is declared once here with its severity, a one-line summary and an
example; docs/diagnostics.md is rendered from this table (a test keeps them equal),
so a code cannot exist without documentation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, NamedTuple


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


class Code(NamedTuple):
    severity: Severity
    summary: str
    example: str


# kb's own codes a schema's x-kb-require rule may report (each is kb's word for a record that lacks fields): any
# other code of kb's would pass the rule's finding off as kb's (KB900 as a crash), and a project's own code comes
# with its severity, as an x-kb-constraints rule's does (kbtools.registry.rules)
REQUIREMENT_CODES = frozenset({"KB202", "KB204", "KB308"})


E, W = Severity.ERROR, Severity.WARNING

# The words with which a finding says it reads a record's field that kb refused (a unit error, an impossible figure),
# written by the stages that find it (KB511, KB621) and read back by the report, which lists such a finding under
# the refusal (kbtools.outputs.report): one spelling for both sides
REFUSED_OR_DERIVED = "kb refused it, or a figure it is derived from"  # KB511: "dir/id has no FIELD (...)"
WHICH_KB_REFUSED = "which kb refused"  # KB621: "it reads dir/id.FIELD, which kb refused"

CODES: dict[str, Code] = {
    # load: files and frontmatter
    "KB100": Code(E, "The file is not valid UTF-8.", "records/models/x.md:3:7: error KB100 invalid UTF-8 byte 0xff"),
    "KB101": Code(
        E,
        "The file is empty.",
        "records/models/x.md:1:1: error KB101 empty file: a record needs a --- frontmatter block",
    ),
    "KB102": Code(
        E,
        "The file does not start with a `---` frontmatter fence.",
        "records/models/x.md:1:1: error KB102 missing frontmatter: the first line must be '---'",
    ),
    "KB103": Code(
        E,
        "The frontmatter fence is opened but never closed.",
        "records/models/x.md:1:1: error KB103 frontmatter opened here is never closed by a '---' line",
    ),
    "KB104": Code(
        E,
        "The frontmatter is not valid YAML (tabs, bad indentation, unclosed quotes...).",
        "records/models/x.md:4:1: error KB104 invalid YAML: a tab character where YAML expects spaces (YAML indents with spaces only)",
    ),
    "KB105": Code(
        E,
        "A key appears twice in one mapping (YAML would silently keep the last).",
        "records/models/x.md:9:1: error KB105 duplicate key 'name' (first at line 4)",
    ),
    "KB106": Code(
        E,
        "The frontmatter is not a mapping of keys to values.",
        "records/models/x.md:2:1: error KB106 frontmatter must be a mapping of keys to values, not a list",
    ),
    "KB107": Code(
        E,
        "The record's `id` is not its file name.",
        "records/models/x.md:2:5: error KB107 id 'y' does not match the file name 'x'",
    ),
    "KB108": Code(
        E,
        "The id (or file name) is not a kebab-case slug.",
        "records/models/My_Model.md:2:5: error KB108 id 'My_Model' must match ^[a-z0-9]+(-[a-z0-9]+)*$",
    ),
    "KB109": Code(
        E,
        "The record's `type` is not the type of its directory.",
        "records/models/x.md:3:7: error KB109 type 'engine' does not match directory 'models/' (type 'model')",
    ),
    "KB110": Code(
        E,
        "A Markdown file sits in a directory that is no record type.",
        "records/widgets/x.md:1:1: error KB110 'widgets/' is not a record directory (known: accelerators, engines, ...)",
    ),
    "KB111": Code(
        E,
        "The frontmatter is too large or too deeply nested to load safely.",
        "records/models/x.md:2:1: error KB111 frontmatter expands to more than 100000 YAML nodes (alias bomb?)",
    ),
    "KB112": Code(
        E,
        "A path given on the command line is not a record file.",
        "notes.txt:1:1: error KB112 not a record: expected records/<dir>/<id>.md",
    ),
    "KB113": Code(
        E,
        "A record file is too large to be a record (more than 5 MiB); it is not read.",
        "records/models/x.md:1:1: error KB113 file is 50.0 MiB; a record may be at most 5 MiB (it was not read)",
    ),
    "KB114": Code(
        E,
        "A body has more than 10,000 [[links]] or {{values}}; none is checked.",
        "records/flops/x.md:12:1: error KB114 the body has more than 10,000 [[links]] or {{values}}; none of them was checked",
    ),
    "KB115": Code(
        E,
        "A body is longer than kb checks (200,000 characters); its links and values are not checked.",
        "records/flops/x.md:12:1: error KB115 the body is 4,900,000 characters long, more than the 200,000 kb checks; its links and values were not checked",
    ),
    # schema
    "KB120": Code(
        E,
        "The configuration (`kb.toml`, or `[tool.kb]` in `pyproject.toml`) is not TOML, or has an unknown key, "
        "code, severity, tolerance or path.",
        "pyproject.toml:41:1: error KB120 unknown key 'titel' in [tool.kb] (known: records, schema, "
        "severity, site, title, tolerance)",
    ),
    "KB121": Code(
        E,
        "KB_TODAY, the date kb judges figures' ages against (KB620), is not a date (YYYY-MM-DD); no age was judged.",
        "KB_TODAY:1:1: error KB121 KB_TODAY='2026-13-01' is not a date (YYYY-MM-DD): no figure's age was judged",
    ),
    "KB200": Code(
        E,
        "A field breaks its type's JSON Schema.",
        "records/models/x.md:5:1: error KB200 status: 'done' is not one of ['verified', 'draft', 'contested', 'deprecated']",
    ),
    "KB201": Code(
        E,
        "A field is not part of its type's schema (misspelt or unknown). When the field it comes closest to is a "
        "required one the record lacks, this finding says so, and no KB202 is reported for that field: one typo, "
        "one finding.",
        "records/accelerators/x.md:11:1: error KB201 unknown field 'vender' for type 'accelerator' (did you mean "
        "'vendor'? it is required, and missing)",
    ),
    "KB202": Code(
        E, "A required field is missing.", "records/models/x.md:1:1: error KB202 missing required field 'status'"
    ),
    "KB204": Code(
        W,
        "A field the type expects (x-kb-require with code KB204) is neither stated nor explained: an accelerator "
        "that states its compute peaks but lacks one the planner may need (FP4, FP8, BF16, INT8), with no reason under "
        "not_published.",
        "records/accelerators/x.md:2:1: warning KB204 peak_fp4_dense is neither stated nor explained: add the "
        "vendor's dense FP4 peak with its source, or say under not_published why there is none",
    ),
    "KB203": Code(
        E,
        "A field is given and also listed under `unknown:`.",
        "records/engines/x.md:12:3: error KB203 unknown.kind: kind is given (line 8) and also said to be unknown; keep one",
    ),
    "KB210": Code(
        E,
        "A schema file is broken: not JSON, not a valid JSON Schema, or a bad kb annotation.",
        "schema/model.schema.json:12:5: error KB210 invalid schema: 'strin' is not valid under any of the given schemas",
    ),
    "KB211": Code(
        W,
        "A schema's `$id` is a relative URI: validators other than kb resolve it, and every `$ref`, against "
        "their working directory.",
        'schema/model.schema.json:3:1: warning KB211 $id "model.schema.json" is relative: check-jsonschema and '
        "editors would look for defs.schema.json in their working directory; remove $id (the file's own "
        "location is then the base of its $refs) or make it absolute",
    ),
    # links
    "KB300": Code(
        E,
        "A reference field names a record that does not exist.",
        "records/accelerators/x.md:14:12: error KB300 host_link: no record 'pcie-9-x16'",
    ),
    "KB301": Code(
        E,
        "A reference field names a record of the wrong type.",
        "records/flops/x.md:8:5: error KB301 affected_by_hardware: 'memory-bandwidth' is a hardware_parameter, expected accelerator",
    ),
    "KB302": Code(
        E,
        "A [[wikilink]] in the body points nowhere.",
        "records/flops/x.md:31:12: error KB302 dangling link [[engines/lmcach]]",
    ),
    "KB303": Code(
        E,
        "A bare [[id]] wikilink matches records in several directories.",
        "records/flops/x.md:31:12: error KB303 ambiguous link [[lmcache]]: engines/lmcache, sources/lmcache; qualify it as [[dir/id]]",
    ),
    "KB304": Code(
        E,
        "The same id is used by records in two places.",
        "records/sources/lmcache.md:2:5: error KB304 id 'lmcache' is also used by records/engines/lmcache.md",
    ),
    "KB305": Code(
        W,
        "A [[dir/id#heading]] link names a heading the target does not have.",
        "records/flops/x.md:12:3: warning KB305 no heading 'setup' in engines/lmcache",
    ),
    "KB306": Code(
        W, "Nothing links to this record.", "records/models/x.md:2:5: warning KB306 orphan: no record links to models/x"
    ),
    "KB307": Code(
        W, "No record cites this source.", "records/sources/x.md:2:5: warning KB307 source 'x' is cited by no record"
    ),
    "KB116": Code(
        W,
        "A template's or a tool's leftover in a record's text: a %s or {0} placeholder, TODO/TBD/FIXME, lorem ipsum.",
        "records/engines/x.md:30:12: warning KB116 body: '%s' looks like a template's or a tool's leftover; write what it stands for, or remove it",
    ),
    "KB117": Code(
        W,
        "A placeholder is still in a record: a value kb new made up (its comment asks to fill it in, replace it or "
        "pick one), a value that is only TODO/TBD/FIXME, or kb new's draft body. An error in a verified record.",
        "records/sources/x.md:9:1: warning KB117 publisher: \"TODO\": a placeholder ('# fill in'); write what the "
        "source says, and remove the comment",
    ),
    "KB309": Code(
        W,
        "Two records of one type have the same name but for case, spacing or punctuation.",
        "records/engines/vllm-2.md:4:7: warning KB309 name 'VLLM' is the same as engines/vllm's 'vLLM' but for case, spacing or punctuation: merge the two, or name them apart",
    ),
    "KB310": Code(
        W,
        "Two source records point at one document (the same URL once normalised, or the same DOI).",
        "records/sources/b.md:8:6: warning KB310 url is the same document as sources/a's (https://example.org/x): one document, two source records",
    ),
    "KB311": Code(
        W,
        "A record's superseded_by names a record that is itself superseded: the chain should point at the "
        "record that replaces it now.",
        "records/prices/x-2023.md:15:16: warning KB311 superseded_by: prices/x-2024 is itself superseded by "
        "'x-2025'; name the record that replaces this one now",
    ),
    "KB308": Code(
        W,
        "A source has no url and does not say why (no_url).",
        "records/sources/x.md:2:5: warning KB308 a source needs a url, or no_url saying why it has none (a print-only document, say)",
    ),
    # units and quantities
    "KB400": Code(
        E,
        "A quantity is not 'VALUE UNIT' (or a bare number for the field's canonical unit).",
        "records/accelerators/x.md:9:1: error KB400 memory_bandwidth: 'fast' is not a quantity: write 'VALUE UNIT', e.g. '4.8 TB/s'",
    ),
    "KB401": Code(
        E,
        "A unit is not known to the project's unit registry (kbtools/lang/units.txt).",
        "records/accelerators/x.md:9:1: error KB401 memory_bandwidth: unknown unit 'TBps'",
    ),
    "KB402": Code(
        E,
        "A quantity has the wrong dimension for its field.",
        "records/accelerators/x.md:9:1: error KB402 memory_bandwidth: 4.8 TB is information, expected information per time (like GB/s)",
    ),
    "KB403": Code(
        E,
        "A number is out of range where it is read: a quantity's number, or any number in the frontmatter, that is "
        "infinite, beyond 1e30, or longer than 100 characters (a number in the frontmatter stops the file being read).",
        "records/models/x.md:9:13: error KB403 num_layers: '999999999999999999999999…' is out of range: a number of "
        "4,000 digits (kb reads numbers of at most 100 characters); quote it if it is a name or a code, not a figure",
    ),
    "KB404": Code(
        E,
        "A band around a value is malformed: it needs both ends (low, high), in the value's dimension, with the value "
        "between them.",
        "records/flops/x.md:30:5: error KB404 inputs.mfu: the value 0.6 is outside its band 0.35 to 0.55",
    ),
    "KB405": Code(
        E,
        "A figure is impossible for its field: outside the physical range its schema declares (x-kb-range), such as a "
        "negative count, a fraction above 1 or half a GPU; the value, an end of its band, a competing value, an input "
        "of the field's name or a derived figure. Nothing is computed from it.",
        "records/workloads/x.md:12:11: error KB405 gpus: -8 is impossible: gpus is a whole number, at least 1 (the "
        "accelerators of one tensor-parallel group)",
    ),
    "KB406": Code(
        W,
        "A bare number in a quantity field whose unit is not 1: kb read it in the schema's unit, which the writer may "
        "not have meant (an error under --strict).",
        "records/storage-tiers/x.md:9:12: warning KB406 bandwidth: the bare number 3200 was read as 3,200 TB/s (the "
        "field's unit, TB/s); write the unit, '3200 TB/s', or the figure you meant",
    ),
    "KB407": Code(
        W,
        "A figure is stored in a decimal unit (GB) while the notes of a source it cites give the same number in the "
        "binary one (GiB): as bytes it is 6.9 % short of what the vendor states.",
        "records/accelerators/x.md:12:10: warning KB407 memory_capacity: source x-spec says 96 GiB, and the record "
        "stores 96 GB, 6.9% fewer bytes; store the quantity as the vendor states it ('96 GiB'), or quote the decimal "
        "figure the vendor gives",
    ),
    # recomputation
    "KB500": Code(
        E,
        "A stated figure disagrees with its recomputation from the records it rests on.",
        "records/flops/x.md:14:5: error KB500 costs.hit_path_bytes: stated 4.5 GB but model.kv_bytes_per_token * prefix_tokens = 70,272 B/token × 32,000 token = 2.249 GB; the stated figure is twice the recomputed one (tolerance 1%)",
    ),
    "KB501": Code(
        E,
        "A formula is not valid in the formula language (syntax, or a construct that is not allowed).",
        "records/flops/x.md:14:5: error KB501 costs.x: function '__import__' is not allowed (allowed: abs, ceil, default, exp, floor, ln, max, min, param, sqrt, zipf_lru, zipf_top, or a function a record's type declares)",
    ),
    "KB502": Code(
        E,
        "A formula uses a name that has no value here.",
        "records/flops/x.md:14:5: error KB502 costs.x: 'prefix_len' is not an input, a cost or a field of flops/x",
    ),
    "KB503": Code(
        E,
        "A formula combines quantities whose units do not fit (GB + GB/s).",
        "records/flops/x.md:14:5: error KB503 costs.x: cannot add GB (information) and GB/s (information per time)",
    ),
    "KB504": Code(
        E,
        "A formula's result does not have the dimension of its declared unit.",
        "records/flops/x.md:15:5: error KB504 costs.x: hit_path_bytes / tier.bandwidth gives time (44.97 ms), but its unit is GB (information)",
    ),
    "KB505": Code(
        E,
        "A formula divides by zero.",
        "records/flops/x.md:14:5: error KB505 costs.x: division by zero: tier.bandwidth is 0",
    ),
    "KB506": Code(
        E,
        "Costs depend on each other in a cycle.",
        "records/flops/a.md:14:5: error KB506 costs.x: cycle flops/a.costs.x → flops/b.costs.y → flops/a.costs.x",
    ),
    "KB507": Code(
        E,
        "A formula's numbers or exponent are out of bounds, or a value it computes is: infinite, not a number "
        "(ln of 0 or less; zipf_top or zipf_lru of n below 1 or s outside 0 to 10), beyond 1e300 (in its own unit, "
        "in base units or in the unit asked for; exp past about 690) or in a unit raised past the 64th power.",
        "records/flops/x.md:14:5: error KB507 costs.x: an exponent must be a number literal between -64 and 64",
    ),
    "KB508": Code(
        E,
        "A for_each or table is used wrongly (also: skip_missing or beside on a single figure, or beside "
        "naming anything but another for_each cost of the record over the same list).",
        "records/flops/x.md:16:5: error KB508 costs.x.for_each: 'tiers' is not a list of record references",
    ),
    "KB509": Code(
        E,
        "An inline {{ value }} in the body cannot be computed or has the wrong unit.",
        "records/flops/x.md:30:12: error KB509 inline value {{ hit_path_bytes | ms }}: 2.249 GB is information, expected time (like ms)",
    ),
    "KB512": Code(
        E,
        "An inline value's '| verdict' is not a ratio (a plain number).",
        "records/flops/x.md:30:12: error KB512 inline value {{ t | verdict }}: 44.97 ms is time, not a ratio",
    ),
    "KB510": Code(
        E,
        "A hardware_parameter's carried_by names a type or field that does not carry it.",
        "records/hardware-parameters/x.md:9:3: error KB510 carried_by.accelerator: 'memory_bw' is not a quantity field of accelerator",
    ),
    "KB511": Code(
        W,
        "A hardware_parameters row names a record that has no value for that parameter.",
        "records/flops/x.md:20:9: warning KB511 hardware_parameters[0]: accelerators/x has no memory_bandwidth",
    ),
    "KB520": Code(
        E,
        "A measurement cross-check fails: a computed figure breaks the bound (at_most / at_least) the model sets for it.",
        "records/measurements/x.md:30:5: error KB520 costs.ceiling_fraction = 1.3 exceeds its bound 1: the measurement and the model disagree; keep both, mark the record contested and say why",
    ),
    "KB540": Code(
        W,
        "A figure is outside the range real values of its field fall in (the schema's x-kb-plausible).",
        "records/accelerators/x.md:20:3: warning KB540 memory_bandwidth = 21 PB/s is outside the range real values fall in (100 GB/s to 30 TB/s): off-chip memory of today's accelerators; check the unit and what was measured",
    ),
    "KB530": Code(
        E,
        "A field's competing values disagree beyond its tolerance and the record is not marked contested.",
        "records/accelerators/x.md:12:5: error KB530 memory_bandwidth: 7.7 TB/s (hmc-tech) disagrees with the preferred 8 TB/s (nvidia-b200-datasheet) by more than 1%: mark the record contested ...",
    ),
    "KB531": Code(
        E,
        "A field's competing values do not have exactly one ranked preferred.",
        "records/accelerators/x.md:12:1: error KB531 memory_bandwidth: 2 values are ranked preferred; exactly one must be",
    ),
    # history
    "KB600": Code(
        E,
        "Prose still quotes a figure that a change replaced in a field (kb check --since REV, and the pre-commit path).",
        "records/interconnects/pcie-6-x16.md:14:9: error KB600 quotes 128 GB/s, the old value of interconnects/pcie-6-x16.bandwidth_per_direction (now 242 GB/s, changed since HEAD at records/interconnects/pcie-6-x16.md:10:1); quote it as {{ interconnects/pcie-6-x16.bandwidth_per_direction }} instead",
    ),
    "KB610": Code(
        E,
        "A figure in a record's own text claims one of its values and disagrees with it (no history needed).",
        "records/interconnects/x.md:14:9: error KB610 bandwidth_per_direction.note: the text says 31.5 GB/s for bandwidth_per_direction, but interconnects/x.bandwidth_per_direction is 63 GB/s: correct the text or the field; quote the field as {{ bandwidth_per_direction }} in the body, strike an old figure through (~~31.5 GB/s~~), or enter a competing figure among the field's values",
    ),
    "KB611": Code(
        W,
        'Advice, reported only when the configuration asks for it (`KB611 = "warning"` under `[severity]`): a figure typed '
        "by hand in a body is a value this record or a record it links to holds; an inline value would keep it true.",
        "records/flops/x.md:30:12: warning KB611 body: 3.35 TB/s is accelerators/nvidia-h100-sxm.memory_bandwidth (3.35 TB/s) typed by hand; write {{ accelerators/nvidia-h100-sxm.memory_bandwidth | TB/s }} so an edit to it cannot leave this stale",
    ),
    # freshness
    "KB620": Code(
        W,
        "A time-bound figure's date (a price's as_of, a measurement's published) is past its type's shelf life "
        "(the schema's x-kb-shelf-life), and no record replacing it is named in superseded_by.",
        "records/prices/x.md:15:8: warning KB620 as_of 2025-10-22 is 407 days old, past the 365-day shelf life "
        "of a price (providers revise accelerator-hour prices within a year); renew it from its source, or name "
        "the record that replaces it in superseded_by",
    ),
    "KB621": Code(
        W,
        "A case of the prediction ledger (a measurement with a ledger block) whose signed error, kb's prediction "
        "for its workload against the measured value, is outside the band the case records (or the type's "
        "x-kb-ledger band): a formula or a record changed what kb predicts for a published run. Also a case kb "
        "cannot predict, naming the record and field its prediction reads and could not: one kb refused (listed "
        "under that refusal, as KB511 is) or one that record leaves out.",
        "records/measurements/x.md:20:3: warning KB621 kb predicts 20.8 ms for this run (workloads/w, hit_ttft "
        "from storage-tiers/t), measured 61.5 ms: off by -66 %, outside the case's band of ±50 % "
        "(sources: the run's pegaflow-readme; the prediction's workload w)",
    ),
    # internal
    "KB900": Code(
        E,
        "kb itself failed; please report it with the file named.",
        "records/models/x.md:1:1: error KB900 internal error: ...",
    ),
}


@dataclass(frozen=True, kw_only=True)
class Diagnostic:
    """One finding, positioned at a file, line and column (1-based). A plain frozen dataclass: every kb
    process makes them, and a validating model library costs each process a tenth of a second to import."""

    code: str
    severity: Severity
    path: str
    line: int = 1
    column: int = 1
    message: str
    hint: str | None = None
    # The date (YYYY-MM-DD) from which the finding is reported, for one that depends on the day kb runs (a figure
    # past its shelf life, KB620): stages and the store keep every such finding with its due date, and one filter
    # (kbtools.check.freshness.reported) drops those not yet due and words the age of the others.
    due: str | None = None

    @classmethod
    def make(
        cls,
        code: str,
        path: str,
        line: int,
        column: int,
        message: str,
        hint: str | None = None,
        due: str | None = None,
    ) -> Diagnostic:
        return cls(
            code=code,
            severity=CODES[code].severity,
            path=path,
            line=max(line, 1),
            column=max(column, 1),
            message=message,
            hint=hint,
            due=due,
        )

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code, self.message)

    def as_json(self) -> dict[str, Any]:
        """The finding as JSON data (kb check --format json, the export, the memo), fields in their order."""
        return {
            "code": self.code,
            "severity": self.severity.value,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "message": self.message,
            "hint": self.hint,
            # only where there is one: every other finding's JSON stays as it was
            **({"due": self.due} if self.due is not None else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Diagnostic:
        return cls(**{**data, "severity": Severity(data["severity"])})

    def as_json_text(self) -> str:
        return json.dumps(self.as_json(), ensure_ascii=False, separators=(",", ":"))

    def with_severity(self, severity: Severity) -> Diagnostic:
        return replace(self, severity=severity)


class UsageError(Exception):
    """A request kb refuses as asked (exit 2), with the reason a user can act on. A command may catch it to
    word it; any that escapes is said in one line by the CLI's last line of defence, never as KB900."""


class KbError(Exception):
    """The one shape of a coded failure (the loader's, the units', the formulas'): raised where it is found,
    and made a Diagnostic with `at()` where its file and place are known."""

    def __init__(self, code: str, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.code, self.message, self.line, self.column = code, message, line, column

    def at(self, path: str, line: int | None = None, column: int | None = None, hint: str | None = None) -> Diagnostic:
        return Diagnostic.make(self.code, path, line or self.line or 1, column or self.column or 1, self.message, hint)


def internal_error(path: str, exc: BaseException) -> Diagnostic:
    """kb's own bug while checking one file: a KB900 there, and the other files are still checked."""
    return Diagnostic.make(
        "KB900",
        path,
        1,
        1,
        f"internal error while checking this file: {type(exc).__name__}: {exc}",
        hint="please report it with this file; the other files were checked",
    )


def render_reference(schema_dir: str = "schema") -> str:
    """The diagnostics reference page (docs/diagnostics.md): the tool's codes, then the codes the
    repository's schemas declare for their constraints (x-kb-constraints), read from `schema_dir`."""
    lines = [
        "# Diagnostics reference",
        "",
        "Every finding `kb check` reports has a stable code. Text output is one line per finding:",
        "`path:line:col: severity CODE message`, and `(hint: ...)` after it when kb has a fix to suggest",
        "(JSON keeps the hint in its own field). Errors make `kb check` exit 1; warnings do not,",
        "unless `--strict` is given. A code's severity can be changed, or the code turned off, in the",
        "knowledge base's configuration (docs/configuration.md). This page is generated from",
        "`kbtools/diagnostics.py`.",
        "",
        "| Code | Severity | Meaning | Example |",
        "|---|---|---|---|",
    ]
    for code, c in CODES.items():
        example = c.example.replace("|", "\\|")
        lines.append(f"| {code} | {c.severity.value} | {c.summary} | `{example}` |")
    constraints = _declared_constraints(schema_dir)
    if constraints:
        lines += [
            "",
            "## Constraints the schemas declare",
            "",
            "Rules written as data in the schemas (`x-kb-constraints`, and `x-kb-require` rules with a code of the",
            "project's own; see docs/records.md); each carries its own code and severity. This table is read from",
            "`schema/`.",
            "",
            "| Code | Severity | Schema | Applies to | Rule |",
            "|---|---|---|---|---|",
        ]
        for schema, rule in constraints:
            lines.append(
                f"| {rule['code']} | {rule['severity']} | `{schema}` | {rule.get('each', 'record')} | {rule['message']} |"
            )
    return "\n".join(lines) + "\n"


def _declared_constraints(schema_dir: str) -> list[tuple[str, dict]]:
    import json
    from pathlib import Path

    out: list[tuple[str, dict]] = []
    for path in sorted(Path(schema_dir).glob("*.schema.json")):
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
            rules = [*schema.get("x-kb-constraints", []), *schema.get("x-kb-require", [])]
        except (OSError, ValueError, AttributeError, TypeError):
            continue
        out.extend((path.name, r) for r in rules if isinstance(r, dict) and {"code", "severity", "message"} <= set(r))
    return out


if __name__ == "__main__":  # python -m kbtools.diagnostics > docs/diagnostics.md
    print(render_reference(), end="")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # C0, DEL, C1 (U+009B is CSI), line breaks


def one_line(text: str) -> str:
    """Control characters (a newline in a file name, an escape sequence) shown as escapes: one finding is
    one line, and nothing a record's author wrote can forge another line or drive the terminal."""
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def clipped(text: str, limit: int = 60) -> str:
    """Text a user gave (a name, a config key) as a message quotes it: one line, cut after `limit` characters."""
    shown = one_line(text)
    return shown if len(shown) <= limit else shown[:limit] + "…"
