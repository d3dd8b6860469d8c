"""Every `x-kb-*` annotation kb reads, in one table (ANNOTATIONS): where it may stand, how it is read, and what
is wrong with it.

An annotation is data: adding a record type or a field never needs Python. Each entry's `read(node, context)` is
the value kb's features use, taken from the schema object the annotation stands in, with whatever is ill-formed
left out (an ill-formed rule or range judges no record); its `problems(value, context)` say what is wrong with
it, and the loader reports each as KB210 at the annotation's line. Other modules take annotations from
RecordType's typed properties and FieldPlan (two still read a few raw: the reference page diagnostics.py renders,
and kb new's placeholders in authoring/new.py). docs/records.md's table describes them for a schema's author.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Literal

from kbtools.registry.ranges import physical_range, plausible_problems
from kbtools.registry.rules import Requirement, is_plain, json_kind, require_problems, rule_problems

# x-kb-dir names one directory under records/; the site writes pages under the same name
DIR_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

# The roles kb's own features hang on: a feature never names a type, it asks for the type with a role.
ROLES = {
    "source": "the documents records cite: KB307 (cited by nothing), KB310 (one document twice), kb new --source",
    "parameter": "hardware parameters: param() in formulas, KB510/KB511, parameter charts; reads carried_by and dimension",
    "measurement": "what kb measure writes: metric, value, conditions, measured_by, published, and the tiers it names",
}
CHART_KINDS = {"roofline": ("bandwidth", "peaks")}  # chart kind -> the keys naming fields

SHELF_LIFE_KEYS = ("field", "days", "when", "reason")
# a hundred years: longer is no shelf life, and a date plus it stays a date Python can hold
MAX_SHELF_LIFE_DAYS = 36_525

# Where an annotation may stand: at the top of a record type's schema (one with x-kb-dir), at the top of any
# schema file (the envelope's rules hold for every type), or in a field's schema, at any depth.
Where = Literal["type", "schema", "field"]


@dataclass(frozen=True)
class Context:
    """What an annotation is read and judged against: the type whose schema holds it and what the registry knows."""

    type_name: str | None = None  # the record type whose schema it stands in; None in a shared schema
    fields: frozenset[str] = frozenset()  # that type's fields
    date_fields: frozenset[str] = frozenset()  # its date fields (registry.plan.is_date), the envelope's included
    quantity_fields: frozenset[str] = frozenset()  # its fields with an x-kb-quantity
    types: frozenset[str] = frozenset()  # every record type's name
    players: Mapping[str, str] = field(default_factory=dict)  # role -> the type that plays it
    path: tuple[str, ...] = ()  # a field's annotation: the field's path of names
    unit: Any = None  # and the field's x-kb-quantity

    @property
    def field_name(self) -> str:
        return ".".join(self.path) or "the schema"


NOWHERE = Context()


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an annotation: its KB210 message, and where in the file it is."""

    message: str
    # text found after the annotation's key (and a field's path), in order: the line of the last one found
    near: tuple[str | re.Pattern[str], ...] = ()
    rule: int | None = None  # of a list of rules, the one it is about: found by its code, each after the one before


@dataclass(frozen=True)
class Annotation:
    key: str
    where: Where
    read: Callable[[Mapping[str, Any], Context], Any]  # the value kb uses, from the schema object it stands in
    check: Callable[[Any, Context], list[Problem]] | None = None  # None: taken as it is written
    # KB210 where it stands at the top of a shared schema (no x-kb-dir), and would apply to nothing in silence
    misplaced: str | None = None
    doc: str = ""

    def problems(self, value: Any, context: Context = NOWHERE) -> list[Problem]:
        """What is wrong with the annotation's value where it stands (empty when it is sound or not checked)."""
        return self.check(value, context) if self.check is not None else []


def value_of(key: str, node: Mapping[str, Any], context: Context = NOWHERE) -> Any:
    """Annotation `key` of a schema object (a type's schema, a field's), read as the table reads it."""
    return ANNOTATIONS[key].read(node, context)


def as_list(value: Any) -> list[Any]:
    """An annotation written as a list of items or as one item alone."""
    return value if isinstance(value, list) else [value]


# ---------------------------------------------------------------- what is wrong with one


def _dir_problems(directory: Any, context: Context) -> list[Problem]:
    if isinstance(directory, str) and DIR_PATTERN.match(directory):
        return []
    return [
        Problem(
            f"x-kb-dir must be one directory name under records/ (matching {DIR_PATTERN.pattern}), "
            f"not {json.dumps(directory)}"
        )
    ]


