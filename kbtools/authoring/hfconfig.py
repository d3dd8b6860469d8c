"""`kb new TYPE --from-config PATH`: a record's fields read from a Hugging Face `config.json`.

Which type reads configs, and which config keys become which fields one to one, is data in that
type's schema (`x-kb-from-config`: {"format": "huggingface", "fields": {config key: field}}). How a
config is read depends on its architecture: config.json leaves conventions implicit that each
architecture's transformers code supplies (Falcon's `multi_query` means one KV head; Gemma 2 slides
on alternate layers though no key says so; a key the file lacks takes its configuration class's
default). Those conventions are data too, one rule per `model_type` in hf_architectures.json beside
this module, each citing the transformers files it was read from; the vocabulary of a rule is
described at the top of that file. This module interprets the rules, once for every architecture:
the attention kind (MHA/GQA/MQA from the KV head count, MLA from its ranks), the head width, the
layer layout (`layer_types`, or the layout the configuration class makes), MoE counts and the
weights' dtype.

Nothing is guessed. A config whose model_type has no rule is refused, and so is one that sets a key
able to change the KV cache's size which its rule does not read. A field the config does not settle
is left out and named. A config that contradicts itself is refused and nothing is written: heads
that do not divide, a layer list of the wrong length, MLA without its RoPE width. Keys kb does not
know are listed, so the reader sees what was not carried over.
"""

from __future__ import annotations

