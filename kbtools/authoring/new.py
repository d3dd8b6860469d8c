"""Writing records: `kb new` skeletons, written atomically, never over an existing record."""

from __future__ import annotations

import ast
import datetime as dt
import difflib
import hashlib
import json
import os
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from kbtools.atomic import ChangedMeanwhile, check_inside, create_file, replace_file, writers_lock
from kbtools.check.load import LoadError, read_regular
from kbtools.check.placeholders import BODY, FILL_IN, PICK_ONE, REPLACE_IT
from kbtools.corpus import Corpus, Settings
from kbtools.diagnostics import UsageError, clipped
from kbtools.ids import id_problem
from kbtools.index import did_you_mean, no_record
from kbtools.lang.formula import FormulaError, parse_formula
from kbtools.lang.units import magnitude_in, number_or_text, parse_quantity_text
from kbtools.registry import FieldPlan, RecordType, TypeRegistry
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
    corpus: Corpus,
    type_name: str,
    name: str,
    sources: list[str],
    record_id: str | None = None,
    force: bool = False,
    from_config: Path | None = None,
    assignments: list[str] | None = None,
) -> tuple[Path, list[str]]:
    """Write a draft record; with from_config, its fields read from a config file (the type's schema says
    it can: x-kb-from-config); with assignments (--set FIELD=VALUE), a guided draft. Returns the path and what
    to tell the user about the draft, a line each."""
    registry = corpus.registry
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
    if cited and not sources and not assignments:
        raise AuthoringError(
            f"{article(type_name)} {type_name} record must cite at least one source: pass --source SOURCE-ID"
        )
    path = settings.records_path / record_type.dir / f"{record_id}.md"
    check_inside(settings.root, path.parent)  # its type directory too, not only records/
    said: list[str] = []
    if assignments and from_config is not None:
        raise AuthoringError("--set and --from-config draft a record in two ways: give one of them")
    if assignments:
        text, said = guided_draft(corpus, record_type, record_id, name, sources, assignments)
    elif from_config is not None:
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
        said = [f"  not in the config: {item}" for item in reading.missing]
        if reading.unmapped:
            said.append(f"  config keys kb does not map: {', '.join(reading.unmapped)}")
    else:
        text = skeleton(record_type, record_id, name, sources)
    with writers_lock(settings.root, settings.records_path):
        return _write_record(settings.root, path, text, force), said


# --- guided drafts: `kb new TYPE --set FIELD=VALUE`, and the examples kb init writes -------------------------------
# What a guided draft is given is the user's; every other value it needs is filled from the schema's annotations and
# the records the knowledge base holds, never from the type's name: the options kb plan ranks (x-kb-plan's over, a list
# of x-kb-ref items) are the records that agree with the ones the draft names, a figure (x-kb-quantity) is what records
# of its type state, else a value of its physical range (x-kb-range); and the figure a type is ranked by (x-kb-plan's
# rank_by) is made computable. A value the draft made up for the user is marked as an assumption to replace (KB117
# until it is); what neither gives is kb new's placeholder, as in a skeleton.
NOT_SET = frozenset({"id", "type", "name", "status", "updated", "sources", "unknown", "costs", "inputs"})
ASSUMED = "an assumption"


@dataclass(frozen=True)
class Peer:
    """A record a guided draft may draw on: its type, id and frontmatter."""

    type: str
    id: str
    data: Mapping[str, Any]


