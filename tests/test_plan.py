"""kb plan: for a workload, per tier, the working set against the tier, TTFT on a hit against recompute,
the tier's load, $/Mtoken and J/token, each with its range; checked against hand arithmetic over the
figures the records state, for five workloads, one of them a paper's own."""

import csv
import io
import json

import pytest
from conftest import REPO, run_kb
from plan_support import attainable_prefill, close, figure_reader, plan, tier

H100_NODE = [
    "model=llama-3-1-70b",
    "accelerator=nvidia-h100-sxm",
    "gpus=8",
]

# The five workloads planned below, as kb plan's settings; the page test writes each as a workload record.
WORKLOADS = {
    "gqa-host-dram-priced": [
        *H100_NODE,
        "engine=lmcache",
        "prefix_tokens=8192",
        "hit_rate=0.9",
        "tiers=host-dram-pcie5",
        "price=lambda-8x-h100-sxm-on-demand",
    ],
    "mla-two-engines": [
        "model=deepseek-v3",
        "accelerator=nvidia-h100-sxm",
        "gpus=8",
        "engine=lmcache,sglang",
        "prefix_tokens=32000",
        "hit_rate=1",
        "prefill_efficiency=1",
        "tiers=nvme-gds-local",
    ],
    "bands": [
        *H100_NODE,
        "engine=lmcache",
        "prefix_tokens=4096:8192:32768",
        "hit_rate=0.8:0.9:0.95",
        "tiers=local-nvme-gen5",
    ],
    "fit-and-load": [
        *H100_NODE,
        "engine=lmcache",
        "prefix_tokens=32768",
        "hit_rate=1",
        "distinct_prefixes=100",
        "request_rate=20",
        "host_pool_size=200",  # LMCache configured with 200 GB a worker, not its default 5 GiB
        "tiers=local-nvme-gen4,gpu-hbm-h100,host-dram-pcie5",
    ],
}
MOONCAKE = "workloads/mooncake-fast25-llama3-70b-8k-a800"  # the published one, a record of the repository


@pytest.fixture(scope="module")
def exported(records):
    return records


@pytest.fixture(scope="module")
def stated(exported):
    """Every record's figures as kb reads them (in each field's canonical unit): the hand arithmetic
    starts from these, never from a figure kb plan computed."""
    return figure_reader(exported)


@pytest.fixture(scope="module")
def h100_share(exported):
    """The share of its dense peak a prefill attains on an H100, from the fit its record links."""
    return attainable_prefill(exported, "accelerators/nvidia-h100-sxm")


def kv_and_flops(stated, model, tokens):
    """A GQA Llama's KV bytes and prefill FLOP from its geometry: K and V of every KV head of every layer,
    and 2 FLOP per active parameter per token plus causal attention (QKᵀ and PV, half the square)."""
    layers, kv_heads, head_dim = stated(model, "num_layers"), stated(model, "num_kv_heads"), stated(model, "head_dim")
    hidden, dtype = stated(model, "hidden_size"), stated(model, "kv_dtype_size")
    kv = 2 * layers * kv_heads * head_dim * dtype * tokens / 1e9  # GB
    linear = 2 * stated(model, "params_active") * 1e9 * tokens
    attention = 2 * 2 * layers * hidden * tokens**2 / 2
    return kv, (linear + attention) / 1e15  # GB, PFLOP


def test_the_papers_own_workload_mooncake_fast25(stated):
    """Mooncake's FAST'25 §2.2: an 8K-token LLaMA3-70B prefix on 8 × A800 breaks even at about 6 GB/s. kb's
    plan of the same workload (its record) gives the same threshold from the model record, within the
    paper's cruder FLOP count (a·n²·d + b·n·d² per layer, no exact parameter count)."""
    found = plan(MOONCAKE)
    kv, pflop = kv_and_flops(stated, "models/llama-3-1-70b", 8192)
    recompute = pflop * 1e15 / (8 * stated("accelerators/nvidia-a800-sxm", "peak_bf16_dense") * 1e12)  # s
    assert close(found["figures"]["recompute_time"]["value"], recompute * 1e3)
    assert close(found["figures"]["break_even_bandwidth"]["value"], kv / recompute)
    published = stated("measurements/mooncake-break-even-bandwidth", "value")
    assert published == 6 and abs(found["figures"]["break_even_bandwidth"]["value"] - published) / published < 0.15