import functools
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
    **dict.fromkeys(
        (
            "num_hidden_layers",
            "full_attention_interval",
            "max_window_layers",
            "sliding_window_pattern",
            "no_rope_layer_interval",
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
    rules = architecture_rules()
    config = _language_model(config, path, rules, reading)
    model_type = config.get("model_type")
    if model_type is None:
        raise ConfigError(
            f"{path}: the config names no model_type; kb reads a config only by its architecture's rule "
            f"({RULES_NAME}) and never guesses one: add the model_type, or write the record by hand"
        )
    rule = rules["architectures"].get(model_type) if isinstance(model_type, str) else None
    if rule is None:
        raise ConfigError(
            f"{path}: model_type {_shown(model_type)} has no rule in {RULES_NAME} (read from transformers "
            f"{rules['transformers']}); kb will not guess how its code reads the config: write the record by hand, "
            "or add a rule citing the transformers files it follows"
        )
    arch = Architecture(str(model_type), rule, path)
    _refuse_unread_kv_keys(config, arch, rules["kv_keys"])
    config = arch.as_read(config, reading)
    out = reading.fields
    for key, target in field_map.items():
        value = _int(config, key, path)
        if value is not None:
            out[target] = value
    layers, heads = out.get("num_layers"), out.get("num_attention_heads")
    _attention(config, arch, reading, heads)
    _layout(config, arch, reading, layers)
    _sparse_indexer(config, arch, reading)
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
    known = set(field_map) | _STRUCTURAL | _IGNORED | arch.understood | set(rules["kv_keys"])
    unmapped = sorted(k for k in config if k not in known and k not in arch.supplied)
    reading.unmapped = [clipped(k) for k in unmapped[:MAX_UNMAPPED_SHOWN]]
    if len(unmapped) > MAX_UNMAPPED_SHOWN:
        reading.unmapped.append(f"(and {len(unmapped) - MAX_UNMAPPED_SHOWN:,} more)")
    return reading


RULES_FILE = Path(__file__).with_name("hf_architectures.json")
RULES_NAME = "kbtools/authoring/hf_architectures.json"
LAYER_KINDS = ("full_attention", "sliding_attention", "linear_attention", "chunked_attention")


@functools.cache
def architecture_rules() -> dict[str, Any]:
    """The rules, as shipped beside this module (package data): read once."""
    rules: dict[str, Any] = json.loads(RULES_FILE.read_text(encoding="utf-8"))
    return rules


def _language_model(config: dict, path: Path, rules: dict, reading: Reading) -> dict:
    """A multimodal wrapper's language model: its text_config, under the inner model_type (or the one the
    wrapper's configuration class gives it), with the wrapper's other keys (its dtype) beside it."""
    inner = config.get("text_config")
    if not isinstance(inner, dict):
        return config
    outer = config.get("model_type")
    wrapper = rules["wrappers"].get(outer, {}) if isinstance(outer, str) else {}
    inner_type = inner.get("model_type") or wrapper.get("text_model_type")
    inner_type = wrapper.get("renamed", {}).get(inner_type, inner_type)
    if inner_type is None:
        raise ConfigError(
            f"{path}: text_config names no model_type, and {RULES_NAME} does not say which language model a "
            f"{_shown(outer)} config wraps; add text_config's model_type, or write the record by hand"
        )
    reading.notes.append(
        f"read from the config's text_config (the language model of a multimodal checkpoint), model_type {inner_type}"
    )
    return {**{k: v for k, v in config.items() if k != "text_config"}, **inner, "model_type": inner_type}


def _asks_for_something(value: Any) -> bool:
    """A key set to null, false or [] changes nothing, whoever reads it."""
    return value is not None and value is not False and value != []


def _refuse_unread_kv_keys(config: dict, arch: Architecture, kv_keys: dict[str, str]) -> None:
    for key, what in kv_keys.items():
        if key in config and _asks_for_something(config[key]) and key not in arch.understood:
            raise ConfigError(
                f"{arch.path}: '{key}' ({what}) is set, but kb's rule for model_type '{arch.model_type}' "
                f"({arch.cited}) does not read it, so kb cannot tell what it does to the KV cache: write the record "
                f"by hand, or extend the rule in {RULES_NAME}"
            )


class Architecture:
    """One model_type's rule: how its transformers code reads a config (the vocabulary is described at
    the top of hf_architectures.json)."""

    def __init__(self, model_type: str, rule: dict[str, Any], path: Path):
        self.model_type, self.rule, self.path = model_type, rule, path
        source = rule["source"]
        self.cited = f"transformers {source['transformers']} {', '.join(source['files'])}"
        self.kv_heads = rule.get("kv_heads", [{"key": "num_key_value_heads"}])
        self.head_dim = rule.get("head_dim", {"key": "head_dim"})
        self.default_layers = rule.get("default_layers")
        self.supplied: set[str] = set()  # keys the config lacked and the rule supplied
        self.understood = self._keys_named()

    def _keys_named(self) -> set[str]:
        """Every config key the rule says how to read: those the type's code understands."""
        rule = self.rule
        keys = set(rule.get("defaults", {})) | set(rule.get("when_null", {})) | set(rule.get("not_read", {}))
        keys |= set(rule.get("aliases", {})) | set(rule.get("aliases", {}).values())
        for alternative in self.kv_heads:
            keys |= {alternative.get("when"), alternative.get("key")}
        for expression in [self.head_dim, *rule.get("when_null", {}).values(), *rule.get("linear_state", {}).values()]:
            keys |= _expression_keys(expression)
        keys |= set(rule.get("sparse_indexer", {}).values())
        keys.add(rule.get("window_off_unless"))
        if rule.get("layer_types") == "read":
            keys.add("layer_types")
        if self.default_layers:
            layout = self.default_layers
            keys |= set(layout.get("when", [])) | {
                layout.get("from_layer"),
                layout.get("below_layer"),
                layout.get("flags"),
            }
            if isinstance(layout.get("period"), str):
                keys.add(layout["period"])
        keys.discard(None)
        return keys

    def as_read(self, config: dict, reading: Reading) -> dict:
        """The config as the type's code sees it: aliases under kb's names, the class's defaults where a key
        is absent, what stands in for a null, the window off where its switch is off. Each supplied value is
        noted in the record."""
        config = dict(config)
        for alias, name in self.rule.get("aliases", {}).items():
            if alias in config and name not in config:
                config[name] = config.pop(alias)
                reading.notes.append(f"{name} is read from '{alias}' ({self.model_type}'s configuration reads it so)")
        for key, value in self.rule.get("defaults", {}).items():
            if key not in config:
                config[key] = value
                self.supplied.add(key)
                if value is not None and value is not False:
                    reading.notes.append(
                        f"{key} {value} is the default of {self.model_type}'s configuration class; the config gives none"
                    )
        for key, expression in self.rule.get("when_null", {}).items():
            if config.get(key) is None:
                config[key] = self.evaluate(config, expression, key)
                self.supplied.add(key)
                if config[key] is not None:
                    reading.notes.append(self._stand_in(config, key, expression))
        switch = self.rule.get("window_off_unless")
        if switch and not self.flag(config, switch) and config.get("sliding_window") is not None:
            config["sliding_window"] = None
            reading.notes.append(f"sliding_window is not applied: {switch} is off")
        return config

    def _stand_in(self, config: dict, key: str, expression: dict) -> str:
        if "quotient" in expression:
            a, b = expression["quotient"]
            return f"{key} is {a} ÷ {b} ({config[a]} ÷ {config[b]}); the config gives none"
        value = config[key]
        return f"{key} is absent, which {self.model_type}'s configuration reads as {expression['key']} ({value})"

    def evaluate(self, config: dict, expression: dict, what: str) -> int | None:
        """A number the rule computes: {"key": k} or {"quotient": [a, b]}; None when a key it needs is unset."""
        if "quotient" in expression:
            a, b = expression["quotient"]
            dividend, divisor = _int(config, a, self.path), _int(config, b, self.path)
            if dividend is None or divisor is None:
                return None
            if dividend % divisor:
                raise ConfigError(
                    f"{self.path}: {what} is {a} ÷ {b} for {self.model_type}, but {a} {dividend} is not a multiple "
                    f"of {b} {divisor}"
                )
            return dividend // divisor
        return _int(config, expression["key"], self.path)

    def flag(self, config: dict, key: str) -> bool:
        """A switch the code tests for truth (multi_query, use_sliding_window), or a value it tests for being set."""
        value = config.get(key)
        if value is None or isinstance(value, bool):
            return bool(value)
        return _int(config, key, self.path) is not None  # a count (a window, a chunk), checked as every number kb reads


def _expression_keys(expression: dict) -> set[str]:
    return set(expression.get("quotient", [])) | ({expression["key"]} if "key" in expression else set())


def _attention(config: dict, arch: Architecture, reading: Reading, heads: int | None) -> None:
    out, path = reading.fields, arch.path
    if arch.rule.get("attention") == "mla":
        mla = {
            k: _int(config, k, path)
            for k in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
        }
        lacking = [k for k in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim") if mla[k] is None]
        if lacking:
            raise ConfigError(
                f"{path}: {arch.model_type} is MLA, but {', '.join(lacking)} is missing; MLA's KV and attention FLOP need it"
            )
        out["attention"] = "mla"
        out.update({k: v for k, v in mla.items() if v is not None})
        return
    if heads is None:
        raise ConfigError(f"{path}: num_attention_heads is missing; kb cannot tell the attention kind")
    kv_heads = _kv_heads(config, arch, reading)
    if heads % kv_heads:
        raise ConfigError(f"{path}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
    out["num_kv_heads"] = kv_heads
    out["attention"] = "mha" if kv_heads == heads else "mqa" if kv_heads == 1 else "gqa"
    head_dim = arch.evaluate(config, arch.head_dim, "head_dim")
    hidden = out.get("hidden_size")
    if head_dim is None:
        reading.missing.append(f"head_dim (not in the config, and {arch.model_type}'s code computes none)")
        return
    out["head_dim"] = head_dim
    if arch.head_dim != {"key": "head_dim"}:
        reading.notes.append(
            f"head_dim is hidden_size ÷ num_attention_heads ({hidden} ÷ {heads}), as {arch.model_type}'s code computes it"
        )
    elif hidden and hidden != head_dim * heads and "head_dim" not in arch.supplied:
        reading.notes.append(
            f"head_dim {head_dim} is given explicitly and is not hidden_size ÷ heads ({hidden} ÷ {heads})"
        )


def _kv_heads(config: dict, arch: Architecture, reading: Reading) -> int:
    """The KV head count by the first of the rule's alternatives whose condition holds."""
    for alternative in arch.kv_heads:
        condition = alternative.get("when")
        if condition is not None and not arch.flag(config, condition):
            continue
        if "value" in alternative:
            reading.notes.append(f"{alternative['value']} KV head, because {condition} is set ({arch.model_type})")
            return int(alternative["value"])
        key = alternative["key"]
        value = _int(config, key, arch.path)
        if value is None:
            raise ConfigError(
                f"{arch.path}: {key} is null or missing and {arch.model_type}'s configuration supplies none; "
                "kb cannot tell the KV head count"
            )
        if key != "num_key_value_heads":
            reading.notes.append(
                f"the KV head count is {key} ({value})" + (f", because {condition} is set" if condition else "")
            )
        return value
    raise ConfigError(f"{arch.path}: no rule alternative gives {arch.model_type}'s KV head count")


def _layout(config: dict, arch: Architecture, reading: Reading, layers: int | None) -> None:
    out, path = reading.fields, arch.path
    kinds = _layer_kinds(config, arch, reading, layers)
    if kinds is None:
        return
    counts = Counter(kinds)  # one pass, in first-seen order
    sliding, chunked = counts.get("sliding_attention", 0), counts.get("chunked_attention", 0)
    if sliding and chunked:
        raise ConfigError(f"{path}: layers both slide and chunk; a model record has one window: write it by hand")
    if sliding or chunked:
        key = "sliding_window" if sliding else "attention_chunk_size"
        size = _int(config, key, path)
        if size is None:
            raise ConfigError(f"{path}: the layers include windowed ones but the config gives no window size ({key})")
        out.update(
            sliding_window_layers=sliding + chunked,
            sliding_window=f"{size} token",
            window_kind="sliding" if sliding else "chunked",
        )
    if counts.get("linear_attention"):
        state = arch.rule.get("linear_state")
        if state is None:
            raise ConfigError(
                f"{path}: the layers include linear_attention ones, and kb's rule for {arch.model_type} does not say "
                "what state they keep"
            )
        out["linear_attention_layers"] = counts["linear_attention"]
        for field_name, expression in state.items():
            value = arch.evaluate(config, expression, field_name)
            if value is not None:
                out[field_name] = value


def _layer_kinds(config: dict, arch: Architecture, reading: Reading, layers: int | None) -> list[str] | None:
    """Each layer's kind: the config's layer_types where the type's code reads it, else the layout its
    configuration class makes (default_layers); None when every layer is full attention."""
    path = arch.path
    types = config.get("layer_types") if arch.rule.get("layer_types") == "read" else None
    if types is not None:
        if not isinstance(types, list):
            raise ConfigError(f"{path}: layer_types must be a list of layer kinds")
        if len(types) > MAX_LAYERS:
            raise ConfigError(f"{path}: 'layer_types' lists {len(types)} layers; kb reads at most {MAX_LAYERS}")
        if not all(isinstance(t, str) for t in types):
            raise ConfigError(f"{path}: layer_types must be a list of layer kinds")
        if layers is not None and len(types) != layers:
            raise ConfigError(f"{path}: layer_types lists {len(types)} layers, but num_hidden_layers is {layers}")
        unknown = [t for t in Counter(types) if t not in LAYER_KINDS]
        if unknown:
            raise ConfigError(f"{path}: layer_types has kinds kb does not know: {_shown_list(unknown, 5)}")
        reading.notes.append(
            "layer counts from layer_types: " + ", ".join(f"{n} {t}" for t, n in Counter(types).items())
        )
        return types
    layout = arch.default_layers
    if layout is None or layers is None:
        return None
    if not all(arch.flag(config, key) for key in layout.get("when", [])):
        return None
    kind = layout["kind"]
    kinds = [
        kind if arch_layer else "full_attention" for arch_layer in _default_layer_pattern(config, arch, layout, layers)
    ]
    if kind in kinds:
        reading.notes.append(
            f"layer counts from {arch.model_type}'s default layout (no layer_types): "
            + ", ".join(f"{n} {t}" for t, n in Counter(kinds).items())
        )
    return kinds


def _default_layer_pattern(config: dict, arch: Architecture, layout: dict, layers: int) -> list[bool]:
    """Whether each layer is of the layout's kind, as the configuration class builds its layer_types."""
    path = arch.path
    flags_key = layout.get("flags")
    flags = config.get(flags_key) if flags_key else None
    if flags:  # a per-layer list in the config decides
        if not isinstance(flags, list) or len(flags) != layers or not all(f in (0, 1) for f in flags):
            raise ConfigError(f"{path}: '{flags_key}' must list 0 or 1 for each of the {layers} layers")
        return [f == layout["flag_value"] for f in flags]
    period = layout.get("period")
    if isinstance(period, str):
        period = _int(config, period, path)
        if period is None:
            raise ConfigError(f"{path}: '{layout['period']}' is null; kb cannot tell which layers are {layout['kind']}")
    start = (_int(config, layout["from_layer"], path, 0) or 0) if "from_layer" in layout else 0
    stop = _int(config, layout["below_layer"], path, 0) if "below_layer" in layout else None
    stop = layers if stop is None else stop
    at_end = layout.get("at", "every_but_end") == "end_of_period"
    return [start <= i < stop and (period is None or ((i + 1) % period == 0) == at_end) for i in range(layers)]


def _sparse_indexer(config: dict, arch: Architecture, reading: Reading) -> None:
    """Top-k sparse attention with an indexer (DeepSeek Sparse Attention), where the type's rule names the
    keys its code reads the indexer's heads, head width and top-k from."""
    keys = arch.rule.get("sparse_indexer")
    if keys is None:
        return
    values = {role: _int(config, keys[role], arch.path) for role in ("n_heads", "head_dim", "topk")}
    lacking = [keys[role] for role, value in values.items() if value is None]
    if lacking:
        raise ConfigError(
            f"{arch.path}: {arch.model_type} attends top-k with an indexer, but the config gives no {', '.join(lacking)}"
        )
    heads, head_dim, topk = values["n_heads"], values["head_dim"], values["topk"]
    reading.fields.update(index_n_heads=heads, index_head_dim=head_dim, sparse_topk=f"{topk} token")
    reading.missing.append("index_dtype_size (the indexer's key cache dtype is not in the config)")


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
