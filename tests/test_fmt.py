"""kb fmt: canonical order and style, comments/unknown keys/body kept, idempotent, atomic."""

import os
import signal
import subprocess
import sys

import pytest
from conftest import KB_SCRIPT, REPO

MESSY = """---
# a comment above everything
sources:
  - src-a
kind: "serving-engine"     # what it is
name: Messy engine
id: messy
custom_key: kept as it is  # not in the schema
type: engine
status: draft
updated: 2026-11-29
confidence: 0.5
languages:
- Python
- "C++"
---
Body   with  odd spacing,\ttabs and a trailing space 
and no final newline"""


def test_fmt_orders_keeps_comments_unknown_keys_and_body(kb):
    kb.source()
    path = kb.write("records/engines/messy.md", MESSY, dedent=False)
    result = kb.run("fmt")
    assert result.exit_code == 0, result.err
    text = path.read_text()
    head, body = text.split("\n---\n", 1)
    assert body == MESSY.split("\n---\n", 1)[1]  # byte for byte
    keys = [line.split(":")[0] for line in head.splitlines()[1:] if line and not line.startswith((" ", "#", "-"))]
    assert keys == [
        "id",
        "custom_key",  # a key the schema does not know stays after the key written before it
        "type",
        "name",
        "status",
        "confidence",
        "updated",
        "sources",
        "kind",
        "languages",
    ]
    assert "# a comment above everything" in head and "# what it is" in head and "# not in the schema" in head
    assert "sources: [src-a]" in head and "languages: [Python, C++]" in head
    assert kb.run("fmt", "--check").exit_code == 0
    before = path.read_bytes()
    kb.run("fmt")
    assert path.read_bytes() == before  # idempotent


def test_fmt_check_reports_and_changes_nothing(kb):
    kb.source()
    path = kb.write("records/engines/messy.md", MESSY, dedent=False)
    result = kb.run("fmt", "--check")
    assert result.exit_code == 1 and "records/engines/messy.md: would reformat" in result.out
    assert path.read_text() == MESSY


def test_fmt_leaves_unloadable_files_alone(kb):
    kb.source()
    path = kb.write("records/engines/bad.md", "---\nid: bad\nname: a\nname: b\n---\n", dedent=False)
    result = kb.run("fmt")
    assert result.exit_code == 1 and "KB105" in result.err
    assert path.read_text() == "---\nid: bad\nname: a\nname: b\n---\n"


@pytest.mark.slow
def test_repository_is_formatted():
    proc = subprocess.run([KB_SCRIPT, "fmt", "--check"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.slow
def test_killing_fmt_mid_run_leaves_every_file_whole(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    from generate import generate

    from kbtools.check.load import parse_record_bytes

    root = tmp_path / "kb"
    generate(root, 300, seed=5)
    originals = {p: p.read_bytes() for p in (root / "records").rglob("*.md")}
    proc = subprocess.Popen(
        [KB_SCRIPT, "--root", str(root), "fmt"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},  # each file's line as it is written
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # kb fmt says so once it has rewritten a file: killed then, mid-run
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert "reformatted" in first, first
    changed = sum(path.read_bytes() != original for path, original in originals.items())
    assert 0 < changed < len(originals), f"{changed} of {len(originals)} changed: not killed mid-run"
    for path, original in originals.items():
        now = path.read_bytes()
        if now != original:
            assert parse_record_bytes(now)[0] == parse_record_bytes(original)[0], path  # whole, same data
    # a kill can leave a staged temporary file; it is never taken for a record, and the next run clears it
    check = subprocess.run([KB_SCRIPT, "--root", str(root), "check", "--no-cache"], capture_output=True, text=True)
    assert f"checked {len(originals)} records" in check.stdout
    assert subprocess.run([KB_SCRIPT, "--root", str(root), "fmt"], capture_output=True).returncode == 0
    assert not [p for p in (root / "records").rglob(".*")], "temporary files left behind"


def test_a_killed_runs_temporary_is_removed_and_a_users_hidden_files_are_kept(kb):
    """kb fmt and kb mv clear what a killed kb left beside a record, and only that: a user's hidden files
    that merely look like it ('.notes.md.original' has a dot and eight characters after '.md') stay."""
    import tempfile

    from kbtools.atomic import TEMP_MARK

    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n")
    engines = kb.root / "records" / "engines"
    mine = {".notes.md.original": "my notes\n", ".e.md.backup_1": "a backup\n", f".e.md{TEMP_MARK}mine": "mine\n"}
    for name, text in mine.items():
        (engines / name).write_text(text)
    for command in (("fmt",), ("mv", "engines/e", "e2")):
        handle, left = tempfile.mkstemp(prefix=f".e.md{TEMP_MARK}", dir=engines)  # as a killed kb leaves one
        os.close(handle)
        result = kb.run(*command)
        assert result.exit_code == 0, result.err
        assert not os.path.exists(left), command
        assert {name: (engines / name).read_text() for name in mine} == mine, command
