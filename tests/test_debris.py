"""Debris: what a template or a tool left behind in a record's text (KB116)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "notes, body, where",
    [
        ("Bandwidth is %s per direction.", "Fine prose.\n", "notes: '%s'"),
        ("Fine.", "The link carries {0} one way.\n", "body: '{0}'"),
        ("Fine.", "TODO: add the TDP.\n", "body: 'TODO'"),
        ("Lorem ipsum dolor sit amet.", "Fine.\n", "notes: 'Lorem ipsum'"),
    ],
)
def test_leftovers_are_a_warning_at_their_line(kb, notes, body, where):
    kb.source()
    path = kb.record("engines", "e", "engine", f"kind: serving-engine\nnotes: {notes}\n", body="[[src-a]]\n" + body)
    found = kb.check().find("KB116")
    assert len(found) == 1 and where in found[0], found
    expected = next(
        i
        for i, l in enumerate(path.read_text().splitlines(), 1)
        if (notes in l if "notes" in where else body.strip() in l)
    )
    assert found[0].startswith(f"records/engines/e.md:{expected}:")


def test_inline_values_code_and_percentages_are_not_debris(kb):
    kb.source()
    kb.record(
        "engines",
        "e",
        "engine",
        "kind: serving-engine\nnotes: A 90 % hit rate; 100% of the blocks.\n",
        body="[[src-a]] Quotes {{ 2 * '1 GB' }} and `fmt.format({0})` in code.\n",
    )
    assert not kb.check().find("KB116")
