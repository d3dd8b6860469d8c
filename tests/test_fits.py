"""Fits (issue 44): a parameter of the planner's model fitted over published runs, never per case. The record
that links a fit (an engine, an accelerator, a storage tier) applies it to every workload that reaches it; the
fit's residuals are its cases' ledger errors, computed; and its value is the optimum its own method describes,
refitted here from what kb predicts with no fit linked."""

from __future__ import annotations

import json
import math
import re
import shutil

import pytest
from conftest import REPO, run_kb
from plan_support import exported_records

ENGINE, ACCELERATORS, TIER = (
    "engines/vllm",
    ("nvidia-h100-sxm", "nvidia-h200-sxm", "nvidia-h800-sxm"),
    "remote-dram-rdma-400g",
)
OVERHEAD, PREFILL, READ = (
    "fits/vllm-request-overhead",
    "fits/hopper-sxm-attainable-prefill",
    "fits/nixl-p2p-rdma-attainable-read",
)


def _ledger(root) -> dict[str, dict]:
    done = run_kb("--root", str(root), "plan", "--ledger", "--format", "json")
    assert done.returncode == 0, done.stderr
    return {c["case"]: c for c in json.loads(done.stdout)["cases"]}


def _engine(record: dict) -> str | None:
    """The workload's engine: its field, else the preferred (first) choice of its engine input."""
    chosen = (record["data"].get("inputs") or {}).get("engine")
    return record["data"].get("engine") or (chosen["choose"][0] if isinstance(chosen, dict) else None)


def _fraction(value: dict) -> float:
    return value["value"] * {"1": 1.0, "percent": 0.01, "ms": 1.0}[value["unit"]]


@pytest.fixture(scope="module")
def here(records) -> tuple[dict, dict]:
    return records, _ledger(REPO)


@pytest.fixture(scope="module")
def unfitted(tmp_path_factory) -> tuple[dict, dict, str, int]:
    """The repository with every fit unlinked: what kb predicts at the engines' zero fixed time, the dense peak
    and the tiers' nominal path rates. Then, in the same copy (a warm store: one file checked again), the read
    fit cut to one case: what kb check says of it, and the line of its cases."""
    into = tmp_path_factory.mktemp("unfitted")
    root = into / "kb"
    for part in ("records", "schema"):
        shutil.copytree(REPO / part, root / part)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    links = [(f"engines/{ENGINE.split('/')[1]}", "request_overhead_fit")]
    links += [(f"accelerators/{a}", "prefill_fit") for a in ACCELERATORS]
    links += [(f"storage-tiers/{TIER}", "read_fit")]
    for key, field in links:
        path = root / "records" / f"{key}.md"
        text, removed = re.subn(rf"^{field}: .*\n", "", path.read_text(), flags=re.M)
        assert removed == 1, (key, field)
        path.write_text(text)
    exported, ledger = exported_records(into, root), _ledger(root)
    path = root / "records" / f"{READ}.md"
    text = path.read_text()
    found = re.search(r"^cases: \[([^,\]]+),[^\]]*\]$", text, flags=re.M)
    assert found, "the fit lists its cases on one line, as kb fmt writes them"
    path.write_text(text[: found.start()] + f"cases: [{found[1]}]" + text[found.end() :])
    done = run_kb("--root", str(root), "check")
    assert done.returncode == 1, done.stdout
    return exported, ledger, done.stdout, text[: found.start()].count("\n") + 1


def test_a_fits_residuals_are_its_cases_ledger_errors(here):
    records, ledger = here
    fits = [k for k in records if k.startswith("fits/")]
    assert {OVERHEAD, PREFILL, READ} <= set(fits)
    for key in fits:
        cases = records[key]["data"]["cases"]
        rows = records[key]["values"]["residual"]["rows"]
        assert len(cases) >= 2 and set(rows) == set(cases), key
        for case in cases:
            assert rows[case]["value"] == pytest.approx(ledger[case]["error"], rel=1e-9), (key, case)