def _role_problems(role: Any, context: Context) -> list[Problem]:
    """A role kb knows, played by one type (the first, in the order of the schema files)."""
    if role is None:
        return []
    if not isinstance(role, str) or role not in ROLES:
        return [Problem(f"x-kb-role {json.dumps(role)} is not a role kb knows ({', '.join(ROLES)})")]
    player = context.players.get(role)
    if player is not None and player != context.type_name:
        return [Problem(f"x-kb-role '{role}' is already the role of type '{player}'; one type plays a role")]
    return []


def _chart_problems(charts: Any, context: Context) -> list[Problem]:
    """Each chart of a kind kb draws, naming quantity fields of the type."""
    problems = []
    for chart in charts if isinstance(charts, list) else []:
        kind = chart.get("kind") if isinstance(chart, dict) else None
        if kind not in CHART_KINDS:
            problems.append(
                Problem(f"x-kb-charts: chart kind {json.dumps(kind)} is not one kb draws ({', '.join(CHART_KINDS)})")
            )
            continue
        peaks = chart.get("peaks") or {}
        if not isinstance(peaks, dict):
            problems.append(Problem(f"x-kb-charts: peaks is {json.dumps(peaks)}, not an object of label: field"))
            continue
        named = [chart.get("bandwidth")] + list(peaks.values())
        problems.extend(
            Problem(f"x-kb-charts: {json.dumps(name)} is not a quantity field of {context.type_name}")
            for name in named
            if not (isinstance(name, str) and name in context.quantity_fields)
        )
    return problems


def _ref_problems(refs: Any, context: Context) -> list[Problem]:
    """An x-kb-ref names a type that exists, or every reference to it would dangle."""
    return [
        Problem(
            f"x-kb-ref names unknown record type '{target}' (known: {', '.join(sorted(context.types))})",
            near=(f'"x-kb-ref": "{target}"',),
        )
        for target in _ref_types(refs)
        if target not in context.types
    ]


def _range_problems(key: str, problems_of: Callable[[Any, Any], list[tuple[str, str]]]):
    """A range kb cannot read would check nothing in silence (a bound of 1e999 GB, a bound in the wrong unit):
    each problem of a field's range, at the text it is about."""

    def problems(spec: Any, context: Context) -> list[Problem]:
        return [
            Problem(f"{key} of {context.field_name}: {problem}", near=(where,) if where else ())
            for where, problem in problems_of(spec, context.unit)
        ]

    return problems


def _shelf_life_problems(annotation: Any, context: Context) -> list[Problem]:
    problems = shelf_life_problems(annotation, context.date_fields, context.fields, context.type_name or "")
    return [Problem(f"x-kb-shelf-life: {problem}") for problem in problems]


def _constraint_problems(rules: Any, context: Context) -> list[Problem]:
    return [
        Problem(f"x-kb-constraints: {problem}", rule=index)
        for index, rule in enumerate(as_list(rules))
        for problem in rule_problems(rule)
    ]


def _require_problems(rules: Any, context: Context) -> list[Problem]:
    return [
        Problem(f"x-kb-require: {problem}", near=(key_pattern("code", rule["code"]),) if _has_code(rule) else ())
        for rule in as_list(rules)
        for problem in require_problems(rule, set(context.fields), context.type_name or "")
    ]


def _has_code(rule: Any) -> bool:
    return isinstance(rule, dict) and isinstance(rule.get("code"), str)


def key_pattern(name: str, value: str | None = None) -> re.Pattern[str]:
    """A JSON object's key (not the same word as a value in a list), with its value when given."""
    return re.compile(re.escape(json.dumps(name)) + r"\s*:" + (r"\s*" + re.escape(json.dumps(value)) if value else ""))


