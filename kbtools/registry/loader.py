"""Loading the registry: schema files -> documents -> resources -> record types, each problem a diagnostic.

A file `schema/<type>.schema.json` whose top level carries `x-kb-dir` is a record type; the others (envelope,
shared defs) are resources it may `$ref`. A file kb cannot read, one that is not a JSON Schema 2020-12 and a
relative $id are KB210/KB211 at the file; each annotation of the files that load is judged by the annotation
table (registry/annotations.py), KB210 at its line. Nothing here raises on a broken schema.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

from kbtools.diagnostics import Diagnostic
from kbtools.files import MAX_SCHEMA_BYTES, NotReadable, read_regular_file
from kbtools.registry.annotations import ANNOTATIONS, ROLES, Context, as_list, key_pattern, value_of
from kbtools.registry.plan import compile_plan, is_date, shared_schemas
from kbtools.registry.types import RecordType, TypeRegistry

SCHEMA_SUFFIX = ".schema.json"
DIALECTS = ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#")
TOO_DEEP = "the schema nests too deeply to check (hundreds of levels): no record's shape needs that many"


@dataclass(frozen=True)
class SchemaFile:
    """A schema file that loaded: a JSON Schema 2020-12 object."""

    path: Path
    rel: str  # its path from the repository's root, as diagnostics name it
    text: str
    contents: dict[str, Any]


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
    checked: set[bytes] = set()
    documents: dict[str, SchemaFile] = {}
    for path in sorted(schema_dir.glob(f"*{SCHEMA_SUFFIX}")):
        document = _read_schema_file(path, root, vouched, checked, diagnostics)
        if document is not None:
            documents[path.name] = document
    registry = _resources(documents)
    contexts: dict[str, Context] = {}
    compiled: dict[str, RecordType] = {}
    for name, document in documents.items():
        found = _record_type(name, document, registry, diagnostics)
        if found is not None:
            record_type, context = found
            compiled[record_type.name] = record_type
            contexts[name] = context
    types = _one_type_per_dir(compiled, documents, diagnostics)
    players: dict[str, str] = {}
    for record_type in types.values():  # the first type to claim a role plays it; another is KB210
        if record_type.role in ROLES:
            players.setdefault(record_type.role, record_type.name)
    known = Context(types=frozenset(types), players=players)
    for name, document in documents.items():
        # a type's annotations against its own fields, a shared schema's against what every type knows
        mine = contexts.get(name)
        context = replace(mine, types=known.types, players=players) if mine is not None else known
        diagnostics.extend(_annotation_problems(document, context, is_type=mine is not None))
    return TypeRegistry(types=types, diagnostics=diagnostics, meta_checked=frozenset(checked))


def _read_schema_file(
    path: Path, root: Path, vouched: frozenset[bytes], checked: set[bytes], diagnostics: list[Diagnostic]
) -> SchemaFile | None:
    """The file's JSON Schema, or None when it is none kb can use (and then a KB210 says why)."""
    rel = path.relative_to(root).as_posix()
    try:
        raw, _ = read_regular_file(path, MAX_SCHEMA_BYTES)
        text = raw.decode("utf-8")
        contents = json.loads(text)
    except NotReadable as exc:
        diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, f"schema file: {exc}"))
        return None
    except OSError as exc:
        diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, f"cannot read schema file: {exc.strerror or exc}"))
        return None
    except UnicodeDecodeError as exc:
        diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, f"schema file is not UTF-8: {exc.reason}"))
        return None
    except json.JSONDecodeError as exc:
        diagnostics.append(
            Diagnostic.make("KB210", rel, exc.lineno, exc.colno, f"schema file is not valid JSON: {exc.msg}")
        )
        return None
    except RecursionError:
        diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, TOO_DEEP))
        return None
    if not isinstance(contents, dict):
        diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, "a schema file must hold a JSON object"))
        return None
    try:
        checked.add(_check_schema_once(text, contents, vouched))
    except SchemaError as exc:
        key = next((str(p) for p in reversed(exc.absolute_path) if isinstance(p, str)), "")
        diagnostics.append(
            Diagnostic.make(
                "KB210", rel, _line_of(text, f'"{key}"') if key else 1, 1, f"invalid JSON Schema: {exc.message}"
            )
        )
        return None
    except RecursionError:  # the meta-schema check descends once per level of nesting
        diagnostics.append(Diagnostic.make("KB210", rel, 1, 1, TOO_DEEP))
        return None
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
        return None
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
    return SchemaFile(path, rel, text, contents)


def _resources(documents: dict[str, SchemaFile]) -> Registry:
    """Every schema file as a $ref target, by its file name and by its $id."""
    resources = []
    for name, document in documents.items():
        contents = document.contents
        resources.append((name, Resource.from_contents(contents)))
        if isinstance(contents.get("$id"), str) and contents["$id"] != name:
            resources.append((contents["$id"], Resource.from_contents(contents)))
    return Registry().with_resources(resources)


