"""Stage: constraints, the cross-record rules a schema declares (`x-kb-constraints`).

In the spirit of Wikibase's property constraints: rules of provenance an auditor checks by hand,
written as data beside the fields they govern, each with its own code and severity. A rule picks the
items it governs, narrows them with `when`, and asks for `require` (of the item) and `cites` (of at
least one source the item cites):

    {"code": "KB561", "severity": "error", "each": "quantity",
     "when": {"basis": "vendor-spec"}, "cites": {"origin": "first-party"},
     "message": "a vendor-spec figure cites a first-party document"}

- `each`: `record` (the record itself), `quantity` (every quantity value: a short one, a long one,
  each competing value; its `basis` defaults to the record's), or the name of a list field whose
  entries are the items (`claims`).
- a condition maps a field to: a value (equal), a list (one of), `{"present": true|false}`,
  `{"same_url_as": field}` (the same document as the record's URL field), `{"within_url_of": field}`
  (that document or one under it: a file in a repository), `{"in": field}` (one of the
  record's list field, e.g. a claim's source among the record's `sources`).
- `cites`: the sources an item cites are its own `source`, else the record's `sources`.

The registry checks the rules' shape (kbtools.registry.rules, KB210): each condition's argument of the type
it reads (a boolean for `present`, a field's name for the others, plain values to equal), and a code that is
none of kb's own (KB900 is kb's internal error); this stage only applies well-formed rules, so applying one
to any record cannot fail. The repository's own rules, with their codes, are listed in docs/diagnostics.md,
generated from the schemas.
"""

from __future__ import annotations

from collections.abc import Iterator

from kbtools.check.stage import Context, Judgement, Stage
from kbtools.corpus import FieldPath, Record, dotted
from kbtools.diagnostics import Diagnostic, Severity
from kbtools.fieldwalk import walk_plan
from kbtools.lang.normal import url_key


class ConstraintsStage(Stage):
    """Each record against its type's rules; a rule that asks what the record's sources say reads them, so
    the judgement holds while each source named resolves the same and its bytes are the same."""

    name = "constraints"

    def judge(self, record: Record, ctx: Context) -> Judgement:
        found: list[Diagnostic] = []
        record_type = ctx.registry.types.get(record.type) if record.type else None
        rules = record_type.constraints if record_type is not None else ()
        for rule in rules:
            for path, item in _items(rule.get("each", "record"), record, record_type):
                if not _matches(rule.get("when", {}), item, record):
                    continue
                failed = _unmet(rule.get("require", {}), item, record)
                fix = _fix_require(rule.get("require", {}), item, record) if failed is not None else None
                if failed is None and "cites" in rule:
                    failed, fix = _uncited(rule["cites"], item, record, ctx, rule.get("when", {}))
                if failed is not None:
                    line, col = record.position(path) if path else record.position(("id",))
                    where = dotted(path) if path else record.key
                    found.append(
                        Diagnostic(
                            code=rule["code"],
                            severity=Severity(rule["severity"]),
                            path=record.path,
                            line=line,
                            column=col,
                            # the cause first (what this record or its source lacks), then the rule it breaks
                            message=f"{where}: {failed}; the rule: {rule['message']}",
                            hint=fix,
                        )
                    )
        return Judgement(tuple(found))


def _items(each: str, record: Record, record_type) -> Iterator[tuple[FieldPath, dict]]:
    data = dict(record.data)
    if each == "record":
        yield (), data
    elif each == "quantity":
        default = {"basis": data.get("basis", "unverified"), "sources": data.get("sources")}
        for path, value, plan in walk_plan(record_type.plan, data):
            if plan.quantity is None or value is None:
                continue
            entries = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
            for index, entry in entries:
                where = path + ((index,) if index is not None else ())
                yield where, {**default, **(entry if isinstance(entry, dict) else {"value": entry})}
    else:
        listed = data.get(each)
        for index, entry in enumerate(listed if isinstance(listed, list) else ()):
            if isinstance(entry, dict):
                yield (each, index), entry


def _matches(conditions: dict, item: dict, record: Record) -> bool:
    return _unmet(conditions, item, record) is None


