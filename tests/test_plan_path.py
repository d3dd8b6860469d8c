"""kb plan prices the path a hit takes: each reading rank at the slowest stage of its path (its share of
the tier's links, its own host link), the engine's read-once-and-broadcast only for an MLA model, the
broadcast over the accelerator's own scale-up link, every tier of the corpus priced or its missing field
named, the recompute at the precision the weights ship in, the HBM pool after the weights, and the hit's
TTFT overlapped where the engine loads layer by layer. Every figure is computed here by hand from the
figures the records state (kb export), never from a figure kb plan computed."""

import pytest
from conftest import REPO, run_kb
from plan_support import attainable_prefill, attainable_read, close, figure_reader, plan, tier

H100 = "accelerators/nvidia-h100-sxm"
A800 = "accelerators/nvidia-a800-sxm"


def gqa_kv_bytes(stated, model, tokens):
    """K and V of every KV head of every layer, in GB."""
    layers, heads, dim = stated(model, "num_layers"), stated(model, "num_kv_heads"), stated(model, "head_dim")
    return 2 * layers * heads * dim * stated(model, "kv_dtype_size") * tokens / 1e9


def host_link(stated, accelerator):
    """The accelerator's host link, one way (GB/s), read from the link's own record."""
    return stated(f"interconnects/{stated(accelerator, 'host_link')}", "bandwidth_per_direction")


def on_eight_h100s(model: str, engine: str, tokens: int, tiers: str, *more: str) -> list[str]:
    """kb plan's settings for `model` on a node of eight H100s under `engine`, every request a hit."""
    return [
        f"model={model}",
        "accelerator=nvidia-h100-sxm",
        "gpus=8",
        f"engine={engine}",
        f"prefix_tokens={tokens}",
        "hit_rate=1",
        f"tiers={tiers}",
        *more,
    ]


def test_qwen3_235b_at_tp8_under_lmcache_reads_on_every_rank_and_ranks_host_dram_first(stated):
    """Qwen3-235B is GQA with 4 KV heads: at TP8 every head is held twice, and LMCache reads on every rank
    (its first-rank-only read is for MLA only), so 8 readers read both copies and nothing is broadcast.
    Host DRAM over each GPU's own PCIe 5 link then beats the node's shared Gen5 drives."""
    model = "models/qwen3-235b-a22b"
    found = plan(*on_eight_h100s("qwen3-235b-a22b", "lmcache", 8192, "local-nvme-gen5,host-dram-pcie5"))
    kv = gqa_kv_bytes(stated, model, 8192)
    copies = 8 / stated(model, "num_kv_heads")
    assert copies == 2 and found["figures"]["read_once"]["value"] == 0
    dram, gen5 = tier(found, "storage-tiers/host-dram-pcie5"), tier(found, "storage-tiers/local-nvme-gen5")
    assert dram["readers"]["value"] == 8 and dram["broadcast_time"]["value"] == 0
    assert close(dram["node_bytes"]["value"], copies * kv)
    per_reader = copies * kv / 8
    link = min(stated("storage-tiers/host-dram-pcie5", "bandwidth"), host_link(stated, H100))
    assert close(dram["hit_time"]["value"], per_reader / link * 1e3)
    drives = "storage-tiers/local-nvme-gen5"  # shared by the node: 8 readers share 8 × links drives
    share = stated(drives, "bandwidth") * stated(drives, "links_per_accelerator") * 8 / 8
    assert close(gen5["hit_time"]["value"], per_reader / min(share, host_link(stated, H100)) * 1e3)
    assert [t["key"] for t in found["tiers"]] == ["storage-tiers/host-dram-pcie5", "storage-tiers/local-nvme-gen5"]


