"""The type registry: everything the tool knows about record types comes from schema/.

A file `schema/<type>.schema.json` whose top level carries `x-kb-dir` is a record
type; the others (envelope, shared defs) are resources it may `$ref`. The kb
annotations a type's schema may carry:

- `x-kb-dir`: the directory under records/ that holds records of this type;
- `x-kb-ref: <type>` on a string schema: the value is the id of a record of that type;
- `x-kb-quantity: <unit>` on a field: a quantity whose canonical unit is <unit> (`*`: any unit);
- `x-kb-inputs: true`: named cost inputs, quantities or `dir/id` references;
- `x-kb-derive`: type-level derivations (field -> formula spec, or a list of them with `when`);
- `x-kb-functions`: functions of a record of this type, called in formulas as `record.name(args)`
  (name -> {parameters: {name: unit}, formula, unit}): a figure that depends on an argument, such as
  a model's KV bytes at a context length;
- `x-kb-plausible` on a quantity field: {min, max, reason}, the range values of real hardware fall
  in; a value outside it is a warning (KB540) that gives the range and the reason;
- `x-kb-names` on a field: the words prose names it by besides its own name ("HBM bandwidth"), so
  that a sentence naming it is read as stating it (KB610);
- `x-kb-columns`: the fields shown in the type's index table;
- `x-kb-role`: what kb's own features take the type to be (`source`, `parameter`: see ROLES);
- `x-kb-charts`: charts the type's pages draw, e.g. `{"kind": "roofline", "bandwidth": field, "peaks": {label: field}}`;
- `x-kb-constraints`: cross-record rules of provenance, each with a code and a severity (see
  constraints.py), on a type or on the envelope (then they hold for every type);
- `x-kb-quotes-documents: true`: the type's bodies report what a document says, figures as printed
  (sources), so they are not asked to quote the corpus's values inline (KB611);
- `x-kb-measured-as: <shape>` on a reference field: a record of this type may cite, there, the
  measurement `kb measure` made of that shape (`kv-prefix`, `kv-scattered`), and kb measure says so.

Adding a record type is adding a schema file (and its directory): no Python edit.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

from kbtools.diagnostics import Diagnostic


@dataclass
class FieldPlan:
    """What the schema says about one position in a record: merged over allOf/oneOf/$ref."""

    ref_types: tuple[str, ...] = ()
    quantity: str | None = None
    inputs: bool = False
    plausible: dict | None = None  # x-kb-plausible: {min, max, reason}, the range real values fall in
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

    @cached_property
    def validator(self) -> Draft202012Validator:
        """Built on first use (a warm run validates nothing). It validates against the schema
        with every $ref inlined: the same meaning (a $ref is an in-place applicator, like
        allOf), but no URI resolution per record, which was most of the validation time."""
        return Draft202012Validator(
            inline_refs(self.schema, self.resolver), format_checker=Draft202012Validator.FORMAT_CHECKER
        )

    @property
    def derive(self) -> dict[str, Any]:
        return self.schema.get("x-kb-derive", {})

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


def _line_of(text: str, needle: str) -> int:
    index = text.find(needle)
    return text.count("\n", 0, index) + 1 if index >= 0 else 1


def load_registry(schema_dir: Path, root: Path, trusted: bool = False) -> TypeRegistry:
    """Read every schema file; a broken one is a KB210 diagnostic, never an exception.

    trusted: the cache vouches that these exact files were checked before (its key hashes
    them), so the meta-schema check, a noticeable part of a warm run, is skipped."""
    diagnostics: list[Diagnostic] = []
    documents: dict[str, tuple[Path, str, dict[str, Any]]] = {}
    for path in sorted(schema_dir.glob(f"*{SCHEMA_SUFFIX}")):
        rel = path.relative_to(root).as_posix()
        try:
            if not path.is_file():
                diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, "schema path is not a regular file"))
                continue
            text = path.read_text(encoding="utf-8")
            contents = json.loads(text)
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
        if not isinstance(contents, dict):
            diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, "a schema file must hold a JSON object"))
            continue
        try:
            if not trusted:
                Draft202012Validator.check_schema(contents)
        except SchemaError as exc:
            key = next((str(p) for p in reversed(exc.absolute_path) if isinstance(p, str)), "")
            diagnostics.append(
                Diagnostic.make(
                    "KB210", rel, _line_of(text, f'"{key}"') if key else 1, 1, f"invalid JSON Schema: {exc.message}"
                )
            )
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
        rules, problems = _constraints(contents, resolver)
        for where, problem in problems:
            diagnostics.append(Diagnostic.make("KB210", where, 1, 1, f"x-kb-constraints: {problem}"))
        types[type_name] = RecordType(
            name=type_name,
            dir=directory,
            title=str(contents.get("title", type_name)),
            schema_path=rel,
            schema=contents,
            resolver=resolver,
            plan=plan,
            property_order=tuple(_property_order(contents, resolver)),
            constraints=rules,
            envelope=tuple(_shared_fields(contents, resolver)),
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
    diagnostics.extend(_check_roles_and_charts(types, documents))
    return TypeRegistry(types=types, diagnostics=diagnostics)


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
    if isinstance(schema.get("x-kb-plausible"), dict):
        plan.plausible = schema["x-kb-plausible"]
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


def rule_problems(rule: Any) -> list[str]:
    """What is wrong with one x-kb-constraints rule (empty when it is well-formed); the registry reports these."""
    if not isinstance(rule, dict):
        return ["a constraint is an object"]
    problems = []
    code = rule.get("code")
    if not (isinstance(code, str) and code[:2].isalpha() and code[2:].isdigit() and len(code) >= 4):
        problems.append(f"constraint code {code!r} is not like 'KB561'")
    if rule.get("severity") not in ("error", "warning"):
        problems.append(f"constraint {code}: severity is 'error' or 'warning', not {rule.get('severity')!r}")
    if not isinstance(rule.get("message"), str) or not rule["message"].strip():
        problems.append(f"constraint {code}: a message saying what the rule asks")
    if not isinstance(rule.get("each", "record"), str):
        problems.append(f"constraint {code}: each is 'record', 'quantity' or a list field's name")
    if not any(k in rule for k in ("require", "cites")):
        problems.append(f"constraint {code}: asks nothing (give require or cites)")
    for part in ("when", "require", "cites"):
        conditions = rule.get(part, {})
        if not isinstance(conditions, dict):
            problems.append(f"constraint {code}: {part} maps fields to conditions")
            continue
        for name, condition in conditions.items():
            if isinstance(condition, dict) and (len(condition) != 1 or next(iter(condition)) not in CONDITION_KEYS):
                problems.append(
                    f"constraint {code}: {part}.{name}: a condition object is one of "
                    + ", ".join(f"{{{k}: ...}}" for k in CONDITION_KEYS)
                )
    return problems


def _constraints(schema: dict[str, Any], resolver) -> tuple[tuple[dict, ...], list[tuple[str, str]]]:
    """The well-formed x-kb-constraints rules of a type: its own and those of the whole-schema $refs in
    its allOf (so the envelope's rules hold for every type); the ill-formed ones as (schema, problem)."""
    sources = [(schema, schema.get("$id", ""))]
    for sub in schema.get("allOf", []):
        if isinstance(sub, dict) and isinstance(sub.get("$ref"), str) and "#" not in sub["$ref"]:
            sources.insert(0, (resolver.lookup(sub["$ref"]).contents, sub["$ref"]))
    rules: list[dict] = []
    problems: list[tuple[str, str]] = []
    for document, name in sources:
        declared = document.get("x-kb-constraints", [])
        for rule in declared if isinstance(declared, list) else [declared]:
            found = rule_problems(rule)
            if found:
                problems.extend((f"schema/{name}", problem) for problem in found)
            else:
                rules.append(rule)
    return tuple(rules), problems


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
