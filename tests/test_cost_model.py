"""The cost model: both recompute terms, per-node reads, computed verdicts, money in units that
cannot drop the 3,600 between hours and seconds, and sources that say where they are."""

from __future__ import annotations

import textwrap

from conftest import REPO
from test_compute import base

DEEPSEEK_SHAPE = """
    architecture: moe
    attention: mla
    params_active: 37 Gparam
    num_layers: 61
    num_attention_heads: 128
    kv_lora_rank: 512
    qk_rope_head_dim: 64
    qk_nope_head_dim: 128
    v_head_dim: 128
    kv_dtype_size: 2 B
"""
LLAMA_70B_SHAPE = """
    architecture: dense
    attention: gqa
    params_active: 70.55 Gparam
    num_layers: 80
    num_attention_heads: 64
    num_kv_heads: 8
    head_dim: 128
    kv_dtype_size: 2 B
"""


def explain(kb, target: str) -> str:
    result = kb.run("explain", target)
    assert result.exit_code == 0, result.err
    return result.out


def test_causal_attention_flops_for_mla_and_gqa(kb):
    kb.source()
    kb.record("models", "mla", "model", DEEPSEEK_SHAPE, body="[[gqa]]\n")
    kb.record("models", "gqa", "model", LLAMA_70B_SHAPE, body="[[mla]]\n")
    assert kb.check().exit_code == 0
    # 61 layers x 128 heads x (128 + 64 + 128): d_qk = nope + rope differs from d_v
    assert explain(kb, "models/mla.causal_attention_flops").startswith(
        "models/mla.causal_attention_flops = 2,498,560 FLOP/token^2"
    )
    # 80 x 64 query heads x 2 x 128: the query heads count, not the 8 KV heads
    assert explain(kb, "models/gqa.causal_attention_flops").startswith(
        "models/gqa.causal_attention_flops = 1,310,720 FLOP/token^2"
    )
    assert explain(kb, "models/mla.kv_tp_shards").splitlines()[0].endswith("= 1")  # one latent, on every rank
    assert explain(kb, "models/gqa.kv_tp_shards").splitlines()[0].endswith("= 8")  # its KV heads


def test_the_seed_prices_both_terms_and_the_attention_term_is_the_larger(kb):
    """The review's E1: at 32,000 tokens DeepSeek-V3's attention term (2.56 PFLOP) exceeds the linear one."""
    result = kb.run(
        "--root", str(REPO), "explain", "flops/eng-profile-kv-tiering-moves-flops-to-bytes.recompute_flops_attention"
    )
    assert result.exit_code == 0, result.err
    assert result.out.startswith(
        "flops/eng-profile-kv-tiering-moves-flops-to-bytes.recompute_flops_attention = 2.559 PFLOP"
    )
    total = kb.run(
        "--root", str(REPO), "explain", "flops/eng-profile-kv-tiering-moves-flops-to-bytes.recompute_time_reference"
    )
    # the audit's S12: linear layers at FP8 peak, MLA prefill attention at BF16 peak (what the engines run)
    linear, attention = 2 * 37e9 * 32000, 2498560 * 32000**2
    expected = (linear / (8 * 1978.9e12) + attention / (8 * 989.4e12)) * 1e3
    assert total.out.startswith(
        f"flops/eng-profile-kv-tiering-moves-flops-to-bytes.recompute_time_reference = {expected:.4g} ms"
    ), total.out.splitlines()[0]
    # attention at FP8 peak is the same figure under its other condition, the floor: its low end
    floor = f"{(linear + attention) / (8 * 1978.9e12) * 1e3:.4g} ms"
    assert f"range: low {floor}, preferred {expected:.4g} ms, high {expected:.4g} ms, over 1 condition" in total.out
    assert f"if attention runs at FP8 (a floor on Hopper): {floor}" in total.out, total.out


