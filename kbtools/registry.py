"""The type registry: everything the tool knows about record types comes from schema/.

A file `schema/<type>.schema.json` whose top level carries `x-kb-dir` is a record
type; the others (envelope, shared defs) are resources it may `$ref`. The kb
annotations a type's schema may carry:

- `x-kb-dir`: the directory under records/ that holds records of this type;
- `x-kb-ref: <type>` on a string schema: the value is the id of a record of that type;
- `x-kb-quantity: <unit>` on a field: a quantity whose canonical unit is <unit> (`*`: any unit);
- `x-kb-inputs: true`: named cost inputs, quantities or `dir/id` references;
- `x-kb-derive`: type-level derivations (field -> formula spec, or a list of them with `when`);
- `x-kb-costs`: cost specs (as in a record's costs block) every record of the type has, so that a kind of
  record is a calculation (a workload's plan); a cost reading a field the record leaves out does not apply;
- `x-kb-plan`: how `kb plan` lays out the type's costs: {over: the list field its per-option tables run over,
  rank_by: the per-option cost the options are ranked by (least first), verdict: the per-option ratio of two
  times it words as a verdict, limits: {cost: words} broken above 1, stages: {cost: {stage cost: words}} for a
  cost that is the least of its stages, whose slowest the plan names};
- `x-kb-new: true` on an optional field: `kb new` drafts it too (a source's `origin`);
- `x-kb-functions`: functions of a record of this type, called in formulas as `record.name(args)`
  (name -> {parameters: {name: unit}, formula, unit}): a figure that depends on an argument, such as
  a model's KV bytes at a context length;
- `x-kb-plausible` on a quantity field: {min, max, reason}, the range values of real hardware fall
  in; a value outside it is a warning (KB540) that gives the range and the reason. Each bound is a finite
  quantity of the field's kind, min at most max (else KB210, and the range checks nothing). A value an
  x-kb-derive formula that reads no field fixes for the record (0 B/token of KV for `attention: none`)
  is the schema's own statement and is not judged against it;
- `x-kb-range` on a quantity field: the values the field can take at all, {min or above, max or below,
  whole, reason} (PhysicalRange); a figure outside it is impossible (a negative count, a hit rate above 1,
  half a GPU), an error (KB405) at the figure, wherever the field's value stands: the value, each end of its
  band, each competing value, an input of the same name, a derived figure. Ill-formed, KB210;
- `x-kb-names` on a field: the words prose names it by besides its own name ("HBM bandwidth"), so
  that a sentence naming it, or a figure followed by it, is read as stating it (KB610);
- `x-kb-columns`: the fields shown in the type's index table;
- `x-kb-role`: what kb's own features take the type to be (`source`, `parameter`: see ROLES);
- `x-kb-charts`: charts the type's pages draw, e.g. `{"kind": "roofline", "bandwidth": field, "peaks": {label: field}}`;
- `x-kb-constraints`: cross-record rules of provenance, each with a code and a severity (see
  constraints.py), on a type or on the envelope (then they hold for every type); a rule's code is none of
  kb's own (diagnostics.CODES), and each condition's argument is of the type it reads (rule_problems);
- `x-kb-require`: [{any_of: [fields], code, severity, message}], a record with none of the fields gets the
  rule's code: one of kb's own for it (diagnostics.REQUIREMENT_CODES, whose severity kb sets) or, checked as a
  constraint's is, the project's own with its severity (require_problems);
- `x-kb-quotes-documents: true`: the type's bodies report what a document says, figures as printed
  (sources), so they are not asked to quote the corpus's values inline (KB611);
- `x-kb-measured-as: <shape>` on a reference field: a record of this type may cite, there, the
  measurement `kb measure` made of that shape (`kv-prefix`, `kv-scattered`), and kb measure says so;
- `x-kb-shelf-life`: how long a record's time-bound figures stay current, {field: a date field, days, reason}
  (or a list of them with `when`, matched as x-kb-derive's are): a record whose date is older is KB620, unless
  it names the record that replaces it in `superseded_by` (check/freshness.py).

Adding a record type is adding a schema file (and its directory): no Python edit.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

from kbtools.config import CODE
from kbtools.diagnostics import CODES, REQUIREMENT_CODES, Diagnostic
from kbtools.files import MAX_SCHEMA_BYTES, NotReadable, read_regular_file
from kbtools.lang.units import (
    QuantityError,
    describe_dimension,
    format_number,
    format_quantity,
    magnitude_in,
    parse_quantity_text,
    parse_unit,
)

if TYPE_CHECKING:
    import jsonschema_rs


@dataclass(frozen=True)
class PhysicalRange:
    """x-kb-range on a quantity field: the values it can take at all. A figure outside them is impossible (a
    negative count of GPUs, a hit rate above 1, half a GPU): an error wherever it stands, where a figure outside
    x-kb-plausible's range of real hardware is only unusual. Ends are magnitudes in the field's canonical unit."""

    unit: str  # the field's canonical unit; '*' (any unit) is bounded by 0 alone, which is 0 in every unit
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # `above`: the low end itself is impossible too
    high_open: bool = False  # `below`
    whole: bool = False  # a count: a whole number of the canonical unit
    reason: str = ""

    def allows(self, quantity: Any) -> bool:
        """Whether a figure of the field (a pint Quantity) can be; one of another kind is not judged here (its
        unit is the finding, KB402)."""
        try:
            magnitude = float(quantity.magnitude) if self.unit == "*" else magnitude_in(quantity, self.unit)
        except Exception:  # pint's DimensionalityError: not a figure of this field's kind
            return True
        if self.low is not None and (magnitude <= self.low if self.low_open else magnitude < self.low):
            return False
        if self.high is not None and (magnitude >= self.high if self.high_open else magnitude > self.high):
            return False
        # a count converted from another unit (800 % of one) may carry a float's last-digit error
        return not self.whole or abs(magnitude - round(magnitude)) <= 1e-9 * max(1.0, abs(magnitude))

    def words(self) -> str:
        """What the field can be, as a message says it: 'a whole number, at least 1', 'from 0 to 1'."""
        low = self._end(self.low, "above" if self.low_open else "at least")
        high = self._end(self.high, "below" if self.high_open else "at most")
        if low and high and not (self.low_open or self.high_open):
            span = f"from {self._shown(self.low)} to {self._shown(self.high)}"
        else:
            span = " and ".join(part for part in (low, high) if part)
        return ", ".join(part for part in ("a whole number" if self.whole else "", span) if part)

    def _end(self, magnitude: float | None, relation: str) -> str:
        return f"{relation} {self._shown(magnitude)}" if magnitude is not None else ""

    def _shown(self, magnitude: float | None) -> str:
        number = format_number(magnitude or 0.0)
        return number if magnitude == 0 or self.unit in ("1", "*") else f"{number} {self.unit}"


@dataclass
class FieldPlan:
    """What the schema says about one position in a record: merged over allOf/oneOf/$ref."""

    ref_types: tuple[str, ...] = ()
    quantity: str | None = None
    inputs: bool = False
    plausible: dict | None = None  # x-kb-plausible: {min, max, reason}, the range real values fall in
    physical: PhysicalRange | None = None  # x-kb-range: the values it can take at all
    names: tuple[str, ...] = ()  # x-kb-names: the words prose names the field by, besides its own name
    properties: dict[str, FieldPlan] = field(default_factory=dict)
    additional: FieldPlan | None = None
    items: FieldPlan | None = None

    def child(self, key: str | int) -> FieldPlan | None:
        if isinstance(key, int):
            return self.items
        return self.properties.get(key) or self.additional

    def merge(self, other: FieldPlan) -> None:
        self.ref_types = tuple(dict.fromkeys(self.ref_types + other.ref_types))
        self.quantity = self.quantity or other.quantity
        self.inputs = self.inputs or other.inputs
        self.plausible = self.plausible or other.plausible
        self.physical = self.physical or other.physical
        self.names = tuple(dict.fromkeys(self.names + other.names))
        for name, plan in other.properties.items():
            if name in self.properties:
                self.properties[name].merge(plan)
            else:
                self.properties[name] = plan
        for attr in ("additional", "items"):
            theirs = getattr(other, attr)
            if theirs is not None:
                mine = getattr(self, attr)
                if mine is None:
                    setattr(self, attr, theirs)
                else:
                    mine.merge(theirs)


# Keywords jsonschema-rs judges otherwise than Python jsonschema, so its compiled validator asks Python for
# them: a pattern is Python's `re` dialect (its `$` also matches before a final newline, `\d` and `\w` are
# Unicode, `\s` is not U+FEFF), multipleOf of a float is Python's float division (0.07 is no multiple of
# 0.01 there), and a format is checked by Python's own functions (rfc3986-validator's uri; "a@" is an
# email) or, where Python has none (date-time without rfc3339-validator), not at all.
PYTHON_KEYWORDS = ("format", "pattern", "multipleOf")


def _python_keyword(keyword: str) -> type:
    """A jsonschema-rs keyword that Python jsonschema judges, as a schema of that one keyword."""

    class PythonKeyword:
        def __init__(self, parent_schema: dict[str, Any], value: Any, schema_path: list[str | int]) -> None:
            schema = {keyword: value}
            self.is_valid = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER).is_valid

        def validate(self, instance: Any) -> None:
            if not self.is_valid(instance):  # the message is never shown: Python validates a failing record again
                raise ValueError(f"fails {keyword}")

    return PythonKeyword


def _has_key(schema: Any, key: str) -> bool:
    """Whether `key` is a key of some object in `schema` (a property of that name counts too: it only costs speed)."""
    if isinstance(schema, dict):
        return key in schema or any(_has_key(value, key) for value in schema.values())
    return isinstance(schema, list) and any(_has_key(item, key) for item in schema)


@dataclass
class RecordType:
    name: str
    dir: str
    title: str
    schema_path: str
    schema: dict[str, Any]
    resolver: Any
    plan: FieldPlan
    property_order: tuple[str, ...]
    # x-kb-constraints of the type and of the schemas it allOf-$refs (the envelope's)
    constraints: tuple[dict, ...] = ()
    # the fields of the whole schemas its allOf $refs: the envelope every record has
    envelope: tuple[str, ...] = ()
    # x-kb-shelf-life as a list of specs {field, days, when?, reason?}; empty when the type has none or it is
    # ill-formed (then KB210 at the schema, and no record is judged by half of it)
    shelf_life: tuple[dict, ...] = ()
    # x-kb-require's well-formed rules; an ill-formed one is KB210 at the schema and judges no record
    require: tuple[dict, ...] = ()

    @cached_property
    def inlined_schema(self) -> Any:
        """The schema with every $ref inlined: the same meaning (a $ref is an in-place applicator, like
        allOf), but no URI resolution per record, which was most of the validation time."""
        return inline_refs(self.schema, self.resolver)

    @cached_property
    def validator(self) -> Draft202012Validator:
        """Built on first use (a warm run validates nothing); its errors are kb's messages."""
        return Draft202012Validator(self.inlined_schema, format_checker=Draft202012Validator.FORMAT_CHECKER)

    @cached_property
    def fast_validator(self) -> jsonschema_rs.Validator | None:
        """The same schema compiled by jsonschema-rs, several times faster: a record it accepts is one
        `validator` finds no error in, so only a failing record needs `validator` (for its messages). None
        where the wheel is missing or cannot compile the schema: then `validator` judges every record."""
        try:
            import jsonschema_rs
        except ImportError:
            return None
        if _has_key(self.inlined_schema, "patternProperties"):
            return None  # regexes jsonschema-rs would match in its own dialect, with no keyword to hand to Python
        try:
            return jsonschema_rs.Draft202012Validator(
                self.inlined_schema,
                validate_formats=True,
                keywords={keyword: _python_keyword(keyword) for keyword in PYTHON_KEYWORDS},
            )
        except Exception:  # anything it cannot compile (an error of its own or a schema it rejects)
            return None

    @property
    def derive(self) -> dict[str, Any]:
        return self.schema.get("x-kb-derive", {})

    @property
    def costs(self) -> dict[str, Any]:
        """x-kb-costs: cost specs every record of the type has (its own costs block adds to them, or
        overrides one by name); a cost that reads a field the record leaves out does not apply to it."""
        costs = self.schema.get("x-kb-costs", {})
        return costs if isinstance(costs, dict) else {}

    @property
    def planning(self) -> dict[str, Any]:
        """x-kb-plan: {over, rank_by, verdict}, how `kb plan` lays out and ranks the type's costs; {} for a type
        kb plan does not plan with."""
        spec = self.schema.get("x-kb-plan", {})
        return spec if isinstance(spec, dict) else {}

    @property
    def functions(self) -> dict[str, Any]:
        """x-kb-functions: name -> {parameters: {name: unit}, formula, unit}; called as record.name(args)."""
        functions = self.schema.get("x-kb-functions", {})
        return functions if isinstance(functions, dict) else {}

    @property
    def columns(self) -> list[str]:
        return self.schema.get("x-kb-columns", [])

    @property
    def role(self) -> str | None:
        """x-kb-role: what kb's own features take this type to be (ROLES); None for a plain type."""
        role = self.schema.get("x-kb-role")
        return role if isinstance(role, str) else None

    @property
    def charts(self) -> list[dict[str, Any]]:
        """x-kb-charts: the charts its pages draw, e.g. a roofline from a bandwidth and peak fields."""
        charts = self.schema.get("x-kb-charts", [])
        return [c for c in charts if isinstance(c, dict)] if isinstance(charts, list) else []

    def chart(self, kind: str) -> dict[str, Any] | None:
        return next((c for c in self.charts if c.get("kind") == kind), None)

    @property
    def measured_as(self) -> dict[str, str]:
        """x-kb-measured-as: shape of a kb measure figure -> the reference field that cites it."""
        properties = self.schema.get("properties", {})
        return {
            spec["x-kb-measured-as"]: name
            for name, spec in (properties.items() if isinstance(properties, dict) else ())
            if isinstance(spec, dict) and isinstance(spec.get("x-kb-measured-as"), str)
        }

    @property
    def quotes_documents(self) -> bool:
        """x-kb-quotes-documents: its bodies report what a document says (a source's), so a figure there
        is the document's as printed, not a value of the corpus to quote inline (KB611 skips them)."""
        return self.schema.get("x-kb-quotes-documents") is True