def shelf_life_problems(
    annotation: Any, date_fields: AbstractSet[str], fields: AbstractSet[str], type_name: str
) -> list[str]:
    """What is wrong with a type's x-kb-shelf-life (empty when it is sound): one spec {field, days, when?,
    reason?} or a list of them, each naming a date field of the type and a whole number of days, each `when`
    a mapping of the type's fields to a value, a list of values or null (kbtools.check.compute.values.matching
    reads it, as it reads x-kb-derive's)."""
    specs = annotation if isinstance(annotation, list) else [annotation]
    if isinstance(annotation, list) and not annotation:
        return ["an empty list gives no shelf life: give {field, days} or a list of them with when"]
    if not isinstance(annotation, (dict, list)):
        return [f"is an object {{field, days, when, reason}} or a list of them, not {json_kind(annotation)}"]
    problems: list[str] = []
    for index, spec in enumerate(specs):
        where = f"[{index}] " if isinstance(annotation, list) else ""
        if not isinstance(spec, dict):
            problems.append(f"{where}is an object {{field, days, when, reason}}, not {json_kind(spec)}")
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
                f'"format": "date" or a $ref to defs.schema.json#/$defs/date; its date fields: {known})'
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
            problems.append(f"{where}when maps fields to the values they take, not {json_kind(when)}")
            when = {}
        for name, wanted in when.items():
            if name not in fields:
                problems.append(f"{where}when.{name}: {json.dumps(name)} is not a field of {type_name}")
            elif isinstance(wanted, list) and not wanted:
                problems.append(f"{where}when.{name}: an empty list matches no record")
            elif not all(v is None or is_plain(v) for v in (wanted if isinstance(wanted, list) else [wanted])):
                problems.append(f"{where}when.{name}: a value, a list of values or null (the field left out)")
        if isinstance(annotation, list) and spec.get("when", {}) == {} and index < len(specs) - 1:
            # specs are tried in order and the first that matches applies: the later ones would never be read
            problems.append(f"{where}has no when, so it applies to every record and the specs after it never do")
    return problems


# ---------------------------------------------------------------- how each is read


def _ref_types(refs: Any) -> tuple[str, ...]:
    if isinstance(refs, str):
        return (refs,)
    return tuple(r for r in refs if isinstance(r, str)) if isinstance(refs, list) else ()


def _mapping(key: str) -> Callable[[Mapping[str, Any], Context], dict[str, Any]]:
    """An annotation that is an object, {} when it is not one."""
    return lambda node, context: value if isinstance(value := node.get(key, {}), dict) else {}


def _object(key: str) -> Callable[[Mapping[str, Any], Context], dict[str, Any] | None]:
    """An annotation that is an object, None when it is not one."""
    return lambda node, context: value if isinstance(value := node.get(key), dict) else None


def _plausible(node: Mapping[str, Any], context: Context) -> dict | None:
    spec = node.get("x-kb-plausible")
    return spec if isinstance(spec, dict) and not plausible_problems(spec, node.get("x-kb-quantity")) else None


def _names(node: Mapping[str, Any], context: Context) -> tuple[str, ...]:
    names = node.get("x-kb-names")
    return tuple(n for n in names if isinstance(n, str) and n.strip()) if isinstance(names, list) else ()


def _charts(node: Mapping[str, Any], context: Context) -> list[dict[str, Any]]:
    charts = node.get("x-kb-charts", [])
    return [c for c in charts if isinstance(c, dict)] if isinstance(charts, list) else []


def _shelf_life(node: Mapping[str, Any], context: Context) -> tuple[dict, ...]:
    """The specs, or none when any is ill-formed: no record is judged by half of it."""
    if "x-kb-shelf-life" not in node or _shelf_life_problems(node["x-kb-shelf-life"], context):
        return ()
    return tuple(as_list(node["x-kb-shelf-life"]))


def _constraints(node: Mapping[str, Any], context: Context) -> tuple[dict, ...]:
    """The well-formed rules: an ill-formed one judges no record."""
    if "x-kb-constraints" not in node:
        return ()
    return tuple(rule for rule in as_list(node["x-kb-constraints"]) if not rule_problems(rule))


def _requirements(node: Mapping[str, Any], context: Context) -> tuple[Requirement, ...]:
    """The well-formed rules: an ill-formed one judges no record (before, an undeclared code was KB900 on each)."""
    if "x-kb-require" not in node:
        return ()
    fields, type_name = set(context.fields), context.type_name or ""
    return tuple(
        Requirement.of(rule) for rule in as_list(node["x-kb-require"]) if not require_problems(rule, fields, type_name)
    )


LEDGER_KEYS = ("case", "measured", "predicted", "band")


def _ledger_problems(spec: Any, context: Context) -> list[Problem]:
    if not isinstance(spec, dict):
        return [Problem(f"x-kb-ledger must be an object {{{', '.join(LEDGER_KEYS)}}}, not {json.dumps(spec)}")]
    out = [
        Problem(f"x-kb-ledger: unknown key '{key}' (known: {', '.join(LEDGER_KEYS)})")
        for key in spec
        if key not in LEDGER_KEYS
    ]
    for key in ("case", "measured"):
        if not isinstance(spec.get(key), str) or spec[key] not in context.fields:
            out.append(Problem(f"x-kb-ledger.{key} must name a field of {context.type_name}", near=(key_pattern(key),)))
    predicted = spec.get("predicted")
    if not isinstance(predicted, dict) or not predicted or not all(isinstance(f, str) for f in predicted.values()):
        out.append(Problem("x-kb-ledger.predicted must map each figure a case may name to a formula"))
    band = spec.get("band")
    if band is not None and (isinstance(band, bool) or not isinstance(band, int | float) or band <= 0):
        out.append(
            Problem(f"x-kb-ledger.band must be a number above 0, not {json.dumps(band)}", near=(key_pattern("band"),))
        )
    return out


