"""Every measurement dated (issue 45, item 6): a measurement states the day its source published it, or names
the record that replaces it (superseded_by, history). The schema requires one of the two through a plain anyOf,
so kb and an outside validator refuse an undated measurement alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
CHECK_JSONSCHEMA = Path(sys.executable).parent / "check-jsonschema"
MEASURED = "metric: throughput\nvalue: 100 token/s\nmeasured_by: vendor\n"


def frontmatter(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n", 2)[1])


def test_every_measurement_in_the_repository_is_dated_or_kept_as_history():
    paths = sorted((REPO / "records" / "measurements").glob("*.md"))
    assert len(paths) > 50
    undated = [p.name for p in paths if not ({"published", "superseded_by"} & set(frontmatter(p)))]
    assert undated == []


def test_kb_check_reports_an_undated_measurement_at_the_record(kb):
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n")
    dated = kb.record("measurements", "m-dated", "measurement", MEASURED + "published: 2026-11-01\n", body="[[e]]\n")
    kb.record("measurements", "m-new", "measurement", MEASURED + "published: 2026-11-02\n", body="[[e]]\n")
    kb.record("measurements", "m-history", "measurement", MEASURED + "superseded_by: m-new\n", body="[[e]]\n")
    undated = kb.record("measurements", "m-undated", "measurement", MEASURED, body="[[e]]\n")
    result = kb.check()
    assert result.exit_code == 1, result.out
    errors = [line for line in result.lines if " error " in line]
    # at the frontmatter's first line (line 2, after ---): the anyOf is about the whole record, not one field
    assert errors == ["records/measurements/m-undated.md:2:1: error KB200 'published' is a required property"]
    # the dated one and the one kept as history pass the schema (an orphan warning is all they draw)
    for name in (dated.name, "m-history.md"):
        assert [line.split()[2] for line in result.lines if f"/{name}:" in line] == ["KB306"], result.out
    # dating it clears the error
    undated.write_text(
        undated.read_text().replace("measured_by: vendor\n", "measured_by: vendor\npublished: 2026-11-03\n")
    )
    assert not [line for line in kb.check().lines if " error " in line]


def test_check_jsonschema_refuses_an_undated_measurement_with_the_schema_alone(tmp_path):
    schema = REPO / "schema" / "measurement.schema.json"
    head = "id: m\ntype: measurement\nname: M\nstatus: draft\nconfidence: 0.5\nupdated: 2026-11-29\nsources: [src-a]\n"
    cases = {
        "undated": (head + MEASURED, 1),
        "dated": (head + MEASURED + "published: 2026-11-01\n", 0),
        "history": (head + MEASURED + "superseded_by: m-new\n", 0),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        run = subprocess.run(
            [str(CHECK_JSONSCHEMA), "--schemafile", str(schema), str(path)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert run.returncode == expected, f"{name}: {run.stdout}{run.stderr}"
        if expected:
            assert "'published' is a required property" in run.stdout + run.stderr, run.stdout
