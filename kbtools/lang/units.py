"""Units: one pint registry built from the project's own definitions (units.txt),
and the parsing of quantity values written in records.

A quantity is written "VALUE UNIT" ("4.8 TB/s"), as a bare number (the field's
canonical unit), or in long form {value, basis, source, note, vendor_claim}.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pint

from kbtools.diagnostics import KbError

DEFINITIONS = Path(__file__).with_name("units.txt")
# The unit is what runs to its last non-space: a lazy `(.*?)\s*$` retried the trailing `\s*` at each
# character, quadratic in a long run of spaces inside the value.
NUMBER = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*((?:.*\S)?)\s*$")
MAX_MAGNITUDE = 1e30  # beyond any figure this domain has; keeps arithmetic far from overflow
# The longest number text kb reads: far more digits than any figure carries, few enough that reading it is
# cheap to convert (int() of thousands of digits is slow, and past 4,300 Python refuses it).
MAX_NUMBER_TEXT = 100


@lru_cache(maxsize=1)
def unit_registry() -> pint.UnitRegistry:
    ureg: pint.UnitRegistry = pint.UnitRegistry(
        str(DEFINITIONS), autoconvert_offset_to_baseunit=False, cache_folder=None
    )
    ureg.formatter.default_format = "~P"
    return ureg


class QuantityError(KbError, ValueError):
    """A value that is not a quantity of the expected kind; `code` says which check failed."""


def number_problem(text: str | None, number: Any = None) -> str | None:
    """Why a number read from a record is out of range (KB403), or None. `text` is the number as written,
    checked for length before anything converts it; `number` its value. Safe for an int of any size: it never
    converts one to a float (OverflowError) or to a string (ValueError past 4,300 digits)."""
    if text is not None and len(text.strip()) > MAX_NUMBER_TEXT:
        digits = sum(c.isdigit() for c in text)
        return f"a number of {digits:,} digits (kb reads numbers of at most {MAX_NUMBER_TEXT} characters)"
    if isinstance(number, float) and not math.isfinite(number):
        return "not a finite number"
    if isinstance(number, (int, float)) and abs(number) > MAX_MAGNITUDE:
        return f"|value| must be at most {MAX_MAGNITUDE:g}"
    return None


def shorten(text: str, keep: int = 24) -> str:
    """Text as a message quotes it: a long one cut, so a diagnostic never echoes thousands of digits."""
    text = text.strip()
    return repr(text if len(text) <= keep + 16 else f"{text[:keep]}…")


@dataclass(frozen=True)
class Written:
    """A quantity as a record writes it, with the provenance the long form may add."""

    quantity: pint.Quantity
    basis: str | None = None
    source: str | None = None
    note: str | None = None
    vendor_claim: bool = False
    rank: str | None = None  # preferred | normal | deprecated, for one of several competing values
    condition: str | None = (
        None  # when this one of several values holds (the engine, the precision): a choice, not a dispute
    )
    low: pint.Quantity | None = None  # a sourced band around the value: its low and high end
    high: pint.Quantity | None = None


MAX_UNIT_TEXT = 100
MAX_UNIT_POWER = 6
_UNIT_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-zµ][A-Za-z0-9µ_]*)|(?P<one>1)|(?P<op>\*\*|[*/^])|(?P<int>[-+]?\d+))")


def _unit_terms(text: str) -> list[tuple[str, int]]:
    """'GB/s^2' -> [('GB', 1), ('s', -2)]: kb's own small grammar of units, so no unit text reaches an
    expression parser. A unit is names joined by '*', '/' or spaces (read left to right, as in GB/s/token),
    each with an optional small integer power (^2, **-1). Anything else -- parentheses, nested powers,
    numbers -- is KB401 before any work is done."""
    terms: list[tuple[str, int]] = []
    sign, expect_term, pos = 1, True, 0
    while pos < len(text):
        match = _UNIT_TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            if text[pos:].strip() == "":
                break
            raise QuantityError(
                "KB401",
                f"'{text}' is not a unit: unexpected '{text[pos : pos + 10].strip()}' "
                "(write units like GB/s, B/token, FLOP/s, s^-1)",
            )
        pos = match.end()
        if match.group("name") or match.group("one"):
            if not expect_term:
                sign = 1  # a space between names multiplies: 'kW h'
            terms.append((match.group("name") or "1", sign))
            expect_term = False
        elif match.group("op") in ("*", "/"):
            if expect_term:
                raise QuantityError("KB401", f"'{text}' is not a unit: '{match.group('op')}' needs a unit before it")
            sign, expect_term = (1 if match.group("op") == "*" else -1), True
        elif match.group("op") in ("^", "**"):
            power = _UNIT_TOKEN.match(text, pos)
            if expect_term or power is None or power.group("int") is None and power.group("one") is None:
                raise QuantityError("KB401", f"'{text}' is not a unit: a power is a whole number, like s^2 or s^-1")
            pos = power.end()
            exponent = int(power.group("int") or power.group("one"))
            if abs(exponent) > MAX_UNIT_POWER or exponent == 0:
                raise QuantityError(
                    "KB401", f"'{text}' is not a unit: powers go from -{MAX_UNIT_POWER} to {MAX_UNIT_POWER}, not 0"
                )
            name, power_sign = terms[-1]
            terms[-1] = (name, power_sign * exponent)
        else:
            raise QuantityError("KB401", f"'{text}' is not a unit: a number cannot stand here")
    if expect_term and terms:
        raise QuantityError("KB401", f"'{text}' is not a unit: it ends with an operator")
    return terms


@lru_cache(maxsize=512)
def parse_unit(text: str) -> pint.Unit:
    """A unit expression like 'GB/s'; QuantityError KB401 if any part is unknown or malformed."""
    ureg = unit_registry()
    if not text.strip():
        return ureg.dimensionless
    if len(text) > MAX_UNIT_TEXT:
        raise QuantityError("KB401", f"a unit is at most {MAX_UNIT_TEXT} characters long")
    unit = ureg.dimensionless
    for name, power in _unit_terms(text):
        if name == "1":
            continue
        try:
            known = name in ureg
        except (AttributeError, ValueError):  # pint refuses some names outright
            known = False
        if not known:
            raise QuantityError("KB401", f"unknown unit '{name}'" + (f" in '{text}'" if name != text.strip() else ""))
        try:
            unit = unit * ureg.Unit(name) ** power
        except Exception:  # a name pint knows but cannot use as a unit (a constant's odd definition)
            raise QuantityError("KB401", f"'{name}' is not a unit") from None
    return unit


_FACTORS: dict[tuple[Any, Any], float | None] = {}  # (from units, to units) -> factor; None: an offset unit


def magnitude_in(quantity: pint.Quantity, unit: str | pint.Unit) -> float:
    """The quantity's magnitude in `unit` (a unit text or a pint Unit), as a float. A site or an export
    converts the same few pairs of units hundreds of thousands of times, and pint parses a unit text
    afresh on every `.to`; pint's own conversion of a multiplicative unit is the magnitude times one
    factor per pair, so the factor is asked of pint once and the product is the same float `.to` gives.
    An offset unit (degC) goes through pint each time. Raises what `.to` raises (a dimension mismatch,
    an unknown unit)."""
    target = parse_unit(unit) if isinstance(unit, str) else unit
    key = (quantity._units, target._units)
    if key not in _FACTORS:
        one = quantity._REGISTRY.Quantity(1.0, quantity._units)
        offset = float((one * 0).to(target).magnitude)
        _FACTORS[key] = float(one.to(target).magnitude) if offset == 0 else None
    factor = _FACTORS[key]
    if factor is None:
        return float(quantity.to(target).magnitude)
    return float(quantity.magnitude * factor)


def parse_quantity_text(value: Any, default_unit: str | None) -> pint.Quantity:
    """'4.8 TB/s' or a bare number -> Quantity. default_unit is the canonical unit ('*': none)."""
    ureg = unit_registry()
    if isinstance(value, bool):
        raise QuantityError("KB400", f"{str(value).lower()} is not a quantity")
    if isinstance(value, (int, float)):
        problem = number_problem(None, value)
        if problem:  # before any message prints it: str() of a huge int raises
            raise QuantityError(
                "KB403", f"{'a number' if isinstance(value, int) else repr(value)} is out of range: {problem}"
            )
        if default_unit in (None, "*"):
            raise QuantityError("KB400", f"{value} needs a unit: write it as 'VALUE UNIT'")
        magnitude, unit = value, parse_unit(default_unit)
    elif isinstance(value, str):
        match = NUMBER.match(value)
        if not match:
            raise QuantityError("KB400", f"{shorten(value)} is not a quantity: write 'VALUE UNIT', e.g. '4.8 TB/s'")
        number, unit_text = match.groups()
        if "," in unit_text[:1] or re.match(r"^,\d", unit_text):
            raise QuantityError(
                "KB400", f"{shorten(value)}: write numbers without thousands separators (70272, not 70,272)"
            )
        problem = number_problem(number)  # the text first: converting thousands of digits is the danger
        if problem:
            raise QuantityError("KB403", f"{shorten(value)} is out of range: {problem}")
        magnitude = float(number) if any(c in number for c in ".eE") else int(number)
        if unit_text:
            unit = parse_unit(unit_text)
        elif default_unit in (None, "*"):
            raise QuantityError("KB400", f"{shorten(value)} needs a unit")
        else:
            unit = parse_unit(default_unit)
        problem = number_problem(None, magnitude)
        if problem:
            raise QuantityError("KB403", f"{shorten(value)} is out of range: {problem}")
    else:
        raise QuantityError("KB400", f"a {type(value).__name__} is not a quantity")
    return ureg.Quantity(magnitude, unit)


def parse_written(value: Any, canonical: str | None) -> Written:
    """A field's value (short or long form) -> Written; checks the dimension against `canonical`."""
    if isinstance(value, dict):
        if (
            canonical is None
            and isinstance(value.get("value"), (int, float))
            and not isinstance(value.get("value"), bool)
        ):
            canonical = ""  # a bare number where any unit may stand (a cost's input) is a plain number
        quantity = parse_quantity_text(value.get("value"), canonical)
        ends = [
            parse_quantity_text(value[end], canonical) if value.get(end) is not None else None
            for end in ("low", "high")
        ]
        written = Written(
            quantity,
            value.get("basis"),
            value.get("source"),
            value.get("note"),
            bool(value.get("vendor_claim", False)),
            value.get("rank"),
            value.get("condition") if isinstance(value.get("condition"), str) else None,
            *ends,
        )
    else:
        written = Written(parse_quantity_text(value, canonical))
    for figure in (written.quantity, written.low, written.high):
        if figure is not None and canonical not in (None, "*"):
            check_dimension(figure, canonical)
    if written.low is not None or written.high is not None:
        _check_band(written)
    return written


