"""kb new model --from-config: a Hugging Face config.json on disk becomes a model record that cites the
user's source and passes kb check; what the config does not settle is named, contradictions refuse."""

from __future__ import annotations

import json

import pytest
from test_cost_model import explain

GQA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "num_hidden_layers": 80,
    "hidden_size": 8192,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "intermediate_size": 28672,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
    "rope_theta": 500000.0,
}
MHA = {
    "model_type": "llama",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "intermediate_size": 11008,
    "vocab_size": 32000,
    "torch_dtype": "float16",
}
MLA = {
    "model_type": "deepseek_v3",
    "num_hidden_layers": 61,
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "moe_intermediate_size": 2048,
    "vocab_size": 129280,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 163840,
}
SLIDING = {
    "model_type": "gpt_oss",
    "num_hidden_layers": 4,
    "hidden_size": 2880,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
    "num_local_experts": 32,
    "num_experts_per_tok": 4,
    "torch_dtype": "bfloat16",
    "vocab_size": 201088,
}
HYBRID = {
    "model_type": "qwen3_next",
    "num_hidden_layers": 48,
    "hidden_size": 2048,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "full_attention_interval": 4,
    "linear_num_value_heads": 32,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "shared_expert_intermediate_size": 512,
    "torch_dtype": "bfloat16",
}


def from_config(kb, config, name="Some Model", extra=()):
    kb.source()
    path = kb.root / "config.json"
    path.write_text(json.dumps(config, indent=2) if not isinstance(config, str) else config)
    return kb.run("new", "model", "--name", name, "--source", "src-a", "--from-config", str(path), *extra)


def written(kb, result):
    assert result.exit_code == 0, result.err
    return kb.root / result.out.split()[1]


def checks_clean(kb):
    result = kb.check()
    assert result.exit_code == 0 and "0 errors" in result.out, result.out


def test_gqa_config_maps_kv_heads_and_head_width(kb):
    path = written(kb, result := from_config(kb, GQA, "Llama 3.1 70B"))
    text = path.read_text()
    assert "attention: gqa" in text and "num_kv_heads: 8" in text and "head_dim: 128" in text
    assert "sources: [src-a]" in text and "max_context: 131072 token" in text and "kv_dtype_size: 2 B" in text
    assert "head_dim is hidden_size ÷ num_attention_heads (8192 ÷ 64)" in text
    assert "not in the config: params_total and params_active" in result.out
    checks_clean(kb)
    # the record's KV per token is derived from what was read: 2 x 80 x 8 x 128 x 2 B
    assert explain(kb, "models/llama-3-1-70b.kv_bytes_per_token").startswith(
        "models/llama-3-1-70b.kv_bytes_per_token = 327,680 B/token"
    )


def test_a_config_without_kv_heads_is_mha_and_says_so(kb):
    text = written(kb, from_config(kb, MHA)).read_text()
    assert "attention: mha" in text and "num_kv_heads: 32" in text
    assert "num_key_value_heads is absent" in text
    checks_clean(kb)


def test_mla_config_maps_its_ranks_and_experts(kb):
    text = written(kb, from_config(kb, MLA, "DeepSeek V3")).read_text()
    assert "attention: mla" in text and "kv_lora_rank: 512" in text and "qk_rope_head_dim: 64" in text
    assert (
        "architecture: moe" in text
        and "num_experts: 256" in text
        and "experts_per_token: 8" in text
        and "shared_experts: 1" in text
    )
    checks_clean(kb)
    assert explain(kb, "models/deepseek-v3.kv_bytes_per_token").startswith(
        "models/deepseek-v3.kv_bytes_per_token = 70,272 B/token"
    )


def test_sliding_window_layers_come_from_layer_types(kb):
    text = written(kb, from_config(kb, SLIDING, "Tiny OSS")).read_text()
    assert "sliding_window_layers: 2" in text and "sliding_window: 128 token" in text and "window_kind: sliding" in text
    assert "head_dim: 64" in text and "is given explicitly and is not hidden_size ÷ heads (2880 ÷ 64)" in text
    checks_clean(kb)
    assert explain(kb, "models/tiny-oss.kv_bytes_per_token_growing").startswith(
        "models/tiny-oss.kv_bytes_per_token_growing = 4,096 B/token"
    )


def test_hybrid_linear_attention_from_the_full_attention_interval(kb):
    text = written(kb, from_config(kb, HYBRID, "Next 80B")).read_text()
    assert "linear_attention_layers: 36" in text and "linear_num_value_heads: 32" in text
    assert "shared_experts: 1" in text
    checks_clean(kb)
    assert explain(kb, "models/next-80b.full_attention_layers").startswith("models/next-80b.full_attention_layers = 12")


def test_unknown_keys_are_listed_not_dropped_silently(kb):
    result = from_config(kb, {**GQA, "mystery_knob": 3, "another_one": True})
    assert "config keys kb does not map: another_one, mystery_knob" in result.out


@pytest.mark.parametrize(
    "config, message",
    [
        ({**GQA, "num_key_value_heads": 7}, "num_attention_heads 64 is not a multiple of num_key_value_heads 7"),
        ({**SLIDING, "layer_types": ["full_attention"]}, "layer_types lists 1 layers, but num_hidden_layers is 4"),
        (
            {**MLA, "qk_rope_head_dim": None},  # absent, DeepseekV3Config's default (64) would stand in
            "deepseek_v3 is MLA, but qk_rope_head_dim is missing",
        ),
        ({**GQA, "num_hidden_layers": "eighty"}, "'num_hidden_layers' is 'eighty'; it must be a whole number"),
        ({**MLA, "num_experts_per_tok": None}, "has 256 experts but no num_experts_per_tok"),
        (
            {**GQA, "sliding_window": 4096, "max_window_layers": 28},
            "'sliding_window' (a window some layers keep) is set, but kb's rule for model_type 'llama'",
        ),
        ('{"num_hidden_layers": 2,\n  "hidden_size": }', "config.json:2:18: not valid JSON"),
    ],
)
def test_contradictory_or_broken_configs_write_nothing(kb, config, message):
    result = from_config(kb, config)
    assert result.exit_code == 2 and message in result.err and "nothing written" in result.err, result.err
    assert not (kb.root / "records/models/some-model.md").exists()


def test_only_types_that_declare_a_config_reader_accept_one(kb):
    kb.source()
    (kb.root / "config.json").write_text(json.dumps(GQA))
    result = kb.run("new", "engine", "--name", "E", "--source", "src-a", "--from-config", str(kb.root / "config.json"))
    assert result.exit_code == 2 and "declares no x-kb-from-config (types that can: model)" in result.err
