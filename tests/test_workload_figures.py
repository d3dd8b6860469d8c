"""Every figure `kb plan` gives for every workload record, computed by hand from the figures the records state.

The oracle below is plain arithmetic written from what each figure means (the docstrings and comments say it),
not from the schema's formula strings, and it starts only from `kb export --json`: the workload's own fields
and the stated figures of the model, accelerator, interconnect, system, engine and storage-tier records it
names. It never reads a figure kb plan (or the workload's own cost block in the export) computed. Figures are
compared on their `value` only, the end figures are computed with; the range to the measured rates is
tested in test_plan_path.py.

Each workload record found in records/workloads/ is a case, so a new one is checked too. A figure kb plan
prints that the oracle does not know fails the test (a new stage must be computed here, or listed in
NOT_CHECKED with its reason), and so does a figure the records allow that kb leaves out."""

import json
import math

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow  # one kb export and one kb plan per workload record: about 15 s in all

WORKLOADS = sorted(p.stem for p in (REPO / "records" / "workloads").glob("*.md"))

# Figures kb plan may print that this module does not compare, each with its reason.
NOT_CHECKED: dict[str, str] = {}

# The figures the oracle computes: the node's, and each tier's.
NODE_FIGURES = tuple(
    "kv_bytes working_set kv_copies read_once recompute_flops_linear recompute_flops_attention recompute_flops"
    " linear_peak recompute_time break_even_bandwidth break_even_rate uncached_time request_overhead recompute_ttft"
    " loaded_recompute_ttft reuse_skew prefixes_per_replica block_floor replicas_per_prefix reuse_ceiling"
    " decode_usd_per_mtoken"
    " decode_joules_per_token".split()
)
TIER_FIGURES = tuple(
    "readers node_bytes reader_bytes broadcast_time tier_share_rate host_link_rate node_host_rate node_nic_rate"
    " reader_rate hit_time hit_over_recompute ttft hit_ttft_serial hit_ttft_overlapped tier_load"
    " mean_ttft saturation_rate prefill_utilisation wait_scale queue_wait loaded_ttft hit_slower faster_share"
    " ttft_p50 ttft_p90 ttft_p99"
    " prefill_joules_per_token prefill_usd_per_mtoken tier_kv_capacity stored_working_set tier_fill"
    " stored_prefix residency_usd_per_hour hit_saving keep_ttl fill_load"
    " prefixes_held hit_rate_lru hit_rate_optimal tier_hit_rate".split()
)

REL = 1e-6  # the oracle and kb do the same arithmetic in a different order: only rounding may differ

# Units, to a base of bytes, seconds, FLOP, tokens and US dollars. The export gives every figure in its field's
# canonical unit and the plan every figure in its cost's unit; the test converts both and fails on a unit it
# does not know rather than guess a factor.
SCALE = {
    "1": 1.0,
    "percent": 0.01,
    "token": 1.0,
    "B": 1.0,
    "MB": 1e6,
    "GB": 1e9,
    "TB": 1e12,
    "B/token": 1.0,
    "B/s": 1.0,
    "GB/s": 1e9,
    "TB/s": 1e12,
    "MT/s": 1e6,
    "FLOP": 1.0,
    "GFLOP": 1e9,
    "TFLOP": 1e12,
    "PFLOP": 1e15,
    "FLOP/s": 1.0,
    "TFLOP/s": 1e12,
    "PFLOP/s": 1e15,
    "GFLOP/token": 1e9,
    "FLOP/token^2": 1.0,
    "param": 1.0,
    "Gparam": 1e9,
    "s": 1.0,
    "ms": 1e-3,
    "1/s": 1.0,
    "W": 1.0,
    "J/token": 1.0,
    "token/s": 1.0,
    "USD/h": 1 / 3600,
    "USD/Mtoken": 1e-6,
    "USD": 1.0,
    "USD/GB/h": 1e-9 / 3600,
    "h": 3600.0,
}

# Bytes a weight takes by the dtype its checkpoint ships in.
WEIGHT_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5, "int4": 0.5}
# Media whose reads enter the accelerator through its host link (PCIe, or NVLink-C2C on Grace): all but HBM.
THROUGH_HOST_LINK = {"dram", "nvme", "remote-dram", "object-store", "file-system"}


def base(value: float, unit: str, where: str) -> float:
    assert unit in SCALE, f"{where}: unit {unit!r} is not one this test knows; add its factor to SCALE"
    return value * SCALE[unit]


