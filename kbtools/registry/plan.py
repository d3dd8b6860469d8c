"""A type's schema compiled: the kb annotations of every position in a record (FieldPlan, compile_plan), the schema
with its $refs inlined for the validators (inline_refs), and the whole schemas a type's allOf $refs, the envelope
every record has (shared_schemas).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from referencing.exceptions import Unresolvable

from kbtools.registry.annotations import value_of
from kbtools.registry.ranges import PhysicalRange


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


# the annotations a FieldPlan holds: annotation -> its attribute (left out, the attribute keeps its default)
PLAN_FIELDS = {
    "x-kb-ref": "ref_types",
    "x-kb-quantity": "quantity",
    "x-kb-inputs": "inputs",
    "x-kb-plausible": "plausible",
    "x-kb-range": "physical",
    "x-kb-names": "names",
}


def is_date(schema: Any, resolver, depth: int = 0) -> bool:
    """Whether a field's schema is a date: "format": "date" on it, on a schema it $refs, or on one of its allOf,
    anyOf or oneOf parts (defs.schema.json#/$defs/date, a day, a month or a year, is one)."""
    if not isinstance(schema, dict) or depth > 40:
        return False
    if schema.get("format") == "date":
        return True
    if isinstance(schema.get("$ref"), str):
        try:
            resolved = resolver.lookup(schema["$ref"])
        except Unresolvable:  # the loader's KB210, not a date
            return False
        if is_date(resolved.contents, resolved.resolver, depth + 1):
            return True
    return any(
        is_date(part, resolver, depth + 1)
        for keyword in ("allOf", "anyOf", "oneOf")
        if isinstance(schema.get(keyword), list)
        for part in schema[keyword]
    )


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
    for key in schema.keys() & PLAN_FIELDS.keys():
        # read as the annotation table reads it: an ill-formed range is the registry's KB210, and checks nothing
        setattr(plan, PLAN_FIELDS[key], value_of(key, schema))
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


def shared_schemas(schema: dict[str, Any], resolver) -> list[dict[str, Any]]:
    """The whole schemas a type's allOf $refs (the envelope every record has), in order: a type takes their fields
    and their x-kb-constraints."""
    return [
        resolver.lookup(sub["$ref"]).contents
        for sub in schema.get("allOf", [])
        if isinstance(sub, dict) and isinstance(sub.get("$ref"), str) and "#" not in sub["$ref"]
    ]