def test_a_gqa_model_on_host_dram_with_a_price(stated, h100_share):
    """Llama 3.1 70B on an H100 node, 90 % hits from host DRAM over each GPU's own PCIe link: every rank
    reads its own KV heads over its own link, so the read takes bytes ÷ (8 × link)."""
    found = plan(*WORKLOADS["gqa-host-dram-priced"])
    kv, pflop = kv_and_flops(stated, "models/llama-3-1-70b", 8192)
    link = stated("storage-tiers/host-dram-pcie5", "bandwidth")  # GB/s
    hit = kv / (8 * link)  # s
    peak = stated("accelerators/nvidia-h100-sxm", "peak_bf16_dense") * 1e12
    recompute = pflop * 1e15 / (8 * peak * h100_share)  # at the share of the peak a prefill attains
    ttft = 0.9 * hit + 0.1 * recompute
    figures = tier(found, "storage-tiers/host-dram-pcie5")
    assert close(figures["hit_time"]["value"], hit * 1e3)
    assert close(figures["ttft"]["value"], ttft * 1e3)
    price = stated("prices/lambda-8x-h100-sxm-on-demand", "per_accelerator_hour")  # USD/h
    assert close(figures["prefill_usd_per_mtoken"]["value"], price * 8 * ttft / 3600 / 8192 * 1e6)
    tdp = stated("accelerators/nvidia-h100-sxm", "tdp")  # W
    assert close(figures["prefill_joules_per_token"]["value"], tdp * 8 * ttft / 8192)
    assert found["tiers"][0]["verdict"].startswith("faster (")


def test_an_mla_model_under_two_engines_names_the_engine(stated):
    """DeepSeek-V3 replicates its latent on every rank: LMCache reads the prefix once and broadcasts it,
    SGLang HiCache has every rank read it. From drives read with GPUDirect Storage (one per GPU, striped and
    shared by the node) the engine decides the verdict, for a recompute at the dense peak."""
    found = plan(*WORKLOADS["mla-two-engines"])
    model = "models/deepseek-v3"
    kv = stated(model, "kv_bytes_per_token") * 32000 / 1e9  # GB
    gds = "storage-tiers/nvme-gds-local"
    drives = 8 * stated(gds, "links_per_accelerator")  # shared by the node: every drive serves any reader
    h100 = "accelerators/nvidia-h100-sxm"
    pcie = stated(f"interconnects/{stated(h100, 'host_link')}", "bandwidth_per_direction")
    nvlink = stated(f"interconnects/{stated(h100, 'scale_up_link')}", "bandwidth_per_direction")

    # one read by one rank, at the slower of the node's drives and its own PCIe link, then the broadcast over
    # the H100's own NVLink; or every rank reading the whole prefix at its share of the drives
    def once(rate):  # s
        return kv / min(drives * rate, pcie) + kv / nvlink

    def every(rate):
        return 8 * kv / (drives * rate)

    nominal, measured = stated(gds, "bandwidth"), stated(gds, "measured_bandwidth")
    figures = tier(found, gds)
    cases = {case["when"]: case["value"] for case in figures["hit_time"]["cases"]}
    at_nominal = {w: v for w, v in cases.items() if "read_bandwidth at its nominal rate" in w}
    lmcache, sglang = (next(v for w, v in at_nominal.items() if name in w) for name in ("LMCache", "SGLang"))
    assert close(lmcache, once(nominal) * 1e3) and close(sglang, every(nominal) * 1e3)
    assert close(figures["hit_time"]["value"], lmcache)
    # the drives' measured rate (above their nominal one) spans the range too
    low, high = min(once(nominal), once(measured)), max(every(nominal), every(measured))
    assert close(figures["hit_time"]["low"], low * 1e3) and close(figures["hit_time"]["high"], high * 1e3)
    assert close(figures["node_bytes"]["high"], 8 * kv)
    verdict = found["tiers"][0]["verdict"]
    assert verdict.startswith("faster or slower") and "faster if engine is LMCache" in verdict, verdict


def test_bands_give_the_range_at_their_corners(stated, h100_share):
    """A prefix of 4K to 32K and a hit rate of 80 % to 95 %: the TTFT's low end is the short prefix at the
    high hit rate, its high end the long prefix at the low one."""
    found = plan(*WORKLOADS["bands"])
    peak = stated("accelerators/nvidia-h100-sxm", "peak_bf16_dense") * 1e12 * h100_share  # as a prefill attains it
    gen5 = "storage-tiers/local-nvme-gen5"
    drive = 8 * stated(gen5, "links_per_accelerator") * stated(gen5, "bandwidth")  # the node's drives, shared

    def ttft(tokens, rate):
        kv, pflop = kv_and_flops(stated, "models/llama-3-1-70b", tokens)
        return (rate * kv / drive + (1 - rate) * pflop * 1e15 / (8 * peak)) * 1e3

    figures = tier(found, "storage-tiers/local-nvme-gen5")["ttft"]
    assert close(figures["value"], ttft(8192, 0.9))
    assert close(figures["low"], ttft(4096, 0.95)) and close(figures["high"], ttft(32768, 0.8))