class Stated:
    """The figures records state, as `kb export --json` gives them, in base units. A field that kb derives
    from other stated ones inside the same record (a storage tier's shared_by_node, an accelerator's
    host_link_bandwidth, a model's kv_bytes_per_token) is not read: the oracle works it out itself."""

    def __init__(self, records: dict):
        self.records = records

    def data(self, key: str, field: str, default=None):
        return self.records[key]["data"].get(field, default)

    def q(self, key: str, field: str, default=None):
        """A quantity field of a record, its preferred value, in base units; `default` when it has none."""
        found = self.records[key]["values"].get(field)
        if found is None or found.get("value") is None:
            return default
        return base(found["value"], found["unit"], f"{key}.{field}")

    def plain(self, key: str, field: str, default=None):
        """A count or size the record writes (num_layers, head_dim), as kb reads it."""
        if field in self.records[key]["values"]:
            return self.q(key, field, default)
        found = self.records[key]["data"].get(field, default)
        return found["value"] if isinstance(found, dict) else found

    def stated_only(self, key: str, field: str):
        """A quantity the record itself writes (not one kb derived for it), or None."""
        found = self.records[key]["values"].get(field)
        if found is None or found.get("computed") or found.get("value") is None:
            return None
        return base(found["value"], found["unit"], f"{key}.{field}")


class Model:
    """A model's KV bytes and prefill FLOP, from its layer, head and dimension figures. `pair` is one layer's
    attention cost in FLOP per token²: each head does a q·k dot (d_qk multiply-adds) and a weighted v sum (d_v)
    for every query-key pair, 2 FLOP a multiply-add, and a causal prefill of n tokens has n²/2 pairs, so a
    layer costs pair × n² with pair = heads × (d_qk + d_v)."""

    def __init__(self, s: Stated, key: str):
        self.key = key
        d = lambda f, default=None: s.plain(key, f, default)  # noqa: E731
        self.attention = s.data(key, "attention")
        self.layers = d("num_layers")
        self.heads = d("num_attention_heads")
        self.kv_dtype = s.q(key, "kv_dtype_size")
        self.window_layers = d("sliding_window_layers", 0) or 0
        self.window = s.q(key, "sliding_window")
        self.window_kind = s.data(key, "window_kind", "sliding")
        self.sinks = d("sink_tokens", 0) or 0
        self.linear_layers = d("linear_attention_layers", 0) or 0
        self.full_layers = self.layers - self.window_layers - self.linear_layers
        self.topk = s.q(key, "sparse_topk")
        self.weight_dtype = s.data(key, "weight_dtype")
        self.params_total, self.params_active = s.q(key, "params_total"), s.q(key, "params_active")
        if self.attention == "mla":
            lora, rope = d("kv_lora_rank"), d("qk_rope_head_dim")
            # one latent (the compressed K and V) plus the shared RoPE key, per layer and token
            self.kv_layer = (lora + rope) * self.kv_dtype
            # prefill runs MLA in its MHA form: each head's query-key dot over nope + rope dims, then the V sum
            self.pair = self.heads * (d("qk_nope_head_dim") + rope + d("v_head_dim"))
            # top-k sparse kernels run MLA in its MQA form: d_qk = lora + rope, d_v = lora
            self.sparse_pair = self.heads * (2 * lora + rope)
            self.kv_shards = 1  # every rank keeps the one latent
        elif self.attention in ("mha", "gqa", "mqa"):
            kv_heads, head_dim = d("num_kv_heads"), d("head_dim")
            self.kv_layer = 2 * kv_heads * head_dim * self.kv_dtype  # K and V of every KV head
            self.pair = self.heads * 2 * head_dim  # a q·k dot and a weighted v sum of head_dim each, per head
            self.sparse_pair = self.pair
            self.kv_shards = 1 if self.attention == "mqa" else kv_heads  # KV heads split over TP ranks
        else:
            raise AssertionError(f"{key}: attention {self.attention!r} is not one the oracle knows")
        index_dim = d("index_head_dim")
        self.index_per_token = self.layers * index_dim * s.q(key, "index_dtype_size") if index_dim else 0.0
        self.index_pair = self.layers * (d("index_n_heads", 0) or 0) * (index_dim or 0)
        self.linear_state = 0.0
        if self.linear_layers:
            self.linear_state = (
                self.linear_layers
                * d("linear_num_value_heads")
                * d("linear_key_head_dim")
                * d("linear_value_head_dim")
                * s.q(key, "linear_state_dtype_size")
            )

    def kv_bytes(self, n: float) -> float:
        """One sequence's KV at a context of n tokens: every full layer grows with n, a windowed layer stops at
        its window (plus sinks), the indexer keeps one key a token, linear layers keep a fixed state."""
        kept = min(n, (self.window or 0) + self.sinks) if self.window_layers else 0
        return (
            self.full_layers * self.kv_layer * n
            + self.window_layers * self.kv_layer * kept
            + self.index_per_token * n
            + self.linear_state
        )

    def attention_flops(self, n: float) -> float:
        """Causal attention FLOP of a prefill over n tokens, in pair-cost units of token²: n² a full layer (or,
        under top-k sparse attention, the cheaper of that and the sparse form), 2mn − m² a sliding-window
        layer with m = min(n, window), c² per whole chunk plus the rest squared a chunked layer, and the
        indexer's q·k over every earlier token."""

        def banded(width: float) -> float:
            m = min(n, width)
            return 2 * m * n - m * m

        full = self.pair * n * n
        if self.topk is not None:
            full = min(full, self.sparse_pair * banded(self.topk))
        windowed = 0.0
        if self.window_layers:
            if self.window_kind == "chunked":
                whole = math.floor(n / self.window)
                windowed = self.pair * (whole * self.window**2 + (n - whole * self.window) ** 2)
            else:
                windowed = self.pair * banded(self.window)
        return self.full_layers * full + self.window_layers * windowed + self.index_pair * n * n

    def weight_bytes(self):
        per = WEIGHT_BYTES.get(self.weight_dtype)
        return None if per is None else self.params_total * per