def _extensible(node: Mapping[str, Any], context: Context) -> tuple[Any, ...]:
    """x-kb-extensible: the values a field lists beside the project's own (the enum among its anyOf); () for a
    field without the annotation, or whose anyOf lists none."""
    if node.get("x-kb-extensible") is not True:
        return ()
    for choice in node.get("anyOf") or ():
        if isinstance(choice, dict) and isinstance(choice.get("enum"), list) and choice["enum"]:
            return tuple(choice["enum"])
    return ()


def _extensible_problems(value: Any, context: Context) -> list[Problem]:
    if value is True:
        return []
    return [
        Problem(
            f"x-kb-extensible on {context.field_name} must be true (its anyOf then lists kb's values in an enum "
            f"beside a string of the project's own), not {json.dumps(value)}"
        )
    ]


def _string(key: str) -> Callable[[Mapping[str, Any], Context], str | None]:
    return lambda node, context: value if isinstance(value := node.get(key), str) else None


def _true(key: str) -> Callable[[Mapping[str, Any], Context], bool]:
    return lambda node, context: node.get(key) is True


# ---------------------------------------------------------------- the table

ANNOTATIONS: dict[str, Annotation] = {
    annotation.key: annotation
    for annotation in (
        Annotation(
            "x-kb-dir",
            "type",
            lambda node, context: node.get("x-kb-dir"),
            _dir_problems,
            doc="the directory under records/ that holds records of this type; a schema without it is a shared "
            "resource (the envelope, shared defs) that types $ref",
        ),
        Annotation(
            "x-kb-ref",
            "field",
            lambda node, context: _ref_types(node.get("x-kb-ref")),
            _ref_problems,
            doc="on a string schema: the value is the id of a record of that type (or of one of a list of types)",
        ),
        Annotation(
            "x-kb-quantity",
            "field",
            _string("x-kb-quantity"),
            doc="a quantity whose canonical unit is the value ('*': any unit)",
        ),
        Annotation(
            "x-kb-inputs",
            "field",
            lambda node, context: bool(node.get("x-kb-inputs")),
            doc="true: named cost inputs, quantities or dir/id references",
        ),
        Annotation(
            "x-kb-derive",
            "type",
            lambda node, context: node.get("x-kb-derive", {}),
            doc="type-level derivations: field -> formula spec, or a list of them with `when` (a formula kb cannot "
            "read is KB210 from the compute stage)",
        ),
        Annotation(
            "x-kb-costs",
            "type",
            _mapping("x-kb-costs"),
            doc="cost specs (as in a record's costs block) every record of the type has, so that a kind of record is "
            "a calculation (a workload's plan); a cost reading a field the record leaves out does not apply",
        ),
        Annotation(
            "x-kb-plan",
            "type",
            _mapping("x-kb-plan"),
            doc="how `kb plan` lays out the type's costs: {over: the list field its per-option tables run over, "
            "rank_by: the per-option cost the options are ranked by (least first), verdict: the per-option ratio of "
            "two times it words as a verdict, limits: {cost: words} broken above 1, stages: {cost: {stage cost: "
            "words}} for a cost that is the least of its stages, whose slowest the plan names}",
        ),
        Annotation(
            "x-kb-functions",
            "type",
            _mapping("x-kb-functions"),
            doc="functions of a record of this type, called in formulas as `record.name(args)` (name -> "
            "{parameters: {name: unit}, formula, unit}): a figure that depends on an argument, such as a model's KV "
            "bytes at a context length",
        ),
        Annotation(
            "x-kb-plausible",
            "field",
            _plausible,
            _range_problems("x-kb-plausible", plausible_problems),
            doc="on a quantity field: {min, max, reason}, the range values of real hardware fall in; a value outside "
            "it is a warning (KB540) that gives the range and the reason. Each bound is a finite quantity of the "
            "field's kind, min at most max. A value an x-kb-derive formula that reads no field fixes for the record "
            "is the schema's own statement and is not judged against it",
        ),
        Annotation(
            "x-kb-range",
            "field",
            lambda node, context: (
                physical_range(node["x-kb-range"], node.get("x-kb-quantity"))[0] if "x-kb-range" in node else None
            ),
            _range_problems("x-kb-range", lambda spec, unit: physical_range(spec, unit)[1]),
            doc="on a quantity field: the values the field can take at all, {min or above, max or below, whole, "
            "reason} (PhysicalRange); a figure outside it is impossible (a negative count, a hit rate above 1, half "
            "a GPU), an error (KB405) at the figure, wherever the field's value stands",
        ),
        Annotation(
            "x-kb-names",
            "field",
            _names,
            doc="the words prose names the field by besides its own name ('HBM bandwidth'), so that a sentence "
            "naming it, or a figure followed by it, is read as stating it (KB610)",
        ),
        Annotation(
            "x-kb-columns",
            "type",
            lambda node, context: node.get("x-kb-columns", []),
            doc="the fields shown in the type's index table",
        ),
        Annotation(
            "x-kb-role",
            "type",
            _string("x-kb-role"),
            _role_problems,
            doc="what kb's own features take the type to be (see ROLES), one type per role",
        ),
        Annotation(
            "x-kb-charts",
            "type",
            _charts,
            _chart_problems,
            doc='charts the type\'s pages draw, e.g. {"kind": "roofline", "bandwidth": field, "peaks": {label: '
            "field}}; each names quantity fields of the type",
        ),
        Annotation(
            "x-kb-constraints",
            "schema",
            _constraints,
            _constraint_problems,
            doc="cross-record rules of provenance, each with a code and a severity (check/constraints.py), on a type "
            "or on a schema its allOf $refs whole (the envelope's hold for every type); a rule's code is none of "
            "kb's own, and each condition's argument is of the type it reads (rules.rule_problems)",
        ),
        Annotation(
            "x-kb-require",
            "type",
            _requirements,
            _require_problems,
            doc="[{any_of: [fields], code, severity, message, if_any: [fields]}]: a record with none of the fields "
            "(a dotted name is a key inside an object field), judged only when it states one of if_any's, gets the rule's "
            "code: KB202 when it names none, one of kb's own for it (diagnostics.REQUIREMENT_CODES, whose severity "
            "kb sets) or, checked as a constraint's is, the project's own with its severity (rules.require_problems)",
        ),
        Annotation(
            "x-kb-quotes-documents",
            "type",
            _true("x-kb-quotes-documents"),
            doc="true: the type's bodies report what a document says, figures as printed (sources), so they are not "
            "asked to quote the corpus's values inline (KB611)",
        ),
        Annotation(
            "x-kb-measured-as",
            "field",
            _string("x-kb-measured-as"),
            doc="on a reference field: a record of this type may cite, there, the measurement `kb measure` made of "
            "that shape (kv-prefix, kv-scattered), and kb measure says so",
        ),
        Annotation(
            "x-kb-new",
            "field",
            _true("x-kb-new"),
            doc="true on an optional field: `kb new` drafts it too (a source's origin)",
        ),
        Annotation(
            "x-kb-extensible",
            "field",
            _extensible,
            _extensible_problems,
            doc="true on a field whose anyOf lists kb's values (an enum) beside a string of the project's own: the "
            "vocabulary is the user's to extend (a source's kind: review, database), so a value outside the list is "
            "no error, and kb new offers the listed values. A field without it keeps its enum closed: a value outside "
            "it is KB200",
        ),
        Annotation(
            "x-kb-from-config",
            "type",
            _object("x-kb-from-config"),
            doc='{"format": "huggingface", "fields": {config key: field}}: `kb new TYPE --from-config` reads the '
            "record's fields from a model's config.json",
        ),
        Annotation(
            "x-kb-ledger",
            "type",
            _mapping("x-kb-ledger"),
            _ledger_problems,
            doc='a record of the type may be a case of the prediction ledger: {"case": the object field naming the '
            'case\'s workload and figure, "measured": the measured quantity field, "predicted": {figure: formula '
            'over the case block\'s references}, "band": the |error| beyond which a case is KB621 where it records '
            "no band of its own} (check/compute/ledger.py)",
        ),
        Annotation(
            "x-kb-shelf-life",
            "type",
            _shelf_life,
            _shelf_life_problems,
            misplaced="x-kb-shelf-life belongs on a record type's schema (one with x-kb-dir), where its date field "
            "is; here it applies to nothing",
            doc="how long a record's time-bound figures stay current, {field: a date field, days, reason} (or a list "
            "of them with `when`, matched as x-kb-derive's are): a record whose date is older is KB620, unless it "
            "names the record that replaces it in superseded_by (check/freshness.py)",
        ),
    )
}
