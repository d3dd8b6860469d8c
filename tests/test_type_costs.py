"""A type's cost specs (x-kb-costs) stand beside a record's data, never in it: `Record.data` is what the file
holds, as any frontmatter reader reads it, and `Record.costs` is what kb computes (the type's and the record's
own, its own winning by name)."""

from __future__ import annotations

import json

import yaml
from conftest import REPO

from kbtools.check.load import load_record_bytes
from kbtools.corpus import Settings
from kbtools.registry import load_registry


def _load(rel: str, text: str | None = None):
    settings = Settings(root=REPO)
    registry = load_registry(settings.schema_path, settings.root)
    raw = (text if text is not None else (REPO / rel).read_text()).encode()
    record, found = load_record_bytes(raw, rel, REPO / rel, registry, "d")
    assert record is not None and not found, found
    return record, registry


def test_a_workload_holds_only_what_its_file_says_and_computes_its_types_costs():
    rel = "records/workloads/pegaflow-llama-3-1-8b-h800.md"
    record, registry = _load(rel)
    frontmatter = (REPO / rel).read_text().split("---\n")[1]
    # the data is the file's: a YAML reader (dates aside, which kb keeps as text) reads the same keys and values
    assert json.loads(json.dumps(yaml.safe_load(frontmatter), default=str)) == json.loads(json.dumps(record.data))
    assert "costs" not in record.data
    assert list(record.costs) == list(registry.types["workload"].costs)


def test_a_records_own_cost_wins_over_its_types_by_name_and_adds_to_them():
    rel = "records/workloads/pegaflow-llama-3-1-8b-h800.md"
    text = (REPO / rel).read_text()
    own = "costs:\n  kv_bytes:\n    formula: model.kv_bytes(prefix_tokens) * 2\n    unit: GB\n  mine:\n    formula: gpus\n    unit: '1'\n"
    record, registry = _load(rel, text.replace("tiers: [", own + "tiers: [", 1))
    assert record.data["costs"] == {
        "kv_bytes": {"formula": "model.kv_bytes(prefix_tokens) * 2", "unit": "GB"},
        "mine": {"formula": "gpus", "unit": "1"},
    }
    assert record.costs["kv_bytes"]["formula"] == "model.kv_bytes(prefix_tokens) * 2"
    assert record.costs["mine"]["formula"] == "gpus"
    assert set(registry.types["workload"].costs) < set(record.costs)