def _zipf(n: float, s: float) -> list[float]:
    """Popularity of each of floor(n) items under a Zipf law of exponent s, summed over every term."""
    weights = [i**-s for i in range(1, int(n) + 1)]
    total = sum(weights)
    return [w / total for w in weights]


def top_by_hand(n: float, c: float, s: float) -> float:
    """A cache of the c most popular of n items (linear between whole c): their share of requests."""
    if c <= 0:
        return 0.0
    if c >= int(n):
        return 1.0
    p = _zipf(n, s)
    whole = int(c)
    return sum(p[:whole]) + (c - whole) * p[whole]


def lru_by_hand(n: float, c: float, s: float) -> float:
    """An LRU cache of c of n items by Che's approximation, T found by plain bisection on a log scale."""
    if c <= 0:
        return 0.0
    if c >= int(n):
        return 1.0
    p = _zipf(n, s)
    low, high = -50.0, 80.0
    for _ in range(200):
        middle = (low + high) / 2
        held = sum(1 - math.exp(-q * math.exp(middle)) for q in p)
        low, high = (middle, high) if held < c else (low, middle)
    t = math.exp((low + high) / 2)
    return sum(q * (1 - math.exp(-q * t)) for q in p)


def first_reference(workload: dict, field: str):
    """A reference the workload writes, or the preferred (first) record of a choice in its inputs."""
    if workload["data"].get(field):
        return workload["data"][field]
    chosen = (workload["data"].get("inputs") or {}).get(field)
    if isinstance(chosen, dict) and chosen.get("choose"):
        return chosen["choose"][0]
    return chosen