def _check_band(written: Written) -> None:
    """A band has both ends, in the value's dimension, low <= value <= high."""
    low, high, value = written.low, written.high, written.quantity
    if low is None or high is None:
        raise QuantityError("KB404", "a band needs both its low and its high end")
    for end in (low, high):
        if not end.is_compatible_with(value):
            raise QuantityError(
                "KB404",
                f"the band's end {format_quantity(end)} is {describe_dimension(end.dimensionality)}, "
                f"the value {describe_dimension(value.dimensionality)}",
            )
    if not low <= value <= high:
        raise QuantityError(
            "KB404",
            f"the value {format_quantity(value)} is outside its band {format_quantity(low)} to {format_quantity(high)}",
        )


def check_dimension(quantity: pint.Quantity, canonical: str) -> None:
    expected = parse_unit(canonical)
    if not quantity.is_compatible_with(expected):
        raise QuantityError(
            "KB402",
            f"{format_quantity(quantity)} is {describe_dimension(quantity.dimensionality)}, "
            f"expected {describe_dimension(expected.dimensionality)} (like {canonical})",
        )


# the compound dimensions users name: a joule is energy to them, not "power time" (kb's base dimensions are
# power and time, so energy is their product)
NAMED_DIMENSIONS: tuple[tuple[str, dict[str, int]], ...] = (("energy", {"[power]": 1, "[time]": 1}),)


