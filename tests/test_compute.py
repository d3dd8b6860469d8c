"""Units and recomputation: a figure that disagrees with its own inputs must not pass."""

import time

import pytest
from conftest import KB_SCRIPT, REPO, TEST_GPU, TEST_MLA_MODEL

MODEL = TEST_MLA_MODEL
GPU = TEST_GPU


def base(kb):
    kb.source()
    kb.record("models", "mla-model", "model", MODEL)
    kb.record("accelerators", "gpu-a", "accelerator", GPU)
    kb.record(
        "hardware-parameters",
        "transfer-bandwidth",
        "hardware_parameter",
        "dimension: GB/s\ncarried_by: {accelerator: memory_bandwidth, storage_tier: bandwidth, interconnect: bandwidth_per_direction}\n",
    )
    kb.record("interconnects", "link-a", "interconnect", "kind: pcie\nscope: host\nbandwidth_per_direction: 63 GB/s\n")
    kb.record(
        "storage-tiers",
        "dram-a",
        "storage_tier",
        "medium: dram\npath: tiered-offload\nlink: link-a\nchannels: 12\nchannel_width: 8 B\ntransfer_rate: 4800 MT/s\n",
    )
    kb.record(
        "storage-tiers", "s3-a", "storage_tier", "medium: object-store\npath: tiered-offload\nbandwidth: 90 MB/s\n"
    )


def flop(kb, costs, inputs=None, body=""):
    inputs = (
        inputs
        or """
        inputs:
          model: models/mla-model
          prefix_tokens: 32000 token
          tiers: [accelerators/gpu-a, storage-tiers/dram-a, storage-tiers/s3-a]
    """
    )
    import textwrap

    extra = (
        "class: kv_transfer\nbound_by: storage\n"
        + textwrap.dedent(inputs).lstrip("\n")
        + textwrap.dedent(costs).lstrip("\n")
    )
    return kb.record(
        "flops",
        "hit",
        "flop",
        extra,
        body=body or "Links [[gpu-a]] [[dram-a]] [[s3-a]] [[transfer-bandwidth]] [[link-a]]\n",
    )


HIT_BYTES = """
    costs:
      hit_path_bytes:
        formula: model.kv_bytes_per_token * prefix_tokens
        unit: GB
        stated: 2.25 GB
"""


def line_of(path, text):
    return next(i for i, l in enumerate(path.read_text().splitlines(), 1) if text in l)


def value_at(path, key):
    """'line:col' of the value written after `key:` (where kb points a unit or number error)."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith(f"{key}:"):
            after = line.index(f"{key}:") + len(key) + 1
            return f"{number}:{after + len(line[after:]) - len(line[after:].lstrip()) + 1}"
    raise AssertionError(key)


def test_costs_check_clean_and_table_rows(kb):
    base(kb)
    flop(
        kb,
        HIT_BYTES
        + """
      hit_path_time:
        for_each: {tier: tiers}
        formula: hit_path_bytes / param(tier, 'transfer-bandwidth')
        unit: ms
    """,
    )
    result = kb.check()
    assert result.exit_code == 0, result.out
    explained = kb.run("explain", "flops/hit.hit_path_time").out
    assert "accelerators/gpu-a: 0.4685 ms" in explained
    assert "storage-tiers/dram-a: 35.69 ms" in explained  # min(460.8 GB/s DRAM, 63 GB/s link)
    assert "storage-tiers/s3-a: 24,986 ms" in explained


def test_stated_figure_twice_its_recomputation(kb):
    """The seed's own error: a factor 2 in the formula that its 2.25 GB figure does not have."""
    base(kb)
    path = flop(kb, HIT_BYTES.replace("formula: model.kv_bytes_per_token", "formula: 2 * model.kv_bytes_per_token"))
    result = kb.check()
    assert result.exit_code == 1
    line = line_of(path, "stated: 2.25 GB")
    assert result.find("KB500") == [
        f"records/flops/hit.md:{line}:5: error KB500 costs.hit_path_bytes: stated 2.25 GB but "
        "2 * model.kv_bytes_per_token * prefix_tokens = 2 × (61 × (512 + 64) × 2 B ÷ 1 token) × 32,000 token = 4.497 GB; "
        "the stated figure is half the recomputed one (tolerance 1%)"
    ]


