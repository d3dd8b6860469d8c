"""ln and exp in the formula language: the natural logarithm and the exponential of a plain number (a ratio),
for closed forms like a queue's waiting-time tail or a Zipf sum. What kb prints is checked against math.log
and math.exp of the figures the records state; ln of 0 or less and exp past 1e300 are refused (KB507), as a
quantity with a dimension is (KB503), at the formula's line."""

from __future__ import annotations

import math
import re

import pytest
from formula_support import close, evaluated, explained, figure, line_of, q, ranged_over

from kbtools.lang.formula import FormulaError
from kbtools.lang.interval import Interval

# ---------------------------------------------------------------- a scratch knowledge base

# the figures the records below state, for the hand computations
LOAD, SERVICE_MS, WAIT_MS, SHARE, OBJECTS, SKEW = 0.6, 2.0, 10.0, 0.25, 1_000_000, 0.8
HIT, HIT_LOW, HIT_HIGH = 0.9, 0.8, 0.95

QUEUE = """
class: kv_transfer
bound_by: storage
inputs:
  load: 0.6
  service: 2 ms
  wait: 10 ms
  share: 25 percent
  objects: 1000000
  skew: 0.8
  hit_rate: {value: 0.9, low: 0.8, high: 0.95, source: src-a}
costs:
  tail:
    label: an M/M/1-like waiting-time tail, load × e^(−(1 − load) × wait / service)
    formula: load * exp(-(1 - load) * wait / service)
    unit: '1'
  log_miss:
    formula: ln(1 - hit_rate)
    unit: '1'
  log_share:
    formula: ln(share)
    unit: '1'
  log_ratio:
    formula: ln(wait / service)
    unit: '1'
  zipf_sum:
    label: the integral of x^-skew from 1 to objects, with the exponent a figure (n^(1-s) as exp((1-s) ln n))
    formula: (exp((1 - skew) * ln(objects)) - 1) / (1 - skew)
    unit: '1'
"""

# four conditions of three choices each: 81 combinations, past the 64 kb takes one by one, so the range is
# the interval evaluator's (kbtools/lang/interval.py)
SPREAD = """
class: kv_transfer
bound_by: storage
inputs:
  hit_rate: {value: 0.9, low: 0.8, high: 0.95, source: src-a}
  a: {value: 2, low: 1, high: 3, source: src-a}
  b: {value: 2, low: 1, high: 3, source: src-a}
  c: {value: 2, low: 1, high: 3, source: src-a}
costs:
  many:
    formula: ln(a * b * c / hit_rate)
    unit: '1'
"""

BAD = """
class: kv_transfer
bound_by: storage
inputs:
  load: 0.6
  service: 2 ms
  empty: 0
costs:
  with_unit:
    formula: ln(service)
    unit: '1'
  exp_with_unit:
    formula: exp(service)
    unit: '1'
  at_zero:
    formula: ln(empty)
    unit: '1'
  negative:
    formula: ln(load - 1)
    unit: '1'
  overflow:
    formula: exp(1000)
    unit: '1'
"""


def queue_kb(kb, queue=QUEUE):
    kb.source()
    return kb.record("flops", "queue", "flop", queue, body="[[src-a]] The tail is {{ tail }}.\n")


def first_figure(kb, target: str) -> float:
    head = explained(kb, target).splitlines()[0]
    assert head.startswith(f"{target} = "), head
    return figure(head.split(" = ", 1)[1])


def test_ln_and_exp_of_a_records_figures_are_what_math_gives(kb):
    queue_kb(kb)
    result = kb.check()
    assert result.exit_code == 0 and "0 errors" in result.out, result.out
    by_hand = {
        "tail": LOAD * math.exp(-(1 - LOAD) * WAIT_MS / SERVICE_MS),
        "log_miss": math.log(1 - HIT),
        "log_share": math.log(SHARE),  # 25 percent is the plain number 0.25
        "log_ratio": math.log(WAIT_MS / SERVICE_MS),  # ms over ms: a ratio
        "zipf_sum": (math.exp((1 - SKEW) * math.log(OBJECTS)) - 1) / (1 - SKEW),
    }
    for cost, value in by_hand.items():
        shown = first_figure(kb, f"flops/queue.{cost}")
        assert close(shown, value), (cost, shown, value)
    text = explained(kb, "flops/queue.tail")
    assert "  = 0.6 × exp(−(1 − 0.6) × 10 ms ÷ 2 ms)" in text, text  # the formula over the record's figures


