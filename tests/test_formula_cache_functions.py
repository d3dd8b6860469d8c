"""zipf_top(n, c, s) and zipf_lru(n, c, s) in the formula language: the hit rate of a cache of c items among n
whose popularity follows a Zipf law of exponent s, holding the c most popular or run least-recently-used (Che's
approximation). Every figure is checked against a sum of every term, computed here with nothing of kb's;
past 100,000 items against closed forms of the harmonic numbers. A dimensioned argument is refused (KB503), as
an n below 1 or an s outside 0 to 10 is (KB507), at the formula's line; ranges go through both; the browser's
calculator gives the same figures."""

from __future__ import annotations

import math
import re
import time

import pytest
from formula_support import close, evaluated, explained, figure, line_of, q, ranged_over

from kbtools.lang.caching import zipf_lru, zipf_top
from kbtools.lang.formula import FormulaError
from kbtools.lang.interval import Interval

# ---------------------------------------------------------------- a sum of every term, by hand


def weights(n: int, s: float) -> list[float]:
    """p_i for i = 1..n: i^-s over their sum."""
    raw = [i**-s for i in range(1, n + 1)]
    total = math.fsum(raw)
    return [w / total for w in raw]


def top_by_hand(n: int, c: float, s: float) -> float:
    """The c most popular items' share of requests; a fractional c holds that fraction of the next item."""
    if c <= 0:
        return 0.0
    if c >= n:
        return 1.0
    p = weights(n, s)
    held = math.floor(c)
    return math.fsum(p[:held]) + (c - held) * p[held]


def lru_by_hand(n: int, c: float, s: float, steps: int = 40) -> float:
    """Che's approximation by bisection on ln T: sum(1 - exp(-p_i T)) = c, then sum(p_i (1 - exp(-p_i T))).
    The count is at most T (sum p_i = 1) and at least n (1 - exp(-p_n T)): T lies between c and
    -ln(1 - c/n) / p_n."""
    if c <= 0:
        return 0.0
    if c >= n:
        return 1.0
    p = weights(n, s)
    low, high = math.log(c), math.log(-math.log1p(-c / n) / p[-1])
    for _ in range(steps):
        middle = (low + high) / 2
        t = math.exp(middle)
        if sum(-math.expm1(-q * t) for q in p) < c:
            low = middle
        else:
            high = middle
    t = math.exp((low + high) / 2)
    return math.fsum(q * -math.expm1(-q * t) for q in p)


@pytest.mark.parametrize(
    "n, c, s",
    [
        (1, 0.5, 1.0),
        (2, 1, 0.0),
        (7, 3.25, 0.5),
        (1000, 10, 0.8),
        (1000, 999.5, 1.0),
        (10_000, 100, 1.0),  # every term summed one by one
        (10_001, 2500, 1.2),  # one term past them: Euler-Maclaurin takes the tail from here on
        (12_345, 37.5, 0.3),
        (50_000, 45_000, 2.0),
        (100_000, 1000, 0.8),
        (100_000, 30_000.5, 1.0),
    ],
)
def test_both_agree_with_a_sum_of_every_term(n, c, s):
    assert abs(zipf_top(n, c, s) - top_by_hand(n, c, s)) < 1e-6
    assert abs(zipf_lru(n, c, s) - lru_by_hand(n, c, s, steps=40 if n < 50_000 else 32)) < 1e-6


@pytest.mark.parametrize("n, c, s", [(5000, 12.5, 0.6), (20_000, 400, 1.0), (30_000, 9000, 3.0)])
def test_zipf_top_agrees_to_1e_12(n, c, s):
    assert math.isclose(zipf_top(n, c, s), top_by_hand(n, c, s), rel_tol=1e-12)


