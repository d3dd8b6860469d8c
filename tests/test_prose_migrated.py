"""The prose checks (KB610, KB611) on text kb did not write: a knowledge base migrated from another format,
whose notes work their figures out in words ("252 GB/s ÷ 8 = 31.5 GB/s"), name a field by the words after
a figure ("128 GB/s per direction") and type figures that two fields hold."""

from __future__ import annotations

import pytest
from test_prose import line_of, opt_in

# the message KB610 gives for bandwidth_per_direction, after "the text says <figure> for ..."
CONTRADICTS_64 = (
    "bandwidth_per_direction, but interconnects/link.bandwidth_per_direction is 64 GB/s: correct the text or the "
    "field; quote the field as {{ bandwidth_per_direction }} in the body, strike an old figure through "
    "(~~FIGURE~~), or enter a competing figure among the field's values"
)


def link(kb, fields="", note=None, body=""):
    """An interconnect whose bandwidth per direction is 64 GB/s (so both directions derive to 128 GB/s), in a
    knowledge base that opts in to KB611."""
    opt_in(kb)
    kb.source()
    note_line = f"  note: {note}\n" if note else ""
    return kb.record(
        "interconnects",
        "link",
        "interconnect",
        "kind: pcie\nscope: host\nbandwidth_per_direction:\n  value: 64 GB/s\n  basis: derived\n  source: src-a\n"
        f"{note_line}{fields}",
        body="[[src-a]]\n" + body,
    )


@pytest.mark.parametrize(
    "note, figure",
    [
        ("The recorded value is 256 GB/s ÷ 8 = 31.5 GB/s, from the spec table.", "31.5 GB/s"),
        ("The recorded value is (256 GB/s ÷ 8) ≈ 31.5 GB/s one way.", "31.5 GB/s"),
        ("The recorded value, 31.5 GB/s = 252 GB/s ÷ 8, is the spec table's.", "31.5 GB/s"),
        ("The recorded value is 16 × 4 GB/s = 64 GB/s ≈ 65 GB/s in the table.", "65 GB/s"),
    ],
)
def test_the_result_of_a_calculation_is_what_the_note_claims(kb, note, figure):
    """Before: a figure beside an operator, and a sentence with two figures of one kind, were skipped
    whole, so a note that works out a wrong value was never read as saying it."""
    path = link(kb, note=note)
    found = kb.check().find("KB610")
    line, col = line_of(path, figure, on="note:")
    assert found == [
        f"records/interconnects/link.md:{line}:{col}: error KB610 bandwidth_per_direction.note: the text says "
        f"{figure} for " + CONTRADICTS_64.replace("FIGURE", figure)
    ]


@pytest.mark.parametrize(
    "note",
    [
        "The recorded value is 512 GB/s ÷ 8 = 64 GB/s.",  # the operand is no claim; the result agrees
        "The recorded value, 64 GB/s = 512 GB/s ÷ 8, is the spec table's.",
        "The recorded value is 64 GB/s, about 16 × 4 GB/s.",  # a figure and a calculation apart
    ],
)
def test_the_operands_of_a_calculation_are_no_claim(kb, note):
    link(kb, note=note)
    assert not kb.check().find("KB610")


@pytest.mark.parametrize("where", ["note", "body"])
def test_a_figure_followed_by_words_of_the_field_name_claims_that_field(kb, where):
    """ "per direction" names bandwidth_per_direction; it is no per-part qualifier of it. Before: skipped
    as one, and the body's figure was taken for bandwidth_both_directions (KB611) instead."""
    sentence = "PCIe 6.0 x16 gives 128 GB/s per direction."
    path = link(kb, note=sentence) if where == "note" else link(kb, body=f"\n{sentence}\n")
    result = kb.check()
    line, col = line_of(path, "128 GB/s", on="PCIe 6.0")
    shown = "bandwidth_per_direction.note" if where == "note" else "body"
    assert result.find("KB610") == [
        f"records/interconnects/link.md:{line}:{col}: error KB610 {shown}: the text says 128 GB/s for "
        + CONTRADICTS_64.replace("FIGURE", "128 GB/s")
    ]
    assert not result.find("KB611")


def test_the_words_after_a_figure_say_its_field_before_the_rest_of_the_sentence(kb):
    """The sentence names bandwidth per direction, but the figure is followed by "both directions": it is
    read against bandwidth_both_directions (128 GB/s), not against the field named earlier."""
    path = link(kb, body="\nIts bandwidth per direction adds up to 100 GB/s both directions.\n")
    found = kb.check().find("KB610")
    line, col = line_of(path, "100 GB/s")
    assert found == [
        f"records/interconnects/link.md:{line}:{col}: error KB610 body: the text says 100 GB/s for "
        "bandwidth_both_directions, but interconnects/link.bandwidth_both_directions is 128 GB/s: correct the "
        "text or the field; quote the field as {{ bandwidth_both_directions }} in the body, strike an old figure "
        "through (~~100 GB/s~~), or enter a competing figure among the field's values"
    ]


@pytest.mark.parametrize(
    "sentence, wrong",
    [
        ("The link carries 64 GB/s per direction, 100 GB/s both directions.", "100 GB/s"),
        ("The link carries 50 GB/s per direction, 128 GB/s both directions.", "50 GB/s"),
    ],
)
def test_figures_of_one_kind_that_each_name_their_field_are_each_checked(kb, sentence, wrong):
    path = link(kb, body=f"\n{sentence}\n")
    found = kb.check().find("KB610")
    line, col = line_of(path, wrong)
    assert len(found) == 1 and found[0].startswith(f"records/interconnects/link.md:{line}:{col}: error KB610 body:")