def describe_dimension(dimensionality) -> str:
    if not dimensionality:
        return "a plain number"
    powers = {name: float(power) for name, power in dimensionality.items()}
    named: list[tuple[str, float]] = []
    for word, factors in NAMED_DIMENSIONS:
        ratios = {powers.get(base, 0.0) / power for base, power in factors.items()}
        times = ratios.pop() if len(ratios) == 1 else 0.0  # J/s is power, not energy per time
        if times and float(times).is_integer():
            for base, power in factors.items():
                powers[base] -= power * times
            named.append((word, times))
    terms = named + [(name.strip("[]"), power) for name, power in powers.items() if power]
    parts = []
    for label, power in sorted(terms, key=lambda item: -item[1]):
        parts.append(
            label
            if power == 1
            else f"{label}^{power:g}"
            if power > 0
            else f"per {label}"
            if power == -1
            else f"per {label}^{-power:g}"
        )
    return " ".join(parts)


def format_number(value: float, significant: int = 4) -> str:
    """Figures as people write them: exact integers in full with separators, else `significant` digits."""
    if value == 0:
        return "0"
    if float(value).is_integer() and abs(value) < 1e12:
        return f"{int(value):,}"
    if 1e-3 <= abs(value) < 1e12:
        digits = max(0, significant - 1 - int(math.floor(math.log10(abs(value)))))
        text = f"{value:,.{digits}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{value:.{significant}g}"


_SHOWN: dict[tuple[Any, ...], str] = {}  # (magnitude, unit, unit shown in, digits) -> text: a site shows the same
# figures on many pages, and pint's conversion and formatting are most of what showing one costs
_SHOWN_MAX = 200_000


def format_quantity(quantity: pint.Quantity, unit: str | None = None, significant: int = 4) -> str:
    magnitude = quantity.magnitude
    key = (type(magnitude), magnitude, quantity._units, unit, significant)
    try:
        return _SHOWN[key]
    except KeyError:
        pass
    except TypeError:  # a magnitude that cannot be a key: shown without the memo
        return _format_quantity(quantity, unit, significant)
    if len(_SHOWN) >= _SHOWN_MAX:
        _SHOWN.clear()
    text = _SHOWN[key] = _format_quantity(quantity, unit, significant)
    return text


def _format_quantity(quantity: pint.Quantity, unit: str | None, significant: int) -> str:
    if unit:
        quantity = quantity.to(parse_unit(unit))
        unit_text = "" if unit.strip() in ("1", "dimensionless") else unit
    else:
        unit_text = f"{quantity.units:~P}"
    number = format_number(float(quantity.magnitude), significant)
    return f"{number} {unit_text}".strip()


def number_or_text(text: str) -> Any:
    """A setting as a command line gives it (kb plan KEY=VALUE, kb new --set): a whole or real number, else the
    text itself ('8 GB', which the record's own reading of a figure then checks)."""
    try:
        return int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError:
        return text
