"""Values with their provenance, and what is said about them: how far a stated figure is from its
recomputation, verdicts, ranges over competing values, the formula with its inputs substituted."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kbtools.check.links import QUALIFIED
from kbtools.corpus import Corpus, Record
from kbtools.lang.formula import Formula, FormulaError, MissingName, Table, evaluate, in_unit, written_out
from kbtools.lang.units import (
    QuantityError,
    describe_dimension,
    format_quantity,
    parse_quantity_text,
)

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
    # The figure again for each competing value it rests on, one swapped in at a time: (which value, figure).
    # Built bottom-up as values are made, so a long chain costs no recursion; empty when nothing it reads competes.
    variants: tuple[tuple[str, Any], ...] = ()

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
        """The lowest and highest figure over the preferred value and its competing (non-deprecated) values."""
        if not self.variants:
            return None
        figures = [self.quantity, *(q for _, q in self.variants)]
        return min(figures), max(figures)

    def spread_shown(self, unit: str | None = None) -> str | None:
        """'low to high' over the competing values, or None when nothing this figure rests on competes."""
        spread = self.spread
        if spread is None:
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
        return format_quantity(self.quantity, unit or self.unit, 4 if self.computed else 6)


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


RANGE = "range"  # {{ x | range }}: 'low to high' over the competing values x rests on (x itself when none compete)


def _verdict_word(ratio: float) -> str:
    return "as fast" if abs(ratio - 1) < 0.01 else "faster" if ratio < 1 else "slower"


def verdict(value: Value) -> str:
    """A ratio of two times in words, from the figure itself: prose never carries a hand-typed verdict."""
    if not value.quantity.dimensionless:
        raise FormulaError(
            "KB512",
            f"{value.shown()} is {describe_dimension(value.quantity.dimensionality)}, not a ratio; "
            "'| verdict' quotes a plain number such as time_a / time_b",
        )
    ratio = float(value.quantity.to("dimensionless").magnitude)
    word = _verdict_word(ratio)
    shown = f"{word} ({format_quantity(value.quantity.to('dimensionless'), None, 3)}× the time"
    flips = [label for label, q in value.variants if _verdict_word(float(q.to("dimensionless").magnitude)) != word]
    spread = value.spread
    if flips and spread is not None:  # a competing input value turns the verdict round: say so, never hide it
        low, high = spread
        shown += (
            f"; {format_quantity(low.to('dimensionless'), None, 3)}× to {format_quantity(high.to('dimensionless'), None, 3)}× "
            f"over competing values, so the verdict turns on {', '.join(flip.split(' = ')[0] for flip in flips)}"
        )
    return shown + ")"


def _labels(value: Value) -> list[str]:
    if value.rows is not None:
        return [label for _, row in value.rows for label, _ in row.variants]
    return [label for label, _ in value.variants]


def _swapper(value: Value) -> Callable[[str], Any]:
    """label -> the value's figure (or table) when the competing value `label` is taken instead of the preferred
    one. Its variants are indexed once, here: looked up once per label, each label costs O(1) (O(rows) for a
    table), where indexing them at each lookup made a field with N competing values cost N² per figure."""
    if value.rows is not None:
        rows = [(key, _swapper(row)) for key, row in value.rows]
        return lambda label: Table({key: swap(label) for key, swap in rows})
    figures = dict(value.variants)
    return lambda label: figures.get(label, value.quantity)


def variants_of(formula: Formula, used: tuple[tuple[str, Value], ...], units: Any) -> tuple[tuple[str, Any], ...]:
    """The formula evaluated again with each competing value among its inputs swapped in, one at a time.
    The inputs are keyed as the formula reads them (a name, a.field, or the param() call)."""
    labels = dict.fromkeys(label for _, value in used for label in _labels(value))
    if not labels:
        return ()
    swappers = {key: _swapper(value) for key, value in used}
    out = []

    def pick(key: str, label: str) -> Any:
        if key not in swappers:
            raise MissingName(key)  # a name default() stood in for: the same fallback applies
        return swappers[key](label)

    for label in labels:

        def name(parts: tuple[str, ...], label: str = label) -> Any:
            return pick(".".join(parts), label)

        def param(var: str, pid: str, label: str = label) -> Any:
            return pick(f"param({var}, '{pid}')", label)

        def call(var: str, function: str, arguments: Callable[[], list], text: str, label: str = label) -> Any:
            return pick(text, label)

        try:
            figure = evaluate(formula, name, param, call)
            out.append((label, in_unit(figure, units)))
        except (FormulaError, KeyError, ArithmeticError, QuantityError, ValueError):
            continue  # this variant cannot be computed (say, a division by zero): the range leaves it out
    return tuple(out)


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


def substituted(value: Value, depth: int = 0) -> str:
    """The formula with each input replaced by its figure, expanding derived inputs in place."""
    if value.formula is None:
        return value.shown()
    inputs = dict(value.inputs)

    def name_text(node: ast.AST) -> str | None:
        found = inputs.get(ast.unparse(node))
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


def is_reference(item: Any, corpus: Corpus) -> bool:
    if isinstance(item, list):
        return all(is_reference(x, corpus) for x in item)
    match = QUALIFIED.match(item) if isinstance(item, str) else None
    return bool(match and match.group(1) in corpus.registry.dirs)