def test_a_verdict_is_worded_from_its_ratio(kb):
    base(kb)
    from test_compute import flop

    flop(
        kb,
        """
        costs:
          a:
            formula: "'2 s'"
            unit: s
          b:
            formula: "'3 s'"
            unit: s
          a_over_b:
            formula: a / b
            unit: '1'
    """,
        body="[[gpu-a]] [[dram-a]] [[s3-a]] [[transfer-bandwidth]] [[link-a]] A is {{ a_over_b | verdict }}; B is {{ b / a | verdict }}; bad {{ a | verdict }}\n",
    )
    result = kb.check()
    assert result.find("KB512") and "is time, not a ratio" in result.find("KB512")[0], result.out
    assert kb.run("build", "--no-search", "--force").exit_code == 0
    page = (kb.root / "site/_build/flops/hit.html").read_text()
    assert "faster (0.667× the time)" in page and "slower (1.5× the time)" in page


def test_a_source_without_a_url_says_why(kb):
    kb.source()
    kb.record("sources", "nowhere", "source", "kind: docs\npublisher: P\n")
    kb.record(
        "sources",
        "print-only",
        "source",
        "kind: paper\npublisher: P\nno_url: a conference handout, not published online\n",
    )
    kb.record("sources", "online", "source", "kind: docs\npublisher: P\nurl: https://example.org/doc\n")
    kb.record(
        "engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]] [[nowhere]] [[print-only]] [[online]]\n"
    )
    result = kb.check()
    assert [l.split(":")[0] for l in result.find("KB308")] == ["records/sources/nowhere.md"], result.out


PRICE = """
    item: accelerator-hour
    accelerator: gpu-a
    provider: P
    commitment: on-demand
    as_of: 2026-12-01
    instance_price: 80 USD/h
    accelerators_per_instance: 8
"""


def money(kb, cost: str, price: str = PRICE) -> None:
    base(kb)
    kb.record("prices", "gpu-a-hour", "price", price, body="[[gpu-a]]\n")
    kb.record(
        "measurements",
        "tput",
        "measurement",
        textwrap.dedent("""
        metric: output tokens per second of the node
        value: 8000 token/s
        throughput_kind: output
        measured_by: vendor
        published: 2026-11-01
        accelerator_count: 8
        accelerators: [gpu-a]
        inputs:
          price: prices/gpu-a-hour
        costs:
    """).lstrip("\n")
        + textwrap.indent(textwrap.dedent(cost).lstrip("\n"), "  "),
        body="[[gpu-a-hour]] [[hit]]\n",
    )
    from test_compute import flop

    flop(
        kb,
        "costs:\n  x:\n    formula: model.kv_bytes_per_token\n    unit: B/token\n",
        body="[[gpu-a]] [[dram-a]] [[s3-a]] [[transfer-bandwidth]] [[link-a]] [[tput]]\n",
    )


def test_usd_per_million_tokens_turns_hours_into_seconds(kb):
    """$10/GPU-hour at 1,000 token/s per GPU is 10 / 3,600,000 per token: $2.778 per million."""
    money(
        kb,
        """
        usd_per_mtoken:
          formula: price.per_accelerator_hour / throughput_per_accelerator
          unit: USD/Mtoken
          stated: 2.778 USD/Mtoken
    """,
    )
    result = kb.check()
    assert [l for l in result.lines if " error " in l] == [], result.out
    assert explain(kb, "measurements/tput.usd_per_mtoken").startswith(
        "measurements/tput.usd_per_mtoken = 2.778 USD/Mtoken"
    )


def test_the_3600x_formula_is_caught(kb):
    """The knowledge base this format descends from computed USD/GPU-hour ÷ token/s × 10^6 and called it
    USD per million tokens, never turning the hour into seconds: 3,600 times too much. Stated that way,
    kb recomputes the figure with its units and reports the factor."""
    money(
        kb,
        """
        usd_per_mtoken:
          formula: price.per_accelerator_hour / throughput_per_accelerator
          unit: USD/Mtoken
          stated: 10000 USD/Mtoken
    """,
    )
    result = kb.check()
    found = result.find("KB500")
    assert found and "the stated figure is 3,600× the recomputed one" in found[0], result.out


