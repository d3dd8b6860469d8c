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
import yaml
from conftest import REPO
from test_attention_layouts import kv_at
from test_cost_model import explain
from test_from_config import checks_clean, from_config, written

from kbtools.authoring.hfarchitecture import RULES_FILE

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
    # Phi-1: MHA, 24 layers x 32 heads x 64 (2048 / 32); float32 weights, served and cached in bfloat16 (2 B)
    "phi-1": (
        24 * per_layer(32, 64),
        {2048: 196608 * 2048, 1024: 196608 * 1024},
    ),
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
FP32 = 4  # bytes a state element takes in float32
# Qwen3-Next 80B-A3B: full_attention_interval 4 -> 12 full-attention layers x 2 KV heads x 256, and 36
# Gated DeltaNet layers of fixed state, 32 value heads x 128 x 128, kept in float32 as modeling_qwen3_next.py
# keeps it (the config names no state dtype): 75,497,472 B, the 75.5 MB the issue found left out
NEXT_FULL = 12 * per_layer(2, 256)
NEXT_STATE = 36 * 32 * 128 * 128 * FP32
EXPECTED["qwen3-next-80b-a3b"] = (
    NEXT_FULL,
    {4096: NEXT_FULL * 4096 + NEXT_STATE, 32768: NEXT_FULL * 32768 + NEXT_STATE},
)
# Nemotron-H 56B: hybrid_override_pattern has 118 blocks, 54 Mamba-2 (M), 54 MLP (-), 10 attention (*); the
# attention blocks cache 8 KV heads x 128 (head_dim absent: NemotronHConfig's default 128); each Mamba-2 block
# keeps 256 heads x 64 x a 256-wide state in float32 (mamba_ssm_cache_dtype absent: the class default)
H56_KV = 10 * per_layer(8, 128)
H56_STATE = 54 * 256 * 64 * 256 * FP32
EXPECTED["nemotron-h-56b-base-8k"] = (H56_KV, {1024: H56_KV * 1024 + H56_STATE, 8192: H56_KV * 8192 + H56_STATE})
# Nemotron 3 Nano 30B-A3B: 52 blocks, 23 Mamba-2 (M), 23 MoE (E), 6 attention (*); 2 KV heads x 128; Mamba-2
# state 64 heads x 64 x 128, float32 as mamba_ssm_cache_dtype says
NANO_KV = 6 * per_layer(2, 128)
NANO_STATE = 23 * 64 * 64 * 128 * FP32
EXPECTED["nemotron-3-nano-30b-a3b"] = (
    NANO_KV,
    {4096: NANO_KV * 4096 + NANO_STATE, 262144: NANO_KV * 262144 + NANO_STATE},
)
# Kimi K2 (bare, model_type kimi_k2 with an auto_map to remote code): DeepSeek V3's MLA, 61 x (512 + 64)
EXPECTED["kimi-k2-instruct"] = (61 * (512 + 64) * BF16, {4096: 70272 * 4096, 131072: 70272 * 131072})
# Qwen3.5 (issue 45, item 5): layer_types, 3 Gated DeltaNet layers to 1 gated full-attention layer; the full
# layers cache KV heads x 256; each Gated DeltaNet layer keeps value heads x 128 x 128 in float32 (the configs'
# mamba_ssm_dtype, and what modeling_qwen3_5*.py keeps)
QWEN35 = {  # fixture: (full-attention layers, KV heads, linear layers, linear value heads)
    "qwen3.5-27b": (16, 4, 48, 48),
    "qwen3.5-35b-a3b": (10, 2, 30, 32),
    "qwen3.5-122b-a10b": (12, 2, 36, 64),
    "qwen3.5-397b-a17b": (15, 2, 45, 64),
}
for fixture, (full, kv_heads, linear, value_heads) in QWEN35.items():
    kv, state = full * per_layer(kv_heads, 256), linear * value_heads * 128 * 128 * FP32
    EXPECTED[fixture] = (kv, {8192: kv * 8192 + state, 262144: kv * 262144 + state})