def test_type_level_derivation_mismatch_names_both_figures(kb):
    """The prior-art H200 defect: 5.0 Gb/s × 6144 bits cannot give 4,800 GB/s."""
    base(kb)
    path = kb.record("accelerators", "gpu-b", "accelerator", GPU.replace("6.25 Gb/s", "5.0 Gb/s"), body="[[gpu-a]]\n")
    kb.record("accelerators", "gpu-c", "accelerator", "vendor: V\n", body="[[gpu-b]]\n")
    result = kb.check()
    line = line_of(path, "memory_bandwidth:")
    assert (
        f"records/accelerators/gpu-b.md:{line}:1: error KB500 memory_bandwidth: stated 4.8 TB/s but "
        "memory_bus_width * memory_pin_rate = 6,144 pin × 5 Gb/s = 3.84 TB/s; the stated figure is 1.25× the recomputed one (tolerance 1%)"
        in result.lines
    )


def test_derived_fields_fill_in_when_only_inputs_exist(kb):
    base(kb)
    flop(kb, HIT_BYTES)
    out = kb.run("explain", "models/mla-model.kv_bytes_per_token").out
    assert out.splitlines()[0] == "models/mla-model.kv_bytes_per_token = 70,272 B/token"
    assert "= 61 × (512 + 64) × 2 B ÷ 1 token" in out
    assert "basis: derived" in out
    gqa = kb.run("explain", "models/mla-model.flops_per_token").out
    assert gqa.splitlines()[0] == "models/mla-model.flops_per_token = 74 GFLOP/token"


def test_gqa_formula_by_attention_kind(kb):
    base(kb)
    kb.record(
        "models",
        "gqa-model",
        "model",
        """
        architecture: dense
        attention: gqa
        num_layers: 32
        num_kv_heads: 8
        head_dim: 128
        kv_dtype_size: 2 B
        kv_bytes_per_token: 131072 B/token
    """,
        body="[[mla-model]]\n",
    )
    flop(kb, HIT_BYTES, body="[[gqa-model]] [[gpu-a]] [[dram-a]] [[s3-a]] [[transfer-bandwidth]] [[link-a]]\n")
    assert kb.check().exit_code == 0
    kb.record(
        "models",
        "gqa-model",
        "model",
        """
        architecture: dense
        attention: gqa
        num_layers: 32
        num_kv_heads: 8
        head_dim: 128
        kv_dtype_size: 2 B
        kv_bytes_per_token: 65536 B/token
    """,
        body="[[mla-model]]\n",
    )
    found = kb.check().find("KB500")
    assert found == [
        "records/models/gqa-model.md:15:1: error KB500 kv_bytes_per_token: stated 65,536 B/token but "
        "2 * num_layers * num_kv_heads * head_dim * kv_dtype_size / '1 token' = 2 × 32 × 8 × 128 × 2 B ÷ 1 token "
        "= 131,072 B/token; the stated figure is half the recomputed one (tolerance 0.1%)"
    ]


def test_bandwidth_written_without_per_second(kb):
    base(kb)
    path = kb.record(
        "accelerators", "gpu-b", "accelerator", "vendor: V\nmemory_bandwidth: 4.8 TB\n", body="[[gpu-a]]\n"
    )
    kb.record("flops", "f", "flop", "class: kv_transfer\nbound_by: memory\naffected_by_hardware: [gpu-b]\n")
    result = kb.check()
    assert result.exit_code == 1
    assert result.find("KB402") == [
        f"records/accelerators/gpu-b.md:{value_at(path, 'memory_bandwidth')}: error KB402 "
        "memory_bandwidth: 4.8 TB is information, expected information per time (like GB/s)"
    ]


