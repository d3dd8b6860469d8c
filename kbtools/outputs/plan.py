"""`kb plan`: for a workload, which option (storage tier) should hold the KV, each figure with its range and
the records it rests on.

A plan is a record of a type that carries `x-kb-plan` (the workload type): its costs, which the type
supplies (`x-kb-costs`), are computed by the same engine as every other cost, so a plan has ranges,
verdicts, units and provenance like any figure of the corpus, and its page on the site is the same plan.
`kb plan WORKLOAD` reads a workload record; `kb plan FIELD=VALUE ...` plans one given on the command line
(over a record, FIELD=VALUE changes it), computed without writing anything:

    kb plan model=llama-3-1-70b accelerator=nvidia-h100-sxm gpus=8 prefix_tokens=8192 hit_rate=0.8:0.9:0.95 \\
        engine=lmcache,sglang tiers=host-dram-pcie5,local-nvme-gen5

A quantity may be a band, LOW:VALUE:HIGH; a reference field given several records (engine=a,b) becomes a
choice among them (`inputs: {engine: {choose: [...]}}`), so every figure is computed for each. The settings
make a record, which is read as kb check reads one (its schema, every quantity's unit and physical range,
x-kb-range) before anything is computed: a setting kb refuses is a usage error, and nothing is printed.

What kb plan prints carries text the records' authors wrote (a tier's name): the text output shows control
characters as escapes and the CSV neutralises a cell a spreadsheet would run as a formula (outputs.cells).
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kbtools.check.compute import Computer, Value, scenario_text, verdict
from kbtools.check.compute.derivations import parse_quantities
from kbtools.check.load import load_record_bytes
from kbtools.check.schema import validate_record
from kbtools.corpus import Corpus, Record
from kbtools.diagnostics import UsageError
from kbtools.index import CorpusIndex, no_record
from kbtools.lang.units import format_quantity, magnitude_in
from kbtools.outputs.cells import csv_text, terminal_text

BAND = ":"  # LOW:VALUE:HIGH
LIST = ","
USAGE = "kb plan WORKLOAD | FIELD=VALUE... [--explain] [--format text|json|csv]"


class PlanError(UsageError):
    """A workload kb cannot plan: a usage error (exit 2)."""


@dataclass(frozen=True)
class Figure:
    name: str
    label: str
    value: Value

    def shown(self) -> str:
        text = self.value.shown()
        spread = self.value.spread_shown()
        return f"{text} ({spread})" if spread and spread != f"{text} to {text}" else text

    def data(self) -> dict[str, Any]:
        unit = self.value.unit
        low, high = self.value.spread or (self.value.quantity, self.value.quantity)

        def number(q: Any) -> float:  # pint's factor for the pair, asked once: a plan converts a thousand
            return magnitude_in(q, unit) if unit else float(q.magnitude)

        return {
            "label": self.label,
            "value": number(self.value.quantity),
            "low": number(low),
            "high": number(high),
            "unit": unit or f"{self.value.quantity.units:~P}",
            "cases": [{"when": scenario_text(s), "value": number(q)} for s, q in self.value.variants],
            # which end is which: the first combination of conditions that gives each end
            "low_when": next((scenario_text(s) for s, q in self.value.variants if q == low), None),
            "high_when": next((scenario_text(s) for s, q in self.value.variants if q == high), None),
            "records": rests_on(self.value),
            "sources": list(self.value.sources),
        }


@dataclass(frozen=True)
class Bottleneck:
    """The stage that sets a figure taken as the least of its stages (x-kb-plan's `stages`)."""

    figure: str  # the figure the stages bound: reader_rate
    stage: str  # the slowest stage's figure: host_link_rate
    words: str  # what that stage is: "the accelerator's host link"

    def data(self) -> dict[str, str]:
        return {"figure": self.figure, "stage": self.stage, "words": self.words}


@dataclass(frozen=True)
class Option:
    key: str
    name: str
    figures: tuple[Figure, ...]
    verdict: str | None
    breaches: tuple[str, ...]  # the limits its figures break ("the working set does not fit")
    bottlenecks: tuple[Bottleneck, ...] = ()
    unpriced: tuple[str, ...] = ()  # why a figure the plan ranks or limits by is missing: the fields it lacks


@dataclass(frozen=True)
class Plan:
    record: Record
    over: str
    rank_by: str
    figures: tuple[Figure, ...]  # of the node, one each
    options: tuple[Option, ...]  # best first
    diagnostics: tuple[Any, ...]


def rests_on(value: Value) -> list[str]:
    """Every record a figure rests on, itself first, through all its inputs (iteratively: chains are long)."""
    seen: dict[str, None] = {}
    stack, visited = [value], set()
    while stack:
        current = stack.pop()
        if id(current) in visited:
            continue
        visited.add(id(current))
        seen.setdefault(current.record, None)
        stack.extend(v for _, v in reversed(current.inputs))
        if current.recomputed is not None:
            stack.append(current.recomputed)
        for _, row in current.rows or ():
            stack.append(row)
    return list(seen)


def planned_type(corpus: Corpus, record: Record | None) -> Any:
    types = corpus.registry.types
    if record is not None:
        found = types.get(record.type) if record.type else None
        if found is None or not found.planning:
            raise PlanError(f"{record.key} is a {record.type}; kb plan plans a record of a type with x-kb-plan")
        return found
    planning = [t for t in types.values() if t.planning]
    if len(planning) != 1:
        raise PlanError("name the workload record to plan (more than one type, or none, carries x-kb-plan)")
    return planning[0]


def workload(corpus: Corpus, base: str | None, settings: list[str]) -> Record:
    """The record to plan: `base` as it is, or changed (or made from nothing) by FIELD=VALUE settings."""
    index = corpus.index
    record = None
    if base is not None:
        record, candidates, close = index.named(base)
        if record is None:
            raise PlanError(no_record(base, candidates, close))
    if record is None and not settings:
        raise PlanError(f"usage: {USAGE}; name a workload record{_some_workloads(corpus)} or give FIELD=VALUE settings")
    record_type = planned_type(corpus, record)
    if record is not None and not settings:
        return record
    data: dict[str, Any] = dict(record.data) if record is not None else {}  # its own costs, never its type's
    inputs = dict(data.get("inputs") or {})
    for setting in settings:
        field, sep, text = setting.partition("=")
        field, text = field.strip(), text.strip()
        plan = record_type.plan.properties.get(field)
        if not sep or plan is None or field in ("id", "type", "costs", "inputs"):
            known = ", ".join(
                n for n in record_type.plan.properties if n not in record_type.envelope and n not in ("costs", "inputs")
            )
            raise PlanError(f"cannot read '{setting}': write FIELD=VALUE, FIELD one of {known}")
        if plan.ref_types or (plan.items is not None and plan.items.ref_types):
            keys = [_reference(index, part.strip(), field) for part in text.split(LIST) if part.strip()]
            if plan.items is not None and plan.items.ref_types:
                data[field] = keys
            elif len(keys) == 1:
                data[field] = keys[0]
                inputs.pop(field, None)
            else:
                data.pop(field, None)
                inputs[field] = {"choose": keys}  # a choice among records: every figure is computed for each
        elif plan.quantity is not None:
            data[field] = _quantity(text)
        else:
            data[field] = text
    data.pop("inputs", None)  # the record's, as the settings left them (a setting replaces a choice there)
    if inputs:
        data["inputs"] = inputs
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    data = {
        "id": "plan",
        "type": record_type.name,
        "name": data.get("name") or "the workload asked of kb plan",
        "status": "draft",
        "confidence": data.get("confidence", 0.5),
        "updated": today,
        "sources": data.get("sources") or [],
        **{
            k: v
            for k, v in data.items()
            if k not in ("id", "type", "name", "status", "confidence", "updated", "sources")
        },
    }
    text = "---\n" + json.dumps(data, ensure_ascii=False, indent=1) + "\n---\n"
    raw = text.encode()
    path = Path(f"records/{record_type.dir}/plan.md")
    made, problems = load_record_bytes(raw, path.as_posix(), path, corpus.registry, hashlib.blake2b(raw).hexdigest())
    if made is None:
        raise PlanError("; ".join(d.message for d in problems))
    for diagnostic in validate_record(made, record_type):
        if "sources" not in diagnostic.message:  # a plan asked on the command line cites nothing of its own
            raise PlanError(diagnostic.message)
    # every quantity read as kb check reads a record's: its unit, and its physical range (x-kb-range), so that
    # gpus=-8 or hit_rate=1.5 is refused here rather than planned into negative times
    reader = Computer(replace(corpus, records={**corpus.records, made.key: made}))
    parse_quantities(reader, made)
    refused = [d.message for d in reader.diagnostics if d.severity == "error"]
    if refused:
        raise PlanError("; ".join(refused))
    return made


def _some_workloads(corpus: Corpus) -> str:
    """' (workloads/a, workloads/b, ...)': the records kb plan could plan, for the usage message."""
    planning = {t.name for t in corpus.registry.types.values() if t.planning}
    keys = sorted(r.key for r in corpus.records.values() if r.type in planning)
    shown = ", ".join(keys[:5]) + (f", and {len(keys) - 5} more" if len(keys) > 5 else "")
    return f" ({shown})" if keys else ""


def _reference(index: CorpusIndex[Record], text: str, field: str) -> str:
    found, candidates, close = index.named(text)
    if found is None:
        raise PlanError(f"{field}: {no_record(text, candidates, close)}")
    return found.key


def _quantity(text: str) -> Any:
    """'8192 token', 8192, or a band LOW:VALUE:HIGH."""
    parts = [p.strip() for p in text.split(BAND)]
    if len(parts) == 3:
        low, value, high = (_number(p) for p in parts)
        return {"value": value, "low": low, "high": high}
    if len(parts) != 1:
        raise PlanError(f"'{text}': write a value, or a band as LOW:VALUE:HIGH")
    return _number(text)


def _number(text: str) -> Any:
    try:
        return int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError:
        return text  # 'VALUE UNIT': the record's own reading checks it


def make_plan(corpus: Corpus, record: Record) -> Plan:
    record_type = planned_type(corpus, record)
    spec = record_type.planning
    over, rank_by, worded = str(spec.get("over", "")), str(spec.get("rank_by", "")), spec.get("verdict")
    limits: dict[str, str] = spec.get("limits", {}) if isinstance(spec.get("limits"), dict) else {}
    stages: dict[str, dict[str, str]] = spec.get("stages", {}) if isinstance(spec.get("stages"), dict) else {}
    diagnostics: tuple[Any, ...] = ()
    if record.key in corpus.records and corpus.records[record.key] is record:
        values = corpus.values(record.key)
        diagnostics = tuple(d for d in corpus.diagnostics if d.path == record.path and d.severity == "error")
    else:  # a workload asked on the command line: computed alone, against the checked corpus
        scratch = replace(corpus, records={**corpus.records, record.key: record})
        computer = Computer(scratch)
        found = computer.run({record.key}).get(record.key)
        diagnostics = tuple(d for d in computer.diagnostics if d.path == record.path and d.severity == "error")
        if found is None:
            raise PlanError("; ".join(d.message for d in diagnostics) or "the workload could not be computed")
        values = found
    specs = record.costs

    def label(name: str) -> str:
        found = specs.get(name)
        return str(found.get("label", name)) if isinstance(found, dict) else name

    over_var = next(
        (
            var
            for s in specs.values()
            if isinstance(s, dict) and isinstance(s.get("for_each"), dict)
            for var, listed in s["for_each"].items()
            if listed == over
        ),
        over,
    )
    node, per_option = [], {}
    for name, value in values.costs.items():
        each = specs.get(name, {}).get("for_each") if isinstance(specs.get(name), dict) else None
        if isinstance(each, dict) and list(each.values()) == [over]:
            per_option[name] = dict(value.rows or ())
        elif value.quantity is not None:
            node.append(Figure(name, label(name), value))
    keys = [k for k in (record.data.get(over) or []) if isinstance(k, str)]
    index = corpus.index
    options = []
    for text in keys:
        target, _ = index.resolve(text)
        key = target.key if target is not None else text
        figures = tuple(Figure(name, label(name), rows[key]) for name, rows in per_option.items() if key in rows)
        said = None
        if isinstance(worded, str) and key in per_option.get(worded, {}):
            said = verdict(per_option[worded][key])
        breaches = tuple(
            words
            for name, words in limits.items()
            if key in per_option.get(name, {}) and _ratio(per_option[name][key]) > 1
        )
        bottlenecks = tuple(
            slowest
            for figure, named in stages.items()
            if (slowest := slowest_stage(figure, named, per_option, key)) is not None
        )
        unpriced = tuple(
            f"{'no ' + name if name == rank_by else 'not checked (' + limits[name] + ')'}: "
            + _missing(corpus, index, record, specs, over_var, name, key, target)
            for name in (rank_by, *limits)
            if key not in per_option.get(name, {}) and name in specs
        )
        options.append(
            Option(
                key,
                str(target.data.get("name", key)) if target else key,
                figures,
                said,
                breaches,
                bottlenecks,
                unpriced,
            )
        )

    def rank(option: Option) -> tuple:
        # an option kb cannot price is never recommended: it follows every priced one, broken limits or not
        found = next((f for f in option.figures if f.name == rank_by), None)
        return (found is None, len(option.breaches), _magnitude(found.value) if found else 0.0)

    return Plan(record, over, rank_by, tuple(node), tuple(sorted(options, key=rank)), diagnostics)


def slowest_stage(figure: str, stages: dict[str, str], per_option: dict, key: str) -> Bottleneck | None:
    """The stage of `figure` (the least of `stages`, x-kb-plan's `stages`) with the least figure for option
    `key` (per_option: cost -> {option key: Value}); on a tie the one listed first. None when a stage has no
    figure for the option. The plan and the planner page name the bottleneck with it."""
    found = [(name, per_option.get(name, {}).get(key)) for name in stages]
    if not found or any(value is None or value.quantity is None for _, value in found):
        return None
    name, _ = min(found, key=lambda item: _magnitude(item[1]))  # min keeps the first of equals
    return Bottleneck(figure, name, str(stages[name]))


def _missing(
    corpus: Corpus,
    index: CorpusIndex[Record],
    record: Record,
    specs: dict,
    var: str,
    name: str,
    key: str,
    target: Record | None,
) -> str:
    """Why option `key` has no `name`: the fields that the costs `name` rests on read and that have no value,
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

    if corpus.values(record.key).value(field) is not None or field in seen:
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


def _ratio(value: Value) -> float:
    return float(value.quantity.to("dimensionless").magnitude)


def _magnitude(value: Value) -> float:
    return float(value.quantity.to_base_units().magnitude)


# ---------------------------------------------------------------- output


def as_json(plan: Plan) -> str:
    body = {
        "record": plan.record.key if plan.record.key != f"{plan.record.dir}/plan" else None,
        "asked": _asked(plan.record),
        "figures": {f.name: f.data() for f in plan.figures},
        "ranked_by": plan.rank_by,
        plan.over: [
            {
                "rank": n,
                "key": o.key,
                "name": o.name,
                "verdict": o.verdict,
                "limits_broken": list(o.breaches),
                "limited_by": [b.data() for b in o.bottlenecks],
                "not_priced": list(o.unpriced),
                "figures": {f.name: f.data() for f in o.figures},
            }
            for n, o in enumerate(plan.options, 1)
        ],
    }
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def as_csv(plan: Plan) -> str:
    names = list(dict.fromkeys(f.name for o in plan.options for f in o.figures))
    columns = ["rank", "key", "name", "verdict", "limits_broken", "limited_by", "not_priced"]
    for name in names:
        columns += [name, f"{name}_low", f"{name}_high", f"{name}_unit"]
    rows = []
    for n, option in enumerate(plan.options, 1):
        row: dict[str, Any] = {
            "rank": n,
            "key": option.key,
            "name": option.name,
            "verdict": option.verdict or "",
            "limits_broken": "; ".join(option.breaches),
            "limited_by": "; ".join(f"{b.figure}: {b.words}" for b in option.bottlenecks),
            "not_priced": "; ".join(option.unpriced),
        }
        for figure in option.figures:
            data = figure.data()
            row.update(
                {
                    figure.name: data["value"],
                    f"{figure.name}_low": data["low"],
                    f"{figure.name}_high": data["high"],
                    f"{figure.name}_unit": data["unit"],
                }
            )
        rows.append(row)
    return csv_text(columns, rows)


def as_text(plan: Plan, explain: bool = False) -> str:
    lines = [f"kb plan: {plan.record.data.get('name', plan.record.key)}"]
    lines += [f"  {field}: {shown}" for field, shown in _asked(plan.record).items()]
    every = [*plan.figures, *(f for o in plan.options for f in o.figures)]
    width = (max([len(f.name) for f in every] + [0]), max([len(f.shown()) for f in every] + [0]))
    lines.append("")
    lines.append("the node:")
    for figure in plan.figures:
        lines.extend(_figure_lines(figure, width, "  ", explain))
    lines.append("")
    lines.append(f"{plan.over}, best first (least {plan.rank_by}, then the rest):")
    for n, option in enumerate(plan.options, 1):
        lines.append(f"{n}. {option.key} ({option.name})")
        if option.verdict:
            lines.append(f"     a hit against the recompute: {option.verdict}")
        for broken in option.breaches:
            lines.append(f"     ! {broken}")
        for bottleneck in option.bottlenecks:
            lines.append(f"     {bottleneck.figure} limited by {bottleneck.words}")
        for why in option.unpriced:
            lines.append(f"     {why}")
        for figure in option.figures:
            lines.extend(_figure_lines(figure, width, "     ", explain))
    # names, conditions, labels and ids are the records' authors' text: none may drive the terminal
    return "\n".join(terminal_text(line) for line in lines) + "\n"


def _figure_lines(figure: Figure, widths: tuple[int, int], indent: str, explain: bool) -> list[str]:
    lines = [f"{indent}{figure.name.ljust(widths[0])}  {figure.shown().ljust(widths[1])}  {figure.label}"]
    if explain:
        data = figure.data()
        deeper = indent + " " * (widths[0] + 2)
        lines.append(f"{deeper}= {figure.value.formula.text if figure.value.formula else figure.name}")
        lines.append(f"{deeper}rests on: {', '.join(data['records'])}")
        lines.append(f"{deeper}sources: {', '.join(data['sources']) or 'none cited'}")
        for scenario, figure_under in figure.value.variants:
            lines.append(f"{deeper}if {scenario_text(scenario)}: {format_quantity(figure_under, figure.value.unit, 4)}")
    return lines


def _asked(record: Record) -> dict[str, str]:
    """The workload's own fields as written, choices among records included."""
    shown: dict[str, str] = {}
    for name, value in record.data.items():
        if name in ("id", "type", "name", "status", "confidence", "updated", "sources", "costs", "inputs"):
            continue
        shown[name] = _written(value)
    for name, value in record.mapping("inputs").items():
        shown[name] = " or ".join(value["choose"]) if isinstance(value, dict) and "choose" in value else _written(value)
    return shown


def _written(value: Any) -> str:
    if isinstance(value, dict) and "value" in value:
        band = f" ({value['low']} to {value['high']})" if "low" in value and "high" in value else ""
        return f"{value['value']}{band}"
    if isinstance(value, list):
        return ", ".join(_written(v) for v in value)
    return str(value)