def _unmet(conditions: dict, item: dict, record: Record) -> str | None:
    """None when every condition holds of `item`, else a few words on the first that does not."""
    for field, condition in conditions.items():
        value = item.get(field)
        if isinstance(condition, dict):
            ((kind, arg),) = condition.items()
            if kind == "present" and (value not in (None, "", [])) != bool(arg):
                return f"{field} is {'missing' if arg else 'present'}"
            if kind in ("same_url_as", "within_url_of"):
                mine = record.data.get(arg)
                theirs, base = (url_key(x) if isinstance(x, str) else None for x in (value, mine))
                same = theirs is not None and theirs == base
                within = theirs is not None and base is not None and theirs.startswith(base.rstrip("/") + "/")
                if not (same or (kind == "within_url_of" and within)):
                    return f"{field} is not {'within ' if kind == 'within_url_of' else ''}{arg} ({mine})"
            if kind == "in":
                allowed = record.data.get(arg)
                if not (isinstance(allowed, list) and value in allowed):
                    return f"{field} {value!r} is not among the record's {arg}"
        elif value is None:
            return f"{field} is not given"
        elif isinstance(condition, list):
            if value not in condition:
                return f"{field} is {value!r}, not one of {', '.join(map(str, condition))}"
        elif value != condition:
            return f"{field} is {value!r}, not {condition!r}"
    return None


def _uncited(conditions: dict, item: dict, record: Record, ctx: Context, when: dict) -> tuple[str | None, str | None]:
    """(None, None) when a source the item cites meets the conditions; else what is wrong, and the fix."""
    cited = item.get("source")
    names = (
        [cited]
        if isinstance(cited, str)
        else [s for s in (item.get("sources") or record.data.get("sources") or []) if isinstance(s, str)]
    )
    wanted = _wanted(conditions)
    if not names:
        return "it cites no source", f"cite a source with {wanted}{_otherwise(when)}" if wanted else None
    reasons, files = [], []
    for name in names:
        source, _ = ctx.resolve(name)
        if source is None:
            return None, None  # a dangling reference is the links stage's finding, not this rule's
        data = dict(ctx.read(source).data)
        reason = _unmet(conditions, data, record)
        if reason is None:
            return None, None
        reasons.append(f"{name}: {reason}")
        if all(data.get(field) is None for field in conditions):  # it says nothing of it: the fix may be to say
            files.append(source.path)
    return "; ".join(reasons), _fix_cites(conditions, files, when)


def _wanted(conditions: dict) -> str:
    """The plain conditions as a reader writes them: '`origin: first-party`' ('... or `origin: secondary`' for
    a list); empty when a condition is not a plain value (present, same_url_as, ...)."""
    said = []
    for field, condition in conditions.items():
        if isinstance(condition, dict):
            return ""
        values = condition if isinstance(condition, list) else [condition]
        said.append(" or ".join(f"`{field}: {value}`" for value in values))
    return " and ".join(said)


def _otherwise(when: dict) -> str:
    """', or give the figure a basis other than vendor-spec': undoing what made the rule apply."""
    plain = {f: v for f, v in when.items() if not isinstance(v, (dict, list))}
    if not plain:
        return ""
    return ", or give it " + " and ".join(f"a {f} other than {v}" for f, v in plain.items())


def _fix_cites(conditions: dict, files: list[str], when: dict) -> str | None:
    """What to write, and in which file: 'add `origin: first-party` to records/sources/x.md if it is ...'."""
    wanted = _wanted(conditions)
    if not wanted:
        return None
    if not files:  # each source cited says otherwise: cite another
        return f"cite a source with {wanted}{_otherwise(when)}"
    where = files[0] if len(files) == 1 else f"{', '.join(files[:-1])} or {files[-1]}"
    which = "if that is true of it" if len(files) == 1 else "to the one of which that is true"
    return f"add {wanted} to {where} {which}; otherwise cite a source with {wanted}{_otherwise(when)}"


def _fix_require(conditions: dict, item: dict, record: Record) -> str | None:
    """The fix for an item's own unmet condition, where it is plain: a value to write or a list to add to."""
    for field, condition in conditions.items():
        if _unmet({field: condition}, item, record) is None:
            continue
        if isinstance(condition, dict) and "in" in condition and item.get(field) is not None:
            return f"add {item[field]} to the record's `{condition['in']}`, or name one of them as its {field}"
        wanted = _wanted({field: condition})
        return f"write {wanted}" if wanted else None
    return None
