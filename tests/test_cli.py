"""The command line as a user runs it: formats, exit codes, named paths, documentation."""

import json
import subprocess
import sys

import pytest
from conftest import KB_SCRIPT, REPO

from kbtools.diagnostics import CODES, render_reference


def broken(kb):
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="See [[nowhere]].\n")
    kb.record("engines", "g", "engine", "kind: serving-engine\n", body="See [[engines/e]] and [[engines/g]].\n")


def test_json_output_is_valid_and_complete(kb):
    broken(kb)
    result = kb.check("--format", "json")
    payload = json.loads(result.out)
    assert result.exit_code == 1
    assert payload["summary"] == {"records": 3, "errors": 1, "warnings": 1}
    first = [d for d in payload["diagnostics"] if d["code"] == "KB302"][0]
    assert first == {
        "code": "KB302",
        "severity": "error",
        "path": "records/engines/e.md",
        "line": 11,
        "column": 5,
        "message": "dangling link [[nowhere]]: no record 'nowhere'",
        "hint": None,
    }


def test_github_annotations(kb):
    broken(kb)
    out = kb.check("--format", "github").out
    assert (
        "::error file=records/engines/e.md,line=11,col=5,title=KB302::dangling link [[nowhere]]: no record 'nowhere'"
        in out
    )


def test_sarif_is_sarif_2_1_0(kb):
    broken(kb)
    log = json.loads(kb.check("--format", "sarif").out)
    assert log["version"] == "2.1.0"
    result = [r for r in log["runs"][0]["results"] if r["ruleId"] == "KB302"][0]
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 11, "startColumn": 5}
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert rules[result["ruleIndex"]]["id"] == "KB302"


def test_named_paths_report_only_those_files(kb):
    broken(kb)
    kb.record("engines", "h", "engine", "kind: serving-engine\nlicense: 3\n", body="[[engines/g]] [[engines/h]]\n")
    result = kb.check(str(kb.root / "records/engines/g.md"))
    # h's schema error is not reported when only g is named...
    assert not result.find("KB200")
    # ...but link breakage anywhere is, since deleting or renaming a file breaks others.
    assert result.find("KB302") and result.exit_code == 1


def test_deleting_a_record_reports_the_links_it_breaks(kb):
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[engines/g]]\n")
    kb.record("engines", "g", "engine", "kind: serving-engine\n", body="[[engines/e]]\n")
    assert kb.check().exit_code == 0
    (kb.root / "records/engines/g.md").unlink()
    result = kb.check(str(kb.root / "records/engines/e.md"))
    assert result.exit_code == 1
    assert result.find("KB302") == [
        "records/engines/e.md:11:1: error KB302 dangling link [[engines/g]]: no record 'engines/g' (did you mean engines/e?)"
    ]


def test_strict_fails_on_warnings(kb):
    kb.source()
    assert kb.check().exit_code == 0
    assert kb.check("--strict").exit_code == 1


def test_usage_error_exits_2(kb):
    kb.source()
    assert (
        subprocess.run(
            [sys.executable, "-m", "kbtools.cli", "--root", str(kb.root), "check", "--format", "xml"],
            capture_output=True,
        ).returncode
        == 2
    )
    assert (
        subprocess.run(
            [sys.executable, "-m", "kbtools.cli", "--root", str(kb.root / "nope"), "check"], capture_output=True
        ).returncode
        == 2
    )


def test_console_script_prints_no_traceback_on_bad_input(kb):
    kb.write("records/models/x.md", b'---\nid: x\nname: "a\n---\n\xff\xfe')
    kb.write("records/models/y.md", b"---\n- 1\n---\n")
    proc = subprocess.run([KB_SCRIPT, "--root", str(kb.root), "check"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "records/models/y.md:2:1: error KB106" in proc.stdout


def test_every_code_is_documented():
    page = (REPO / "docs" / "diagnostics.md").read_text()
    assert page == render_reference(str(REPO / "schema")), (
        "docs/diagnostics.md is stale: python -m kbtools.diagnostics > docs/diagnostics.md"
    )
    for code in CODES:
        assert f"| {code} |" in page


def test_internal_error_is_one_line_and_exit_2(kb, monkeypatch):
    import kbtools.check.pipeline

    kb.source()

    def broken(*args, **kwargs):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(kbtools.check.pipeline, "start_run", broken)
    result = kb.check()
    assert result.exit_code == 2
    assert result.err.strip() == "kb:1:1: error KB900 internal error: RuntimeError: simulated bug"


def test_a_crash_in_one_record_is_reported_there_and_the_rest_is_checked(kb, monkeypatch):
    import kbtools.check.load

    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[nowhere]]\n")
    kb.record("engines", "f", "engine", "kind: serving-engine\n", body="[[src-a]]\n")
    real = kbtools.check.load.load_record_bytes

    def flaky(raw, rel, *args):
        if rel.endswith("/f.md"):
            raise ValueError("simulated bug")
        return real(raw, rel, *args)

    monkeypatch.setattr(kbtools.check.load, "load_record_bytes", flaky)
    result = kb.check("--no-cache")
    assert result.exit_code == 1
    assert (
        "records/engines/f.md:1:1: error KB900 internal error while checking this file: ValueError: simulated bug "
        "(hint: please report it with this file; the other files were checked)" in result.lines
    )
    assert any(" KB302 " in l and "engines/e.md" in l for l in result.lines)


def test_github_workflow_is_valid():
    """Checked against check-jsonschema's bundled GitHub workflow schema (no network)."""
    proc = subprocess.run(
        [
            str(__import__("pathlib").Path(sys.executable).parent / "check-jsonschema"),
            "--builtin-schema",
            "vendor.github-workflows",
            str(REPO / ".github" / "workflows" / "kb.yml"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _on_a_terminal(args, env):
    """What kb writes to stderr when stderr is a terminal (a pseudo-terminal here), ANSI escapes removed."""
    import os
    import pty
    import re

    leader, follower = pty.openpty()
    proc = subprocess.Popen([KB_SCRIPT, *args], stdout=subprocess.DEVNULL, stderr=follower, env=env)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.wait() == 0, seen[-2000:]
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode(errors="replace"))


@pytest.mark.slow
def test_progress_bar_on_a_terminal_only(tmp_path):
    """Over a second of work on a TTY shows a bar (on stderr) that ends at all of its items, and the search
    index has one too; piped or --quiet shows none."""
    import os
    import re

    sys.path.insert(0, str(REPO / "benchmarks"))
    from generate import generate

    root = tmp_path / "kb"
    generate(root, 150, seed=2)
    env = dict(os.environ, KB_PROGRESS_DELAY="0")  # show bars at once, so a small corpus will do
    seen = _on_a_terminal(["--root", str(root), "build", "--out", str(tmp_path / "site")], env)
    for task in ("Reading records", "Validating", "Writing pages"):
        counts = re.findall(rf"{task}\S*[^\n\r]*?(\d+)/(\d+)", seen)
        assert counts, (task, seen[-2000:])
        done, total = counts[-1]
        assert done == total and int(total) > 100, (task, counts[-3:])  # the last frame: every item done
    assert "Indexing pages for search" in seen, seen[-2000:]
    piped = subprocess.run(
        [KB_SCRIPT, "--root", str(root), "check", "--no-cache"], capture_output=True, text=True, env=env
    )
    assert piped.stderr == ""
