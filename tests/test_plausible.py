"""Plausible ranges as schema data (x-kb-plausible): a figure outside the range real hardware has is
a warning that gives the range and its reason (KB540)."""

from __future__ import annotations

import pytest


def gpu(kb, bandwidth, extra=""):
    kb.source()
    path = kb.record("accelerators", "gpu-x", "accelerator", f"vendor: V\nmemory_bandwidth: {bandwidth}\n{extra}")
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]] [[gpu-x]]\n")
    return path


def test_sram_bandwidth_stored_as_memory_bandwidth_is_a_warning(kb):
    path = gpu(kb, "21 PB/s")
    found = kb.check().find("KB540")
    line = next(i for i, l in enumerate(path.read_text().splitlines(), 1) if l.startswith("memory_bandwidth"))
    assert len(found) == 1 and found[0].startswith(f"records/accelerators/gpu-x.md:{line}:19:")
    assert "memory_bandwidth = 21 PB/s is outside the range real values fall in (50 GB/s to 30 TB/s)" in found[0]
    assert "on-chip SRAM bandwidth" in found[0]  # the schema's reason


def test_a_real_figure_is_quiet(kb):
    gpu(kb, "3.35 TB/s")
    assert not kb.check().find("KB540")


def test_a_competing_value_outside_the_range_is_caught_too(kb):
    gpu(
        kb,
        "\n  - {value: 8 TB/s, rank: preferred, source: src-a}\n  - {value: 8 PB/s, rank: normal, source: src-a}",
        extra="",
    )
    found = kb.check().find("KB540")
    assert found and "memory_bandwidth = 8 PB/s" in found[0]


def test_a_price_typed_per_instance_in_a_per_gpu_field_is_a_warning(kb):
    kb.source()
    kb.record("accelerators", "gpu-x", "accelerator", "vendor: V\n")
    kb.record(
        "prices",
        "p",
        "price",
        "item: accelerator-hour\naccelerator: gpu-x\nprovider: P\ncommitment: on-demand\n"
        "as_of: 2026-01-01\nper_accelerator_hour: 98.32 USD/h\n",
        body="[[src-a]] [[gpu-x]]\n",
    )
    found = kb.check().find("KB540")
    assert (
        found and "per_accelerator_hour = 98.32 USD/h is outside" in found[0] and "(0.05 USD/h to 50 USD/h)" in found[0]
    )


def test_format_keywords_are_enforced(kb):
    """format: uri and format: date are checked, not only documented (jsonschema skips uri without a validator)."""
    kb.record("sources", "src-a", "source", "kind: docs\npublisher: P\nurl: not a url at all\npublished: 2026-13-01\n")
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n")
    lines = kb.check().lines
    assert any("records/sources/src-a.md:" in l and "url" in l and "uri" in l for l in lines), lines
    assert any("records/sources/src-a.md:" in l and "published" in l and "date" in l for l in lines), lines


def test_format_email_is_enforced_in_a_schema_that_declares_it(kb):
    """Any format keyword a schema declares is checked: here an email field a user adds to sources."""
    import json

    path = kb.root / "schema" / "source.schema.json"
    schema = json.loads(path.read_text())
    schema["properties"]["contact"] = {"type": "string", "format": "email"}
    path.write_text(json.dumps(schema))
    kb.record(
        "sources",
        "src-a",
        "source",
        "kind: docs\npublisher: P\nurl: https://example.org/a\ncontact: nobody-at-example\n",
    )
    kb.record(
        "sources",
        "src-b",
        "source",
        "kind: docs\npublisher: P\nurl: https://example.org/b\ncontact: someone@example.org\n",
    )
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]] [[src-b]]\n")
    found = kb.check().find("KB200")
    assert len(found) == 1 and found[0].startswith("records/sources/src-a.md:") and "'email'" in found[0], found


NO_KV_CACHE = "architecture: other\narchitecture_note: an encoder-only retriever\nattention: none\nnum_layers: 12\n"


@pytest.mark.parametrize("stated", ["", "kv_bytes_per_token: 0 B/token\n"])
def test_a_value_the_schema_fixes_for_the_record_is_not_judged_against_the_range(kb, stated):
    """A model with attention: none keeps no KV cache, and the schema's derivation says so ('0 B/token' when
    attention is none): that zero is the schema's, not a figure of a real cache. Before: KB540, derived or
    stated, on every such model of a migrated knowledge base."""
    kb.source()
    kb.record("models", "encoder", "model", NO_KV_CACHE + stated, body="[[src-a]] [[e]]\n")
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]] [[encoder]]\n")
    result = kb.check("--strict")
    assert result.exit_code == 0 and not result.lines, result.out


def test_the_same_figure_where_the_schema_does_not_fix_it_is_still_a_warning(kb):
    """A model with attention keeps a KV cache: its 0 B/token is a slip, judged against the range."""
    kb.source()
    path = kb.record(
        "models",
        "m",
        "model",
        "architecture: dense\nattention: gqa\nkv_bytes_per_token: 0 B/token\n",
        body="[[src-a]]\n",
    )
    found = kb.check().find("KB540")
    line = next(i for i, l in enumerate(path.read_text().splitlines(), 1) if l.startswith("kv_bytes_per_token"))
    assert found == [
        f"records/models/m.md:{line}:21: warning KB540 kv_bytes_per_token = 0 B/token is outside the range real "
        "values fall in (1 kB/token to 10 MB/token): KV per token of served transformer models, all layers; a "
        "per-layer figure is far smaller, a whole context far larger; check the unit and what was measured"
    ]
