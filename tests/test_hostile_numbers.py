"""Numbers without bounds (issue 30, item 4) and competing values at scale (item 13).

Every number kb reads is bounded where it is read, and every figure kb computes is finite or a
diagnostic where it was asked for: never a traceback, never KB900 (kb's own failure), never a silent
infinity. A field with thousands of competing values costs, per value, what a plain value costs.
"""

from __future__ import annotations

import dataclasses
import subprocess

import pytest
from conftest import KB_SCRIPT

FLOP = "class: kv_transfer\nbound_by: memory\n"


def flop_cost(formula: str, n: str = "1 GB", unit: str = "GB", body: str = "[[src-a]]\n") -> str:
    return FLOP + f'inputs:\n  n: {n}\ncosts:\n  c:\n    formula: "{formula}"\n    unit: "{unit}"\n', body


def line_col(path, text: str) -> str:
    """'line:col' where `text` starts in the file."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return f"{number}:{line.index(text) + 1}"
    raise AssertionError(text)


def no_crash(result) -> None:
    assert "Traceback" not in result.out + result.err
    assert not result.find("KB900"), result.out
    assert all(len(line) < 600 for line in result.lines), "a diagnostic must not echo thousands of digits"


# ---------------------------------------------------------------- numbers kb reads


@pytest.mark.parametrize(
    "field, written",
    [
        ("memory_bandwidth", "9" * 5000 + " GB/s"),  # past Python's own 4,300-digit limit for int()
        ("memory_bandwidth", "9" * 4000 + " GB/s"),  # under it, but no float can hold it
        ("memory_bandwidth", "1" + "0" * 400 + ".5 GB/s"),
        ("tdp", "-" + "9" * 5000 + "e5 W"),
    ],
)
def test_a_quantity_with_thousands_of_digits_is_out_of_range_at_its_text(kb, field, written):
    kb.source()
    path = kb.record("accelerators", "x", "accelerator", f"vendor: V\n{field}: {written}\n", "[[src-a]]\n")
    result = kb.check()
    no_crash(result)
    assert result.exit_code == 1
    [line] = result.find("KB403")
    assert line.startswith(f"records/accelerators/x.md:{line_col(path, written[:20])}: error KB403 {field}: ")
    assert "digits" in line


@pytest.mark.parametrize(
    "written, shown",
    [
        ("num_layers: " + "9" * 4000, "9" * 4000),
        ("hidden_size: -" + "9" * 4000, "-" + "9" * 4000),
        ("num_layers: " + "1" * 5000, "1" * 5000),  # past int()'s own limit: not an "invalid YAML" message
        ("num_layers: 1" + "0" * 40, "1" + "0" * 40),
        ("head_dim: 1.0e+999", "1.0e+999"),  # YAML reads it as an infinity
        ("num_layers: .inf", ".inf"),
        ("aliases: [A, " + "7" * 4000 + "]", "7" * 4000),  # inside a list
    ],
)
def test_a_yaml_number_without_bounds_is_out_of_range_where_it_is_written(kb, written, shown):
    kb.source()
    path = kb.record("models", "m", "model", f"architecture: dense\nattention: gqa\n{written}\n", "[[src-a]]\n")
    result = kb.check()
    no_crash(result)
    assert result.exit_code == 1
    [line] = result.find("KB403")
    assert line.startswith(f"records/models/m.md:{line_col(path, shown)}: error KB403 "), result.out
    assert "quote it" in line  # the way out when it is an identifier, not a figure


def test_long_but_ordinary_numbers_still_load(kb):
    kb.source()
    kb.record(
        "models",
        "m",
        "model",
        "architecture: dense\nattention: gqa\nnum_layers: 61\nconfidence: 0.333333333333333333333333\n",
        "[[src-a]]\n",
    )
    result = kb.check()
    assert not result.find("KB403") and not result.find("KB900"), result.out


# ---------------------------------------------------------------- figures kb computes


def test_an_inline_power_that_overflows_is_reported_where_it_is_asked_for(kb):
    kb.source()
    body = (
        "[[src-a]] Raised: {{ memory_bandwidth ** 64 }}.\n"
        "A plain ratio may be large: {{ (memory_bandwidth / '1 GB/s') ** 64 }}.\n"
    )
    path = kb.record("accelerators", "x", "accelerator", "vendor: V\nmemory_bandwidth: 8000 GB/s\n", body)
    result = kb.check()
    no_crash(result)
    assert result.exit_code == 1
    [line] = result.find("KB509")
    assert line.startswith(
        f"records/accelerators/x.md:{line_col(path, '{{ memory_bandwidth ** 64')}: error KB509 "
        "inline value {{ memory_bandwidth ** 64 }}: "
    )
    assert "too large" in line


@pytest.mark.parametrize("depth", [2, 20, 39])
def test_powers_nested_within_the_depth_limit_are_bounded(kb, depth):
    """((n ** 64) ** 64) ... : a unit power of 64^depth, or a magnitude past any float, is KB507."""
    kb.source()
    nested = "(" * depth + "n" + " ** 64)" * depth
    for n in ("1 GB", "4 GB", "4"):
        path = kb.record("flops", "f", "flop", *flop_cost(nested, n=n, unit="GB" if "GB" in n else "1"))
        result = kb.check()
        no_crash(result)
        assert result.exit_code == 1
        found = result.find("KB507")
        assert [l.split(": error")[0] for l in found] == [f"records/flops/f.md:{line_col(path, 'formula:')}"], (
            n,
            result.out,
        )


@pytest.mark.parametrize("depth", [2, 20, 30])
def test_nested_powers_in_an_inline_value_are_bounded(kb, depth):
    kb.source()
    nested = "(" * depth + "n" + " ** 64)" * depth
    formula, body = flop_cost("n", body=f"[[src-a]] {{{{ {nested} }}}}\n")
    path = kb.record("flops", "f", "flop", formula, body)
    result = kb.check()
    no_crash(result)
    assert result.exit_code == 1
    [line] = result.find("KB509")
    assert line.startswith(f"records/flops/f.md:{line_col(path, '{{')}: error KB509 ")


@pytest.mark.parametrize("depth", [60, 75, 90])
def test_powers_nested_past_the_depth_limit_are_refused_before_evaluation(kb, depth):
    kb.source()
    path = kb.record("flops", "f", "flop", *flop_cost("(" * depth + "n" + " ** 64)" * depth))
    result = kb.check()
    no_crash(result)
    [line] = result.find("KB501")
    assert line.startswith(f"records/flops/f.md:{line_col(path, 'formula:')}: error KB501 costs.c: ")


@pytest.mark.parametrize("formula", ["n.to('s')", "n.to('1 s')", "n.magnitude()", "n.to(n)"])
def test_a_call_on_a_quantity_is_refused_as_a_construct(kb, formula):
    """Only a record's declared functions can be called; a quantity has no methods, and the call is refused
    before its arguments are read (n.to('s') was reported as a bad quantity literal 's')."""
    kb.source()
    path = kb.record("flops", "f", "flop", *flop_cost(formula))
    result = kb.check()
    no_crash(result)
    assert result.exit_code == 1
    [line] = [l for l in result.lines if " error " in l]
    assert line.startswith(f"records/flops/f.md:{line_col(path, 'formula:')}: error KB501 costs.c: ")
    assert "'n' is a quantity" in line


def test_a_call_on_a_quantity_in_prose_is_refused(kb):
    kb.source()
    formula, _ = flop_cost("n")
    path = kb.record("flops", "f", "flop", formula, "[[src-a]] {{ n.to('s') }}\n")
    result = kb.check()
    no_crash(result)
    [line] = result.find("KB509")
    assert line.startswith(f"records/flops/f.md:{line_col(path, '{{')}: error KB509 inline value {{{{ n.to('s') }}}}: ")
    assert "'n' is a quantity" in line


def test_a_figure_that_overflows_in_its_stated_unit_is_a_diagnostic(kb):
    """Finite in the formula's units, infinite once converted to the cost's unit: KB507, not an infinity."""
    kb.source()
    path = kb.record("flops", "f", "flop", *flop_cost("n ** 6 * 1e29 * 1e29 * 1e29", n="1e30 s", unit="ns^6"))
    result = kb.check()
    no_crash(result)
    assert [l.split(" costs.c")[0] for l in result.find("KB507")] == [
        f"records/flops/f.md:{line_col(path, 'formula:')}: error KB507"
    ], result.out


# ---------------------------------------------------------------- competing values at scale


def competing(kb, count: int):
    """accelerators/x, contested, with memory_bandwidth written as `count` competing values from 4 TB/s up in
    steps of 1 GB/s (each its own figure, so each is its own variant of what rests on it)."""
    values = [f"  - {{value: {4 + i / 1000:.3f} TB/s, rank: normal, source: src-a}}\n" for i in range(count)]
    values[0] = values[0].replace("normal", "preferred")
    extra = "vendor: V\npeak_bf16_dense: 1000 TFLOP/s\npeak_fp8_dense: 2000 TFLOP/s\nmemory_bandwidth:\n"
    path = kb.record("accelerators", "x", "accelerator", extra + "".join(values), "[[src-a]]\n")
    path.write_text(path.read_text().replace("status: draft", "status: contested"))
    return path


class Counted(tuple):
    """A value's variants, counting each item anything reads from them."""

    read = 0

    def __iter__(self):
        for item in tuple.__iter__(self):
            Counted.read += 1
            yield item


