"""The ranges a quantity field's schema gives: x-kb-plausible (where the values of real hardware fall: a value
outside is a warning, KB540) and x-kb-range (the values it can take at all: a figure outside is impossible, KB405).
What is wrong with one is KB210 at its schema (registry/annotations.py), and then it checks nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kbtools.lang.units import (
    QuantityError,
    describe_dimension,
    format_number,
    format_quantity,
    magnitude_in,
    parse_quantity_text,
    parse_unit,
)
from kbtools.registry.rules import is_plain, json_kind


@dataclass(frozen=True)
class PhysicalRange:
    """x-kb-range on a quantity field: the values it can take at all. A figure outside them is impossible (a
    negative count of GPUs, a hit rate above 1, half a GPU): an error wherever it stands, where a figure outside
    x-kb-plausible's range of real hardware is only unusual. Ends are magnitudes in the field's canonical unit."""

    unit: str  # the field's canonical unit; '*' (any unit) is bounded by 0 alone, which is 0 in every unit
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # `above`: the low end itself is impossible too
    high_open: bool = False  # `below`
    whole: bool = False  # a count: a whole number of the canonical unit
    reason: str = ""

    def allows(self, quantity: Any) -> bool:
        """Whether a figure of the field (a pint Quantity) can be; one of another kind is not judged here (its
        unit is the finding, KB402)."""
        try:
            magnitude = float(quantity.magnitude) if self.unit == "*" else magnitude_in(quantity, self.unit)
        except Exception:  # pint's DimensionalityError: not a figure of this field's kind
            return True
        if self.low is not None and (magnitude <= self.low if self.low_open else magnitude < self.low):
            return False
        if self.high is not None and (magnitude >= self.high if self.high_open else magnitude > self.high):
            return False
        # a count converted from another unit (800 % of one) may carry a float's last-digit error
        return not self.whole or abs(magnitude - round(magnitude)) <= 1e-9 * max(1.0, abs(magnitude))

    def words(self) -> str:
        """What the field can be, as a message says it: 'a whole number, at least 1', 'from 0 to 1'."""
        low = self._end(self.low, "above" if self.low_open else "at least")
        high = self._end(self.high, "below" if self.high_open else "at most")
        if low and high and not (self.low_open or self.high_open):
            span = f"from {self._shown(self.low)} to {self._shown(self.high)}"
        else:
            span = " and ".join(part for part in (low, high) if part)
        return ", ".join(part for part in ("a whole number" if self.whole else "", span) if part)

    def _end(self, magnitude: float | None, relation: str) -> str:
        return f"{relation} {self._shown(magnitude)}" if magnitude is not None else ""

    def _shown(self, magnitude: float | None) -> str:
        number = format_number(magnitude or 0.0)
        return number if magnitude == 0 or self.unit in ("1", "*") else f"{number} {self.unit}"


PLAUSIBLE_KEYS = ("min", "max", "reason")


def plausible_problems(spec: Any, unit: Any) -> list[tuple[str, str]]:
    """What is wrong with an x-kb-plausible range on a field of canonical `unit`, as (the text to find it by,
    problem): each bound a finite quantity of the field's kind, and min at most max. Empty when it is sound."""
    if not isinstance(spec, dict):
        return [("", f"is an object {{min, max, reason}}, not {json_kind(spec)}")]
    problems = [
        (f'"{key}"', f"unknown key '{key}' (known: {', '.join(PLAUSIBLE_KEYS)})")
        for key in spec
        if key not in PLAUSIBLE_KEYS
    ]
    if "reason" in spec and not isinstance(spec["reason"], str):
        problems.append(('"reason"', f"reason is a sentence, not {json_kind(spec['reason'])}"))
    if "min" not in spec and "max" not in spec:
        problems.append(("", "gives neither min nor max"))
    try:
        expected = parse_unit(unit) if isinstance(unit, str) and unit != "*" else None
    except QuantityError:
        expected = None  # the field's own unit is wrong: a finding of its own, not the range's
    bounds = {}
    for key in ("min", "max"):
        if key not in spec:
            continue
        bound = spec[key]
        shown = json.dumps(bound) if is_plain(bound) else ""
        if not isinstance(bound, str):
            said = f"{shown} is {json_kind(bound)}" if shown else f"is {json_kind(bound)}"
            problems.append((shown, f"{key} {said}: write a quantity with its unit as a string ('2 TB')"))
            continue
        quantity, problem = _quantity_bound(key, bound, unit, expected)
        if problem:
            problems.append((shown, problem))
            continue
        bounds[key] = (shown, quantity)
    if len(bounds) == 2:
        (where, low), (_, high) = bounds["min"], bounds["max"]
        if not low.is_compatible_with(high):
            problems.append((where, "min and max are quantities of different kinds"))
        elif low > high:
            problems.append(
                (where, f"min {format_quantity(low)} is above max {format_quantity(high)}: the range is empty")
            )
    return problems