def test_a_bare_number_says_which_unit_kb_assumed(kb):
    """A newcomer's `memory_bandwidth: 3200`, meant as GB/s, is read in the field's unit: kb says which, at the
    number, and --strict refuses it."""
    base(kb)
    path = kb.record("accelerators", "gpu-b", "accelerator", "vendor: V\nmemory_bandwidth: 3200\n", body="[[gpu-a]]\n")
    result = kb.check()
    assert result.exit_code == 0
    assert result.find("KB406") == [
        f"records/accelerators/gpu-b.md:{value_at(path, 'memory_bandwidth')}: warning KB406 memory_bandwidth: the "
        "bare number 3200 was read as 3,200 GB/s (the field's unit, GB/s); write the unit, '3200 GB/s', or the "
        "figure you meant"
    ]
    assert kb.check("--strict").exit_code == 1
    kb.record("accelerators", "gpu-b", "accelerator", "vendor: V\nmemory_bandwidth: 3200 GB/s\n", body="[[gpu-a]]\n")
    assert kb.check("--strict").find("KB406") == []


def test_unit_errors_at_their_lines(kb):
    kb.source()
    path = kb.record(
        "accelerators",
        "gpu-b",
        "accelerator",
        """
        vendor: V
        memory_capacity: lots
        memory_bandwidth: 4.8 TBps
        tdp: 1e308 W
        l2_cache: {value: 50 MB, basis: measured}
    """,
    )
    result = kb.check()
    assert (
        f"records/accelerators/gpu-b.md:{value_at(path, 'memory_capacity')}: error KB400 memory_capacity: 'lots' is not a quantity: write 'VALUE UNIT', e.g. '4.8 TB/s'"
        in result.lines
    )
    assert result.find("KB401")[0].startswith(
        f"records/accelerators/gpu-b.md:{value_at(path, 'memory_bandwidth')}: error KB401 memory_bandwidth: unknown unit 'TBps'"
    )
    assert result.find("KB403")[0].startswith(f"records/accelerators/gpu-b.md:{value_at(path, 'tdp')}: error KB403")
    assert not [l for l in result.lines if "l2_cache" in l]


def test_long_form_quantity_error_points_at_its_value(kb):
    kb.source()
    path = kb.record(
        "accelerators",
        "gpu-b",
        "accelerator",
        """
        vendor: V
        memory_bandwidth:
          basis: vendor-spec
          value: 4.8 TBps
    """,
    )
    result = kb.check()
    assert result.find("KB401")[0].startswith(
        f"records/accelerators/gpu-b.md:{value_at(path, 'value')}: error KB401"
    ), result.out


def test_information_is_a_real_dimension(kb):
    base(kb)
    path = flop(
        kb,
        """
        costs:
          nonsense:
            formula: "'1 GB' + 5"
            unit: GB
    """,
    )
    assert kb.check().find("KB503") == [
        f"records/flops/hit.md:{line_of(path, 'formula:')}:5: error KB503 costs.nonsense: "
        "cannot add GB (information) and a plain number"
    ]


def test_adding_bytes_to_bandwidth(kb):
    base(kb)
    path = flop(
        kb,
        HIT_BYTES
        + """
      wrong:
        formula: hit_path_bytes + model.kv_bytes_per_token * prefix_tokens / '1 s'
        unit: GB
    """,
    )
    found = kb.check().find("KB503")
    assert found == [
        f"records/flops/hit.md:{line_of(path, 'formula: hit_path_bytes +')}:5: error KB503 costs.wrong: "
        "cannot add GB (information) and B/s (information per time)"
    ]


def test_result_of_wrong_dimension(kb):
    base(kb)
    path = flop(
        kb,
        HIT_BYTES
        + """
      time:
        formula: hit_path_bytes / model.kv_bytes_per_token
        unit: ms
    """,
    )
    found = kb.check().find("KB504")
    assert len(found) == 1 and found[0].startswith(
        f"records/flops/hit.md:{line_of(path, 'unit: ms')}:5: error KB504 costs.time: "
    )
    assert "gives token" in found[0] and "its unit is ms (time)" in found[0]


