"""The type registry: everything the tool knows about record types comes from schema/.

A file `schema/<type>.schema.json` whose top level carries `x-kb-dir` is a record type; the others (envelope,
shared defs) are resources it may `$ref`. What a type's schema may say besides JSON Schema is its `x-kb-*`
annotations, each read and checked as the one table of them says (annotations.ANNOTATIONS; docs/records.md
describes them for a schema's author).

- types.py: the model, RecordType and TypeRegistry;
- loader.py: schema files -> documents -> resources -> the meta-schema check -> record types, each problem a
  KB210/KB211 at its file and line (load_registry);
- plan.py: a schema compiled, FieldPlan (compile_plan) and the $refs inlined for validation (inline_refs);
- annotations.py: the table of annotations, where each may stand, how it is read, what is wrong with it; the rules
  (rules.py: x-kb-constraints, x-kb-require) and the ranges (ranges.py: x-kb-plausible, x-kb-range) it checks.

Adding a record type is adding a schema file (and its directory): no Python edit.
"""

from kbtools.registry.annotations import DIR_PATTERN, ROLES
from kbtools.registry.loader import load_registry
from kbtools.registry.plan import FieldPlan
from kbtools.registry.ranges import PhysicalRange
from kbtools.registry.rules import DEFAULT_REQUIRE_CODE
from kbtools.registry.types import RecordType, TypeRegistry

__all__ = [
    "DEFAULT_REQUIRE_CODE",
    "DIR_PATTERN",
    "ROLES",
    "FieldPlan",
    "PhysicalRange",
    "RecordType",
    "TypeRegistry",
    "load_registry",
]
