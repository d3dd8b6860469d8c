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
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbtools.diagnostics import clipped, one_line
from kbtools.files import NotReadable, read_regular_file

# What kb reads of a config is bounded, so a hostile one is refused at once, by name. Real configs nest
# three or four levels (text_config > rope_scaling > ...); their numbers have at most 8 digits.
MAX_DEPTH = 32
MAX_DIGITS = 20  # past 64 bits: no count or size; a longer number is never made an int
# The largest a number kb reads may be: generous caps, far past any real model, that keep a typo or an
# attack out of a draft. Layers: the deepest models have ~130 (Llama 3.1 405B: 126). Heads and experts:
# the most is a few hundred (DeepSeek V3: 256 experts, 128 heads). Widths (hidden, FFN, head dims,
# ranks, vocabulary): the widest are ~10^5 (FFN 73,728; vocabularies 262,144). Token lengths (context,
# windows, chunks): the longest context is ~10^7 (Llama 4 Scout: 10,485,760).
MAX_LAYERS = 10_000
MAX_COUNT = 1_000_000
MAX_WIDTH = 10_000_000  # also the cap of any key the schema maps and this table does not name
MAX_TOKENS = 1_000_000_000
_MAXIMUM = {
    "num_hidden_layers": MAX_LAYERS,
    "full_attention_interval": MAX_LAYERS,
    **dict.fromkeys(
        (
            "num_attention_heads",
            "num_key_value_heads",
            "num_local_experts",
            "n_routed_experts",
            "num_experts",
            "num_experts_per_tok",
            "n_shared_experts",
            "index_n_heads",
            "linear_num_value_heads",
            "linear_num_key_heads",
        ),
        MAX_COUNT,
    ),
    **dict.fromkeys(("max_position_embeddings", "sliding_window", "attention_chunk_size", "index_topk"), MAX_TOKENS),
}
MAX_UNMAPPED_SHOWN = 50  # unknown keys named after a draft is written; the rest counted

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
    # keys kb does not know, as a person is shown them: escaped, cut short, the first MAX_UNMAPPED_SHOWN
    # and then how many more
    unmapped: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # fields the config does not settle


MAX_CONFIG_JSON_BYTES = 5 * 1024 * 1024  # a real config.json is a few KB


def load_config(path: Path) -> dict[str, Any]:
    """The config as data, read as kb reads every file it did not write (kbtools.files): opened without
    blocking, a FIFO, device or directory refused by fstat unread, at most MAX_CONFIG_JSON_BYTES read.
    Nested at most MAX_DEPTH deep; a number too long to be a count becomes a LongNumber, refused by name
    only where kb reads it."""
    try:
        raw, _ = read_regular_file(path, MAX_CONFIG_JSON_BYTES)
    except NotReadable as exc:
        hint = "; a config.json is a few KB" if exc.too_large else ""
        raise ConfigError(f"{path}: {exc}{hint}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 (at byte {exc.start + 1})") from None
    too_deep = ConfigError(f"{path}: nested more than {MAX_DEPTH} levels deep; a config.json is a few levels at most")
    try:
        data = json.loads(text, parse_int=_number)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except RecursionError:  # json's C scanner recurses per level: far past MAX_DEPTH it gives up first
        raise too_deep from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1:1: a config.json is one JSON object, not {type(data).__name__}")
    if _depth(data) > MAX_DEPTH:
        raise too_deep
    return data


class LongNumber:
    """A JSON integer of more than MAX_DIGITS digits: no count or size in any config, kept as its length
    only (Python refuses to make an int of over 4,300 digits, and a draft must never carry one)."""

    def __init__(self, digits: int):
        self.digits = digits

    def __repr__(self) -> str:
        return f"a {self.digits}-digit number"


def _number(text: str) -> int | LongNumber:
    digits = len(text.lstrip("-"))
    return LongNumber(digits) if digits > MAX_DIGITS else int(text)


def _depth(data: Any) -> int:
    """How deep objects and arrays nest (the config itself is 1), walked without recursion; stops once
    past MAX_DEPTH."""
    deepest, stack = 0, [(data, 1)]
    while stack and deepest <= MAX_DEPTH:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (value.values() if isinstance(value, dict) else value))
    return deepest


def _shown(value: Any) -> str:
    """A value or key from the config as a message quotes it: repr, so a control character is an escape
    and never reaches the terminal raw, cut short."""
    return clipped(repr(value))


def _shown_list(values: list[Any], at_most: int) -> str:
    shown = ", ".join(_shown(v) for v in values[:at_most])
    return shown + (f" and {len(values) - at_most:,} more" if len(values) > at_most else "")