def _quantity_bound(key: str, bound: str, unit: Any, expected: Any) -> tuple[Any, str | None]:
    """A range's bound written as a quantity ('2 TB'): (its quantity, None), or (None, what is wrong with it): it
    is a finite quantity, of the field's kind when the field's unit is known (`expected`)."""
    try:
        quantity = parse_quantity_text(bound, None)
    except QuantityError as exc:  # its message quotes the bound, or names the unit it does not know
        return None, f"{key} {exc.message}" if exc.message.startswith("'") else f"{key} '{bound}': {exc.message}"
    if expected is not None and not quantity.is_compatible_with(expected):
        return None, (
            f"{key} '{bound}' is {describe_dimension(quantity.dimensionality)}, but the field is "
            f"{describe_dimension(expected.dimensionality)} (like {unit})"
        )
    return quantity, None


# x-kb-range's ends: key -> (which end, whether the bound itself is outside)
RANGE_ENDS = {"min": ("low", False), "above": ("low", True), "max": ("high", False), "below": ("high", True)}
RANGE_KEYS = (*RANGE_ENDS, "whole", "reason")


def physical_range(spec: Any, unit: Any) -> tuple[PhysicalRange | None, list[tuple[str, str]]]:
    """An x-kb-range on a field of canonical `unit`, read: (the range, []) when it is sound, else (None, [(the
    text to find the problem by, the problem)]). A bound is a number in the field's canonical unit or a
    quantity of its kind ('0 GB/s'); a field of any unit ('*') takes the number 0 alone."""
    if not isinstance(spec, dict):
        return None, [("", f"is an object {{{', '.join(RANGE_KEYS)}}}, not {json_kind(spec)}")]
    problems = [
        (f'"{key}"', f"unknown key '{key}' (known: {', '.join(RANGE_KEYS)})") for key in spec if key not in RANGE_KEYS
    ]
    if not isinstance(unit, str):
        return None, [*problems, ("", "bounds a quantity field: it stands beside the field's x-kb-quantity")]
    any_unit = unit == "*"
    try:
        expected = None if any_unit else parse_unit(unit)
    except QuantityError:
        return None, problems  # the field's own unit is wrong: every value of it is reported (KB401)
    for inclusive, exclusive in (("min", "above"), ("max", "below")):
        if inclusive in spec and exclusive in spec:
            problems.append(
                (
                    f'"{exclusive}"',
                    f"gives {inclusive} and {exclusive}: an end is either in the range ({inclusive}) or not ({exclusive})",
                )
            )
    whole = spec.get("whole", False)
    if whole is not True and "whole" in spec:
        problems.append(('"whole"', f"whole is true (a whole number) or left out, not {json.dumps(whole)}"))
    elif whole and any_unit:
        problems.append(('"whole"', "whole counts in the field's unit, and a field of any unit ('*') has none"))
    if "reason" in spec and not isinstance(spec["reason"], str):
        problems.append(('"reason"', f"reason is a sentence, not {json_kind(spec['reason'])}"))
    if not any(key in spec for key in (*RANGE_ENDS, "whole")):
        problems.append(("", "gives no end (min, above, max, below) and not whole: it rules nothing out"))
    ends: dict[str, tuple[str, float, bool]] = {}
    for key, (end, outside) in RANGE_ENDS.items():
        if key not in spec:
            continue
        bound = spec[key]
        shown = json.dumps(bound) if is_plain(bound) else ""
        if any_unit:
            if bound != 0 or isinstance(bound, (bool, str)):
                problems.append(
                    (shown, f"{key} is 0 on a field of any unit ('*'), the one bound that is the same in every unit")
                )
            else:
                ends[end] = (shown, 0.0, outside)
            continue
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            try:
                quantity = parse_quantity_text(bound, unit)  # a number is in the field's canonical unit
            except QuantityError as exc:
                problems.append((shown, f"{key} {exc.message}"))
                continue
        elif isinstance(bound, str):
            quantity, problem = _quantity_bound(key, bound, unit, expected)
            if problem:
                problems.append((shown, problem))
                continue
        else:
            problems.append(
                (
                    shown,
                    f"{key} is a number in the field's unit ({unit}) or a quantity ('0 {unit}'), not {json_kind(bound)}",
                )
            )
            continue
        ends[end] = (shown, magnitude_in(quantity, unit), outside)
    if "low" in ends and "high" in ends:
        (where, low, low_open), (_, high, high_open) = ends["low"], ends["high"]
        if low > high or (low == high and (low_open or high_open)):
            problems.append((where, "its low end is not below its high end: the range is empty"))
    if problems:
        return None, problems
    low_end, high_end = ends.get("low"), ends.get("high")
    return PhysicalRange(
        unit=unit,
        low=low_end[1] if low_end else None,
        high=high_end[1] if high_end else None,
        low_open=bool(low_end and low_end[2]),
        high_open=bool(high_end and high_end[2]),
        whole=whole is True,
        reason=spec.get("reason", ""),
    ), []
