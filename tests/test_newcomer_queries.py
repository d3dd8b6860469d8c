"""The newcomer's traps with queries and ids (issue 46, item 6; newcomer report F8, F10, F13, F14), as a new
user meets them: every query README and docs/ show finds records; per-row figures are filtered row by row;
--fields keeps the order asked; a near-miss id gets the records it may mean; KB561 says the fix."""

import csv
import functools
import io
import json
import re
import shlex

import pytest
from conftest import REPO, run_kb
from plan_support import exported_records, query

from kbtools.outputs.query import FILTER


def kb(*args):
    return run_kb(*args, cwd=REPO)


def _documented_queries() -> list[tuple[str, list[str]]]:
    """(where, the filters) of every `kb query` README.md and docs/*.md show: each `kb query ...` command line,
    and each example filter they quote beside `kb query` (README's usage lines, a doc's inline `filter`)."""
    found = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            where = f"{path.relative_to(REPO)}:{number}"
            text = line.strip()
            if text.startswith("kb query ") and "FILTER" not in text:  # a command as a reader would type it
                found.append((where, shlex.split(text)[2:]))
            elif text.startswith("kb query FILTER"):  # README's usage: the example filters on the lines below it
                for below, more in enumerate(lines[number:], number + 1):
                    if more.strip().startswith("kb "):
                        break
                    for quoted, bare in re.findall(r"'([^']+)'|(\S+)", more):
                        token = quoted or bare
                        if FILTER.match(token):
                            found.append((f"{path.relative_to(REPO)}:{below}", [token]))
            elif "`kb query`" in line and "filters" in line:  # prose: "`kb query` filters on ...: `a`, `b`"
                for span in re.findall(r"`([^`]+)`", line):
                    if span != "kb query" and FILTER.match(span):
                        found.append((where, [span]))
    return found


# each query once, at the first place it is shown (README and docs repeat their flagship example)
DOCUMENTED = list({tuple(filters): (where, filters) for where, filters in reversed(_documented_queries())}.values())[
    ::-1
]


def test_the_documents_show_queries():
    shown = {filters[0] for _, filters in DOCUMENTED}
    # README's flagship example and the docs' range-end examples are among them, so none is skipped unseen
    assert {"hit_time.high<1 s", "memory_bandwidth>=4 TB/s", "ridge_point_bf16.low>=200 FLOP/B"} <= shown, shown


@pytest.mark.parametrize(("where", "filters"), DOCUMENTED, ids=[f"{w} {' '.join(f)}" for w, f in DOCUMENTED])
def test_every_documented_query_finds_records(where, filters):
    assert query(*filters), f"{where}: kb query {shlex.join(filters)} finds no record"


@pytest.fixture(scope="module")
def hit_rows(tmp_path_factory):
    """Each record's hit_time rows, as kb export writes them: {key: {row: (value, high, unit)}}."""
    out = {}
    for key, record in exported_records(tmp_path_factory.mktemp("export")).items():
        view = record["values"].get("hit_time")
        if view and "rows" in view:
            out[key] = {
                row: (item["value"], item.get("range", {}).get("high", item["value"]), item["unit"])
                for row, item in view["rows"].items()
            }
    return out


def test_a_per_row_figure_is_filtered_row_by_row_and_shows_the_rows_that_met_it(hit_rows):
    """F8: `kb query 'hit_time.high<1 s'` found nothing, though a workload's hit_time is a table with one row
    per storage tier. A record matches when one of its rows does, and the column shows those rows."""
    to_ms = {"ms": 1.0, "s": 1000.0, "µs": 0.001, "us": 0.001}
    exported = hit_rows
    fast = {
        key: {row for row, (_, high, unit) in rows.items() if high * to_ms[unit] < 1000}
        for key, rows in exported.items()
    }
    fast = {key: rows for key, rows in fast.items() if rows}
    assert fast
    done = kb("query", "hit_time.high<1 s", "--format", "json")
    assert done.returncode == 0, done.stderr
    found = {row["key"]: row for row in json.loads(done.stdout)}
    assert set(found) == set(fast)
    for key, row in found.items():
        assert set(row["hit_time.high"]) == fast[key]  # only the rows that met the filter
        assert all(v * to_ms[row["hit_time.high_unit"]] < 1000 for v in row["hit_time.high"].values())


def test_one_row_must_meet_every_filter_on_its_figure(hit_rows):
    """Two ends of one figure: a record matches only when one row meets both, not each in another row."""
    exported = hit_rows
    to_ms = {"ms": 1.0, "s": 1000.0}
    both = {
        key
        for key, rows in exported.items()
        if any(10 < value * to_ms[unit] and high * to_ms[unit] < 100 for value, high, unit in rows.values())
    }
    assert {row["key"] for row in query("hit_time>10 ms", "hit_time.high<100 ms")} == both


def test_per_row_columns_are_not_empty_in_text():
    """F8: `--fields name,hit_time,ttft` showed both columns empty."""
    done = kb("query", "type:workload", "--fields", "name,hit_time,ttft")
    assert done.returncode == 0, done.stderr
    header, first = done.stdout.splitlines()[:2]
    assert header.split() == ["key", "name", "hit_time", "ttft"]
    assert first.count("storage-tiers/") >= 2 and " ms" in first


