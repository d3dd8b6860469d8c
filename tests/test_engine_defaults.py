"""Engine defaults as data: the figures an engine's code sets by default (LMCache's host pool, SGLang HiCache's
host-pool ratio, vLLM's share of GPU memory and its offload block, the KV layout vLLM and SGLang give
DeepSeek-V3.2) reach `kb plan` through the workload's engine link, and a workload that states its own figure
keeps it.

Every expected figure is hand arithmetic over the figures the records state, as `kb export --json` gives them
(plan_support.exported_records); none is read from what kb plan computed."""

import math

import pytest
from plan_support import close, plan, tier

pytestmark = pytest.mark.slow  # one kb export and a kb plan per case

H100_NODE = ["accelerator=nvidia-h100-sxm", "gpus=8"]
HOST = "storage-tiers/host-dram-pcie5"
HBM = "storage-tiers/gpu-hbm-h100"
GIB = 1024**3 / 1e9  # one GiB in GB


@pytest.fixture(scope="module")
def stated(records):
    """stated(key, field): a quantity a record states (or kb derives inside that record, as a model's weight
    bytes), its preferred value in the field's canonical unit; None where the record has none."""

    def get(key, field):
        found = records[key]["values"].get(field)
        return None if found is None else found["value"]

    return get


WEIGHT_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}  # bytes a weight takes by the dtype its checkpoint ships in


@pytest.fixture(scope="module")
def weights_gb(records, stated):
    """weights_gb(model): a model's weights as shipped, in GB: its parameters (Gparam) × bytes a weight."""

    def get(model):
        return stated(model, "params_total") * WEIGHT_BYTES[records[model]["data"]["weight_dtype"]]

    return get


def host_capacity(stated, gpus):
    """All the host DRAM the tier gives the node: its per-accelerator capacity on each accelerator."""
    assert stated(HOST, "capacity") is not None
    return stated(HOST, "capacity") * gpus


def test_the_engine_defaults_are_recorded_with_their_units(stated):
    """The figures the issue names are data on the engine records, in the unit their code gives them."""
    assert close(stated("engines/lmcache", "host_pool_size"), 5 * GIB)  # max_local_cpu_size 5.0, times 1024³
    assert stated("engines/lmcache", "block_tokens") == 256
    assert stated("engines/lmcache", "blend_recompute_share") == pytest.approx(0.15)
    assert stated("engines/lmcache", "blend_min_tokens") == 256
    assert stated("engines/lmcache", "non_prefix_reuse_default") == 0  # CacheBlend is off unless enabled
    assert stated("engines/sglang-hicache", "host_pool_ratio") == 2
    assert stated("engines/vllm", "gpu_memory_fraction") == pytest.approx(0.92)
    assert stated("engines/vllm", "offload_block_tokens") == 16


def test_a_host_tier_under_lmcache_holds_its_default_pool_per_rank(stated):
    """LMCache keeps max_local_cpu_size of host memory per worker: a GQA model on 8 ranks stores its slices in
    8 pools, so the host tier holds 8 × 5 GiB, not the host's 8 × 250 GB."""
    found = plan(
        "model=llama-3-1-70b",
        *H100_NODE,
        "engine=lmcache",
        "prefix_tokens=32768",
        "hit_rate=1",
        "tiers=host-dram-pcie5",
    )
    pool = stated("engines/lmcache", "host_pool_size") * 8
    assert pool < host_capacity(stated, 8)
    assert close(tier(found, HOST)["tier_kv_capacity"]["value"], pool)


def test_an_mla_latent_under_lmcache_is_held_by_one_rank(stated):
    """For an MLA model LMCache stores the latent from the first rank only (save_only_first_rank), and the plan
    stores one copy of it: the pool is one rank's."""
    found = plan(
        "model=deepseek-v3", *H100_NODE, "engine=lmcache", "prefix_tokens=32000", "hit_rate=1", "tiers=host-dram-pcie5"
    )
    assert close(tier(found, HOST)["tier_kv_capacity"]["value"], stated("engines/lmcache", "host_pool_size"))


def test_a_workload_that_states_its_pool_keeps_it(stated):
    """A workload whose source configured the pool states it; the tier's own capacity still bounds it."""
    settings = [
        "model=llama-3-1-70b",
        *H100_NODE,
        "engine=lmcache",
        "prefix_tokens=32768",
        "hit_rate=1",
        "tiers=host-dram-pcie5",
    ]
    found = plan(*settings, "host_pool_size=100")
    assert close(tier(found, HOST)["tier_kv_capacity"]["value"], 100 * 8)
    larger = plan(*settings, "host_pool_size=1000")  # 8 TB asked of a 2 TB host: the host is the bound
    assert close(tier(larger, HOST)["tier_kv_capacity"]["value"], host_capacity(stated, 8))