def test_cycle_between_two_records_costs(kb):
    base(kb)
    flop(
        kb,
        """
        costs:
          a:
            formula: other.b * 2
            unit: GB
    """,
        inputs="inputs:\n  other: flops/other\n",
    )
    kb.record(
        "flops",
        "other",
        "flop",
        """
        class: kv_transfer
        bound_by: storage
        inputs:
          back: flops/hit
        costs:
          b:
            formula: back.a / 2
            unit: GB
    """,
        body="[[gpu-a]] [[dram-a]] [[s3-a]] [[transfer-bandwidth]] [[link-a]] [[mla-model]]\n",
    )
    result = kb.check()
    assert result.exit_code == 1
    cycles = result.find("KB506")
    assert len(cycles) == 1
    # records are evaluated in path order, so the cycle is found from flops/hit and reported there
    hit = kb.root / "records/flops/hit.md"
    assert cycles == [
        f"records/flops/hit.md:{line_of(hit, 'formula: other.b')}:5: error KB506 costs.a: "
        "cycle flops/hit.costs.a → flops/other.costs.b → flops/hit.costs.a"
    ]


def test_import_in_formula_is_rejected_and_nothing_runs(kb, tmp_path):
    base(kb)
    marker = tmp_path / "pwned"
    path = flop(
        kb,
        f"""
        costs:
          evil:
            formula: "__import__('os').system('touch {marker}')"
            unit: GB
    """,
    )
    result = kb.check()
    assert result.exit_code == 1
    assert result.find("KB501") == [
        f"records/flops/hit.md:{line_of(path, 'formula:')}:5: error KB501 costs.evil: "
        "function '__import__('os').system' is not allowed (allowed: abs, ceil, default, exp, floor, ln, max, min, "
        "param, sqrt, zipf_lru, zipf_top, or a function a record's type declares, called as record.name(...))"
    ]
    assert not marker.exists()


def test_huge_power_fails_fast(kb):
    base(kb)
    path = flop(
        kb,
        """
        costs:
          huge:
            formula: 10 ** 10 ** 10
            unit: GB
    """,
    )
    start = time.monotonic()
    result = kb.check()
    assert time.monotonic() - start < 10
    assert result.find("KB507") == [
        f"records/flops/hit.md:{line_of(path, 'formula:')}:5: error KB507 costs.huge: "
        "an exponent must be a number literal between -64 and 64"
    ]


def test_division_by_zero_and_missing_input(kb):
    base(kb)
    path = flop(
        kb,
        HIT_BYTES
        + """
      zero:
        formula: hit_path_bytes / empty
        unit: s
      missing:
        formula: hit_path_bytes / prefix_len
        unit: GB
    """,
        inputs="""
        inputs:
          model: models/mla-model
          prefix_tokens: 32000 token
          empty: 0 GB/s
    """,
    )
    result = kb.check()
    assert result.find("KB505") == [
        f"records/flops/hit.md:{line_of(path, 'hit_path_bytes / empty')}:5: error KB505 costs.zero: division by zero: empty is 0"
    ]
    assert result.find("KB502") == [
        f"records/flops/hit.md:{line_of(path, 'prefix_len')}:5: error KB502 costs.missing: "
        "'prefix_len' is not an input, a cost or a field of flops/hit"
    ]


def test_for_each_over_something_that_is_not_a_list(kb):
    base(kb)
    path = flop(
        kb,
        HIT_BYTES
        + """
      rows:
        for_each: {tier: prefix_tokens}
        formula: hit_path_bytes / tier.bandwidth
        unit: ms
    """,
    )
    assert kb.check().find("KB508") == [
        f"records/flops/hit.md:{line_of(path, 'for_each')}:5: error KB508 costs.rows.for_each: "
        "'prefix_tokens' is not a list of record references"
    ]


def test_only_the_root_cause_is_reported(kb):
    base(kb)
    flop(
        kb,
        HIT_BYTES.replace("model.kv_bytes_per_token * prefix_tokens", "model.kv_bytes_per_token * prefix_tokens * nope")
        + """
      time:
        formula: hit_path_bytes / '1 GB/s'
        unit: s
    """,
    )
    result = kb.check()
    assert [c for c in result.codes() if c != "KB306"] == ["KB502"]


