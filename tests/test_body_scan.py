"""The body's fast path (a line scan for prose with nothing else in it) finds exactly what the parser finds:
the same links and inline values, at the same lines and columns, on every record of the repository, on
generated records, and on a catalogue of look-alikes; anything else goes to the parser."""

from __future__ import annotations

import sys

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.lang.markdown import _scan_parsed, _scan_plain, plain_prose, scan_body

sys.path.insert(0, str(REPO / "benchmarks"))
from generate import generate  # noqa: E402

LOOK_ALIKES = [
    "[[a]]",
    "See [[dir/a|the label]] and [[b#Some heading]] and [[c#h|l]].",
    "[[ ]] [[]] [[a[b]] [[[x]]] [[a]]]] [[x",
    "{{ x }} {{x {{ a | GB }} {{}} }}",
    "{{ [[a]] }} then [[ {{x}} ]]",
    "* [[a]] in a list\n  continued with {{ v }}\n\n> [[q]] quoted\n\n# A heading with [[h]]\n\n1. {{ n }}",
    "**[[bold]]** _{{ em }}_ ~~{{ old }}~~ ~~[[gone]]~~",
    "Setext\n===\n[[after]]",
    "  [[two spaces]]\n   {{ three }}",
    "[[" + "a" * 400 + "]] [[" + "b" * 250 + "]]",
    "{{ " + "c" * 400 + " }}",
    "one\n\n\n[[far]] {{ away }}\n",
    "[[é]] {{ ü }} — [[ünïcode#ñ|ł]]",
]


@pytest.mark.parametrize("body", LOOK_ALIKES)
def test_fast_path_matches_the_parser_on_look_alikes(body):
    assert plain_prose(body)
    assert _scan_plain(body) == _scan_parsed(body)


@pytest.mark.parametrize(
    "body",
    [
        "`[[in code]]`",
        "```\n[[fenced]]\n```",
        "~~~\n{{ fenced }}\n~~~",
        "para\n\n    [[indented code]]",
        "\\[[escaped]]",
        "[x]([[in a url]])",
        "| a | [[b|c]] |\n|---|---|\n| 1 | 2 |",
        "&amp; [[a]]",
        "<http://x/[[a]]>",
        "[ref]: http://x\n[[a]]",
        "tab\t[[a]]",
        "crlf\r\n[[a]]",
    ],
)
def test_what_the_fast_path_cannot_decide_goes_to_the_parser(body):
    assert not plain_prose(body)
    assert scan_body(body) == _scan_parsed(body)


def _bodies(root):
    for path in sorted((root / "records").glob("*/*.md")):
        parts = path.read_text(encoding="utf-8").split("---\n", 2)
        if len(parts) == 3:
            yield path, parts[2]


def test_fast_path_matches_the_parser_on_every_record(tmp_path):
    generate(tmp_path / "gen", 400, seed=3)
    fast = 0
    for root in (REPO, tmp_path / "gen"):
        for path, body in _bodies(root):
            if plain_prose(body):
                fast += 1
                assert _scan_plain(body) == _scan_parsed(body), path
    assert fast > 300  # the fast path is the common one


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="[]{}|#ab -*>_~\n", max_size=80))
def test_fast_path_matches_the_parser_on_random_text(body):
    if plain_prose(body):
        assert _scan_plain(body) == _scan_parsed(body)