def test_the_edges():
    for function in (zipf_top, zipf_lru):
        assert function(1000, 0, 0.8) == 0.0 and function(1000, -5, 0.8) == 0.0
        assert function(1000, 1000, 0.8) == 1.0 and function(1000, 5000, 0.8) == 1.0
        assert function(1, 1, 3) == 1.0
        # s = 0: every item alike, so the cache's share of the items is its share of the requests
        assert function(1000, 250, 0) == 0.25 and function(1e9, 1e6, 0) == 1e-3
        assert function(1000.9, 250, 0) == 0.25  # n counts whole items
    # s = 1: H(4, 1) = 1 + 1/2 + 1/3 + 1/4
    assert math.isclose(zipf_top(4, 2, 1), (1 + 1 / 2) / (1 + 1 / 2 + 1 / 3 + 1 / 4), rel_tol=1e-15)
    assert math.isclose(zipf_top(4, 2.5, 1), (1 + 1 / 2 + 0.5 / 3) / (1 + 1 / 2 + 1 / 3 + 1 / 4), rel_tol=1e-15)
    # Che's approximation for two items at s = 1 (p = 2/3, 1/3) and a cache of one: with y = exp(-T/3),
    # (1 - y^2) + (1 - y) = 1, so y = (sqrt(5) - 1) / 2, and the hit rate 2/3 (1 - y^2) + 1/3 (1 - y) = (1 + y) / 3
    assert math.isclose(zipf_lru(2, 1, 1), (1 + (math.sqrt(5) - 1) / 2) / 3, rel_tol=1e-12)
    # one item in a cache of a fraction of one: it is there that fraction of the time
    assert math.isclose(zipf_lru(1, 0.3, 2), 0.3, rel_tol=1e-12) and zipf_top(1, 0.3, 2) == 0.3


def test_s_near_1_is_continuous_with_s_at_1():
    """The integral of i^-s is ln(n/K) at s = 1 and (n^(1-s) - K^(1-s)) / (1 - s) elsewhere: no jump between.
    Either side of 1 the rate moves with s as a smooth function does: by its slope, the same on both sides."""
    for function in (zipf_top, zipf_lru):
        at_one = function(1e9, 1e6, 1.0)
        below, above = function(1e9, 1e6, 1 - 1e-6), function(1e9, 1e6, 1 + 1e-6)
        assert below < at_one < above
        assert abs((above - at_one) - (at_one - below)) < 1e-9, (function, below, at_one, above)
        for s in (1 - 1e-9, 1 + 1e-9):
            assert abs(function(1e9, 1e6, s) - at_one) < 1e-8, (function, s)


def test_past_the_terms_summed_one_by_one_the_tail_is_right():
    """H(n, 2) = pi^2/6 - 1/n + 1/(2 n^2) - ..., and H(n, 1) = ln n + gamma + 1/(2n) - ..., where gamma is
    found here from a sum of a million terms: zipf_top of n past 10,000 is their ratio."""
    gamma = math.fsum(1 / i for i in range(1, 1_000_001)) - math.log(1e6) - 1 / 2e6 + 1 / 12e12

    def h2(n: float) -> float:
        return math.pi**2 / 6 - 1 / n + 1 / (2 * n * n)

    def h1(n: float) -> float:
        return math.log(n) + gamma + 1 / (2 * n) - 1 / (12 * n * n)

    assert math.isclose(zipf_top(1e9, 1e6, 2), h2(1e6) / h2(1e9), rel_tol=1e-12)
    assert math.isclose(zipf_top(1e9, 1e6, 1), h1(1e6) / h1(1e9), rel_tol=1e-12)
    assert math.isclose(zipf_top(1e9, 20_000, 1), h1(2e4) / h1(1e9), rel_tol=1e-12)


def test_fast_for_a_billion_items():
    for s in (0.6, 1.0, 1.4):
        zipf_lru.cache_clear()
        start = time.perf_counter()
        lru, top = zipf_lru(1e9, 1e6 + s, s), zipf_top(1e9, 1e6 + s, s)
        assert time.perf_counter() - start < 1.0
        assert 0 < lru < top < 1  # no cache of c items beats holding the c most popular


def test_monotone():
    sizes = [1, 3, 100, 9_999, 10_001, 1e5, 1e7, 1e9]
    caches = [0.5, 1, 2.5, 50, 5_000, 20_000, 1e6]
    skews = [0, 0.3, 0.7, 1, 1.3, 3, 10]
    for function in (zipf_top, zipf_lru):
        for s in skews[1::2]:
            for c in caches[1::2]:  # falls as n grows
                rates = [function(n, c, s) for n in sizes]
                assert all(a >= b for a, b in zip(rates, rates[1:], strict=False)), (function, c, s, rates)
            for n in sizes[2::2]:  # rises with c
                rates = [function(n, c, s) for c in [0, *caches]]
                assert all(a <= b for a, b in zip(rates, rates[1:], strict=False)), (function, n, s, rates)
        for n in sizes[2::3]:  # zipf_top rises with s; zipf_lru does too wherever it is looked at here
            for c in caches[1::3]:
                rates = [function(n, c, s) for s in skews]
                assert all(a <= b for a, b in zip(rates, rates[1:], strict=False)), (function, n, c, rates)


