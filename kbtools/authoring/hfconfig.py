"""`kb new TYPE --from-config PATH`: a record's fields read from a Hugging Face `config.json`.

Which type reads configs, and which config keys become which fields one to one, is data in that
type's schema (`x-kb-from-config`: {"format": "huggingface", "fields": {config key: field}}). How a
config is read depends on its architecture: config.json leaves conventions implicit that each
architecture's transformers code supplies (Falcon's `multi_query` means one KV head; Gemma 2 slides
on alternate layers though no key says so; a key the file lacks takes its configuration class's
default). Those conventions are data too, one rule per `model_type` in hf_architectures.json beside
this module, each citing the transformers files it was read from; the vocabulary of a rule is
described at the top of that file. kbtools.authoring.hfarchitecture interprets the rules, once for
every architecture: the attention kind (MHA/GQA/MQA from the KV head count, MLA from its ranks), the
head width, the layer layout (`layer_types`, or the layout the configuration class makes), state and
MoE counts; kbtools.authoring.hfvalues loads the file and reads its numbers within bounds. This module
reads one config with them (read_config) and writes the draft (record_text).

Nothing is guessed. A config whose model_type has no rule is refused, and so is one that sets a key
able to change the KV cache's size which its rule does not read. A field the config does not settle
is left out and named. A config that contradicts itself is refused and nothing is written: heads
that do not divide, a layer list of the wrong length, MLA without its RoPE width. Keys kb does not
know are listed, so the reader sees what was not carried over.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbtools.authoring.hfarchitecture import (
    RULES_NAME,
    Architecture,
    _attention,
    _language_model,
    _layout,
    _moe,
    _refuse_unread_kv_keys,
    _refuse_values,
    _sparse_indexer,
    _uneven_kv,
    architecture_rules,
)
from kbtools.authoring.hfvalues import (
    _DTYPE_BYTES,
    _IGNORED,
    _STRUCTURAL,
    MAX_UNMAPPED_SHOWN,
    SERVED_DTYPE,
    SERVED_WHY,
    ConfigError,
    Reading,
    _int,
    _shown,
)
from kbtools.diagnostics import clipped


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
        remote = " (its auto_map names remote code, which kb does not run)" if config.get("auto_map") else ""
        raise ConfigError(
            f"{path}: model_type {_shown(model_type)} has no rule in {RULES_NAME} (read from transformers "
            f"{rules['transformers']}){remote}; kb will not guess how its code reads the config: write the record by "
            "hand, or add a rule citing the transformers files it follows"
        )
    arch = Architecture(str(model_type), rule, path)
    if "remote_code" in rule and config.get("auto_map"):
        reading.notes.append(f"the config's auto_map names remote code, which kb does not run: {rule['remote_code']}")
    _refuse_unread_kv_keys(config, arch, rules["kv_keys"])
    _refuse_values(config, arch)
    config = arch.as_read(config, reading)
    out = reading.fields
    for key, target in field_map.items():
        value = _int(config, key, path)
        if value is not None:
            out[target] = value
    layers, heads = out.get("num_layers"), out.get("num_attention_heads")
    _attention(config, arch, reading, heads)
    kinds = _layout(config, arch, reading, layers)
    _uneven_kv(config, arch, reading, kinds)
    _sparse_indexer(config, arch, reading)
    _moe(config, path, reading)
    dtype = config.get("torch_dtype") or config.get("dtype")
    if isinstance(dtype, str) and dtype in SERVED_DTYPE:  # float32: served, and its KV cached, in 16 bits
        served = SERVED_DTYPE[dtype]
        out["kv_dtype_size"] = f"{_DTYPE_BYTES[served]} B"
        reading.comments["kv_dtype_size"] = (
            f"{served}, not the config's {dtype}: vLLM's dtype 'auto' serves float32 in {served} on GPUs of "
            "compute capability 8.0+ (vllm/config/model.py _resolve_auto_dtype at 18ec6629)"
        )
        reading.notes.append(
            f"kv_dtype_size is {_DTYPE_BYTES[served]} B ({served}), not the {_DTYPE_BYTES[dtype]} B of the config's "
            f"{dtype}: {SERVED_WHY}; an engine may also cache KV in another type (FP8 halves it)"
        )
    elif isinstance(dtype, str) and dtype in _DTYPE_BYTES:
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
        comment = f"  # {reading.comments[key]}" if key in reading.comments else ""
        lines.append(f"{key}: {value}{comment}")
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
