"""Unit conventions the hardware records keep (domain audit 2, items X6 and X7; issue 45, item 1).

- A capacity (an accelerator's `memory_capacity` and `memory_capacity_physical`, a storage tier's or a
  price's `capacity`, a system's host memory and drive capacity) is stored in the unit its vendor states
  it in: GiB or TiB where the vendor's own table says so (Google's TPU tables, AWS Neuron's pages, ROCm's
  GPU table), GB or TB where the datasheet says GB. A binary figure has to be the one its cited source
  states, as the source record's notes quote it; a decimal figure must not be a binary statement read in
  the other unit. Where one vendor states the same memory both ways, both are kept as competing values.
- A PCIe (or CXL-over-PCIe) link keeps its raw signalling rate and its after-line-code rate in
  differently named fields, so no figure mixes the two.
"""

import re

import pytest
import yaml
from conftest import REPO

DECIMAL_CAPACITY_UNITS = {"kB", "MB", "GB", "TB", "PB"}
BINARY_OF = {"kB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB", "PB": "PiB"}
BINARY_CAPACITY_UNITS = set(BINARY_OF.values())
QUANTITY = re.compile(r"^\s*(?P<number>[-+0-9.eE_]+)\s*(?P<unit>\S.*?)\s*$")

# The capacity fields of each record directory that holds hardware or what it costs.
CAPACITY_FIELDS = {
    "accelerators": ("memory_capacity", "memory_capacity_physical"),
    "storage-tiers": ("capacity",),
    "prices": ("capacity",),
    "systems": ("host_memory_capacity", "local_nvme_drive_capacity"),
}


def frontmatter(path):
    text = path.read_text(encoding="utf-8")
    _, block, _ = text.split("---\n", 2)
    return yaml.safe_load(block)


def values(field_value):
    """The value strings of a quantity field: short form, long form, or competing values."""
    entries = field_value if isinstance(field_value, list) else [field_value]
    for entry in entries:
        yield entry["value"] if isinstance(entry, dict) else entry


def entries(field_value):
    """(value, the entry's own source or None) for each value of a quantity field."""
    for entry in field_value if isinstance(field_value, list) else [field_value]:
        if isinstance(entry, dict):
            yield entry["value"], entry.get("source")
        else:
            yield entry, None


def quantity(text):
    match = QUANTITY.match(str(text))
    assert match, f"not a quantity: {text!r}"
    return float(match["number"].replace("_", "")), match["unit"]


def source_notes(name):
    """What the project quotes from a source it opened: the source record's notes, strikethroughs removed."""
    notes = frontmatter(REPO / "records" / "sources" / f"{name}.md").get("notes") or ""
    return re.sub(r"~~.*?~~", "", notes, flags=re.S)


def number_pattern(number):
    text = f"{number:g}"
    return rf"(?<![\d.,]){re.escape(text)}(?![\d.,]\d)"


def said_beside(notes, number, unit):
    """The notes give the number with the unit right after it ('96 GiB', '95GB')."""
    return re.search(number_pattern(number) + rf"\s?{unit}(?![A-Za-z/])", notes) is not None


def said_in_a_sentence(notes, number, unit):
    """The notes give the number and the unit in one sentence ('192 in a column headed GiB')."""
    unit_word = re.compile(rf"(?<![A-Za-z]){unit}(?![A-Za-z/])")
    return any(
        re.search(number_pattern(number), sentence) and unit_word.search(sentence)
        for sentence in re.split(r"(?<=[.;])\s+", notes)
    )


def capacity_cases():
    for directory, fields in CAPACITY_FIELDS.items():
        for path in sorted((REPO / "records" / directory).glob("*.md")):
            data = frontmatter(path)
            for field in fields:
                if field in data:
                    yield pytest.param(path, field, id=f"{directory}/{path.stem}.{field}")


CAPACITIES = list(capacity_cases())
INTERCONNECTS = sorted((REPO / "records" / "interconnects").glob("*.md"))


@pytest.mark.parametrize(("path", "field"), CAPACITIES)
def test_a_capacity_is_in_the_unit_its_source_states(path, field):
    data = frontmatter(path)
    listed = [name for name in data.get("sources") or () if isinstance(name, str)]
    for value, cited in entries(data[field]):
        number, unit = quantity(value)
        assert unit in DECIMAL_CAPACITY_UNITS | BINARY_CAPACITY_UNITS, f"{path.name}: {field} is {value!r}"
        if unit in BINARY_CAPACITY_UNITS:
            assert cited, f"{path.name}: {field} {value!r} is binary and names no source that states it so"
            assert said_in_a_sentence(source_notes(cited), number, unit), (
                f"{path.name}: {field} is {value!r}, but source {cited}'s notes do not quote {number:g} {unit}"
            )
            continue
        binary = BINARY_OF[unit]
        # The value's own source and the record's sources: a decimal figure is wrong when one of them states the
        # number in the binary unit and none states it in the decimal one (a configurator's byte count in GiB
        # beside a datasheet's GB label is a note, not the vendor's statement).
        said = {name: source_notes(name) for name in dict.fromkeys([cited, *listed] if cited else listed)}
        if any(said_in_a_sentence(notes, number, unit) for notes in said.values()):
            continue
        binary_sayers = [name for name, notes in said.items() if said_beside(notes, number, binary)]
        assert not binary_sayers, (
            f"{path.name}: {field} is {value!r}, but source {binary_sayers[0]}'s notes state {number:g} {binary} "
            f"and no source the record cites states {number:g} {unit}: store the quantity in the unit the vendor states"
        )


