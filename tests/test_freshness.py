"""Freshness as data (x-kb-shelf-life): a time-bound figure past its type's shelf life is a warning that names
its age (KB620), judged against KB_TODAY or the UTC date, and every way of running a check reports it alike:
whole, scoped to a file, answered by the memo, refreshed by kb serve, and on a later day with no file edited."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import check_on

PAST_NS = 1_600_000_000 * 10**9  # 2020: far older than the racy-clean window, so the store trusts the stats
GPU_HOUR = (
    "item: accelerator-hour\naccelerator: gpu-x\nprovider: P\ncommitment: on-demand\nper_accelerator_hour: 2 USD/h\n"
)
ELECTRICITY = "item: electricity\nprovider: Grid\ncommitment: average\nper_kwh: 0.09 USD/kWh\n"
PAST_SHELF_LIFE = "KB620 as_of 2025-01-01 is {age} days old, past the 365-day shelf life of a price"


pytestmark = pytest.mark.usefixtures("own_state")


check = check_on


def price(kb, id_: str = "p", as_of: str = "2025-01-01", fields: str = GPU_HOUR, extra: str = "") -> Path:
    return kb.record("prices", id_, "price", f"{fields}as_of: {as_of}\n{extra}", body="[[src-a]] [[gpu-x]] [[e]]\n")


def small(kb, as_of: str = "2025-01-01") -> Path:
    """A source, an accelerator, an engine and one accelerator-hour price, which warn of nothing else."""
    kb.source()
    kb.record("accelerators", "gpu-x", "accelerator", "vendor: V\n")
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="Runs on [[gpu-x]] at [[p]]; see [[src-a]].\n")
    path = price(kb, as_of=as_of)
    age(kb.root)
    return path


def age(root: Path) -> None:
    for path in (root / "records").rglob("*"):
        os.utime(path, ns=(PAST_NS, PAST_NS), follow_symlinks=False)


def line_of(path: Path, key: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(f"{key}:"))


def test_a_price_past_its_shelf_life_warns_at_its_date_with_its_age_and_fails_strict(kb):
    path = small(kb)
    result = check(kb)
    found = result.find("KB620")
    assert len(found) == 1, result.out
    # 2025-01-01 to 2026-06-01 is 516 days; the column is the date's own
    assert found[0].startswith(f"records/prices/p.md:{line_of(path, 'as_of')}:8: warning ")
    assert PAST_SHELF_LIFE.format(age=516) in found[0]
    assert "(providers revise accelerator-hour prices within a year)" in found[0]  # the schema's reason
    assert "name the record that replaces it in superseded_by" in found[0]
    assert result.codes() == ["KB620"] and result.exit_code == 0  # a warning: only --strict fails on it
    assert check(kb, "--strict").exit_code == 1


def test_a_price_within_its_shelf_life_is_quiet_and_passes_strict(kb):
    small(kb, as_of="2025-12-01")
    result = check(kb, "--strict")
    assert (result.exit_code, result.lines) == (0, []), result.out


def test_kb_today_moves_the_boundary_to_the_day_the_shelf_life_ends(kb):
    small(kb)  # 2025-01-01 plus 365 days is 2026-01-01
    assert not check(kb, today="2025-12-31").find("KB620")
    on_the_day = check(kb, today="2026-01-01").find("KB620")
    assert len(on_the_day) == 1 and PAST_SHELF_LIFE.format(age=365) in on_the_day[0]
    later = check(kb, today="2028-01-01").find("KB620")
    assert len(later) == 1 and PAST_SHELF_LIFE.format(age="1,095") in later[0]


def test_without_kb_today_the_age_is_judged_against_todays_date(kb):
    small(kb, as_of="2000-01-01")  # past its shelf life on any day this test can run
    found = check(kb, today=None).find("KB620")
    assert len(found) == 1 and "as_of 2000-01-01 is " in found[0] and " days old, past the 365-day" in found[0]


def test_a_record_naming_its_replacement_in_superseded_by_is_not_judged(kb):
    small(kb)
    price(kb, "p-new", as_of="2026-05-01")
    old = price(kb, as_of="2025-01-01", extra="superseded_by: p-new\n")
    age(kb.root)
    result = check(kb, "--strict")
    assert (result.exit_code, result.lines) == (0, []), result.out
    # the reference is checked like any other: naming no record is an error, and still no KB620
    price(kb, as_of="2025-01-01", extra="superseded_by: p-gone\n")
    broken = check(kb)
    assert [line.split(":")[1] for line in broken.find("KB300")] == [str(line_of(old, "superseded_by"))]
    assert not broken.find("KB620") and broken.exit_code == 1


def test_a_when_spec_gives_a_years_average_electricity_price_its_own_shelf_life(kb):
    small(kb, as_of="2026-05-01")  # the GPU-hour price stays within its shelf life throughout
    power = price(kb, "grid", as_of="2024-12-31", fields=ELECTRICITY)
    age(kb.root)
    # 517 days: past a GPU-hour price's 365, within the 730 the schema gives a year's average electricity price
    assert not check(kb, today="2026-06-01").find("KB620")
    found = check(kb, today="2027-01-01").find("KB620")
    assert len(found) == 1 and found[0].startswith(f"records/prices/grid.md:{line_of(power, 'as_of')}:8:")
    assert "as_of 2024-12-31 is 731 days old, past the 730-day shelf life of a price" in found[0]
    assert "published about ten months after the year ends" in found[0]


def test_a_measurement_without_a_published_date_is_not_judged(kb):
    small(kb, as_of="2025-12-01")
    measured = "metric: throughput\nvalue: 100 token/s\nmeasured_by: vendor\n"
    kb.record("measurements", "m-old", "measurement", measured + "published: 2020-01-01\n", body="[[e]] [[src-a]]\n")
    kb.record("measurements", "m-undated", "measurement", measured, body="[[e]] [[src-a]]\n")
    found = check(kb).find("KB620")
    assert len(found) == 1 and found[0].startswith("records/measurements/m-old.md:")
    assert "published 2020-01-01 is 2,343 days old, past the 730-day shelf life of a measurement" in found[0]


def test_the_finding_is_the_same_from_a_cold_run_a_warm_store_the_memo_and_a_scoped_run(kb, monkeypatch):
    small(kb)
    cold = check(kb, "--no-cache")
    assert cold.find("KB620")
    assert check(kb).out == cold.out  # fills the store and the memo
    import kbtools.check.pipeline as pipeline
    from kbtools.check.run.driver import CheckRun

    def no_pipeline(*_args, **_kw):
        raise AssertionError("the pipeline ran although nothing changed")

    with monkeypatch.context() as patched:
        patched.setattr(pipeline, "start_run", no_pipeline)
        assert check(kb).out == cold.out  # the memo's answer
    scoped = check(kb, str(kb.root / "records/prices/p.md"))
    assert scoped.find("KB620") == cold.find("KB620") and scoped.exit_code == cold.exit_code
    # an edit elsewhere: a scoped run judges the engine again, and the price's finding comes from the store
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="Runs on [[gpu-x]] at [[p]] (see [[src-a]]).\n")
    age(kb.root)
    with monkeypatch.context() as patched:
        patched.setattr(CheckRun, "_whole_run", lambda *_: pytest.fail("a whole run, where a scoped one answers"))
        assert check(kb).find("KB620") == cold.find("KB620")


def test_a_day_passing_with_no_file_edited_is_seen_by_the_store_and_the_memo(kb):
    small(kb)  # due 2026-01-01
    before = check(kb, today="2025-12-31")
    assert before.lines == [] and check(kb, today="2025-12-31").lines == []  # cold, then from the memo
    after = check(kb, today="2026-01-02")  # nothing changed on disk: the memo must not hide the finding
    assert len(after.find("KB620")) == 1 and PAST_SHELF_LIFE.format(age=366) in after.out
    again = check(kb, today="2026-03-01")  # nor freeze its age
    assert PAST_SHELF_LIFE.format(age=424) in again.out
    assert check(kb, str(kb.root / "records/prices/p.md"), today="2026-03-01").find("KB620") == again.find("KB620")
    assert check(kb, today="2025-12-31").lines == []  # and a day before it is due again: gone
    assert check(kb, "--no-cache", today="2026-03-01").out == again.out


def test_kb_serve_live_check_reports_what_kb_check_does(kb, monkeypatch):
    from kbtools.check.run.live import LiveCorpus
    from kbtools.corpus import Settings

    small(kb)
    monkeypatch.setenv("KB_TODAY", "2026-06-01")
    live = LiveCorpus(Settings.configured(kb.root))
    shown = [d for d in live.refresh().diagnostics if d.code == "KB620"]
    expected = check(kb).find("KB620")
    assert [f"{d.path}:{d.line}:{d.column}: warning KB620 {d.message}" for d in shown] == expected
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="Runs on [[gpu-x]] at [[p]] (see [[src-a]]).\n")
    age(kb.root)
    monkeypatch.setenv("KB_TODAY", "2027-06-01")  # a later day and an edit: a scoped refresh keeps the finding
    refreshed = [d for d in live.refresh().diagnostics if d.code == "KB620"]
    assert live.last_was_scoped
    assert [f"{d.path}:{d.line}:{d.column}: warning KB620 {d.message}" for d in refreshed] == check(
        kb, today="2027-06-01"
    ).find("KB620")
    assert "881 days old" in refreshed[0].message


def test_json_output_carries_the_due_date(kb):
    small(kb)
    found = [d for d in json.loads(check(kb, "--format", "json").out)["diagnostics"] if d["code"] == "KB620"]
    assert len(found) == 1 and found[0]["due"] == "2026-01-01" and "516 days old" in found[0]["message"]


@pytest.mark.parametrize("value", ["2026-13-01", "tomorrow", "2026-6-1"])
def test_a_bad_kb_today_is_a_clean_configuration_error(kb, value):
    small(kb)
    for result in (
        check(kb, today=value),
        check(kb, today=value),
        check(kb, str(kb.root / "records/prices/p.md"), today=value),
    ):
        assert result.exit_code == 1 and result.err == "", result.err
        assert result.codes() == ["KB121"], result.out
        assert result.lines[0].startswith(f"KB_TODAY:1:1: error KB121 KB_TODAY={value!r} is not a date (YYYY-MM-DD)")
    assert check(kb).find("KB620")  # and a good value afterwards is judged again, not the stored error


def _edit_price_schema(kb, change) -> None:
    path = kb.root / "schema" / "price.schema.json"
    schema = json.loads(path.read_text())
    change(schema)
    path.write_text(json.dumps(schema, indent=2))


@pytest.mark.parametrize(
    "annotation, problem",
    [
        ({"field": "provider", "days": 365}, 'field "provider" is not a date field of price'),
        ({"field": "as_of", "days": "a year"}, 'days is a whole number of days from 1 to 36,525, not "a year"'),
        ({"field": "as_of", "days": 0}, "days is a whole number of days from 1 to 36,525, not 0"),
        ({"field": "as_of", "days": 365, "when": {"itme": "electricity"}}, 'when.itme: "itme" is not a field'),
        ({"field": "as_of", "days": 365, "shelf": 1}, 'unknown key "shelf"'),
        ([{"field": "as_of", "days": 365}, {"field": "as_of", "days": 30}], "the specs after it never do"),
        ("365 days", "is an object {field, days, when, reason} or a list of them, not a string"),
    ],
)
def test_a_bad_shelf_life_annotation_is_a_schema_error_and_judges_nothing(kb, annotation, problem):
    small(kb)
    _edit_price_schema(kb, lambda schema: schema.update({"x-kb-shelf-life": annotation}))
    result = check(kb)
    found = [line for line in result.find("KB210") if "x-kb-shelf-life" in line]
    assert len(found) == 1 and found[0].startswith("schema/price.schema.json:") and problem in found[0], result.out
    assert not result.find("KB620") and result.err == ""


def test_a_type_without_a_shelf_life_is_not_judged(kb):
    small(kb)
    _edit_price_schema(kb, lambda schema: schema.pop("x-kb-shelf-life"))
    assert check(kb, "--strict").lines == []


def test_any_type_may_take_a_shelf_life_on_an_envelope_date(kb):
    small(kb, as_of="2026-12-01")
    path = kb.root / "schema" / "engine.schema.json"
    schema = json.loads(path.read_text())
    schema["x-kb-shelf-life"] = {"field": "updated", "days": 30, "reason": "engines ship monthly"}
    path.write_text(json.dumps(schema, indent=2))
    found = check(kb, today="2027-01-01").find("KB620")
    assert len(found) == 1 and found[0].startswith("records/engines/e.md:7:10: warning KB620 ")
    # the engine schema has no superseded_by, so the message does not offer it
    assert found[0].endswith(
        "updated 2026-11-29 is 33 days old, past the 30-day shelf life of an engine (engines ship monthly); "
        "renew it from its source"
    )


def test_a_shelf_life_on_a_shared_schema_is_a_schema_error(kb):
    small(kb)
    path = kb.root / "schema" / "envelope.schema.json"
    schema = json.loads(path.read_text())
    schema["x-kb-shelf-life"] = {"field": "updated", "days": 365}
    path.write_text(json.dumps(schema, indent=2))
    found = [line for line in check(kb).find("KB210") if "x-kb-shelf-life" in line]
    assert len(found) == 1 and found[0].startswith("schema/envelope.schema.json:")
    assert "belongs on a record type's schema (one with x-kb-dir)" in found[0]


def test_a_replacement_that_is_itself_replaced_is_named_and_a_warm_check_sees_the_change(kb):
    """KB311: p-2023 names p-2024 as its replacement, and p-2024 is itself superseded by p-2025: the warning
    stands at p-2023's superseded_by. A warm check (the store's judgement of p-2023 kept) sees it when
    p-2024 gains its superseded_by, and it goes when p-2023 names p-2025."""
    small(kb)
    old = price(kb, "p-2023", "2023-01-01", extra="superseded_by: p-2024\n")
    middle = price(kb, "p-2024", "2024-01-01")
    price(kb, "p-2025", "2025-06-01")
    assert not check(kb).find("KB311")
    middle.write_text(middle.read_text().replace("as_of: 2024-01-01\n", "as_of: 2024-01-01\nsuperseded_by: p-2025\n"))
    found = check(kb).find("KB311")
    assert found == [
        f"records/prices/p-2023.md:{line_of(old, 'superseded_by')}:16: warning KB311 superseded_by: prices/p-2024 "
        "is itself superseded by 'p-2025'; name the record that replaces this one now"
    ], found
    old.write_text(old.read_text().replace("superseded_by: p-2024", "superseded_by: p-2025"))
    assert not check(kb).find("KB311")