def test_a_stated_figure_is_checked_against_ln_and_exp(kb):
    tail = LOAD * math.exp(-(1 - LOAD) * WAIT_MS / SERVICE_MS)
    rest = "    formula: load * exp(-(1 - load) * wait / service)\n    unit: '1'\n"
    path = queue_kb(kb, QUEUE.replace(rest, rest + f"    stated: {tail:.4g}\n"))
    result = kb.check()
    assert result.exit_code == 0 and not result.find("KB500"), result.out
    path.write_text(path.read_text().replace(f"stated: {tail:.4g}", f"stated: {2 * tail:.4g}"))
    found = kb.check().find("KB500")
    assert len(found) == 1 and found[0].startswith(f"records/flops/queue.md:{line_of(path, 'stated:')}:5: "), found
    assert "the stated figure is twice the recomputed one" in found[0], found


def test_a_range_input_gives_the_range_through_ln(kb):
    queue_kb(kb)
    text = explained(kb, "flops/queue.log_miss")
    ends = re.search(r"range: low (\S+), preferred (\S+), high (\S+), over 1 condition", text)
    assert ends, text
    # ln(1 - hit_rate) falls as the hit rate rises: its low end is at the band's high end
    low, preferred, high = (figure(x) for x in ends.groups())
    assert close(low, math.log(1 - HIT_HIGH)) and close(preferred, math.log(1 - HIT))
    assert close(high, math.log(1 - HIT_LOW))


def test_past_the_combinations_kb_takes_the_range_of_ln_by_intervals(kb):
    queue_kb(kb)
    kb.record("flops", "spread", "flop", SPREAD, body="[[src-a]] [[queue]]\n")
    assert "0 errors" in kb.check().out
    text = explained(kb, "flops/spread.many")
    ends = re.search(r"range: low (\S+), preferred (\S+), high (\S+), over 4 conditions \(an interval enclosure", text)
    assert ends, text
    low, preferred, high = (figure(x) for x in ends.groups())
    assert close(preferred, math.log(2 * 2 * 2 / HIT))
    assert close(low, math.log(1 * 1 * 1 / HIT_HIGH)) and close(high, math.log(3 * 3 * 3 / HIT_LOW))


def test_ln_and_exp_refused_at_the_formulas_line(kb):
    queue_kb(kb)
    path = kb.record("flops", "bad", "flop", BAD, body="[[src-a]] [[queue]]\n")
    result = kb.check()
    assert result.exit_code == 1

    def at(text: str) -> str:
        return f"records/flops/bad.md:{line_of(path, text)}:5: error"

    assert result.find("KB503") == [
        f"{at('formula: ln(service)')} KB503 costs.with_unit: ln() needs a plain number, got ms",
        f"{at('formula: exp(service)')} KB503 costs.exp_with_unit: exp() needs a plain number, got ms",
    ]
    assert result.find("KB507") == [
        f"{at('ln(empty)')} KB507 costs.at_zero: ln() needs a number above 0: empty is 0",
        f"{at('ln(load - 1)')} KB507 costs.negative: ln() needs a number above 0: load - 1 is {0.6 - 1:g}",
        f"{at('exp(1000)')} KB507 costs.overflow: exp() of 1,000 is too large (at most 1e+300)",
    ]
    assert len(result.find("error")) == 5, result.out  # nothing else: the queue's own costs still compute


# ---------------------------------------------------------------- the evaluators themselves


NAMES = {"r": q("0.25"), "big": q("1000"), "t": q("3 ms"), "zero": q("0 percent")}


def value(formula: str) -> float:
    return evaluated(formula, NAMES)


@pytest.mark.parametrize(
    "formula, by_hand",
    [
        ("ln(2)", math.log(2)),
        ("exp(1)", math.e),
        ("ln(r)", math.log(0.25)),
        ("exp(-r)", math.exp(-0.25)),
        ("ln('50 percent')", math.log(0.5)),
        ("ln('1 GB' / '1 MB')", math.log(1000)),  # a ratio of like units in unlike sizes: its plain number
        ("ln(t / '1 s')", math.log(0.003)),
        ("exp(ln(r))", 0.25),
        ("exp(-1000)", 0.0),  # underflows to 0, which is a figure
        ("exp(690)", math.exp(690)),  # just within 1e300
    ],
)
def test_the_evaluator_gives_what_math_gives(formula, by_hand):
    assert math.isclose(value(formula), by_hand, rel_tol=1e-12)


