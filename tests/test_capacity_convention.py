"""Unit conventions the hardware records keep (domain audit 2, items X6 and X7).

- Every accelerator's `memory_capacity` (and `memory_capacity_physical`) is the vendor's label in
  decimal units, never a binary reading of it, so the same memory compares equal across parts and
  vendors: the schema's field description says so, and a GiB value would inflate every ratio to a
  GB-labelled part by 2^30 / 10^9.
- A PCIe (or CXL-over-PCIe) link keeps its raw signalling rate and its after-line-code rate in
  differently named fields, so no figure mixes the two.
"""

import re

import pytest
import yaml
from conftest import REPO

DECIMAL_CAPACITY_UNITS = {"kB", "MB", "GB", "TB", "PB"}
QUANTITY = re.compile(r"^\s*(?P<number>[-+0-9.eE_]+)\s*(?P<unit>\S.*?)\s*$")


def frontmatter(path):
    text = path.read_text(encoding="utf-8")
    _, block, _ = text.split("---\n", 2)
    return yaml.safe_load(block)


def values(field_value):
    """The value strings of a quantity field: short form, long form, or competing values."""
    entries = field_value if isinstance(field_value, list) else [field_value]
    for entry in entries:
        yield entry["value"] if isinstance(entry, dict) else entry


def quantity(text):
    match = QUANTITY.match(str(text))
    assert match, f"not a quantity: {text!r}"
    return float(match["number"].replace("_", "")), match["unit"]


ACCELERATORS = sorted((REPO / "records" / "accelerators").glob("*.md"))
INTERCONNECTS = sorted((REPO / "records" / "interconnects").glob("*.md"))


@pytest.mark.parametrize("path", ACCELERATORS, ids=lambda p: p.stem)
def test_memory_capacity_is_a_decimal_label(path):
    data = frontmatter(path)
    for field in ("memory_capacity", "memory_capacity_physical"):
        if field not in data:
            continue
        for value in values(data[field]):
            _, unit = quantity(value)
            assert unit in DECIMAL_CAPACITY_UNITS, (
                f"{path.name}: {field} is {value!r}; the convention (schema/accelerator.schema.json) is the "
                f"vendor's label in decimal units, a binary reading or a driver byte count goes in the note"
            )


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
    assert "decimal" in description and "GiB" in description


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