def given_settings(corpus: Corpus, record_type: RecordType, settings: list[str]) -> dict[str, Any]:
    """--set FIELD=VALUE as the draft's data: a field of the type (else the fields it has, and the one meant), a
    reference the id of an existing record of the type it names (else the records meant), a list of references
    comma-separated, a bare number of a figure in its canonical unit. A value kb check refuses is refused before
    anything is written (kbtools.authoring.new.new_record)."""
    fields = [f for f in record_type.property_order if f not in NOT_SET]
    given: dict[str, Any] = {}
    for setting in settings:
        field_name, sep, text = (part.strip() for part in setting.partition("="))
        plan = record_type.plan.properties.get(field_name)
        if not sep or not text or plan is None or field_name in NOT_SET:
            close = difflib.get_close_matches(field_name, fields, n=3)
            raise AuthoringError(
                f"--set '{clipped(setting, 60)}': write FIELD=VALUE, FIELD a field of {article(record_type.name)} "
                f"{record_type.name} record{did_you_mean(close) if close else ''} ({', '.join(fields)})"
            )
        if field_name in given:
            raise AuthoringError(f"--set {field_name} is given twice; give it once")
        listed = plan.items is not None and bool(plan.items.ref_types)
        if plan.ref_types or listed:
            types = plan.items.ref_types if listed and plan.items is not None else plan.ref_types
            ids = [_reference(corpus, field_name, part.strip(), types) for part in text.split(",") if part.strip()]
            if not listed and len(ids) != 1:
                raise AuthoringError(f"--set {field_name} names one record, not {len(ids)}")
            given[field_name] = ids if listed else ids[0]
        elif plan.quantity is not None:
            number = number_or_text(text)
            bare = isinstance(number, (int, float)) and plan.quantity not in ("1", "*")
            given[field_name] = f"{text} {plan.quantity}" if bare else number
        else:  # a number, a date, true or false as YAML reads them; anything else the text itself
            try:
                value = yaml.safe_load(text)
            except yaml.YAMLError:
                value = text
            given[field_name] = value if isinstance(value, (str, int, float, bool, dt.date)) else text
    return given


def guided_draft(
    corpus: Corpus, record_type: RecordType, record_id: str, name: str, sources: list[str], assignments: list[str]
) -> tuple[str, list[str]]:
    """`kb new TYPE --set FIELD=VALUE ...` in the knowledge base `corpus`: the draft's text, checked as kb check reads
    it, and what to tell the user, a line each (every value it assumed; how to plan it, for a type kb plan plans)."""
    given = given_settings(corpus, record_type, assignments)
    peers = [Peer(str(r.type), r.id, r.data) for r in corpus.records.values() if r.type]
    text, assumed = guided(corpus.registry, record_type, record_id, name, sources, given, peers)
    checked_draft(corpus, record_type, f"{corpus.settings.records_dir}/{record_type.dir}/{record_id}.md", text)
    said = [f"  {ASSUMED} to replace: {line}" for line in assumed]
    if record_type.planning:
        said.append(f"  plan it now: kb plan {record_type.dir}/{record_id}")
    return text, said


def _reference(corpus: Corpus, field_name: str, text: str, types: tuple[str, ...]) -> str:
    found, candidates, close = corpus.index.named(text)
    if found is None:
        raise AuthoringError(f"--set {field_name}: {no_record(text, candidates, close)}")
    if found.type not in types:
        wanted = " or ".join(types)
        raise AuthoringError(
            f"--set {field_name}: {found.key} is {article(found.type or 'record')} {found.type} record; {field_name} "
            f"names {article(wanted)} {wanted} record"
        )
    return found.id if corpus.index.resolve(found.id)[0] is found else found.key