# ---------------------------------------------------------------- the evaluators


NAMES = {"objects": q("1000"), "slots": q("50"), "skew": q("0.8"), "size": q("1 GB"), "few": q("0.5")}


def value(formula: str) -> float:
    return evaluated(formula, NAMES)


def test_the_evaluator_gives_the_sums():
    assert math.isclose(value("zipf_top(objects, slots, skew)"), top_by_hand(1000, 50, 0.8), rel_tol=1e-12)
    assert abs(value("zipf_lru(objects, slots, skew)") - lru_by_hand(1000, 50, 0.8)) < 1e-9
    # a ratio of like units is a plain number: 50 GB over 1 GB is 50
    assert value("zipf_top(objects, '50 GB' / size, skew)") == value("zipf_top(objects, slots, skew)")
    assert value("zipf_lru(objects, '5 percent' * objects, 0)") == 0.05


@pytest.mark.parametrize(
    "formula, code, message",
    [
        ("zipf_top(objects, size, skew)", "KB503", "zipf_top() needs a plain number for c, got GB"),
        ("zipf_lru(size, slots, skew)", "KB503", "zipf_lru() needs a plain number for n, got GB"),
        ("zipf_lru(objects, slots, '1 s')", "KB503", "zipf_lru() needs a plain number for s, got s"),
        ("zipf_top(few, slots, skew)", "KB507", "zipf_top() needs n of at least 1: few is 0.5"),
        ("zipf_lru(0, slots, skew)", "KB507", "zipf_lru() needs n of at least 1, not 0"),
        ("zipf_lru(objects, slots, -skew)", "KB507", "zipf_lru() needs s between 0 and 10: -skew is -0.8"),
        ("zipf_top(objects, slots, 11)", "KB507", "zipf_top() needs s between 0 and 10, not 11"),
        ("zipf_top(objects, slots)", "KB501", "zipf_top() takes 3 arguments: zipf_top(n, c, s)"),
        ("zipf_lru(objects, slots, skew, 1)", "KB501", "zipf_lru() takes 3 arguments: zipf_lru(n, c, s)"),
        ("ln(1, 2)", "KB501", "ln() takes one argument"),
        ("zipf(objects, slots, skew)", "KB501", "allowed: abs, ceil, default, exp, floor, ln, max, min, param, sqrt, "),
    ],
)
def test_the_evaluator_refuses(formula, code, message):
    with pytest.raises(FormulaError) as raised:
        value(formula)
    assert raised.value.code == code and message in raised.value.message, raised.value.message
    if code == "KB501" and "allowed" in message:
        assert "zipf_lru, zipf_top, or a function" in raised.value.message


RANGES = {
    "n": Interval.of(q("500"), q("2000")),
    "c": Interval.of(q("20"), q("80")),
    "s": Interval.of(q("0.6"), q("1.2")),
    "point": Interval.of(q("0.9")),
    "low_n": Interval.of(q("0.5"), q("3")),
}


def ranged(formula: str) -> tuple[float, float]:
    return ranged_over(formula, RANGES)


def test_the_range_of_either_is_theirs_at_the_ends():
    """The least is at c's low end, n's high end and s's low end; the greatest at the other three."""
    low, high = ranged("zipf_top(n, c, s)")
    assert math.isclose(low, top_by_hand(2000, 20, 0.6), rel_tol=1e-12)
    assert math.isclose(high, top_by_hand(500, 80, 1.2), rel_tol=1e-12)
    low, high = ranged("zipf_lru(n, c, point)")
    assert abs(low - lru_by_hand(2000, 20, 0.9)) < 1e-9 and abs(high - lru_by_hand(500, 80, 0.9)) < 1e-9
    low, high = ranged("zipf_lru(n, c, s)")  # s's range taken at 9 points: its ends hold the extremes here
    assert abs(low - lru_by_hand(2000, 20, 0.6)) < 1e-9 and abs(high - lru_by_hand(500, 80, 1.2)) < 1e-9
    assert ranged("zipf_top(n, 1 - c, s)") == (0.0, 0.0)  # a cache of less than nothing holds nothing
    with pytest.raises(FormulaError) as raised:
        ranged("zipf_lru(low_n, c, s)")
    assert (
        raised.value.code == "KB507" and raised.value.message == "zipf_lru() needs n of at least 1: low_n is 0.5 to 3"
    )


