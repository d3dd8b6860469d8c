"""Writing records: `kb new` skeletons, written atomically, never over an existing record."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from kbtools.atomic import ChangedMeanwhile, create_file, replace_file, writers_lock
from kbtools.check.links import Index
from kbtools.corpus import Corpus, Settings
from kbtools.registry import RecordType, TypeRegistry


class AuthoringError(Exception):
    """A request kb refuses, with the reason a user can act on."""


def slug(name: str) -> str:
    """'NVIDIA H200 SXM' -> 'nvidia-h200-sxm': lower case, runs of anything else become one hyphen."""
    text = re.sub(r"[^a-z0-9]+", "-", name.lower().replace("+", " plus ").replace(".", "-")).strip("-")
    return re.sub(r"-+", "-", text)


def _placeholder(name: str, schema: dict[str, Any], resolver) -> tuple[str, str]:
    """(YAML value, trailing comment) for a required field, valid against its schema."""
    if isinstance(schema.get("$ref"), str):
        schema = {**resolver.lookup(schema["$ref"]).contents, **{k: v for k, v in schema.items() if k != "$ref"}}
    if schema.get("examples"):  # the schema's own example (JSON Schema's `examples` keyword)
        return json.dumps(schema["examples"][0], ensure_ascii=False), "  # an example: replace it"
    if "enum" in schema:
        return str(schema["enum"][0]), f"  # one of: {', '.join(map(str, schema['enum']))}"
    if "const" in schema:
        return str(schema["const"]), ""
    kind = schema.get("type")
    if kind == "object":
        return "{}", "  # fill in"
    if kind == "array":
        return "[]", "  # fill in"
    if kind in ("integer", "number"):
        return str(schema.get("minimum", 1)), "  # fill in"
    if "x-kb-quantity" in schema:
        return "0", f"  # a quantity in {schema['x-kb-quantity']}"
    return '"TODO"', "  # fill in"


def skeleton(
    record_type: RecordType, record_id: str, name: str, sources: list[str], today: dt.date | None = None
) -> str:
    """A draft record that passes `kb check`: envelope, then the type's required fields."""
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
    for field_name in record_type.schema.get("required", []):
        if field_name in ("id", "type", "name", "status", "confidence", "updated", "sources"):
            continue
        value, comment = _placeholder(field_name, properties.get(field_name, {}), record_type.resolver)
        lines.append(f"{field_name}: {value}{comment}")
    lines += [
        "---",
        f"What {name} is, in your own words, with the figures it is known for and",
        "links like `[[dir/id]]` to related records.",
        "",
    ]
    return "\n".join(lines)


def check_sources(corpus: Corpus, sources: list[str]) -> None:
    """Every --source names a record of the type that plays the source role, or kb new refuses."""
    index = Index(corpus)
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
    record_id = record_id or slug(name)
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", record_id or ""):
        raise AuthoringError(f"cannot make an id from '{name}'; pass --id")
    cited = any(
        isinstance(s, dict) and s.get("$ref", "").endswith("#/$defs/cited") for s in record_type.schema.get("allOf", [])
    )
    if cited and not sources:
        raise AuthoringError(
            f"{article(type_name)} {type_name} record must cite at least one source: pass --source SOURCE-ID"
        )
    path = settings.records_path / record_type.dir / f"{record_id}.md"
    reading = None
    if from_config is not None:
        reader = record_type.schema.get("x-kb-from-config")
        if not isinstance(reader, dict) or reader.get("format") != "huggingface":
            readers = sorted(
                t.name for t in registry.types.values() if isinstance(t.schema.get("x-kb-from-config"), dict)
            )
            raise AuthoringError(
                f"{article(type_name)} {type_name} record cannot be read from a config: its schema declares no x-kb-from-config "
                f"(types that can: {', '.join(readers) or 'none'})"
            )
        from kbtools.authoring.hfconfig import ConfigError, load_config, read_config, record_text

        try:
            reading = read_config(load_config(from_config), from_config, dict(reader.get("fields", {})))
        except ConfigError as exc:
            raise AuthoringError(f"{exc}; nothing written") from None
        text = record_text(
            record_type.name, record_id, name, sources, reading, dt.date.today().isoformat(), from_config.name
        )
    else:
        text = skeleton(record_type, record_id, name, sources)
    with writers_lock(settings.records_path):
        return _write_record(settings.root, path, text, force), reading


def _write_record(root: Path, path: Path, text: str, force: bool) -> Path:
    if force:
        try:
            existing = path.read_bytes() if path.exists() else None
            replace_file(path, text, expected=existing)
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


def article(word: str) -> str:
    """'a' or 'an' before a word, by how it is spelt (good enough for type names: an engine, a model)."""
    return "an" if word[:1].lower() in "aeiou" else "a"