# MiniMax-M2.5 and M2.7: 62 layers, all softmax attention over the whole context, 8 KV heads x 128; M2.5's copy
# names no dtype, so the test adds the 2 B its record states
EXPECTED["minimax-m2.5"] = (62 * per_layer(8, 128), {32768: 253952 * 32768, 196608: 253952 * 196608})
EXPECTED["minimax-m2.7"] = (62 * per_layer(8, 128), {32768: 253952 * 32768, 204800: 253952 * 204800})
# GLM-5 and GLM-5.1: 78 layers of MLA (512 + 64, bf16) plus a 128-wide indexer key on each of the 78 layers at the
# 1 B the records state (the configs name no indexer dtype)
GLM5 = 78 * (512 + 64) * BF16 + 78 * 128 * 1
EXPECTED["glm-5"] = (GLM5, {32768: GLM5 * 32768, 202752: GLM5 * 202752})
EXPECTED["glm-5.1"] = (GLM5, {32768: GLM5 * 32768, 202752: GLM5 * 202752})
# Qwen3-VL 8B (dense) and 30B-A3B (MoE) text models: every layer full attention; 36 x 8 KV heads x 128 and
# 48 x 4 x 128
EXPECTED["qwen3-vl-8b"] = (36 * per_layer(8, 128), {4096: 147456 * 4096, 262144: 147456 * 262144})
EXPECTED["qwen3-vl-30b-a3b"] = (48 * per_layer(4, 128), {4096: 98304 * 4096, 262144: 98304 * 262144})
# Gemma 4 26B A4B (issue 45, item 4): layer_types, 5 x [5 sliding at a 1,024-token window, 1 full]; the 25 sliding
# layers cache 8 KV heads x 256 (num_key_value_heads, head_dim), the 5 full layers 2 x 512 (attention_k_eq_v set, so
# num_global_key_value_heads, and global_head_dim): 8,192 and 4,096 B per token a layer in bf16
G4_SLIDING, G4_FULL = per_layer(8, 256), per_layer(2, 512)
EXPECTED["gemma-4-26b-a4b"] = (
    25 * G4_SLIDING + 5 * G4_FULL,
    {4096: 5 * G4_FULL * 4096 + 25 * G4_SLIDING * 1024, 262144: 5 * G4_FULL * 262144 + 25 * G4_SLIDING * 1024},
)
# Gemma 4 31B (NVIDIA's NVFP4 repack; its config states bfloat16): 60 layers as 10 x [5 sliding at a 1,024-token
# window, 1 full]; the 50 sliding layers cache 16 KV heads x 256, the 10 full layers 4 x 512
G4_31_SLIDING, G4_31_FULL = per_layer(16, 256), per_layer(4, 512)
EXPECTED["gemma-4-31b"] = (
    50 * G4_31_SLIDING + 10 * G4_31_FULL,
    {
        4096: 10 * G4_31_FULL * 4096 + 50 * G4_31_SLIDING * 1024,
        262144: 10 * G4_31_FULL * 262144 + 50 * G4_31_SLIDING * 1024,
    },
)
# what kb asks a person to add, for fixtures whose config does not state it
ADDED = {
    "gpt-oss-20b": "kv_dtype_size: 2 B",
    "minimax-m2.5": "kv_dtype_size: 2 B",
    "glm-5": "index_dtype_size: 1 B",
    "glm-5.1": "index_dtype_size: 1 B",
}


def new_from_fixture(kb, fixture: str) -> Path:
    path = written(kb, from_config(kb, (FIXTURES / f"{fixture}.json").read_text(), fixture))
    if fixture in ADDED:
        text = path.read_text()
        path.write_text(text.replace("\nnotes: ", f"\n{ADDED[fixture]}\nnotes: ", 1))
    return path


def test_every_fixture_is_tested_or_refused():
    refused = {"nemotron-super-49b"}
    # read, with part of the indexer named as left out (test_glm_5_2_...)
    left_out = {"glm-5.2"}
    assert {p.stem for p in FIXTURES.glob("*.json")} == set(EXPECTED) | refused | left_out


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
    result = from_config(kb, (FIXTURES / "qwen3-vl-8b.json").read_text(), "VL")
    text = written(kb, result).read_text()
    assert "model_type qwen3_vl_text" in text and "num_layers: 36" in text and "num_kv_heads: 8" in text
    config = json.loads((FIXTURES / "qwen3-vl-8b.json").read_text())
    del config["text_config"]["model_type"]  # the wrapper's configuration class names the language model
    assert "model_type qwen3_vl_text" in written(kb, from_config(kb, config, "VL bare")).read_text()


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
        re.fullmatch(r"src/transformers/(models/\w+/(configuration|modeling)_\w+|cache_utils)\.py", f)
        for f in source["files"]
    ), source