# ---------------------------------------------------------------- through what a user sees

OBJECTS, SLOTS, SKEW = 2000, 100, 0.9
SLOTS_LOW, SLOTS_HIGH = 50, 400

TIER = """
class: kv_transfer
bound_by: storage
inputs:
  prefixes: 2000
  slots: {value: 100, low: 50, high: 400, source: src-a}
  skew: 0.9
  prefix_bytes: 2 GB
  capacity: 200 GB
costs:
  best:
    label: the hit rate of a cache holding the most popular prefixes
    formula: zipf_top(prefixes, slots, skew)
    unit: '1'
  lru:
    label: the hit rate of an LRU cache, by Che's approximation
    formula: zipf_lru(prefixes, capacity / prefix_bytes, skew)
    unit: '1'
  lru_band:
    formula: zipf_lru(prefixes, slots, skew)
    unit: '1'
"""

# four conditions of three choices each: 81 combinations, past the 64 kb takes one by one, so the range is the
# interval evaluator's
SPREAD = """
class: kv_transfer
bound_by: storage
inputs:
  prefixes: {value: 2000, low: 1000, high: 4000, source: src-a}
  slots: {value: 100, low: 50, high: 400, source: src-a}
  skew: {value: 0.9, low: 0.7, high: 1.1, source: src-a}
  share: {value: 1, low: 0.5, high: 1, source: src-a}
costs:
  many:
    formula: zipf_lru(prefixes, slots * share, skew)
    unit: '1'
"""

BAD = """
class: kv_transfer
bound_by: storage
inputs:
  prefixes: 2000
  skew: 0.9
  capacity: 200 GB
  none: 0
costs:
  with_unit:
    formula: zipf_top(prefixes, capacity, skew)
    unit: '1'
  no_items:
    formula: zipf_lru(none, 10, skew)
    unit: '1'
  too_skewed:
    formula: zipf_lru(prefixes, 10, skew * 20)
    unit: '1'
  two_arguments:
    formula: zipf_top(prefixes, 10)
    unit: '1'
"""


def tier_kb(kb):
    kb.source()
    return kb.record("flops", "tier", "flop", TIER, body="[[src-a]] The best is {{ best }}.\n")


def ends(text: str, conditions: str) -> tuple[float, float, float]:
    found = re.search(rf"range: low (\S+), preferred (\S+), high (\S+), over {conditions}", text)
    assert found, text
    low, preferred, high = (figure(x) for x in found.groups())
    return low, preferred, high


def test_kb_prints_the_sums_and_their_range(kb):
    tier_kb(kb)
    result = kb.check()
    assert result.exit_code == 0 and "0 errors" in result.out, result.out
    best = explained(kb, "flops/tier.best")
    assert close(figure(best.splitlines()[0].split(" = ", 1)[1]), top_by_hand(OBJECTS, SLOTS, SKEW)), best
    assert "  = zipf_top(2,000, 100, 0.9)" in best, best  # the formula over the record's figures
    low, preferred, high = ends(best, "1 condition")
    assert close(low, top_by_hand(OBJECTS, SLOTS_LOW, SKEW)) and close(high, top_by_hand(OBJECTS, SLOTS_HIGH, SKEW))
    lru = explained(kb, "flops/tier.lru")  # 200 GB over 2 GB: a cache of 100 prefixes
    assert close(figure(lru.splitlines()[0].split(" = ", 1)[1]), lru_by_hand(OBJECTS, 100, SKEW)), lru
    low, preferred, high = ends(explained(kb, "flops/tier.lru_band"), "1 condition")
    assert close(preferred, lru_by_hand(OBJECTS, SLOTS, SKEW))
    assert close(low, lru_by_hand(OBJECTS, SLOTS_LOW, SKEW)) and close(high, lru_by_hand(OBJECTS, SLOTS_HIGH, SKEW))


