"""Values with their provenance, and what is said about them: how far a stated figure is from its
recomputation, verdicts, ranges over competing values, the formula with its inputs substituted."""

from __future__ import annotations

import ast
import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from kbtools.corpus import Corpus, Record
from kbtools.index import QUALIFIED
from kbtools.lang.formula import (
    Formula,
    FormulaError,
    MissingName,
    Table,
    evaluate,
    in_unit,
    node_text,
    written_out,
)
from kbtools.lang.interval import Interval, evaluate_range
from kbtools.lang.units import (
    QuantityError,
    Written,
    describe_dimension,
    format_quantity,
    parse_quantity_text,
    unit_registry,
)

Choice = tuple[str, str]  # (the condition: the record.field it is a value of; the choice, in words)
Scenario = tuple[Choice, ...]  # one choice for each condition a value rests on, sorted
MAX_SCENARIOS = 64  # combinations enumerated for one value; past this, an interval enclosure stands in

BASIS_RANK = {"unverified": 0, "secondary": 1, "derived": 2, "measured": 3, "vendor-spec": 3}


@dataclass(frozen=True)
class Value:
    """A figure with its provenance: where it stands, how it is known, what it rests on."""

    quantity: Any  # pint.Quantity; None for a table
    record: str  # dir/id
    name: str  # field or cost name, with [row] for a table row
    path: str  # the record's file
    line: int
    basis: str
    confidence: float
    sources: tuple[str, ...]
    unit: str | None = None  # the unit to show it in
    formula: Formula | None = None
    inputs: tuple[tuple[str, Value], ...] = ()
    recomputed: Value | None = None  # for a stated figure that a derivation checks
    rows: tuple[tuple[str, Value], ...] | None = None
    vendor_claim: bool = False
    note: str | None = None
    alternatives: tuple[Value, ...] = ()  # the other sourced values of a field written as competing values
    rank: str | None = None
    weakest: str | None = None  # the weakest basis of everything it rests on, set when derived (a chain can be long)
    # The figure under each combination of the conditions it rests on (a field written as competing values,
    # or a value with a low and high end, is a condition; each value of it is a choice): (scenario, figure),
    # one choice per condition in every scenario, the preferred combination included. Built bottom-up as values
    # are made, so a long chain costs no recursion; empty when nothing it reads varies.
    variants: tuple[tuple[Scenario, Any], ...] = ()
    # low and high when the combinations were too many to enumerate (MAX_SCENARIOS): an interval-arithmetic
    # enclosure instead, and `variants` then holds each choice taken alone
    bounds: tuple[Any, Any] | None = None

    @property
    def computed(self) -> bool:
        return self.formula is not None

    @property
    def input_basis(self) -> str:
        """The weakest basis among everything this value rests on."""
        if self.weakest is not None:
            return self.weakest
        return weakest_basis(self.inputs, self.basis)

    @property
    def spread(self) -> tuple[Any, Any] | None:
        """The lowest and highest figure over every combination of the conditions it rests on: its low and
        high end. None when nothing it rests on varies."""
        if not self.variants and self.bounds is None:
            return None
        figures = [self.quantity, *(q for _, q in self.variants), *(self.bounds or ())]
        return min(figures), max(figures)

    @property
    def low(self) -> Any:
        return self.spread[0] if self.spread is not None else self.quantity

    @property
    def high(self) -> Any:
        return self.spread[1] if self.spread is not None else self.quantity

    def conditions(self) -> dict[str, list[Choice]]:
        """condition -> its choices, in the order first met, over every scenario (every row's, for a table)."""
        found: dict[str, dict[Choice, None]] = {}
        for scenario in _scenarios(self):
            for choice in scenario:
                found.setdefault(choice[0], {})[choice] = None
        return {condition: list(choices) for condition, choices in found.items()}

    def spread_shown(self, unit: str | None = None) -> str | None:
        """'low to high' over the conditions it rests on, or None when none of them moves it (none varies, or
        the figure is the same under every combination)."""
        spread = self.spread
        if spread is None or spread[0] == spread[1]:
            return None
        digits = 4 if self.computed else 6
        return f"{format_quantity(spread[0], unit or self.unit, digits)} to {format_quantity(spread[1], unit or self.unit, digits)}"

    def shown(self, unit: str | None = None) -> str:
        """Computed figures to 4 significant digits; stated ones as precisely as a record writes them."""
        if self.quantity is None:
            count = len(self.rows or ())
            return f"table of {count} row{'' if count == 1 else 's'}" + (
                " (no row's record has a value for what the formula reads)" if not count else ""
            )
        shown = format_quantity(self.quantity, unit or self.unit, 4 if self.computed else 6)
        if self.computed or unit is not None:
            return shown
        written = _binary_written(self.quantity.units)
        if written is not None:
            # a vendor's GiB figure is shown as the vendor states it, its decimal bytes beside it
            return f"{format_quantity(self.quantity, written, 6)} ({shown})"
        return shown