def _int(config: dict, key: str, path: Path, minimum: int = 1) -> int | None:
    """The whole number the config gives under `key`, or None; refused, naming the key, unless it lies
    between `minimum` and the key's maximum (_MAXIMUM)."""
    value = config.get(key)
    if value is None:
        return None
    maximum = _MAXIMUM.get(key, MAX_WIDTH)
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ConfigError(
            f"{path}: '{one_line(key)}' is {_shown(value)}; it must be a whole number from {minimum} to {maximum:,}"
        )
    return value


def read_config(config: dict[str, Any], path: Path, field_map: dict[str, str]) -> Reading:
    reading = Reading()
    if isinstance(config.get("text_config"), dict):  # a multimodal wrapper: the language model's shape is inside
        reading.notes.append("read from the config's text_config (the language model of a multimodal checkpoint)")
        config = {**{k: v for k, v in config.items() if k != "text_config"}, **config["text_config"]}
    out = reading.fields
    for key, target in field_map.items():
        value = _int(config, key, path)
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
    position = _int(config, "max_position_embeddings", path)
    if position is not None:
        out["max_context"] = f"{position} token"
    reading.missing.append(
        "params_total and params_active (config.json does not state them; take them from the model card)"
    )
    known = set(field_map) | _STRUCTURAL | _IGNORED | {"max_position_embeddings"}
    unmapped = sorted(k for k in config if k not in known)
    reading.unmapped = [clipped(k) for k in unmapped[:MAX_UNMAPPED_SHOWN]]
    if len(unmapped) > MAX_UNMAPPED_SHOWN:
        reading.unmapped.append(f"(and {len(unmapped) - MAX_UNMAPPED_SHOWN:,} more)")
    return reading


def _attention(config: dict, path: Path, reading: Reading, heads: int | None) -> None:
    out = reading.fields
    mla = {
        k: _int(config, k, path)
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
    kv_heads = _int(config, "num_key_value_heads", path)
    if kv_heads is None:
        kv_heads = heads
        reading.notes.append(
            "num_key_value_heads is absent, which in Hugging Face configs means one KV head per query head (MHA)"
        )
    if heads % kv_heads:
        raise ConfigError(f"{path}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
    out["num_kv_heads"] = kv_heads
    out["attention"] = "mha" if kv_heads == heads else "mqa" if kv_heads == 1 else "gqa"
    head_dim = _int(config, "head_dim", path)
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
    window = _int(config, "sliding_window", path)
    types = config.get("layer_types")
    if types is not None:
        if not isinstance(types, list):
            raise ConfigError(f"{path}: layer_types must be a list of layer kinds")
        if len(types) > MAX_LAYERS:
            raise ConfigError(f"{path}: 'layer_types' lists {len(types)} layers; kb reads at most {MAX_LAYERS}")
        if not all(isinstance(t, str) for t in types):
            raise ConfigError(f"{path}: layer_types must be a list of layer kinds")
        if layers is not None and len(types) != layers:
            raise ConfigError(f"{path}: layer_types lists {len(types)} layers, but num_hidden_layers is {layers}")
        kinds = Counter(types)  # one pass, in first-seen order
        unknown = [
            t
            for t in kinds
            if t not in ("full_attention", "sliding_attention", "linear_attention", "chunked_attention")
        ]
        if unknown:
            raise ConfigError(f"{path}: layer_types has kinds kb does not know: {_shown_list(unknown, 5)}")
        windowed = kinds.get("sliding_attention", 0) + kinds.get("chunked_attention", 0)
        if windowed:
            size = window if kinds.get("sliding_attention") else _int(config, "attention_chunk_size", path)
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
    elif (interval := _int(config, "full_attention_interval", path)) is not None and layers is not None:
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
            value = _int(config, key, path)
            if value is not None:
                out[key] = value
    for key, target in (("index_n_heads", "index_n_heads"), ("index_head_dim", "index_head_dim")):
        value = _int(config, key, path)
        if value is not None:
            out[target] = value
    topk = _int(config, "index_topk", path)
    if topk is not None:
        out["sparse_topk"] = f"{topk} token"
        reading.missing.append("index_dtype_size (the indexer's cache dtype is not in the config)")


def _moe(config: dict, path: Path, reading: Reading) -> None:
    out = reading.fields
    experts = next(
        (v for v in (_int(config, k, path) for k in ("num_local_experts", "n_routed_experts", "num_experts")) if v),
        None,
    )
    if experts:
        out["architecture"] = "moe"
        out["num_experts"] = experts
        per_token = _int(config, "num_experts_per_tok", path)
        if per_token is None:
            raise ConfigError(f"{path}: the config has {experts} experts but no num_experts_per_tok")
        if per_token > experts:
            raise ConfigError(f"{path}: num_experts_per_tok {per_token} exceeds the {experts} experts")
        out["experts_per_token"] = per_token
        shared = _int(config, "n_shared_experts", path, 0)
        if shared is not None:
            out["shared_experts"] = shared
        elif _int(config, "shared_expert_intermediate_size", path, 0):
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