def test_fields_keep_the_order_asked_in_text_and_csv():
    """F13: the filtered field came first, whatever --fields said."""
    text = kb("query", "kv_bytes_per_token<100 KB/token", "--fields", "name,attention,kv_bytes_per_token")
    assert text.stdout.splitlines()[0].split() == ["key", "name", "attention", "kv_bytes_per_token"]
    fields = "provider,accelerator,commitment,per_accelerator_hour"
    table = kb("query", "per_accelerator_hour<5 USD/h", "--fields", fields, "--format", "csv")
    assert table.returncode == 0, table.stderr
    header = next(csv.reader(io.StringIO(table.stdout)))
    assert header == ["key", "name", *fields.split(","), "per_accelerator_hour_unit"]


def test_a_filtered_field_not_asked_comes_after_the_fields_asked():
    text = kb("query", "kv_bytes_per_token<100 KB/token", "--fields", "attention")
    assert text.stdout.splitlines()[0].split() == ["key", "name", "attention", "kv_bytes_per_token"]


@pytest.mark.parametrize("named", ["accelerators/nvidia-h100", "nvidia-h100"])
def test_a_near_miss_id_is_offered_the_records_it_begins(named):
    """F10: `accelerators/nvidia-h100` was offered nvidia-gh200, nvidia-h20 and nvidia-a10."""
    done = kb("explain", named)
    assert done.returncode == 2
    prefix = "accelerators/" if "/" in named else ""
    said = done.stderr.split("did you mean", 1)[1]
    for variant in ("nvidia-h100-sxm", "nvidia-h100-pcie", "nvidia-h100-nvl"):
        assert f"{prefix}{variant}" in said, done.stderr
    assert "nvidia-h20," not in said and "nvidia-a10" not in said


def test_a_model_number_alone_is_offered_the_records_that_hold_it():
    """F10: `kb explain h100` said only "no record 'h100'"."""
    done = kb("explain", "h100")
    assert done.returncode == 2 and "did you mean" in done.stderr
    assert "nvidia-h100-sxm" in done.stderr


def test_a_dangling_link_is_offered_the_record_it_may_mean(kb):
    """F10: `[[example-datasheat]]` said no record, with no suggestion; kb plan's suggestions did better."""
    kb.source("example-datasheet")
    kb.source("src-a")
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[example-datasheat]] [[example-datasheet]]\n")
    found = kb.check().find("KB302")
    assert len(found) == 1
    assert found[0].endswith(
        "dangling link [[example-datasheat]]: no record 'example-datasheat' (did you mean example-datasheet?)"
    )


def test_kb561_says_which_file_to_add_the_origin_to(kb):
    """F14: KB561 said "origin is not given" and the rule, never the fix."""
    kb.record(
        "sources", "acme-x2-datasheet", "source", "kind: docs\npublisher: Acme\nurl: https://example.org/acme-x2\n"
    )
    kb.record(
        "accelerators",
        "acme-x2",
        "accelerator",
        "vendor: Acme\nmemory_bandwidth:\n  value: 3.35 TB/s\n  basis: vendor-spec\n  source: acme-x2-datasheet\n",
        sources="[acme-x2-datasheet]",
    )
    found = kb.check().find("KB561")
    assert len(found) == 1, kb.check().out
    assert "add `origin: first-party` to records/sources/acme-x2-datasheet.md" in found[0]


@functools.cache
def _dates(field: str) -> dict[str, str]:
    """record key -> the date its file writes for `field`, as ISO text (read here with PyYAML, not kb)."""
    import yaml

    found = {}
    for path in (REPO / "records").rglob("*.md"):
        head = path.read_text(encoding="utf-8").split("\n---")[0]
        if f"\n{field}:" not in head:
            continue
        value = yaml.safe_load(head.removeprefix("---")).get(field)
        if value is not None:
            key = path.relative_to(REPO / "records").with_suffix("").as_posix()
            found[key] = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return found


@pytest.mark.parametrize(
    "flt, holds",
    [
        ("updated:{day}", lambda d, day: d == day),
        ("published:{year}", lambda d, year: d.startswith(year)),
        ("published<={month}", lambda d, month: d[:7] <= month),
    ],
)
def test_a_date_filter_reads_a_date_and_a_shorter_date_as_its_period(flt, holds):
    """`kb query updated:2026-11-29` failed ("'-11-29' is not a unit"): a date was read as a number and a
    unit. A date filter matches the records whose date lies in it (`published:2024`: any day of 2024)."""
    field = flt.split(":")[0].split(">")[0].split("<")[0]
    dates = _dates(field)
    day = max(dates.values())
    args = {"day": day, "year": "2024", "month": "2023-06"}
    text = flt.format(**args)
    wanted = {key for key, date in dates.items() if holds(date, args[flt.split("{")[1].rstrip("}")])}
    found = {row["key"] for row in query(text)}
    assert found == wanted and wanted, (text, sorted(found ^ wanted)[:5])