def test_one_reading_rank_is_held_to_its_own_host_link(stated):
    """DeepSeek-V3 (MLA) under LMCache: one rank reads the 32,000-token prefix and broadcasts it over the
    H100's own NVLink. From a pool of the node's NICs or its striped drives that rank still reads through
    its one PCIe 5 x16 link, so the pool, the drives and host DRAM tie; the plan names the host link."""
    found = plan(
        *on_eight_h100s("deepseek-v3", "lmcache", 32000, "host-dram-pcie5,local-nvme-gen5,mooncake-store-multi-nic")
    )
    kv = stated("models/deepseek-v3", "kv_bytes_per_token") * 32000 / 1e9
    scale_up = stated(f"interconnects/{stated(H100, 'scale_up_link')}", "bandwidth_per_direction")
    floor = (kv / host_link(stated, H100) + kv / scale_up) * 1e3
    assert found["figures"]["read_once"]["value"] == 1
    for key in ("storage-tiers/local-nvme-gen5", "storage-tiers/mooncake-store-multi-nic"):
        figures = tier(found, key)
        assert figures["readers"]["value"] == 1
        assert close(figures["hit_time"]["value"], floor), key
        option = next(t for t in found["tiers"] if t["key"] == key)
        assert option["limited_by"] == [
            {"figure": "reader_rate", "stage": "host_link_rate", "words": "the accelerator's host link"}
        ]
    assert close(tier(found, "storage-tiers/host-dram-pcie5")["hit_time"]["value"], floor)
    text = run_kb("--root", str(REPO), "plan", *on_eight_h100s("deepseek-v3", "lmcache", 32000, "local-nvme-gen5"))
    assert "reader_rate limited by the accelerator's host link" in text.stdout, text.stdout


def test_the_a800_node_reads_through_its_pcie_4_link_and_its_shared_host_paths(stated, records):
    """An A800's host link is PCIe 4 x16, so host DRAM and RDMA are read at 31.5 GB/s per GPU, not at the PCIe 5
    tier's 63 GB/s. Mooncake FAST'25's own testbed (its system record) also shares 128 GB/s of host-to-device
    bandwidth among the node's eight GPUs, below their eight links: its workload is held to that share. And
    the testbed has four 200 Gb/s RDMA ports for eight GPUs: a pool the tier prices at one 400 Gb/s port per
    GPU is read, on that node, at the eight readers' share of the four ports."""
    kv = gqa_kv_bytes(stated, "models/llama-3-1-70b", 8192)
    link = host_link(stated, A800)
    assert link == pytest.approx(31.5, rel=0.01)
    alone = plan(
        "model=llama-3-1-70b",
        "accelerator=nvidia-a800-sxm",
        "gpus=8",
        "engine=mooncake",
        "prefix_tokens=8192",
        "hit_rate=1",
        "tiers=host-dram-pcie5,remote-dram-rdma-400g",
    )
    found = plan("workloads/mooncake-fast25-llama3-70b-8k-a800")
    testbed = "systems/mooncake-fast25-a800-testbed"
    node = stated(testbed, "host_to_device_bandwidth")
    ports = stated(testbed, "compute_nics") * stated(
        f"interconnects/{stated(testbed, 'compute_nic')}", "bandwidth_per_direction"
    )
    assert node < 8 * link and ports < node
    # each at the share of its path's rate a hit attains, where the tier links a fit of it
    for key in ("storage-tiers/host-dram-pcie5", "storage-tiers/remote-dram-rdma-400g"):
        share = attainable_read(records, key)
        assert close(tier(alone, key)["hit_time"]["value"], kv / 8 / (link * share) * 1e3), key
    # host DRAM: the node's host-to-device share; the pool: the node's share of its four RDMA ports
    for key, rate, stage in (
        ("storage-tiers/host-dram-pcie5", node / 8, "node_host_rate"),
        ("storage-tiers/remote-dram-rdma-400g", ports / 8, "node_nic_rate"),
    ):
        share = attainable_read(records, key)
        assert close(tier(found, key)["hit_time"]["value"], kv / 8 / (rate * share) * 1e3), key
        option = next(t for t in found["tiers"] if t["key"] == key)
        assert [b["stage"] for b in option["limited_by"]] == [stage], option["limited_by"]


