"""`kb new TYPE --from-config PATH`: a record's fields read from a Hugging Face `config.json`.

Which type reads configs, and which config keys become which fields one to one, is data in that
type's schema (`x-kb-from-config`: {"format": "huggingface", "fields": {config key: field}}). What
needs reading across keys lives here, once: the attention kind (MHA/GQA/MQA from the KV head count,
MLA from its ranks), the head width (explicit or hidden ÷ heads), the layer layout (`layer_types`,
`full_attention_interval`, a sliding window over every layer), MoE counts and the weights' dtype.

Nothing is guessed. A field the config does not settle is left out and named. A config that
contradicts itself is refused and nothing is written: heads that do not divide, a layer list of the
wrong length, MLA ranks without their RoPE width. Keys kb does not know are listed, so the reader
sees what was not carried over.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# keys read below across several fields, or knowingly not carried over (tokeniser ids, training knobs)
_STRUCTURAL = {
    "num_key_value_heads",
    "head_dim",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "layer_types",
    "sliding_window",
    "use_sliding_window",
    "max_window_layers",
    "full_attention_interval",
    "torch_dtype",
    "dtype",
    "num_local_experts",
    "n_routed_experts",
    "num_experts",
    "num_experts_per_tok",
    "n_shared_experts",
    "shared_expert_intermediate_size",
    "text_config",
    "index_n_heads",
    "index_head_dim",
    "index_topk",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_num_key_heads",
    "sliding_window_pattern",
    "attention_chunk_size",
}
_IGNORED = {
    "architectures",
    "model_type",
    "transformers_version",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "tie_word_embeddings",
    "use_cache",
    "initializer_range",
    "rms_norm_eps",
    "layer_norm_eps",
    "hidden_act",
    "rope_theta",
    "rope_scaling",
    "attention_bias",
    "attention_dropout",
    "mlp_bias",
    "pretraining_tp",
    "output_router_logits",
    "router_aux_loss_coef",
    "auto_map",
    "quantization_config",
    "_name_or_path",
    "vision_config",
    "image_token_index",
    "router_jitter_noise",
    "norm_topk_prob",
}
_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float8_e4m3fn": 1, "fp8": 1}


class ConfigError(Exception):
    """The config cannot be read, or contradicts itself: nothing is written."""


@dataclass
class Reading:
    fields: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # how a field was read, written into the record
    unmapped: list[str] = field(default_factory=list)  # keys kb does not know
    missing: list[str] = field(default_factory=list)  # fields the config does not settle


def load_config(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1:1: a config.json is one JSON object, not {type(data).__name__}")
    return data


def _int(config: dict, key: str, path: Path, minimum: int = 0) -> int | None:
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{path}: '{key}' is {value!r}; it must be a whole number of at least {minimum}")
    return value


def read_config(config: dict[str, Any], path: Path, field_map: dict[str, str]) -> Reading:
    reading = Reading()
    if isinstance(config.get("text_config"), dict):  # a multimodal wrapper: the language model's shape is inside
        reading.notes.append("read from the config's text_config (the language model of a multimodal checkpoint)")
        config = {**{k: v for k, v in config.items() if k != "text_config"}, **config["text_config"]}
    out = reading.fields
    for key, target in field_map.items():
        value = _int(config, key, path, 1)
        if value is not None:
            out[target] = value
    layers, heads = out.get("num_layers"), out.get("num_attention_heads")
    _attention(config, path, reading, heads)
    _layout(config, path, reading, layers)
    _moe(config, path, reading)
    dtype = config.get("torch_dtype") or config.get("dtype")
    if isinstance(dtype, str) and dtype in _DTYPE_BYTES:
        out["kv_dtype_size"] = f"{_DTYPE_BYTES[dtype]} B"
        reading.notes.append(
            f"kv_dtype_size is the weights' dtype ({dtype}); an engine may cache KV in another type (FP8 halves it)"
        )
    else:
        reading.missing.append("kv_dtype_size (the config names no dtype kb knows)")
    position = config.get("max_position_embeddings")
    if isinstance(position, int) and not isinstance(position, bool) and position > 0:
        out["max_context"] = f"{position} token"
    reading.missing.append(
        "params_total and params_active (config.json does not state them; take them from the model card)"
    )
    known = set(field_map) | _STRUCTURAL | _IGNORED | {"max_position_embeddings"}
    reading.unmapped = sorted(k for k in config if k not in known)
    return reading


def _attention(config: dict, path: Path, reading: Reading, heads: int | None) -> None:
    out = reading.fields
    mla = {
        k: _int(config, k, path, 1)
        for k in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
    }
    if mla["kv_lora_rank"] is not None:
        lacking = [k for k in ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim") if mla[k] is None]
        if lacking:
            raise ConfigError(
                f"{path}: kv_lora_rank says MLA, but {', '.join(lacking)} is missing; MLA's KV and attention FLOP need it"
            )
        out["attention"] = "mla"
        out.update({k: v for k, v in mla.items() if v is not None})
        return
    if heads is None:
        raise ConfigError(f"{path}: num_attention_heads is missing; kb cannot tell the attention kind")
    kv_heads = _int(config, "num_key_value_heads", path, 1)
    if kv_heads is None:
        kv_heads = heads
        reading.notes.append(
            "num_key_value_heads is absent, which in Hugging Face configs means one KV head per query head (MHA)"
        )
    if heads % kv_heads:
        raise ConfigError(f"{path}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
    out["num_kv_heads"] = kv_heads
    out["attention"] = "mha" if kv_heads == heads else "mqa" if kv_heads == 1 else "gqa"
    head_dim = _int(config, "head_dim", path, 1)
    hidden = out.get("hidden_size")
    if head_dim is not None:
        out["head_dim"] = head_dim
        if hidden and hidden != head_dim * heads:
            reading.notes.append(
                f"head_dim {head_dim} is given explicitly and is not hidden_size ÷ heads ({hidden} ÷ {heads})"
            )
    elif hidden:
        if hidden % heads:
            raise ConfigError(
                f"{path}: no head_dim, and hidden_size {hidden} is not a multiple of num_attention_heads {heads}"
            )
        out["head_dim"] = hidden // heads
        reading.notes.append(
            f"head_dim is hidden_size ÷ num_attention_heads ({hidden} ÷ {heads}); the config gives none"
        )
    else:
        reading.missing.append("head_dim (neither it nor hidden_size is in the config)")


def _layout(config: dict, path: Path, reading: Reading, layers: int | None) -> None:
    out = reading.fields
    window = _int(config, "sliding_window", path, 1)
    types = config.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise ConfigError(f"{path}: layer_types must be a list of layer kinds")
        if layers is not None and len(types) != layers:
            raise ConfigError(f"{path}: layer_types lists {len(types)} layers, but num_hidden_layers is {layers}")
        kinds = {t: types.count(t) for t in dict.fromkeys(types)}
        unknown = [
            t
            for t in kinds
            if t not in ("full_attention", "sliding_attention", "linear_attention", "chunked_attention")
        ]
        if unknown:
            raise ConfigError(f"{path}: layer_types has kinds kb does not know: {', '.join(unknown)}")
        windowed = kinds.get("sliding_attention", 0) + kinds.get("chunked_attention", 0)
        if windowed:
            size = window if kinds.get("sliding_attention") else _int(config, "attention_chunk_size", path, 1)
            if size is None:
                raise ConfigError(f"{path}: layer_types has windowed layers but the config gives no window size")
            out.update(
                sliding_window_layers=windowed,
                sliding_window=f"{size} token",
                window_kind="chunked" if kinds.get("chunked_attention") else "sliding",
            )
        if kinds.get("linear_attention"):
            out["linear_attention_layers"] = kinds["linear_attention"]
        reading.notes.append("layer counts from layer_types: " + ", ".join(f"{n} {t}" for t, n in kinds.items()))
    elif _int(config, "full_attention_interval", path, 1) is not None and layers is not None:
        interval = config["full_attention_interval"]
        if layers % interval:
            raise ConfigError(
                f"{path}: num_hidden_layers {layers} is not a multiple of full_attention_interval {interval}"
            )
        out["linear_attention_layers"] = layers - layers // interval
        reading.notes.append(f"every {interval}th layer is full attention (full_attention_interval), the rest linear")
    elif window is not None and config.get("use_sliding_window", True) is not False:
        if config.get("max_window_layers") is not None or config.get("sliding_window_pattern") is not None:
            raise ConfigError(
                f"{path}: sliding_window with max_window_layers or sliding_window_pattern but no layer_types: "
                "which layers use the window is ambiguous; write sliding_window_layers by hand"
            )
        if layers is not None:
            out.update(sliding_window_layers=layers, sliding_window=f"{window} token", window_kind="sliding")
            reading.notes.append(f"sliding_window {window} applies to every layer (no layer_types)")
    if config.get("attention_chunk_size") is not None and "sliding_window_layers" not in out:
        raise ConfigError(
            f"{path}: attention_chunk_size is set but no layer_types says which layers are chunked; "
            "write sliding_window_layers by hand"
        )
    if out.get("linear_attention_layers"):
        for key in ("linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim"):
            value = _int(config, key, path, 1)
            if value is not None:
                out[key] = value
    for key, target in (("index_n_heads", "index_n_heads"), ("index_head_dim", "index_head_dim")):
        value = _int(config, key, path, 1)
        if value is not None:
            out[target] = value
    topk = _int(config, "index_topk", path, 1)
    if topk is not None:
        out["sparse_topk"] = f"{topk} token"
        reading.missing.append("index_dtype_size (the indexer's cache dtype is not in the config)")


def _moe(config: dict, path: Path, reading: Reading) -> None:
    out = reading.fields
    experts = next(
        (v for v in (_int(config, k, path, 1) for k in ("num_local_experts", "n_routed_experts", "num_experts")) if v),
        None,
    )
    if experts:
        out["architecture"] = "moe"
        out["num_experts"] = experts
        per_token = _int(config, "num_experts_per_tok", path, 1)
        if per_token is None:
            raise ConfigError(f"{path}: the config has {experts} experts but no num_experts_per_tok")
        if per_token > experts:
            raise ConfigError(f"{path}: num_experts_per_tok {per_token} exceeds the {experts} experts")
        out["experts_per_token"] = per_token
        shared = _int(config, "n_shared_experts", path, 0)
        if shared is not None:
            out["shared_experts"] = shared
        elif config.get("shared_expert_intermediate_size"):
            out["shared_experts"] = 1
            reading.notes.append("one shared expert, from shared_expert_intermediate_size")
    else:
        out["architecture"] = "dense"


def record_text(
    record_type: str, record_id: str, name: str, sources: list[str], reading: Reading, today: str, source_path: str
) -> str:
    """The record: envelope, the fields in the order read, how each was read, and a body to write."""
    lines = [
        "---",
        f"id: {record_id}",
        f"type: {record_type}",
        f"name: {json.dumps(name, ensure_ascii=False)}",
        "status: draft",
        "confidence: 0.5",
        f"updated: {today}",
        f"sources: [{', '.join(sources)}]",
        "basis: vendor-spec",
    ]
    for key, value in reading.fields.items():
        lines.append(f"{key}: {value}")
    notes = [f"Fields read by kb new --from-config from {source_path}."] + [f"{n}." for n in reading.notes]
    if reading.missing:
        notes.append("Not in the config, to add by hand: " + "; ".join(reading.missing) + ".")
    lines.append(f"notes: {json.dumps(' '.join(notes), ensure_ascii=False)}")
    lines += [
        "---",
        f"What {name} is, in your own words: its shape, what its KV cache costs per token, and",
        "links like `[[dir/id]]` to related records.",
        "",
    ]
    return "\n".join(lines)