def test_competing_values_cost_per_value_what_a_plain_value_costs(kb, monkeypatch):
    """The work per competing value is bounded: each is parsed once, like a plain value, and the figures
    resting on it (three ridge points) read each a few times, never once per other value (which made a
    field of 10,001 values take minutes)."""
    from kbtools.check.compute.engine import Computer
    from kbtools.lang import units

    stated, parse = Computer.stated_value, units.parse_quantity_text
    parsed = []

    def counting_variants(self, *args, **kwargs):
        value = stated(self, *args, **kwargs)
        return dataclasses.replace(value, variants=Counted(value.variants))

    def counting_parse(value, default_unit):
        parsed.append(value)
        return parse(value, default_unit)

    monkeypatch.setattr(Computer, "stated_value", counting_variants)
    monkeypatch.setattr(units, "parse_quantity_text", counting_parse)
    kb.source()
    count = 2000
    competing(kb, count)
    Counted.read = 0
    result = kb.check("--no-cache")
    assert result.exit_code == 0 and not [l for l in result.lines if " error " in l], result.out
    assert len([p for p in parsed if isinstance(p, str) and p.endswith(" TB/s")]) == count  # once each
    assert Counted.read <= 10 * count, f"{Counted.read:,} reads of {count:,} competing values: the work grows faster"