def _record_type(
    name: str, document: SchemaFile, registry: Registry, diagnostics: list[Diagnostic]
) -> tuple[RecordType, Context] | None:
    """The record type a file declares with its x-kb-dir, and what its annotations are judged against; None for a
    shared resource and for a type kb cannot compile (then a KB210 says why)."""
    contents, text, rel = document.contents, document.text, document.rel
    directory = contents.get("x-kb-dir")
    if directory is None:
        return None  # a shared resource, not a record type
    problems = ANNOTATIONS["x-kb-dir"].problems(directory)
    if problems:
        line = _line_of(text, '"x-kb-dir"')
        diagnostics.extend(Diagnostic.make("KB210", rel, line, 1, problem.message) for problem in problems)
        return None
    base = contents.get("$id", name)
    try:
        plan = compile_plan(contents, registry.resolver(base_uri=base))
    except (Unresolvable, RecursionError) as exc:
        diagnostics.append(Diagnostic.make("KB210", rel, _line_of(text, '"$ref"'), 1, f"unresolvable $ref: {exc}"))
        return None
    resolver = registry.resolver(base_uri=base)
    shared = shared_schemas(contents, resolver)
    type_name = name[: -len(SCHEMA_SUFFIX)]
    context = Context(
        type_name=type_name,
        fields=frozenset(plan.properties),
        date_fields=frozenset(
            field_name
            for schema in (contents, *shared)
            if isinstance(schema.get("properties"), dict)
            for field_name, spec in schema["properties"].items()
            if is_date(spec, resolver)
        ),
        quantity_fields=frozenset(field_name for field_name, f in plan.properties.items() if f.quantity is not None),
    )
    # the fields of the schemas it allOf-$refs whole: the envelope every record has, first in a record's order
    envelope = list(dict.fromkeys(field_name for schema in shared for field_name in schema.get("properties", {})))
    order = list(dict.fromkeys([*envelope, *contents.get("properties", {})]))
    if "notes" in order:  # free prose reads best after the figures
        order.remove("notes")
        order.append("notes")
    record_type = RecordType(
        name=type_name,
        dir=directory,
        title=str(contents.get("title", type_name)),
        schema_path=rel,
        schema=contents,
        resolver=resolver,
        plan=plan,
        property_order=tuple(order),
        # its own rules and those of the schemas it allOf-$refs whole, the envelope's (the last $ref's first)
        constraints=tuple(
            rule for schema in (*reversed(shared), contents) for rule in value_of("x-kb-constraints", schema)
        ),
        envelope=tuple(envelope),
        shelf_life=value_of("x-kb-shelf-life", contents, context),
        require=value_of("x-kb-require", contents, context),
        date_fields=context.date_fields,
    )
    return record_type, context


def _one_type_per_dir(
    compiled: dict[str, RecordType], documents: dict[str, SchemaFile], diagnostics: list[Diagnostic]
) -> dict[str, RecordType]:
    """The types, each directory kept by the first that names it; a second is KB210 and no type."""
    types: dict[str, RecordType] = {}
    seen_dirs: dict[str, str] = {}
    for record_type in compiled.values():
        if record_type.dir not in seen_dirs:
            seen_dirs[record_type.dir] = record_type.name
            types[record_type.name] = record_type
            continue
        text = documents[Path(record_type.schema_path).name].text  # the file's own text: its lines
        diagnostics.append(
            Diagnostic.make(
                "KB210",
                record_type.schema_path,
                _line_of(text, '"x-kb-dir"'),
                1,
                f"directory '{record_type.dir}' is already the directory of type '{seen_dirs[record_type.dir]}'",
            )
        )
    return types


def _annotation_problems(document: SchemaFile, context: Context, is_type: bool) -> list[Diagnostic]:
    """Each problem of each annotation the file holds, KB210 at its line: every field's, those that may stand at
    the top of any schema, and a record type's own (`is_type`; in a shared schema, where one would apply to
    nothing, the table says whether that is a finding)."""
    out: list[Diagnostic] = []
    contents, text = document.contents, document.text

    def at(line: int, message: str) -> Diagnostic:
        return Diagnostic.make("KB210", document.rel, line, 1, message)

    for annotation in ANNOTATIONS.values():
        key = annotation.key
        if annotation.check is None and annotation.where != "type":
            continue  # taken as it is written: nothing to find wrong with it
        if annotation.where == "field":
            for path, node in _annotated_fields(contents, key):
                here = replace(context, path=path, unit=node.get("x-kb-quantity"))
                found = (*map(key_pattern, path), key_pattern(key))
                out.extend(at(_line_of(text, *found, *p.near), p.message) for p in annotation.problems(node[key], here))
        elif key not in contents:
            continue
        elif annotation.where == "type" and not is_type:
            if contents.get("x-kb-dir") is None:  # a shared schema: the annotation would apply to no record
                out.append(at(_line_of(text, f'"{key}"'), annotation.misplaced or _misplaced(key)))
        else:
            problems = annotation.problems(contents[key], context)
            rules = _rule_lines(text, key, as_list(contents[key])) if any(p.rule is not None for p in problems) else []
            out.extend(
                at(rules[p.rule] if p.rule is not None else _line_of(text, f'"{key}"', *p.near), p.message)
                for p in problems
            )
    return out


def _misplaced(key: str) -> str:
    return (
        f"{key} belongs on a record type's schema (one with x-kb-dir): on a shared schema it applies to no "
        "record; move it to each type it is meant for"
    )


def _rule_lines(text: str, key: str, rules: list[Any]) -> list[int]:
    """The line of each rule of a list of them, found by its code, in order (two of one code each at its own)."""
    lines = []
    start = max(text.find(f'"{key}"'), 0)
    for rule in rules:
        code = rule.get("code") if isinstance(rule, dict) else None
        found = key_pattern("code", code).search(text, start) if isinstance(code, str) else None
        start = found.start() if found else start
        lines.append(text.count("\n", 0, start) + 1)
        start += 1
    return lines


def _annotated_fields(node: Any, key: str, path: tuple[str, ...] = ()):
    """(the field's path of names, its schema) for every field of a schema whose schema carries annotation `key`."""
    if isinstance(node, dict):
        if key in node:
            yield path, node
        for name, value in node.items():
            if name in ("properties", "$defs") and isinstance(value, dict):
                for child, sub in value.items():
                    yield from _annotated_fields(sub, key, (*path, child))
            elif name != key:
                yield from _annotated_fields(value, key, path)
    elif isinstance(node, list):
        for value in node:
            yield from _annotated_fields(value, key, path)
