"""KV bytes and prefill attention FLOP as functions of context length, for every attention layout the
model schema describes: full attention (MHA/GQA/MLA), sliding-window and chunked layers, linear-attention
layers with a fixed state, attention sinks, and top-k sparse attention with an indexer cache. The layout
is data in the schema (fields, x-kb-derive, x-kb-functions), never Python per model."""

from __future__ import annotations

import re

import pytest
from test_cost_model import DEEPSEEK_SHAPE, LLAMA_70B_SHAPE, explain

# gpt-oss-120b's shape (config.json: 36 layers alternating sliding_attention / full_attention,
# sliding_window 128, 64 query heads, 8 KV heads, head_dim 64)
SLIDING = """
    architecture: moe
    attention: gqa
    params_active: 5.1 Gparam
    num_layers: 36
    num_attention_heads: 64
    num_kv_heads: 8
    head_dim: 64
    kv_dtype_size: 2 B
    sliding_window_layers: 18
    sliding_window: 128 token
    window_kind: sliding
"""
# Qwen3-Next-80B-A3B's shape (48 layers, 3 of every 4 Gated DeltaNet; 16 query / 2 KV heads of 256)
LINEAR = """
    architecture: moe
    attention: gqa
    params_active: 3 Gparam
    num_layers: 48
    num_attention_heads: 16
    num_kv_heads: 2
    head_dim: 256
    kv_dtype_size: 2 B
    linear_attention_layers: 36
    linear_num_value_heads: 32
    linear_key_head_dim: 128
    linear_value_head_dim: 128
    linear_state_dtype_size: 4 B
"""
# DeepSeek-V3.2's sparse attention: DeepSeek-V3's MLA plus a 64-head, 128-dim FP8 indexer and top-2048
SPARSE = (
    DEEPSEEK_SHAPE
    + """
    sparse_topk: 2048 token
    index_n_heads: 64
    index_head_dim: 128
    index_dtype_size: 1 B
"""
)


def corpus(kb, **shapes):
    kb.source()
    keys = list(shapes)
    for i, (name, shape) in enumerate(shapes.items()):
        kb.record("models", name, "model", shape, body=f"[[{keys[(i + 1) % len(keys)]}]]\n")
    result = kb.check()
    assert result.exit_code == 0 and "0 errors" in result.out, result.out


def call_on(kb, model: str, call: str, argument: str, unit: str, class_: str = "kv_transfer") -> str:
    """What a model function's call renders, through a real cost block: `call` applied to `argument`."""
    key = f"{call}-{model}-{re.sub(r'[^a-z0-9]+', '-', argument.lower())}".strip("-")
    kb.record(
        "flops",
        key,
        "flop",
        f"""
        class: {class_}
        bound_by: {"compute" if class_ == "prefill_attention" else "storage"}
        inputs:
          model: models/{model}
          argument: {argument}
        costs:
          value:
            formula: model.{call}(argument)
            unit: {unit!r}
    """,
        body=f"[[{model}]]\n",
    )
    return explain(kb, f"flops/{key}.value").splitlines()[0].split(" = ", 1)[1]


def kv_at(kb, model: str, tokens: int, unit: str = "GB") -> str:
    """What prose quoting the model's kv_bytes at a length renders."""
    return call_on(kb, model, "kv_bytes", f"{tokens} token", unit)


def test_full_attention_kv_grows_with_every_token(kb):
    corpus(kb, gqa=LLAMA_70B_SHAPE, mla=DEEPSEEK_SHAPE)
    # 2 x 80 x 8 x 128 x 2 B = 327,680 B/token: 8,192 tokens are 2.684 GB
    assert kv_at(kb, "gqa", 8192) == "2.684 GB"
    # MLA: 61 x (512 + 64) x 2 B = 70,272 B/token, the seed's 2.25 GB at 32,000 tokens
    assert kv_at(kb, "mla", 32000) == "2.249 GB"


def test_sliding_window_layers_stop_growing_at_the_window(kb):
    corpus(kb, swa=SLIDING)
    # per layer 2 x 8 x 64 x 2 B = 2,048 B/token; inside the window all 36 layers grow
    assert explain(kb, "models/swa.kv_bytes_per_token").startswith("models/swa.kv_bytes_per_token = 73,728 B/token")
    assert explain(kb, "models/swa.kv_bytes_per_token_growing").startswith(
        "models/swa.kv_bytes_per_token_growing = 36,864 B/token"
    )
    assert kv_at(kb, "swa", 100, "B") == "7,372,800 B"  # 100 x 73,728 B
    # 131,072 tokens: 18 full layers x 2,048 B x 131,072 + 18 windowed layers x 2,048 B x 128
    assert kv_at(kb, "swa", 131072) == "4.837 GB"  # 4,836,556,800 B


