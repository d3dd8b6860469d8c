"""The newcomer's traps around kb plan (issue 46, item 6; ../shared/reference/newcomer-4.md F4, F7, F9, F11, F12),
each as the user meets it: `kb plan --explain` shows the numbers that went into each formula and which fallback
a figure took; a workload is named by its file path as kb explain takes one; every tier says what became of its
fit; several engines say whether the order changes between them; a unit error names energy; the browser
calculator prints a plain number without a stray "1". Figures are computed by hand from what the records state."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import REPO, run_kb
from plan_support import attainable_prefill, figure_reader

MOONCAKE = "workloads/mooncake-fast25-llama3-70b-8k-a800"
A800 = "accelerators/nvidia-a800-sxm"


@pytest.fixture(scope="module")
def stated(records):
    return figure_reader(records)


def _block(lines: list[str], start: str) -> list[str]:
    """The line starting with `start` and the deeper-indented lines under it."""
    at = next(i for i, line in enumerate(lines) if line.startswith(start))
    indent = len(start) - len(start.lstrip())
    block = [lines[at]]
    for line in lines[at + 1 :]:
        if len(line) - len(line.lstrip()) <= indent + 2 or not line.strip():
            break
        block.append(line)
    return block


def test_plan_takes_the_workload_by_its_file_path_as_kb_explain_does(records):
    done = run_kb("plan", f"records/{MOONCAKE}.md")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"kb plan: {records[MOONCAKE]['data']['name']}"
    assert done.stdout == run_kb("plan", MOONCAKE).stdout


def test_plan_explain_substitutes_each_input_and_names_the_prefill_efficiency_it_used(stated, records):
    done = run_kb("plan", MOONCAKE, "--explain")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    block = _block(lines, "  recompute_time ")
    peak = stated(A800, "peak_bf16_dense")  # TFLOP/s
    gpus = stated(MOONCAKE, "gpus")
    share = attainable_prefill(records, A800)
    substituted = next(line.strip() for line in block[1:] if line.strip().startswith("= (") and "TFLOP/s" in line)
    assert f"÷ {peak:g} TFLOP/s" in substituted, block  # the A800's own peak, with its unit, where its name stood
    assert substituted.endswith(f"÷ ({gpus:g} × {share:g})"), block
    used = next(line.strip() for line in block if line.strip().startswith("with "))
    if share == 1:  # the A800 links no prefill fit, nor does the workload give prefill_efficiency: the floor
        assert used == "with neither prefill_efficiency nor accelerator.attainable_prefill given, so the fallback 1"
    # the records and sources are listed once, not under each figure
    assert sum(1 for line in lines if line.startswith("sources cited:")) == 1
    assert not any(line.strip().startswith(("sources:", "rests on:")) for line in lines)


def test_the_recompute_line_names_the_fit_it_used_without_explain(stated, records):
    """DeepSeek-V3 on H200s: the H200 links a prefill fit; the plan's recompute line says it used that figure."""
    share = attainable_prefill(records, "accelerators/nvidia-h200-sxm")
    assert share != 1
    done = run_kb(
        "plan", "model=deepseek-v3", "accelerator=nvidia-h200-sxm", "gpus=8", "prefix_tokens=32000", "hit_rate=0.9",
        "engine=lmcache", "tiers=host-dram-pcie5",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    block = _block(done.stdout.splitlines(), "  recompute_time ")
    used = next(line.strip() for line in block if line.strip().startswith("with "))
    assert used.startswith("with prefill_efficiency not given, so accelerator.attainable_prefill = ")
    assert used.endswith("(accelerators/nvidia-h200-sxm)")
    assert f"{share:g}" in used


LLAMA_ON_H100 = [
    "model=llama-3-1-70b",
    "accelerator=nvidia-h100-sxm",
    "gpus=8",
    "prefix_tokens=16384",
    "hit_rate=0.8",
    "engine=lmcache",
    "request_rate=2",
    "distinct_prefixes=100",
]


def test_every_tier_says_what_became_of_its_fit(stated):
    """Local NVMe records no capacity: the plan says the fit is not checked and which field is missing. Host DRAM
    has one: the plan says either that the working set does not fit or that it is within its limits."""
    done = run_kb("plan", *LLAMA_ON_H100, "tiers=local-nvme-gen5,host-dram-pcie5")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    nvme = _block(text.splitlines(), next(line for line in text.splitlines() if "local-nvme-gen5 (" in line))
    assert (
        "     not checked (the working set does not fit in the KV the tier can hold): "
        "storage-tiers/local-nvme-gen5 has no capacity"
    ) in nvme
    dram_start = next(line for line in text.splitlines() if line.endswith(")") and "host-dram-pcie5 (" in line)
    dram = _block(text.splitlines(), dram_start)
    assert any(
        "! the working set does not fit" in line or line.startswith("     within its limits: tier_fill")
        for line in dram
    ), dram
    # a field the model states is never reported missing (num_layers was, read through a function of the model)
    assert stated("models/llama-3-1-70b", "num_layers") == 80
    assert "has no num_layers" not in text


def test_a_tier_without_figures_names_the_field_it_lacks(tmp_path):
    """A tier whose record lacks its bandwidth gets no figures: the plan says which field is missing."""
    root = tmp_path / "kb"
    root.mkdir()
    for name in ("records", "schema", "pyproject.toml"):
        subprocess.run(["cp", "-r", str(REPO / name), str(root / name)], check=True)
    for extra in ("kb.toml",):
        if (REPO / extra).exists():
            subprocess.run(["cp", str(REPO / extra), str(root / extra)], check=True)
    tier = root / "records/storage-tiers/local-nvme-gen5.md"
    lines = tier.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("bandwidth:"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith((" ", "\t")))
    tier.write_text("".join(lines[:start] + lines[end:]))
    done = run_kb(
        "--root", str(root), "plan", *LLAMA_ON_H100, "tiers=host-dram-pcie5,local-nvme-gen5", "--format", "json"
    )
    assert done.returncode in (0, 1), done.stderr
    found = json.loads(done.stdout)
    gen5 = next(t for t in found["tiers"] if t["key"] == "storage-tiers/local-nvme-gen5")
    assert gen5["rank"] == len(found["tiers"])  # an unpriced tier is ranked last
    assert gen5["not_priced"][0].startswith("no ")
    assert "storage-tiers/local-nvme-gen5 has no bandwidth" in gen5["not_priced"][0]


def _order(found, words):
    return [o["key"] for o in found["order_by_choice"][0]["orders"][words]]


def test_several_engines_say_when_the_order_differs_between_them():
    """DeepSeek-V3 (MLA): LMCache reads a prefix on one rank and broadcasts it, SGLang reads on every rank, so the
    drives the node shares fall behind under SGLang. The plan prints the order under each engine."""
    settings = [
        "model=deepseek-v3", "accelerator=nvidia-h200-sxm", "gpus=8", "prefix_tokens=32000", "hit_rate=0.9",
        "engine=lmcache,sglang", "tiers=host-dram-pcie5,local-nvme-gen5,cxl-memory-expander,local-nvme-gen4",
    ]  # fmt: skip
    found = json.loads(run_kb("plan", *settings, "--format", "json").stdout)
    choice = found["order_by_choice"][0]
    assert choice["field"] == "engine"
    by_engine = {}
    for words in choice["orders"]:
        # each engine's order is the tiers' TTFTs under that engine, least first, as the tiers' own cases give them
        ttft = {
            t["key"]: next(c["value"] for c in t["figures"]["ttft"]["cases"] if words in c["when"])
            for t in found["tiers"]
        }
        assert _order(found, words) == sorted(ttft, key=ttft.get)
        by_engine[words] = _order(found, words)
    assert len({tuple(order) for order in by_engine.values()}) == 2
    assert choice["same_order"] is False
    text = run_kb("plan", *settings).stdout.splitlines()
    at = text.index("engine: the order differs between the choices; best first under each:")
    for words, order in by_engine.items():
        line = next(line for line in text[at:] if line.startswith(f"  if {words}: "))
        assert [part.split(" ")[0] for part in line.split(": ", 1)[1].split(", ")] == order


def test_several_engines_say_when_the_order_is_the_same():
    """Llama 3.1 70B (GQA): every engine reads on every rank; the order of these tiers is the same under both."""
    settings = [*LLAMA_ON_H100[:-3], "engine=lmcache,sglang", "tiers=host-dram-pcie5,local-nvme-gen5"]
    done = run_kb("plan", *settings)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if line.startswith("engine: ")]
    assert said in (
        ["engine: the order is the same under each choice (the figures differ: see the ranges)"],
        ["engine: the choices give the same figures; the engine changes nothing here"],
    )