def hand_plan(s: Stated, key: str) -> dict:
    """Every figure of the workload's plan, by hand, in base units (B, s, FLOP, B/s): {"node": {name: value},
    "tiers": {tier: {name: value}}, "stages": {tier: {stage: value}}, "broken": {tier: [limit figure]}, "engine":
    the engine record it prices with}.
    A figure whose inputs the records do not give is None."""
    w = s.records[key]
    for name in w["data"].get("inputs") or {}:
        assert name == "engine", f"{key}: an input {name!r} the oracle does not read"

    def ref(kind, field):
        found = first_reference(w, field)
        return found if not found or "/" in found else f"{kind}/{found}"

    model = Model(s, ref("models", "model"))
    acc, engine, system = ref("accelerators", "accelerator"), ref("engines", "engine"), ref("systems", "system")
    gpus, n = s.q(key, "gpus"), s.q(key, "prefix_tokens")
    uncached, hit_rate, request_rate = s.q(key, "uncached_tokens"), s.q(key, "hit_rate"), s.q(key, "request_rate")
    distinct = s.q(key, "distinct_prefixes", 1.0)

    def engine_flag(field, default):
        return default if engine is None else s.q(engine, field, default)

    def fitted(key_of_linking, field, default):
        """The value of the fit a record links in `field` (an engine's fixed time, an accelerator's share of peak,
        a tier's share of its path rate), else `default`: a fit applies to every workload that reaches it."""
        fit = s.data(key_of_linking, field) if key_of_linking else None
        return default if not fit else s.q(fit if "/" in fit else f"fits/{fit}", "value")

    mla = model.attention == "mla"
    bf16 = s.q(acc, "peak_bf16_dense")
    fp8 = s.q(acc, "peak_fp8_dense")
    host_link = s.q(f"interconnects/{s.data(acc, 'host_link')}", "bandwidth_per_direction")
    scale_up = s.q(f"interconnects/{s.data(acc, 'scale_up_link')}", "bandwidth_per_direction")

    # a prefill runs at the workload's own share of peak, else the share fitted for its accelerator, else peak
    efficiency = s.q(key, "prefill_efficiency", fitted(acc, "prefill_fit", 1.0))
    overhead = fitted(engine, "request_overhead_fit", 0.0)  # the engine's fixed time, on every request's TTFT

    node = {}
    node["kv_bytes"] = kv = model.kv_bytes(n)
    node["working_set"] = kv * distinct  # one copy of each distinct prefix
    # whole copies the TP group holds: 1 while the KV heads split over the ranks, more once ranks outnumber them
    node["kv_copies"] = copies = max(1.0, gpus / model.kv_shards)
    # one rank reads an offloaded prefix and broadcasts it: only the engine's MLA path, only with ranks to share
    node["read_once"] = read_once = 1.0 if (engine_flag("mla_prefix_read_once", 0) and mla and gpus > 1) else 0.0
    node["recompute_flops_linear"] = linear = 2 * model.params_active * n  # a multiply-add per active weight
    node["recompute_flops_attention"] = attention = model.attention_flops(n)
    node["recompute_flops"] = linear + attention
    # linear layers run at the precision the served checkpoint runs them at (the workload's word, else the
    # weights' dtype): FP8 where that is FP8 and the part has an FP8 peak; everything else, and all attention,
    # at dense BF16
    served_fp8 = s.q(key, "linear_at_fp8", 1.0 if model.weight_dtype == "fp8" else 0.0)
    node["linear_peak"] = peak = fp8 if (served_fp8 and fp8 is not None) else bf16
    node["recompute_time"] = recompute = (linear / peak + attention / bf16) / (gpus * efficiency)
    # the node's read rate from an offload tier at which a hit's read takes as long as the recompute
    offload_bytes = kv if read_once else kv * copies
    node["break_even_bandwidth"] = offload_bytes / recompute
    node["break_even_rate"] = offload_bytes / recompute / (1 if read_once else gpus)
    compute = None
    if uncached is not None:
        extra_attention = model.attention_flops(n + uncached) - model.attention_flops(n)
        compute = (2 * model.params_active * uncached / peak + extra_attention / bf16) / (gpus * efficiency)
    node["uncached_time"] = compute
    node["request_overhead"] = overhead
    # what a derived hit rate rests on: the reuse skew a trace's concentration implies (a share y of reuses on
    # the top fraction x of items is x^(1 - s) for a Zipf law), the prefixes each replica sees, the block floor,
    # and the ceiling compulsory misses set
    reuse = s.data(key, "reuse")
    skew = None
    if reuse:
        share = s.q(reuse if "/" in reuse else f"measurements/{reuse}", "value")
        node["reuse_skew"] = skew = 1 - math.log(share) / math.log(s.q(key, "reuse_top"))
    replicas, aware = s.q(key, "replicas", 1.0), s.q(key, "cache_aware_routing", 0.0)
    node["prefixes_per_replica"] = per_replica = distinct / (1 + (replicas - 1) * aware)
    block = engine_flag("block_tokens", 1.0)
    node["block_floor"] = floor_ = min(math.floor(n / block), 1)
    node["replicas_per_prefix"] = spread = 1 + (replicas - 1) * (1 - aware)
    k = s.q(key, "requests_per_prefix", 1e12)  # each replica a prefix's requests visit misses once
    node["reuse_ceiling"] = ceiling = 1 - spread * (1 - max(1 - 1 / spread, 1e-12) ** k) / k
    # a miss: the engine's fixed time, the prefix, then the rest
    node["recompute_ttft"] = miss = overhead + recompute + compute if compute is not None else None
    if miss is not None and request_rate is not None:  # every request a miss, Poisson arrivals: M/D/1's mean wait
        busy = request_rate * miss
        node["loaded_recompute_ttft"] = miss + request_rate * miss**2 / (2 * max(1 - busy, 0.001))
    price = ref("prices", "price")
    throughput = ref("measurements", "throughput")
    per_hour = s.q(price, "per_accelerator_hour") if price else None
    per_gpu = s.q(throughput, "throughput_per_accelerator") if throughput else None
    node["decode_usd_per_mtoken"] = per_hour / per_gpu if per_hour and per_gpu else None
    node["decode_joules_per_token"] = s.q(acc, "tdp") / per_gpu if per_gpu else None

    node_ports = None  # all the node's compute-fabric ports together, one way
    if system:
        node_ports = s.stated_only(system, "compute_fabric_bandwidth")
        port, count = s.data(system, "compute_nic"), s.q(system, "compute_nics")
        if node_ports is None and port and count is not None:
            node_ports = count * s.q(f"interconnects/{port}", "bandwidth_per_direction")

    tiers, stages, broken = {}, {}, {}
    stated_hit_rate = hit_rate
    for name in w["data"]["tiers"]:
        hit_rate = stated_hit_rate
        t = name if "/" in name else f"storage-tiers/{name}"
        medium = s.data(t, "medium")
        crossed = medium in THROUGH_HOST_LINK
        hbm = medium == "hbm"
        assert crossed or hbm, f"{t}: medium {medium!r} is not one the oracle knows"
        shared = s.data(t, "scope") == "shared" and not hbm  # the node's accelerators pool the tier's links
        links = s.stated_only(t, "links_per_accelerator")
        links = 1.0 if links is None and hbm else links  # an accelerator's own HBM is one link by definition
        bandwidth = s.stated_only(t, "bandwidth")
        if bandwidth is None and hbm:
            bandwidth = s.q(f"accelerators/{s.data(t, 'accelerator')}", "memory_bandwidth")
        elif bandwidth is None:  # the slower of the medium and the link it is read over
            medium_rate = s.stated_only(t, "medium_bandwidth")
            if medium_rate is None and s.data(t, "channels"):
                medium_rate = s.data(t, "channels") * s.q(t, "channel_width") * s.q(t, "transfer_rate")
            link = s.data(t, "link")
            link_rate = s.q(f"interconnects/{link}", "bandwidth_per_direction") if link else None
            rates = [r for r in (medium_rate, link_rate) if r is not None]
            bandwidth = min(rates) if rates else None
        capacity = s.stated_only(t, "capacity")
        if capacity is None and hbm:
            capacity = s.q(f"accelerators/{s.data(t, 'accelerator')}", "memory_capacity")
        f = tiers[t] = {}
        once = bool(read_once and crossed)  # the read-once path applies to offloaded tiers only
        f["readers"] = readers = 1.0 if once else gpus
        f["node_bytes"] = node_bytes = kv if once else kv * copies
        f["reader_bytes"] = node_bytes / readers
        f["broadcast_time"] = kv / scale_up if once else 0.0
        if bandwidth is None or links is None:
            continue  # the tier gives no rate: nothing it reads is priced
        # each reader's share of the tier's links: its own links, or its part of the node's pool
        f["tier_share_rate"] = share = bandwidth * links * (gpus / readers if shared else 1.0)
        # HBM is not read through the host link, so neither host stage bounds it: they take the tier's rate
        f["host_link_rate"] = host = host_link if crossed else share
        # the node's host-to-device paths (its system's, else each reader's own host link), shared by the readers
        node_paths = s.q(system, "host_to_device_bandwidth") if system else None
        paths = (node_paths if node_paths is not None else host_link * readers) / readers if crossed else share
        f["node_host_rate"] = paths
        # a tier on other machines reached over the node's compute fabric: the readers share the node's compute
        # ports (its system's port count × each port's one-way rate); no bound where no system counts them
        fabric = s.data(t, "network") == "compute-fabric" and medium not in ("hbm", "dram", "nvme")
        f["node_nic_rate"] = ports = share
        if fabric and node_ports is not None:
            f["node_nic_rate"] = ports = node_ports / readers
        stages[t] = {"tier_share_rate": share, "host_link_rate": host, "node_host_rate": paths, "node_nic_rate": ports}
        # the slowest stage, at the share of it a hit attains where the tier links a fit of that share
        f["reader_rate"] = rate = min(stages[t].values()) * fitted(t, "read_fit", 1.0)
        latency = s.q(t, "first_byte_latency", 0.0)
        f["hit_time"] = hit = latency + f["reader_bytes"] / rate + f["broadcast_time"]
        f["hit_over_recompute"] = hit / recompute
        served = s.records[key]["values"].get("weight_bytes_per_param")  # the checkpoint served, where not the model's
        if served is not None:
            assert served["unit"] == "B/param", served
        weights = model.weight_bytes() if served is None else model.params_total * served["value"]
        # what the tier holds for the node: each accelerator's own share, or the node's one pool; HBM also keeps
        # the weights and whatever the engine does not take for itself
        # the share of HBM the engine takes: the workload's, else the engine's default, else all of it
        memory_share = s.q(key, "gpu_memory_fraction", engine_flag("gpu_memory_fraction", 1.0))
        if capacity is not None and (weights is not None or not hbm):
            held = capacity * (1.0 if shared else gpus)
            if hbm:
                held = held * memory_share - weights
            elif crossed and s.data(t, "network") != "compute-fabric":
                # host memory holds at most the engine's host pool on each rank that stores a copy (one for an
                # MLA latent): the workload's size, else the engine's, else its ratio × each rank's HBM KV pool
                pool = s.q(key, "host_pool_size", engine_flag("host_pool_size", None))
                ratio = engine_flag("host_pool_ratio", None)
                if pool is None and ratio is not None:
                    per_rank = s.q(acc, "memory_capacity") * memory_share
                    pool = ratio * max(per_rank - weights / gpus, 1e9)
                if pool is not None:
                    held = min(held, pool * (1.0 if mla else gpus))
            f["tier_kv_capacity"] = held
        # HBM keeps every rank's copy; an offload tier one MLA latent, or every rank's slice otherwise
        f["stored_working_set"] = node["working_set"] * (1.0 if (mla and not hbm) else copies)
        if "tier_kv_capacity" in f:
            f["tier_fill"] = f["stored_working_set"] / f["tier_kv_capacity"]
        # keeping the working set in the tier, at the price of holding a GB in its medium for an hour
        f["stored_prefix"] = prefix_bytes = f["stored_working_set"] / distinct
        # the tier's hit rate: the workload's, else an LRU cache of the prefixes it holds (Che's approximation)
        if "tier_kv_capacity" in f:
            f["prefixes_held"] = held_prefixes = f["tier_kv_capacity"] / prefix_bytes
            if skew is not None:
                # an offload tier holds whole offload blocks of the engine's connector (its GPU block by default)
                offload_block = engine_flag("offload_block_tokens", block)
                tier_floor = floor_ * (1 if hbm else min(math.floor(n / offload_block), 1))
                f["hit_rate_lru"] = tier_floor * ceiling * lru_by_hand(per_replica, held_prefixes, skew)
                f["hit_rate_optimal"] = tier_floor * ceiling * top_by_hand(per_replica, held_prefixes, skew)
        if compute is not None:
            f["hit_ttft_serial"] = overhead + hit + compute
            # a layer-by-layer load overlaps the forward pass: the longer of the two, plus one layer of the other
            overlapped = overhead + max(hit, compute) + min(hit, compute) / model.layers
            f["hit_ttft_overlapped"] = (
                overlapped if engine_flag("overlaps_load_with_compute", 0) else overhead + hit + compute
            )
            f["hit_slower"] = 1.0 if f["hit_ttft_overlapped"] > node["recompute_ttft"] else 0.0
        holding = s.data(t, "holding_price")
        per_byte_second = s.q(f"prices/{holding}", "per_gb_hour") if holding else None
        if per_byte_second is not None:
            f["residency_usd_per_hour"] = f["stored_working_set"] * per_byte_second
        rate_here = hit_rate if hit_rate is not None else f.get("hit_rate_lru")
        if rate_here is None:
            broken[t] = [limit for limit in ("tier_fill",) if not 0 <= f.get(limit, 0.0) <= 1]
            continue  # no hit rate, given or derived: nothing that weighs hits against misses is priced
        f["tier_hit_rate"] = hit_rate = rate_here
        f["ttft"] = ttft = hit_rate * hit + (1 - hit_rate) * recompute
        if request_rate is not None:  # bytes a second the hits read, over the links the readers read them on
            f["tier_load"] = request_rate * hit_rate * node_bytes / (readers * share)
        if compute is not None:
            # the queue in front of the node: each request holds it for its own TTFT, a hit's or a miss's
            hit_ttft, miss_ttft = f["hit_ttft_overlapped"], node["recompute_ttft"]
            f["mean_ttft"] = mean = hit_rate * hit_ttft + (1 - hit_rate) * miss_ttft
            f["saturation_rate"] = 1 / mean
            # the request's own TTFT at a percentile: the faster of the two for the faster share, the slower after
            f["faster_share"] = faster_share = (1 - hit_rate) if hit_ttft > miss_ttft else hit_rate

            fast, slow = min(hit_ttft, miss_ttft), max(hit_ttft, miss_ttft)

            if request_rate is not None:
                f["prefill_utilisation"] = busy = request_rate * mean
                # M/G/1: Pollaczek-Khinchine's mean wait, E[S²] / (2 E[S] (1 - ρ)) for a request that waits;
                # past saturation the wait is taken at 99.9 % load
                second = hit_rate * hit_ttft**2 + (1 - hit_rate) * miss_ttft**2
                f["wait_scale"] = scale = second / (2 * mean * max(1 - busy, 0.001))
                f["queue_wait"] = busy * scale
                f["loaded_ttft"] = mean + busy * scale
                for p in (50, 90, 99):  # P(wait > t) = ρ exp(-t / scale), set to 1 - p
                    wait = scale * math.log(max(busy, 1e-9) / (1 - p / 100)) if busy > 0 else 0.0
                    f[f"ttft_p{p}"] = (fast if p / 100 <= faster_share else slow) + max(0.0, wait)
        f["prefill_joules_per_token"] = s.q(acc, "tdp") * gpus * ttft / n
        if per_hour is not None:
            f["prefill_usd_per_mtoken"] = per_hour * gpus * ttft / n
        # keeping the working set in the tier, at the price of holding a GB in its medium for an hour
        if per_hour is not None and "hit_ttft_overlapped" in f:
            # the node's time a hit saves, and how long a prefix may wait for its next hit before keeping it
            # costs more than that
            f["hit_saving"] = saving = (node["recompute_ttft"] - f["hit_ttft_overlapped"]) * gpus * per_hour
            if per_byte_second is not None:
                f["keep_ttl"] = max(0.0, saving / (prefix_bytes * per_byte_second))
        if request_rate is not None:  # every miss's KV written through into the tier, at its read rate
            f["fill_load"] = request_rate * (1 - hit_rate) * node_bytes / (readers * share)
        broken[t] = [
            limit  # a share kept from 0 to 1: below 0 it is a share of less than no room (weights over the HBM)
            for limit in ("tier_fill", "tier_load", "prefill_utilisation", "fill_load")
            if not 0 <= f.get(limit, 0.0) <= 1
        ]
    return {"node": node, "tiers": tiers, "stages": stages, "broken": broken, "engine": engine}


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def stated(records):
    return Stated(records)


