"""Issue 46, a newcomer's F11: what kb says where the words or the noise got in the way. A watt-hour is a unit
of energy, a tab is named as a tab, the warnings that follow from a refused figure are listed under it, a
misspelt key fails kb check only (not also kb fmt), and kb serve says how many pages it rendered."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbtools.corpus import Settings

TAB = "a tab character where YAML expects spaces (YAML indents with spaces only)"


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# ---------------------------------------------------------------- a watt-hour is energy


def test_a_watt_hour_where_watts_are_expected_is_named_energy(kb):
    kb.source()
    paths = {
        unit: kb.record("accelerators", f"gpu-{unit.lower()}", "accelerator", f"vendor: V\ntdp: 700 {unit}\n")
        for unit in ("Wh", "kWh", "MWh", "J")
    }
    found = kb.check().find("KB402")
    assert found == [
        f"records/accelerators/gpu-{unit.lower()}.md:{line_of(path, 'tdp:')}:{len('tdp: ') + 1}: error KB402 "
        f"tdp: 700 {unit} is energy, expected power (like W)"
        for unit, path in sorted(paths.items(), key=lambda item: item[1].name)
    ]
    assert kb.check().find("KB401") == []


# ---------------------------------------------------------------- a tab says it is a tab


@pytest.mark.parametrize(
    "frontmatter, line, column",
    [
        ("id: x\ntype: engine\nkind: serving-engine\nrepo:\n\turl: https://example.org\n", 6, 1),  # column 1
        ("id: x\ntype: engine\nkind: serving-engine\nrepo:\n  \turl: https://example.org\n", 6, 3),  # mid-indent
        ("id: x\ntype: engine\nkind: serving-engine\nlanguages:\n\t- Python\n", 6, 1),  # before a list item
        ("id: x\ntype: engine\nkind: serving-engine\nlanguages:\n  - C\n \t- Python\n", 7, 2),  # in a list's indent
    ],
    ids=["at-column-1", "in-the-indentation", "before-a-list-item", "in-a-list-items-indentation"],
)
def test_a_tab_in_the_indentation_is_named_where_it_is(kb, frontmatter, line, column):
    kb.write("records/engines/x.md", f"---\n{frontmatter}---\nBody.\n", dedent=False)
    kb.write("records/engines/y.md", '---\nid: y\nname: "abc\n---\n', dedent=False)  # no tab: its own words
    found = kb.check().find("KB104")
    assert found[0] == f"records/engines/x.md:{line}:{column}: error KB104 invalid YAML: {TAB}"
    assert len(found) == 2 and found[1].startswith("records/engines/y.md:") and "tab" not in found[1]


# ---------------------------------------------------------------- a refused figure and what follows from it


def bandwidth_parameter(kb):
    """The hardware parameter a decode-attention row reads: each accelerator's memory bandwidth."""
    kb.record(
        "hardware-parameters",
        "transfer-bandwidth",
        "hardware_parameter",
        "dimension: GB/s\ncarried_by: {accelerator: memory_bandwidth}\n",
    )


READS_BANDWIDTH = "parameter: transfer-bandwidth\neffect: sets the time to read the KV\n"


def decode_row(kb, name: str, row: str, body: str):
    """A memory-bound decode-attention flop whose hardware_parameters has the one row `row` (YAML, under `- `)."""
    return kb.record(
        "flops",
        name,
        "flop",
        "class: decode_attention\nbound_by: memory\nhardware_parameters:\n  - "
        + row.strip().replace("\n", "\n    ")
        + "\n",
        body=body,
    )


def refused_bandwidth(kb):
    """A flop row reads the memory bandwidth of three accelerators: gpu-bad writes one kb refuses (4.8 TB is no
    bandwidth), gpu-none writes none, gpu-good a good one."""
    kb.source()
    bandwidth_parameter(kb)
    bad = kb.record("accelerators", "gpu-bad", "accelerator", "vendor: V\nmemory_bandwidth: 4.8 TB\n")
    kb.record("accelerators", "gpu-none", "accelerator", "vendor: V\n")
    kb.record("accelerators", "gpu-good", "accelerator", "vendor: V\nmemory_bandwidth: 4.8 TB/s\n")
    body = "[[gpu-bad]] [[gpu-none]] [[gpu-good]] [[transfer-bandwidth]]\n"
    rows = [
        decode_row(kb, name, READS_BANDWIDTH + "values_for: [gpu-bad, gpu-none, gpu-good]\nbasis: recorded", body)
        for name in ("f1", "f2")
    ]
    return bad, rows


