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

import datetime
import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kbtools.check.compute import Computer, Value, scenario_text, substituted, verdict
from kbtools.check.compute.derivations import parse_quantities
from kbtools.check.compute.values import SUBSTITUTE_DEPTH
from kbtools.check.load import load_record_bytes
from kbtools.check.schema import validate_record
from kbtools.corpus import Corpus, Record
from kbtools.diagnostics import UsageError
from kbtools.index import CorpusIndex, no_record
from kbtools.lang.units import format_quantity, magnitude_in, number_or_text
from kbtools.outputs.cells import csv_text, terminal_text
from kbtools.outputs.explain import fallbacks_taken, missing_fields

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
    unpriced: tuple[str, ...] = ()  # why a figure the plan limits by is missing: the fields it lacks
    within: tuple[str, ...] = ()  # the limits checked and kept ("tier_fill 0.42"): with breaches and unpriced,
    # every limit of every option is accounted for (a tier without a capacity is never silent about its fit)
    unranked: str | None = None  # why the figure the plan ranks by is missing ("no ttft: x has no capacity")

    @property
    def not_priced(self) -> tuple[str, ...]:
        """Why figures are missing, as kb plan says it: the rank figure's first, then each limit's."""
        return (self.unranked, *self.unpriced) if self.unranked else self.unpriced


@dataclass(frozen=True)
class ChoiceOrder:
    """The options' order under each choice of one input given as a choice among records (engine=a,b)."""

    field: str  # engine
    orders: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]  # (a choice's words, ((option, rank figure), ...))
    changes_figures: bool  # whether any figure of the plan differs between the choices

    @property
    def same_order(self) -> bool:
        return len({tuple(key for key, _ in order) for _, order in self.orders}) <= 1

    def data(self, unit: str | None) -> dict[str, Any]:
        return {
            "field": self.field,
            "same_order": self.same_order,
            "changes_figures": self.changes_figures,
            "orders": {
                words: [
                    {"key": key, "value": magnitude_in(q, unit) if unit else float(q.magnitude)} for key, q in order
                ]
                for words, order in self.orders
            },
        }


@dataclass(frozen=True)
class Plan:
    record: Record
    over: str
    over_var: str  # the name one option goes by in the formulas: `tier` for `tiers`
    rank_by: str
    figures: tuple[Figure, ...]  # of the node, one each
    options: tuple[Option, ...]  # best first
    diagnostics: tuple[Any, ...]
    choices: tuple[ChoiceOrder, ...] = ()  # how the order goes under each choice of an input (engine=a,b)


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
    if base is not None:  # a path to the record's file works too, as for kb explain and kb check
        base = base.removeprefix("./").removeprefix(corpus.settings.records_dir + "/").removesuffix(".md")
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
        low, value, high = (number_or_text(p) for p in parts)
        return {"value": value, "low": low, "high": high}
    if len(parts) != 1:
        raise PlanError(f"'{text}': write a value, or a band as LOW:VALUE:HIGH")
    return number_or_text(text)


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
            if _ratio(per_option[name][key]) > 1
            else f"{words} ({name} {_shown_ratio(per_option[name][key])}: below 0, as no room is left for it at all)"
            for name, words in limits.items()
            if key in per_option.get(name, {}) and not _kept(per_option[name][key])
        )
        bottlenecks = tuple(
            slowest
            for figure, named in stages.items()
            if (slowest := slowest_stage(figure, named, per_option, key)) is not None
        )

        def lacks(name: str, key: str = key, target: Record | None = target) -> str:
            return missing_fields(corpus, index, record, specs, over_var, name, key, target)

        unranked = (
            f"no {rank_by}: {lacks(rank_by)}" if key not in per_option.get(rank_by, {}) and rank_by in specs else None
        )
        unpriced = tuple(
            f"not checked ({limits[name]}): {lacks(name)}"
            for name in limits
            if key not in per_option.get(name, {}) and name in specs
        )
        if not figures:  # nothing computed at all: say so, and which fields are missing (never only "kb explain")
            if unranked is not None:
                unranked = "no figures: " + unranked.partition(": ")[2]
            else:
                unpriced = tuple("no figures: " + why.partition(": ")[2] for why in unpriced[:1]) + unpriced[1:]
        within = tuple(
            f"{name} {_shown_ratio(per_option[name][key])}"
            for name in limits
            if key in per_option.get(name, {}) and _kept(per_option[name][key])
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
                within,
                unranked,
            )
        )

    def rank(option: Option) -> tuple:
        # an option kb cannot price is never recommended: it follows every priced one, broken limits or not
        found = next((f for f in option.figures if f.name == rank_by), None)
        return (found is None, len(option.breaches), _magnitude(found.value) if found else 0.0)

    ranked = tuple(sorted(options, key=rank))
    choices = tuple(
        order
        for field in record.mapping("inputs")
        if (order := _choice_order(record, field, rank_by, ranked, [*node, *(f for o in ranked for f in o.figures)]))
    )
    return Plan(record, over, over_var, rank_by, tuple(node), ranked, diagnostics, choices)