@pytest.mark.parametrize("wrapper", sorted(RULES["wrappers"]))
def test_each_wrapper_names_a_ruled_language_model_and_cites_its_class(wrapper):
    entry = RULES["wrappers"][wrapper]
    assert entry["text_model_type"] in RULES["architectures"]
    assert re.fullmatch(r"v\d+\.\d+\.\d+", entry["source"]["transformers"]) and entry["source"]["files"]


def test_the_rules_cover_at_least_25_architectures():
    assert len(RULES["architectures"]) >= 25


def test_the_docs_count_the_rules():
    docs = (Path(__file__).parents[1] / "docs" / "records.md").read_text()
    assert f"({len(RULES['architectures'])} architectures," in docs


def test_qwen3_next_drafts_its_state_dtype_and_names_the_convolution_state(kb):
    """Issue 45, item 5: the Gated DeltaNet state was drafted without its dtype, so the record's KV at a context
    left the whole state out. The config names no state dtype; modeling_qwen3_next.py keeps the state in float32."""
    result = from_config(kb, (FIXTURES / "qwen3-next-80b-a3b.json").read_text(), "Next")
    text = written(kb, result).read_text()
    assert "linear_state_dtype_size: 4 B" in text and "keeps the state in float32" in text
    # the convolution state: (2 x 16 key heads x 128 + 32 value heads x 128) x (kernel 4 - 1), per layer
    conv = (2 * 16 * 128 + 32 * 128) * (4 - 1)
    assert (
        f"convolution state of each linear-attention layer (conv kernel - 1 positions of the q, k and v channels): {conv:,} elements a layer, {36 * conv:,} over 36 layers"
        in result.out
    )
    checks_clean(kb)
    assert explain(kb, "models/next.linear_state_bytes").startswith(
        f"models/next.linear_state_bytes = {NEXT_STATE:,} B"
    )


def test_nemotron_h_counts_attention_and_mamba_blocks_not_mlp_blocks(kb):
    result = from_config(kb, (FIXTURES / "nemotron-h-56b-base-8k.json").read_text(), "H56")
    text = written(kb, result).read_text()
    # 54 M + 10 * of the 118 blocks; the 54 MLP blocks keep nothing
    assert "num_layers: 64" in text and "linear_attention_layers: 54" in text
    assert "linear_num_value_heads: 256" in text and "linear_key_head_dim: 256" in text
    assert "linear_value_head_dim: 64" in text and "linear_state_dtype_size: 4 B" in text
    assert "54 MLP or MoE (no cache)" in text and "mamba_ssm_cache_dtype float32 is the default" in text
    # Mamba-2 conv state: (256 heads x 64 + 2 x 8 groups x 256) x (conv_kernel 4 - 1)
    conv = (256 * 64 + 2 * 8 * 256) * 3
    assert "convolution state of each Mamba-2 layer" in result.out and f"{conv:,} elements a layer" in result.out
    checks_clean(kb)
    assert explain(kb, "models/h56.full_attention_layers").startswith("models/h56.full_attention_layers = 10")


@pytest.mark.parametrize(
    "pattern, message",
    [
        ("M*-X", "'hybrid_override_pattern' has block kinds kb does not know: 'X'"),
        ("M*-", "'hybrid_override_pattern' lists 3 layers, but num_hidden_layers is 4"),
    ],
)
def test_a_nemotron_h_pattern_kb_cannot_read_is_refused(kb, pattern, message):
    config = {**json.loads((FIXTURES / "nemotron-3-nano-30b-a3b.json").read_text()), "num_hidden_layers": 4}
    result = from_config(kb, {**config, "hybrid_override_pattern": pattern})
    assert result.exit_code == 2 and message in result.err and "nothing written" in result.err, result.err