@pytest.mark.parametrize(
    "formula, code, message",
    [
        ("ln(t)", "KB503", "ln() needs a plain number, got ms"),
        ("exp('1 GB')", "KB503", "exp() needs a plain number, got GB"),
        ("ln(0)", "KB507", "ln() needs a number above 0, not 0"),
        ("ln(-r)", "KB507", "ln() needs a number above 0: -r is -0.25"),
        ("ln(zero)", "KB507", "ln() needs a number above 0: zero is 0 percent"),
        ("exp(big)", "KB507", "exp() of big is too large (at most 1e+300): big is 1,000"),
        ("exp(691)", "KB507", "exp() of 691 is too large (at most 1e+300)"),
        ("exp(1e30)", "KB507", "exp() of 1e+30 is too large (at most 1e+300)"),
        ("ln(1, 2)", "KB501", "ln() takes one argument"),
        ("log(2)", "KB501", "allowed: abs, ceil, default, exp, floor, ln, max, min, param, sqrt,"),
    ],
)
def test_the_evaluator_refuses(formula, code, message):
    with pytest.raises(FormulaError) as raised:
        value(formula)
    assert raised.value.code == code and message in raised.value.message, raised.value.message


RANGES = {
    "h": Interval.of(q("0.8"), q("0.95")),
    "x": Interval.of(q("-1"), q("2")),
    "g": Interval.of(q("1 GB"), q("2 GB")),
    "e": Interval.of(q("1"), q("800")),
}


def ranged(formula: str) -> tuple[float, float]:
    return ranged_over(formula, RANGES)


@pytest.mark.parametrize(
    "formula, low, high",
    [
        ("ln(h)", math.log(0.8), math.log(0.95)),
        ("exp(h)", math.exp(0.8), math.exp(0.95)),
        ("ln(1 - h)", math.log(0.05), math.log(0.2)),  # ln of a falling argument: its ends swap
        ("exp(-h)", math.exp(-0.95), math.exp(-0.8)),
        ("ln(g / '1 GB')", 0.0, math.log(2)),
    ],
)
def test_the_range_of_ln_and_exp_is_theirs_at_the_ends(formula, low, high):
    found = ranged(formula)
    assert math.isclose(found[0], low, rel_tol=1e-12, abs_tol=1e-15), found
    assert math.isclose(found[1], high, rel_tol=1e-12), found


@pytest.mark.parametrize(
    "formula, code, message",
    [
        ("ln(x)", "KB507", "ln() needs a number above 0: x is -1 to 2"),
        ("ln(g)", "KB503", "ln() needs a plain number, got GB"),
        ("exp(e)", "KB507", "exp() of e is too large (at most 1e+300): e is 1 to 800"),
    ],
)
def test_a_range_ln_or_exp_cannot_take_is_an_error(formula, code, message):
    with pytest.raises(FormulaError) as raised:
        ranged(formula)
    assert raised.value.code == code and message in raised.value.message, raised.value.message


# ---------------------------------------------------------------- the browser's calculator


@pytest.mark.browser
def test_the_calculator_evaluates_ln_and_exp_as_kb_does(kb):
    """calc.js walks the same trees: its figures are math's, its range over the band too, and an input that
    takes ln below 0 or exp past 1e300 shows kb's refusal instead of a figure."""
    from site_support import browser, serve

    queue_kb(kb)
    assert kb.run("build", "--no-search").exit_code == 0
    with serve(kb.root / "site/_build") as url, browser() as chromium:
        page = chromium.new_context().new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url + "flops/queue.html")

        def shown(cost: str, cell: str = "value") -> str:
            return page.locator(f"tr[data-cost={cost}] td.calc-{cell}").inner_text()

        tail = LOAD * math.exp(-(1 - LOAD) * WAIT_MS / SERVICE_MS)
        assert close(figure(shown("tail").removesuffix(" 1")), tail), shown("tail")
        assert close(figure(shown("log_miss").removesuffix(" 1")), math.log(1 - HIT))
        assert close(figure(shown("log_share").removesuffix(" 1")), math.log(SHARE))
        assert close(figure(shown("zipf_sum").removesuffix(" 1")), (OBJECTS ** (1 - SKEW) - 1) / (1 - SKEW))
        low, high = shown("log_miss", "range").removesuffix(" 1").split(" to ")
        assert close(figure(low), math.log(1 - HIT_HIGH)) and close(figure(high), math.log(1 - HIT_LOW))
        page.fill("input[name=in-hit_rate]", "0.5")
        assert close(figure(shown("log_miss").removesuffix(" 1")), math.log(0.5))
        page.fill("input[name=in-hit_rate]", "1")
        assert page.locator(".calc-error").inner_text() == "ln() needs a number above 0"
        page.fill("input[name=in-hit_rate]", "0.9")
        page.fill("input[name=in-load]", "1000")  # exp(999 × 10 ms / 2 ms): past 1e300
        assert page.locator(".calc-error").inner_text() == "exp() is too large (at most 1e+300)"
        assert errors == []
