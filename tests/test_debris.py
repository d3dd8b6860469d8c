"""Debris: what a template or a tool left behind in a record's text (KB116)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


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


@pytest.mark.parametrize(
    "notes, body",
    [
        ('The driver prints "%s GB/s" for each link.', "Fine.\n"),  # a document's words, quoted
        ("Its log line reads 'took %d ms' per request.", "Fine.\n"),
        ("Printed with `%s` as the unit.", "Fine.\n"),  # code, in frontmatter text as in the body
        ("Fine.", "The format string is “{name} per {unit}”.\n"),
        ("Fine.", "The tool prints 'Bandwidth: %s' and exits.\n"),
        ("Clone https://github.com/{owner}/{repo} first.", "Fine.\n"),  # a URL template
        ("Fine.", "Repositories live at https://github.com/{owner}/{repo}.\n"),
        ("Fine.", "The [repository](https://github.com/{owner}/{repo}) has it.\n"),
        ("Fine.", 'The driver logs:\n\n```\nprintf("%s GB/s", bw);\n```\n'),  # a fenced code block
    ],
)
def test_a_placeholder_the_record_quotes_is_no_leftover(kb, notes, body):
    """Before: a %s in a quoted format string and the {owner} of a URL template were KB116."""
    kb.source()
    kb.record("engines", "e", "engine", f"kind: serving-engine\nnotes: {notes}\n", body="[[src-a]]\n" + body)
    assert not kb.check().find("KB116")


@pytest.mark.parametrize(
    "body, leftover",
    [
        ('The sheet says "fast" and the link carries %s one way.\n', "%s"),  # quoted words elsewhere on the line
        ("The vendor's %s figure isn't given.\n", "%s"),  # apostrophes are no quotation marks
        ("The link carries {bandwidth} one way, see https://example.org/x.\n", "{bandwidth}"),
        ("`code` aside, TODO: add the TDP.\n", "TODO"),
    ],
)
def test_a_leftover_beside_quoted_text_is_still_one(kb, body, leftover):
    kb.source()
    path = kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n" + body)
    found = kb.check().find("KB116")
    line = next(i for i, l in enumerate(path.read_text().splitlines(), 1) if leftover in l)
    col = path.read_text().splitlines()[line - 1].index(leftover) + 1
    assert found == [
        f"records/engines/e.md:{line}:{col}: warning KB116 body: {leftover!r} looks like a template's or a tool's "
        "leftover; write what it stands for, or remove it"
    ]


@given(
    st.lists(
        st.sampled_from(
            [
                "todo",
                "ToDo",
                "TBD",
                "fixme",
                "XXX",
                "lorem ipsum",
                "lorem",
                "ipſum",
                "ı",
                "K",
                "%s",
                "%",
                "{0}",
                "{",
                "}",
                " ",
                "\n",
                "a",
                "x",
                "TO",
                "DO",
                "é",
                "\u212a",
            ]
        ),
        max_size=12,
    ).map("".join)
)
@settings(max_examples=400, deadline=None)
def test_the_quick_test_for_leftovers_agrees_with_the_pattern(text):
    """Most records hold no leftover, so a cold check first asks a cheaper question; it must never say
    'none' where the pattern finds one (nor the reverse), in ASCII or beyond it."""
    from kbtools.check.debris import _DEBRIS, _may_hold_debris

    assert _may_hold_debris(text) == (_DEBRIS.search(text) is not None)
