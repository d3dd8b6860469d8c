"""What a vendor states, kept as stated (issue 45): a capacity the vendor gives in GiB is not stored as GB
(KB407), and every dense peak the planner may need is either stated or explained (KB204)."""

from __future__ import annotations

import json

SOURCE = "kind: docs\norigin: first-party\npublisher: Chipmaker\nurl: https://example.org/{id}\nnotes: {notes}\n"
PEAKS = (
    "peak_fp4_dense: 10 PFLOP/s\npeak_fp8_dense: 5 PFLOP/s\npeak_bf16_dense: 2.5 PFLOP/s\npeak_int8_dense: 5 PFLOP/s\n"
)


def chip(kb, capacity: str, notes: str, extra: str = PEAKS):
    kb.record("sources", "chip-spec", "source", SOURCE.format(id="chip-spec", notes=notes))
    return kb.record(
        "accelerators",
        "chip",
        "accelerator",
        f"vendor: V\nmemory_capacity:\n  value: {capacity}\n  source: chip-spec\n{extra}",
        sources="[chip-spec]",
    )


def test_a_capacity_the_source_states_in_gib_stored_as_gb_is_flagged_at_its_value(kb):
    path = chip(kb, "96 GB", "'The device has four HBM stacks with 96GiB in all.'")
    line = path.read_text().splitlines().index("  value: 96 GB") + 1
    result = kb.check()
    assert result.exit_code == 0
    assert result.find("KB407") == [
        f"records/accelerators/chip.md:{line}:10: warning KB407 memory_capacity: source chip-spec says 96 GiB, and "
        "the record stores 96 GB, 6.9% fewer bytes; store the quantity as the vendor states it ('96 GiB'), or quote "
        "the decimal figure the vendor gives"
    ]
    assert kb.check("--strict").exit_code == 1


def test_the_quantity_as_stated_or_a_vendor_that_states_both_is_quiet(kb):
    chip(kb, "96 GiB", "'The device has four HBM stacks with 96GiB in all.'")
    assert kb.check("--strict").find("KB407") == []
    chip(kb, "96 GB", "'96 GB of HBM' on the product page; the SDK table heads it 96 GiB.")
    assert kb.check("--strict").find("KB407") == []
    chip(kb, "96 GB", "The old table said ~~96 GiB~~; now it says 96 GB.")
    assert kb.check("--strict").find("KB407") == []


def test_a_gib_capacity_is_more_bytes_than_the_same_gb_label_in_every_formula(kb):
    """tier_fill and every other formula divide bytes: 96 GiB is 103.08e9 B, not 96e9."""
    chip(kb, "96 GiB", "'96GiB'")
    result = kb.run("query", "type=accelerator", "--fields", "memory_capacity", "--format", "json")
    assert result.exit_code == 0, result.err
    (row,) = json.loads(result.out)
    assert row["memory_capacity_unit"] == "GB"
    assert abs(row["memory_capacity"] - 96 * 2**30 / 1e9) < 1e-9


def test_a_dense_peak_neither_stated_nor_explained_is_a_warning_naming_it(kb):
    path = chip(kb, "96 GiB", "'96GiB'", extra="peak_bf16_dense: 2.5 PFLOP/s\npeak_fp8_dense: 5 PFLOP/s\n")
    result = kb.check()
    assert result.exit_code == 0
    id_line = path.read_text().splitlines().index("id: chip") + 1
    assert result.find("KB204") == [
        f"records/accelerators/chip.md:{id_line}:1: warning KB204 {field} is neither stated nor explained: add the "
        f"vendor's dense {words} peak with its source, or say under not_published why there is none"
        for field, words in (("peak_fp4_dense", "FP4"), ("peak_int8_dense", "INT8"))
    ]
    assert kb.check("--strict").exit_code == 1
    chip(
        kb,
        "96 GiB",
        "'96GiB'",
        extra="peak_bf16_dense: 2.5 PFLOP/s\npeak_fp8_dense: 5 PFLOP/s\nnot_published:\n"
        "  peak_fp4_dense: the part has no FP4 units; the spec's table lists no FP4 row\n"
        "  peak_int8_dense: the spec's table lists no INT8 row for this part\n",
    )
    assert kb.check("--strict").find("KB204") == []


def test_an_accelerator_that_states_no_compute_peak_at_all_is_not_asked_for_one(kb):
    """A record kept for its memory or links alone (a test fixture, a newcomer's first stub) says nothing of its
    compute, so no precision is missing from it; the rule judges parts whose compute the record describes."""
    chip(kb, "96 GiB", "'96GiB'", extra="memory_bandwidth: 2900 GB/s\n")
    assert kb.check("--strict").find("KB204") == []


def test_a_reason_too_short_to_say_why_is_refused(kb):
    chip(kb, "96 GiB", "'96GiB'", extra=PEAKS + "not_published:\n  peak_fp4_dense: n/a\n")
    assert kb.check().find("KB200"), "a one-word reason says nothing of why"


def test_a_gib_figure_is_shown_as_the_vendor_states_it_with_its_decimal_bytes_beside_it(kb):
    chip(kb, "96 GiB", "'96GiB'")
    result = kb.run("explain", "accelerators/chip.memory_capacity")
    assert result.exit_code == 0, result.err
    assert result.lines[0] == "accelerators/chip.memory_capacity = 96 GiB (103.079 GB)"