BINARY_PREFIX = re.compile(r"^[KMGTP]i[Bb]")  # KiB, MiB, GiB ... (and per-second forms)


@lru_cache(maxsize=256)
def _binary_written(units: Any) -> str | None:
    """A stated figure's own unit as written, where it is binary (GiB, TiB/s): formatted once a unit, as every
    page shows every figure."""
    written = f"{units:~P}"
    return written if BINARY_PREFIX.match(written) else None


@lru_cache(maxsize=256)
def _bounds(low: str, high: str) -> tuple[Any, Any]:
    """An x-kb-plausible range read once per schema, not once per record (every record's field checks it)."""
    return (parse_quantity_text(low, None) if low else None, parse_quantity_text(high, None) if high else None)


def how_far(stated: float, computed: float) -> str:
    """How a stated figure stands to its recomputation, in words a reader takes in at once:
    'twice', 'half', '0.977×' or '3,600×' the recomputed one; a zero on either side said as such."""
    if computed == 0:
        return "the recomputed figure is 0"
    if stated == 0:
        return "the stated figure is 0"
    ratio = stated / computed
    if abs(ratio - 2) < 0.005:
        return "the stated figure is twice the recomputed one"
    if abs(ratio - 0.5) < 0.0025:
        return "the stated figure is half the recomputed one"
    shown = f"{ratio:,.0f}" if abs(ratio) >= 1000 else f"{ratio:.3g}"
    return f"the stated figure is {shown}× the recomputed one"


def matching(record: Record, specs: Any) -> dict[str, Any] | None:
    """The first of a derivation's or function's specs whose `when` the record meets (a value, a list of
    values, or null for a field the record leaves out), or the spec itself when there is one."""
    for spec in specs if isinstance(specs, list) else [specs] if specs else []:
        when = spec.get("when", {}) if isinstance(spec, dict) else None
        if isinstance(when, dict) and all(
            record.data.get(k) in (v if isinstance(v, list) else [v]) for k, v in when.items()
        ):
            return spec
    return None


def differs(a: float, b: float, tolerance: float) -> bool:
    """Two figures further apart than `tolerance`, relative to the larger: the one test for KB500 and KB530."""
    reference = max(abs(a), abs(b))
    return a != b and bool(reference) and abs(a - b) / reference > tolerance


def contested(record: Record) -> bool:
    """A contested record shows its disagreements on its page instead of failing the check (KB520, KB530)."""
    return record.data.get("status") == "contested"


VERDICT = "verdict"  # {{ a_over_b | verdict }}: a computed ratio of two times, quoted as faster / slower


RANGE = "range"  # {{ x | range }}: 'low to high' over the conditions x rests on (x itself when none vary)

_WORDS = ("faster", "as fast", "slower")


def ratio_word(ratio: float) -> str:
    """A ratio of two times as kb words it: within 1 % of 1 is as fast."""
    return "as fast" if abs(ratio - 1) < 0.01 else "faster" if ratio < 1 else "slower"


def _ratio(quantity: Any) -> float:
    return float(quantity.to("dimensionless").magnitude)


def _times(ratio: float) -> str:
    return f"{format_quantity(unit_registry().Quantity(ratio, 'dimensionless'), None, 3)}×"