def test_attention_sinks_extend_the_window(kb):
    corpus(kb, sinks=SLIDING + "    sink_tokens: 4\n")
    # the windowed layers keep 128 + 4 tokens: 18 x 2,048 B x 132 more than the full layers' share
    assert kv_at(kb, "sinks", 131072, "B") == f"{18 * 2048 * 131072 + 18 * 2048 * 132:,} B"


def test_linear_attention_layers_hold_a_fixed_state(kb):
    corpus(kb, hybrid=LINEAR)
    # 36 layers x 32 heads x 128 x 128 x 4 B of recurrent state, whatever the length
    assert explain(kb, "models/hybrid.linear_state_bytes").startswith("models/hybrid.linear_state_bytes = 75,497,472 B")
    # 12 full layers x 2 x 2 x 256 x 2 B = 24,576 B/token, plus the state
    assert kv_at(kb, "hybrid", 0 + 1000, "B") == f"{24576 * 1000 + 75497472:,} B"
    assert explain(kb, "models/hybrid.full_attention_layers").startswith("models/hybrid.full_attention_layers = 12")


def test_sparse_attention_keeps_all_kv_plus_the_indexer_and_attends_top_k(kb):
    corpus(kb, dsa=SPARSE, mla=DEEPSEEK_SHAPE)
    # the indexer caches 128 FP8 bytes per token per layer beside the 70,272 B/token latent
    assert explain(kb, "models/dsa.kv_bytes_per_token").startswith(
        f"models/dsa.kv_bytes_per_token = {70272 + 61 * 128:,} B/token"
    )
    kb.record(
        "flops",
        "prefill",
        "flop",
        """
        class: prefill_attention
        bound_by: compute
        inputs:
          dense: models/mla
          sparse: models/dsa
          n: 128000 token
        costs:
          dense_flops:
            formula: dense.prefill_attention_flops(n)
            unit: PFLOP
          sparse_flops:
            formula: sparse.prefill_attention_flops(n)
            unit: PFLOP
    """,
        body="[[mla]] [[dsa]]\n",
    )
    dense = 61 * 128 * 320 * 128000**2  # every pair of the causal triangle, QK and PV
    attended = 2 * 2048 * 128000 - 2048**2  # each query attends to at most 2,048 tokens
    # the selected pairs run in MLA's MQA mode: d_qk = 512 + 64 and d_v = 512 for each of 128 heads
    sparse = 61 * 128 * (576 + 512) * attended + 61 * 64 * 128 * 128000**2  # plus the indexer's QK over all
    assert explain(kb, "flops/prefill.dense_flops").startswith(f"flops/prefill.dense_flops = {dense / 1e15:.4g} PFLOP")
    assert explain(kb, "flops/prefill.sparse_flops").startswith(
        f"flops/prefill.sparse_flops = {sparse / 1e15:.4g} PFLOP"
    )


def test_a_windowed_layer_without_its_window_is_a_schema_error(kb):
    kb.source()
    path = kb.record("models", "bad", "model", LLAMA_70B_SHAPE + "    sliding_window_layers: 40\n")
    result = kb.check()
    assert result.exit_code == 1
    assert any("sliding_window" in line and "records/models/bad.md:" in line for line in result.out.splitlines()), (
        result.out
    )
    assert path.exists()


@pytest.mark.parametrize(
    "call, message",
    [
        ("model.kv_bytes()", "kv_bytes() takes 1 argument(s) (n), not 0"),
        ("model.kv_bytes('3 GB')", "kv_bytes()'s n is in token, not 3 GB"),
        (
            "model.weights(n)",
            "models/gqa is a model, whose schema declares no function 'weights' (it declares: kv_bytes, kv_copies_under_tp, prefill_attention_flops)",
        ),
    ],
)
def test_a_bad_function_call_is_a_diagnostic_at_the_formula(kb, call, message):
    corpus(kb, gqa=LLAMA_70B_SHAPE)
    path = kb.record(
        "flops",
        "f",
        "flop",
        f"""
        class: kv_transfer
        bound_by: storage
        inputs:
          model: models/gqa
          n: 10 token
        costs:
          kv:
            formula: "{call}"
            unit: GB
    """,
        body="[[gqa]]\n",
    )
    result = kb.check()
    found = result.find("KB502") + result.find("KB503")
    line = next(i for i, l in enumerate(path.read_text().splitlines(), 1) if "formula:" in l)
    assert found and found[0].startswith(f"records/flops/f.md:{line}:") and message in found[0], result.out


