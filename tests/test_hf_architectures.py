"""kb new model --from-config on real config.json files (tests/fixtures/hf-configs, origins in ORIGINS.md):
each architecture is read as its transformers code reads it (the rules in kbtools/authoring/hf_architectures.json),
so the record's KV bytes per token and its KV bytes at a context length are the hand arithmetic written
out below. A config kb has no rule for, or with a KV key its rule does not read, is refused by name.
(Issue 27, item 2.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_attention_layouts import kv_at
from test_cost_model import explain
from test_from_config import checks_clean, from_config, written

from kbtools.authoring.hfconfig import RULES_FILE

FIXTURES = Path(__file__).parent / "fixtures" / "hf-configs"
BF16 = 2  # bytes a KV element takes in the weights' dtype, bfloat16


def per_layer(kv_heads: int, head_dim: int, dtype: int = BF16) -> int:
    """One layer's KV bytes per token: a key and a value per KV head."""
    return 2 * kv_heads * head_dim * dtype


# fixture: (KV B/token, {context: KV bytes of one sequence at that context}), each written out by hand
EXPECTED = {
    # Llama 3.1 8B: 32 layers x 8 KV heads x 128 (4096 / 32), K and V, bf16; every layer full attention
    "llama-3.1-8b": (32 * per_layer(8, 128), {4096: 32 * per_layer(8, 128) * 4096, 131072: 131072 * 131072}),
    # Llama 3.1 70B: 80 layers x 8 KV heads x 128 (8192 / 64)
    "llama-3.1-70b": (80 * per_layer(8, 128), {4096: 327680 * 4096, 131072: 327680 * 131072}),
    # Llama 3.2 1B: 16 layers x 8 KV heads x an explicit head_dim 64 (not 2048 / 32)
    "llama-3.2-1b-instruct": (16 * per_layer(8, 64), {4096: 32768 * 4096, 131072: 32768 * 131072}),
    # Mistral 7B v0.3: "sliding_window": null, so no window; 32 x 8 x 128
    "mistral-7b-instruct-v0.3": (32 * per_layer(8, 128), {4096: 131072 * 4096, 32768: 131072 * 32768}),
    # Mixtral 8x7B: "sliding_window": null as well; 32 x 8 x 128
    "mixtral-8x7b": (32 * per_layer(8, 128), {4096: 131072 * 4096, 32768: 131072 * 32768}),
    # Qwen2.5 7B: 28 layers x 4 KV heads x 128 (3584 / 28); use_sliding_window false turns the window off
    "qwen2.5-7b-instruct": (28 * per_layer(4, 128), {4096: 57344 * 4096, 32768: 57344 * 32768}),
    # Qwen3 8B: 36 layers x 8 KV heads x head_dim 128; use_sliding_window false
    "qwen3-8b": (36 * per_layer(8, 128), {4096: 147456 * 4096, 40960: 147456 * 40960}),
    # Qwen3 30B-A3B (MoE): 48 layers x 4 KV heads x 128; Qwen3-MoE does not read max_window_layers
    "qwen3-30b-a3b": (48 * per_layer(4, 128), {4096: 98304 * 4096, 40960: 98304 * 40960}),
    # Phi-1: MHA, 24 layers x 32 heads x 64 (2048 / 32), float32 weights (4 B)
    "phi-1": (24 * per_layer(32, 64, 4), {2048: 393216 * 2048, 1024: 393216 * 1024}),
    # Phi-4 (phi3 code): 40 layers x 10 KV heads x 128 (5120 / 40); "sliding_window": null
    "phi-4": (40 * per_layer(10, 128), {4096: 204800 * 4096, 16384: 204800 * 16384}),
    # DeepSeek V3, MLA: 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64), one latent per token, bf16
    "deepseek-v3": (61 * (512 + 64) * BF16, {4096: 70272 * 4096, 163840: 70272 * 163840}),
    # Kimi K2.5 (NVFP4 repack): a kimi_k25 wrapper whose text_config is DeepSeek V3's MLA, 61 x (512 + 64)
    "kimi-k2.5-nvfp4": (61 * (512 + 64) * BF16, {4096: 70272 * 4096, 262144: 70272 * 262144}),
    # gpt-oss-20b: 24 layers alternating sliding (128-token window) / full, 8 KV heads x 64;
    # its config names no dtype (MXFP4 weights): the test adds kv_dtype_size 2 B as kb asks
    "gpt-oss-20b": (
        24 * per_layer(8, 64),
        {4096: 12 * 2048 * 4096 + 12 * 2048 * 128, 131072: 12 * 2048 * 131072 + 12 * 2048 * 128},
    ),
    # Llama 4 Scout: 48 layers, every 4th full (NoPE), the other 36 chunked at attention_chunk_size 8192;
    # 8 KV heads x 128 -> 4,096 B per layer
    "llama-4-scout": (
        48 * per_layer(8, 128),
        {4096: 48 * 4096 * 4096, 1048576: 12 * 4096 * 1048576 + 36 * 4096 * 8192},
    ),
    # Llama 4 Maverick: the same attention as Scout (no no_rope_layers list, so every 4th of 48 layers is
    # full, 36 chunked at 8,192 tokens; 8 KV heads x 128); MoE on alternate layers changes no KV
    "llama-4-maverick": (
        48 * per_layer(8, 128),
        {4096: 48 * 4096 * 4096, 131072: 12 * 4096 * 131072 + 36 * 4096 * 8192},
    ),
    # Gemma 3 4B: text_config gives 34 layers and a 1,024 window; Gemma3TextConfig's defaults give 4 KV
    # heads x head_dim 256 and sliding_window_pattern 6 -> layers 6, 12, ..., 30 full (5), 29 sliding
    "gemma-3-4b-it": (
        34 * per_layer(4, 256),
        {4096: 5 * 4096 * 4096 + 29 * 4096 * 1024, 131072: 5 * 4096 * 131072 + 29 * 4096 * 1024},
    ),
    # Gemma 3 27B: 62 layers, 16 KV heads x 128; pattern 6 by default -> 10 full (6th, 12th, ... 60th), 52 at 1,024
    "gemma-3-27b-it": (
        62 * per_layer(16, 128),
        {4096: 10 * 8192 * 4096 + 52 * 8192 * 1024, 131072: 10 * 8192 * 131072 + 52 * 8192 * 1024},
    ),
    # EXAONE 4.0 32B: layer_types "LLLG": 48 sliding (4,096 window), 16 full; 8 KV heads x 128
    "exaone-4.0-32b": (
        64 * per_layer(8, 128),
        {4096: 64 * 4096 * 4096, 131072: 16 * 4096 * 131072 + 48 * 4096 * 4096},
    ),
    # OLMo 3.1 32B: layer_types, 3 sliding (4,096) then 1 full; 8 KV heads x 128 (5120 / 40)
    "olmo-3.1-32b-instruct": (
        64 * per_layer(8, 128),
        {4096: 64 * 4096 * 4096, 65536: 16 * 4096 * 65536 + 48 * 4096 * 4096},
    ),
}
# Qwen3-Next 80B-A3B: full_attention_interval 4 -> 12 full-attention layers x 2 KV heads x 256, and 36
# Gated DeltaNet layers of fixed state, 32 value heads x 128 x 128 at linear_state_dtype_size (added: 4 B)
NEXT_FULL = 12 * per_layer(2, 256)
NEXT_STATE = 36 * 32 * 128 * 128 * 4
EXPECTED["qwen3-next-80b-a3b"] = (
    NEXT_FULL,
    {4096: NEXT_FULL * 4096 + NEXT_STATE, 262144: NEXT_FULL * 262144 + NEXT_STATE},
)
# what kb asks a person to add, for fixtures whose config does not state it
ADDED = {"gpt-oss-20b": "kv_dtype_size: 2 B", "qwen3-next-80b-a3b": "linear_state_dtype_size: 4 B"}