def test_inline_values_checked_at_body_line(kb):
    base(kb)
    path = flop(
        kb,
        HIT_BYTES,
        body="""
        Links [[gpu-a]] [[dram-a]] [[s3-a]] [[transfer-bandwidth]] [[link-a]]

        A hit reads {{ hit_path_bytes | GB }} and {{ models/mla-model.kv_bytes_per_token }} per token.
        Wrong unit {{ hit_path_bytes | ms }}; unknown {{ nothing }}; `{{ in code }}` is prose.
    """,
    )
    result = kb.check()
    line = line_of(path, "Wrong unit")
    assert result.find("KB509") == [
        f"records/flops/hit.md:{line}:12: error KB509 inline value {{{{ hit_path_bytes | ms }}}}: 2.249 GB is information, expected time (like ms)",
        f"records/flops/hit.md:{line}:47: error KB509 inline value {{{{ nothing }}}}: 'nothing' is not an input, a cost or a field of flops/hit",
    ]


def test_hardware_parameter_tables(kb):
    base(kb)
    kb.record("accelerators", "gpu-b", "accelerator", "vendor: V\n")
    path = kb.record(
        "flops",
        "f",
        "flop",
        """
        class: decode_attention
        bound_by: memory
        hardware_parameters:
          - parameter: transfer-bandwidth
            effect: sets the time to read the KV
            values_for: [gpu-a, gpu-b]
            basis: recorded
    """,
        body="[[dram-a]] [[s3-a]] [[link-a]] [[mla-model]]\n",
    )
    result = kb.check()
    assert result.exit_code == 0
    assert result.find("KB511") == [
        f"records/flops/f.md:{line_of(path, 'values_for')}:25: warning KB511 "
        "hardware_parameters[0]: accelerators/gpu-b has no memory_bandwidth"
    ]


def test_carried_by_must_name_a_quantity_field(kb):
    kb.source()
    path = kb.record(
        "hardware-parameters",
        "bad",
        "hardware_parameter",
        "dimension: GB/s\ncarried_by: {accelerator: memory_capacity, engine: license, gadget: x}\n",
    )
    found = kb.check().find("KB510")
    line = line_of(path, "carried_by")
    assert found == [
        f"records/hardware-parameters/bad.md:{line}:14: error KB510 carried_by.accelerator: memory_capacity is in GB, not GB/s",
        f"records/hardware-parameters/bad.md:{line}:44: error KB510 carried_by.engine: 'license' is not a quantity field of engine",
        f"records/hardware-parameters/bad.md:{line}:61: error KB510 carried_by: no record type 'gadget'",
    ]


def test_explain_shows_records_and_sources_behind_each_input(kb):
    base(kb)
    flop(kb, HIT_BYTES)
    out = kb.run("explain", "flops/hit.hit_path_bytes").out
    assert out.splitlines()[:4] == [
        "flops/hit.hit_path_bytes = 2.249 GB",
        "  = model.kv_bytes_per_token * prefix_tokens",
        "  = (61 × (512 + 64) × 2 B ÷ 1 token) × 32,000 token",
        "  ≈ 2.249 GB",
    ]
    assert "stated: 2.25 GB" in out
    assert "model.kv_bytes_per_token = 70,272 B/token  from models/mla-model (records/models/mla-model.md:2)" in out
    assert "num_layers = 61  from models/mla-model (records/models/mla-model.md:12)" in out
    assert "sources: src-a" in out


def test_explain_unknown_target_exits_2(kb):
    base(kb)
    assert kb.run("explain", "models/nope").exit_code == 2
    assert kb.run("explain", "models/mla-model.nope").exit_code == 2