def test_the_3600x_formula_written_without_units_is_a_dimension_error(kb):
    """Written as the descended KB wrote it, with the hour dropped from the price, the result is not money
    per token at all: kb says so (KB504) instead of printing a number."""
    money(
        kb,
        """
        usd_per_mtoken:
          formula: price.per_accelerator_hour * '1 h' / throughput_per_accelerator * 1000000
          unit: USD/Mtoken
    """,
    )
    result = kb.check()
    assert any("gives currency time" in l for l in result.find("KB504")), result.out


def test_an_instance_price_and_its_per_accelerator_figure_are_checked(kb):
    money(
        kb,
        "x:\n  formula: price.per_accelerator_hour\n  unit: USD/h\n",
        price=PRICE + "    per_accelerator_hour: 12 USD/h\n",
    )
    result = kb.check()
    assert any(
        "per_accelerator_hour: stated 12 USD/h but instance_price / accelerators_per_instance = 80 USD/h ÷ 8 = 10 USD/h"
        in l
        for l in result.find("KB500")
    ), result.out


def test_a_measurement_above_its_ceiling_is_kb520_unless_contested(kb):
    cost = """
        ceiling_fraction:
          formula: throughput_per_accelerator / '500 token/s'
          unit: '1'
          at_most: 1
    """
    money(kb, cost)
    result = kb.check()
    found = result.find("KB520")
    assert found and found[0].startswith("records/measurements/tput.md:") and "= 2 exceeds its bound 1" in found[0], (
        result.out
    )
    path = kb.root / "records/measurements/tput.md"
    path.write_text(path.read_text().replace("status: draft", "status: contested"))
    assert not kb.check().find("KB520")


def test_a_bound_below_is_kb520(kb):
    money(
        kb,
        """
        per_gpu:
          formula: throughput_per_accelerator
          unit: token/s
          at_least: 2000 token/s
    """,
    )
    assert "falls below its bound 2,000 token/s" in kb.check().find("KB520")[0]


COMPETING = """
    vendor: V
    peak_fp8_dense: 4500 TFLOP/s
    memory_bandwidth:
      - value: 8 TB/s
        rank: preferred
        basis: vendor-spec
        source: src-a
      - value: {other}
        rank: {rank}
        basis: secondary
        source: src-b
        note: a driver query's figure
"""


def competing(kb, other="7.7 TB/s", rank="normal", status="draft"):
    kb.source()
    kb.source("src-b")
    path = kb.record(
        "accelerators", "gpu-c", "accelerator", COMPETING.format(other=other, rank=rank), body="[[src-b]]\n"
    )
    path.write_text(path.read_text().replace("status: draft", f"status: {status}"))
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]] [[gpu-c]]\n")
    return path


def test_competing_values_that_disagree_make_the_record_contested(kb):
    path = competing(kb)
    result = kb.check()
    found = result.find("KB530")
    assert found and "7.7 TB/s (src-b) disagrees with the preferred 8 TB/s (src-a)" in found[0], result.out
    assert found[0].startswith(
        f"records/accelerators/gpu-c.md:{path.read_text().splitlines().index('  - value: 7.7 TB/s') + 1}:"
    )
    path.write_text(path.read_text().replace("status: draft", "status: contested"))
    assert not kb.check().find("KB530")
    text = explain(kb, "accelerators/gpu-c.memory_bandwidth")
    assert (
        "range over the values not deprecated: 7,700 GB/s to 8,000 GB/s" in text
        and "also, ranked normal: 7,700 GB/s" in text
    )
    # derived figures use the preferred value
    assert explain(kb, "accelerators/gpu-c.ridge_point_fp8").startswith(
        "accelerators/gpu-c.ridge_point_fp8 = 562.5 FLOP/B"
    )


