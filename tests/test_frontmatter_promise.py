"""kb's standard-frontmatter promise (docs/records.md, "What kb reads is the frontmatter"): for every record,
python-frontmatter's `metadata` is the data kb reads, as `kb export --json` gives it under "data", once YAML
dates are written back as the ISO text kb keeps (PyYAML makes a `datetime.date` of `2024-03-13`; kb keeps the
text, which `date.isoformat()` gives back for every date the schemas accept). Nothing else is normalised: keys,
numbers, booleans, lists and nesting compare as they are.

A type's cost specs (`x-kb-costs`, which the workload and fit types declare) are computed for each of its
records but are no part of its data: they show in the export's "values", never in its "data"."""

from __future__ import annotations

import datetime
import json
from typing import Any

import frontmatter
import pytest
from conftest import REPO


def _as_kb_keeps(value: Any) -> Any:
    """python-frontmatter's metadata with each YAML date as the ISO text kb keeps; nothing else changed."""
    if isinstance(value, dict):
        return {key: _as_kb_keeps(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_kb_keeps(item) for item in value]
    if isinstance(value, datetime.date):  # a datetime is a date too: isoformat() either way
        return value.isoformat()
    return value


def _dates(value: Any, path: str = "") -> list[tuple[str, datetime.date]]:
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _dates(item, f"{path}.{key}".lstrip("."))]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in _dates(item, f"{path}[{index}]")]
    return [(path, value)] if isinstance(value, datetime.date) else []


def _metadata(rel: str) -> dict[str, Any]:
    return frontmatter.load(REPO / rel).metadata


def _types_with_costs() -> dict[str, list[str]]:
    """type name -> the cost names its schema supplies (x-kb-costs), read from the schema files themselves."""
    out = {}
    for path in sorted((REPO / "schema").glob("*.schema.json")):
        schema = json.loads(path.read_text())
        if isinstance(schema, dict) and schema.get("x-kb-costs"):
            out[path.name.removesuffix(".schema.json")] = list(schema["x-kb-costs"])
    return out


def test_kb_exports_every_record_file_of_the_repository(records):
    """The promise covers every record: none is left out of what kb reads."""
    files = {path.relative_to(REPO).as_posix() for path in (REPO / "records").rglob("*.md")}
    assert files and {record["path"] for record in records.values()} == files


def test_python_frontmatter_reads_every_record_as_kb_does(records):
    differ = [
        record["path"] for record in records.values() if _as_kb_keeps(_metadata(record["path"])) != record["data"]
    ]
    assert not differ, f"{len(differ)} of {len(records)} records read differently, e.g. {differ[:5]}"


def test_the_one_documented_difference_is_a_date_kept_as_its_text(records):
    """kb keeps `published: 2024-03-13` as the text '2024-03-13'; python-frontmatter gives date(2024, 3, 13)."""
    seen = 0
    for record in records.values():
        for path, date in _dates(_metadata(record["path"])):
            kept: Any = record["data"]
            for part in path.replace("[", ".[").split("."):
                kept = kept[int(part[1:-1])] if part.startswith("[") else kept[part]
            assert isinstance(kept, str) and kept == date.isoformat(), (record["path"], path, kept, date)
            seen += 1
    assert seen, "no record writes a date: the difference the docs state is untested"


@pytest.mark.parametrize("type_name", sorted(_types_with_costs()))
def test_a_types_costs_are_computed_beside_the_data_not_in_it(records, type_name):
    supplied = _types_with_costs()[type_name]
    of_type = [record for record in records.values() if record["type"] == type_name]
    assert of_type, f"no {type_name} record to hold to the promise"
    for record in of_type:
        written = _metadata(record["path"])
        # the data holds a costs block only where the file writes one, and then exactly the file's
        assert record["data"].get("costs") == written.get("costs"), record["path"]
        assert set(record["data"]) == set(written), record["path"]
        # yet the type's costs are computed for it: they are in what kb worked out, flagged as computed
        computed = [name for name in supplied if name in record["values"]]
        assert computed, f"{record['path']}: none of {type_name}'s costs {supplied} computed"
        assert all(record["values"][name]["computed"] for name in computed), record["path"]
        assert not set(computed) & set(record["data"]), record["path"]