def test_the_working_set_and_the_load_flag_a_tier_that_cannot_serve(stated):
    """100 distinct 32K prefixes do not fit the node's HBM once the weights are in; 20 requests a second of
    32K hits need more than the node's Gen4 drives give; host DRAM, with LMCache given 200 GB a worker,
    holds them and keeps up. Both limits are
    said, and those tiers rank last."""
    found = plan(*WORKLOADS["fit-and-load"])
    kv, _ = kv_and_flops(stated, "models/llama-3-1-70b", 32768)
    hbm = tier(found, "storage-tiers/gpu-hbm-h100")
    weights = stated("models/llama-3-1-70b", "params_total") * 2  # GB, BF16
    pool = 8 * stated("storage-tiers/gpu-hbm-h100", "capacity") - weights  # LMCache reserves no HBM share itself
    assert close(hbm["tier_fill"]["value"], 100 * kv / pool)
    gen4 = tier(found, "storage-tiers/local-nvme-gen4")
    drive, links = (
        stated("storage-tiers/local-nvme-gen4", "bandwidth"),
        stated("storage-tiers/local-nvme-gen4", "links_per_accelerator"),
    )
    assert close(gen4["tier_load"]["value"], 20 * kv / (drive * links * 8))
    ranked = [(t["key"], t["limits_broken"]) for t in found["tiers"]]
    assert ranked[0] == ("storage-tiers/host-dram-pcie5", [])
    assert {k for k, broken in ranked[1:]} == {"storage-tiers/gpu-hbm-h100", "storage-tiers/local-nvme-gen4"}
    assert all(broken for _, broken in ranked[1:]), ranked


def test_text_csv_and_explain_carry_the_same_plan():
    args = ("workloads/mooncake-fast25-llama3-70b-8k-a800",)
    text = run_kb("--root", str(REPO), "plan", *args, "--explain")
    assert text.returncode == 0, text.stderr
    assert "break_even_bandwidth" in text.stdout
    # the records and sources the figures rest on, listed once below the plan
    assert "records: workloads/mooncake-fast25-llama3-70b-8k-a800, models/llama-3-1-70b" in text.stdout
    assert "sources cited: mooncake-fast25-paper, meta-llama-models-repo" in text.stdout  # the model's source too
    rows = list(csv.DictReader(io.StringIO(run_kb("--root", str(REPO), "plan", *args, "--format", "csv").stdout)))
    found = plan(*args)
    assert [r["key"] for r in rows] == [t["key"] for t in found["tiers"]]
    assert float(rows[0]["ttft"]) == pytest.approx(found["tiers"][0]["figures"]["ttft"]["value"])
    assert {"ttft_low", "ttft_high", "ttft_unit"} <= set(rows[0])
    # newcomer F15: the node's figures (the recompute a hit is compared with) are on every row too
    node = found["figures"]
    assert "recompute_time" in node
    for name, figure in node.items():
        column = name if f"{name}_unit" in rows[0] and name not in found["tiers"][0]["figures"] else f"node_{name}"
        for row in rows:
            assert float(row[column]) == pytest.approx(figure["value"]) and row[f"{column}_unit"] == figure["unit"]


@pytest.mark.parametrize(
    "settings, words",
    [
        (("model=no-such-model",), "model: no record 'no-such-model'"),
        (("gpus",), "no record 'gpus'"),
        (("prefix_tokens=1:2",), "write a value, or a band as LOW:VALUE:HIGH"),
        (("colour=blue",), "cannot read 'colour=blue'"),
        (("workloads/a", "workloads/b"), "one workload record at most"),
        (("sources/mooncake-fast25-paper",), "kb plan plans a record of a type with x-kb-plan"),
    ],
)
def test_a_plan_kb_cannot_make_is_a_usage_error(settings, words):
    done = run_kb("--root", str(REPO), "plan", *settings)
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def _record(name, settings):
    """A workload record with the settings kb plan was given: a band as its long form, several engines as a
    choice among them."""
    lines, inputs = [], []
    for setting in settings:
        field, _, value = setting.partition("=")
        if field == "engine" and "," in value:
            inputs.append(f"  engine: {{choose: [{', '.join('engines/' + v for v in value.split(','))}]}}")
        elif ":" in value:
            low, mid, high = value.split(":")
            lines.append(f"{field}: {{value: {mid}, low: {low}, high: {high}}}")
        elif field == "tiers":
            lines.append(f"tiers: [{value}]")
        else:
            lines.append(f"{field}: {value}")
    body = "\n".join(lines) + ("\ninputs:\n" + "\n".join(inputs) if inputs else "")
    return (
        f"---\nid: {name}\ntype: workload\nname: {name}\nstatus: draft\nconfidence: 0.5\nupdated: 2026-12-03\n"
        f"sources: [mooncake-fast25-paper]\n{body}\n---\nA test's workload, planned on its page.\n"
    )


