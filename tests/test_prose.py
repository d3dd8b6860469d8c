"""Figures in prose checked against the record's own values, with no history to compare (KB610, KB611).

The audits' first-ranked defect: a record whose own text gives one figure while its field holds another.
And the house rule behind it: a figure a field already holds is quoted inline, never typed again.
"""

from __future__ import annotations


def opt_in(kb):
    """KB611 is advice, reported only where the configuration asks for it (docs/configuration.md)."""
    kb.write("kb.toml", '[severity]\nKB611 = "warning"\n')


def gpu(kb, bandwidth="3.35 TB/s", body="[[src-a]]\n", id_="gpu-x"):
    """An accelerator, in a knowledge base that opts in to KB611."""
    opt_in(kb)
    kb.source()
    path = kb.record("accelerators", id_, "accelerator", f"vendor: V\nmemory_bandwidth: {bandwidth}\n", body=body)
    return path


def engine_quoting_gpu_x(kb):
    """An engine whose body types gpu-x's memory bandwidth in a sentence that links gpu-x."""
    kb.record(
        "engines",
        "e",
        "engine",
        "kind: serving-engine\n",
        body="[[src-a]]\n\nOn [[gpu-x]] the cache streams at 3.35 TB/s.\n",
    )


def line_of(path, text, on=""):
    """Line and column of `text` on the first line that holds it (and `on`)."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if text in line and on in line:
            return number, line.index(text) + 1
    raise AssertionError(text)


def test_a_note_that_says_the_recorded_value_is_another_figure_is_an_error(kb):
    """The PCIe 5.0 case of the audit: the field stores 63 GB/s, its own note says the value is 31.5 GB/s."""
    kb.source()
    path = kb.record(
        "interconnects",
        "link",
        "interconnect",
        "kind: pcie\nscope: host\nbandwidth_per_direction:\n  value: 63 GB/s\n  basis: derived\n  source: src-a\n"
        "  note: The recorded value is 31.5 GB/s one way, from the spec table.\n",
        body="[[src-a]]\n",
    )
    result = kb.check()
    found = result.find("KB610")
    line, col = line_of(path, "31.5 GB/s")
    assert found == [
        f"records/interconnects/link.md:{line}:{col}: error KB610 bandwidth_per_direction.note: the text says "
        "31.5 GB/s for bandwidth_per_direction, but interconnects/link.bandwidth_per_direction is 63 GB/s: "
        "correct the text or the field; quote the field as {{ bandwidth_per_direction }} in the body, strike an "
        "old figure through (~~31.5 GB/s~~), or enter a competing figure among the field's values"
    ]
    assert result.exit_code == 1


def test_a_body_sentence_naming_the_field_with_another_figure_is_an_error(kb):
    path = gpu(kb, body="[[src-a]]\n\nIts memory bandwidth is 2.0 TB/s, which sets the decode rate.\n")
    found = kb.check().find("KB610")
    line, col = line_of(path, "2.0 TB/s")
    assert len(found) == 1 and found[0].startswith(f"records/accelerators/gpu-x.md:{line}:{col}: error KB610 body:")
    assert (
        "the text says 2.0 TB/s for memory_bandwidth, but accelerators/gpu-x.memory_bandwidth is 3.35 TB/s" in found[0]
    )


def test_a_word_the_schema_lists_in_x_kb_names_names_the_field(kb):
    gpu(kb, body="[[src-a]]\n\nThe HBM bandwidth is 2.0 TB/s.\n")
    assert len(kb.check().find("KB610")) == 1


def test_a_figure_that_agrees_at_its_written_precision_is_no_contradiction(kb):
    gpu(kb, body="[[src-a]]\n\nIts memory bandwidth, about 3.4 TB/s, sets the decode rate.\n")
    result = kb.check()
    assert not result.find("KB610")


def test_the_documented_ways_to_mention_another_figure_stay_quiet(kb):
    gpu(
        kb,
        bandwidth="\n  - {value: 3.35 TB/s, rank: preferred, source: src-a}\n  - {value: 3.0 TB/s, rank: deprecated, source: src-a}",
        body="[[src-a]] [[gpu-y]]\n\n"
        "The memory bandwidth was once given as ~~3.2 TB/s~~ in a draft.\n"  # struck through: an old figure
        "The memory bandwidth of the pre-launch sheet, 3.0 TB/s, is kept as a deprecated value.\n"  # a competing value
        "The memory bandwidth is 5 × 670 GB/s.\n"  # a step of a calculation
        "The memory bandwidth is 670 GB/s per stack.\n"  # a per-part figure
        "The memory bandwidth ranges from 2.0 TB/s to 3.35 TB/s across parts.\n"  # two figures compared
        'The launch slide said "memory bandwidth 4 TB/s".\n'  # a document's words, quoted
        "The memory bandwidth of [[gpu-y]] is 8 TB/s.\n",
    )  # a sentence about another accelerator
    kb.record(
        "accelerators", "gpu-y", "accelerator", "vendor: V\nmemory_bandwidth: 8 TB/s\n", body="[[src-a]] [[gpu-x]]\n"
    )
    assert not kb.check().find("KB610")


def test_a_figure_typed_where_an_inline_value_would_do_is_a_warning_naming_the_inline_value(kb):
    path = gpu(kb, body="[[src-a]]\n\nDecode streams the weights at 3.35 TB/s.\n")
    found = kb.check().find("KB611")
    line, col = line_of(path, "3.35 TB/s", on="Decode")
    assert found == [
        f"records/accelerators/gpu-x.md:{line}:{col}: warning KB611 body: 3.35 TB/s is "
        "accelerators/gpu-x.memory_bandwidth (3.35 TB/s) typed by hand; write {{ memory_bandwidth }} "
        "so an edit to it cannot leave this stale"
    ]


def test_the_inline_value_kb611_suggests_makes_the_check_clean(kb):
    path = gpu(kb, bandwidth="4000 GB/s", body="[[src-a]] [[e]]\n\nDecode streams the weights at 4 TB/s.\n")
    found = kb.check("--strict").find("KB611")
    assert found and "write {{ memory_bandwidth | TB/s }}" in found[0]
    path.write_text(path.read_text().replace("4 TB/s.", "{{ memory_bandwidth | TB/s }}."))
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]] [[gpu-x]]\n")
    result = kb.check("--strict")
    assert result.exit_code == 0 and not result.lines


def test_a_figure_of_a_record_linked_in_the_same_sentence_is_a_warning(kb):
    gpu(kb)
    engine_quoting_gpu_x(kb)
    found = kb.check().find("KB611")
    assert len(found) == 1 and found[0].startswith("records/engines/e.md:")
    assert "write {{ accelerators/gpu-x.memory_bandwidth }}" in found[0]


def test_coincidences_stay_quiet(kb):
    """A figure of a record not linked in its sentence, one written in another unit family (a 400 Gb/s NIC is
    not a 50 GB/s copy rate), a one-digit figure that only rounds to the value, and a source's own body."""
    gpu(kb, bandwidth="52 GB/s", body="[[src-a]]\n\nAbout 52 GiB/s, or roughly 0.05 TB/s.\n")
    gpu(kb, bandwidth="50 GB/s", body="[[src-a]]\n\nA 400 Gb/s NIC.\n", id_="gpu-z")
    kb.record(
        "engines",
        "e",
        "engine",
        "kind: serving-engine\n",
        body="[[src-a]] [[gpu-x]] [[gpu-z]]\n\nThe copy runs at 52 GB/s here.\n",
    )
    kb.record(
        "sources",
        "src-b",
        "source",
        "kind: docs\npublisher: P\nurl: https://example.org/b\n",
        body="The document prints 52 GB/s for [[gpu-x]].\n",
    )
    kb.record("engines", "f", "engine", "kind: serving-engine\n", body="[[src-b]]\n")
    result = kb.check()
    assert not result.find("KB611"), result.find("KB611")


def test_figures_in_code_and_inline_values_are_not_prose(kb):
    gpu(kb, body="[[src-a]]\n\nWrite `3.35 TB/s` as {{ memory_bandwidth }}.\n\n```\nmemory bandwidth 2.0 TB/s\n```\n")
    result = kb.check()
    assert not result.find("KB610") and not result.find("KB611")


def test_a_warm_check_follows_an_edit_to_the_linked_record(kb):
    """The prose of e quotes gpu-x's figure: after gpu-x changes, a cached check must not keep the old verdict."""
    gpu_path = gpu(kb)
    engine_quoting_gpu_x(kb)
    assert len(kb.check().find("KB611")) == 1
    assert len(kb.check().find("KB611")) == 1  # from the cache
    gpu_path.write_text(gpu_path.read_text().replace("memory_bandwidth: 3.35 TB/s", "memory_bandwidth: 4.8 TB/s"))
    assert not kb.check().find("KB611")