def _prefill_flops(kb, model: str, tokens: int) -> str:
    return call_on(kb, model, "prefill_attention_flops", f"{tokens} token", "FLOP", "prefill_attention")


# Llama 4 Scout's shape: 48 layers of 40 query / 8 KV heads of 128; 36 chunked layers of 8,192 tokens
CHUNKED = """
    architecture: moe
    attention: gqa
    params_active: 17 Gparam
    num_layers: 48
    num_attention_heads: 40
    num_kv_heads: 8
    head_dim: 128
    kv_dtype_size: 2 B
    sliding_window_layers: 36
    sliding_window: 8192 token
    window_kind: chunked
"""


@pytest.mark.parametrize("tokens", [32768, 131072, 20000, 5000])
def test_chunked_layers_attend_within_their_chunk_not_over_a_sliding_window(kb, tokens):
    """The audit's K9: a chunked layer's query sees only the earlier keys of its own chunk (transformers'
    chunked mask), so a layer costs c² per whole chunk plus the remainder squared."""
    corpus(kb, scout=CHUNKED, swa=CHUNKED.replace("window_kind: chunked", "window_kind: sliding"))
    pair = 40 * 2 * 128  # FLOP per token² of one layer: 40 query heads x (d_qk + d_v)
    chunk, whole = 8192, tokens // 8192
    chunked = 12 * tokens**2 + 36 * (whole * chunk**2 + (tokens - whole * chunk) ** 2)
    assert _prefill_flops(kb, "scout", tokens) == f"{pair * chunked:,.4g} FLOP"
    m = min(tokens, chunk)
    sliding = 12 * tokens**2 + 36 * (2 * m * tokens - m**2)
    assert _prefill_flops(kb, "swa", tokens) == f"{pair * sliding:,.4g} FLOP"


def test_short_sparse_prefills_take_the_dense_form_when_it_costs_less(kb):
    """Below about 12,800 tokens DSA's MQA-mode pairs (1,088 per head) over the top-2,048 cost more than
    the dense MHA form (320 per head) over every pair: the function takes the cheaper."""
    corpus(kb, dsa=SPARSE)
    dense = 61 * 128 * 320 * 8192**2 + 61 * 64 * 128 * 8192**2
    assert _prefill_flops(kb, "dsa", 8192) == f"{dense:,.4g} FLOP"
    sparse = 61 * 128 * 1088 * (2 * 2048 * 16384 - 2048**2) + 61 * 64 * 128 * 16384**2
    assert _prefill_flops(kb, "dsa", 16384) == f"{sparse:,.4g} FLOP"


def _copies(kb, model: str, tp: int) -> str:
    return call_on(kb, model, "kv_copies_under_tp", str(tp), "1")


def test_kv_heads_are_replicated_once_the_ranks_outnumber_them(kb):
    """The audit's S10: vLLM and SGLang give each rank max(1, kv_heads // tp) heads, so a GQA model's TP
    group holds tp / kv_heads copies once tp exceeds its KV heads; MQA and MLA one copy per rank."""
    corpus(
        kb,
        mqa=LLAMA_70B_SHAPE.replace("attention: gqa", "attention: mqa").replace("num_kv_heads: 8", "num_kv_heads: 1"),
        gqa=LLAMA_70B_SHAPE,
        two=LLAMA_70B_SHAPE.replace("num_kv_heads: 8", "num_kv_heads: 2"),
        mla=DEEPSEEK_SHAPE,
    )
    assert explain(kb, "models/gqa.kv_tp_shards").splitlines()[0].endswith("= 8")
    assert explain(kb, "models/mqa.kv_tp_shards").splitlines()[0].endswith("= 1")
    assert _copies(kb, "gqa", 8) == "1" and _copies(kb, "gqa", 4) == "1"
    assert _copies(kb, "two", 8) == "4"  # 2 KV heads on 8 ranks: each head on 4 ranks
    assert _copies(kb, "mqa", 8) == "8" and _copies(kb, "mla", 8) == "8"