@pytest.mark.parametrize(
    "sentence",
    [
        # one of two figures of a kind names no field: the sentence compares (the previous generation's link)
        "The link carries 64 GB/s one way (the previous generation's: 32 GB/s per direction).",
        # a range: its upper end is no figure of its own, after a dash as after a hyphen
        "Links of this kind carry 16–32 GB/s per direction.",
    ],
)
def test_comparisons_and_ranges_stay_quiet(kb, sentence):
    link(kb, body=f"\n{sentence}\n")
    assert not kb.check().find("KB610")


@pytest.mark.parametrize("per_part", ["4 GB/s per lane", "8 GB/s per port", "4 GB/s each"])
def test_a_per_part_qualifier_that_is_no_word_of_the_field_stays_one(kb, per_part):
    link(kb, body=f"\nIts bandwidth per direction is {per_part}.\n")
    assert not kb.check().find("KB610")


def test_words_several_fields_share_name_none_of_them(kb):
    """ "peak BF16" is in the names of peak_bf16_dense and peak_bf16_sparse: it says which as little as the unit does."""
    kb.source()
    kb.record(
        "accelerators",
        "gpu-x",
        "accelerator",
        "vendor: V\npeak_bf16_dense: 990 TFLOP/s\npeak_bf16_sparse: 1980 TFLOP/s\n",
        body="[[src-a]]\n\nWith sparsity it reaches 1980 TFLOP/s peak BF16.\n",
    )
    assert not kb.check().find("KB610")


# ------------------------------------------------------------------ KB611: which value a typed figure is
MEASURED_64 = "measured_bandwidth: 64 GB/s\n"


def test_a_figure_two_fields_hold_is_quoted_as_the_one_the_sentence_names(kb):
    """Before: the first of the two in schema order was suggested, whichever the sentence was about."""
    path = link(kb, fields=MEASURED_64, body="\nIn our run the measured bandwidth came to 64 GB/s.\n")
    found = kb.check().find("KB611")
    line, col = line_of(path, "64 GB/s", on="our run")
    assert found == [
        f"records/interconnects/link.md:{line}:{col}: warning KB611 body: 64 GB/s is "
        "interconnects/link.measured_bandwidth (64 GB/s) typed by hand; write {{ measured_bandwidth }} "
        "so an edit to it cannot leave this stale"
    ]


def test_a_figure_two_fields_hold_in_a_sentence_naming_neither_names_both(kb):
    path = link(kb, fields=MEASURED_64, body="\nA copy through it runs at 64 GB/s.\n")
    found = kb.check().find("KB611")
    line, col = line_of(path, "64 GB/s", on="A copy")
    assert found == [
        f"records/interconnects/link.md:{line}:{col}: warning KB611 body: 64 GB/s is "
        "interconnects/link.bandwidth_per_direction (64 GB/s) or interconnects/link.measured_bandwidth (64 GB/s) "
        "typed by hand, and the sentence does not say which; write the one it is, {{ bandwidth_per_direction }} "
        "or {{ measured_bandwidth }}, so an edit to it cannot leave this stale"
    ]


def test_a_figure_of_this_record_and_a_linked_one_is_the_one_the_sentence_names(kb):
    """The link and the accelerator its sentence links both hold 64 GB/s; the sentence names the link's
    bandwidth per direction, so that is the figure. Before: a linked record's value always came first."""
    kb.record("accelerators", "gpu-x", "accelerator", "vendor: V\nmemory_bandwidth: 64 GB/s\n", body="[[src-a]]\n")
    path = link(kb, body="\nBeside [[gpu-x]], the bandwidth per direction of this link is 64 GB/s.\n")
    found = kb.check().find("KB611")
    line, col = line_of(path, "64 GB/s", on="Beside")
    assert found == [
        f"records/interconnects/link.md:{line}:{col}: warning KB611 body: 64 GB/s is "
        "interconnects/link.bandwidth_per_direction (64 GB/s) typed by hand; write {{ bandwidth_per_direction }} "
        "so an edit to it cannot leave this stale"
    ]


def test_a_figure_of_this_record_and_a_linked_one_in_a_sentence_naming_neither_is_the_linked_ones(kb):
    """ "[[gpu-x]] ... 64 GB/s" is gpu-x's figure though the link holds 64 GB/s too: the record a sentence
    links is what it is about."""
    kb.record("accelerators", "gpu-x", "accelerator", "vendor: V\nmemory_bandwidth: 64 GB/s\n", body="[[src-a]]\n")
    path = link(kb, body="\nA copy into [[gpu-x]] streams at 64 GB/s.\n")
    found = kb.check().find("KB611")
    line, col = line_of(path, "64 GB/s", on="A copy")
    assert found == [
        f"records/interconnects/link.md:{line}:{col}: warning KB611 body: 64 GB/s is "
        "accelerators/gpu-x.memory_bandwidth (64 GB/s) typed by hand; write "
        "{{ accelerators/gpu-x.memory_bandwidth }} so an edit to it cannot leave this stale"
    ]
