"""The rules a schema declares as data: x-kb-constraints (cross-record rules of provenance, applied by
check/constraints.py) and x-kb-require (fields a record needs one of, applied by check/schema.py). Each rule's
finding carries the rule's own code and severity, so what is wrong with a rule is found here, before any record is
judged by it: an ill-formed rule is KB210 at its schema (registry/annotations.py) and judges no record.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from kbtools.config import CODE
from kbtools.diagnostics import CODES, REQUIREMENT_CODES, Severity

CONDITION_KEYS = ("present", "same_url_as", "within_url_of", "in")  # the condition objects x-kb-constraints knows
# what each condition object's argument is: a boolean, or the name of one of the record's fields
CONDITION_ARGUMENTS = {
    "present": "true or false",
    "same_url_as": "the name of a URL field",
    "within_url_of": "the name of a URL field",
    "in": "the name of a list field",
}


def json_kind(value: Any) -> str:
    """What a JSON value is, in the words of a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float) and math.isnan(value):  # Python's json reads NaN, which equals nothing
        return "NaN"
    return {str: "a string", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def is_plain(value: Any) -> bool:
    """A value a condition compares a field with: a string, a boolean or a finite number."""
    return isinstance(value, (str, bool, int)) or (isinstance(value, float) and math.isfinite(value))


def condition_problem(condition: Any) -> str | None:
    """What is wrong with one condition of a rule (None when it is well-formed): each argument is of the type
    its condition reads, so applying the rule to any record cannot fail."""
    if isinstance(condition, dict):
        if len(condition) != 1 or next(iter(condition)) not in CONDITION_KEYS:
            return "a condition object is one of " + ", ".join(f"{{{k}: ...}}" for k in CONDITION_KEYS)
        ((kind, argument),) = condition.items()
        wanted = CONDITION_ARGUMENTS[kind]
        fits = isinstance(argument, bool) if kind == "present" else isinstance(argument, str) and argument.strip()
        return None if fits else f'{{"{kind}": ...}} takes {wanted}, not {json_kind(argument)}'
    if isinstance(condition, list):
        if not condition:
            return "a list of values names at least one (an empty list matches nothing)"
        odd = next((value for value in condition if not is_plain(value)), None)
        return None if odd is None else f"a list of values holds strings, numbers or booleans, not {json_kind(odd)}"
    if not is_plain(condition):
        return f"a value to equal is a string, a number or a boolean, not {json_kind(condition)}"
    return None


def rule_problems(rule: Any) -> list[str]:
    """What is wrong with one x-kb-constraints rule (empty when it is well-formed); the registry reports these."""
    if not isinstance(rule, dict):
        return ["a constraint is an object"]
    problems = rule_code_problems(rule, "constraint")
    code = rule.get("code")
    if not isinstance(rule.get("message"), str) or not rule["message"].strip():
        problems.append(f"constraint {code}: a message saying what the rule asks")
    each = rule.get("each", "record")
    if not (isinstance(each, str) and each.strip()):
        problems.append(f"constraint {code}: each is 'record', 'quantity' or a list field's name")
    if not any(k in rule for k in ("require", "cites")):
        problems.append(f"constraint {code}: asks nothing (give require or cites)")
    for part in ("when", "require", "cites"):
        conditions = rule.get(part, {})
        if not isinstance(conditions, dict):
            problems.append(f"constraint {code}: {part} maps fields to conditions")
            continue
        for name, condition in conditions.items():
            problem = condition_problem(condition)
            if problem:
                problems.append(f"constraint {code}: {part}.{name}: {problem}")
    return problems


def rule_code_problems(rule: dict[str, Any], kind: str, own: frozenset[str] = frozenset()) -> list[str]:
    """What is wrong with the code and severity of a rule a schema declares (a constraint, a requirement): its
    finding carries that code and severity, so the code is one kb does not define (or, for a kind of rule kb
    has codes for, one of `own`, whose severity kb sets), and a project's code comes with its severity."""
    code = rule.get("code")
    if isinstance(code, str) and code in own:
        if "severity" in rule:  # one code, one severity: kb.toml changes it for every finding of the code
            return [f"{kind} {code}: {code} is kb's own, whose severity kb sets (kb.toml's [severity] changes it)"]
        return []
    problems = []
    if not (isinstance(code, str) and CODE.match(code)):
        problems.append(f"{kind} code {code!r} is not like 'KB561' (two capital letters and three digits)")
    elif code in CODES:
        # a rule's finding must never pass for kb's own: KB900 would read as a bug in kb, KB120 as a settings mistake
        problems.append(
            f"{kind} code '{code}' is kb's own (docs/diagnostics.md); a rule takes a code kb does not "
            "define, best with the project's own two letters (XY561)"
            + (f", or one of kb's codes for this kind of rule ({', '.join(sorted(own))})" if own else "")
        )
    if rule.get("severity") not in ("error", "warning"):
        problems.append(f"{kind} {code}: severity is 'error' or 'warning', not {rule.get('severity')!r}")
    return problems


REQUIRE_KEYS = ("any_of", "code", "severity", "message", "if_any")
DEFAULT_REQUIRE_CODE = "KB202"  # a rule that names no code reports what a missing required field does


def require_problems(rule: Any, fields: set[str], type_name: str) -> list[str]:
    """What is wrong with one x-kb-require rule {any_of, code, severity, message} of a type whose fields are
    `fields` (empty when it is sound). Before: a code kb does not define failed every record it judged (KB900, a
    KeyError), and one of kb's own (KB900, KB120) passed the rule's finding off as kb's."""
    if not isinstance(rule, dict):
        return [f"a rule is an object {{{', '.join(REQUIRE_KEYS)}}}, not {json_kind(rule)}"]
    code = rule.get("code", DEFAULT_REQUIRE_CODE)
    problems = [
        f"unknown key {json.dumps(key)} (known: {', '.join(REQUIRE_KEYS)})" for key in rule if key not in REQUIRE_KEYS
    ]
    problems.extend(rule_code_problems({**rule, "code": code}, "rule", REQUIREMENT_CODES))
    any_of = rule.get("any_of")
    for key, names, lists, may_be_empty in (
        ("any_of", any_of, "the fields a record needs one of", False),
        ("if_any", rule.get("if_any", []), "the fields whose presence makes the rule apply", True),
    ):
        if not (isinstance(names, list) and (names or may_be_empty) and all(isinstance(n, str) for n in names)):
            problems.append(f"rule {code}: {key} lists {lists}, not {json_kind(names)}")
        else:
            problems.extend(
                f"rule {code}: {key}: '{name}' is not a field of {type_name}"
                for name in names
                if name.split(".")[0] not in fields  # a dotted name is a key inside an object field
            )
    if "message" in rule and not (isinstance(rule["message"], str) and rule["message"].strip()):
        problems.append(f"rule {code}: message is a sentence saying what the record needs")
    return problems


@dataclass(frozen=True)
class Requirement:
    """One well-formed x-kb-require rule: a record with none of the fields `any_of` names gets `code` (when `if_any`
    is given, only a record that states one of those fields is judged)."""

    any_of: tuple[str, ...]
    code: str = DEFAULT_REQUIRE_CODE
    severity: Severity | None = None  # a project's own code's; None for kb's own, whose severity kb sets
    message: str | None = None
    if_any: tuple[str, ...] = ()  # the rule applies only to a record stating one of these (all, when empty)

    @classmethod
    def of(cls, rule: dict[str, Any]) -> Requirement:
        """The rule as written, once require_problems finds nothing wrong with it."""
        return cls(
            any_of=tuple(rule["any_of"]),
            code=rule.get("code", DEFAULT_REQUIRE_CODE),
            severity=Severity(rule["severity"]) if "severity" in rule else None,
            message=rule.get("message"),
            if_any=tuple(rule.get("if_any", ())),
        )
