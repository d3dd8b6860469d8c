"""The conventions each architecture's code supplies that config.json leaves implicit, as one rule per
`model_type` in hf_architectures.json, and their interpretation: the attention kind, the head width, the layer
layout, linear-attention state, sparse indexers and MoE counts (kbtools.authoring.hfconfig applies them)."""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path
from typing import Any

from kbtools.authoring.hfvalues import _DTYPE_BYTES, MAX_LAYERS, ConfigError, Reading, _int, _shown, _shown_list

RULES_FILE = Path(__file__).with_name("hf_architectures.json")
RULES_NAME = "kbtools/authoring/hf_architectures.json"
MLA_KEYS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
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


def _refuse_values(config: dict, arch: Architecture) -> None:
    for key, values in arch.rule.get("refused_values", {}).items():
        value = config.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) in values:
            raise ConfigError(
                f"{arch.path}: '{key}' is {_shown(value)}: {values[str(value)]}; kb's model record cannot represent "
                f"it ({arch.cited}): write the record by hand"
            )
    for key, allowed in arch.rule.get("allowed_values", {}).items():
        value = config.get(key)
        if value is None:
            continue
        given = value if isinstance(value, list) else [value]
        others = [v for v in given if isinstance(v, bool) or v not in allowed["values"]]
        if others:
            raise ConfigError(
                f"{arch.path}: '{key}' holds {_shown_list(others, 5)}, where {arch.model_type}'s code takes only "
                f"{_shown_list(allowed['values'], 5)}: {allowed['why']} ({arch.cited}): write the record by hand"
            )


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
        keys |= {alternative["key"] for alternative in rule.get("layer_pattern", [])}
        keys |= {rule.get("linear_state_dtype", {}).get(k) for k in ("key", "declared_by")}
        keys |= _expression_keys(rule.get("state_not_counted", {}).get("elements", {}))
        for geometry in rule.get("per_layer_kv", {}).values():
            for alternative in geometry.get("kv_heads", []):
                keys |= {alternative.get("when"), alternative.get("key")}
            keys |= _expression_keys(geometry.get("head_dim", {}))
        keys.add(rule.get("kv_shared_layers"))
        keys |= set(rule.get("refused_values", {})) | set(rule.get("allowed_values", {}))
        indexer_layers = rule.get("indexer_layers", {})
        keys |= {indexer_layers.get(k) for k in ("types", "pattern", "every", "offset")}
        if rule.get("attention") == "mla":
            keys |= set(MLA_KEYS)
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


def _expression_keys(expression: Any) -> set[str]:
    """The config keys an expression reads: {key}, {quotient}, or (state_not_counted) {product}, {sum}, {minus}
    over keys, numbers and expressions."""
    if isinstance(expression, str):
        return {expression}
    if not isinstance(expression, dict):
        return set()
    keys = set(expression.get("quotient", [])) | ({expression["key"]} if "key" in expression else set())
    for operator in ("product", "sum", "minus"):
        for term in expression.get(operator, []):
            keys |= _expression_keys(term)
    return keys


def _elements(config: dict, arch: Architecture, expression: Any) -> int | None:
    """A count the rule computes from config keys (state_not_counted's elements); None when a key is unset."""
    if isinstance(expression, int):
        return expression
    if isinstance(expression, str):
        return _int(config, expression, arch.path, 0)
    operator = next(op for op in ("product", "sum", "minus") if op in expression)
    read = [_elements(config, arch, term) for term in expression[operator]]
    terms = [term for term in read if term is not None]
    if len(terms) != len(read):
        return None
    if operator == "minus":
        return max(terms[0] - sum(terms[1:]), 0)
    total = 1 if operator == "product" else 0
    for term in terms:
        total = total * term if operator == "product" else total + term
    return total


def _attention(config: dict, arch: Architecture, reading: Reading, heads: int | None) -> None:
    out, path = reading.fields, arch.path
    if arch.rule.get("attention") == "mla":
        mla = {k: _int(config, k, path) for k in MLA_KEYS}
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


def _layout(config: dict, arch: Architecture, reading: Reading, layers: int | None) -> list[str] | None:
    """The layer counts, window and linear-attention state the layer kinds imply; returns the kinds (None when
    every layer is full attention), which _uneven_kv reads for the layers that reuse another layer's KV."""
    out, path = reading.fields, arch.path
    kinds = _layer_kinds(config, arch, reading, layers)
    if kinds is None:
        return None
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
        _linear_state_dtype(config, arch, reading)
        _state_not_counted(config, arch, reading, counts["linear_attention"])
    return kinds