def test_hicache_sizes_its_host_pool_from_the_gpu_pool(stated, weights_gb):
    """SGLang HiCache's host pool is hicache_ratio × the GPU KV pool: each rank's HBM (the whole of it, as the
    engine records no share) less its part of the weights, times the ratio, on each of 8 ranks (GQA)."""
    model = "models/llama-3-1-70b"
    found = plan(
        "model=llama-3-1-70b",
        *H100_NODE,
        "engine=sglang-hicache",
        "prefix_tokens=32768",
        "hit_rate=1",
        "tiers=host-dram-pcie5",
    )
    hbm_per_rank = stated("accelerators/nvidia-h100-sxm", "memory_capacity") - weights_gb(model) / 8
    pool = stated("engines/sglang-hicache", "host_pool_ratio") * hbm_per_rank * 8
    assert pool < host_capacity(stated, 8)
    assert close(tier(found, HOST)["tier_kv_capacity"]["value"], pool)


def test_an_engine_without_a_host_pool_leaves_the_tier_whole(stated):
    """vLLM has no default host pool (its offloading is off until sized): the host tier keeps its capacity."""
    found = plan(
        "model=llama-3-1-70b", *H100_NODE, "engine=vllm", "prefix_tokens=32768", "hit_rate=1", "tiers=host-dram-pcie5"
    )
    assert close(tier(found, HOST)["tier_kv_capacity"]["value"], host_capacity(stated, 8))


def test_the_hbm_pool_takes_vllms_share_or_the_workloads(stated, weights_gb):
    """vLLM takes gpu_memory_utilization of each GPU (0.92 at the newest code read) for weights and KV; a
    workload launched with another share states it and keeps it."""
    model = "models/llama-3-1-70b"
    settings = [
        "model=llama-3-1-70b",
        *H100_NODE,
        "engine=vllm",
        "prefix_tokens=32768",
        "hit_rate=1",
        "tiers=gpu-hbm-h100",
    ]
    hbm = 8 * stated("accelerators/nvidia-h100-sxm", "memory_capacity")
    found = plan(*settings)
    expected = hbm * stated("engines/vllm", "gpu_memory_fraction") - weights_gb(model)
    assert close(tier(found, HBM)["tier_kv_capacity"]["value"], expected)
    stated_share = plan(*settings, "gpu_memory_fraction=0.5")
    assert close(tier(stated_share, HBM)["tier_kv_capacity"]["value"], hbm * 0.5 - weights_gb(model))


@pytest.mark.parametrize("prefix", [8, 32])
def test_a_prefix_shorter_than_the_offload_block_never_hits_an_offload_tier(stated, prefix):
    """vLLM's OffloadingConnector moves whole offload blocks: a prefix of fewer tokens is never offloaded, so
    its derived hit rate from the host tier is 0; one of two blocks or more can hit."""
    found = plan(
        "model=llama-3-1-70b",
        *H100_NODE,
        "engine=vllm",
        f"prefix_tokens={prefix}",
        "reuse=reuse-aliyun-bailian-top10pct-block-reuse-share",
        "reuse_top=0.1",
        "distinct_prefixes=1000",
        "tiers=host-dram-pcie5",
    )
    block = stated("engines/vllm", "offload_block_tokens")
    rate = tier(found, HOST)["hit_rate_lru"]["value"]
    if math.floor(prefix / block) == 0:
        assert rate == 0
    else:
        assert rate > 0


def test_deepseek_v3_2_kv_is_the_engines_fp8_layout_with_bf16_beside_it(records):
    """DeepSeek-V3.2 caches, per token and layer, the latent (656 B in the engines' FP8 layout: 512 FP8 values,
    four FP32 scales, the 64-wide RoPE key in BF16; 1,152 B in BF16) plus the indexer's key (128 FP8 values and
    one FP32 scale, 132 B). A plan's KV bytes use the FP8 figure and span the BF16 one."""
    data = records["models/deepseek-v3-2"]["data"]
    layers, lora, rope, index_dim = (
        data[f] for f in ("num_layers", "kv_lora_rank", "qk_rope_head_dim", "index_head_dim")
    )
    fp8_layer = lora * 1 + (lora // 128) * 4 + rope * 2
    bf16_layer = (lora + rope) * 2
    indexer = index_dim * 1 + (index_dim // 128) * 4
    assert (fp8_layer, bf16_layer, indexer) == (656, 1152, 132)
    found = plan(
        "model=deepseek-v3-2", *H100_NODE, "engine=sglang", "prefix_tokens=32768", "hit_rate=1", "tiers=host-dram-pcie5"
    )
    kv = found["figures"]["kv_bytes"]
    assert close(kv["value"], layers * (fp8_layer + indexer) * 32768 / 1e9)
    assert close(kv["low"], layers * (fp8_layer + indexer) * 32768 / 1e9)
    assert close(kv["high"], layers * (bf16_layer + indexer) * 32768 / 1e9)