def guided(
    registry: TypeRegistry,
    record_type: RecordType,
    record_id: str,
    name: str,
    sources: list[str],
    given: Mapping[str, Any],
    peers: list[Peer],
    today: dt.date | None = None,
    body: str | None = None,
    examples: dict[str, str] | None = None,
) -> tuple[str, list[str]]:
    """A draft with the values `given`, and every other value it needs filled (see above): its text, and what it
    assumed for the user, one line each."""
    today = today or dt.date.today()
    properties = record_type.schema.get("properties", {})
    data: dict[str, Any] = {"type": record_type.name, **given}
    lines = {f: f"{f}: {_yaml(v)}" for f, v in given.items()}
    assumed: list[str] = []
    envelope = {"id", "type", "name", "status", "confidence", "updated", "sources"}
    pending = [
        f
        for f in dict.fromkeys([*record_type.schema.get("required", []), *record_type.new_fields])
        if f not in envelope and f not in data
    ]
    for _ in range(len(properties) + 1):  # each round adds a field: never more rounds than the type has fields
        if not pending:
            break
        for field_name in pending:
            value, line, said = _filled(registry, record_type, field_name, data, peers, today, examples or {})
            data[field_name], lines[field_name] = value, line
            assumed += [said] if said else []
        pending = [
            f
            for f in dict.fromkeys(
                [*_conditional_required(record_type.schema, data), *_ranked_needs(record_type, data)]
            )
            if f not in data and f not in envelope
        ]
    head = [
        "---",
        f"id: {record_id}",
        f"type: {record_type.name}",
        f"name: {_yaml(name)}",
        "status: draft",
        "confidence: 0.3",
        f"updated: {today.isoformat()}",
    ]
    if sources:
        head.append(f"sources: [{', '.join(sources)}]")
    elif any(
        isinstance(s, dict) and s.get("$ref", "").endswith("#/$defs/cited") for s in record_type.schema.get("allOf", [])
    ):
        head += ["unknown:", "  sources: no source yet; cite the one your values come from, once they are yours"]
    order = [f for f in record_type.property_order if f in lines] + [
        f for f in lines if f not in record_type.property_order
    ]
    named = [
        f"[[{registry.types[t].dir}/{_bare(data[f])}]]"
        for f in order
        if isinstance(data.get(f), str) and (t := next(iter(_plan(record_type, f).ref_types), None)) in registry.types
    ]
    asked = (
        "Replace each value marked as an assumption with yours, and say here where it comes from."
        if assumed
        else "Say here what it is, and where its values come from."
    )
    text = body or f"{name}: a draft kb new wrote{' for ' + ', '.join(named) if named else ''}. {asked}"
    return "\n".join([*head, *(lines[f] for f in order), "---", text, ""]), assumed


def _plan(record_type: RecordType, field_name: str) -> FieldPlan:
    return record_type.plan.properties.get(field_name) or FieldPlan()


def _filled(
    registry: TypeRegistry,
    record_type: RecordType,
    field_name: str,
    data: dict[str, Any],
    peers: list[Peer],
    today: dt.date,
    examples: dict[str, str],
) -> tuple[Any, str, str | None]:
    """(value, its line, what was assumed or None) for a field the draft needs and was not given."""
    plan = _plan(record_type, field_name)
    spec = record_type.schema.get("properties", {}).get(field_name, {})
    options = record_type.planning.get("over") if isinstance(record_type.planning, dict) else None
    if field_name == options and plan.items is not None and plan.items.ref_types:
        # the options kb plan ranks (x-kb-plan's over): every record here that could be one, for the plan to compare
        target = plan.items.ref_types[0]
        agreeing = _agreeing(registry, target, data, record_type, peers)
        if agreeing:
            comment = (
                f"  # the {len(agreeing)} {target} record{'s' if len(agreeing) > 1 else ''} here that agree with the "
                "records it names: keep those that apply"
            )
            return agreeing, f"{field_name}: [{', '.join(agreeing)}]{comment}", None
    if plan.quantity is not None and not (spec.get("examples") or "default" in spec):
        found = _assumed_figure(record_type, field_name, plan, data, peers)
        if found is not None:
            value, origin = found
            what = _what(spec, plan.quantity)
            return (
                value,
                f"{field_name}: {_yaml(value)}  # {what}: {ASSUMED} ({origin}), replace it",
                f"{field_name}: {value} ({origin})",
            )
    text, comment, value = _placeholder(field_name, spec, record_type.resolver, today, examples)
    return value, f"{field_name}: {text}{comment}", None


