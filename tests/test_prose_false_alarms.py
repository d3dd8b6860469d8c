"""No false alarms on prose kb did not write (issue 46, item 7): the prose checks read which record and which
scope a sentence is about before calling a mismatch, and KB611's advice is given only to those who ask for it.

Each class of false alarm found on a converted 283-record knowledge base is a sentence of its shape here, and
each is asserted quiet; beside them, a record whose own prose misstates its own figure is still an error.
"""

from __future__ import annotations

from test_prose import line_of, opt_in

H100 = "accelerators/nvidia-h100-sxm"
H200 = "accelerators/nvidia-h200-sxm"


def accelerators(kb, body: str, advice: bool = False):
    """An H100 at 3.35 TB/s and an H200 at 4.8 TB/s (each known by a short alias), linking each other in their
    first paragraphs; the H200's body goes on with `body`. Returns the H200's path."""
    if advice:
        opt_in(kb)
    kb.source()
    kb.record(
        "accelerators",
        "nvidia-h100-sxm",
        "accelerator",
        "aliases: [H100]\nvendor: NVIDIA\nmemory_bandwidth: 3.35 TB/s\n",
        body="[[src-a]] Succeeded by [[nvidia-h200-sxm]].\n",
    )
    return kb.record(
        "accelerators",
        "nvidia-h200-sxm",
        "accelerator",
        "aliases: [H200]\nvendor: NVIDIA\nmemory_bandwidth: 4.8 TB/s\n",
        body=f"[[src-a]] The successor of [[nvidia-h100-sxm]].\n\n{body}\n",
    )


def nvlink(kb, body: str):
    """An interconnect recorded per link, as the converted knowledge base does: 25 GB/s each way, 50 GB/s
    both ways, on each of a GPU's 18 links."""
    kb.source()
    return kb.record(
        "interconnects",
        "nvlink-4",
        "interconnect",
        "kind: nvlink\nscope: scale-up\nbandwidth_per_direction: 25 GB/s\nbandwidth_both_directions: 50 GB/s\n"
        "lanes: 2\nlane_rate: 100 GT/s\nlinks: 18\n",
        body=f"[[src-a]]\n\n{body}\n",
    )


def contradiction(path, where: str, figure: str, field: str, key: str, value: str, on: str = "") -> str:
    """The KB610 line a reader sees, written out from the figures the record states."""
    line, col = line_of(path, figure, on=on)
    return (
        f"{path.relative_to(path.parents[2]).as_posix()}:{line}:{col}: error KB610 {where}: the text says {figure} "
        f"for {field}, but {key}.{field} is {value}: correct the text or the field; quote the field as "
        f"{{{{ {field} }}}} in the body, strike an old figure through (~~{figure}~~), or enter a competing figure "
        "among the field's values"
    )


# ------------------------------------------------------------------ KB611 is advice: opt-in
RIGHT_PROSE = "Decode streams the weights at 4.8 TB/s."


def test_advice_on_prose_that_is_right_is_not_given_unasked(kb):
    """The figure is the record's own and right; typing it by hand is house style, not a defect."""
    accelerators(kb, RIGHT_PROSE)
    result = kb.check("--strict")
    assert not result.find("KB611") and not result.find("KB610")
    assert result.exit_code == 0, result.lines


def test_advice_is_given_when_the_configuration_asks_for_it(kb):
    path = accelerators(kb, RIGHT_PROSE, advice=True)
    result = kb.check()
    line, col = line_of(path, "4.8 TB/s", on="Decode")
    assert result.find("KB611") == [
        f"records/{H200}.md:{line}:{col}: warning KB611 body: 4.8 TB/s is {H200}.memory_bandwidth (4.8 TB/s) "
        "typed by hand; write {{ memory_bandwidth }} so an edit to it cannot leave this stale"
    ]
    assert result.exit_code == 0  # a warning
    assert kb.check("--strict").exit_code == 1


def test_advice_opted_in_through_pyproject_as_an_error_blocks(kb):
    accelerators(kb, RIGHT_PROSE)
    kb.write("pyproject.toml", '[tool.kb]\ntitle = "T"\n\n[tool.kb.severity]\nKB611 = "error"\n')
    result = kb.check()
    assert len(result.find("KB611")) == 1 and " error KB611 " in result.find("KB611")[0]
    assert result.exit_code == 1


# ------------------------------------------------------------------ which record a sentence is about
COMPARED = "That is 43% more than the H100's 3.35 TB/s memory bandwidth."


def test_a_comparison_with_another_records_figure_is_no_contradiction(kb):
    """The H100's figure, named by its alias in the H200's record: before, read as the H200's memory
    bandwidth (4.8 TB/s) misstated."""
    accelerators(kb, COMPARED, advice=True)
    result = kb.check()
    assert not result.find("KB610"), result.find("KB610")