@pytest.mark.slow
def test_ten_thousand_competing_values_are_checked_and_carried(kb):
    """A record with 10,000 competing values is checked, and every value is carried into what rests on it:
    the ridge point's range runs from the lowest bandwidth's figure to the highest's. (The timeout guards
    against a hang; it is far above what the check takes.)"""
    kb.source()
    competing(kb, 10_000)
    check = subprocess.run(
        [KB_SCRIPT, "--root", str(kb.root), "check", "--no-cache"], capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in check.stdout + check.stderr
    assert check.returncode == 0, check.stdout
    assert not [l for l in check.stdout.splitlines() if " error " in l]
    explain = subprocess.run(
        [KB_SCRIPT, "--root", str(kb.root), "explain", "accelerators/x.ridge_point_bf16"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert explain.returncode == 0, explain.stderr
    # 1000 TFLOP/s over 13.999 TB/s (the highest value) and over 4 TB/s (the preferred, lowest one)
    assert (
        "range: low 71.43 FLOP/B, preferred 250 FLOP/B, high 250 FLOP/B, over 1 condition (an interval enclosure"
        in explain.stdout
    )


def test_a_quantity_with_a_long_run_of_spaces_is_read_in_one_pass(kb):
    """Reading a quantity's number and unit was quadratic in a run of spaces inside the value (200,000 took
    minutes); it is one pass, and the unit is refused as a unit. (The timeout guards against a hang.)"""
    kb.source()
    written = "1 x" + " " * 200_000 + "y"
    path = kb.record("accelerators", "x", "accelerator", f"vendor: V\nmemory_bandwidth: {written}\n", "[[src-a]]\n")
    proc = subprocess.run(
        [KB_SCRIPT, "--root", str(kb.root), "check", "--no-cache"], capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in proc.stdout + proc.stderr
    errors = [l for l in proc.stdout.splitlines() if " error " in l]
    assert [l.split(" memory_bandwidth")[0] for l in errors] == [
        f"records/accelerators/x.md:{line_col(path, '1 x')}: error KB401"
    ], errors
    assert all(len(l) < 600 for l in errors)


def test_an_inline_value_longer_than_a_link_is_still_checked(kb):
    """An inline value of 300 to 2,000 characters was plain text, unchecked: an overflow could hide behind its
    length. Every value the formula language can hold is now found and evaluated."""
    kb.source()
    power = "memory_bandwidth ** 64" + " " * 400  # the overflow of test_an_inline_power_..., made long
    assert 300 < len(power) < 2000
    kb.record(
        "accelerators",
        "x",
        "accelerator",
        "vendor: V\nmemory_capacity: 80 GB\nmemory_bandwidth: 3 TB/s\n",
        body=f"Cites [[src-a]]. Its bandwidth to the 64th: {{{{ {power} }}}}.\n",
    )
    result = kb.check()
    assert [line for line in result.find("KB509") if "memory_bandwidth ** 64" in line and "an exponent" not in line]