@pytest.fixture(scope="module")
def plans():
    """kb plan's JSON of each workload record, as `kb plan WORKLOAD --format json` prints it: the same plan and
    the same JSON, made for every workload over one checked corpus rather than one kb plan process each (the
    CLI's own path is tests/test_plan.py's)."""
    from kbtools.check.pipeline import checked, start_run
    from kbtools.corpus import Settings
    from kbtools.outputs.plan import as_json, make_plan

    run = start_run(Settings.configured(REPO), use_cache=True, complete=True, on_demand=True)
    corpus = checked(run)
    found: dict[str, dict] = {}

    def get(workload: str) -> dict:
        if workload not in found:
            found[workload] = json.loads(as_json(make_plan(corpus, corpus.records[f"workloads/{workload}"])))
        return found[workload]

    yield get
    run.close()


@pytest.fixture(scope="module")
def spec():
    return json.loads((REPO / "schema" / "workload.schema.json").read_text())


def shown(figure: dict, where: str) -> float:
    return base(figure["value"], figure["unit"], where)


def agree(kb: float, hand: float) -> bool:
    return kb == pytest.approx(hand, rel=REL, abs=1e-15)


# ---------------------------------------------------------------- tests


def test_the_workload_records_are_found():
    assert len(WORKLOADS) >= 16, WORKLOADS