def verdict(value: Value) -> str:
    """A ratio of two times in words, from the figure itself: prose never carries a hand-typed verdict. Over a
    range, the word holds only where the whole range agrees; otherwise the verdict names the conditions that
    decide it and which way each choice turns it."""
    if not value.quantity.dimensionless:
        raise FormulaError(
            "KB512",
            f"{value.shown()} is {describe_dimension(value.quantity.dimensionality)}, not a ratio; "
            "'| verdict' quotes a plain number such as time_a / time_b",
        )
    ratio = _ratio(value.quantity)
    word = ratio_word(ratio)
    spread = value.spread
    if spread is None or spread[0] == spread[1]:
        return f"{word} ({_times(ratio)} the time)"
    low, high = (_ratio(q) for q in spread)
    span = f"{_times(low)} to {_times(high)}"
    cases = [(scenario, ratio_word(_ratio(figure))) for scenario, figure in value.variants]
    words = {w for _, w in cases} | {word}
    if len(words) == 1 and {ratio_word(low), ratio_word(high)} == {word}:
        return f"{word} ({_times(ratio)} the time; {span} over the conditions it rests on)"
    if len(words) == 1:  # only the enclosure of combinations too many to enumerate reaches the other word
        return (
            f"{word} at every choice taken alone ({_times(ratio)} the time), but {span} over the combinations of "
            f"the {len(value.conditions())} conditions it rests on, which reaches "
            + " and ".join(w for w in _WORDS if w in {ratio_word(low), ratio_word(high)} - {word})
        )
    deciding = _deciding(cases)
    groups: dict[str, dict[str, None]] = {}
    for scenario, case in cases:
        groups.setdefault(case, {})[" and ".join(text for c, text in scenario if c in deciding)] = None
    ordered = [w for w in _WORDS if w in groups]
    if len(ordered) == 2 and min(len(g) for g in groups.values()) < max(len(g) for g in groups.values()):
        # the word fewer combinations give, with them; the other holds wherever they do not
        fewer, more = sorted(ordered, key=lambda w: len(groups[w]))
        said = f"{fewer} if {' or if '.join(groups[fewer])}; {more} otherwise"
    else:
        said = "; ".join(f"{w} if {' or if '.join(groups[w])}" for w in ordered)
    return f"{' or '.join(ordered)} ({span} the time; {_times(ratio)} at the preferred values): {said}"


def _deciding(cases: list[tuple[Scenario, str]]) -> set[str]:
    """The conditions whose choice alone, the others held, turns the verdict; every condition when only a
    change of several together does."""
    conditions = {c for scenario, _ in cases for c, _ in scenario}
    deciding = set()
    for condition in conditions:
        seen: dict[Scenario, set[str]] = {}
        for scenario, case in cases:
            seen.setdefault(tuple(ch for ch in scenario if ch[0] != condition), set()).add(case)
        if any(len(w) > 1 for w in seen.values()):
            deciding.add(condition)
    return deciding or conditions


def scenario_text(scenario: Scenario) -> str:
    return " and ".join(text for _, text in scenario)


def _scenarios(value: Value) -> list[Scenario]:
    if value.rows is not None:
        return [scenario for _, row in value.rows for scenario in _scenarios(row)]
    return [scenario for scenario, _ in value.variants]


def _swapper(value: Value) -> Callable[[Scenario], Any]:
    """scenario -> the value's figure (or table) under it: its own conditions' choices picked out of a scenario
    over more. Its variants are indexed once, here, so each lookup is O(1) (O(rows) for a table)."""
    if value.rows is not None:
        rows = [(key, _swapper(row)) for key, row in value.rows]
        return lambda scenario: Table({key: swap(scenario) for key, swap in rows})
    if not value.variants:
        return lambda scenario: value.quantity
    figures = dict(value.variants)
    own = {c for scenario in figures for c, _ in scenario}
    return lambda scenario: figures.get(tuple(ch for ch in scenario if ch[0] in own), value.quantity)


# call(used) -> a CallLookup that evaluates record.function(args) again, recording the call's value in `used`
Recall = Callable[[dict], Callable[..., Any]]


