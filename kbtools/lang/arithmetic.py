"""Arithmetic on quantities exactly as pint does it, without pint's overhead where the case is plain.

pint's arithmetic on two quantities in multiplicative units (every unit of units.txt: no offset unit like
degC, no logarithmic one like dB) is the magnitudes' own operation beside the units' product, quotient or
equality, and a conversion is the magnitude times one factor per pair of units. Around that, each operation
checks offsets, upcast types, arrays and the registry's options, several times what the operation costs, and
a check evaluates formulas hundreds of thousands of times. `combine` and `converted` do those plain cases
directly, computing what pint computes (the same operation on the same numbers, the same units, a quantity
of the same class and state), and hand every other case to pint.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import pint

from kbtools.lang.units import unit_registry

_RESULT_UNITS: dict[tuple[str, Any, Any], Any] = {}  # ('*' or '/', left units, right units) -> the result's units
_EXACT_FACTORS: dict[tuple[Any, Any], Any] = {}  # (from units, to units) -> pint's factor, int or float as pint has it
_MAX_KEPT = 4096  # units met in one corpus are a few hundred; a bound all the same
_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


class ByUnits:
    """What `compute` says of a units container, kept per container. Found by identity first: the quantities
    of a run share a few container objects (parse_unit's, the products kept here), and comparing two equal
    containers costs more than the arithmetic it guards. An entry holds its container, so no other object
    can come to have its id while it is kept."""

    def __init__(self, compute: Callable[[Any], bool]):
        self.compute = compute
        self.by_identity: dict[int, tuple[Any, bool]] = {}
        self.by_equality: dict[Any, bool] = {}

    def __call__(self, units: Any) -> bool:
        held = self.by_identity.get(id(units))
        if held is not None and held[0] is units:
            return held[1]
        found = self.by_equality.get(units)
        if found is None:
            found = self.compute(units)
            if len(self.by_equality) >= _MAX_KEPT:
                self.by_equality.clear()
            self.by_equality[units] = found
        if len(self.by_identity) >= _MAX_KEPT:
            self.by_identity.clear()
        self.by_identity[id(units)] = (units, found)
        return found


def _plain_units(units: Any) -> bool:
    """Units whose arithmetic is plain: multiplicative, in a registry that leaves results as they come (no
    reduction of units, no arrays, a float for a division) and whose quantities hold nothing but their
    magnitude and units (what `_made` sets)."""
    registry = unit_registry()
    sample = registry.Quantity(1.0, units)
    return (
        not sample._get_non_multiplicative_units()
        and not registry.auto_reduce_dimensions
        and not getattr(registry, "autoconvert_to_preferred", False)
        and not registry.force_ndarray
        and not registry.force_ndarray_like
        and registry.non_int_type is float
        and set(vars(sample)) == {"_magnitude", "_units"}
    )


_is_plain_units = ByUnits(_plain_units)


def _is_plain(quantity: pint.Quantity) -> bool:
    """A number (an int or a float, as every quantity kb makes holds) in plain units of kb's registry."""
    return (
        type(quantity._magnitude) in (int, float)
        and quantity._REGISTRY is unit_registry()
        and _is_plain_units(quantity._units)
    )


def _made(like: pint.Quantity, magnitude: int | float, units: Any) -> pint.Quantity:
    """like.__class__(magnitude, units) for a plain number and a units container: the same object pint's
    constructor makes (its checks are for strings, arrays and other quantities, none of which comes here)."""
    made = object.__new__(like.__class__)
    made._magnitude = magnitude
    made._units = units
    return made


def _result_units(op: str, left: Any, right: Any) -> Any:
    """The units of a product or quotient, as pint's units container computes them, once per pair."""
    key = (op, left, right)
    units = _RESULT_UNITS.get(key)
    if units is None:
        if len(_RESULT_UNITS) >= _MAX_KEPT:
            _RESULT_UNITS.clear()
        units = _RESULT_UNITS[key] = left * right if op == "*" else left / right
    return units


def combine(op: str, left: pint.Quantity, right: pint.Quantity) -> pint.Quantity:
    """left op right, for op one of + - * /: what pint's operator gives, raising what it raises."""
    if type(left) is type(right) and _is_plain(left) and _is_plain(right):
        a, b = left._magnitude, right._magnitude
        if op == "*":
            return _made(left, a * b, _result_units(op, left._units, right._units))
        if op == "/":  # pint divides an int as a float (its non_int_type): int / int is never a floor
            return _made(left, float(a) / float(b), _result_units(op, left._units, right._units))
        if left._units == right._units:  # + or - in different units converts the right one: pint does that
            return _made(left, a + b if op == "+" else a - b, left._units)
    return _OPERATORS[op](left, right)


def converted(quantity: pint.Quantity, unit: pint.Unit) -> pint.Quantity:
    """quantity.to(unit): the quantity itself when it is in that unit already (pint multiplies by a factor
    of 1, which changes no int or float), else its magnitude times pint's factor for the pair, asked of pint
    once. Raises what .to raises (a dimension mismatch, an OverflowError for a factor past a float)."""
    target = unit._units
    if not _is_plain(quantity):
        return quantity.to(unit)
    if quantity._units == target:
        return quantity
    key = (quantity._units, target)
    factor = _EXACT_FACTORS.get(key)
    if factor is None:
        one = _made(quantity, 1, quantity._units)  # 1 * factor is the factor, in the type pint keeps it (int or float)
        if not _is_plain(_made(quantity, 1, target)):
            return quantity.to(unit)
        factor = one.to(unit)._magnitude
        if len(_EXACT_FACTORS) >= _MAX_KEPT:
            _EXACT_FACTORS.clear()
        _EXACT_FACTORS[key] = factor
    return _made(quantity, quantity._magnitude * factor, target)