def test_warnings_that_a_refused_figure_is_missing_are_listed_under_the_refusal(kb):
    bad, (f1, f2) = refused_bandwidth(kb)
    result = kb.check()
    lines = [line for line in result.out.splitlines() if " KB402 " in line or " KB511 " in line]
    where, column = line_of(bad, "memory_bandwidth"), len("memory_bandwidth: ") + 1  # the value's text
    row = line_of(f1, "values_for")
    text = f1.read_text().splitlines()[row - 1]
    at_bad, at_none = text.index("gpu-bad") + 1, text.index("gpu-none") + 1
    assert lines == [
        f"records/accelerators/gpu-bad.md:{where}:{column}: error KB402 memory_bandwidth: 4.8 TB is information, "
        "expected information per time (like GB/s) (and 2 warnings that follow from it: uses of "
        "accelerators/gpu-bad.memory_bandwidth, which kb refused)",
        f"  records/flops/f1.md:{row}:{at_bad}: warning KB511 hardware_parameters[0]: accelerators/gpu-bad has no "
        "memory_bandwidth (kb refused it, or a figure it is derived from)",
        f"  records/flops/f2.md:{row}:{at_bad}: warning KB511 hardware_parameters[0]: accelerators/gpu-bad has no "
        "memory_bandwidth (kb refused it, or a figure it is derived from)",
        # a record that writes no bandwidth at all: its own finding, under no cause
        f"records/flops/f1.md:{row}:{at_none}: warning KB511 hardware_parameters[0]: accelerators/gpu-none has no "
        "memory_bandwidth",
        f"records/flops/f2.md:{row}:{at_none}: warning KB511 hardware_parameters[0]: accelerators/gpu-none has no "
        "memory_bandwidth",
    ]


def test_json_says_which_finding_a_missing_figure_follows_from(kb):
    bad, _ = refused_bandwidth(kb)
    found = kb.check_json()["diagnostics"]
    where, column = line_of(bad, "memory_bandwidth"), len("memory_bandwidth: ") + 1
    cause = {"path": "records/accelerators/gpu-bad.md", "line": where, "column": column}
    assert [(d["path"], d.get("caused_by")) for d in found if d["code"] == "KB511"] == [
        ("records/flops/f1.md", {**cause, "code": "KB402"}),
        ("records/flops/f1.md", None),
        ("records/flops/f2.md", {**cause, "code": "KB402"}),
        ("records/flops/f2.md", None),
    ]


def test_a_figure_derived_from_a_refused_one_is_listed_under_the_refusal(kb):
    """gpu-d writes no memory bandwidth: kb derives it from the bus width and the pin rate, and refuses the pin
    rate. The row that reads the bandwidth follows from that refusal."""
    kb.source()
    bandwidth_parameter(kb)
    gpu = kb.record(
        "accelerators", "gpu-d", "accelerator", "vendor: V\nmemory_bus_width: 6144 pin\nmemory_pin_rate: 8 GB\n"
    )
    row = decode_row(
        kb, "f1", READS_BANDWIDTH + "values_for: [gpu-d]\nbasis: recorded", "[[gpu-d]] [[transfer-bandwidth]]\n"
    )
    lines = [line for line in kb.check().out.splitlines() if " KB402 " in line or " KB511 " in line]
    at = line_of(row, "values_for")
    assert lines == [
        f"records/accelerators/gpu-d.md:{line_of(gpu, 'memory_pin_rate')}:{len('memory_pin_rate: ') + 1}: error KB402 "
        "memory_pin_rate: 8 GB is information, expected information per time (like Gb/s) (and 1 warning that "
        "follows from it: uses of accelerators/gpu-d.memory_bandwidth, which kb derives from what it refused)",
        f"  records/flops/f1.md:{at}:{row.read_text().splitlines()[at - 1].index('gpu-d') + 1}: warning KB511 "
        "hardware_parameters[0]: accelerators/gpu-d has no memory_bandwidth (kb refused it, or a figure it is "
        "derived from)",
    ]


# ---------------------------------------------------------------- a misspelt key: kb check's finding only


def test_a_misspelt_key_stays_where_it_was_written_so_fmt_check_passes(kb):
    kb.source()
    path = kb.record("accelerators", "acme-x1", "accelerator", "vender: Acme\nform_factor: SXM\n")
    written = path.read_text()
    fmt = kb.run("fmt", "--check", str(path))
    assert fmt.exit_code == 0, fmt.out + fmt.err
    assert "would reformat" not in fmt.out
    assert path.read_text() == written
    assert kb.check().find("KB201") == [
        f"records/accelerators/acme-x1.md:{line_of(path, 'vender')}:1: error KB201 unknown field 'vender' for type "
        "'accelerator' (did you mean 'vendor'? it is required, and missing) (hint: fields are declared in "
        "schema/accelerator.schema.json)"
    ]