def variants_of(
    formula: Formula, used: tuple[tuple[str, Value], ...], units: Any, recall: Recall | None = None
) -> tuple[tuple[tuple[Scenario, Any], ...], tuple[Any, Any] | None]:
    """The formula evaluated under every combination of the conditions among its inputs (a condition read
    by two inputs takes the same choice in both, so the range is exact however often it is read), and the
    interval enclosure when the combinations are more than MAX_SCENARIOS (then each choice is taken alone
    besides). The inputs are keyed as the formula reads them (a name, a.field, the param() or function call);
    a call is evaluated again with its arguments under each scenario when `recall` can."""
    conditions: dict[str, dict[Choice, None]] = {}
    for _, value in used:
        for condition, choices in value.conditions().items():
            conditions.setdefault(condition, {}).update(dict.fromkeys(choices))
    if not conditions:
        return (), None
    names = sorted(conditions)
    options = [list(conditions[n]) for n in names]  # each condition's preferred choice first
    count = math.prod(len(o) for o in options)
    capped = count > MAX_SCENARIOS or any(v.bounds is not None for _, v in used)
    if capped:
        preferred = [o[0] for o in options]
        scenarios = [tuple(preferred)] + [
            tuple(choice if j == i else preferred[j] for j in range(len(names)))
            for i, o in enumerate(options)
            for choice in o[1:]
        ]
    else:
        scenarios = list(itertools.product(*options))
    swappers = {key: _swapper(value) for key, value in used}
    out = []

    def pick(key: str, scenario: Scenario) -> Any:
        if key not in swappers:
            raise MissingName(key)  # a name default() stood in for: the same fallback applies
        return swappers[key](scenario)

    for scenario in scenarios:

        def name(parts: tuple[str, ...], scenario: Scenario = scenario) -> Any:
            return pick(".".join(parts), scenario)

        def param(var: str, pid: str, scenario: Scenario = scenario) -> Any:
            return pick(f"param({var}, '{pid}')", scenario)

        def call(
            var: str, function: str, arguments: Callable[[], list], text: str, scenario: Scenario = scenario
        ) -> Any:
            if recall is None:
                return pick(text, scenario)
            again: dict[str, Value] = {}
            recall(again)(var, function, arguments, text)  # the arguments as this scenario has them
            return _swapper(again[text])(scenario)

        try:
            figure = evaluate(formula, name, param, call)
            out.append((scenario, in_unit(figure, units)))
        except (FormulaError, KeyError, ArithmeticError, QuantityError, ValueError):
            continue  # this combination cannot be computed (say, a division by zero): the range leaves it out
    bounds = _enclosure(formula, used, units, recall) if capped else None
    return tuple(out), bounds


def _interval(value: Value) -> Any:
    if value.rows is not None:
        return Table({key: _interval(row) for key, row in value.rows})
    low, high = value.spread or (value.quantity, value.quantity)
    return Interval.of(low, high)


def _enclosure(
    formula: Formula, used: tuple[tuple[str, Value], ...], units: Any, recall: Recall | None
) -> tuple[Any, Any] | None:
    """low and high by interval arithmetic over each input's own range; None when it cannot be computed (a
    range that holds a divisor's 0: the combinations enumerated stand alone then)."""
    ranges = {key: value for key, value in used}

    def lookup(key: str) -> Any:
        if key not in ranges:
            raise MissingName(key)
        return _interval(ranges[key])

    def call(var: str, function: str, arguments: Callable[[], list], text: str) -> Any:
        args = arguments()
        ends = [ranges[text].low, ranges[text].high] if text in ranges else []
        if recall is not None and any(not a.point for a in args):
            # the call at its arguments' low and high ends: the functions records declare (KV bytes, FLOP of n
            # tokens) grow with their arguments, so these bound it
            for end in ("low", "high"):
                again: dict[str, Value] = {}
                recall(again)(var, function, lambda end=end: [getattr(a, end) for a in args], text)
                ends += [again[text].low, again[text].high]
        if not ends:
            raise MissingName(text)
        return Interval.of(min(ends), max(ends))

    try:
        found = evaluate_range(
            formula,
            lambda parts: lookup(".".join(parts)),
            lambda var, pid: lookup(f"param({var}, '{pid}')"),
            call,
        )
        return in_unit(found.low, units), in_unit(found.high, units)
    except (FormulaError, KeyError, ArithmeticError, QuantityError, ValueError):
        return None


def weakest_basis(inputs: tuple[tuple[str, Value], ...], default: str) -> str:
    """One level only: each derived input already carries its own weakest basis."""
    bases = [v.input_basis if v.computed else v.basis for _, v in inputs] or [default]
    return min(bases, key=lambda b: BASIS_RANK.get(b, 0))


@dataclass(frozen=True)
class InlineValue:
    line: int
    column: int
    source: str  # what stands between {{ and }}
    value: Value | None
    rendered: str | None


SUBSTITUTE_DEPTH = 3  # derived inputs expanded in place this many levels; deeper ones show their figure


_WRITTEN: dict[tuple[int, int], tuple[Value, str]] = {}  # (id of a value, depth) -> (that value, its text)
_WRITTEN_MOST = 100_000