def test_a_joule_where_watts_are_expected_is_named_energy():
    from kbtools.lang.units import QuantityError, check_dimension, parse_quantity_text

    with pytest.raises(QuantityError) as raised:
        check_dimension(parse_quantity_text("700 J", None), "W")
    assert "700 J is energy, expected power (like W)" in str(raised.value)
    with pytest.raises(QuantityError) as raised:
        check_dimension(parse_quantity_text("0.3 J/token", None), "W")
    assert "is energy per token, expected power" in str(raised.value)


def test_a_tier_with_less_than_no_room_breaks_its_limit(records):
    """A tier whose room for KV is below nothing (HBM once weights larger than it are loaded: GLM-5 served in BF16
    on eight H200s) gave tier_fill -0.133 and was printed "within its limits"; a share below 0 breaks the limit,
    as one above 1 does. The weights and the HBM are read from the records, by hand; the workload serves the FP8
    checkpoint (a byte a weight), so the plan is asked for two."""
    workload = "workloads/llm-d-p2p-glm-5-2-8x-h200-75k"
    data = records[workload]["data"]
    hbm = records[f"accelerators/{data['accelerator']}"]["values"]["memory_capacity"]
    params = records[f"models/{data['model']}"]["values"]["params_total"]
    assert hbm["unit"] == "GB" and params["unit"] == "Gparam", (hbm["unit"], params["unit"])
    gpus = figure_reader(records)(workload, "gpus")
    assert params["value"] * 2 > hbm["value"] * gpus > params["value"] * 1  # BF16 overfills the HBM, FP8 does not
    for per_param, broken in (("2 B/param", True), (None, False)):
        done = run_kb(
            "--root", str(REPO), "plan", workload, *([f"weight_bytes_per_param={per_param}"] if per_param else [])
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if ". storage-tiers/gpu-hbm-h200 (" in line)
        block = lines[at : next((j for j in range(at + 1, len(lines)) if lines[j][:1].isdigit()), len(lines))]
        below = [
            line for line in block if line.strip().startswith("! the working set does not fit") and "below 0" in line
        ]
        within = [line for line in block if "within its limits" in line and "tier_fill" in line]
        assert (bool(below), bool(within)) == (broken, not broken), (per_param, block)