def test_a_linked_fit_applies_to_every_workload_that_reaches_it(here, unfitted):
    """Every workload on vLLM pays the fixed time on each TTFT, hit or miss; every workload on a Hopper SXM part
    recomputes at the fitted share of its peak; every hit from the RDMA pool reads at the fitted share of its
    path. Without the links, the figures are the nominal ones."""
    (records, _), (bare, *_) = here, unfitted
    overhead = _fraction(records[OVERHEAD]["values"]["value"])
    share = _fraction(records[PREFILL]["values"]["value"])
    read = _fraction(records[READ]["values"]["value"])
    seen = {"overhead": 0, "share": 0, "read": 0}
    for key, record in records.items():
        if record["type"] != "workload" or "recompute_time" not in record["values"]:
            continue
        fitted, nominal = record["values"], bare[key]["values"]
        on_vllm = _engine(record) in ("vllm", ENGINE)
        assert fitted["request_overhead"]["value"] == pytest.approx(overhead if on_vllm else 0.0), key
        seen["overhead"] += on_vllm
        hopper = record["data"]["accelerator"] in ACCELERATORS and "prefill_efficiency" not in record["data"]
        expected = nominal["recompute_time"]["value"] / (share if hopper else 1.0)
        assert fitted["recompute_time"]["value"] == pytest.approx(expected, rel=1e-9), key
        seen["share"] += hopper
        rows = fitted.get("reader_rate", {}).get("rows", {})
        pool = f"storage-tiers/{TIER}"
        if pool in rows:
            assert rows[pool]["value"] == pytest.approx(nominal["reader_rate"]["rows"][pool]["value"] * read), key
            seen["read"] += 1
    assert all(seen.values()), seen


def _refit(cases: list[tuple[float, float, bool]], offsets, shares) -> tuple[float, float]:
    """The grid point minimising the squared log of predicted over measured, for cases of (the prediction with
    no fit, the measured figure, whether the fixed time applies), as the fits' method says."""

    def loss(offset, share):
        return sum(
            math.log(((offset if paid else 0.0) + bare / share) / measured) ** 2 for bare, measured, paid in cases
        )

    return min(((o, s) for o in offsets for s in shares), key=lambda point: loss(*point))


def test_each_fit_is_the_optimum_its_method_states(here, unfitted):
    """Refit from the ledger with no fit linked: the fixed time and the share of peak jointly over the prefill fit's
    cases (the fixed time paid by vLLM's alone), then the read share over its cases with those held; the records
    state the grid's optimum."""
    records, _ = here
    _, bare, *_ = unfitted
    measured_ms = {k: c["measured_value"] * (1000.0 if c["unit"] == "s" else 1.0) for k, c in bare.items()}
    bare_ms = {k: c["predicted_value"] * (1000.0 if c["unit"] == "s" else 1.0) for k, c in bare.items()}
    vllm_cases = set(records[OVERHEAD]["data"]["cases"])
    prefill = [(bare_ms[k], measured_ms[k], k in vllm_cases) for k in records[PREFILL]["data"]["cases"]]
    assert vllm_cases <= set(records[PREFILL]["data"]["cases"])
    offset, share = _refit(prefill, [x * 0.5 for x in range(0, 120)], [x / 1000 for x in range(200, 900, 2)])
    assert _fraction(records[OVERHEAD]["values"]["value"]) == pytest.approx(offset)
    assert _fraction(records[PREFILL]["values"]["value"]) == pytest.approx(share)
    pulls = [(bare_ms[k], measured_ms[k], True) for k in records[READ]["data"]["cases"]]
    _, read = _refit(pulls, [offset], [x / 1000 for x in range(20, 600)])
    assert _fraction(records[READ]["values"]["value"]) == pytest.approx(read)


def test_a_fit_over_one_case_is_refused_at_its_line(unfitted):
    """A constant fitted to one case is that case's answer, not a parameter: the schema wants two cases."""
    *_, said, line = unfitted
    assert f"records/{READ}.md:{line}:1: error KB200 cases: " in said, said
