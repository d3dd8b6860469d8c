"""Writing records: `kb new` skeletons, written atomically, never over an existing record."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import Any

from kbtools.atomic import ChangedMeanwhile, check_inside, create_file, replace_file, writers_lock
from kbtools.check.load import LoadError, read_regular
from kbtools.check.placeholders import BODY, FILL_IN, PICK_ONE, REPLACE_IT
from kbtools.corpus import Corpus, Settings
from kbtools.diagnostics import UsageError, clipped
from kbtools.ids import id_problem
from kbtools.registry import RecordType, TypeRegistry
from kbtools.registry.annotations import value_of
from kbtools.registry.plan import is_date


class AuthoringError(UsageError):
    """A request kb refuses, with the reason a user can act on."""


def slug(name: str) -> str:
    """'NVIDIA H200 SXM' -> 'nvidia-h200-sxm': lower case, runs of anything else become one hyphen."""
    text = re.sub(r"[^a-z0-9]+", "-", name.lower().replace("+", " plus ").replace(".", "-")).strip("-")
    return re.sub(r"-+", "-", text)


def _placeholder(
    name: str, schema: dict[str, Any], resolver, today: dt.date, examples: dict[str, str]
) -> tuple[str, str, Any]:
    """(YAML value, trailing comment, the value as data) for a required field, valid against its schema.
    `examples`: type -> the id of a record of that type, for a field that names one (x-kb-ref)."""
    if isinstance(schema.get("$ref"), str):
        schema = {**resolver.lookup(schema["$ref"]).contents, **{k: v for k, v in schema.items() if k != "$ref"}}
    if isinstance(schema.get("x-kb-ref"), str):
        target = examples.get(schema["x-kb-ref"])
        if target:
            return target, f"  # an example: {REPLACE_IT}", target
        return '"TODO"', f"  # the id of {article(schema['x-kb-ref'])} {schema['x-kb-ref']} record: {FILL_IN}", "TODO"
    if schema.get("examples"):  # the schema's own example (JSON Schema's `examples` keyword)
        value = schema["examples"][0]
        return json.dumps(value, ensure_ascii=False), f"  # an example: {REPLACE_IT}", value
    listed = schema["enum"] if isinstance(schema.get("enum"), list) else value_of("x-kb-extensible", schema)
    if listed:  # an enum, or the values an extensible vocabulary lists beside the project's own
        schema = {**schema, "enum": list(listed)}
    if "enum" in schema:
        return (
            str(schema["enum"][0]),
            f"  # one of: {', '.join(map(str, schema['enum']))}: {PICK_ONE}",
            schema["enum"][0],
        )
    if "const" in schema:
        return str(schema["const"]), "", schema["const"]
    if is_date(schema, resolver):  # "format": "date", or the shared date of defs.schema.json
        return today.isoformat(), f"  # {FILL_IN}", today.isoformat()
    kind = schema.get("type")
    if kind == "object":
        return "{}", f"  # {FILL_IN}", {}
    if kind == "array":
        items = schema.get("items")
        if isinstance(items, dict) and isinstance(items.get("x-kb-ref"), str) and schema.get("minItems"):
            # a list of references that may not be empty: the one reference kb new cannot guess, left TODO, and
            # as many more, each its own TODO, as the list must hold
            first, _, value = _placeholder(name, items, resolver, today, examples)
            more = [f"TODO-{n}" for n in range(2, int(schema["minItems"]) + 1)]
            return (
                f"[{', '.join([first, *more])}]",
                f"  # ids of {items['x-kb-ref']} records: {FILL_IN}",
                [value, *more],
            )
        return "[]", f"  # {FILL_IN}", []
    if kind in ("integer", "number"):
        return str(schema.get("minimum", 1)), f"  # {FILL_IN}", schema.get("minimum", 1)
    if "x-kb-quantity" in schema:
        unit = schema["x-kb-quantity"]
        shown = f"1 {unit}" if unit not in ("*", "1", "") else "1"
        return json.dumps(shown), f"  # a quantity in {unit}: {FILL_IN}", shown
    return '"TODO"', f"  # {FILL_IN}", "TODO"


def _conditional_required(schema: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """Fields the schema's `if`/`then` parts, and a top-level anyOf, require of a record like `data` (the first way of
    each anyOf)."""
    from jsonschema import Draft202012Validator

    wanted: list[str] = []
    for choice in schema.get("anyOf", [])[:1]:  # a top-level anyOf of requireds: its first way (published)
        if isinstance(choice, dict):
            wanted += [f for f in choice.get("required", []) if isinstance(f, str)]
    for part in schema.get("allOf", []):
        if not (isinstance(part, dict) and isinstance(part.get("if"), dict) and isinstance(part.get("then"), dict)):
            continue
        if not Draft202012Validator(part["if"]).is_valid(data):
            continue
        then = part["then"]
        wanted += [f for f in then.get("required", []) if isinstance(f, str)]
        for choice in then.get("anyOf", [])[:1]:
            wanted += [f for f in choice.get("required", []) if isinstance(f, str)]
    return wanted


def skeleton(
    record_type: RecordType,
    record_id: str,
    name: str,
    sources: list[str],
    today: dt.date | None = None,
    examples: dict[str, str] | None = None,
) -> str:
    """A draft record that passes `kb check`: envelope, then the type's required fields, those its
    conditions require of the draft included."""
    today = today or dt.date.today()
    quoted_name = name.replace("\\", "\\\\").replace('"', '\\"')
    lines = [
        "---",
        f"id: {record_id}",
        f"type: {record_type.name}",
        f'name: "{quoted_name}"',
        "status: draft             # verified | draft | contested | deprecated",
        "confidence: 0.3",
        f"updated: {today.isoformat()}",
    ]
    if sources:
        lines.append(f"sources: [{', '.join(sources)}]")
    properties = record_type.schema.get("properties", {})
    envelope = {"id", "type", "name", "status", "confidence", "updated", "sources"}
    data: dict[str, Any] = {"type": record_type.name}
    # the required fields, and those the schema asks a draft to hold (x-kb-new): a source's origin decides
    # which rules its figures meet (KB561), so a draft that left it out would fail them unseen
    asked = list(record_type.new_fields)
    pending = [f for f in dict.fromkeys([*record_type.schema.get("required", []), *asked]) if f not in envelope]
    while pending:
        for field_name in pending:
            value, comment, as_data = _placeholder(
                field_name, properties.get(field_name, {}), record_type.resolver, today, examples or {}
            )
            lines.append(f"{field_name}: {value}{comment}")
            data[field_name] = as_data
        pending = [
            f
            for f in dict.fromkeys(_conditional_required(record_type.schema, data))
            if f not in data and f not in envelope
        ]
    lines += [
        "---",
        f"What {name} is, {BODY} and",
        "links like `[[dir/id]]` to related records.",
        "",
    ]
    return "\n".join(lines)


def check_sources(corpus: Corpus, sources: list[str]) -> None:
    """Every --source names a record of the type that plays the source role, or kb new refuses."""
    index = corpus.index
    for source in sources:
        target, _ = index.resolve(source)
        if target is None or not corpus.registry.has_role(target.type, "source"):
            raise AuthoringError(f"no source record '{source}'; write it first: kb new source --name \"...\"")


def new_record(
    settings: Settings,
    registry: TypeRegistry,
    type_name: str,
    name: str,
    sources: list[str],
    record_id: str | None = None,
    force: bool = False,
    from_config: Path | None = None,
) -> tuple[Path, Any]:
    """Write a draft record; with from_config, its fields read from a config file (the type's schema says
    it can: x-kb-from-config). Returns the path and what the reading left out (or None)."""
    record_type = registry.types.get(type_name)
    if record_type is None:
        raise AuthoringError(f"no record type '{type_name}' (known: {', '.join(sorted(registry.types))})")
    made = record_id or slug(name)
    # checked before any path is made of it: an over-long id would be ENAMETOOLONG, a slash another directory
    problem = id_problem(made)
    if problem:
        shown = clipped(record_id or name, 80)
        if record_id:
            raise AuthoringError(f"--id '{shown}' is not an id ({problem}); pass another --id")
        raise AuthoringError(f"cannot make an id from '{shown}' ({problem}); pass --id")
    record_id = made
    cited = any(
        isinstance(s, dict) and s.get("$ref", "").endswith("#/$defs/cited") for s in record_type.schema.get("allOf", [])
    )
    if cited and not sources:
        raise AuthoringError(
            f"{article(type_name)} {type_name} record must cite at least one source: pass --source SOURCE-ID"
        )
    path = settings.records_path / record_type.dir / f"{record_id}.md"
    check_inside(settings.root, path.parent)  # its type directory too, not only records/
    reading = None
    if from_config is not None:
        reader = record_type.from_config
        if reader is None or reader.get("format") != "huggingface":
            readers = sorted(t.name for t in registry.types.values() if t.from_config is not None)
            raise AuthoringError(
                f"{article(type_name)} {type_name} record cannot be read from a config: its schema declares no x-kb-from-config "
                f"(types that can: {', '.join(readers) or 'none'})"
            )
        from kbtools.authoring.hfconfig import ConfigError, read_config, record_text
        from kbtools.authoring.hfvalues import load_config

        try:
            reading = read_config(load_config(from_config), from_config, dict(reader.get("fields", {})))
        except ConfigError as exc:
            raise AuthoringError(f"{exc}; nothing written") from None
        text = record_text(
            record_type.name, record_id, name, sources, reading, dt.date.today().isoformat(), from_config.name
        )
    else:
        text = skeleton(record_type, record_id, name, sources)
    with writers_lock(settings.root, settings.records_path):
        return _write_record(settings.root, path, text, force), reading


def _write_record(root: Path, path: Path, text: str, force: bool) -> Path:
    if force:
        try:
            replace_file(path, text, expected=_existing(path))
        except LoadError as exc:
            raise AuthoringError(f"cannot replace {path.relative_to(root)}: {exc.message}") from None
        except ChangedMeanwhile as exc:
            raise AuthoringError(str(exc)) from None
        except OSError as exc:
            raise AuthoringError(f"cannot replace {path.relative_to(root)}: {exc.strerror}") from None
        return path
    try:
        create_file(path, text)
    except FileExistsError:
        raise AuthoringError(
            f"{path.relative_to(root)} already exists; kb new never overwrites a record (--force replaces it)"
        ) from None
    return path


def _existing(path: Path) -> bytes | None:
    """What --force replaces, read as kb check reads a record (LoadError for a FIFO, device, directory or
    dangling link planted there: refused unread, never waited on nor replaced); None when nothing is."""
    return read_regular(path)[0] if os.path.lexists(path) else None


def article(word: str) -> str:
    """'a' or 'an' before a word, by how it is spelt (good enough for type names: an engine, a model)."""
    return "an" if word[:1].lower() in "aeiou" else "a"