@pytest.mark.parametrize(
    ("record", "stated"),
    [
        ("aws-trainium2", "96 GiB"),
        ("aws-trainium3", "144 GiB"),
        ("google-tpu-v7-ironwood", "192 GiB"),
    ],
)
def test_a_part_whose_vendor_states_gib_only_stores_gib(record, stated):
    """AWS prints 96 GiB and 144 GiB, Google's TPU7x table 192 GiB: no decimal figure is stored beside them."""
    data = frontmatter(REPO / "records" / "accelerators" / f"{record}.md")
    assert list(values(data["memory_capacity"])) == [stated]


def test_a_vendor_that_states_both_units_is_kept_both_ways_and_contested():
    """AMD's product page says 192 GB for the MI300X and its ROCm table 192 GiB: two statements, both kept."""
    data = frontmatter(REPO / "records" / "accelerators" / "amd-instinct-mi300x.md")
    capacity = data["memory_capacity"]
    assert isinstance(capacity, list)
    assert {quantity(entry["value"]) for entry in capacity} == {(192.0, "GB"), (192.0, "GiB")}
    preferred = [entry for entry in capacity if entry["rank"] == "preferred"]
    assert [quantity(entry["value"]) for entry in preferred] == [(192.0, "GB")]
    assert data["status"] == "contested"
    # As bytes the two differ by a binary gigabyte over a decimal one, 2^30 / 10^9 = 1.0737...
    assert 192 * 2**30 / (192 * 10**9) == pytest.approx(1.0737, abs=1e-4)


def test_the_same_memory_compares_equal():
    """The H800 is the H100 SXM with capped NVLink: the same 80 GB HBM3, the same label."""
    h100 = frontmatter(REPO / "records" / "accelerators" / "nvidia-h100-sxm.md")["memory_capacity"]
    h800 = frontmatter(REPO / "records" / "accelerators" / "nvidia-h800-sxm.md")["memory_capacity"]
    assert [quantity(v) for v in values(h100)] == [quantity(v) for v in values(h800)]


def test_the_schema_states_the_convention_and_the_starter_copy_matches():
    schema = REPO / "schema" / "accelerator.schema.json"
    starter = REPO / "kbtools" / "starter" / "inference-cost" / "accelerator.schema.json"
    assert schema.read_bytes() == starter.read_bytes()
    description = yaml.safe_load(schema.read_text(encoding="utf-8"))["properties"]["memory_capacity"]["description"]
    assert "the unit the vendor states" in description and "GiB" in description


@pytest.mark.parametrize("path", INTERCONNECTS, ids=lambda p: p.stem)
def test_pcie_keeps_raw_and_line_coded_rates_apart(path):
    data = frontmatter(path)
    if data.get("kind") not in ("pcie", "cxl") or "lanes" not in data or "lane_rate" not in data:
        return
    lanes = data["lanes"]
    lane_rate, unit = quantity(next(values(data["lane_rate"])))
    assert unit == "GT/s"
    raw = lanes * lane_rate / 8  # GB/s one way, one bit per transfer per lane
    assert "raw_bandwidth_per_direction" in data, f"{path.name} names no raw one-way rate"
    stated_raw, raw_unit = quantity(next(values(data["raw_bandwidth_per_direction"])))
    assert raw_unit == "GB/s" and stated_raw == pytest.approx(raw, rel=1e-3)
    one_way, one_way_unit = quantity(next(values(data["bandwidth_per_direction"])))
    assert one_way_unit == "GB/s"
    # PCIe 3.0 to 5.0 (and CXL 1-2 over them) use 128b/130b; PCIe 6.0's flit mode has no line code
    line_code = 1.0 if lane_rate >= 64 else 128 / 130
    assert one_way == pytest.approx(raw * line_code, rel=1e-3), (
        f"{path.name}: bandwidth_per_direction must be the after-line-code rate, {raw * line_code:.3f} GB/s"
    )
    if "bandwidth_both_directions" in data:
        both, _ = quantity(next(values(data["bandwidth_both_directions"])))
        assert both == pytest.approx(2 * one_way, rel=1e-3), f"{path.name}: a raw figure in the after-line-code field"