@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_figure_kb_plan_gives_is_the_one_computed_by_hand(stated, plans, workload):
    """The node's figures and each tier's, against the oracle; every disagreement is listed at once."""
    key = f"workloads/{workload}"
    hand = hand_plan(stated, key)
    found = plans(workload)
    wrong = []
    for name, figure in found["figures"].items():
        if name in NOT_CHECKED:
            continue
        mine = hand["node"].get(name)
        if mine is None:
            wrong.append(f"{name}: kb gives {figure['value']} {figure['unit']}, the oracle cannot compute it")
        elif not agree(shown(figure, name), mine):
            wrong.append(f"{name}: kb {figure['value']} {figure['unit']}, by hand {mine / SCALE[figure['unit']]}")
    for option in found["tiers"]:
        mine_all = hand["tiers"].get(option["key"], {})
        for name, figure in option["figures"].items():
            if name in NOT_CHECKED:
                continue
            mine = mine_all.get(name)
            where = f"{option['key']} {name}"
            if mine is None:
                wrong.append(f"{where}: kb gives {figure['value']} {figure['unit']}, the oracle cannot compute it")
            elif not agree(shown(figure, where), mine):
                wrong.append(f"{where}: kb {figure['value']} {figure['unit']}, by hand {mine / SCALE[figure['unit']]}")
    assert not wrong, f"{key} (engine {hand['engine']}):\n  " + "\n  ".join(wrong)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_kb_plan_prints_no_figure_this_module_does_not_check(stated, plans, workload):
    """A stage or figure added to the cost model later must be computed here (or listed in NOT_CHECKED with
    its reason) before the plan may print it."""
    hand = hand_plan(stated, f"workloads/{workload}")
    assert set(hand["node"]) <= set(NODE_FIGURES)
    assert all(set(figures) <= set(TIER_FIGURES) for figures in hand["tiers"].values())
    found = plans(workload)
    unknown = set(found["figures"]) - set(NODE_FIGURES) - set(NOT_CHECKED)
    assert not unknown, f"kb plan gives node figures this module does not check: {sorted(unknown)}"
    for option in found["tiers"]:
        unknown = set(option["figures"]) - set(TIER_FIGURES) - set(NOT_CHECKED)
        assert not unknown, f"kb plan gives {option['key']} figures this module does not check: {sorted(unknown)}"


