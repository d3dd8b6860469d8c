"""A schema that real data fits: 'other' with a note where an enum is outgrown, a model with no KV
cache, and a bandwidth whose direction the source does not state."""

from __future__ import annotations

from test_cost_model import explain


def test_other_needs_a_note_saying_what_it_is(kb):
    kb.source()
    path = kb.record("interconnects", "fabric", "interconnect", "kind: other\nscope: scale-up\n", body="[[src-a]]\n")
    result = kb.check()
    errors = [l for l in result.lines if " error " in l]
    assert errors and errors[0].startswith("records/interconnects/fabric.md:") and "kind_note" in errors[0], result.out
    path.write_text(
        path.read_text().replace("kind: other\n", "kind: other\nkind_note: an optical circuit switch between pods\n")
    )
    assert not [l for l in kb.check().lines if " error " in l]


def test_a_model_without_a_kv_cache_says_so(kb):
    kb.source()
    kb.record(
        "models",
        "encoder",
        "model",
        "architecture: other\narchitecture_note: an encoder-only retriever\nattention: none\nnum_layers: 12\n",
        body="[[src-a]]\n",
    )
    result = kb.check()
    assert result.exit_code == 0 and "0 errors" in result.out, result.out
    assert explain(kb, "models/encoder.kv_bytes_per_token").startswith("models/encoder.kv_bytes_per_token = 0 B/token")


def test_a_bandwidth_of_unstated_direction_is_kept_but_prices_nothing(kb):
    kb.source()
    kb.record(
        "interconnects",
        "link-x",
        "interconnect",
        "kind: neuronlink\nscope: scale-up\nbandwidth_direction_unstated: 1.28 TB/s\n",
        body="[[src-a]]\n",
    )
    result = kb.check()
    assert result.exit_code == 0 and "0 errors" in result.out, result.out
    text = explain(kb, "interconnects/link-x")
    assert "bandwidth_direction_unstated = 1,280 GB/s" in text and "bandwidth_per_direction" not in text
