"""`kb explain`: how a value was obtained, from which records and sources, recursively."""

from __future__ import annotations

import ast
from collections.abc import Callable

from kbtools.check.compute import Value, scenario_text, substituted
from kbtools.corpus import Corpus, Record
from kbtools.diagnostics import UsageError
from kbtools.index import CorpusIndex, no_record
from kbtools.lang.formula import node_text
from kbtools.lang.units import format_quantity

MAX_DEPTH = 8


class ExplainError(UsageError):
    """A target kb cannot explain: no such record, or no such value, with what there is instead."""


def explain_target(corpus: Corpus, target: str) -> list[str]:
    """`DIR/ID` (every value of a record) or `DIR/ID.FIELD` (one value), as `kb explain` takes it;
    a path to the record's file works too."""
    ref, _, name = target.removeprefix(corpus.settings.records_dir + "/").removesuffix(".md").partition(".")
    record, candidates, close = corpus.index.named(ref)
    if record is None:
        raise ExplainError(no_record(ref, candidates, close))
    if not name:
        return explain_record(corpus, record.key)
    value = find_value(corpus, record.key, name)
    if value is None:
        known = corpus.values(record.key).names
        raise ExplainError(f"{record.key} has no value '{name}' (it has: {', '.join(known) or 'none'})")
    return explain_value(corpus, value, f"{record.key}.{name}")


def find_value(corpus: Corpus, key: str, name: str) -> Value | None:
    return corpus.values(key).value(name)


def explain_record(corpus: Corpus, key: str) -> list[str]:
    """One line per value of a record: its figure and how it is known."""
    values = corpus.values(key)
    lines = [f"{key} ({corpus.records[key].path})"]
    for group in (values.fields, values.costs):
        for name, value in group.items():
            how = f"= {value.formula.text if value.formula else value.name}" if value.computed else f"[{value.basis}]"
            if value.recomputed is not None:
                how += f"; recomputed {value.recomputed.shown()} = {value.recomputed.formula.text}"
            if value.spread_shown() is not None:
                how += f"; range {value.spread_shown()} over the conditions it rests on"
            lines.append(f"  {name} = {value.shown()}  {how}")
    return lines


def explain_value(corpus: Corpus, value: Value, label: str) -> list[str]:
    lines = [f"{label} = {value.shown()}"]
    lines.extend(_explain(corpus, value, "  ", 0, top=True))
    return lines


def _where(corpus: Corpus, value: Value) -> str:
    return f"{value.record} ({value.path}:{value.line})"


def _sources(value: Value) -> str:
    return ", ".join(value.sources) if value.sources else "none cited"


CASES_SHOWN = 16  # combinations listed under a figure; the range covers them all


def _cases(value: Value, indent: str) -> list[str]:
    """The range, and the figure under each combination of the conditions it rests on."""
    low, high = value.spread or (value.quantity, value.quantity)
    count = len(value.conditions())
    lines = [
        f"{indent}range: low {format_quantity(low, value.unit, 4)}, preferred {value.shown()}, "
        f"high {format_quantity(high, value.unit, 4)}, over {count} condition{'' if count == 1 else 's'}"
        + (" (an interval enclosure: too many combinations to take each)" if value.bounds is not None else "")
    ]
    for scenario, figure in value.variants[:CASES_SHOWN]:
        lines.append(f"{indent}  if {scenario_text(scenario)}: {format_quantity(figure, value.unit, 4)}")
    if len(value.variants) > CASES_SHOWN:
        lines.append(f"{indent}  … and {len(value.variants) - CASES_SHOWN} more combinations")
    return lines