def _agreeing(
    registry: TypeRegistry, target: str, data: Mapping[str, Any], record_type: RecordType, peers: list[Peer]
) -> list[str]:
    """The records of type `target` that a draft naming `data`'s references may list: none that is deprecated, and
    none whose own reference names a record of a type the draft names, but another one (a tier of another
    accelerator)."""
    target_type = registry.types.get(target)
    if target_type is None:
        return []
    named = _named_by_type(record_type, data)
    out = []
    for peer in peers:
        if peer.type != target or peer.data.get("status") == "deprecated" or peer.data.get("superseded_by"):
            continue
        theirs = _named_by_type(target_type, peer.data)
        if all(ids <= named[kind] for kind, ids in theirs.items() if kind in named):
            out.append(peer.id)
    return sorted(out)


def _named_by_type(record_type: RecordType, data: Mapping[str, Any]) -> dict[str, set[str]]:
    """The ids a record's single references name, by the type each names."""
    named: dict[str, set[str]] = {}
    for field_name, value in data.items():
        types = _plan(record_type, field_name).ref_types
        if types and isinstance(value, str):
            named.setdefault(types[0], set()).add(_bare(value))
    return named


def _assumed_figure(
    record_type: RecordType, field_name: str, plan: FieldPlan, data: Mapping[str, Any], peers: list[Peer]
) -> tuple[Any, str] | None:
    """A figure for the user to replace, and where it came from: the median of what the records of the type state,
    of those naming the same record as the draft in its first reference field (in the schema's order) that any do,
    else of all of them; else the middle of its physical range, or its least value when the range has no top; None
    when neither says anything."""
    unit, physical = plan.quantity or "1", plan.physical
    stated = [
        (peer, magnitude)
        for peer in peers
        if peer.type == record_type.name and peer.data.get("status") != "deprecated"
        if (magnitude := _magnitude(peer.data.get(field_name), unit)) is not None
    ]
    refs = [f for f in record_type.property_order if isinstance(data.get(f), str) and _plan(record_type, f).ref_types]
    alike, values = "", [m for _, m in stated]
    for ref in refs:
        same = [m for peer, m in stated if _bare(peer.data.get(ref)) == _bare(data[ref])]
        if same:
            alike, values = f" naming the same {ref}", same
            break
    if values:
        kind = f"{record_type.name} record{'s' if len(values) > 1 else ''}"
        origin = (
            f"the median of {len(values)} {kind} here{alike}"
            if len(values) > 1
            else f"as 1 {kind} here{alike} states it"
        )
        return _figure(statistics.median_low(values), unit), origin
    if physical is None or physical.low is None:
        return None
    if physical.high is not None and not physical.whole:
        return _figure((physical.low + physical.high) / 2, unit), "the middle of the range it can take"
    if physical.low_open and not physical.whole:
        return None
    return _figure(physical.low + (1 if physical.low_open else 0), unit), "the least it can be"


def _bare(value: Any) -> str:
    """A reference's id, written bare or as dir/id."""
    return str(value or "").rpartition("/")[2]


def _magnitude(value: Any, unit: str) -> float | None:
    """A stated figure in the field's canonical unit: its value, or its preferred value among competing ones."""
    if isinstance(value, list):
        preferred = [v for v in value if isinstance(v, dict) and v.get("rank") == "preferred"]
        value = (preferred or value or [None])[0]
    if isinstance(value, dict):
        value = value.get("value")
    if value is None or isinstance(value, bool):
        return None
    try:
        return magnitude_in(parse_quantity_text(value, unit), unit) if unit != "*" else None
    except Exception:  # a figure kb check reports (its unit, its text): not one to draw a draft from
        return None


def _figure(magnitude: float, unit: str) -> Any:
    number: Any = int(magnitude) if float(magnitude).is_integer() else float(f"{magnitude:.6g}")
    return number if unit == "1" else f"{number} {unit}"