def new_from_fixture(kb, fixture: str) -> Path:
    path = written(kb, from_config(kb, (FIXTURES / f"{fixture}.json").read_text(), fixture))
    if fixture in ADDED:
        text = path.read_text()
        path.write_text(text.replace("\nnotes: ", f"\n{ADDED[fixture]}\nnotes: ", 1))
    return path


def test_every_fixture_is_tested_or_refused():
    refused = {"nemotron-super-49b", "qwen3-vl-8b"}
    assert {p.stem for p in FIXTURES.glob("*.json")} == set(EXPECTED) | refused


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_a_real_config_gives_the_kv_its_architecture_implies(kb, fixture):
    per_token, at = EXPECTED[fixture]
    model = new_from_fixture(kb, fixture).stem  # the id kb made of the name: "llama-3.1-8b" is llama-3-1-8b
    checks_clean(kb)
    assert explain(kb, f"models/{model}.kv_bytes_per_token").startswith(
        f"models/{model}.kv_bytes_per_token = {per_token:,} B/token"
    )
    for tokens, total in at.items():
        assert kv_at(kb, model, tokens, "B") == f"{total:,} B", (fixture, tokens)


def test_falcon_7b_multi_query_is_one_kv_head(kb):
    """The issue's first case: Falcon-7B's shape as its config.json gives it (tiiuae/falcon-7b), where
    multi_query true means one KV head for the 71 query heads (modeling_falcon.py)."""
    config = {
        "model_type": "falcon",
        "hidden_size": 4544,
        "num_attention_heads": 71,
        "num_hidden_layers": 32,
        "multi_query": True,
        "new_decoder_architecture": False,
        "torch_dtype": "bfloat16",
    }
    text = written(kb, from_config(kb, config, "Falcon 7B")).read_text()
    assert "attention: mqa" in text and "num_kv_heads: 1" in text and "head_dim: 64" in text
    checks_clean(kb)
    # 32 layers x 1 KV head x 64 (4544 / 71) x K and V x 2 B, not 71 times that
    assert explain(kb, "models/falcon-7b.kv_bytes_per_token").startswith(
        f"models/falcon-7b.kv_bytes_per_token = {32 * per_layer(1, 64):,} B/token"
    )


