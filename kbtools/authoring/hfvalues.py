"""What kb reads of a Hugging Face config.json, and what a reading collects: the file loaded within bounds,
its numbers read with caps that keep a typo or an attack out of a draft, and the fields, notes and gaps of one
reading (kbtools.authoring.hfconfig reads a config with them; kbtools.authoring.hfarchitecture interprets its
architecture)."""

from __future__ import annotations

import json
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
    **dict.fromkeys(
        (
            "num_hidden_layers",
            "full_attention_interval",
            "max_window_layers",
            "sliding_window_pattern",
            "no_rope_layer_interval",
            "index_topk_freq",
            "index_skip_topk_offset",
        ),
        MAX_LAYERS,
    ),
    **dict.fromkeys(
        (
            "num_attention_heads",
            "num_key_value_heads",
            "num_kv_heads",
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
    "max_position_embeddings",
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
# the dtype a checkpoint is served and its KV cached in, where not the config's (SERVED_WHY, which a draft's note
# quotes); the code read: https://github.com/vllm-project/vllm/blob/18ec6629253632af0a384f2ffbb8c6b28af322e7/vllm/
# config/model.py, https://github.com/vllm-project/vllm/blob/1c0d9ecf5bad600df3e001bf642dd48c5ed25cc6/vllm/platforms/
# cuda.py and https://github.com/vllm-project/vllm/blob/c1d86421174a87056edc90a41dc9942391509e84/vllm/config/cache.py
SERVED_DTYPE = {"float32": "bfloat16"}
SERVED_WHY = (
    "vLLM serves a float32 checkpoint in bfloat16 on NVIDIA GPUs of compute capability 8.0 and later by default: its "
    "dtype 'auto' replaces float32 by the GPU's first supported dtype (_resolve_auto_dtype in vllm/config/model.py at "
    "18ec6629; CudaPlatformBase.supported_dtypes in vllm/platforms/cuda.py at 1c0d9ecf), and its KV cache takes the "
    "model's dtype (cache_dtype 'auto', vllm/config/cache.py at c1d86421); older GPUs get float16, or float32 for "
    "model types vLLM keeps off float16 (gemma2 among them)"
)


class ConfigError(Exception):
    """The config cannot be read, or contradicts itself: nothing is written."""


@dataclass
class Reading:
    fields: dict[str, Any] = field(default_factory=dict)
    comments: dict[str, str] = field(default_factory=dict)  # a field's line comment in the draft, where it has one
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