def test_repository_seed_explains_its_hit_path_bytes():
    import subprocess

    proc = subprocess.run(
        [KB_SCRIPT, "explain", "flops/eng-profile-kv-tiering-moves-flops-to-bytes.hit_path_bytes"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "= (61 × (512 + 64) × 2 B ÷ 1 token) × 32,000 token" in proc.stdout
    assert "≈ 2.249 GB" in proc.stdout
    assert "models/deepseek-v3" in proc.stdout and "deepseek-v3-hf-config" in proc.stdout


def test_dangling_input_reference_is_reported_once(kb):
    base(kb)
    flop(
        kb,
        HIT_BYTES,
        inputs="""
        inputs:
          model: models/nope
          prefix_tokens: 32000 token
    """,
    )
    result = kb.check()
    assert [c for c in result.codes() if c.startswith("KB") and c not in ("KB306",)] == ["KB300"]


def test_inline_table_row(kb):
    base(kb)
    path = flop(
        kb,
        HIT_BYTES
        + """
      hit_path_time:
        for_each: {tier: tiers}
        formula: hit_path_bytes / tier.bandwidth
        unit: ms
    """,
        inputs="""
        inputs:
          model: models/mla-model
          prefix_tokens: 32000 token
          tiers: [storage-tiers/dram-a, storage-tiers/s3-a]
    """,
        body="""
        Links [[gpu-a]] [[dram-a]] [[s3-a]] [[transfer-bandwidth]] [[link-a]]

        DRAM {{ hit_path_time[storage-tiers/dram-a] }}, S3 {{ hit_path_time[s3-a] | s }}, GPU {{ hit_path_time[gpu-a] }}.
    """,
    )
    result = kb.check()
    line = line_of(path, "DRAM {{")
    assert result.find("KB509") == [
        f"records/flops/hit.md:{line}:87: error KB509 inline value {{{{ hit_path_time[gpu-a] }}}}: "
        "'hit_path_time' has no row for 'gpu-a' (rows: storage-tiers/dram-a, storage-tiers/s3-a)"
    ]
    from kbtools.check.pipeline import check_corpus
    from kbtools.corpus import Settings

    inline = check_corpus(Settings(root=kb.root)).values("flops/hit").inline
    assert [v.rendered for v in inline] == ["35.69 ms", "24.99 s", None]


@pytest.mark.slow
def test_repository_seed_with_its_original_factor_2_fails(tmp_path):
    """The seed's own arithmetic error, replayed on the real corpus: kb check must refuse it."""
    import shutil
    import subprocess

    root = tmp_path / "kb"
    shutil.copytree(REPO / "schema", root / "schema")
    shutil.copytree(REPO / "records", root / "records")
    seed = root / "records/flops/eng-profile-kv-tiering-moves-flops-to-bytes.md"
    text = seed.read_text()
    assert "formula: model.kv_bytes(prefix_tokens)" in text
    seed.write_text(
        text.replace("formula: model.kv_bytes(prefix_tokens)", "formula: 2 * model.kv_bytes(prefix_tokens)")
    )
    proc = subprocess.run([KB_SCRIPT, "--root", str(root), "check"], capture_output=True, text=True)
    assert proc.returncode == 1
    errors = [l for l in proc.stdout.splitlines() if " error " in l]
    line = next(i for i, l in enumerate(seed.read_text().splitlines(), 1) if "stated: 2.25 GB" in l)
    assert errors == [
        f"records/flops/eng-profile-kv-tiering-moves-flops-to-bytes.md:{line}:5: error KB500 costs.hit_path_bytes: "
        "stated 2.25 GB but 2 * model.kv_bytes(prefix_tokens) = "
        "2 × ((61 × (512 + 64) × 2 B ÷ 1 token) × 32,000 token) = 4.497 GB; "
        "the stated figure is half the recomputed one (tolerance 1%)"
    ]


def test_inline_arithmetic_over_qualified_fields(kb):
    base(kb)
    flop(
        kb,
        HIT_BYTES,
        body="""
        Links [[gpu-a]] [[dram-a]] [[s3-a]] [[transfer-bandwidth]] [[link-a]]

        8K tokens: {{ models/mla-model.kv_bytes_per_token * '8192 token' | MB }}; bad {{ models/none.kv_bytes_per_token * 2 }}.
    """,
    )
    result = kb.check()
    assert [l.split(" error ")[1] for l in result.find("KB509")] == [
        "KB509 inline value {{ models/none.kv_bytes_per_token * 2 }}: no record 'models/none'"
    ]
    from kbtools.check.pipeline import check_corpus
    from kbtools.corpus import Settings

    inline = check_corpus(Settings(root=kb.root)).values("flops/hit").inline
    assert [v.rendered for v in inline] == ["575.7 MB", None]


@pytest.mark.parametrize(
    "stated, computed, words",
    [
        (0, 2.25, "the stated figure is 0"),
        (2.25, 0, "the recomputed figure is 0"),
        (4.5, 2.25, "the stated figure is twice the recomputed one"),
        (1.125, 2.25, "the stated figure is half the recomputed one"),
        (2.2, 2.25, "the stated figure is 0.978× the recomputed one"),
        (8100, 2.25, "the stated figure is 3,600× the recomputed one"),
    ],
)
def test_how_far_a_stated_figure_is_from_its_recomputation(stated, computed, words):
    from kbtools.check.compute import how_far

    assert how_far(stated, computed) == words


def test_a_stated_zero_is_said_as_zero(kb):
    base(kb)
    flop(kb, HIT_BYTES.replace("stated: 2.25 GB", "stated: 0 GB"))
    found = kb.check().find("KB500")
    assert found and found[0].endswith("= 2.249 GB; the stated figure is 0 (tolerance 1%)"), found


MEASURED_ROWS = """
      measured:
        for_each: {tier: tiers}
        skip_missing: true
        formula: hit_path_bytes / tier.measured_bandwidth
        unit: ms
"""


def test_skip_missing_leaves_out_rows_without_the_field_and_nothing_else(kb):
    """A table of measured figures: a tier with no measured_bandwidth is left out, not an error; without
    skip_missing the same row is KB502, and a name that is wrong is KB502 with skip_missing too."""
    base(kb)
    kb.record(
        "storage-tiers",
        "s3-a",
        "storage_tier",
        "medium: object-store\npath: tiered-offload\nbandwidth: 90 MB/s\nmeasured_bandwidth: 45 MB/s\n",
    )
    path = flop(kb, HIT_BYTES + MEASURED_ROWS)
    assert kb.check().exit_code == 0
    explained = kb.run("explain", "flops/hit.measured").out
    assert "storage-tiers/s3-a: 49,971 ms" in explained
    assert "dram-a" not in explained and "gpu-a" not in explained

    path = flop(kb, HIT_BYTES + MEASURED_ROWS.replace("        skip_missing: true\n", ""))
    assert kb.check().find("KB502") == [
        f"records/flops/hit.md:{line_of(path, 'tier.measured_bandwidth')}:5: error KB502 costs.measured"
        "[accelerators/gpu-a]: accelerators/gpu-a has no value for 'measured_bandwidth'"
    ]
    path = flop(kb, HIT_BYTES + MEASURED_ROWS.replace("tier.measured", "tierr.measured"))
    assert [d.split(": error ")[1][:40] for d in kb.check().find("KB502")] == [
        "KB502 costs.measured[accelerators/gpu-a]"
    ]


def test_beside_must_name_another_table_over_the_same_rows(kb):
    base(kb)
    path = flop(kb, HIT_BYTES + MEASURED_ROWS + "        beside: hit_path_bytes\n")
    assert kb.check().find("KB508") == [
        f"records/flops/hit.md:{line_of(path, 'beside')}:5: error KB508 costs.measured.beside: "
        "'hit_path_bytes' is not another for_each cost of this record over 'tiers'"
    ]


def test_skip_missing_on_a_single_figure_is_a_mistake(kb):
    base(kb)
    path = flop(kb, HIT_BYTES.replace("        stated: 2.25 GB\n", "        skip_missing: true\n"))
    assert kb.check().find("KB508") == [
        f"records/flops/hit.md:{line_of(path, 'skip_missing')}:5: error KB508 costs.hit_path_bytes.skip_missing: "
        "only a for_each table has rows to leave out or show beside another"
    ]
