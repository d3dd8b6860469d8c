"""The command line as a user runs it: formats, exit codes, named paths, documentation."""

import json
import subprocess
import sys

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
        "records/engines/e.md:11:1: error KB302 dangling link [[engines/g]]: no record 'engines/g'"
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

    monkeypatch.setattr(kbtools.check.pipeline, "check_corpus", broken)
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


def test_progress_bar_on_a_terminal_only(tmp_path):
    """Over a second of work on a TTY shows a bar (on stderr); piped or --quiet shows none."""
    import os
    import pty

    sys.path.insert(0, str(REPO / "benchmarks"))
    from generate import generate

    root = tmp_path / "kb"
    generate(root, 400, seed=2)
    leader, follower = pty.openpty()
    env = dict(os.environ, KB_PROGRESS_DELAY="0")  # show bars at once, so a small corpus will do
    proc = subprocess.Popen(
        [KB_SCRIPT, "--root", str(root), "check", "--no-cache"], stdout=subprocess.DEVNULL, stderr=follower, env=env
    )
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
    proc.wait()
    assert b"Validating" in seen or b"Reading records" in seen or b"Recomputing" in seen, seen[-500:]
    piped = subprocess.run(
        [KB_SCRIPT, "--root", str(root), "check", "--no-cache"], capture_output=True, text=True, env=env
    )
    assert piped.stderr == ""