def substituted(value: Value, depth: int = 0) -> str:
    """The formula with each input replaced by its figure, expanding derived inputs in place. A value is
    immutable, and one input is written out on every page and row that reads it (a tier's hit time on each
    workload's page), so its text is kept by identity: the entry holds the value, so the id cannot be reused."""
    kept = _WRITTEN.get((id(value), depth))
    if kept is not None and kept[0] is value:
        return kept[1]
    if len(_WRITTEN) >= _WRITTEN_MOST:  # a long-lived kb serve: let go of values no page may read again
        _WRITTEN.clear()
    text = _substituted(value, depth)
    _WRITTEN[(id(value), depth)] = (value, text)
    return text


def _substituted(value: Value, depth: int) -> str:
    if value.formula is None:
        return value.shown()
    inputs = dict(value.inputs)

    def name_text(node: ast.AST) -> str | None:
        found = inputs.get(node_text(node))
        if found is None:
            return None
        if (
            found.computed
            and found.formula is not None
            and found.rows is None
            and found.recomputed is None
            and depth < SUBSTITUTE_DEPTH
        ):
            return f"({substituted(found, depth + 1)})"
        return found.shown()

    return written_out(value.formula.tree, name_text)


def choices(
    record: Record, name: str, written: Written, others: list[Written], unit: str | None
) -> tuple[tuple[Scenario, Any], ...]:
    """A stated value as a condition of what reads it: each of its sourced values not deprecated (the
    preferred first) or each end of its band is a choice, said by the condition it holds under when it
    names one, else by its figure and source."""
    condition = f"{record.key}.{name}"

    def said(w: Written) -> str:
        if w.condition:
            return w.condition
        return f"{condition} = {format_quantity(w.quantity, unit, 6)}" + (f" ({w.source})" if w.source else "")

    units = written.quantity._units  # the figures of a condition are in the unit of the one computed with
    if written.low is not None and written.high is not None:
        ends = [
            (f"{condition} at the low end of its band, {format_quantity(written.low, unit, 6)}", written.low),
            (said(written), written.quantity),
            (f"{condition} at the high end of its band, {format_quantity(written.high, unit, 6)}", written.high),
        ]
        return tuple((((condition, text),), q.to(units)) for text, q in ends)
    kept = [w for w in others if w.rank != "deprecated"]
    if not kept:
        return ()
    return tuple((((condition, said(w)),), w.quantity.to(units)) for w in [written, *kept])


def chosen_references(raw: Any) -> list[str] | None:
    """The references of an input written `choose: [dir/id, ...]`, the preferred first; None for any other input."""
    if isinstance(raw, dict) and isinstance(raw.get("choose"), list) and raw["choose"]:
        return [item for item in raw["choose"] if isinstance(item, str)] or None
    return None


def chosen_value(condition: str, options: list[tuple[str, Value]], preferred: Value) -> Value:
    """The preferred choice's value, varied over the choices (each a record, said by `text`) and over the
    conditions each choice's own figure rests on: every combination of the two."""
    own: dict[str, dict[Choice, None]] = {}
    for _, value in options:
        for name, found in value.conditions().items():
            own.setdefault(name, {}).update(dict.fromkeys(found))
    names = sorted(own)
    combos = list(itertools.product(*(list(own[n]) for n in names)))
    if len(options) * len(combos) > MAX_SCENARIOS:  # each choice with its own conditions held; their range beside
        combos = [tuple(list(own[n])[0] for n in names)]
    variants = []
    for text, value in options:
        swap = _swapper(value)
        for combo in combos:
            scenario = tuple(sorted(((condition, text), *combo)))
            variants.append((scenario, swap(scenario)))
    bounds = None
    if len(combos) == 1 and names:
        figures = [end for _, value in options for end in (value.low, value.high)]
        bounds = (min(figures), max(figures))
    return replace(preferred, variants=tuple(variants), bounds=bounds)


def is_reference(item: Any, corpus: Corpus) -> bool:
    options = chosen_references(item)
    if options:
        return all(is_reference(x, corpus) for x in options)
    if isinstance(item, list):
        return all(is_reference(x, corpus) for x in item)
    match = QUALIFIED.match(item) if isinstance(item, str) else None
    return bool(match and match.group(1) in corpus.registry.dirs)