def test_every_cost_of_the_workload_type_is_checked_or_listed(spec):
    """The workload schema's costs: each is one the oracle computes or one NOT_CHECKED names, so a cost added
    to the type fails here even before a record's plan prints it."""
    unknown = set(spec["x-kb-costs"]) - set(NODE_FIGURES) - set(TIER_FIGURES) - set(NOT_CHECKED)
    assert not unknown, f"costs of the workload type this module neither computes nor lists: {sorted(unknown)}"


@pytest.mark.parametrize("workload", WORKLOADS)
def test_no_figure_the_records_allow_is_left_out(stated, plans, workload):
    """Where the records give every figure a plan figure rests on, kb plan prints it."""
    key = f"workloads/{workload}"
    hand = hand_plan(stated, key)
    found = plans(workload)
    missing = [name for name, value in hand["node"].items() if value is not None and name not in found["figures"]]
    printed = {option["key"]: option["figures"] for option in found["tiers"]}
    assert set(printed) == set(hand["tiers"]), (sorted(printed), sorted(hand["tiers"]))
    for tier_key, figures in hand["tiers"].items():
        missing += [f"{tier_key} {name}" for name in figures if name not in printed[tier_key]]
    assert not missing, f"{key}: the records give all these rest on, and kb plan leaves them out: {missing}"