def test_gemma_4_drafts_its_full_layers_own_kv_shape(kb):
    """Gemma 4 26B-A4B: the 25 sliding layers cache 8 KV heads x 256, the 5 full layers 2 x 512 (attention_k_eq_v,
    num_global_key_value_heads, global_head_dim), drafted as the record's second KV shape."""
    result = from_config(kb, (FIXTURES / "gemma-4-26b-a4b.json").read_text(), "G4")
    text = written(kb, result).read_text()
    for line in ("num_kv_heads: 8", "head_dim: 256", "full_num_kv_heads: 2", "full_head_dim: 512"):
        assert f"\n{line}\n" in text, line
    assert "sliding_window_layers: 25" in text and "sliding_window: 1024 token" in text
    assert "num_experts: 128" in text and "experts_per_token: 8" in text  # top_k_experts
    assert "kv_shared_layers" not in text  # num_kv_shared_layers 0
    assert (
        "the 5 full_attention layers cache 2 KV heads (num_global_key_value_heads, because attention_k_eq_v is set) "
        "x 512 (global_head_dim), the other layers 8 x 256" in text
    )
    checks_clean(kb)
    # past the window only the 5 full layers grow, at 2 x 2 heads x 512 x 2 B each
    assert explain(kb, "models/g4.kv_bytes_per_token_growing").startswith(
        f"models/g4.kv_bytes_per_token_growing = {5 * G4_FULL:,} B/token"
    )
    # attention FLOP per n²: 16 query heads x 2 x 256 on the sliding layers, x 2 x 512 on the full ones
    assert explain(kb, "models/g4.causal_attention_flops").startswith(
        f"models/g4.causal_attention_flops = {25 * 16 * 2 * 256 + 5 * 16 * 2 * 512:,} FLOP/token^2"
    )


def test_gemma_4_without_k_eq_v_keeps_the_kv_head_count_and_widens_the_heads(kb):
    """attention_k_eq_v false: the full layers take num_key_value_heads (8) at global_head_dim; the same when the
    config names no num_global_key_value_heads (Gemma4TextConfig then sets no head-count override)."""
    for change in ({"attention_k_eq_v": False}, {"num_global_key_value_heads": None}):
        config = json.loads((FIXTURES / "gemma-4-26b-a4b.json").read_text())
        config["text_config"].update(change)
        text = written(kb, from_config(kb, config, f"G4 {next(iter(change))}")).read_text()
        assert "\nfull_num_kv_heads: 8\nfull_head_dim: 512\n" in text, change
        assert "(num_key_value_heads) x 512 (global_head_dim)" in text


def test_gemma_4_layers_that_reuse_kv_are_drafted_and_keep_none(kb):
    config = json.loads((FIXTURES / "gemma-4-26b-a4b.json").read_text())
    config["text_config"].update(attention_k_eq_v=False, global_head_dim=256, num_kv_shared_layers=10)
    result = from_config(kb, config, "G4 Shared")
    text = written(kb, result).read_text()
    # layers 20-29 reuse KV: of those, 23 and 29 are full attention (every sixth), the other 8 sliding
    assert "\nkv_shared_layers: 10\nkv_shared_window_layers: 8\n" in text
    assert "num_kv_heads: 8" in text and "full_num_kv_heads" not in text  # one shape: 8 x 256 everywhere
    checks_clean(kb)
    # 17 sliding and 3 full layers keep a cache, all 8 KV heads x 256
    assert explain(kb, "models/g4-shared.kv_bytes_per_token").startswith(
        f"models/g4-shared.kv_bytes_per_token = {(17 + 3) * per_layer(8, 256):,} B/token"
    )
    assert kv_at(kb, "g4-shared", 8192, "B") == f"{3 * per_layer(8, 256) * 8192 + 17 * per_layer(8, 256) * 1024:,} B"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"num_kv_shared_layers": 30}, "num_kv_shared_layers 30 is not fewer than the 30 layers"),
        (
            {"layer_types": ["sliding_attention"] * 29 + ["full_attention"], "num_kv_shared_layers": 1},
            "the last 1 layers (num_kv_shared_layers) include 'full_attention' layers, and no earlier layer",
        ),
        ({"num_global_key_value_heads": 3}, "not a multiple of the full-attention layers' 3 KV heads"),
    ],
)
def test_a_gemma_4_kv_layout_its_code_cannot_run_is_refused(kb, change, message):
    config = json.loads((FIXTURES / "gemma-4-26b-a4b.json").read_text())
    config["text_config"].update(change)
    result = from_config(kb, config)
    assert result.exit_code == 2 and message in result.err and "nothing written" in result.err, result.err


def test_gemma_4_bidirectional_everywhere_is_refused(kb):
    config = json.loads((FIXTURES / "gemma-4-26b-a4b.json").read_text())
    config["text_config"]["use_bidirectional_attention"] = "all"
    result = from_config(kb, config)
    assert result.exit_code == 2 and "'use_bidirectional_attention' is 'all': every token attends" in result.err