def _explain(corpus: Corpus, value: Value, indent: str, depth: int, top: bool = False) -> list[str]:
    lines: list[str] = []
    if value.rows is not None:
        lines.append(f"{indent}for each row: {value.formula.text if value.formula else value.name}  [{value.unit}]")
        for row_key, row in value.rows:
            spread = (
                f"  (range {row.spread_shown()} over the conditions it rests on)"
                if row.spread_shown() is not None
                else ""
            )
            lines.append(f"{indent}  {row_key}: {row.shown()} = {substituted(row)}{spread}")
        return lines
    checked = value.recomputed
    if value.computed:
        lines.append(f"{indent}= {value.formula.text if value.formula else value.name}")
        lines.append(f"{indent}= {substituted(value)}")
        lines.append(f"{indent}≈ {value.shown()}")
        lines.append(
            f"{indent}basis: derived (weakest input basis: {value.input_basis}); confidence {value.confidence:g}; "
            f"at {_where(corpus, value)}"
        )
        lines.append(f"{indent}sources: {_sources(value)}")
        if value.spread is not None:
            lines.extend(_cases(value, indent))
        stated = _stated(corpus, value) if top else None
        if stated:
            lines.append(f"{indent}stated: {stated} (checked against the recomputed figure)")
        if depth >= MAX_DEPTH:
            return lines + [f"{indent}..."]
        lines.append(f"{indent}inputs:")
        for name, used in value.inputs:
            lines.append(f"{indent}  {name} = {used.shown()}  from {_where(corpus, used)}")
            lines.extend(_explain(corpus, used, indent + "    ", depth + 1))
        return lines
    claim = ", vendor claim" if value.vendor_claim else ""
    lines.append(
        f"{indent}stated in {_where(corpus, value)}; basis {value.basis}{claim}; confidence {value.confidence:g}; "
        f"sources: {_sources(value)}"
    )
    if value.note:
        lines.append(f"{indent}note: {value.note}")
    if value.spread is not None and not value.alternatives:  # a band, or a field read through a choice of records
        lines.extend(_cases(value, indent))
    if value.alternatives:
        if value.spread is not None:  # a stated value's variants are its values not deprecated
            lines.append(
                f"{indent}rank preferred (kb computes with it); range over the values not deprecated: {value.spread_shown()}"
            )
        for other in value.alternatives:
            lines.append(
                f"{indent}also, ranked {other.rank}: {other.shown(value.unit)} (basis {other.basis}; source {_sources(other)})"
                + (f"; note: {other.note}" if other.note else "")
            )
    if checked is not None and depth < MAX_DEPTH:
        lines.append(f"{indent}recomputed as {checked.shown()}:")
        lines.extend(_explain(corpus, checked, indent + "  ", depth + 1))
    return lines


def _stated(corpus: Corpus, value: Value) -> str | None:
    record = corpus.records.get(value.record)
    spec = record.costs.get(value.name) if record else None
    if isinstance(spec, dict) and "stated" in spec:
        stated = spec["stated"]
        return str(stated["value"] if isinstance(stated, dict) else stated)
    return None


# ---------------------------------------------------------------- what a figure fell back to, and what it lacks


def fallbacks_taken(value: Value, chains_only: bool = False) -> list[str]:
    """Which value each default(name, fallback) of the figure's formula took, and what was not given before it:
    'prefill_efficiency not given, so accelerator.attainable_prefill = 46.4 percent (accelerators/x)'.
    chains_only: only where a default falls back to another default (a choice among records' figures)."""
    if value.formula is None:
        return []
    inputs = dict(value.inputs)
    said: list[str] = []
    seen: set[int] = set()
    for node in ast.walk(value.formula.tree):
        if id(node) in seen or not _is_default(node):
            continue
        chain: list[ast.AST] = []
        current: ast.AST = node
        while _is_default(current) and isinstance(current, ast.Call) and len(current.args) == 2:
            seen.add(id(current))
            chain.append(current.args[0])
            current = current.args[1]
        chain.append(current)
        if chains_only and len(chain) < 3:
            continue
        missing = []
        for candidate in chain:
            name = node_text(candidate)
            used = inputs.get(name)
            if used is not None:
                where = "" if used.record == value.record else f" ({used.record})"
                taken = f"{name} = {used.shown()}{where}"
                break
            if candidate is chain[-1]:
                taken = name if not isinstance(candidate, ast.Constant) else f"the fallback {name}"
                break
            missing.append(name)
        lacking = f"neither {' nor '.join(missing)} given" if len(missing) > 1 else f"{''.join(missing)} not given"
        said.append((f"{lacking}, so " if missing else "") + taken)
    return list(dict.fromkeys(said))