def _numbers(text):
    """'1,234 ms' -> [1234.0]; '12 to 34 ms' -> [12.0, 34.0]; '' -> []."""
    return [float(part.split()[0].replace(",", "")) for part in text.split(" to ") if part.strip()]


@pytest.mark.browser
def test_the_planner_page_agrees_with_kb_plan(tmp_path, request):
    """A workload's page is the planner: its calculator runs the same formulas in the browser, ranges
    included. For the published workload and the four above, written as records, every per-tier figure on
    the page and its range agree with kb plan's; changing the node and the prefix on the page agrees with
    kb plan given the same settings."""
    import shutil

    from site_support import browser, rendered, serve

    root = tmp_path / "kb"
    for part in ("records", "schema", "site/templates"):
        shutil.copytree(REPO / part, root / part)
    for name, settings in WORKLOADS.items():
        (root / "records/workloads" / f"{name}.md").write_text(_record(name, settings))
    from kbtools.check.pipeline import checked, start_run
    from kbtools.corpus import Settings
    from kbtools.outputs.plan import as_json, make_plan

    run = start_run(Settings.configured(root), use_cache=True, complete=True)  # the run kb build makes
    request.addfinalizer(run.close)  # the store is let go of whatever the test finds
    corpus = checked(run)  # read once for the pages and the records' plans
    assert corpus.errors == [], corpus.errors[:3]
    out = rendered(corpus, tmp_path / "site", [MOONCAKE, *(f"workloads/{name}" for name in WORKLOADS)])

    def planned(key, *settings):
        if not settings:  # a record's plan: kb plan's JSON of it, made as kb plan makes it
            return json.loads(as_json(make_plan(corpus, corpus.records[key])))
        found = run_kb("--root", str(root), "plan", key, *settings, "--format", "json")
        assert found.returncode == 0, found.stderr
        return json.loads(found.stdout)

    with serve(out) as url, browser() as chromium:
        page = chromium.new_context().new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))

        def shown() -> dict:
            """Every calculator row's figure and range as the page shows them, read in one round trip:
            {(cost, row): (value text, range text)}."""
            rows = page.evaluate(
                """() => [...document.querySelectorAll('tr[data-cost][data-row]')].map(r => [
                    r.dataset.cost, r.dataset.row,
                    (r.querySelector('td.calc-value') || {}).innerText || '',
                    (r.querySelector('td.calc-range') || {}).innerText || ''])"""
            )
            return {(cost, row): (value, span) for cost, row, value, span in rows}

        def agrees(found):
            on_page = shown()
            for option in found["tiers"]:
                for name, figure in option["figures"].items():
                    value_text, span_text = on_page[(name, option["key"])]
                    value = _numbers(value_text)
                    assert value[0] == pytest.approx(figure["value"], rel=1e-3), (name, option["key"])
                    span = _numbers(span_text)
                    ends = [figure["low"], figure["high"]] if figure["low"] != figure["high"] else []
                    assert span == pytest.approx(ends, rel=1e-3), (name, option["key"], span, ends)

        for key in [MOONCAKE, *(f"workloads/{name}" for name in WORKLOADS)]:
            page.goto(url + key + ".html")
            found = planned(key)
            agrees(found)
            for option in found["tiers"]:  # the page names each tier's bottleneck, as kb plan does
                for bottleneck in option["limited_by"]:
                    row = page.locator(f"section.costs tr:has(a[href$='{option['key'].split('/')[1]}.html'])").filter(
                        has_text=f"limited by {bottleneck['words']}"
                    )
                    assert row.count() >= 1, (key, option["key"], bottleneck)
        page.goto(url + MOONCAKE + ".html")
        page.select_option("select[name=in-accelerator]", "accelerators/nvidia-h100-sxm")
        page.fill("input[name=in-prefix_tokens]", "32768")
        agrees(planned(MOONCAKE, "accelerator=nvidia-h100-sxm", "prefix_tokens=32768"))
        assert errors == []