@dataclass
class TypeRegistry:
    types: dict[str, RecordType]
    diagnostics: list[Diagnostic]
    # digests of the schema texts that met the meta-schema, for a store to vouch for them next time
    meta_checked: frozenset[bytes] = frozenset()

    @cached_property
    def rule_codes(self) -> frozenset[str]:
        """The codes the schemas' own rules report (x-kb-constraints, x-kb-require), beside kb's own."""
        rules = (rule for t in self.types.values() for rule in (*t.constraints, *t.require))
        return frozenset(str(rule.get("code", DEFAULT_REQUIRE_CODE)) for rule in rules)

    @cached_property
    def envelope_fields(self) -> tuple[str, ...]:
        """The fields every record type shares (envelope.schema.json's), in schema order."""
        return tuple(dict.fromkeys(f for t in self.types.values() for f in t.envelope))

    def by_dir(self, directory: str) -> RecordType | None:
        for record_type in self.types.values():
            if record_type.dir == directory:
                return record_type
        return None

    def with_role(self, role: str) -> RecordType | None:
        """The type that plays a role (the registry allows one per role)."""
        return next((t for t in self.types.values() if t.role == role), None)

    def has_role(self, type_name: str | None, role: str) -> bool:
        record_type = self.types.get(type_name) if type_name else None
        return record_type is not None and record_type.role == role

    @property
    def dirs(self) -> list[str]:
        return sorted(t.dir for t in self.types.values())