def test_figures_resting_on_competing_values_are_ranges(kb):
    """A derived figure is computed with the preferred value and shown as a range over the others, in
    explain, prose, the site and the export; a verdict that a competing value turns round says so."""
    competing(kb, status="contested")
    from test_compute import flop

    flop(
        kb,
        """
        costs:
          read:
            formula: "'1 GB' / acc.memory_bandwidth"
            unit: ms
          over_budget:
            formula: "read / '0.127 ms'"
            unit: '1'
    """,
        inputs="""
        inputs:
          acc: accelerators/gpu-c
    """,
        body="[[src-a]] [[gpu-c]] reads in {{ read }}, {{ read | range }}; it is {{ over_budget | verdict }}.\n",
    )
    result = kb.check()
    assert result.exit_code == 0 and "0 errors" in result.out, result.out
    text = explain(kb, "flops/hit.read")
    assert "range: low 0.125 ms, preferred 0.125 ms, high 0.1299 ms, over 1 condition" in text, text
    assert "if accelerators/gpu-c.memory_bandwidth = 7,700 GB/s (src-b): 0.1299 ms" in text
    assert "if accelerators/gpu-c.memory_bandwidth = 8,000 GB/s (src-a): 0.125 ms" in text
    assert kb.run("build", "--no-search").exit_code == 0
    page = (kb.root / "site/_build/flops/hit.html").read_text()
    assert ">0.125 ms to 0.1299 ms<" in page  # {{ read | range }}
    assert (
        ">faster or slower (0.984× to 1.02× the time; 0.984× at the preferred values): faster if "
        "accelerators/gpu-c.memory_bandwidth = 8,000 GB/s (src-a); slower if accelerators/gpu-c.memory_bandwidth = "
        "7,700 GB/s (src-b)<" in page
    )
    assert 'range over the conditions it rests on: <span class="figure">0.125 ms to 0.1299 ms</span>' in page
    out = kb.root / "kb.json"
    assert kb.run("export", "--json", str(out)).exit_code == 0
    import json

    record = next(r for r in json.loads(out.read_text())["records"] if r["key"] == "flops/hit")
    assert record["values"]["read"]["range"]["low"] == 0.125
    assert round(record["values"]["read"]["range"]["high"], 5) == round(1 / 7.7, 5)
    db_path = kb.root / "kb.sqlite"
    assert kb.run("export", "--sqlite", str(db_path)).exit_code == 0
    import sqlite3

    rows = (
        sqlite3.connect(db_path)
        .execute("SELECT low, high, unit FROM ranges WHERE key = 'flops/hit' AND value = 'read'")
        .fetchall()
    )
    assert [(low, round(high, 5), unit) for low, high, unit in rows] == [(0.125, round(1 / 7.7, 5), "ms")]


def test_a_deprecated_value_is_kept_but_does_not_contest(kb):
    competing(kb, other="4 TB/s", rank="deprecated")
    assert not kb.check().find("KB530")


def test_competing_values_need_exactly_one_preferred(kb):
    competing(kb, rank="preferred")
    assert "2 values are ranked preferred" in kb.check().find("KB531")[0]


def test_the_site_shows_every_competing_value(kb):
    competing(kb, status="contested")
    assert kb.run("build", "--no-search").exit_code == 0
    page = (kb.root / "site/_build/accelerators/gpu-c.html").read_text()
    assert 'class="alternatives"' in page and "7,700 GB/s" in page and "a driver query&#39;s figure" in page


def test_prose_quotes_a_row_of_another_records_table(kb):
    """{{ dir/id.cost[dir/id] }}: a figure computed in one record's table, quoted in another's prose."""
    base(kb)
    from test_compute import flop

    flop(
        kb,
        """
        costs:
          t:
            for_each: {tier: tiers}
            formula: "'1 GB' / param(tier, 'transfer-bandwidth')"
            unit: ms
    """,
    )
    kb.record(
        "engines",
        "e",
        "engine",
        "kind: serving-engine\n",
        body="[[src-a]] [[hit]] reads in {{ flops/hit.t[storage-tiers/s3-a] | s }}; bad {{ flops/hit.t[storage-tiers/nope] }}\n",
    )
    result = kb.check()
    bad = result.find("KB509")
    assert len(bad) == 1 and "'t' has no row for 'storage-tiers/nope'" in bad[0], result.out
    assert kb.run("build", "--no-search", "--force").exit_code == 0
    assert "11.11 s" in (kb.root / "site/_build/engines/e.html").read_text()