def _linear_state_dtype(config: dict, arch: Architecture, reading: Reading) -> None:
    """The bytes of one element of the linear-attention state: the dtype the config names under the rule's key,
    or the one the type's code fixes. Never left out silently: without either it is named as missing, since
    a KV-at-context figure would otherwise leave the whole state out."""
    rule = arch.rule.get("linear_state_dtype")
    if rule is None:
        reading.missing.append(
            f"linear_state_dtype_size (the element type of the linear-attention state: {arch.model_type}'s rule does "
            "not say what its code keeps it in; without it the record's KV at a context leaves the state out)"
        )
        return
    if "bytes" in rule:
        declared_by = rule.get("declared_by")
        declared = config.get(declared_by) if declared_by else None
        if declared is not None and declared != rule["dtype"]:
            reading.missing.append(
                f"linear_state_dtype_size (the config's {declared_by} is {_shown(declared)}, but {arch.model_type}'s "
                f"code keeps the state in {rule['dtype']}: {rule['why']}; which one an engine keeps is its choice, so "
                "kb drafts neither, and without it the record's KV at a context leaves the state out)"
            )
            return
        reading.fields["linear_state_dtype_size"] = f"{rule['bytes']} B"
        given = (
            f"the config's {declared_by} names the same" if declared is not None else "the config names no state dtype"
        )
        reading.notes.append(
            f"linear_state_dtype_size {rule['bytes']} B: {given}, and {arch.model_type}'s code keeps the state in "
            f"{rule['dtype']}: {rule['why']}"
        )
        return
    key = rule["key"]
    dtype = config.get(key)
    if isinstance(dtype, str) and dtype in _DTYPE_BYTES:
        reading.fields["linear_state_dtype_size"] = f"{_DTYPE_BYTES[dtype]} B"
        given = "the default of its configuration class" if key in arch.supplied else "as the config gives it"
        reading.notes.append(f"linear_state_dtype_size is {key} ({dtype}), {given}")
    else:
        reading.missing.append(
            f"linear_state_dtype_size ({key} is {_shown(dtype)}, no dtype kb knows; without it the record's KV at a "
            "context leaves the state out)"
        )


def _state_not_counted(config: dict, arch: Architecture, reading: Reading, layers: int) -> None:
    """State the type's code keeps that no model field holds: named in what the draft left out, with its size."""
    part = arch.rule.get("state_not_counted")
    if part is None:
        return
    elements = _elements(config, arch, part["elements"])
    size = (
        f"{elements:,} elements a layer, {layers * elements:,} over {layers} layers" if elements else "its size unread"
    )
    reading.missing.append(
        f"{part['what']}: {size}, at the dtype the engine keeps it in; kb has no model field for it, so "
        "linear_state_bytes and the KV at a context leave it out (say it in the record's prose)"
    )


def _layer_kinds(config: dict, arch: Architecture, reading: Reading, layers: int | None) -> list[str] | None:
    """Each layer's kind: the config's layer_types where the type's code reads it, else the layout its
    configuration class makes (default_layers); None when every layer is full attention."""
    path = arch.path
    if "layer_pattern" in arch.rule:
        return _layer_pattern(config, arch, reading, layers)
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


def _layer_pattern(config: dict, arch: Architecture, reading: Reading, layers: int | None) -> list[str]:
    """Each block's kind by the first of the rule's layer patterns the config gives (Nemotron-H's
    hybrid_override_pattern, one character a block), blocks without a token mixer (MLP, MoE) left out: kb's
    num_layers is then the blocks with attention or a state-space mixer, the layers that keep KV or a state."""
    path = arch.path
    alternative = next((a for a in arch.rule["layer_pattern"] if config.get(a["key"]) is not None), None)
    if alternative is None:
        keys = " or ".join(a["key"] for a in arch.rule["layer_pattern"])
        raise ConfigError(f"{path}: the config gives no {keys}; kb cannot tell which {arch.model_type} layers keep KV")
    key, pattern = alternative["key"], config[alternative["key"]]
    names = alternative.get("chars") or alternative["items"]
    form = str if "chars" in alternative else list
    if not isinstance(pattern, form):
        raise ConfigError(f"{path}: '{key}' must be a {'string' if form is str else 'list'} of block kinds")
    if len(pattern) > MAX_LAYERS:
        raise ConfigError(f"{path}: '{key}' lists {len(pattern)} layers; kb reads at most {MAX_LAYERS}")
    unknown = [b for b in Counter(pattern) if not isinstance(b, str) or b not in names]
    if unknown:
        raise ConfigError(f"{path}: '{key}' has block kinds kb does not know: {_shown_list(unknown, 5)}")
    if layers is not None and len(pattern) != layers:
        raise ConfigError(f"{path}: '{key}' lists {len(pattern)} layers, but num_hidden_layers is {layers}")
    kinds = [names[b] for b in pattern]
    mixers = [k for k in kinds if k != "none"]
    reading.fields["num_layers"] = len(mixers)
    reading.notes.append(
        f"layer counts from {key}: "
        + ", ".join(f"{n} {'MLP or MoE (no cache)' if t == 'none' else t}" for t, n in Counter(kinds).items())
        + f"; num_layers {len(mixers)} counts the blocks with attention or a state-space mixer, each of the "
        f"{len(pattern)} blocks being one or the other or a feed-forward block"
    )
    return mixers


