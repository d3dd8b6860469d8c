"""Helpers the formula-function tests share: quantities from text, the evaluators over a table of names,
and what `kb explain` prints."""

from __future__ import annotations

import math

from kbtools.lang.formula import evaluate, parse_formula
from kbtools.lang.interval import evaluate_range
from kbtools.lang.units import parse_quantity_text


def q(text: str):
    """A quantity from its text ('3 ms'), or a plain number ('0.25')."""
    return parse_quantity_text(text, None if " " in text else "")


def evaluated(formula: str, names: dict) -> float:
    """The formula's plain-number value, its names read from `names`."""
    result = evaluate(parse_formula(formula), lambda parts: names[parts[0]])
    assert result.dimensionless, result
    return float(result.magnitude)


def ranged_over(formula: str, ranges: dict) -> tuple[float, float]:
    """The formula's range, its names read from `ranges` (Intervals)."""
    found = evaluate_range(parse_formula(formula), lambda parts: ranges[parts[0]])
    return float(found.low.magnitude), float(found.high.magnitude)


def line_of(path, text) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def figure(text: str) -> float:
    """The number kb printed ('-2.303', '1,000')."""
    return float(text.replace(",", ""))


def explained(kb, target: str) -> str:
    result = kb.run("explain", target)
    assert result.exit_code == 0, result.err
    return result.out


def close(shown: float, by_hand: float) -> bool:
    """kb shows four significant digits."""
    return math.isclose(shown, by_hand, rel_tol=1e-3)