def test_deepseek_v32_reads_its_indexer_and_top_k(kb):
    """DeepSeek-V3.2's shape as DeepseekV32Config reads it (no verbatim config.json was found in the stored
    repositories, so the keys are written out here): MLA plus an indexer of 64 heads x 128 and top-2,048."""
    config = {
        "model_type": "deepseek_v32",
        "num_hidden_layers": 61,
        "hidden_size": 7168,
        "num_attention_heads": 128,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "index_n_heads": 64,
        "index_head_dim": 128,
        "index_topk": 2048,
        "torch_dtype": "bfloat16",
    }
    result = from_config(kb, config, "DeepSeek V3.2")
    path = written(kb, result)
    text = path.read_text()
    assert "attention: mla" in text and "index_n_heads: 64" in text and "sparse_topk: 2048 token" in text
    assert "index_dtype_size (the indexer's key cache dtype is not in the config)" in result.out
    path.write_text(text.replace("sparse_topk: 2048 token\n", "sparse_topk: 2048 token\nindex_dtype_size: 1 B\n"))
    checks_clean(kb)
    # 61 layers x (512 + 64) x 2 B of latent, plus 61 x 128 indexer key bytes at 1 B
    assert explain(kb, "models/deepseek-v3-2.kv_bytes_per_token").startswith(
        f"models/deepseek-v3-2.kv_bytes_per_token = {61 * 576 * 2 + 61 * 128:,} B/token"
    )


