"""Generate a realistic knowledge base of N records for benchmarks (and tests).

    python benchmarks/generate.py OUT_DIR --records 10000 [--seed 1] [--defects 0.0]

The corpus uses this repository's schemas and theme overrides, and has every type, typed
references and wikilinks with realistic fan-out, quantities with units, derived
fields (bus width x pin rate, KV bytes by attention kind) and cost blocks with
for_each tables. With --defects a fraction of records carry seeded errors (a stated
figure off its derivation, a dangling link, a wrong unit).
"""

from __future__ import annotations

import argparse
import random
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORDS = (
    "the cache tier bandwidth prefix decode prefill token layer attention memory bytes latency throughput "
    "transfer offload engine scheduler batch kernel model accelerator link host storage residency recompute "
    "hit miss block page radix pool network copy read write path handoff worker node rack fabric"
).split()
SHARES = [
    ("source", 0.28),
    ("accelerator", 0.06),
    ("interconnect", 0.05),
    ("storage_tier", 0.06),
    ("model", 0.10),
    ("engine", 0.06),
    ("flop", 0.22),
    ("measurement", 0.15),
    ("hardware_parameter", 0.02),
]
DIRS = {
    "source": "sources",
    "accelerator": "accelerators",
    "interconnect": "interconnects",
    "storage_tier": "storage-tiers",
    "model": "models",
    "engine": "engines",
    "flop": "flops",
    "measurement": "measurements",
    "hardware_parameter": "hardware-parameters",
}


def sentence(rng: random.Random, links: list[str]) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(10, 22))]
    if links:
        words.insert(rng.randrange(len(words)), f"[[{rng.choice(links)}]]")
    return " ".join(words).capitalize() + "."


def body(rng: random.Random, links: list[str], extra: str = "") -> str:
    paragraphs = []
    for _ in range(rng.randint(3, 6)):
        paragraphs.append(
            "\n".join(sentence(rng, links if rng.random() < 0.6 else []) for _ in range(rng.randint(2, 4)))
        )
    if extra:
        paragraphs.insert(1, extra)
    return "## Overview\n\n" + "\n\n".join(paragraphs) + "\n"


def envelope(rng, type_, id_, sources) -> str:
    status = rng.choice(["verified", "verified", "draft", "contested"])
    text = (
        f"---\nid: {id_}\ntype: {type_}\nname: {type_.replace('_', ' ').title()} {id_}\nstatus: {status}\n"
        f"confidence: {rng.choice([0.4, 0.7, 0.9])}\nupdated: 2026-11-{rng.randint(1, 28):02d}\n"
    )
    if type_ not in ("source", "hardware_parameter"):
        text += f"sources: [{', '.join(sources)}]\nbasis: {rng.choice(['vendor-spec', 'measured', 'secondary'])}\n"
    return text