def test_fmt_keeps_an_unknown_key_after_the_key_written_before_it(kb):
    kb.source()
    path = kb.write(
        "records/accelerators/acme-x2.md",
        "---\nid: acme-x2\nname: Acme X2\nvender: Acme\ntype: accelerator\nstatus: draft\n"
        "updated: 2026-11-29\nconfidence: 0.5\nsources: [src-a]\n---\nBody.\n",
        dedent=False,
    )
    assert kb.run("fmt", str(path)).exit_code == 0
    head = path.read_text().split("\n---\n", 1)[0]
    keys = [line.split(":")[0] for line in head.splitlines()[1:]]
    # the known keys in the schema's order; vender still right after name, the key written before it
    assert keys == ["id", "type", "name", "vender", "status", "confidence", "updated", "sources"]
    assert kb.run("fmt", "--check", str(path)).exit_code == 0


# ---------------------------------------------------------------- kb serve says what it rendered


def test_serve_says_how_many_of_the_record_pages_a_rebuild_rendered(kb, tmp_path):
    from kbtools.site.serve import Site

    kb.source()
    for name in ("e1", "e2"):
        kb.record("engines", name, "engine", "kind: serving-engine\n", body=f"[[src-a]] [[{name}]]\n")
    said: list[str] = []
    site = Site(Settings(root=kb.root), tmp_path / "site", False, said.append)
    assert site.rebuild()
    assert said[-1] == "rendered 3 of 3 record pages (version 1)"  # a first build renders every page
    engine = kb.root / "records" / "engines" / "e1.md"
    engine.write_text(engine.read_text() + "More prose, which no other page shows.\n")
    assert site.rebuild()
    assert said[-1] == "rendered 1 of 3 record pages (version 2)"
    assert site.rebuild()
    assert said[-1] == "rendered 0 of 3 record pages (version 3)"


def test_a_watt_hour_is_a_known_unit_in_formulas_too():
    from kbtools.lang.units import parse_quantity_text

    assert parse_quantity_text("1 MWh", None).to("kWh").magnitude == pytest.approx(1000)
    assert parse_quantity_text("2 Wh", None).to("J").magnitude == pytest.approx(7200)
    assert parse_quantity_text("0.08 USD/kWh", None).to("USD/MWh").magnitude == pytest.approx(80)


# ---------------------------------------------------------------- one typo, one finding


def test_a_misspelt_required_key_is_one_finding_at_the_key_not_also_a_missing_field(kb):
    """`vender:` for the required `vendor`: KB201 at the misspelt key says the field it means is required and
    missing, and no KB202 at 1:1 says it again; a required field missing for no typo keeps its KB202. The text
    report, JSON and the stored answer of a second run say the same."""
    kb.source()
    path = kb.write(
        "records/accelerators/acme-x1.md",
        "---\nid: acme-x1\ntype: accelerator\nname: Acme X1\nvender: Acme\nconfidence: 0.5\nupdated: 2026-11-29\n"
        "sources: [src-a]\n---\nCites [[src-a]].\n",
        dedent=False,
    )
    at = line_of(path, "vender")
    said = "unknown field 'vender' for type 'accelerator' (did you mean 'vendor'? it is required, and missing)"
    hint = "fields are declared in schema/accelerator.schema.json"
    expected = [
        "records/accelerators/acme-x1.md:1:1: error KB202 missing required field 'status'",  # no typo: its own
        f"records/accelerators/acme-x1.md:{at}:1: error KB201 {said} (hint: {hint})",
    ]
    first = kb.check()
    assert [line for line in first.lines if " KB20" in line] == expected
    assert kb.check().out == first.out  # the second run's stored answer
    found = [d for d in kb.check_json()["diagnostics"] if d["code"] in ("KB201", "KB202")]
    assert [(d["code"], d["line"], d["column"], d["message"]) for d in found] == [
        ("KB202", 1, 1, "missing required field 'status'"),
        ("KB201", at, 1, said),
    ]


def test_a_misspelt_required_key_inside_an_object_is_one_finding_too(kb):
    """A hardware_parameters row's `efect:` for its required `effect`: one KB201 at the key, in the row."""
    kb.source()
    bandwidth_parameter(kb)
    row = "parameter: transfer-bandwidth\nefect: sets the time to read the KV\nbasis: recorded"  # efect: effect
    path = decode_row(kb, "f1", row, "[[transfer-bandwidth]]\n")
    found = [line for line in kb.check().lines if " KB20" in line]
    assert found == [
        f"records/flops/f1.md:{line_of(path, 'efect')}:5: error KB201 unknown field 'efect' in hardware_parameters.0 "
        "(did you mean 'effect'? it is required, and missing) (hint: fields are declared in schema/flop.schema.json)"
    ]


# ---------------------------------------------------------------- a ledger case that cannot read a figure


