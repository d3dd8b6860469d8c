"""What the kb plan and kb query tests share: the repository's records as kb exports them (the figures hand
arithmetic starts from), kb plan's JSON and kb query's rows over one checked corpus a worker, and one tolerance."""

import functools
import json

import pytest
from conftest import REPO, run_kb


def exported_records(directory, root=REPO) -> dict:
    """Every record of the knowledge base at `root` (the repository's) as `kb export --json` gives it, by key."""
    out = directory / "kb.json"
    done = run_kb("--root", str(root), "export", "--json", str(out))
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


def _fitted(records: dict, key: str, field: str) -> float:
    """The value of the fit a record links in `field`, as a fraction, else 1 (no fit: the nominal figure)."""
    fit = records[key]["data"].get(field)
    if not fit:
        return 1.0
    value = records[fit if "/" in fit else f"fits/{fit}"]["values"]["value"]
    return value["value"] * {"1": 1.0, "percent": 0.01}[value["unit"]]


def attainable_read(records: dict, tier_key: str) -> float:
    """The share of its path's rate a hit from the tier attains: its fit's, else 1."""
    return _fitted(records, tier_key, "read_fit")


def attainable_prefill(records: dict, accelerator_key: str) -> float:
    """The share of its dense peak a prefill attains on the accelerator: its fit's, else 1."""
    return _fitted(records, accelerator_key, "prefill_fit")


@functools.cache
def _repository_corpus():
    """The repository checked once a test worker, every value decoded, and its store let go at once: a run held
    open would keep other kb processes of the worker waiting on the store."""
    from kbtools.check.pipeline import checked, start_run
    from kbtools.corpus import Settings

    run = start_run(Settings.configured(REPO), use_cache=True, complete=True)
    try:
        return checked(run)
    finally:
        run.close()


def plan(*settings):
    """kb plan's JSON for a workload record and/or KEY=VALUE settings, made as `kb plan --format json` makes it
    (kbtools.cli.run_plan) over one checked corpus a worker: the checks of the command's own output, exit code and
    messages are test_plan's, by the command itself."""
    from kbtools.outputs.plan import as_json, make_plan, workload

    corpus = _repository_corpus()
    base = [s for s in settings if "=" not in s]
    found = make_plan(corpus, workload(corpus, base[0] if base else None, [s for s in settings if "=" in s]))
    assert not found.diagnostics, [d.message for d in found.diagnostics]
    return json.loads(as_json(found))


def query(*filters: str, fields: str = "") -> list[dict]:
    """kb query's JSON rows, made as `kb query FILTER... --format json` makes them (kbtools.cli.run_query) over
    one checked corpus a worker; the command itself is run by the tests of its wiring and exit codes."""
    from kbtools.outputs.query import format_rows, run_query

    columns, rows = run_query(_repository_corpus(), list(filters), [f for f in fields.split(",") if f])
    return json.loads(format_rows(columns, rows, "json"))


def tier(found, key):
    return next(t for t in found["tiers"] if t["key"] == key)["figures"]


def close(a, b, rel=1e-3):
    return a == pytest.approx(b, rel=rel)