def generate(out: Path, records: int, seed: int = 1, defects: float = 0.0) -> dict[str, list[str]]:
    rng = random.Random(seed)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(REPO / "schema", out / "schema")
    shutil.copytree(REPO / "site" / "templates", out / "site" / "templates")  # this repository's theme overrides
    counts = {t: max(3 if t != "hardware_parameter" else 2, int(records * share)) for t, share in SHARES}
    counts["source"] += records - sum(counts.values())
    ids = {t: [f"{t.replace('_', '-')}-{i:06d}" for i in range(n)] for t, n in counts.items()}
    ids["hardware_parameter"] = ["transfer-bandwidth", "memory-bandwidth"] + ids["hardware_parameter"][2:]
    every = [f"{DIRS[t]}/{i}" for t, group in ids.items() for i in group]
    cited = set()

    def pick(type_, k):
        return rng.sample(ids[type_], min(k, len(ids[type_])))

    def write(type_, id_, text):
        path = out / "records" / DIRS[type_] / f"{id_}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def sources():
        chosen = pick("source", rng.randint(1, 3))
        cited.update(chosen)
        return chosen

    def links():
        return rng.sample(every, 6)

    def defect() -> bool:
        return rng.random() < defects

    for i, id_ in enumerate(ids["hardware_parameter"]):
        carried = (
            "{accelerator: memory_bandwidth, storage_tier: bandwidth, interconnect: bandwidth_per_direction}"
            if i == 0
            else "{accelerator: memory_bandwidth, storage_tier: medium_bandwidth}"
        )
        write(
            "hardware_parameter",
            id_,
            envelope(rng, "hardware_parameter", id_, [])
            + f"dimension: GB/s\ncarried_by: {carried}\n---\n"
            + body(rng, links()),
        )
    for id_ in ids["interconnect"]:
        per = rng.choice([31.5, 63, 128, 50, 100, 450, 900])
        both = per * 2 * (1.5 if defect() else 1)
        write(
            "interconnect",
            id_,
            envelope(rng, "interconnect", id_, sources())
            + f"kind: {rng.choice(['pcie', 'nvlink', 'infiniband', 'roce'])}\nscope: {rng.choice(['host', 'scale-up', 'scale-out'])}\n"
            f"bandwidth_per_direction: {per} GB/s\nbandwidth_both_directions: {both:g} GB/s\n---\n"
            + body(rng, links()),
        )
    for id_ in ids["accelerator"]:
        bus, pin = rng.choice([(5120, 5.234375), (6144, 6.25), (8192, 7.8125)])
        bandwidth = bus * pin / 8 * (2 if defect() else 1)
        unit = "GB" if defect() else "GB/s"
        write(
            "accelerator",
            id_,
            envelope(rng, "accelerator", id_, sources())
            + f"vendor: {rng.choice(['NVIDIA', 'AMD', 'Huawei', 'Intel'])}\nmemory_capacity: {rng.choice([80, 141, 192])} GB\n"
            f"memory_bus_width: {bus}\nmemory_pin_rate: {pin} Gb/s\n"
            f"memory_bandwidth:\n  value: {bandwidth:g} {unit}\n  basis: vendor-spec\n  source: {rng.choice(ids['source'])}\n"
            f"peak_bf16_dense: {rng.choice([989.4, 1307.4, 2250])} TFLOP/s\npeak_fp8_dense: {rng.choice([1979, 2615, 4500])} TFLOP/s\n"
            f"tdp: {rng.choice([700, 750, 1000])} W\nhost_link: {rng.choice(ids['interconnect'])}\n---\n"
            + body(rng, links()),
        )
    for id_ in ids["storage_tier"]:
        if rng.random() < 0.5:
            fields = (
                f"medium: dram\npath: tiered-offload\nlink: {rng.choice(ids['interconnect'])}\nchannels: {rng.choice([8, 12])}\n"
                f"channel_width: 8 B\ntransfer_rate: {rng.choice([4800, 5600])} MT/s\n"
            )
        else:
            fields = f"medium: nvme\npath: tiered-offload\nbandwidth: {rng.choice([7, 13, 14.7])} GB/s\n"
        write(
            "storage_tier", id_, envelope(rng, "storage_tier", id_, sources()) + fields + "---\n" + body(rng, links())
        )
    kv_bytes = {}  # model id -> KV bytes per token, so some flops can state a checkable figure
    for id_ in ids["model"]:
        if rng.random() < 0.3:
            geometry = "attention: mla\nnum_layers: 61\nkv_lora_rank: 512\nqk_rope_head_dim: 64\n"
            kv_bytes[id_] = 61 * 576 * 2
        else:
            layers, kv_heads = rng.choice([32, 80, 126]), rng.choice([4, 8])
            geometry = (
                f"attention: gqa\nnum_layers: {layers}\nnum_kv_heads: {kv_heads}\n"
                f"head_dim: 128\nhidden_size: {rng.choice([4096, 8192])}\nintermediate_size: 14336\n"
            )
            kv_bytes[id_] = 2 * layers * kv_heads * 128 * 2
        write(
            "model",
            id_,
            envelope(rng, "model", id_, sources())
            + f"architecture: {rng.choice(['dense', 'moe'])}\n{geometry}params_total: {rng.choice([8, 70, 405])} Gparam\n"
            f"params_active: {rng.choice([8, 37, 70])} Gparam\nkv_dtype_size: 2 B\n---\n" + body(rng, links()),
        )
    for id_ in ids["engine"]:
        write(
            "engine",
            id_,
            envelope(rng, "engine", id_, sources())
            + f"kind: {rng.choice(['serving-engine', 'kv-cache-layer', 'transfer-library'])}\nlicense: Apache-2.0\n"
            f"languages: [Python, C++]\nfirst_release: 2024-0{rng.randint(1, 9)}\nintegrates_with: [{', '.join(pick('engine', 2))}]\n---\n"
            + body(rng, links()),
        )
    for id_ in ids["flop"]:
        tiers = ", ".join(f"storage-tiers/{t}" for t in pick("storage_tier", rng.randint(3, 6)))
        inline = "The hit reads {{ hit_path_bytes | GB }}, at best {{ min(hit_path_time) }} from a tier."
        model = rng.choice(ids["model"])
        write(
            "flop",
            id_,
            envelope(rng, "flop", id_, sources())
            + f"class: kv_transfer\nbound_by: storage\naffected_by_hardware: [{', '.join(pick('accelerator', 3))}]\n"
            f"engines: [{', '.join(pick('engine', 2))}]\nrelated: [{', '.join(pick('flop', 2))}]\n"
            f"hardware_parameters:\n  - parameter: transfer-bandwidth\n    effect: sets the hit-path time\n"
            f"    values_for: [{', '.join(pick('accelerator', 2))}]\n    basis: recorded\n"
            f"inputs:\n  model: models/{model}\n  prefix_tokens: 32000 token\n  tiers: [{tiers}]\n"
            f"costs:\n  hit_path_bytes:\n    formula: model.kv_bytes_per_token * prefix_tokens\n    unit: GB\n"
            + (
                f"    stated: {kv_bytes[model] * 32000 / 1e9 * (2 if defect() else 1):.4f} GB\n"
                if rng.random() < 0.5
                else ""
            )
            + "  hit_path_time:\n    for_each: {tier: tiers}\n    formula: hit_path_bytes / param(tier, 'transfer-bandwidth')\n    unit: ms\n"
            "---\n" + body(rng, links() + ([f"dangling-{id_}"] if defect() else []), inline),
        )
    for id_ in ids["measurement"]:
        write(
            "measurement",
            id_,
            envelope(rng, "measurement", id_, sources())
            + f"metric: KV transfer rate\nvalue: {rng.uniform(5, 200):.1f} GB/s\nmeasured_by: {rng.choice(['vendor', 'project', 'third-party'])}\npublished: 2026-06-01\n"
            f"engine: {rng.choice(ids['engine'])}\naccelerators: [{', '.join(pick('accelerator', 2))}]\n---\n"
            + body(rng, links()),
        )
    for id_ in ids["source"]:
        write(
            "source",
            id_,
            envelope(rng, "source", id_, [])
            + f"kind: {rng.choice(['docs', 'paper', 'blog', 'repo'])}\norigin: first-party\npublisher: Publisher {rng.randint(1, 300)}\n"
            f"url: https://example.org/{id_}\n---\n" + body(rng, links()[:2]),
        )
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--defects", type=float, default=0.0)
    args = parser.parse_args()
    generate(args.out, args.records, args.seed, args.defects)
    print(f"wrote {args.records} records to {args.out}")


if __name__ == "__main__":
    main()