def ledger_cases(kb, accelerator: str) -> dict[str, Path]:
    """A workload on an accelerator that writes `accelerator`, and two ledger cases of it whose predictions
    read the accelerator's dense BF16 peak (the recompute of the prefix, and the TTFT that adds it)."""
    kb.source()
    kb.record(
        "models",
        "m",
        "model",
        """
        architecture: dense
        attention: gqa
        params_total: 8 Gparam
        params_active: 8 Gparam
        num_layers: 32
        hidden_size: 4096
        num_attention_heads: 32
        num_kv_heads: 8
        head_dim: 128
        kv_dtype_size: 2 B
        """,
    )
    gpu = kb.record("accelerators", "gpu", "accelerator", f"vendor: V\n{accelerator}")
    kb.record("storage-tiers", "t", "storage_tier", "medium: dram\npath: local\n")
    kb.record(
        "workloads", "w", "workload", "model: m\naccelerator: gpu\ngpus: 1\nprefix_tokens: 10000 token\ntiers: [t]\n"
    )
    cases = {
        figure: kb.record(
            "measurements",
            f"case-{figure.replace('_', '-')}",
            "measurement",
            f"metric: {figure}\nvalue: 500 ms\nmeasured_by: project\npublished: 2025-01-01\n"
            f"ledger:\n  workload: workloads/w\n  figure: {figure}\n",
        )
        for figure in ("recompute_time", "recompute_ttft")
    }
    return {"gpu": gpu, **cases}


def test_a_ledger_case_names_the_refused_figure_it_reads_and_is_listed_under_the_refusal(kb):
    """989 TFLOP is no rate: kb refuses the peak, and each case that reads it says which record and field it
    could not read, listed under the refusal as a row's KB511 is."""
    paths = ledger_cases(kb, "peak_bf16_dense: 989 TFLOP\n")
    first = kb.check()
    assert kb.check().out == first.out  # the second run's stored answer says the same
    lines = [line for line in first.out.splitlines() if " KB402 " in line or " KB621 " in line]
    at = f"records/accelerators/gpu.md:{line_of(paths['gpu'], 'peak_bf16_dense')}:{len('peak_bf16_dense: ') + 1}"
    assert lines[0].startswith(f"{at}: error KB402 peak_bf16_dense: ")
    assert lines[0].endswith(
        "(and 2 warnings that follow from it: uses of accelerators/gpu.peak_bf16_dense, which kb refused)"
    )
    assert lines[1:] == [
        f"  records/measurements/case-{figure.replace('_', '-')}.md:{line_of(paths[figure], 'ledger:')}:1: warning "
        f"KB621 kb cannot predict this run: workload.{figure}, of workloads/w, has no value: it reads "
        "accelerators/gpu.peak_bf16_dense, which kb refused"
        for figure in ("recompute_time", "recompute_ttft")
    ]
    found = kb.check_json()["diagnostics"]
    cause = next(d for d in found if d["code"] == "KB402")
    assert [d.get("caused_by") for d in found if d["code"] == "KB621"] == [
        {k: cause[k] for k in ("path", "line", "column", "code")}
    ] * 2


def test_a_ledger_case_names_the_field_a_record_leaves_out_and_stands_alone(kb):
    paths = ledger_cases(kb, "memory_bandwidth: 3 TB/s\n")  # no dense BF16 peak at all
    lines = [line for line in kb.check().out.splitlines() if " KB621 " in line]
    assert lines == [
        f"records/measurements/case-{figure.replace('_', '-')}.md:{line_of(paths[figure], 'ledger:')}:1: warning "
        f"KB621 kb cannot predict this run: workload.{figure}, of workloads/w, has no value: it reads "
        "accelerators/gpu.peak_bf16_dense, which it leaves out (kb plan names it under that workload's figures)"
        for figure in ("recompute_time", "recompute_ttft")
    ]


# ---------------------------------------------------------------- the site says it too


def test_a_page_says_its_finding_follows_from_a_refused_figure_though_every_file_parses(kb, tmp_path):
    """The record pages of the rows that read gpu-bad's refused bandwidth say their KB511 follows from that
    refusal, with no other file failing to parse; gpu-none's KB511 follows from nothing."""
    refused_bandwidth(kb)
    built = kb.run("build", "--force", "--no-search", "--out", str(tmp_path / "site"))
    assert built.exit_code == 0, built.err
    for row in ("f1", "f2"):
        page = (tmp_path / "site" / "flops" / f"{row}.html").read_text()
        assert page.count("follows from") == 1
        assert "follows from accelerators/gpu-bad, whose memory_bandwidth kb refused" in page
        assert "records/accelerators/gpu-bad.md:" in page.split("follows from", 1)[1]