def _offload_tiers(records):
    return sorted(
        key
        for key, record in records.items()
        if record["type"] == "storage_tier" and record["values"].get("host_link_crossed", {}).get("value") == 1
    )


@pytest.fixture(scope="module")
def stated(records):
    return figure_reader(records)


@pytest.mark.parametrize("accelerator", ["nvidia-h100-sxm", "nvidia-a800-sxm"])
def test_no_reader_of_any_tier_reads_faster_than_its_host_link_and_every_tier_is_priced(stated, records, accelerator):
    """Every storage tier of the corpus that a hit reads through the host link, under both engines and
    for an MLA and a GQA model: each reading rank's rate is at most the accelerator's host link, and every
    tier gets a hit time (S3, 3FS, CXL and Grace's C2C memory among them) or, where no source gives its
    rate, a line naming the fields it lacks."""
    tiers = _offload_tiers(records)
    must_be_priced = {
        "storage-tiers/object-storage-s3",
        "storage-tiers/deepseek-3fs-kvcache",
        "storage-tiers/cxl-memory-expander",
        "storage-tiers/host-dram-nvlink-c2c",
        "storage-tiers/host-dram-pcie5",
        "storage-tiers/local-nvme-gen5",
        "storage-tiers/mooncake-store-multi-nic",
    }
    assert must_be_priced <= set(tiers)
    link = host_link(stated, f"accelerators/{accelerator}")
    for model in ("deepseek-v3", "llama-3-1-70b"):
        found = plan(
            f"model={model}",
            f"accelerator={accelerator}",
            "gpus=8",
            "engine=lmcache,sglang",
            "prefix_tokens=16384",
            "hit_rate=1",
            "tiers=" + ",".join(k.split("/")[1] for k in tiers),
        )
        for option in found["tiers"]:
            unpriced = [why for why in option["not_priced"] if why.startswith("no ttft")]
            if "hit_time" not in option["figures"]:  # a tier no source gives a rate for says which field it lacks
                assert option["key"] not in must_be_priced, option
                assert unpriced == [f"no ttft: {option['key']} has no links_per_accelerator, bandwidth"], unpriced
                continue
            assert not unpriced, unpriced
            rate = option["figures"]["reader_rate"]
            assert rate["high"] <= link * (1 + 1e-9), (model, option["key"], rate)


def test_a_figure_kb_cannot_give_names_what_is_missing():
    """A tier with no recorded capacity and a workload without a request rate: the plan says which field
    of which record it lacks, instead of leaving the check out in silence."""
    done = run_kb("--root", str(REPO), "plan", *on_eight_h100s("llama-3-1-70b", "lmcache", 8192, "peer-hbm-nvlink4"))
    assert done.returncode == 0, done.stderr
    assert "not checked (the hits need more read bandwidth than the tier has): the workload has no request_rate" in (
        done.stdout
    )
    assert "storage-tiers/peer-hbm-nvlink4 has no capacity" in done.stdout, done.stdout