def _what(spec: Mapping[str, Any], unit: str) -> str:
    """What a figure is, from the first clause of its schema's description: what the user is asked to put."""
    description = str(spec.get("description") or "")
    first = re.split(r"; |\. |: | \(|\.$", description, maxsplit=1)[0].strip()
    if not first:
        return f"a figure in {unit}"
    return first[:1].lower() + first[1:] if not first[1:2].isupper() else first


def _ranked_needs(record_type: RecordType, data: Mapping[str, Any]) -> list[str]:
    """The fields of its own a draft must hold for the figure its type is ranked by (x-kb-plan's rank_by) to be
    computed: a field a formula reads outside default(), or a default()'s first one when its fallback cannot be
    computed either (hit_rate, where the fallback needs a reuse measurement the draft does not name). A field of a
    record the draft names is that record's to hold."""
    rank_by = record_type.planning.get("rank_by") if isinstance(record_type.planning, dict) else None
    costs = record_type.costs if isinstance(record_type.costs, dict) else {}
    if not isinstance(rank_by, str) or rank_by not in costs:
        return []
    own = set(record_type.schema.get("properties", {})) - NOT_SET
    memo: dict[str, set[str]] = {}

    def cost(name: str) -> set[str]:
        if name not in memo:
            memo[name] = set()  # a cycle reads as computable; kb check reports it
            spec = costs.get(name)
            formula = spec.get("formula") if isinstance(spec, dict) else None
            loop = set(spec.get("for_each") or {}) if isinstance(spec, dict) else set()
            try:
                memo[name] = walk(parse_formula(formula).tree, loop) if isinstance(formula, str) else set()
            except FormulaError:
                memo[name] = set()
        return memo[name]

    def walk(node: ast.AST, loop: set[str]) -> set[str]:
        if isinstance(node, ast.Name):
            if node.id in loop:
                return set()
            if node.id in costs:
                return cost(node.id)
            return {node.id} if node.id in own and node.id not in data else set()
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return walk(node.value, loop) if node.value.id not in costs else set()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "default" and node.args:
            first = walk(node.args[0], loop)
            if not first or not any(not walk(arg, loop) for arg in node.args[1:]):
                return first
            return set()
        return set().union(*(walk(child, loop) for child in ast.iter_child_nodes(node)))

    return sorted(cost(rank_by))


def _yaml(value: Any) -> str:
    """A value as a YAML flow scalar or list: plain where YAML reads it back as the same, else quoted as JSON."""
    if isinstance(value, (dt.date, int, float)) and not isinstance(value, bool):
        return value.isoformat() if isinstance(value, dt.date) else str(value)
    if isinstance(value, list):
        return f"[{', '.join(_yaml(v) for v in value)}]"
    if isinstance(value, dict):  # in flow style, as kb fmt writes one
        return "{" + ", ".join(f"{_yaml(k)}: {_yaml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9 ._/%+-]*", value) and not value.endswith(" "):
        try:
            if yaml.safe_load(value) == value:
                return value
        except yaml.YAMLError:
            pass
    return json.dumps(value, ensure_ascii=False, default=str)


def checked_draft(corpus: Corpus, record_type: RecordType, rel: str, text: str) -> None:
    """A guided draft read as kb check reads a record, before it is written: a value its schema or a figure's
    physical range refuses (hit_rate=1.5, gpus=0) is refused, with kb check's words, and nothing is written."""
    from kbtools.check.compute import Computer
    from kbtools.check.compute.derivations import parse_quantities
    from kbtools.check.load import load_record_bytes
    from kbtools.check.schema import validate_record

    raw = text.encode()
    made, problems = load_record_bytes(raw, rel, Path(rel), corpus.registry, hashlib.blake2b(raw).hexdigest())
    if made is not None:
        problems = [d for d in validate_record(made, record_type) if d.severity == "error"]
        reader = Computer(replace(corpus, records={**corpus.records, made.key: made}))
        parse_quantities(reader, made)
        problems += [d for d in reader.diagnostics if d.severity == "error"]
    if problems:
        raise AuthoringError("; ".join(d.message for d in problems) + "; nothing written")


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