def test_gemma_2_slides_on_alternate_layers_without_layer_types(kb):
    """The issue's second case: Gemma 2 9B's shape (google/gemma-2-9b config.json, no layer_types), where
    Gemma2Config makes every other layer sliding, starting with the first."""
    config = {
        "model_type": "gemma2",
        "hidden_size": 3584,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 256,
        "num_hidden_layers": 42,
        "sliding_window": 4096,
        "max_position_embeddings": 8192,
        "torch_dtype": "bfloat16",
    }
    text = written(kb, from_config(kb, config, "Gemma 2 9B")).read_text()
    assert "sliding_window_layers: 21" in text and "sliding_window: 4096 token" in text
    checks_clean(kb)
    # 21 full layers x 8,192 B x 8,192 tokens + 21 windowed layers x 8,192 B x 4,096 tokens
    assert kv_at(kb, "gemma-2-9b", 8192, "B") == f"{21 * per_layer(8, 256) * 8192 + 21 * per_layer(8, 256) * 4096:,} B"


def test_an_unknown_model_type_is_refused_naming_it(kb):
    result = from_config(kb, (FIXTURES / "nemotron-super-49b.json").read_text())
    assert result.exit_code == 2 and "model_type 'nemotron-nas' has no rule" in result.err, result.err
    assert "nothing written" in result.err and not (kb.root / "records/models/some-model.md").exists()


def test_a_wrapper_is_read_by_its_inner_model_type(kb):
    result = from_config(kb, (FIXTURES / "qwen3-vl-8b.json").read_text())
    assert result.exit_code == 2 and "model_type 'qwen3_vl_text' has no rule" in result.err, result.err


def test_a_config_without_a_model_type_is_refused(kb):
    result = from_config(kb, {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4})
    assert result.exit_code == 2 and "the config names no model_type" in result.err, result.err


@pytest.mark.parametrize(
    "fixture, key, value",
    [
        ("llama-3.1-8b", "multi_query", True),  # Llama's code has no such switch
        ("gemma-3-4b-it", "num_kv_shared_layers", 15),  # Gemma 3n's, not Gemma 3's
        ("qwen3-8b", "sliding_window_pattern", 4),
        ("mistral-7b-instruct-v0.3", "layer_types", ["full_attention"] * 32),  # MistralConfig ignores it
        ("llama-3.1-8b", "cross_attention_layers", [3, 8]),
        ("deepseek-v3", "block_configs", [{"attention": {"n_heads_in_group": 8}}]),
    ],
)
def test_a_kv_key_the_rule_does_not_read_is_refused_naming_it(kb, fixture, key, value):
    config = json.loads((FIXTURES / f"{fixture}.json").read_text())
    target = config.get("text_config", config)
    target[key] = value
    result = from_config(kb, config)
    assert result.exit_code == 2 and f"'{key}'" in result.err and "does not read it" in result.err, result.err
    assert "nothing written" in result.err


def test_a_null_or_false_kv_key_asks_for_nothing(kb):
    config = {**json.loads((FIXTURES / "llama-3.1-8b.json").read_text()), "multi_query": False, "sliding_window": None}
    assert from_config(kb, config).exit_code == 0


RULES = json.loads(RULES_FILE.read_text())


@pytest.mark.parametrize("model_type", sorted(RULES["architectures"]))
def test_each_rule_cites_the_transformers_files_it_follows(model_type):
    source = RULES["architectures"][model_type]["source"]
    assert re.fullmatch(r"v\d+\.\d+\.\d+", source["transformers"])
    assert source["files"] and all(
        re.fullmatch(r"src/transformers/models/\w+/(configuration|modeling)_\w+\.py", f) for f in source["files"]
    ), source


@pytest.mark.parametrize("wrapper", sorted(RULES["wrappers"]))
def test_each_wrapper_names_a_ruled_language_model_and_cites_its_class(wrapper):
    entry = RULES["wrappers"][wrapper]
    assert entry["text_model_type"] in RULES["architectures"]
    assert re.fullmatch(r"v\d+\.\d+\.\d+", entry["source"]["transformers"]) and entry["source"]["files"]


def test_the_rules_cover_at_least_25_architectures():
    assert len(RULES["architectures"]) >= 25