def test_bare_kimi_k2_is_read_as_deepseek_v3_without_running_its_remote_code(kb):
    text = written(kb, from_config(kb, (FIXTURES / "kimi-k2-instruct.json").read_text(), "K2")).read_text()
    assert "attention: mla" in text and "num_experts: 384" in text and "max_context: 131072 token" in text
    assert "the config's auto_map names remote code, which kb does not run" in text


def test_kimi_k2_takes_no_default_for_what_its_config_lacks(kb):
    config = json.loads((FIXTURES / "kimi-k2-instruct.json").read_text())
    del config["qk_rope_head_dim"]  # DeepseekV3Config would supply 64; the remote class is not kb's to read
    result = from_config(kb, config)
    assert result.exit_code == 2 and "kimi_k2 is MLA, but qk_rope_head_dim is missing" in result.err


def test_an_unruled_config_with_remote_code_says_so(kb):
    config = {**json.loads((FIXTURES / "kimi-k2-instruct.json").read_text()), "model_type": "kimi_k9"}
    result = from_config(kb, config)
    assert "model_type 'kimi_k9' has no rule" in result.err and "its auto_map names remote code" in result.err


def test_a_linear_state_without_a_dtype_rule_is_named_missing(kb):
    """MiniMax's rule gives the lightning-attention state's shape but no dtype: the draft says so instead of
    leaving the state out of the KV at a context in silence."""
    config = {
        "model_type": "minimax",
        "num_hidden_layers": 4,
        "hidden_size": 512,
        "num_attention_heads": 8,
        "num_key_value_heads": 8,
        "torch_dtype": "bfloat16",
    }
    result = from_config(kb, config)
    assert "not in the config: linear_state_dtype_size (the element type of the linear-attention state" in result.out


# Issue 45, item 5 (continued): the fields each hand-written record (records/models/<fixture, dots as hyphens>.md)
# states that its config gives too: the draft must give them as the record writes them
RECORD_FIELDS = {
    "qwen3.5-27b": (
        "num_layers",
        "num_attention_heads",
        "num_kv_heads",
        "head_dim",
        "architecture",
        "linear_attention_layers",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_state_dtype_size",
        "kv_dtype_size",
        "max_context",
    ),
    "qwen3.5-35b-a3b": (
        "num_layers",
        "num_attention_heads",
        "num_kv_heads",
        "head_dim",
        "num_experts",
        "experts_per_token",
        "shared_experts",
        "linear_attention_layers",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_state_dtype_size",
    ),
    "qwen3.5-122b-a10b": (
        "num_layers",
        "num_attention_heads",
        "num_kv_heads",
        "head_dim",
        "num_experts",
        "experts_per_token",
        "shared_experts",
        "linear_attention_layers",
        "linear_num_value_heads",
        "linear_state_dtype_size",
    ),
    "qwen3.5-397b-a17b": (
        "num_layers",
        "num_attention_heads",
        "num_kv_heads",
        "head_dim",
        "num_experts",
        "experts_per_token",
        "shared_experts",
        "linear_attention_layers",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_state_dtype_size",
    ),
    "minimax-m2.5": (
        "num_layers",
        "num_attention_heads",
        "num_kv_heads",
        "head_dim",
        "num_experts",
        "experts_per_token",
        "attention",
        "max_context",
    ),
    "minimax-m2.7": (
        "num_layers",
        "num_attention_heads",
        "num_kv_heads",
        "head_dim",
        "num_experts",
        "experts_per_token",
        "kv_dtype_size",
        "max_context",
    ),
    "glm-5": (
        "num_layers",
        "num_attention_heads",
        "attention",
        "q_lora_rank",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "v_head_dim",
        "num_experts",
        "experts_per_token",
        "shared_experts",
        "sparse_topk",
        "index_n_heads",
        "index_head_dim",
        "max_context",
    ),
    "gemma-4-26b-a4b": (
        "num_layers",
        "hidden_size",
        "intermediate_size",
        "moe_intermediate_size",
        "num_attention_heads",
        "num_kv_heads",
        "head_dim",
        "full_num_kv_heads",
        "full_head_dim",
        "sliding_window_layers",
        "num_experts",
        "experts_per_token",
        "max_context",
    ),
    "glm-5.1": (
        "num_layers",
        "num_attention_heads",
        "attention",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "v_head_dim",
        "num_experts",
        "sparse_topk",
        "index_n_heads",
        "index_head_dim",
    ),
}