def _is_default(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "default"


def missing_fields(
    corpus: Corpus,
    index: CorpusIndex[Record],
    record: Record,
    specs: dict,
    var: str,
    name: str,
    key: str,
    target: Record | None,
) -> str:
    """Why option `key` of a plan (kb plan) has no `name`: the fields that the costs `name` rests on read and that have no value,
    found by following the costs' formulas: of the option's record (`var.field`), of a record the planned
    one names (`model.weight_bytes`), and of the planned record itself."""
    from kbtools.lang.formula import FormulaError, parse_formula

    read: dict[tuple[str, ...], None] = {}
    stack, seen = [name], set()
    while stack:
        cost = stack.pop()
        if cost in seen or not isinstance(specs.get(cost), dict):
            continue
        seen.add(cost)
        try:
            tree = parse_formula(str(specs[cost].get("formula", ""))).tree
        except FormulaError:  # a formula the check already reported
            continue
        for parts in _required_names(tree, lambda field: record.data.get(field) is not None):
            if len(parts) == 1 and parts[0] in specs:
                stack.append(parts[0])
            elif parts[0] != var or len(parts) == 2:
                read.setdefault(parts, None)
    lacking: dict[str, list[str]] = {}  # whose -> fields
    inputs = record.mapping("inputs")
    for parts in read:
        if len(parts) == 1:
            if record.data.get(parts[0]) is None and parts[0] not in inputs:
                lacking.setdefault("the workload", []).append(parts[0])
            continue
        named = target if parts[0] == var else None
        if parts[0] != var and isinstance(record.data.get(parts[0]), str):
            named, _ = index.resolve(record.data[parts[0]])
        if named is None:
            continue
        if parts[1].endswith("()"):  # a function of the record's type: the fields its formula reads
            fields = _function_fields(corpus, named, parts[1][:-2])
        else:
            fields = [parts[1]]
        for field in fields:
            lacking.setdefault(named.key, []).extend(_unstated(corpus, named, field, set()))
        if not lacking.get(named.key):
            lacking.pop(named.key, None)
    said = [f"{whose} has no {', '.join(dict.fromkeys(fields))}" for whose, fields in lacking.items()]
    return "; ".join(said) or f"kb explain {key} says what is missing"


def _unstated(corpus: Corpus, record: Record, field: str, seen: set[str]) -> list[str]:
    """The fields `record` would have to state for `field` to have a value: none when it has one; for a field
    its type derives from one other of its fields alone, that one (read_bandwidth spans bandwidth to a
    measured rate: the user writes bandwidth); else the field itself."""
    from kbtools.check.compute.values import matching
    from kbtools.lang.formula import FormulaError, parse_formula

    if corpus.values(record.key).value(field) is not None or record.data.get(field) is not None or field in seen:
        return []
    seen.add(field)
    found = corpus.registry.types.get(record.type)
    spec = matching(record, found.derive.get(field)) if found is not None else None
    try:
        tree = parse_formula(str(spec.get("formula", ""))).tree if isinstance(spec, dict) else None
    except FormulaError:
        tree = None
    reads = _required_names(tree) if tree is not None else []
    if len(reads) == 1 and len(reads[0]) == 1:  # a field that only restates another (a range over it)
        return _unstated(corpus, record, reads[0][0], seen) or [field]
    return [field]  # a figure a record may state, or derive from what it states


def _function_fields(corpus: Corpus, record: Record, function: str) -> list[str]:
    """The fields of `record` that its type's function (x-kb-functions) cannot do without."""
    from kbtools.check.compute.values import matching
    from kbtools.lang.formula import FormulaError, parse_formula

    found = corpus.registry.types.get(record.type)
    spec = matching(record, found.functions.get(function)) if found is not None else None
    if not isinstance(spec, dict):
        return []
    parameters: dict = spec["parameters"] if isinstance(spec.get("parameters"), dict) else {}
    try:
        tree = parse_formula(str(spec.get("formula", ""))).tree
    except FormulaError:
        return []
    return [parts[0] for parts in _required_names(tree) if len(parts) == 1 and parts[0] not in parameters]


def _required_names(tree: ast.AST, stated: Callable[[str], bool] = lambda name: False) -> list[tuple[str, ...]]:
    """The names and name.attr a formula cannot do without: a function's own name is none, nor is the name
    default(name, fallback) falls back from; nor its fallback, where the record states the name (`stated`)."""
    found: list[tuple[str, ...]] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            args = node.args
            if isinstance(node.func, ast.Name) and node.func.id == "default":
                first = node.args[0] if node.args else None
                args = [] if isinstance(first, ast.Name) and stated(first.id) else node.args[1:]
            if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                found.append((node.func.value.id, node.func.attr + "()"))  # record.function(args)
            stack.extend(args)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            found.append((node.value.id, node.attr))
        elif isinstance(node, ast.Name):
            found.append((node.id,))
        else:
            stack.extend(ast.iter_child_nodes(node))
    return found
