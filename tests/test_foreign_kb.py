"""No false alarms on a knowledge base kb did not write (issue 46, item 7): its dates of month or year precision
and its own source kinds.

A converted 283-record knowledge base had 10 refusals of `published: 2022-05` and 8 of source kinds the enum
lacked (`review`, `database`). A date is a day, a month or a year (defs.schema.json#/$defs/date), kept as written
and judged by its last day where its age matters (KB620); a vocabulary a project may extend says so in its schema
(`x-kb-extensible`), while one kb's formulas read stays closed."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest
from conftest import REPO, check_on, run_kb

ENGINE = "kind: serving-engine\n"
MEASURED = "metric: throughput\nvalue: 100 token/s\nmeasured_by: vendor\n"


pytestmark = pytest.mark.usefixtures("own_state")


check = check_on


def source(kb, id_: str = "src-a", published: str | None = None, kind: str = "docs"):
    """A source record as a converted knowledge base writes one, cited by an accelerator so nothing else warns."""
    extra = f"kind: {kind}\norigin: independent\npublisher: Someone\nurl: https://example.org/{id_}\n"
    if published is not None:
        extra += f"published: {published}\n"
    path = kb.record("sources", id_, "source", extra)
    kb.record("accelerators", f"gpu-{id_}", "accelerator", "vendor: V\n", body=f"As [[{id_}]] says; [[e-{id_}]].\n")
    kb.record("engines", f"e-{id_}", "engine", ENGINE, body=f"Runs on [[gpu-{id_}]].\n")
    return path


def line_of(path, key: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(f"{key}:"))


def exported(kb, tmp_path) -> dict:
    out = tmp_path / "export.json"
    assert run_kb("--root", str(kb.root), "export", "--json", str(out)).returncode == 0
    return {record["key"]: record["data"] for record in json.loads(out.read_text())["records"]}


# ---------------------------------------------------------------- dates of month or year precision


def test_a_source_published_in_a_month_checks_clean_and_keeps_its_text(kb, tmp_path):
    source(kb, published="2022-05")
    result = check(kb, "--strict")
    assert (result.exit_code, result.lines) == (0, []), result.out
    assert exported(kb, tmp_path)["sources/src-a"]["published"] == "2022-05"


@pytest.mark.parametrize(("written", "kept"), [("2022", 2022), ('"2022"', "2022")])
def test_a_source_published_in_a_year_checks_clean_and_keeps_what_yaml_reads(kb, tmp_path, written, kept):
    """`published: 2022` is the number YAML reads (python-frontmatter reads the same), `"2022"` the text."""
    source(kb, published=written)
    result = check(kb, "--strict")
    assert (result.exit_code, result.lines) == (0, []), result.out
    assert exported(kb, tmp_path)["sources/src-a"]["published"] == kept


@pytest.mark.parametrize("written", ["2022-13", "2022-02-30", "2022-5", "May 2022", "20222"])
def test_a_date_no_calendar_has_is_refused_at_its_line_saying_what_a_date_is(kb, written):
    path = source(kb, published=written)
    result = check(kb)
    refused = result.find("KB200")
    assert len(refused) == 1 and result.exit_code == 1, result.out
    assert refused[0].startswith(f"records/sources/src-a.md:{line_of(path, 'published')}:")
    assert "published: " in refused[0] and "is not a date" in refused[0]
    assert "(YYYY-MM-DD), a month (YYYY-MM) or a year (YYYY)" in refused[0]


def test_a_month_date_in_the_envelope_is_a_date_too(kb):
    """Every date field takes the shared date: the envelope's `updated` as well as a source's `published`."""
    source(kb)
    path = kb.root / "records" / "accelerators" / "gpu-src-a.md"
    path.write_text(path.read_text().replace("updated: 2026-11-29", "updated: 2026-11"))
    result = check(kb, "--strict")
    assert (result.exit_code, result.lines) == (0, []), result.out


def measurement(kb, published: str):
    source(kb)
    kb.record("engines", "e", "engine", ENGINE, body="Runs on [[gpu-src-a]]; measured in [[m]].\n")
    return kb.record(
        "measurements", "m", "measurement", MEASURED + f"published: {published}\n", body="[[e]] [[src-a]]\n"
    )


def _measurement_shelf_life() -> int:
    """The days the schema gives an engine-performance measurement (its spec without a `when`)."""
    schema = json.loads((REPO / "schema" / "measurement.schema.json").read_text())
    return next(spec["days"] for spec in schema["x-kb-shelf-life"] if "when" not in spec)


def test_a_figure_published_in_a_month_is_judged_from_the_months_last_day(kb):
    days = _measurement_shelf_life()
    path = measurement(kb, "2022-05")
    due = date(2022, 5, 31) + timedelta(days=days)  # from the last day of May, not the first
    assert not check(kb, today=(due - timedelta(days=1)).isoformat()).find("KB620")
    result = check(kb, "--format", "json", today=due.isoformat())
    found = [d for d in json.loads(result.out)["diagnostics"] if d["code"] == "KB620"]
    assert len(found) == 1 and found[0]["due"] == due.isoformat()
    assert found[0]["line"] == line_of(path, "published")
    assert found[0]["message"].startswith(
        f"published 2022-05 (a month, judged from its last day, 2022-05-31) is {days:,} days old, past the "
        f"{days:,}-day shelf life of a measurement"
    )


def test_a_figure_published_in_a_year_is_judged_from_the_years_last_day(kb):
    days = _measurement_shelf_life()
    measurement(kb, "2022")
    due = date(2022, 12, 31) + timedelta(days=days)
    assert not check(kb, today=(due - timedelta(days=1)).isoformat()).find("KB620")
    found = check(kb, today=due.isoformat()).find("KB620")
    assert len(found) == 1 and "published 2022 (a year, judged from its last day, 2022-12-31) is " in found[0]


def test_a_day_date_is_judged_from_that_day_and_worded_as_before(kb):
    days = _measurement_shelf_life()
    measurement(kb, "2022-05-10")
    due = date(2022, 5, 10) + timedelta(days=days)
    found = check(kb, today=due.isoformat()).find("KB620")
    assert len(found) == 1 and f"published 2022-05-10 is {days:,} days old" in found[0]


def test_the_python_api_reads_a_month_date_as_its_text(kb):
    """A typed view gives a day as a datetime.date and a month as the text written, never an exception."""
    import kbtools

    source(kb, published="2022-05")
    record = kbtools.open(kb.root).record("src-a")
    assert record["published"] == "2022-05"
    assert record["updated"] == date(2026, 11, 29)


def test_kb_new_still_dates_a_draft_today(kb):
    source(kb)
    done = run_kb("--root", str(kb.root), "new", "source", "--name", "Fresh draft", env={"KB_TODAY": "2026-06-01"})
    assert done.returncode == 0, done.stderr
    text = next((kb.root / "records" / "sources").glob("fresh-draft*.md")).read_text()
    assert "\nkind: datasheet" in text  # the first kind the schema lists, as kb new offered before
    updated = next(line for line in text.splitlines() if line.startswith("updated:"))
    date.fromisoformat(updated.split(":", 1)[1].split("#")[0].strip().strip("'\""))


# ---------------------------------------------------------------- vocabularies a project may extend


@pytest.mark.parametrize("kind", ["review", "database"])
def test_a_source_kind_of_the_projects_own_passes_where_the_schema_declares_it_extensible(kb, kind):
    schema = json.loads((REPO / "schema" / "source.schema.json").read_text())
    assert schema["properties"]["kind"]["x-kb-extensible"] is True
    source(kb, kind=kind)
    result = check(kb, "--strict")
    assert (result.exit_code, result.lines) == (0, []), result.out


def test_an_extensible_kind_still_has_a_shape(kb):
    path = source(kb, kind="Peer Review")
    result = check(kb)
    refused = result.find("KB200")
    assert len(refused) == 1 and refused[0].startswith(f"records/sources/src-a.md:{line_of(path, 'kind')}:")


def test_a_value_outside_a_closed_enum_is_still_an_error(kb):
    """attention is read by the KV formulas: it is no vocabulary a user extends."""
    source(kb)
    path = kb.record("models", "m", "model", "architecture: transformer\nattention: foo\n", body="From [[src-a]].\n")
    result = check(kb)
    at = [
        line for line in result.find("KB200") if line.startswith(f"records/models/m.md:{line_of(path, 'attention')}:")
    ]
    assert len(at) == 1 and "'foo'" in at[0] and result.exit_code == 1, result.out


def test_x_kb_extensible_other_than_true_is_a_schema_error(kb):
    schema_path = kb.root / "schema" / "source.schema.json"
    schema = json.loads(schema_path.read_text())
    schema["properties"]["kind"]["x-kb-extensible"] = "yes"
    schema_path.write_text(json.dumps(schema, indent=2))
    source(kb)
    found = check(kb).find("KB210")
    assert len(found) == 1 and found[0].startswith("schema/source.schema.json:") and "must be true" in found[0]


# ---------------------------------------------------------------- the same answers from a validator that is not kb


def test_an_outside_validator_reads_the_dates_and_kinds_as_kb_does():
    """The schemas are plain JSON Schema: a validator that asserts no format still holds a date to its pattern,
    and takes a kind of the project's own."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    resources = [
        (path.name, Resource.from_contents(json.loads(path.read_text())))
        for path in (REPO / "schema").glob("*.schema.json")
    ]
    registry = Registry().with_resources(resources)
    schema = json.loads((REPO / "schema" / "source.schema.json").read_text())
    validator = Draft202012Validator(schema, registry=registry)  # no format checker: formats are not asserted
    base = {
        "id": "s",
        "type": "source",
        "name": "S",
        "status": "draft",
        "confidence": 0.5,
        "updated": "2026-11-29",
        "kind": "review",
        "origin": "independent",
        "publisher": "P",
        "url": "https://example.org/s",
    }
    for good in ("2022-05", "2022", 2022, "2022-05-31"):
        assert validator.is_valid({**base, "published": good}), good
    for bad in ("2022-13", "May 2022", "2022-5", 20222):
        assert not validator.is_valid({**base, "published": bad}), bad
    assert not validator.is_valid({**base, "kind": "Peer Review"})
