"""Interval arithmetic over the formula language: a formula evaluated with every name standing for a range
(low, high) instead of one figure, giving a range that holds every figure the formula can take while each
name stays within its own.

It is formula.walk, the walker `formula.evaluate` uses, under another algebra (Ranges): the language is
the walker's, and this module says only what each operator makes of ranges, with the same bounds (KB507) and
unit rules (KB503) at each end. Each operator takes the ends that bound it: a product or a quotient the extreme of its
four corner products, a power by the sign of its base and the parity of its exponent, `abs` and an even power
0 when the range crosses 0, zipf_top and zipf_lru the ends of c and n that bound them (both rise with c and
fall with n; kbtools.lang.caching.hit_rate_range, which also says how a range of s is taken). A division by a
range that holds 0 has no bound, so it is an error (KB505), as a division by 0 is.

The range is an enclosure: a name read twice is let range freely in each place (x - x is -w to w, not 0).
kb computes a value's range over the combinations of the conditions it rests on (compute.values), which is
exact however often a condition is read; this is what it falls back to when the combinations are too many.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pint

from kbtools.lang.caching import FUNCTIONS as CACHE_FUNCTIONS
from kbtools.lang.caching import hit_rate_range
from kbtools.lang.formula import (
    Algebra,
    Formula,
    FormulaError,
    _apply,
    _bounded,
    _bounded_in_base,
    argument_text,
    cache_arguments,
    ln_or_exp,
    plain_number,
    walk,
)
from kbtools.lang.units import format_quantity, unit_registry


@dataclass(frozen=True)
class Interval:
    """low <= high, both pint quantities of one dimension."""

    low: Any
    high: Any

    @classmethod
    def of(cls, a: Any, b: Any | None = None) -> Interval:
        b = a if b is None else b
        try:
            return cls(a, b.to(a.units)) if a <= b else cls(b, a.to(b.units))
        except pint.DimensionalityError:
            raise FormulaError(
                "KB503", f"a range from {format_quantity(a)} to {format_quantity(b)} mixes units"
            ) from None

    @property
    def point(self) -> bool:
        return self.low == self.high

    def holds_zero(self) -> bool:
        return self.low.magnitude <= 0 <= self.high.to(self.low.units).magnitude

    def shown(self) -> str:
        return (
            format_quantity(self.low) if self.point else f"{format_quantity(self.low)} to {format_quantity(self.high)}"
        )


# name -> Interval or a Table of Intervals; param(record, 'id') -> Interval; record.function(args) -> Interval
RangeLookup = Callable[[tuple[str, ...]], Any]
RangeParam = Callable[[str, str], Interval]
RangeCall = Callable[[str, str, Callable[[], list], str], Interval]


def evaluate_range(
    formula: Formula, lookup: RangeLookup, param: RangeParam | None = None, call: RangeCall | None = None
) -> Interval:
    """The range of the formula's value over the ranges of what it reads, each end bounded (KB507)."""
    result = RANGES.scalar(walk(formula.tree, RANGES, lookup, param, call), formula.tree)
    _bounded_in_base(result.low)
    _bounded_in_base(result.high)
    return result


def _corners(left: Interval, right: Interval, op: str) -> Interval:
    """A product or quotient is monotone in each operand on a range that does not cross 0 (for a divisor),
    so its extremes are among the four corner figures."""

    def corner(a: Any, b: Any) -> Any:
        return _bounded(_apply(lambda: a * b if op == "*" else a / b, a, b, op))

    return _hull([corner(a, b) for a in (left.low, left.high) for b in (right.low, right.high)])


def _hull(figures: list[Any]) -> Interval:
    unit = figures[0].units
    magnitudes = [f.to(unit).magnitude for f in figures]
    ureg = unit_registry()
    return Interval(ureg.Quantity(min(magnitudes), unit), ureg.Quantity(max(magnitudes), unit))


class Ranges(Algebra):
    """Each operator over ranges: the least and the greatest figure it can make of operands anywhere in theirs."""

    def literal(self, quantity: Any) -> Interval:
        return Interval.of(quantity)

    def negate(self, value: Interval) -> Interval:
        return Interval(-value.high, -value.low)

    def binary(self, op: str, left: Interval, right: Interval, node: ast.BinOp) -> Interval:
        if op == "+":
            return Interval(
                _bounded(_apply(lambda: left.low + right.low, left.low, right.low, op)),
                _bounded(_apply(lambda: left.high + right.high, left.high, right.high, op)),
            )
        if op == "-":
            return Interval(
                _bounded(_apply(lambda: left.low - right.high, left.low, right.high, op)),
                _bounded(_apply(lambda: left.high - right.low, left.high, right.low, op)),
            )
        if op == "/" and right.holds_zero():
            what = ast.unparse(node.right)
            raise FormulaError(
                "KB505",
                f"division by zero: {what} is 0"
                if right.point
                else f"division by a range that holds 0: {what} is {right.shown()}",
            )
        return _corners(left, right, op)

    def power(self, base: Interval, exponent: float) -> Interval:
        def raised(q: Any) -> Any:
            return _bounded(_apply(lambda: q**exponent, q, None, "**"))

        low, high = base.low.magnitude, base.high.to(base.low.units).magnitude
        whole = float(exponent).is_integer()
        if not whole and low < 0:
            raise FormulaError("KB503", f"a range reaching below 0 ({base.shown()}) has no real power {exponent:g}")
        if exponent < 0 and base.holds_zero():
            raise FormulaError("KB505", f"division by zero: {base.shown()} holds 0 and is raised to {exponent:g}")
        ends = [raised(base.low), raised(base.high)]
        if whole and int(exponent) % 2 == 0 and exponent > 0 and low < 0 < high:
            return Interval(ends[0] * 0, _hull(ends).high)  # an even power's least is 0, inside the range
        return _hull(ends)

    def extreme(self, name: str, values: list[Interval]) -> Interval:
        pick = min if name == "min" else max
        try:  # the least of several ranges lies between the least of their lows and the least of their highs
            return Interval(pick(r.low for r in values), pick(r.high for r in values))
        except pint.DimensionalityError as exc:
            raise FormulaError("KB503", f"{name}() of values in different units: {exc}") from None

    def function(self, name: str, values: list[Interval], arguments: list[ast.expr]) -> Interval:
        ureg = unit_registry()
        if name in CACHE_FUNCTIONS:  # rising with c, falling with n: see caching.hit_rate_range
            n, c, s = cache_arguments(name, [(v.low, v.high) for v in values], arguments, [v.shown for v in values])
            low, high = hit_rate_range(name, n, c, s)
            return Interval(ureg.Quantity(low, ureg.dimensionless), ureg.Quantity(high, ureg.dimensionless))
        value, argument = values[0], arguments[0]
        if name == "abs":
            if value.low.magnitude >= 0:
                return value
            if value.high.magnitude <= 0:
                return Interval(-value.high, -value.low)
            return Interval(value.low * 0, max(-value.low, value.high))
        if name == "sqrt":
            return self.power(value, 0.5)
        low, high = (plain_number(name, q) for q in (value.low, value.high))
        if name in ("ln", "exp"):  # both increase: the range's ends give the result's, low first
            what = argument_text(argument)
            return Interval(*(ln_or_exp(name, end, what, value.shown) for end in (low, high)))
        rounding = math.ceil if name == "ceil" else math.floor
        return Interval(
            ureg.Quantity(rounding(low), ureg.dimensionless), ureg.Quantity(rounding(high), ureg.dimensionless)
        )


RANGES = Ranges()
