"""Fuzzing: whatever bytes, YAML, formulas, links or units arrive, kb answers with diagnostics.

Sized for CI (a few hundred examples per property). For a longer local run:
    KB_FUZZ_EXAMPLES=20000 python -m pytest -q tests/test_fuzz.py
"""

from __future__ import annotations

import os
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbtools.check.load import LoadError, parse_record_bytes
from kbtools.lang.formula import FormulaError, Table, evaluate, parse_formula
from kbtools.lang.markdown import scan_body
from kbtools.lang.units import QuantityError, parse_quantity_text, parse_written, unit_registry

EXAMPLES = int(os.environ.get("KB_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

yaml_pieces = st.sampled_from(
    [
        "id: x\n",
        "type: model\n",
        "name: 'a\n",
        "- a\n",
        "  b: 1\n",
        "\t",
        ": ",
        "&a ",
        "*a ",
        "{",
        "}",
        "[",
        "]",
        "!!python/object:os.system ",
        "? ",
        "|\n  x\n",
        "---\n",
        "...\n",
        "<<: *a\n",
        "key: 1e308\n",
        "k: .nan\n",
        "k: 2026-02-30\n",
        "\ufeff",
        "\x00",
        "é",
        "🙂",
    ]
)


@FUZZ
@given(st.binary(max_size=600))
def test_random_bytes_never_crash_the_loader(raw):
    try:
        parse_record_bytes(raw)
    except LoadError as error:
        assert error.code.startswith(("KB1", "KB403")) and error.line >= 1


@FUZZ
@given(st.lists(yaml_pieces, max_size=30), st.text(max_size=200))
def test_near_valid_records_never_crash_the_loader(pieces, body):
    raw = ("---\n" + "".join(pieces) + "\n---\n" + body).encode("utf-8", "surrogatepass")
    try:
        data, positions, _, body_line = parse_record_bytes(raw)
        assert isinstance(data, dict) and body_line >= 2
    except LoadError as error:
        assert error.code.startswith(("KB1", "KB403"))


formula_atoms = st.sampled_from(
    [
        "a",
        "b",
        "x.y",
        "1",
        "2.5",
        "'1 GB'",
        "'3 s'",
        "min",
        "max",
        "ceil",
        "param",
        "(",
        ")",
        "+",
        "-",
        "*",
        "/",
        "**",
        ",",
        " ",
        "__import__",
        "'",
        ".",
        "[",
        "]",
        "lambda",
        ":",
        "9",
        "1e308",
        "if",
        "else",
        "@",
        "~",
        "%",
        "=",
        "\n",
        "f'",
        "{",
        "}",
    ]
)


@FUZZ
@given(st.lists(formula_atoms, max_size=25))
def test_random_formulas_parse_or_fail_cleanly_and_evaluate_or_fail_cleanly(atoms):
    text = "".join(atoms)
    ureg = unit_registry()
    names = {
        ("a",): ureg.Quantity(2, "GB"),
        ("b",): ureg.Quantity(3, "s"),
        ("x", "y"): Table({"r": ureg.Quantity(1, "GB")}),
    }
    try:
        formula = parse_formula(text)
    except FormulaError as error:
        assert error.code in ("KB501", "KB507")
        return
    # a quantity literal with a bad unit fails like any other quantity (KB400-KB403)
    try:
        result = evaluate(
            formula,
            lambda parts: names[parts] if parts in names else (_ for _ in ()).throw(FormulaError("KB502", "missing")),
            lambda var, pid: ureg.Quantity(1, "GB/s"),
        )
        assert hasattr(result, "magnitude")
    except FormulaError as error:
        assert error.code.startswith(("KB5", "KB40"))


@FUZZ
@given(st.text(alphabet=string.printable + "[]|#{}`\n", max_size=400))
def test_bracket_soup_never_crashes_the_link_finder(body):
    scan = scan_body(body)
    for link in scan.links:
        assert link.line >= 0 and link.column >= 1 and "\n" not in link.target


unit_atoms = st.sampled_from(
    [
        "G",
        "B",
        "b",
        "/",
        "s",
        "T",
        "FLOP",
        "token",
        "param",
        "*",
        "^",
        "2",
        "(",
        ")",
        " ",
        "x",
        "µ",
        "-",
        "Gi",
        "MT",
        "W",
        "%",
        "1e9",
        "e",
        ".",
        "USD",
        "__",
        "**",
        "999",
    ]
)


@FUZZ
@given(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(),
        st.text(max_size=30),
        st.lists(unit_atoms, max_size=10).map("".join).map(lambda u: f"4.8 {u}"),
    )
)
def test_random_quantities_parse_or_fail_cleanly(value):
    try:
        parse_written(value, "GB/s")
    except QuantityError as error:
        assert error.code in ("KB400", "KB401", "KB402", "KB403")
    try:
        parse_quantity_text(value, None)
    except QuantityError as error:
        assert error.code in ("KB400", "KB401", "KB402", "KB403")
