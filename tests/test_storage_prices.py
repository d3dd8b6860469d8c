"""Storage prices (item: storage): what holding a GB in a tier costs an hour. The repository's storage prices give
the per-GB figure a user sees as the division of the figures their sources print, and a storage price that gives
no per-GB figure (nor the instance price and size it is derived from) is an error at its file and line."""

from __future__ import annotations

import pytest

# Each record's per-GB-hour price, worked out by hand from the figures its sources print.
CPU_TABLE = "coreweave-pricing-page-2026-10-07"  # CoreWeave's North America CPU table, recorded 2026-10-07
BY_HAND = {
    # AMD Turin (9655P) High Memory: $8.18 an hour for 1,536 GB of RAM
    "prices/coreweave-turin-9655p-dram-on-demand": ("dram", 8.18 / 1536),
    # AMD Genoa (9454) General Purpose: $7.78 an hour for 1,536 GB of RAM
    "prices/coreweave-genoa-9454-remote-dram-on-demand": ("remote-dram", 7.78 / 1536),
    # AMD Turin (9655P) High Storage less High Memory: ($9.31 - $8.18) an hour for (61.44 - 7.68) TB
    "prices/coreweave-turin-9655p-local-nvme-on-demand": ("nvme", (9.31 - 8.18) / ((61.44 - 7.68) * 1000)),
    # S3 Standard, $0.023 per GB-month, over an average month of 365.25 * 24 / 12 = 730.5 hours
    "prices/aws-s3-standard-us-east-1-on-demand": ("object-store", 0.023 / 730.5),
}
S3_BAND = (0.023 / 744, 0.023 / 672)  # a 31-day month to February


@pytest.fixture(scope="module")
def exported(records) -> dict[str, dict]:
    return records


def close(a: float, b: float, rel: float = 1e-3) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b))


@pytest.mark.parametrize("key", sorted(BY_HAND))
def test_each_storage_price_is_its_sources_figures_divided(exported, key):
    medium, per_gb_hour = BY_HAND[key]
    record = exported[key]
    assert record["data"]["item"] == "storage" and record["data"]["medium"] == medium
    shown = record["values"]["per_gb_hour"]
    assert shown["unit"] == "USD/GB/h"
    assert close(shown["value"], per_gb_hour), (shown["value"], per_gb_hour)


def test_instance_prices_are_divided_by_kb_and_a_monthly_price_is_a_band_over_month_lengths(exported):
    for key in BY_HAND:
        shown = exported[key]["values"]["per_gb_hour"]
        if key.startswith("prices/coreweave-"):
            assert shown["computed"] is True and shown["formula"] == "instance_price / capacity"
            assert CPU_TABLE in shown["sources"]
    s3 = exported["prices/aws-s3-standard-us-east-1-on-demand"]["values"]["per_gb_hour"]
    assert s3["computed"] is False and s3["basis"] == "derived"
    assert close(s3["range"]["low"], S3_BAND[0]) and close(s3["range"]["high"], S3_BAND[1])


def test_every_medium_kb_plans_for_off_the_accelerator_has_a_price(exported):
    media = {r["data"].get("medium") for r in exported.values() if r["data"].get("item") == "storage"}
    assert {"dram", "nvme", "remote-dram", "object-store"} <= media


STORAGE = "item: storage\nprovider: P\nmedium: nvme\ncommitment: on-demand\nas_of: 2026-11-01\n"  # no per-GB figure


@pytest.mark.parametrize("given", ["", "instance_price: 8 USD/h\n"])
def test_a_storage_price_without_its_per_gb_figure_is_an_error_at_its_file_and_line(kb, given):
    kb.source()
    path = kb.record("prices", "no-size", "price", STORAGE + given, body="[[src-a]]\n")
    result = kb.check()
    found = result.find("KB200")
    id_line = path.read_text().splitlines().index("id: no-size") + 1  # the record's first frontmatter line
    assert len(found) == 1, result.out
    assert found[0].startswith(f"records/prices/no-size.md:{id_line}:1: error KB200 "), found[0]
    assert "'per_gb_hour' is a required property" in found[0]
    assert result.exit_code == 1


def test_the_instance_price_and_its_size_give_the_per_gb_figure_and_a_wrong_one_is_caught(kb):
    kb.source()
    path = kb.record(
        "prices", "sized", "price", STORAGE + "instance_price: 8 USD/h\ncapacity: 1600 GB\n", body="[[src-a]]\n"
    )
    result = kb.check()
    assert result.exit_code == 0 and not [line for line in result.lines if " error " in line], result.out
    # 8 USD/h over 1,600 GB is 0.005 USD/GB/h; a record that states twice that is told so at the figure
    path.write_text(path.read_text().replace("capacity: 1600 GB\n", "capacity: 1600 GB\nper_gb_hour: 0.01 USD/GB/h\n"))
    stated_line = path.read_text().splitlines().index("per_gb_hour: 0.01 USD/GB/h") + 1
    found = kb.check().find("KB500")
    assert len(found) == 1 and found[0].startswith(f"records/prices/sized.md:{stated_line}:"), found
    assert "0.005 USD/GB/h" in found[0]