def test_the_recompute_runs_at_the_precision_the_weights_ship_in_and_the_seed_agrees(stated, records):
    """DeepSeek-V3 ships FP8 weights: its linear layers recompute at the H100's FP8 peak, attention at dense
    BF16. The seed record prices the same case (32,000 tokens, 8 × H100) with the same split at the dense
    peaks; the plan gives the same figure at the share of them the H100's fit says a prefill attains."""
    model = "models/deepseek-v3"
    assert records[model]["data"]["weight_dtype"] == "fp8"
    found = plan(*on_eight_h100s("deepseek-v3", "lmcache", 32000, "host-dram-pcie5"))
    linear = stated(model, "flops_per_token") * 1e9 * 32000  # GFLOP/token
    attention = stated(model, "causal_attention_flops") * 32000**2
    fp8, bf16 = (stated(H100, f"peak_{p}_dense") * 1e12 for p in ("fp8", "bf16"))
    by_hand = (linear / fp8 + attention / bf16) / 8 * 1e3  # ms, at the dense peaks
    share = attainable_prefill(records, H100)  # the plan recomputes at the H100's fitted share of them
    assert share < 1
    assert close(found["figures"]["recompute_time"]["value"], by_hand / share)
    seed = records["flops/eng-profile-kv-tiering-moves-flops-to-bytes"]["values"]["recompute_time_reference"]
    assert close(seed["value"], by_hand)  # its preferred condition: attention at BF16, at the peaks
    for key in ("storage-tiers/host-dram-pcie5",):  # the seed's node row under LMCache is the plan's hit
        rows = records["flops/eng-profile-kv-tiering-moves-flops-to-bytes"]["values"]["hit_path_time_node"]
        lmcache = next(c["value"] for c in rows["rows"][key]["range"]["cases"] if "LMCache" in c["when"])
        assert close(tier(found, key)["hit_time"]["value"], lmcache)


def test_hbm_holds_the_kv_after_the_weights_and_the_engines_reserve(stated):
    """Llama 3.1 70B (BF16 weights) on 8 × H100 under vLLM: the HBM pool is the engine's share of the node's
    HBM less the weights; 100 distinct 32K prefixes do not fit there, and do fit the node's host DRAM."""
    model, engine = "models/llama-3-1-70b", "engines/vllm"
    found = plan(
        *on_eight_h100s("llama-3-1-70b", "vllm", 32768, "gpu-hbm-h100,host-dram-pcie5", "distinct_prefixes=100")
    )
    weights = stated(model, "params_total") * 2  # GB: BF16, 2 bytes a parameter
    pool = 8 * stated(H100, "memory_capacity") * stated(engine, "gpu_memory_fraction") - weights
    hbm = tier(found, "storage-tiers/gpu-hbm-h100")
    assert close(hbm["tier_kv_capacity"]["value"], pool)
    kv = gqa_kv_bytes(stated, model, 32768)
    assert close(hbm["tier_fill"]["value"], 100 * kv / pool)
    dram = tier(found, "storage-tiers/host-dram-pcie5")
    # the tier is per accelerator: each GPU's share of the node's host DRAM, eight of them
    assert close(dram["tier_fill"]["value"], 100 * kv / (8 * stated("storage-tiers/host-dram-pcie5", "capacity")))
    ranked = [(t["key"], t["limits_broken"]) for t in found["tiers"]]
    assert ranked[0] == ("storage-tiers/host-dram-pcie5", []), ranked
    assert ranked[1][0] == "storage-tiers/gpu-hbm-h100" and ranked[1][1], ranked


def test_an_engine_that_loads_layer_by_layer_overlaps_the_hit_with_the_uncached_tokens(stated, records):
    """256 tokens after an 8K prefix: under SGLang HiCache, which loads a hit into HBM layer by layer during
    the forward pass, the hit's TTFT is the longer of load and compute plus one layer of the shorter; under
    LMCache, whose load finishes first by default, it is their sum."""
    model = "models/llama-3-1-70b"
    found = plan(*on_eight_h100s("llama-3-1-70b", "sglang,lmcache", 8192, "host-dram-pcie5", "uncached_tokens=256"))
    assert stated("engines/sglang", "overlaps_load_with_compute") == 1
    assert stated("engines/lmcache", "overlaps_load_with_compute") == 0
    bf16 = stated(H100, "peak_bf16_dense") * 1e12
    caf = stated(model, "causal_attention_flops")
    share = attainable_prefill(records, H100)  # a prefill's fitted share of the peak
    compute = (stated(model, "flops_per_token") * 1e9 * 256 + caf * (8448**2 - 8192**2)) / bf16 / 8 / share * 1e3
    assert close(found["figures"]["uncached_time"]["value"], compute)
    figures = tier(found, "storage-tiers/host-dram-pcie5")
    hit = figures["hit_time"]["value"]
    cases = {c["when"]: c["value"] for c in figures["hit_ttft_overlapped"]["cases"]}
    sglang = next(v for w, v in cases.items() if "SGLang" in w)
    lmcache = next(v for w, v in cases.items() if "LMCache" in w)
    assert close(sglang, max(hit, compute) + min(hit, compute) / stated(model, "num_layers"))
    assert close(lmcache, hit + compute)