def test_kb611_blames_the_figure_of_the_record_the_sentence_names(kb):
    """Asked for, the advice names the H100's figure the sentence quotes, not one of the H200's. Unasked,
    it says nothing."""
    path = accelerators(kb, COMPARED)
    assert not kb.check().find("KB611")
    opt_in(kb)
    line, col = line_of(path, "3.35 TB/s")
    assert kb.check().find("KB611") == [
        f"records/{H200}.md:{line}:{col}: warning KB611 body: 3.35 TB/s is {H100}.memory_bandwidth (3.35 TB/s) "
        f"typed by hand; write {{{{ {H100}.memory_bandwidth }}}} so an edit to it cannot leave this stale"
    ]


def test_a_figure_equal_to_this_records_and_the_named_ones_is_blamed_on_the_named_one(kb):
    """Two records hold 4.8 TB/s: a sentence about the other's is the other's figure (before: this record's)."""
    opt_in(kb)
    kb.source()
    kb.record(
        "accelerators",
        "nvidia-h200-nvl",
        "accelerator",
        "aliases: [H200 NVL]\nvendor: NVIDIA\nmemory_bandwidth: 4.8 TB/s\n",
        body="[[src-a]]\n",
    )
    path = kb.record(
        "accelerators",
        "nvidia-h200-sxm",
        "accelerator",
        "aliases: [H200]\nvendor: NVIDIA\nmemory_bandwidth: 4.8 TB/s\n",
        body="[[src-a]] See also [[nvidia-h200-nvl]].\n\nThe H200 NVL keeps the 4.8 TB/s of its HBM3e.\n",
    )
    line, col = line_of(path, "4.8 TB/s", on="NVL keeps")
    other = "accelerators/nvidia-h200-nvl"
    assert kb.check().find("KB611") == [
        f"records/{H200}.md:{line}:{col}: warning KB611 body: 4.8 TB/s is {other}.memory_bandwidth (4.8 TB/s) "
        f"typed by hand; write {{{{ {other}.memory_bandwidth }}}} so an edit to it cannot leave this stale"
    ]


def test_a_warm_check_follows_a_new_alias_of_the_record_named(kb):
    """Whether "the H100's" names the H100 depends on the H100's aliases: an edit to them re-judges the H200."""
    path = accelerators(kb, COMPARED)
    assert not kb.check().find("KB610")
    h100 = kb.root / "records" / f"{H100}.md"
    h100.write_text(h100.read_text().replace("aliases: [H100]", "aliases: [Hopper]"))
    assert kb.check().find("KB610") == [contradiction(path, "body", "3.35 TB/s", "memory_bandwidth", H200, "4.8 TB/s")]


# ------------------------------------------------------------------ which scope a figure is of
def test_a_per_gpu_aggregate_beside_a_per_link_field_is_no_contradiction(kb):
    """The brief's shape, and the two that named the field: each was read against the per-link 50 GB/s."""
    nvlink(
        kb,
        "NVLink gives 900 GB/s per GPU.\n"
        "Across its 18 links NVLink gives each GPU 900 GB/s bandwidth both directions.\n"
        "The bandwidth both directions per GPU is 900 GB/s, 450 GB/s each way.\n",
    )
    result = kb.check()
    assert not result.find("KB610"), result.find("KB610")


def test_a_per_node_figure_beside_a_per_gpu_field_is_no_contradiction(kb):
    accelerators(kb, "Per node, eight of them give a memory bandwidth of 38.4 TB/s.", advice=True)
    result = kb.check()
    assert not result.find("KB610") and not result.find("KB611"), result.lines


# ------------------------------------------------------------------ real contradictions still are
def test_a_record_misstating_its_own_figure_is_still_an_error(kb):
    path = accelerators(kb, "Its memory bandwidth is 4.0 TB/s, which sets the decode rate.")
    result = kb.check()
    assert result.find("KB610") == [contradiction(path, "body", "4.0 TB/s", "memory_bandwidth", H200, "4.8 TB/s")]
    assert result.exit_code == 1


def test_a_sentence_naming_another_record_still_misstating_this_ones_figure_is_an_error(kb):
    """4.0 TB/s is neither the H100's figure (3.35 TB/s) nor the H200's (4.8 TB/s): naming the H100 does not
    make it the H100's."""
    path = accelerators(kb, "Unlike the H100, its memory bandwidth is 4.0 TB/s.")
    assert kb.check().find("KB610") == [contradiction(path, "body", "4.0 TB/s", "memory_bandwidth", H200, "4.8 TB/s")]


def test_a_per_link_record_misstating_its_own_figure_is_still_an_error(kb):
    path = nvlink(kb, "Its bandwidth both directions is 40 GB/s.")
    assert kb.check().find("KB610") == [
        contradiction(path, "body", "40 GB/s", "bandwidth_both_directions", "interconnects/nvlink-4", "50 GB/s")
    ]


def test_a_scoped_figure_is_still_read_against_a_field_whose_name_carries_the_scope(kb):
    """ "each lane" scopes the figure to a lane, and lane_rate is a lane's: 64 GT/s against 100 GT/s is wrong."""
    path = nvlink(kb, "On each lane the lane rate is 64 GT/s.")
    assert kb.check().find("KB610") == [
        contradiction(path, "body", "64 GT/s", "lane_rate", "interconnects/nvlink-4", "100 GT/s")
    ]
