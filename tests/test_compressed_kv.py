"""Attention layouts whose layers differ: DeepSeek-V4's compressed KV (CSA and HCA layers, each with a window)
and Gemma 4's second KV shape for its full-attention layers plus layers that reuse another layer's KV. Every
figure is worked by hand from config numbers; the layouts are data in the model schema."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import REPO
from test_attention_layouts import call_on, corpus, kv_at
from test_cost_model import explain

# DeepSeek-V4-Flash's config (deepseek-ai--DeepSeek-V4-Flash_config.json in ai-dynamo/aiconfigurator at 095f58a5)
FLASH = {
    "num_hidden_layers": 43,
    "num_attention_heads": 64,
    "num_key_value_heads": 1,
    "head_dim": 512,
    "sliding_window": 128,
    "index_n_heads": 64,
    "index_head_dim": 128,
    "index_topk": 512,
    # one entry a layer plus the MTP layer's, which is not one of the 43
    "compress_ratios": [0, 0] + [4, 128] * 20 + [4, 0],
}
RATIOS = FLASH["compress_ratios"][: FLASH["num_hidden_layers"]]
BF16, FP4, FP32 = 2, 0.5, 4
ENTRY = FLASH["num_key_value_heads"] * FLASH["head_dim"] * BF16  # one vector, key and value at once: 1,024 B


def test_the_config_fixture_is_the_mirrored_config():
    """FLASH above is the config kb's record was read from, where the mirror is on this machine."""
    mirror = "/work/.mirror/ai-dynamo+aiconfigurator/repo"
    path = "HEAD:aic-core/src/aiconfigurator_core/model_configs/deepseek-ai--DeepSeek-V4-Flash_config.json"
    done = subprocess.run(["git", "-C", mirror, "show", path], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("the aiconfigurator mirror is not on this machine")
    config = json.loads(done.stdout)
    assert {key: config[key] for key in FLASH} == FLASH


def test_deepseek_v4_flash_kv_per_token_window_and_state(records):
    flash = records["models/deepseek-v4-flash"]
    values, data = flash["values"], flash["data"]
    # the record's layer counts are the config's ratios over its 43 layers
    counts = (data["sliding_window_layers"], data["csa_layers"], data["hca_layers"])
    assert counts == (RATIOS.count(0), RATIOS.count(4), RATIOS.count(128)) == (2, 21, 20)
    assert values["kv_bytes_per_token_layer"]["value"] == ENTRY
    # the CSA layers' FP4 indexer keys: 21 layers x 128 x 0.5 B per compressed entry, one entry per 4 tokens
    indexer = 21 * 128 * FP4 / 4
    assert values["indexer_bytes_per_token"]["value"] == indexer == 336
    # past the window: 21 layers add an entry every 4 tokens, 20 layers every 128, plus the indexer keys
    growing = 21 * ENTRY / 4 + 20 * ENTRY / 128 + indexer
    assert values["kv_bytes_per_token_growing"]["value"] == growing == 5872
    # inside the window every one of the 43 layers also keeps each token's entry
    assert values["kv_bytes_per_token"]["value"] == 43 * ENTRY + growing == 49904
    # the fixed part: 128 entries on every layer, and the compressors' FP32 kv and score buffers
    window = 43 * 128 * ENTRY
    assert values["kv_window_bytes"]["value"] == window == 5_636_096
    state = 21 * (2 * 4 * 2 * 512 + 2 * 4 * 2 * 128) * FP32 + 20 * 2 * 128 * 512 * FP32
    assert values["compressor_state_bytes"]["value"] == state == 11_345_920
    # no layer attends to the whole context uncompressed
    assert values["full_attention_layers"]["value"] == 0


def nvidia_kv_bytes(n: int) -> float:
    """aiconfigurator's DeepSeekV4Model.get_kvcache_bytes_per_sequence (deepseek_v4.py at 095f58a5), in BF16."""
    total = 0.0
    for ratio in RATIOS:
        total += min(n, FLASH["sliding_window"]) * ENTRY
        if ratio:
            entries = n // ratio
            total += entries * ENTRY + 2 * ratio * (2 if ratio == 4 else 1) * FLASH["head_dim"] * FP32
            if ratio == 4:
                total += entries * FLASH["index_head_dim"] * FP4 + 2 * ratio * 2 * FLASH["index_head_dim"] * FP32
    return total


def flash_copy(kb, records) -> None:
    """A temporary knowledge base holding the repository's DeepSeek-V4-Flash record's fields, so that its
    functions can be called from a cost block."""
    data = records["models/deepseek-v4-flash"]["data"]
    keep = (
        "architecture attention params_active num_layers num_attention_heads num_kv_heads head_dim kv_dtype_size "
        "kv_compression sliding_window_layers sliding_window window_kind csa_layers csa_compress_ratio hca_layers "
        "hca_compress_ratio sparse_topk index_n_heads index_head_dim index_dtype_size compressor_state_dtype_size"
    ).split()
    lines = []
    for key in keep:
        value = data[key]
        value = value["value"] if isinstance(value, dict) else value
        lines.append(f"    {key}: {value}\n")
    corpus(kb, flash="".join(lines))


@pytest.mark.parametrize("tokens", [100, 131072, 1048576])
def test_deepseek_v4_flash_kv_at_a_length_is_nvidias_count(kb, records, tokens):
    flash_copy(kb, records)
    # at a multiple of 128 kb's fractional n / ratio is NVIDIA's n // ratio; below 128 it counts fractions of
    # an entry that NVIDIA rounds down, so the hand figure there is kb's own rule
    if tokens % 128 == 0:
        expected = nvidia_kv_bytes(tokens)
    else:
        expected = 5872 * tokens + 43 * ENTRY * tokens + 11_345_920
    assert kv_at(kb, "flash", tokens, "B") == f"{expected:,.0f} B"
    if tokens == 131072:
        assert expected == 5872 * 131072 + 5_636_096 + 11_345_920 == 786_636_800


def test_deepseek_v4_flash_prefill_attends_to_window_compressed_entries_and_top_k(kb, records):
    flash_copy(kb, records)
    n = 131072
    per_pair = 4 * 64 * 512  # QK and PV over one 512-wide entry, for 64 query heads (dsv4.rs attention_ops)
    window = 2 * 128 * n - 128**2  # twice the pairs within a 128-token window (m·n − m²/2)
    hca = n**2 / 128  # twice the sum over queries of i / 128
    top = 512 * 4  # past 2,048 tokens a CSA query sees more than 512 compressed entries and keeps 512
    csa = top**2 / 4 + 2 * (n - top) * 512
    indexer = 64 * 128 * n**2 / 4  # the indexer's QK over the compressed entries before each query
    flops = per_pair / 2 * (43 * window + 20 * hca + 21 * csa) + 21 * indexer
    shown = call_on(kb, "flash", "prefill_attention_flops", f"{n} token", "PFLOP", "prefill_attention")
    assert shown == f"{flops / 1e15:.4g} PFLOP" == "1.193 PFLOP"
    # NVIDIA's discrete pair counts (causal_limited_pairs, compressed_context_pairs) give the same attention
    # term within 0.1 %: kb's sums drop the floor and the diagonal
    pairs = 43 * sum(min(i, 128) for i in range(1, n + 1))
    pairs += 20 * sum(i // 128 for i in range(1, n + 1)) + 21 * sum(min(i // 4, 512) for i in range(1, n + 1))
    attention = per_pair / 2 * (43 * window + 20 * hca + 21 * csa)
    assert abs(attention - per_pair * pairs) / attention < 0.001


# Gemma-4-26B-A4B's text config (tests/fixtures/hf-configs/gemma-4-26b-a4b.json): 30 layers, every sixth
# full_attention; sliding layers 8 KV heads x 256 over a 1,024-token window, full layers 2 KV heads x 512
GEMMA4 = """
    architecture: moe
    attention: gqa
    params_active: 4 Gparam
    num_layers: 30
    num_attention_heads: 16
    num_kv_heads: 8
    head_dim: 256
    full_num_kv_heads: 2
    full_head_dim: 512
    kv_dtype_size: 2 B
    sliding_window_layers: 25
    sliding_window: 1024 token
    window_kind: sliding
"""


def test_gemma4_full_layers_keep_their_own_kv_shape(kb):
    fixture = json.loads((REPO / "tests/fixtures/hf-configs/gemma-4-26b-a4b.json").read_text())
    text = fixture.get("text_config", fixture)
    assert (text["num_key_value_heads"], text["head_dim"]) == (8, 256)
    assert (text["num_global_key_value_heads"], text["global_head_dim"]) == (2, 512)
    assert text["layer_types"].count("sliding_attention") == 25
    corpus(kb, gemma=GEMMA4)
    sliding_layer = 2 * 8 * 256 * 2  # K and V, 8 heads of 256, BF16: 8,192 B/token
    full_layer = 2 * 2 * 512 * 2  # K and V, 2 heads of 512: 4,096 B/token
    assert explain(kb, "models/gemma.kv_bytes_per_token_full_layer").startswith(
        f"models/gemma.kv_bytes_per_token_full_layer = {full_layer:,} B/token"
    )
    assert explain(kb, "models/gemma.kv_bytes_per_token").startswith(
        f"models/gemma.kv_bytes_per_token = {25 * sliding_layer + 5 * full_layer:,} B/token"
    )
    assert explain(kb, "models/gemma.kv_bytes_per_token_growing").startswith(
        f"models/gemma.kv_bytes_per_token_growing = {5 * full_layer:,} B/token"
    )
    # 131,072 tokens: the 5 full layers for every token, the 25 windowed ones for 1,024
    assert kv_at(kb, "gemma", 131072, "B") == f"{5 * full_layer * 131072 + 25 * sliding_layer * 1024:,} B"
    # attention FLOP per n²: 16 query heads x 2 x head_dim, 256 wide on windowed layers and 512 on full ones
    assert explain(kb, "models/gemma.causal_attention_flops").startswith(
        f"models/gemma.causal_attention_flops = {25 * 16 * 2 * 256 + 5 * 16 * 2 * 512:,} FLOP/token^2"
    )


def test_layers_that_reuse_another_layers_kv_add_no_bytes(kb):
    # a Gemma-4-like model whose last 10 layers (8 windowed, 2 full) read earlier layers' caches
    corpus(kb, shared=GEMMA4 + "    kv_shared_layers: 10\n    kv_shared_window_layers: 8\n")
    sliding_layer, full_layer = 8192, 4096
    assert explain(kb, "models/shared.kv_bytes_per_token").startswith(
        f"models/shared.kv_bytes_per_token = {17 * sliding_layer + 3 * full_layer:,} B/token"
    )
    assert explain(kb, "models/shared.kv_bytes_per_token_growing").startswith(
        f"models/shared.kv_bytes_per_token_growing = {3 * full_layer:,} B/token"
    )
    assert kv_at(kb, "shared", 4096, "B") == f"{3 * full_layer * 4096 + 17 * sliding_layer * 1024:,} B"


def test_a_compressed_layout_without_its_layer_counts_is_a_schema_error(kb):
    kb.source()
    kb.record("models", "broken", "model", GEMMA4 + "    kv_compression: csa_hca\n", body="x\n")
    result = kb.check()
    assert result.exit_code == 1
    assert any("csa_layers" in line for line in result.lines), result.out
