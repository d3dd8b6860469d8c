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