def test_past_the_combinations_kb_takes_the_range_by_intervals(kb):
    tier_kb(kb)
    kb.record("flops", "spread", "flop", SPREAD, body="[[src-a]] [[tier]]\n")
    assert "0 errors" in kb.check().out
    low, preferred, high = ends(explained(kb, "flops/spread.many"), r"4 conditions \(an interval enclosure")
    assert close(preferred, lru_by_hand(2000, 100, 0.9))
    assert close(low, lru_by_hand(4000, 50 * 0.5, 0.7)) and close(high, lru_by_hand(1000, 400, 1.1))


def test_refused_at_the_formulas_line(kb):
    tier_kb(kb)
    path = kb.record("flops", "bad", "flop", BAD, body="[[src-a]] [[tier]]\n")
    result = kb.check()
    assert result.exit_code == 1

    def at(text: str) -> str:
        return f"records/flops/bad.md:{line_of(path, text)}:5: error"

    assert result.find("KB503") == [
        f"{at('zipf_top(prefixes, capacity, skew)')} KB503 costs.with_unit: "
        "zipf_top() needs a plain number for c, got GB"
    ]
    assert result.find("KB507") == [
        f"{at('zipf_lru(none, 10, skew)')} KB507 costs.no_items: zipf_lru() needs n of at least 1: none is 0",
        f"{at('skew * 20')} KB507 costs.too_skewed: zipf_lru() needs s between 0 and 10: skew * 20 is 18",
    ]
    assert result.find("KB501") == [
        f"{at('zipf_top(prefixes, 10)')} KB501 costs.two_arguments: zipf_top() takes 3 arguments: zipf_top(n, c, s)"
    ]
    assert len(result.find("error")) == 4, result.out  # the tier's own costs still compute


# ---------------------------------------------------------------- the browser's calculator

POINTS = [
    (2000, 100, 0.9),
    (1e5, 1000, 0.8),
    (1e5, 30_000.5, 1.0),
    (1e9, 1e6, 1.0),
    (1e9, 1e6, 0.6),
    (1e9, 5e7, 1.3),
    (1e12, 1e9, 2.0),
]


@pytest.mark.browser
def test_the_calculator_computes_what_kb_computes(kb):
    """calc.js carries its own copy of the numerics: its figures are kb's to 1e-9, on the page and as the
    calculator computes them, and an s past 10 shows kb's refusal instead of a figure."""
    from site_support import browser, serve

    tier_kb(kb)
    assert kb.run("build", "--no-search").exit_code == 0
    with serve(kb.root / "site/_build") as url, browser() as chromium:
        page = chromium.new_context().new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url + "flops/tier.html")
        computed = page.evaluate(
            "(points) => points.map(([n, c, s]) => [kbCaching.zipfTop(n, c, s), kbCaching.zipfLru(n, c, s)])",
            [list(p) for p in POINTS],
        )
        for (n, c, s), (top, lru) in zip(POINTS, computed, strict=True):
            assert math.isclose(top, zipf_top(n, c, s), rel_tol=1e-9), (n, c, s, top)
            assert math.isclose(lru, zipf_lru(n, c, s), rel_tol=1e-9), (n, c, s, lru)

        def shown(cost: str, cell: str = "value") -> str:
            return page.locator(f"tr[data-cost={cost}] td.calc-{cell}").inner_text().removesuffix(" 1")

        assert close(figure(shown("best")), top_by_hand(OBJECTS, SLOTS, SKEW)), shown("best")
        assert close(figure(shown("lru")), lru_by_hand(OBJECTS, 100, SKEW)), shown("lru")
        low, high = shown("lru_band", "range").split(" to ")
        assert close(figure(low), lru_by_hand(OBJECTS, SLOTS_LOW, SKEW))
        assert close(figure(high), lru_by_hand(OBJECTS, SLOTS_HIGH, SKEW))
        page.fill("input[name=in-skew]", "1.5")
        assert close(figure(shown("best")), top_by_hand(OBJECTS, SLOTS, 1.5)), shown("best")
        page.fill("input[name=in-skew]", "12")
        assert page.locator(".calc-error").inner_text() == "zipf_top() needs s between 0 and 10"
        assert errors == []