@pytest.mark.parametrize("workload", WORKLOADS)
def test_tiers_are_ranked_by_ttft_after_the_limits_they_break(stated, plans, spec, workload):
    """x-kb-plan ranks the tiers by ttft, least first, those that break a limit (a limit figure above 1, or below 0) after
    those that break none, and those with no ttft last; the broken limits are the ones the hand figures break."""
    hand = hand_plan(stated, f"workloads/{workload}")
    found = plans(workload)
    words = spec["x-kb-plan"]["limits"]
    assert spec["x-kb-plan"]["rank_by"] == "ttft"
    for option in found["tiers"]:
        expected = [words[limit] for limit in hand["broken"].get(option["key"], [])]
        said = [
            text.partition(" (")[0] if " (" in text and "below 0" in text else text for text in option["limits_broken"]
        ]
        assert said == expected, (option["key"], option["limits_broken"], expected)
    assert [option["rank"] for option in found["tiers"]] == list(range(1, len(found["tiers"]) + 1))

    def order(tier_key):
        ttft = hand["tiers"][tier_key].get("ttft")
        return ttft is None, len(hand["broken"].get(tier_key, [])), ttft or 0.0

    ranked = [option["key"] for option in found["tiers"]]
    for before, after in zip(ranked, ranked[1:], strict=False):
        a, b = order(before), order(after)
        tied = a[:2] == b[:2] and a[2] == pytest.approx(b[2], rel=REL)
        assert tied or a < b, f"{before} {a} is ranked before {after} {b}"


@pytest.mark.parametrize("workload", WORKLOADS)
def test_limited_by_names_the_slowest_stage_of_the_reader_rate(stated, plans, spec, workload):
    """Each tier's reader_rate is the least of its stages (x-kb-plan's `stages`); the plan names the slowest,
    the first listed on a tie."""
    hand = hand_plan(stated, f"workloads/{workload}")
    named = spec["x-kb-plan"]["stages"]["reader_rate"]
    for option in plans(workload)["tiers"]:
        values = hand["stages"].get(option["key"])
        if values is None:
            assert not option["limited_by"], option
            continue
        assert set(values) == set(named), f"stages the oracle does not compute: {sorted(set(named) - set(values))}"
        least = min(values.values())
        stage = next(s for s in named if values[s] == pytest.approx(least, rel=REL))
        expected = [{"figure": "reader_rate", "stage": stage, "words": named[stage]}]
        assert option["limited_by"] == expected, (option["key"], values)
