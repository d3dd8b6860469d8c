"""Stage 3: validate each record's frontmatter against its type's JSON Schema.

Validation is the `jsonschema` library's, the whole 2020-12 specification; this
module only turns each error into a diagnostic at the line of the offending key.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Set as AbstractSet
from typing import Any

from jsonschema.exceptions import ValidationError, best_match

from kbtools.check.stage import Context, Judgement, Stage
from kbtools.corpus import FieldPath, Record
from kbtools.diagnostics import CODES, Diagnostic, clipped, internal_error
from kbtools.registry import RecordType

_QUOTED = re.compile(r"'([^']*)'")


class SchemaStage(Stage):
    """The record against its type's JSON Schema: a function of its bytes and the schema alone (the store is
    keyed by the schemas, so a schema edit re-judges every record)."""

    name = "schema"
    progress = "Validating"

    def judge(self, record: Record, ctx: Context) -> Judgement:
        record_type = ctx.registry.types.get(record.type) if record.type else None
        return Judgement(tuple(validate_record(record, record_type))) if record_type is not None else Judgement()


def validate_record(record: Record, record_type: RecordType) -> list[Diagnostic]:
    """One record's schema diagnostics (a function of its bytes and its schema alone)."""
    mine: list[Diagnostic] = []
    try:
        data = dict(record.data)
        errors = (
            []
            if _passes_fast(record_type, data)
            else sorted(record_type.validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
        )
        unknown = record.unknown
        misspelt = _misspelt_required(record_type, errors)
        for error in errors:
            if error.validator == "required" and not error.absolute_path and _missing(error) in unknown:
                continue  # said to be unknown, with a reason: the record is incomplete, not invalid
            if error.validator == "required" and (tuple(error.absolute_path), _missing(error)) in misspelt:
                continue  # a misspelt key names it: its KB201 says the field is required and missing
            mine.extend(_diagnose(record, record_type, error, misspelt))
        mine.extend(_unknown_problems(record, record_type, unknown))
        mine.extend(requirements(record, record_type))
    except Exception as exc:  # jsonschema failing deep inside: one diagnostic, the rest goes on
        mine = [internal_error(record.path, exc)]
    return mine


def _passes_fast(record_type: RecordType, data: dict) -> bool:
    """Whether the compiled validator accepts the record, so the Python one would find no error: only a
    record that fails (or one the compiled validator cannot take) is validated again, for kb's messages."""
    fast = record_type.fast_validator
    if fast is None:
        return False
    try:
        return fast.is_valid(data)
    except ValueError:  # a value it cannot convert (a lone surrogate in a string): Python's validator judges it
        return False


def _missing(error: ValidationError) -> str | None:
    named = _QUOTED.findall(error.message)
    return named[0] if named else None


def _misspelt_required(record_type: RecordType, errors: list[ValidationError]) -> set[tuple[FieldPath, str]]:
    """(object's path, field) of each required field that is missing where an unknown key of the same object
    comes closest to it (`vender:` for a missing `vendor`): one typo, said once, by the KB201 at the key."""
    missing = {
        (tuple(e.absolute_path), name)
        for e in errors
        if e.validator == "required" and (name := _missing(e)) is not None
    }
    if not missing:
        return set()
    named = set()
    for error in errors:
        path = tuple(error.absolute_path)
        for key in _unexpected(record_type, error):
            close = _closest(key, _declared(record_type.plan, path))
            if close is not None and (path, close) in missing:
                named.add((path, close))
    return named


def _unexpected(record_type: RecordType, error: ValidationError) -> list[str]:
    """The keys an unevaluated/additional-properties error is about that the schema never declares there
    (in 2020-12 a failing allOf branch evaluates nothing, so a declared field next to an error shows up as
    "unevaluated"; only fields the schema never declares are unknown)."""
    if error.validator not in ("unevaluatedProperties", "additionalProperties") or not isinstance(error.instance, dict):
        return []
    named = set(_QUOTED.findall(error.message))
    unexpected = [k for k in error.instance if k in named] or list(named)
    declared = _declared(record_type.plan, tuple(error.absolute_path))
    return [k for k in unexpected if k not in declared]


def _unknown_problems(record: Record, record_type: RecordType, unknown: dict[str, str]) -> list[Diagnostic]:
    """An unknown field must be one the type has, and cannot be given at the same time."""
    out = []
    declared = set(record_type.plan.properties)
    for name in unknown:
        line, col = record.position(("unknown", name))
        if name not in declared:
            message = f"unknown.{name}: '{name}' is not a field of type '{record_type.name}'"
            out.append(Diagnostic.make("KB201", record.path, line, col, message + did_you_mean(name, declared)))
        elif record.data.get(name) is not None:
            out.append(
                Diagnostic.make(
                    "KB203",
                    record.path,
                    line,
                    col,
                    f"unknown.{name}: {name} is given "
                    f"(line {record.position((name,))[0]}) and also said to be unknown; keep one",
                )
            )
    return out


def did_you_mean(name: str, declared: set[str], missing: bool = False) -> str:
    """' (did you mean 'x'?)' for a misspelt field, or nothing when no declared field is close; `missing`: 'x'
    is a required field the record lacks, which the guess says too."""
    close = _closest(name, declared)
    if close is None:
        return ""
    return f" (did you mean '{close}'? it is required, and missing)" if missing else f" (did you mean '{close}'?)"


def _closest(name: str, declared: set[str]) -> str | None:
    close = difflib.get_close_matches(name, sorted(declared), n=1)
    return close[0] if close else None


def _diagnose(
    record: Record,
    record_type: RecordType,
    error: ValidationError,
    misspelt: AbstractSet[tuple[FieldPath, str]] = frozenset(),
) -> list[Diagnostic]:
    type_name = record_type.name
    path = tuple(error.absolute_path)
    where = ".".join(str(p) for p in path)
    if error.validator in ("unevaluatedProperties", "additionalProperties") and isinstance(error.instance, dict):
        # The error sits on the object; point at each unexpected key instead.
        declared = _declared(record_type.plan, path)
        out = []
        for key in _unexpected(record_type, error):
            line, col = record.position(path + (key,))
            owner = f"in {where}" if where else f"for type '{type_name}'"
            guess = did_you_mean(key, declared, (path, _closest(key, declared)) in misspelt)
            out.append(
                Diagnostic.make(
                    "KB201",
                    record.path,
                    line,
                    col,
                    f"unknown field '{key}' {owner}{guess}",
                    hint=f"fields are declared in schema/{type_name}.schema.json",
                )
            )
        return out
    if error.validator == "required":
        missing = _QUOTED.findall(error.message)[:1]
        line, col = record.position(path) if path else (1, 1)
        owner = f" in {where}" if where else ""
        return [
            Diagnostic.make(
                "KB202",
                record.path,
                line,
                col,
                f"missing required field '{missing[0] if missing else error.message}'{owner}",
            )
        ]
    if error.validator == "anyOf" and _is_date(error.schema):
        # defs.schema.json#/$defs/date: which forms a date takes says more than the branch that came closest
        line, col = record.position(path)
        shown = clipped(error.instance) if isinstance(error.instance, str) else error.instance
        return [
            Diagnostic.make(
                "KB200",
                record.path,
                line,
                col,
                f"{where}: {shown!r} is not a date: write a day that the calendar has (YYYY-MM-DD), a month "
                "(YYYY-MM) or a year (YYYY)",
            )
        ]
    if error.context:
        # oneOf/anyOf: the closest branch explains the failure better than "not valid under any".
        best = best_match(error.context)
        message = best.message
        sub = tuple(best.absolute_path) or path
    else:
        message, sub = error.message, path
    line, col = record.position(sub)
    label = ".".join(str(p) for p in sub)
    return [Diagnostic.make("KB200", record.path, line, col, f"{label}: {message}" if label else message)]


def _is_date(schema: Any) -> bool:
    """Whether a failing anyOf is a date's (defs.schema.json#/$defs/date): one of its choices is "format": "date"."""
    choices = schema.get("anyOf") if isinstance(schema, dict) else None
    return isinstance(choices, list) and any(isinstance(c, dict) and c.get("format") == "date" for c in choices)


def requirements(record: Record, record_type: RecordType) -> list[Diagnostic]:
    """The schema's `x-kb-require` rules (the registry keeps the well-formed ones): a record lacking every field
    of a rule gets that rule's own code (for checks an audit wants counted apart), with the severity kb gives
    its own code or the one the rule gives the project's."""
    out = []
    for rule in record_type.require:
        if rule.if_any and not any(_stated(record.data, name) for name in rule.if_any):
            continue
        if not any(_stated(record.data, name) for name in rule.any_of):
            line, col = record.position(("id",))
            out.append(
                Diagnostic(
                    code=rule.code,
                    severity=rule.severity or CODES[rule.code].severity,
                    path=record.path,
                    line=line,
                    column=col,
                    message=rule.message or f"needs one of: {', '.join(rule.any_of)}",
                )
            )
    return out


def _stated(data: Any, name: str) -> bool:
    """Whether the record states `name`: a field, or with dots a key inside an object field
    (not_published.peak_fp4_dense)."""
    for part in name.split("."):
        if not isinstance(data, dict):
            return False
        data = data.get(part)
    return data not in (None, "")


def _declared(plan, path: FieldPath) -> set[str]:
    node = plan
    for part in path:
        node = node.child(part) if node else None
    return set(node.properties) if node else set()