def test_the_hit_spans_the_nominal_rates_to_the_measured_ones_and_says_which_end_is_which(stated):
    """Host DRAM over the H100's PCIe 5 link: nominal 63 GB/s one way, vLLM measured 50 GB/s for both the tier
    and the link. The hit time is computed at the nominal end and spans to the measured one, and so does every
    figure that reads it (the TTFT); the JSON says which rates give each end. The Gen5 drives, which record no
    measured rate and are slower than either end of the link, have one figure."""
    found = plan(*on_eight_h100s("llama-3-1-70b", "lmcache", 8192, "host-dram-pcie5,local-nvme-gen5"))
    per_reader = gqa_kv_bytes(stated, "models/llama-3-1-70b", 8192) / 8
    dram = "storage-tiers/host-dram-pcie5"
    link = f"interconnects/{stated(H100, 'host_link')}"
    nominal = min(stated(dram, "bandwidth"), stated(link, "bandwidth_per_direction"))
    measured = min(stated(dram, "measured_bandwidth"), stated(link, "measured_bandwidth"))
    assert measured < nominal
    hit = tier(found, dram)["hit_time"]
    assert close(hit["value"], per_reader / nominal * 1e3) and close(hit["low"], hit["value"])
    assert close(hit["high"], per_reader / measured * 1e3)
    assert "at its nominal rate" in hit["low_when"] and "at its measured rate" not in hit["low_when"]
    assert "at its measured rate" in hit["high_when"], hit["high_when"]
    ttft = tier(found, dram)["ttft"]  # hit_rate=1: the TTFT's prefix part is the hit
    assert close(ttft["low"], hit["low"]) and close(ttft["high"], hit["high"])
    drives = tier(found, "storage-tiers/local-nvme-gen5")["hit_time"]
    assert drives["low"] == drives["high"] == drives["value"]


def test_an_engine_choice_keeps_each_engines_reserve_and_a_setting_replaces_the_choice(stated):
    """llm-d's Qwen3-32B workload chooses between vLLM (which records the share of HBM it takes,
    gpu_memory_fraction) and LMCache (which records none, so the formula's default of the whole HBM holds for
    it alone): the HBM pool is computed for each, the preferred vLLM first. engine=lmcache over the record
    replaces the choice."""
    workload = "workloads/llm-d-qwen3-32b-2x-h100"
    hbm = "storage-tiers/gpu-hbm-h100"
    capacity = stated(H100, "memory_capacity")
    weights = stated("models/qwen3-32b", "params_total") * 2  # BF16 weights, GB (params_total in Gparam)
    fraction = stated("engines/vllm", "gpu_memory_fraction")
    with pytest.raises(KeyError):
        stated("engines/lmcache", "gpu_memory_fraction")
    found = tier(plan(workload), hbm)["tier_kv_capacity"]
    cases = {case["when"]: case["value"] for case in found["cases"]}
    assert close(found["value"], 2 * capacity * fraction - weights)
    assert close(cases["engine is vLLM"], 2 * capacity * fraction - weights)
    assert close(cases["engine is LMCache"], 2 * capacity - weights)
    alone = plan(workload, "engine=lmcache")
    assert alone["asked"]["engine"] == "engines/lmcache"
    assert close(tier(alone, hbm)["tier_kv_capacity"]["value"], 2 * capacity - weights)