WINDOWED_KINDS = ("sliding_attention", "chunked_attention")


def _uneven_kv(config: dict, arch: Architecture, reading: Reading, kinds: list[str] | None) -> None:
    """Layers whose KV differs from the record's one geometry (num_kv_heads x head_dim). Full-attention layers
    with their own KV heads or width (Gemma 4's) are drafted as the record's second shape, full_num_kv_heads
    and full_head_dim; layers reusing another layer's cache as kv_shared_layers and kv_shared_window_layers.
    Another kind with its own geometry has no field, so the geometry is left out and named, and no KV figure
    is derived from it: a draft never carries a KV figure kb knows is wrong."""
    out, path = reading.fields, arch.path
    if "num_kv_heads" not in out or "head_dim" not in out:
        return
    reasons = []
    windowed, linear = out.get("sliding_window_layers", 0), out.get("linear_attention_layers", 0)
    present = {
        "full_attention": out.get("num_layers", 0) - windowed - linear,
        "sliding_attention": windowed if out.get("window_kind") == "sliding" else 0,
        "chunked_attention": windowed if out.get("window_kind") == "chunked" else 0,
    }
    for kind, geometry in arch.rule.get("per_layer_kv", {}).items():
        if not present.get(kind):
            continue
        kv_heads, heads_from = _layer_kv_heads(config, arch, geometry, out["num_kv_heads"])
        head_dim = arch.evaluate(config, geometry["head_dim"], "head_dim") if "head_dim" in geometry else None
        width_from = geometry["head_dim"]["key"] if head_dim is not None and "key" in geometry["head_dim"] else None
        head_dim = out["head_dim"] if head_dim is None else head_dim
        if (kv_heads, head_dim) == (out["num_kv_heads"], out["head_dim"]):
            continue
        if kind != "full_attention":  # the model schema has a second KV shape for full-attention layers only
            reasons.append(
                f"its {kind} layers cache {kv_heads} KV heads x {head_dim}, the others {out['num_kv_heads']} x "
                f"{out['head_dim']}"
            )
            continue
        heads = out.get("num_attention_heads")
        if heads and heads % kv_heads:
            raise ConfigError(
                f"{path}: num_attention_heads {heads} is not a multiple of the full-attention layers' {kv_heads} KV "
                f"heads ({heads_from})"
            )
        out.update(full_num_kv_heads=kv_heads, full_head_dim=head_dim)
        reading.notes.append(
            f"the {present[kind]} full_attention layers cache {kv_heads} KV heads ({heads_from}) x {head_dim} "
            f"({width_from or 'head_dim'}), the other layers {out['num_kv_heads']} x {out['head_dim']}, as "
            f"{arch.model_type}'s code builds them: full_num_kv_heads and full_head_dim"
        )
    _kv_shared(config, arch, reading, kinds)
    if reasons:
        geometry = f"num_kv_heads {out.pop('num_kv_heads')}, head_dim {out.pop('head_dim')}"
        reading.missing.append(
            f"num_kv_heads and head_dim ({geometry} on some layers only): {'; '.join(reasons)}, and a model record "
            "has one KV geometry for every layer but full-attention ones, so kb leaves them out rather than draft a "
            "wrong KV figure"
        )


def _layer_kv_heads(config: dict, arch: Architecture, geometry: dict, others: int) -> tuple[int, str]:
    """A layer kind's KV head count by the first of its alternatives whose condition holds and whose key is set
    (Gemma 4: num_global_key_value_heads where attention_k_eq_v is set), else the other layers' count; with the
    key it came from, as the draft's note says it."""
    for alternative in geometry.get("kv_heads", []):
        condition = alternative.get("when")
        if condition is None or arch.flag(config, condition):
            value = _int(config, alternative["key"], arch.path)
            if value is not None:
                return value, alternative["key"] + (f", because {condition} is set" if condition else "")
    return others, "num_key_value_heads"