SCHEMA_SUFFIX = ".schema.json"
DIALECTS = ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#")
# x-kb-dir names one directory under records/; the site writes pages under the same name
DIR_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
TOO_DEEP = "the schema nests too deeply to check (hundreds of levels): no record's shape needs that many"


def _line_of(text: str, *needles: str | re.Pattern[str]) -> int:
    """The line of the last needle found, each searched after the one before (a key inside a key)."""
    start = found = -1
    for needle in needles:
        if isinstance(needle, str):
            index = text.find(needle, max(start, 0))
        else:
            match = needle.search(text, max(start, 0))
            index = match.start() if match else -1
        if index >= 0:
            start = found = index
    return text.count("\n", 0, found) + 1 if found >= 0 else 1


def _key(name: str, value: str | None = None) -> re.Pattern[str]:
    """A JSON object's key (not the same word as a value in a list), with its value when given."""
    return re.compile(re.escape(json.dumps(name)) + r"\s*:" + (r"\s*" + re.escape(json.dumps(value)) if value else ""))


_META_CHECKED: set[bytes] = set()  # digests of schema texts this process found valid against the meta-schema


def _check_schema_once(text: str, contents: dict[str, Any], vouched: frozenset[bytes]) -> bytes:
    """The meta-schema check (raises SchemaError) of a schema text, once: it is a pure function of the text and
    a tenth of a second for kb's schemas. Skipped for a text this process found valid before (kb serve, a test
    session load the same schemas again and again) and for one the store vouches met it (its digest is among
    `vouched`). Only a text that passed is ever vouched for, so a broken schema is checked, and reported,
    on every run. Returns the text's digest."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
    if digest not in _META_CHECKED and digest not in vouched:
        Draft202012Validator.check_schema(contents)
        _META_CHECKED.add(digest)
    return digest


def load_registry(schema_dir: Path, root: Path, vouched: frozenset[bytes] = frozenset()) -> TypeRegistry:
    """Read every schema file; a broken one is a KB210 diagnostic, never an exception.

    vouched: digests of schema texts that an earlier run's store records as having met the meta-schema, so
    that check, a noticeable part of a warm run in a fresh process, is skipped for them."""
    diagnostics: list[Diagnostic] = []
    documents: dict[str, tuple[Path, str, dict[str, Any]]] = {}
    checked: set[bytes] = set()
    for path in sorted(schema_dir.glob(f"*{SCHEMA_SUFFIX}")):
        rel = path.relative_to(root).as_posix()
        try:
            raw, _ = read_regular_file(path, MAX_SCHEMA_BYTES)
            text = raw.decode("utf-8")
            contents = json.loads(text)
        except NotReadable as exc:
            diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, f"schema file: {exc}"))
            continue
        except OSError as exc:
            diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, f"cannot read schema file: {exc.strerror or exc}"))
            continue
        except UnicodeDecodeError as exc:
            diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, f"schema file is not UTF-8: {exc.reason}"))
            continue
        except json.JSONDecodeError as exc:
            diagnostics.append(
                Diagnostic.make("KB210", rel, exc.lineno, exc.colno, f"schema file is not valid JSON: {exc.msg}")
            )
            continue
        except RecursionError:
            diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, TOO_DEEP))
            continue
        if not isinstance(contents, dict):
            diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, "a schema file must hold a JSON object"))
            continue
        try:
            checked.add(_check_schema_once(text, contents, vouched))
        except SchemaError as exc:
            key = next((str(p) for p in reversed(exc.absolute_path) if isinstance(p, str)), "")
            diagnostics.append(
                Diagnostic.make(
                    "KB210", rel, _line_of(text, f'"{key}"') if key else 1, 1, f"invalid JSON Schema: {exc.message}"
                )
            )
            continue
        except RecursionError:  # the meta-schema check descends once per level of nesting
            diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, TOO_DEEP))
            continue
        if contents.get("$schema") not in DIALECTS:
            diagnostics.append(
                Diagnostic.make(
                    "KB210",
                    rel,
                    _line_of(text, '"$schema"') if "$schema" in contents else 1,
                    1,
                    f'a schema must declare "$schema": "{DIALECTS[0]}" (kb validates with '
                    f"JSON Schema 2020-12), not {json.dumps(contents.get('$schema'))}",
                )
            )
            continue
        identity = contents.get("$id")
        if isinstance(identity, str) and not urlsplit(identity).scheme:
            first_ref = next(iter(sorted(set(re.findall(r'"\$ref":\s*"([^"#]+)', text)))), "")
            looked_for = f" would look for {first_ref} in their working directory" if first_ref else " resolve it"
            diagnostics.append(
                Diagnostic.make(
                    "KB211",
                    rel,
                    _line_of(text, '"$id"'),
                    1,
                    f"$id {json.dumps(identity)} is relative: check-jsonschema and editors{looked_for}; "
                    "remove $id (the file's own location is then the base of its $refs) or make it absolute",
                )
            )
        documents[path.name] = (path, text, contents)

    resources = []
    for name, (_, _, contents) in documents.items():
        resources.append((name, Resource.from_contents(contents)))
        if isinstance(contents.get("$id"), str) and contents["$id"] != name:
            resources.append((contents["$id"], Resource.from_contents(contents)))
    registry: Registry = Registry().with_resources(resources)

    types: dict[str, RecordType] = {}
    for name, (path, text, contents) in documents.items():
        directory = contents.get("x-kb-dir")
        if directory is None:
            if "x-kb-shelf-life" in contents:  # on a shared resource it would judge nothing, in silence
                diagnostics.append(
                    Diagnostic.make(
                        "KB210",
                        path.relative_to(root).as_posix(),
                        _line_of(text, '"x-kb-shelf-life"'),
                        1,
                        "x-kb-shelf-life belongs on a record type's schema (one with x-kb-dir), where its date "
                        "field is; here it applies to nothing",
                    )
                )
            continue  # a shared resource, not a record type
        rel = path.relative_to(root).as_posix()
        type_name = name[: -len(SCHEMA_SUFFIX)]
        if not isinstance(directory, str) or not DIR_PATTERN.match(directory):
            diagnostics.append(
                Diagnostic.make(
                    "KB210",
                    rel,
                    _line_of(text, '"x-kb-dir"'),
                    1,
                    f"x-kb-dir must be one directory name under records/ (matching {DIR_PATTERN.pattern}), "
                    f"not {json.dumps(directory)}",
                )
            )
            continue
        try:
            plan = compile_plan(contents, registry.resolver(base_uri=contents.get("$id", name)))
        except (Unresolvable, RecursionError) as exc:
            diagnostics.append(Diagnostic.make("KB210", rel, _line_of(text, '"$ref"'), 1, f"unresolvable $ref: {exc}"))
            continue
        resolver = registry.resolver(base_uri=contents.get("$id", name))
        shelf_life: tuple[dict, ...] = ()
        if "x-kb-shelf-life" in contents:
            problems = shelf_life_problems(
                contents["x-kb-shelf-life"], _date_fields(contents, resolver), set(plan.properties), type_name
            )
            line = _line_of(text, '"x-kb-shelf-life"')
            diagnostics.extend(Diagnostic.make("KB210", rel, line, 1, f"x-kb-shelf-life: {p}") for p in problems)
            if not problems:
                raw = contents["x-kb-shelf-life"]
                shelf_life = tuple(raw if isinstance(raw, list) else [raw])
        require: list[dict] = []
        for rule in _declared(contents, "x-kb-require"):
            problems = require_problems(rule, set(plan.properties), type_name)
            line = _line_of(text, '"x-kb-require"', *([_key("code", rule["code"])] if _has_code(rule) else []))
            diagnostics.extend(Diagnostic.make("KB210", rel, line, 1, f"x-kb-require: {p}") for p in problems)
            if not problems:
                require.append(rule)
        types[type_name] = RecordType(
            name=type_name,
            dir=directory,
            title=str(contents.get("title", type_name)),
            schema_path=rel,
            schema=contents,
            resolver=resolver,
            plan=plan,
            property_order=tuple(_property_order(contents, resolver)),
            constraints=_constraints(contents, resolver),
            envelope=tuple(_shared_fields(contents, resolver)),
            shelf_life=shelf_life,
            require=tuple(require),
        )

    seen_dirs: dict[str, str] = {}
    for record_type in list(types.values()):
        if record_type.dir in seen_dirs:
            text = documents[Path(record_type.schema_path).name][
                1
            ]  # the file's own text: its lines, not one dumped line
            diagnostics.append(
                Diagnostic.make(
                    "KB210",
                    record_type.schema_path,
                    _line_of(text, '"x-kb-dir"'),
                    1,
                    f"directory '{record_type.dir}' is already the directory of type '{seen_dirs[record_type.dir]}'",
                )
            )
            del types[record_type.name]
        else:
            seen_dirs[record_type.dir] = record_type.name
    diagnostics.extend(_check_ref_annotations(types, documents, root))
    diagnostics.extend(_check_constraint_annotations(documents, root))
    diagnostics.extend(_check_field_annotations(documents, root, "x-kb-plausible", plausible_problems))
    diagnostics.extend(_check_field_annotations(documents, root, "x-kb-range", lambda s, u: physical_range(s, u)[1]))
    diagnostics.extend(_check_roles_and_charts(types, documents))
    return TypeRegistry(types=types, diagnostics=diagnostics, meta_checked=frozenset(checked))


# The roles kb's own features hang on: a feature never names a type, it asks for the type with a role.
ROLES = {
    "source": "the documents records cite: KB307 (cited by nothing), KB310 (one document twice), kb new --source",
    "parameter": "hardware parameters: param() in formulas, KB510/KB511, parameter charts; reads carried_by and dimension",
    "measurement": "what kb measure writes: metric, value, conditions, measured_by, published, and the tiers it names",
}
CHART_KINDS = {"roofline": ("bandwidth", "peaks")}  # chart kind -> the keys naming fields


def _check_roles_and_charts(types: dict[str, RecordType], documents: dict) -> list[Diagnostic]:
    out = []
    players: dict[str, str] = {}
    for record_type in types.values():
        text = documents[Path(record_type.schema_path).name][1]
        raw = record_type.schema.get("x-kb-role")
        if raw is not None and raw not in ROLES:
            out.append(
                Diagnostic.make(
                    "KB210",
                    record_type.schema_path,
                    _line_of(text, '"x-kb-role"'),
                    1,
                    f"x-kb-role {json.dumps(raw)} is not a role kb knows ({', '.join(ROLES)})",
                )
            )
        elif raw is not None and raw in players:
            out.append(
                Diagnostic.make(
                    "KB210",
                    record_type.schema_path,
                    _line_of(text, '"x-kb-role"'),
                    1,
                    f"x-kb-role '{raw}' is already the role of type '{players[raw]}'; one type plays a role",
                )
            )
        elif raw is not None:
            players[raw] = record_type.name
        for chart in (
            record_type.schema.get("x-kb-charts", []) if isinstance(record_type.schema.get("x-kb-charts"), list) else []
        ):
            kind = chart.get("kind") if isinstance(chart, dict) else None
            if kind not in CHART_KINDS:
                out.append(
                    Diagnostic.make(
                        "KB210",
                        record_type.schema_path,
                        _line_of(text, '"x-kb-charts"'),
                        1,
                        f"x-kb-charts: chart kind {json.dumps(kind)} is not one kb draws ({', '.join(CHART_KINDS)})",
                    )
                )
                continue
            named = [chart.get("bandwidth")] + list((chart.get("peaks") or {}).values())
            for field_name in named:
                plan = record_type.plan.properties.get(field_name) if isinstance(field_name, str) else None
                if plan is None or plan.quantity is None:
                    out.append(
                        Diagnostic.make(
                            "KB210",
                            record_type.schema_path,
                            _line_of(text, '"x-kb-charts"'),
                            1,
                            f"x-kb-charts: {json.dumps(field_name)} is not a quantity field of {record_type.name}",
                        )
                    )
    return out


def _check_ref_annotations(types: dict[str, RecordType], documents: dict, root: Path) -> list[Diagnostic]:
    """An x-kb-ref must name a type that exists, or every reference to it would dangle."""
    out = []
    for path, text, contents in documents.values():
        for target in _find_ref_annotations(contents):
            if target not in types:
                out.append(
                    Diagnostic.make(
                        "KB210",
                        path.relative_to(root).as_posix(),
                        _line_of(text, f'"x-kb-ref": "{target}"'),
                        1,
                        f"x-kb-ref names unknown record type '{target}' (known: {', '.join(sorted(types))})",
                    )
                )
    return out


def _find_ref_annotations(node: Any):
    if isinstance(node, dict):
        refs = node.get("x-kb-ref")
        if isinstance(refs, str):
            yield refs
        elif isinstance(refs, list):
            yield from (r for r in refs if isinstance(r, str))
        for value in node.values():
            yield from _find_ref_annotations(value)
    elif isinstance(node, list):
        for value in node:
            yield from _find_ref_annotations(value)


def inline_refs(schema: Any, resolver, depth: int = 0) -> Any:
    """The schema with each {"$ref": X, ...} replaced by {"allOf": [X resolved], ...}."""
    if depth > 40:
        raise RecursionError("schema $refs nest too deeply (a recursive schema?)")
    if isinstance(schema, list):
        return [inline_refs(item, resolver, depth + 1) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        key: inline_refs(value, resolver, depth + 1)
        for key, value in schema.items()
        if key not in ("$ref", "$id", "$schema", "$defs")
    }
    if isinstance(schema.get("$ref"), str):
        resolved = resolver.lookup(schema["$ref"])
        out["allOf"] = [inline_refs(resolved.contents, resolved.resolver, depth + 1)] + out.get("allOf", [])
    return out


def compile_plan(schema: Any, resolver, depth: int = 0) -> FieldPlan:
    """Flatten a schema's kb annotations into a tree that mirrors the record's shape."""
    plan = FieldPlan()
    if not isinstance(schema, dict) or depth > 40:
        return plan
    refs = schema.get("x-kb-ref")
    if isinstance(refs, str):
        plan.ref_types = (refs,)
    elif isinstance(refs, list):
        plan.ref_types = tuple(r for r in refs if isinstance(r, str))
    if isinstance(schema.get("x-kb-quantity"), str):
        plan.quantity = schema["x-kb-quantity"]
    plan.inputs = bool(schema.get("x-kb-inputs"))
    if isinstance(schema.get("x-kb-plausible"), dict) and not plausible_problems(
        schema["x-kb-plausible"], schema.get("x-kb-quantity")
    ):
        plan.plausible = schema["x-kb-plausible"]  # a refused range is the registry's KB210, and checks nothing
    if "x-kb-range" in schema:
        plan.physical, _ = physical_range(schema["x-kb-range"], schema.get("x-kb-quantity"))  # None when refused
    if isinstance(schema.get("x-kb-names"), list):
        plan.names = tuple(n for n in schema["x-kb-names"] if isinstance(n, str) and n.strip())
    if isinstance(schema.get("$ref"), str):
        resolved = resolver.lookup(schema["$ref"])
        plan.merge(compile_plan(resolved.contents, resolved.resolver, depth + 1))
    for keyword in ("allOf", "oneOf", "anyOf"):
        for sub in schema.get(keyword, []) or []:
            plan.merge(compile_plan(sub, resolver, depth + 1))
    for name, sub in (schema.get("properties") or {}).items():
        child = compile_plan(sub, resolver, depth + 1)
        if name in plan.properties:
            plan.properties[name].merge(child)
        else:
            plan.properties[name] = child
    if isinstance(schema.get("additionalProperties"), dict):
        plan.additional = compile_plan(schema["additionalProperties"], resolver, depth + 1)
    if isinstance(schema.get("items"), dict):
        plan.items = compile_plan(schema["items"], resolver, depth + 1)
    return plan


CONDITION_KEYS = ("present", "same_url_as", "within_url_of", "in")  # the condition objects x-kb-constraints knows
# what each condition object's argument is: a boolean, or the name of one of the record's fields
CONDITION_ARGUMENTS = {
    "present": "true or false",
    "same_url_as": "the name of a URL field",
    "within_url_of": "the name of a URL field",
    "in": "the name of a list field",
}


def _json_kind(value: Any) -> str:
    """What a JSON value is, in the words of a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float) and math.isnan(value):  # Python's json reads NaN, which equals nothing
        return "NaN"
    return {str: "a string", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def _is_plain(value: Any) -> bool:
    """A value a condition compares a field with: a string, a boolean or a finite number."""
    return isinstance(value, (str, bool, int)) or (isinstance(value, float) and math.isfinite(value))


def condition_problem(condition: Any) -> str | None:
    """What is wrong with one condition of a rule (None when it is well-formed): each argument is of the type
    its condition reads, so applying the rule to any record cannot fail."""
    if isinstance(condition, dict):
        if len(condition) != 1 or next(iter(condition)) not in CONDITION_KEYS:
            return "a condition object is one of " + ", ".join(f"{{{k}: ...}}" for k in CONDITION_KEYS)
        ((kind, argument),) = condition.items()
        wanted = CONDITION_ARGUMENTS[kind]
        fits = isinstance(argument, bool) if kind == "present" else isinstance(argument, str) and argument.strip()
        return None if fits else f'{{"{kind}": ...}} takes {wanted}, not {_json_kind(argument)}'
    if isinstance(condition, list):
        if not condition:
            return "a list of values names at least one (an empty list matches nothing)"
        odd = next((value for value in condition if not _is_plain(value)), None)
        return None if odd is None else f"a list of values holds strings, numbers or booleans, not {_json_kind(odd)}"
    if not _is_plain(condition):
        return f"a value to equal is a string, a number or a boolean, not {_json_kind(condition)}"
    return None


def rule_problems(rule: Any) -> list[str]:
    """What is wrong with one x-kb-constraints rule (empty when it is well-formed); the registry reports these."""
    if not isinstance(rule, dict):
        return ["a constraint is an object"]
    problems = rule_code_problems(rule, "constraint")
    code = rule.get("code")
    if not isinstance(rule.get("message"), str) or not rule["message"].strip():
        problems.append(f"constraint {code}: a message saying what the rule asks")
    each = rule.get("each", "record")
    if not (isinstance(each, str) and each.strip()):
        problems.append(f"constraint {code}: each is 'record', 'quantity' or a list field's name")
    if not any(k in rule for k in ("require", "cites")):
        problems.append(f"constraint {code}: asks nothing (give require or cites)")
    for part in ("when", "require", "cites"):
        conditions = rule.get(part, {})
        if not isinstance(conditions, dict):
            problems.append(f"constraint {code}: {part} maps fields to conditions")
            continue
        for name, condition in conditions.items():
            problem = condition_problem(condition)
            if problem:
                problems.append(f"constraint {code}: {part}.{name}: {problem}")
    return problems


def rule_code_problems(rule: dict[str, Any], kind: str, own: frozenset[str] = frozenset()) -> list[str]:
    """What is wrong with the code and severity of a rule a schema declares (a constraint, a requirement): its
    finding carries that code and severity, so the code is one kb does not define (or, for a kind of rule kb
    has codes for, one of `own`, whose severity kb sets), and a project's code comes with its severity."""
    code = rule.get("code")
    if isinstance(code, str) and code in own:
        if "severity" in rule:  # one code, one severity: kb.toml changes it for every finding of the code
            return [f"{kind} {code}: {code} is kb's own, whose severity kb sets (kb.toml's [severity] changes it)"]
        return []
    problems = []
    if not (isinstance(code, str) and CODE.match(code)):
        problems.append(f"{kind} code {code!r} is not like 'KB561' (two capital letters and three digits)")
    elif code in CODES:
        # a rule's finding must never pass for kb's own: KB900 would read as a bug in kb, KB120 as a settings mistake
        problems.append(
            f"{kind} code '{code}' is kb's own (docs/diagnostics.md); a rule takes a code kb does not "
            "define, best with the project's own two letters (XY561)"
            + (f", or one of kb's codes for this kind of rule ({', '.join(sorted(own))})" if own else "")
        )
    if rule.get("severity") not in ("error", "warning"):
        problems.append(f"{kind} {code}: severity is 'error' or 'warning', not {rule.get('severity')!r}")
    return problems


REQUIRE_KEYS = ("any_of", "code", "severity", "message")
DEFAULT_REQUIRE_CODE = "KB202"  # a rule that names no code reports what a missing required field does


def require_problems(rule: Any, fields: set[str], type_name: str) -> list[str]:
    """What is wrong with one x-kb-require rule {any_of, code, severity, message} of a type whose fields are
    `fields` (empty when it is sound). Before: a code kb does not define failed every record it judged (KB900, a
    KeyError), and one of kb's own (KB900, KB120) passed the rule's finding off as kb's."""
    if not isinstance(rule, dict):
        return [f"a rule is an object {{{', '.join(REQUIRE_KEYS)}}}, not {_json_kind(rule)}"]
    code = rule.get("code", DEFAULT_REQUIRE_CODE)
    problems = [
        f"unknown key {json.dumps(key)} (known: {', '.join(REQUIRE_KEYS)})" for key in rule if key not in REQUIRE_KEYS
    ]
    problems.extend(rule_code_problems({**rule, "code": code}, "rule", REQUIREMENT_CODES))
    any_of = rule.get("any_of")
    if not (isinstance(any_of, list) and any_of and all(isinstance(name, str) for name in any_of)):
        problems.append(f"rule {code}: any_of lists the fields a record needs one of, not {_json_kind(any_of)}")
    else:
        problems.extend(
            f"rule {code}: any_of: '{name}' is not a field of {type_name}" for name in any_of if name not in fields
        )
    if "message" in rule and not (isinstance(rule["message"], str) and rule["message"].strip()):
        problems.append(f"rule {code}: message is a sentence saying what the record needs")
    return problems


def _has_code(rule: Any) -> bool:
    return isinstance(rule, dict) and isinstance(rule.get("code"), str)


def _declared(document: dict[str, Any], key: str) -> list[Any]:
    """The rules a schema declares under `key`, a list of them or one alone."""
    declared = document.get(key, [])
    return declared if isinstance(declared, list) else [declared]


def _declared_rules(document: dict[str, Any]) -> list[Any]:
    return _declared(document, "x-kb-constraints")


def _check_constraint_annotations(documents: dict, root: Path) -> list[Diagnostic]:
    """Each ill-formed rule once, at its own schema file and line (an envelope's rule holds for every type)."""
    out: list[Diagnostic] = []
    for path, text, contents in documents.values():
        start = max(text.find('"x-kb-constraints"'), 0)
        for rule in _declared_rules(contents):
            code = rule.get("code") if isinstance(rule, dict) else None
            found = _key("code", code).search(text, start) if isinstance(code, str) else None
            start = found.start() if found else start  # rules in order: two of one code are each at its own line
            out.extend(
                Diagnostic.make(
                    "KB210",
                    path.relative_to(root).as_posix(),
                    text.count("\n", 0, start) + 1,
                    1,
                    f"x-kb-constraints: {problem}",
                )
                for problem in rule_problems(rule)
            )
            start += 1
    return out


def _constraints(schema: dict[str, Any], resolver) -> tuple[dict, ...]:
    """The well-formed x-kb-constraints rules of a type: its own and those of the whole-schema $refs in
    its allOf (so the envelope's rules hold for every type); the others are KB210 at their own file."""
    sources = [schema]
    for sub in schema.get("allOf", []):
        if isinstance(sub, dict) and isinstance(sub.get("$ref"), str) and "#" not in sub["$ref"]:
            sources.insert(0, resolver.lookup(sub["$ref"]).contents)
    return tuple(rule for document in sources for rule in _declared_rules(document) if not rule_problems(rule))


PLAUSIBLE_KEYS = ("min", "max", "reason")


def plausible_problems(spec: Any, unit: Any) -> list[tuple[str, str]]:
    """What is wrong with an x-kb-plausible range on a field of canonical `unit`, as (the text to find it by,
    problem): each bound a finite quantity of the field's kind, and min at most max. Empty when it is sound."""
    if not isinstance(spec, dict):
        return [("", f"is an object {{min, max, reason}}, not {_json_kind(spec)}")]
    problems = [
        (f'"{key}"', f"unknown key '{key}' (known: {', '.join(PLAUSIBLE_KEYS)})")
        for key in spec
        if key not in PLAUSIBLE_KEYS
    ]
    if "reason" in spec and not isinstance(spec["reason"], str):
        problems.append(('"reason"', f"reason is a sentence, not {_json_kind(spec['reason'])}"))
    if "min" not in spec and "max" not in spec:
        problems.append(("", "gives neither min nor max"))
    try:
        expected = parse_unit(unit) if isinstance(unit, str) and unit != "*" else None
    except QuantityError:
        expected = None  # the field's own unit is wrong: a finding of its own, not the range's
    bounds = {}
    for key in ("min", "max"):
        if key not in spec:
            continue
        bound = spec[key]
        shown = json.dumps(bound) if _is_plain(bound) else ""
        if not isinstance(bound, str):
            said = f"{shown} is {_json_kind(bound)}" if shown else f"is {_json_kind(bound)}"
            problems.append((shown, f"{key} {said}: write a quantity with its unit as a string ('2 TB')"))
            continue
        quantity, problem = _quantity_bound(key, bound, unit, expected)
        if problem:
            problems.append((shown, problem))
            continue
        bounds[key] = (shown, quantity)
    if len(bounds) == 2:
        (where, low), (_, high) = bounds["min"], bounds["max"]
        if not low.is_compatible_with(high):
            problems.append((where, "min and max are quantities of different kinds"))
        elif low > high:
            problems.append(
                (where, f"min {format_quantity(low)} is above max {format_quantity(high)}: the range is empty")
            )
    return problems


def _quantity_bound(key: str, bound: str, unit: Any, expected: Any) -> tuple[Any, str | None]:
    """A range's bound written as a quantity ('2 TB'): (its quantity, None), or (None, what is wrong with it): it
    is a finite quantity, of the field's kind when the field's unit is known (`expected`)."""
    try:
        quantity = parse_quantity_text(bound, None)
    except QuantityError as exc:  # its message quotes the bound, or names the unit it does not know
        return None, f"{key} {exc.message}" if exc.message.startswith("'") else f"{key} '{bound}': {exc.message}"
    if expected is not None and not quantity.is_compatible_with(expected):
        return None, (
            f"{key} '{bound}' is {describe_dimension(quantity.dimensionality)}, but the field is "
            f"{describe_dimension(expected.dimensionality)} (like {unit})"
        )
    return quantity, None


# x-kb-range's ends: key -> (which end, whether the bound itself is outside)
RANGE_ENDS = {"min": ("low", False), "above": ("low", True), "max": ("high", False), "below": ("high", True)}
RANGE_KEYS = (*RANGE_ENDS, "whole", "reason")


def physical_range(spec: Any, unit: Any) -> tuple[PhysicalRange | None, list[tuple[str, str]]]:
    """An x-kb-range on a field of canonical `unit`, read: (the range, []) when it is sound, else (None, [(the
    text to find the problem by, the problem)]). A bound is a number in the field's canonical unit or a
    quantity of its kind ('0 GB/s'); a field of any unit ('*') takes the number 0 alone."""
    if not isinstance(spec, dict):
        return None, [("", f"is an object {{{', '.join(RANGE_KEYS)}}}, not {_json_kind(spec)}")]
    problems = [
        (f'"{key}"', f"unknown key '{key}' (known: {', '.join(RANGE_KEYS)})") for key in spec if key not in RANGE_KEYS
    ]
    if not isinstance(unit, str):
        return None, [*problems, ("", "bounds a quantity field: it stands beside the field's x-kb-quantity")]
    any_unit = unit == "*"
    try:
        expected = None if any_unit else parse_unit(unit)
    except QuantityError:
        return None, problems  # the field's own unit is wrong: every value of it is reported (KB401)
    for inclusive, exclusive in (("min", "above"), ("max", "below")):
        if inclusive in spec and exclusive in spec:
            problems.append(
                (
                    f'"{exclusive}"',
                    f"gives {inclusive} and {exclusive}: an end is either in the range ({inclusive}) or not ({exclusive})",
                )
            )
    whole = spec.get("whole", False)
    if whole is not True and "whole" in spec:
        problems.append(('"whole"', f"whole is true (a whole number) or left out, not {json.dumps(whole)}"))
    elif whole and any_unit:
        problems.append(('"whole"', "whole counts in the field's unit, and a field of any unit ('*') has none"))
    if "reason" in spec and not isinstance(spec["reason"], str):
        problems.append(('"reason"', f"reason is a sentence, not {_json_kind(spec['reason'])}"))
    if not any(key in spec for key in (*RANGE_ENDS, "whole")):
        problems.append(("", "gives no end (min, above, max, below) and not whole: it rules nothing out"))
    ends: dict[str, tuple[str, float, bool]] = {}
    for key, (end, outside) in RANGE_ENDS.items():
        if key not in spec:
            continue
        bound = spec[key]
        shown = json.dumps(bound) if _is_plain(bound) else ""
        if any_unit:
            if bound != 0 or isinstance(bound, (bool, str)):
                problems.append(
                    (shown, f"{key} is 0 on a field of any unit ('*'), the one bound that is the same in every unit")
                )
            else:
                ends[end] = (shown, 0.0, outside)
            continue
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            try:
                quantity = parse_quantity_text(bound, unit)  # a number is in the field's canonical unit
            except QuantityError as exc:
                problems.append((shown, f"{key} {exc.message}"))
                continue
        elif isinstance(bound, str):
            quantity, problem = _quantity_bound(key, bound, unit, expected)
            if problem:
                problems.append((shown, problem))
                continue
        else:
            problems.append(
                (
                    shown,
                    f"{key} is a number in the field's unit ({unit}) or a quantity ('0 {unit}'), not {_json_kind(bound)}",
                )
            )
            continue
        ends[end] = (shown, magnitude_in(quantity, unit), outside)
    if "low" in ends and "high" in ends:
        (where, low, low_open), (_, high, high_open) = ends["low"], ends["high"]
        if low > high or (low == high and (low_open or high_open)):
            problems.append((where, "its low end is not below its high end: the range is empty"))
    if problems:
        return None, problems
    low_end, high_end = ends.get("low"), ends.get("high")
    return PhysicalRange(
        unit=unit,
        low=low_end[1] if low_end else None,
        high=high_end[1] if high_end else None,
        low_open=bool(low_end and low_end[2]),
        high_open=bool(high_end and high_end[2]),
        whole=whole is True,
        reason=spec.get("reason", ""),
    ), []


def _annotated_fields(node: Any, key: str, field: tuple[str, ...] = ()):
    """(the field's path of names, its annotation `key`, its x-kb-quantity) for every field of a schema that
    carries the annotation."""
    if isinstance(node, dict):
        if key in node:
            yield field, node[key], node.get("x-kb-quantity")
        for name, value in node.items():
            if name in ("properties", "$defs") and isinstance(value, dict):
                for child, sub in value.items():
                    yield from _annotated_fields(sub, key, (*field, child))
            elif name != key:
                yield from _annotated_fields(value, key, field)
    elif isinstance(node, list):
        for value in node:
            yield from _annotated_fields(value, key, field)


def _check_field_annotations(documents: dict, root: Path, key: str, problems_of) -> list[Diagnostic]:
    """A range kb cannot read would check nothing in silence (a bound of 1e999 GB, a bound in the wrong unit):
    each problem of a field's annotation `key` (x-kb-plausible, x-kb-range), at its line."""
    out = []
    for path, text, contents in documents.values():
        for field_path, spec, unit in _annotated_fields(contents, key):
            names = ".".join(field_path) or "the schema"
            for where, problem in problems_of(spec, unit):
                line = _line_of(text, *map(_key, field_path), _key(key), where or key)
                out.append(
                    Diagnostic.make("KB210", path.relative_to(root).as_posix(), line, 1, f"{key} of {names}: {problem}")
                )
    return out


SHELF_LIFE_KEYS = ("field", "days", "when", "reason")
# a hundred years: longer is no shelf life, and a date plus it stays a date Python can hold
MAX_SHELF_LIFE_DAYS = 36_525


def shelf_life_problems(annotation: Any, date_fields: set[str], fields: set[str], type_name: str) -> list[str]:
    """What is wrong with a type's x-kb-shelf-life (empty when it is sound): one spec {field, days, when?,
    reason?} or a list of them, each naming a date field of the type and a whole number of days, each `when`
    a mapping of the type's fields to a value, a list of values or null (kbtools.check.compute.values.matching
    reads it, as it reads x-kb-derive's)."""
    specs = annotation if isinstance(annotation, list) else [annotation]
    if isinstance(annotation, list) and not annotation:
        return ["an empty list gives no shelf life: give {field, days} or a list of them with when"]
    if not isinstance(annotation, (dict, list)):
        return [f"is an object {{field, days, when, reason}} or a list of them, not {_json_kind(annotation)}"]
    problems: list[str] = []
    for index, spec in enumerate(specs):
        where = f"[{index}] " if isinstance(annotation, list) else ""
        if not isinstance(spec, dict):
            problems.append(f"{where}is an object {{field, days, when, reason}}, not {_json_kind(spec)}")
            continue
        problems.extend(
            f"{where}unknown key {json.dumps(key)} (known: {', '.join(SHELF_LIFE_KEYS)})"
            for key in spec
            if key not in SHELF_LIFE_KEYS
        )
        field_name = spec.get("field")
        if not isinstance(field_name, str) or field_name not in date_fields:
            known = ", ".join(sorted(date_fields)) or "none"
            problems.append(
                f"{where}field {json.dumps(field_name)} is not a date field of {type_name} (a property with "
                f'"format": "date"; its date fields: {known})'
            )
        days = spec.get("days")
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_SHELF_LIFE_DAYS:
            problems.append(
                f"{where}days is a whole number of days from 1 to {MAX_SHELF_LIFE_DAYS:,}, not {json.dumps(days)}"
            )
        if "reason" in spec and not (isinstance(spec["reason"], str) and spec["reason"].strip()):
            problems.append(f"{where}reason is a sentence saying why the shelf life is that long")
        when = spec.get("when", {})
        if not isinstance(when, dict):
            problems.append(f"{where}when maps fields to the values they take, not {_json_kind(when)}")
            when = {}
        for name, wanted in when.items():
            if name not in fields:
                problems.append(f"{where}when.{name}: {json.dumps(name)} is not a field of {type_name}")
            elif isinstance(wanted, list) and not wanted:
                problems.append(f"{where}when.{name}: an empty list matches no record")
            elif not all(v is None or _is_plain(v) for v in (wanted if isinstance(wanted, list) else [wanted])):
                problems.append(f"{where}when.{name}: a value, a list of values or null (the field left out)")
        if isinstance(annotation, list) and spec.get("when", {}) == {} and index < len(specs) - 1:
            # specs are tried in order and the first that matches applies: the later ones would never be read
            problems.append(f"{where}has no when, so it applies to every record and the specs after it never do")
    return problems


def _date_fields(schema: dict[str, Any], resolver) -> set[str]:
    """The type's fields declared `"format": "date"`, its own and those of the whole schemas its allOf $refs."""
    documents = [schema]
    for sub in schema.get("allOf", []):
        if isinstance(sub, dict) and isinstance(sub.get("$ref"), str) and "#" not in sub["$ref"]:
            documents.append(resolver.lookup(sub["$ref"]).contents)
    return {
        name
        for document in documents
        if isinstance(document.get("properties"), dict)
        for name, spec in document["properties"].items()
        if isinstance(spec, dict) and spec.get("format") == "date"
    }


def _shared_fields(schema: dict[str, Any], resolver) -> list[str]:
    """The fields a type takes from the whole schemas its allOf $refs: the envelope every record has."""
    fields: list[str] = []
    for sub in schema.get("allOf", []):
        if isinstance(sub, dict) and isinstance(sub.get("$ref"), str) and "#" not in sub["$ref"]:
            fields.extend(resolver.lookup(sub["$ref"]).contents.get("properties", {}))
    return list(dict.fromkeys(fields))


def _property_order(schema: dict[str, Any], resolver) -> list[str]:
    """Envelope keys first, then the type's own, in schema order (for fmt and pages)."""
    order: list[str] = []
    for sub in schema.get("allOf", []):
        if isinstance(sub, dict) and isinstance(sub.get("$ref"), str) and "#" not in sub["$ref"]:
            order.extend(resolver.lookup(sub["$ref"]).contents.get("properties", {}))
    order.extend(schema.get("properties", {}))
    order = list(dict.fromkeys(order))
    if "notes" in order:  # free prose reads best after the figures
        order.remove("notes")
        order.append("notes")
    return order