@pytest.mark.parametrize("fixture", sorted(RECORD_FIELDS))
def test_a_2026_config_drafts_the_fields_its_record_states(kb, fixture):
    text = written(kb, from_config(kb, (FIXTURES / f"{fixture}.json").read_text(), fixture)).read_text()
    record = REPO / "records" / "models" / f"{fixture.replace('.', '-')}.md"
    stated = yaml.safe_load(record.read_text(encoding="utf-8").split("\n---")[0].removeprefix("---"))
    for field in RECORD_FIELDS[fixture]:
        value = stated[field]["value"] if isinstance(stated[field], dict) else stated[field]  # long form or short
        assert f"\n{field}: {value}\n" in text, (fixture, field, value)


def test_the_gemma_4_records_kv_is_their_two_shapes_worked_by_hand(records):
    """records/models/gemma-4-26b-a4b.md and gemma-4-31b.md: the sliding layers' shape for 25 of 30 (50 of 60)
    layers, the full layers' own for the other 5 (10), bf16."""
    for model, (sliding, full, heads, full_heads) in {
        "models/gemma-4-26b-a4b": (25, 5, 8, 2),
        "models/gemma-4-31b": (50, 10, 16, 4),
    }.items():
        values = records[model]["values"]
        per_token = sliding * per_layer(heads, 256) + full * per_layer(full_heads, 512)
        assert values["kv_bytes_per_token"]["value"] == per_token, model
        assert values["kv_bytes_per_token_growing"]["value"] == full * per_layer(full_heads, 512), model


def test_qwen3_5_names_its_convolution_state_and_a_state_dtype_its_code_does_not_keep(kb):
    result = from_config(kb, (FIXTURES / "qwen3.5-27b.json").read_text(), "Q27")
    # (2 x 16 key heads x 128 + 48 value heads x 128) x (kernel 4 - 1), in each of the 48 Gated DeltaNet layers
    conv = (2 * 16 * 128 + 48 * 128) * 3
    assert f"{conv:,} elements a layer, {48 * conv:,} over 48 layers" in result.out
    assert "the config's mamba_ssm_dtype names the same" in written(kb, result).read_text()
    config = json.loads((FIXTURES / "qwen3.5-27b.json").read_text())
    config["text_config"]["mamba_ssm_dtype"] = "bfloat16"
    result = from_config(kb, config, "Q27 BF16 state")
    assert "linear_state_dtype_size:" not in written(kb, result).read_text()
    assert "linear_state_dtype_size (the config's mamba_ssm_dtype is 'bfloat16', but qwen3_5_text's code" in result.out


def test_minimax_m2_refuses_a_layer_kind_its_code_does_not_build(kb):
    config = json.loads((FIXTURES / "minimax-m2.7.json").read_text())
    config["attn_type_list"][0] = 0
    result = from_config(kb, config)
    assert result.exit_code == 2 and "'attn_type_list' holds 0, where minimax_m2's code takes only 1" in result.err


def test_glm_5_2_leaves_out_an_indexer_only_some_layers_keep(kb):
    """GLM-5.2's indexer_types give 21 of its 78 layers their own indexer; the other 57 reuse an earlier top-k and
    cache no indexer keys (modeling_glm_moe_dsa.py), so a record's per-layer indexer would overcount them."""
    result = from_config(kb, (FIXTURES / "glm-5.2.json").read_text(), "GLM 5.2")
    text = written(kb, result).read_text()
    assert "index_n_heads:" not in text and "index_head_dim:" not in text and "sparse_topk:" not in text
    assert "32 heads x 128, top-2048, on 21 of the 78 layers only): the other 57 reuse an earlier layer's" in result.out
    checks_clean(kb)
    # the MLA latent alone: 78 x (512 + 64) x 2 B, the indexer keys named as left out
    assert explain(kb, "models/glm-5-2.kv_bytes_per_token").startswith(
        f"models/glm-5-2.kv_bytes_per_token = {78 * 576 * 2:,} B/token"
    )


@pytest.mark.parametrize(
    "keys, own",
    [({"index_topk_freq": 4, "index_skip_topk_offset": 3}, 21), ({"index_topk_pattern": "FS" * 39}, 39)],
)
def test_glm_moe_dsa_builds_its_indexer_layers_as_its_configuration_class_does(kb, keys, own):
    config = {**json.loads((FIXTURES / "glm-5.1.json").read_text()), **keys}
    result = from_config(kb, config)
    assert f"on {own} of the 78 layers only" in result.out, result.out
