"""The repository's own records pass, and its set-up stays what README says."""

import json
import re
import subprocess

from conftest import KB_SCRIPT, REPO


def test_repository_records_check_clean():
    proc = subprocess.run([KB_SCRIPT, "check", "--format", "json"], cwd=REPO, capture_output=True, text=True)
    payload = json.loads(proc.stdout)
    errors = [d for d in payload["diagnostics"] if d["severity"] == "error"]
    assert proc.returncode == 0, errors
    assert payload["summary"]["records"] >= 30


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    commands = re.findall(r"```(?:sh|bash)\n(.*?)\n```", readme, flags=re.S)
    test_command = [c for c in commands if "pytest" in c][0].strip()
    assert test_command in (REPO / ".ci" / "run").read_text()


def test_the_seed_prices_every_tier_that_has_a_sourced_bandwidth(tmp_path):
    """Issue 13: every KV tier in the corpus is on the seed's page, with a row when its bandwidth is known."""
    out = tmp_path / "kb.json"
    export = subprocess.run([KB_SCRIPT, "export", "--json", str(out)], cwd=REPO, capture_output=True, text=True)
    assert export.returncode == 0, export.stderr
    records = {r["key"]: r for r in json.loads(out.read_text())["records"]}
    seed = records["flops/eng-profile-kv-tiering-moves-flops-to-bytes"]
    rows = set(seed["values"]["hit_path_time"]["rows"])
    for key, record in records.items():
        if (
            record["type"] != "storage_tier"
            or record["data"].get("medium") == "hbm"
            and "accelerator" in record["data"]
        ):
            continue  # an accelerator's own HBM is the seed's per-accelerator HBM row, not a tier row
        if "bandwidth" in record["values"]:
            assert key in rows, f"{key} has a bandwidth but no row in the seed's hit_path_time"
        else:
            assert f"[[{key}]]" in seed["body"], f"{key} has no bandwidth and the seed does not name it"


def _browser_tests() -> set[str]:
    """Every test (file::name) that drives Chromium: it calls site_support's browser() or takes the web fixture."""
    import ast

    found = set()
    for path in sorted((REPO / "tests").glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
                continue
            calls = {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
            if "browser" in calls or "web" in {a.arg for a in node.args.args}:
                found.add(f"tests/{path.name}::{node.name}")
    return found


def test_the_quick_subset_readme_gives_leaves_out_the_browser_tests():
    """README's day-to-day command runs the tests not marked slow; every test that drives a browser is marked
    browser, which makes it slow, so the quick subset never starts Chromium (CI runs everything)."""
    import sys

    readme = (REPO / "README.md").read_text()
    assert "pytest -q -n auto --dist loadfile -m 'not slow'" in readme
    browser_tests = _browser_tests()
    assert len(browser_tests) >= 10
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "not slow"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert listed.returncode == 0, listed.stdout[-2000:]
    quick = {line.split("[")[0] for line in listed.stdout.splitlines() if "::" in line}
    assert len(quick) > 100 and not quick & browser_tests, sorted(quick & browser_tests)
    every = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "browser"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    marked = {line.split("[")[0] for line in every.stdout.splitlines() if "::" in line}
    assert marked == browser_tests, sorted(marked ^ browser_tests)