def _choice_order(
    record: Record, field: str, rank_by: str, options: tuple[Option, ...], every: list[Figure]
) -> ChoiceOrder | None:
    """The options' order under each choice of input `field` (a choice among records, engine=a,b): each option's
    rank figure under that choice, every other condition at its preferred case; None when `field` is no choice."""
    raw = record.mapping("inputs").get(field)
    if not (isinstance(raw, dict) and isinstance(raw.get("choose"), list) and len(raw["choose"]) > 1):
        return None
    condition = f"{record.key}.inputs.{field}"

    def under(value: Value) -> dict[str, Any]:
        """The figure under each choice: the first case of each (the cases come preferred first)."""
        found: dict[str, Any] = {}
        for scenario, quantity in value.variants:
            words = dict(scenario).get(condition)
            if words is not None:
                found.setdefault(words, quantity)
        return found

    words: list[str] = []
    for figure in every:
        for said in under(figure.value):
            if said not in words:
                words.append(said)
    if not words:  # no figure rests on the choice: it changes nothing
        words = [f"{field} is {key}" for key in raw["choose"] if isinstance(key, str)]
    changes = any(len({q for q in under(f.value).values()}) > 1 for f in every)
    orders = []
    for said in words:
        priced = []
        for option in options:
            found = next((f for f in option.figures if f.name == rank_by), None)
            if found is not None:
                priced.append((option.key, under(found.value).get(said, found.value.quantity)))
        priced.sort(key=lambda item: float(item[1].to_base_units().magnitude))
        orders.append((said, tuple(priced)))
    return ChoiceOrder(field, tuple(orders), changes)


def slowest_stage(figure: str, stages: dict[str, str], per_option: dict, key: str) -> Bottleneck | None:
    """The stage of `figure` (the least of `stages`, x-kb-plan's `stages`) with the least figure for option
    `key` (per_option: cost -> {option key: Value}); on a tie the one listed first. None when a stage has no
    figure for the option. The plan and the planner page name the bottleneck with it."""
    found = [(name, per_option.get(name, {}).get(key)) for name in stages]
    if not found or any(value is None or value.quantity is None for _, value in found):
        return None
    name, _ = min(found, key=lambda item: _magnitude(item[1]))  # min keeps the first of equals
    return Bottleneck(figure, name, str(stages[name]))


def _ratio(value: Value) -> float:
    return float(value.quantity.to("dimensionless").magnitude)


def _kept(limit: Value) -> bool:
    """A limit (a share of something, at most 1) is kept from 0 to 1. Below 0 it divides by a room that is
    below nothing (HBM left for KV once weights larger than the HBM are loaded): broken, never "within"."""
    return 0 <= _ratio(limit) <= 1


def _shown_ratio(limit: Value) -> str:
    return format_quantity(limit.quantity, "1", 4)


def _magnitude(value: Value) -> float:
    return float(value.quantity.to_base_units().magnitude)


# kb plan's words, which its text and a workload's page (kbtools.site.plan_view) both print
def ranking_heading(plan: Plan) -> str:
    """ "tiers, best first (least ttft, then the rest)"."""
    return f"{plan.over}, best first (least {plan.rank_by}, then the rest)"


def verdict_line(option: Option) -> str | None:
    return f"a hit against the recompute: {option.verdict}" if option.verdict else None


def within_line(option: Option) -> str | None:
    return f"within its limits: {', '.join(option.within)} (each at most 1)" if option.within else None