def _kv_shared(config: dict, arch: Architecture, reading: Reading, kinds: list[str] | None) -> None:
    """The last N layers reuse the KV of the last earlier layer of their own kind and keep none (Gemma 4's
    num_kv_shared_layers: modeling_gemma4.py's first_kv_shared_layer_idx and shared_kv_states by layer type):
    kv_shared_layers N, and kv_shared_window_layers the windowed ones among them by the layer layout."""
    key, path = arch.rule.get("kv_shared_layers"), arch.path
    shared = _int(config, key, path, 0) if key else None
    if not shared:
        return
    layers = reading.fields.get("num_layers")
    if layers is None:
        raise ConfigError(f"{path}: {key} is {shared}, but the config gives no num_hidden_layers to count them in")
    kinds = ["full_attention"] * layers if kinds is None else kinds
    if shared >= len(kinds):
        raise ConfigError(
            f"{path}: {key} {shared} is not fewer than the {len(kinds)} layers, so no layer would keep the KV they "
            f"reuse ({arch.cited})"
        )
    kept, reusing = kinds[: len(kinds) - shared], kinds[len(kinds) - shared :]
    orphans = sorted({kind for kind in reusing if kind not in kept or kind == "linear_attention"})
    if orphans:
        raise ConfigError(
            f"{path}: the last {shared} layers ({key}) include {_shown_list(orphans, 5)} layers, and no earlier "
            f"layer of that kind keeps a KV cache for them to reuse ({arch.cited}): write the record by hand"
        )
    windowed = sum(kind in WINDOWED_KINDS for kind in reusing)
    reading.fields.update(kv_shared_layers=shared, kv_shared_window_layers=windowed)
    reading.notes.append(
        f"kv_shared_layers {shared} ({key}): the last {shared} layers reuse the KV of the last earlier layer of "
        f"their kind and keep none; {windowed} of them are windowed and {shared - windowed} full attention, by the "
        "layer layout (kv_shared_window_layers)"
    )


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
    layers = _indexer_layers(config, arch, reading.fields.get("num_layers"))
    if layers is not None:
        own, total, key = layers
        reading.notes.append(f"{own} of the {total} layers run their own indexer ({key})")
        if own < total:
            for name in ("index_n_heads", "index_head_dim", "sparse_topk"):
                reading.fields.pop(name)
            reading.missing.append(
                f"index_n_heads, index_head_dim and sparse_topk ({heads} heads x {head_dim}, top-{topk}, on {own} of "
                f"the {total} layers only): the other {total - own} reuse an earlier layer's top-k and keep no indexer "
                f"keys ({key}), and a model record's indexer is on every layer, so kb leaves them out rather than "
                "count indexer keys that do not exist"
            )
            return
    reading.missing.append("index_dtype_size (the indexer's key cache dtype is not in the config)")


def _indexer_layers(config: dict, arch: Architecture, layers: int | None) -> tuple[int, int, str] | None:
    """How many layers run their own indexer, as the configuration class decides (GLM-5's indexer_types, or the
    pattern or period it builds them from): (own, layers, the key that decided)."""
    rule, path = arch.rule.get("indexer_layers"), arch.path
    if rule is None or layers is None:
        return None
    types, pattern = config.get(rule["types"]), config.get(rule["pattern"])
    if types is not None or pattern is not None:
        key = rule["types"] if types is not None else rule["pattern"]
        given = types if types is not None else pattern
        if isinstance(given, str) and key == rule["pattern"]:
            unknown = sorted({c for c in given if c not in rule["pattern_chars"]})
            if unknown:
                raise ConfigError(f"{path}: '{key}' has characters kb does not know: {_shown_list(unknown, 5)}")
            given = [rule["pattern_chars"][c] for c in given]
        if not isinstance(given, list) or not all(isinstance(t, str) for t in given):
            raise ConfigError(f"{path}: '{key}' must list each layer's indexer kind")
        if len(given) != layers:
            raise ConfigError(f"{path}: '{key}' lists {len(given)} layers, but num_hidden_layers is {layers}")
        kinds = set(rule["pattern_chars"].values())
        unknown = [t for t in Counter(given) if t not in kinds]
        if unknown:
            raise ConfigError(f"{path}: '{key}' has indexer kinds kb does not know: {_shown_list(unknown, 5)}")
        return sum(t == rule["own"] for t in given), layers, key
    every, offset = _int(config, rule["every"], path, 0), _int(config, rule["offset"], path, 0)
    decided = f"{rule['every']} {every}" if every is not None else f"no {rule['types']}, so by the class's defaults"
    every = rule["every_default"] if every is None else max(every, 1)
    offset = rule["offset_default"] if offset is None else offset
    own = sum(max(i - offset + 1, 0) % every == 0 for i in range(layers))
    return own, layers, f"{decided}: every {every} from offset {offset}"


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
