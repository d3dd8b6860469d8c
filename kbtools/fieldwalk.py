"""A record's frontmatter walked along its type's schema: every field with its plan, and the references in it.

What several stages, outputs and pages ask of one record's data: the links stage and `kb mv` its references,
compute and the constraints its quantities, the site its reference fields. It knows the schema's shape
(kbtools.registry.FieldPlan) and nothing of any stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kbtools.corpus import FieldPath, Record, Reference
from kbtools.index import QUALIFIED
from kbtools.registry import FieldPlan


def walk_plan(plan: FieldPlan | None, value: Any, path: FieldPath = ()) -> Iterator[tuple[FieldPath, Any, FieldPlan]]:
    """Every (path, value, plan) in a record's data, following the schema's shape."""
    if plan is None:
        return
    yield path, value, plan
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk_plan(plan.child(key), item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk_plan(plan.items, item, path + (index,))


def iter_references(record: Record, plan: FieldPlan, dirs: set[str]) -> Iterator[Reference]:
    for path, value, node in walk_plan(plan, dict(record.data)):
        if node.ref_types and isinstance(value, str):
            yield Reference(path, value, node.ref_types)
        elif node.inputs and isinstance(value, dict):
            # Cost inputs: a string (or list of strings) 'dir/id' with a known dir is a reference.
            for name, item in value.items():
                chosen = isinstance(item, dict) and isinstance(item.get("choose"), list)
                items = item["choose"] if chosen else item if isinstance(item, list) else [item]
                for index, entry in enumerate(items):
                    match = QUALIFIED.match(entry) if isinstance(entry, str) else None
                    if match and match.group(1) in dirs:
                        sub = (
                            path + (name, "choose", index)
                            if chosen
                            else path + (name, index)
                            if isinstance(item, list)
                            else path + (name,)
                        )
                        yield Reference(sub, entry, ())
