"""What the kb plan tests share: the repository's records as kb exports them (the figures hand arithmetic
starts from), kb plan's JSON, and one tolerance."""

import json

import pytest
from conftest import REPO, run_kb


def exported_records(directory) -> dict:
    """Every record of the repository as `kb export --json` gives it, by key."""
    out = directory / "kb.json"
    done = run_kb("--root", str(REPO), "export", "--json", str(out))
    assert done.returncode == 0, done.stderr
    return {r["key"]: r for r in json.loads(out.read_text())["records"]}


def figure_reader(records: dict):
    """figure(key, field): a record's figure as kb reads it (in the field's canonical unit), or a plain
    value the record writes (num_layers)."""

    def figure(key, field):
        record = records[key]
        if field in record["values"]:
            return record["values"][field]["value"]
        return record["data"][field]

    return figure


def plan(*settings):
    done = run_kb("--root", str(REPO), "plan", *settings, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def tier(found, key):
    return next(t for t in found["tiers"] if t["key"] == key)["figures"]


def close(a, b, rel=1e-3):
    return a == pytest.approx(b, rel=rel)