def limited_lines(option: Option) -> tuple[str, ...]:
    return tuple(f"{b.figure} limited by {b.words}" for b in option.bottlenecks)


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
                "not_priced": list(o.not_priced),
                "within_limits": list(o.within),
                "figures": {f.name: f.data() for f in o.figures},
            }
            for n, o in enumerate(plan.options, 1)
        ],
        "order_by_choice": [c.data(_rank_unit(plan)) for c in plan.choices],
    }
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def as_csv(plan: Plan) -> str:
    """One row an option, best first, with its figures; then the node's figures (the recompute it is compared
    with, the decode cost), the same on every row, so a spreadsheet reading one row has the whole comparison. A
    node figure named as an option's is the column node_NAME."""
    names = list(dict.fromkeys(f.name for o in plan.options for f in o.figures))
    node = {(f"node_{f.name}" if f.name in names else f.name): f for f in plan.figures}
    columns = ["rank", "key", "name", "verdict", "limits_broken", "limited_by", "not_priced"]
    for name in [*names, *node]:
        columns += [name, f"{name}_low", f"{name}_high", f"{name}_unit"]
    shared = {}
    for name, figure in node.items():
        data = figure.data()
        shared.update({name: data["value"], f"{name}_low": data["low"], f"{name}_high": data["high"]})
        shared[f"{name}_unit"] = data["unit"]
    rows = []
    for n, option in enumerate(plan.options, 1):
        row: dict[str, Any] = {
            "rank": n,
            "key": option.key,
            "name": option.name,
            "verdict": option.verdict or "",
            "limits_broken": "; ".join(option.breaches),
            "limited_by": "; ".join(f"{b.figure}: {b.words}" for b in option.bottlenecks),
            "not_priced": "; ".join(option.not_priced),
            **shared,
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
        lines.extend(_figure_lines(figure, width, "  ", explain, node=True))
    lines.append("")
    lines.append(f"{ranking_heading(plan)}:")
    for n, option in enumerate(plan.options, 1):
        lines.append(f"{n}. {option.key} ({option.name})")
        verdict, within = verdict_line(option), within_line(option)
        lines.extend([f"     {verdict}"] if verdict else [])
        lines.extend(f"     ! {broken}" for broken in option.breaches)
        lines.extend([f"     {within}"] if within else [])
        lines.extend(f"     {limited}" for limited in limited_lines(option))
        for why in option.not_priced:
            lines.append(f"     {why}")
        for figure in option.figures:
            lines.extend(_figure_lines(figure, width, "     ", explain))
    unit = _rank_unit(plan)
    for choice in plan.choices:
        lines.append("")
        if not choice.changes_figures:
            lines.append(f"{choice.field}: the choices give the same figures; the {choice.field} changes nothing here")
        elif choice.same_order:
            lines.append(
                f"{choice.field}: the order is the same under each choice (the figures differ: see the ranges)"
            )
        else:
            lines.append(f"{choice.field}: the order differs between the choices; best first under each:")
            for words, order in choice.orders:
                ranked = ", ".join(f"{key} {format_quantity(q, unit, 4)}" for key, q in order)
                lines.append(f"  if {words}: {ranked}")
    if explain:  # the records and sources once, not under every figure
        records = list(dict.fromkeys(r for f in every for r in rests_on(f.value)))
        sources = list(dict.fromkeys(s for f in every for s in f.value.sources))
        lines.append("")
        lines.append(f"the figures rest on {len(records)} records: {', '.join(records)}")
        lines.append(f"sources cited: {', '.join(sources) or 'none'}")
    # names, conditions, labels and ids are the records' authors' text: none may drive the terminal
    return "\n".join(terminal_text(line) for line in lines) + "\n"


CASES_SHOWN = 4  # cases listed under a figure by --explain; kb explain lists more


def _figure_lines(figure: Figure, widths: tuple[int, int], indent: str, explain: bool, node: bool = False) -> list[str]:
    lines = [f"{indent}{figure.name.ljust(widths[0])}  {figure.shown().ljust(widths[1])}  {figure.label}"]
    deeper = indent + " " * (widths[0] + 2)
    value = figure.value
    if explain and value.formula is not None:
        lines.append(f"{deeper}= {value.formula.text}")
        # kb explain's substitution, one level deep: each input's figure and unit where its name stood (the
        # inputs that are figures of the plan are listed above with their own)
        lines.append(f"{deeper}= {substituted(value, SUBSTITUTE_DEPTH)}")
    fallbacks = fallbacks_taken(value, chains_only=not explain)
    if fallbacks and (explain or node):
        lines.append(f"{deeper}with {'; '.join(fallbacks)}")
    if explain:
        for scenario, figure_under in value.variants[:CASES_SHOWN]:
            lines.append(f"{deeper}if {scenario_text(scenario)}: {format_quantity(figure_under, value.unit, 4)}")
        if len(value.variants) > CASES_SHOWN:
            lines.append(f"{deeper}… and {len(value.variants) - CASES_SHOWN} more cases (kb explain lists them)")
    return lines


def _rank_unit(plan: Plan) -> str | None:
    """The unit the rank figure is shown in."""
    found = next((f for o in plan.options for f in o.figures if f.name == plan.rank_by), None)
    return found.value.unit if found else None


def _asked(record: Record) -> dict[str, str]:
    """The workload's own fields as written, choices among records included."""
    shown: dict[str, str] = {}
    for name, value in record.data.items():
        # the envelope's fields (`unknown` names what a draft lacks a source for), and the type's own costs
        if name in ("id", "type", "name", "status", "confidence", "updated", "sources", "unknown", "costs", "inputs"):
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
