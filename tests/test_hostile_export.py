"""`kb export` replaces a file only when kb's own mark says kb wrote it (issue 30, item 3): a user's
SQLite database or JSON is never overwritten, however it begins; one file named for two outputs is
refused before anything is written; a killed export leaves no journal, and its kb-marked temporaries
are removed by the next export."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from kbtools.outputs.export import KB_APPLICATION_ID


def listing(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def refused(result) -> bool:
    """A refusal as a user should see one: exit 2, a message, no internal error and no traceback."""
    shown = result.err + result.out
    return result.exit_code == 2 and "kb export: " in result.err and "KB900" not in shown and "Traceback" not in shown


def users_database(path: Path) -> bytes:
    """An accounts.sqlite as any program makes one: sqlite3, a table of the user's, rows."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT, password_hash TEXT)")
    db.executemany("INSERT INTO users (email, password_hash) VALUES (?, ?)", [("a@example.org", "x" * 60)] * 3)
    db.commit()
    db.close()
    return path.read_bytes()


def test_a_users_sqlite_database_is_refused_and_left_byte_identical(kb, tmp_path):
    kb.source()
    out = tmp_path / "out"
    out.mkdir()
    before = users_database(out / "accounts.sqlite")
    result = kb.run("export", "--sqlite", str(out / "accounts.sqlite"))
    assert refused(result), result.err
    assert "accounts.sqlite exists and is not an earlier kb sqlite export" in result.err
    assert "delete it by hand" in result.err
    assert listing(out) == {"accounts.sqlite": before}  # not even its metadata file was written


def test_a_users_json_that_begins_like_an_export_is_refused_and_kept(kb, tmp_path):
    kb.source()
    out = tmp_path / "out"
    out.mkdir()
    # the first bytes the previous kb took for its own export, and a metadata file written like Datasette's
    mine = out / "mine.json"
    mine.write_text('{\n "records": [\n  {"key": "my/notes"}\n ]\n}\n')
    result = kb.run("export", "--json", str(mine))
    assert refused(result) and "mine.json exists and is not an earlier kb json export" in result.err
    assert kb.run("export", "--sqlite", str(out / "kb.sqlite")).exit_code == 0
    (out / "kb.metadata.json").write_text('{\n "source": "kb export",\n "title": "my own metadata"\n}\n')
    before = listing(out)
    result = kb.run("export", "--sqlite", str(out / "kb.sqlite"))
    assert refused(result) and "kb.metadata.json exists and is not an earlier kb metadata export" in result.err
    assert listing(out) == before  # neither the user's files nor the SQLite export beside them was replaced


def test_kbs_own_earlier_export_is_replaced_and_carries_kbs_mark(kb, tmp_path):
    kb.source()
    out = tmp_path / "out"
    out.mkdir()  # kb export makes no directory (tests/test_hostile_outputs.py)
    db, data = out / "kb.sqlite", out / "kb.json"
    assert kb.run("export", "--sqlite", str(db), "--json", str(data)).exit_code == 0
    kb.source("src-b")
    result = kb.run("export", "--sqlite", str(db), "--json", str(data))
    assert result.exit_code == 0, result.err
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA application_id").fetchone() == (KB_APPLICATION_ID,)
        assert connection.execute("SELECT count(*) FROM source").fetchone() == (2,)
    connection.close()
    exported = json.loads(data.read_text())
    assert exported["generator"].startswith("kb export ") and len(exported["records"]) == 2
    assert json.loads((out / "kb.metadata.json").read_text())["generator"] == exported["generator"]
    assert sorted(p.name for p in out.iterdir()) == ["kb.json", "kb.metadata.json", "kb.sqlite"]


def test_an_export_by_the_kb_before_the_mark_is_refused_with_what_to_do(kb, tmp_path):
    kb.source()
    old = tmp_path / "kb.sqlite"
    users_database(old)  # what the previous kb wrote carries no application id either
    result = kb.run("export", "--sqlite", str(old))
    assert refused(result), result.err
    assert "delete it by hand or choose another path" in result.err


@pytest.mark.parametrize(
    "sqlite, json_",
    [
        ("out/x", "out/x"),
        ("./out/x", "out/x"),
        ("out/x", "link/x"),  # the same file through a symlinked directory
        ("out/kb.sqlite", "out/kb.metadata.json"),  # where the SQLite export's metadata goes
    ],
)
def test_one_file_named_for_two_outputs_is_refused_before_anything_is_written(kb, tmp_path, monkeypatch, sqlite, json_):
    kb.source()
    (tmp_path / "out").mkdir()
    (tmp_path / "link").symlink_to("out")
    monkeypatch.chdir(tmp_path)
    result = kb.run("export", "--sqlite", sqlite, "--json", json_)
    assert refused(result) and "name the same file" in result.err, result.err
    assert list((tmp_path / "out").iterdir()) == []


KILL_MID_TRANSACTION = """
import os, signal, sqlite3, sys
connect = sqlite3.connect
def killed_on_the_costs(*args, **kwargs):
    db = connect(*args, **kwargs)
    db.set_trace_callback(lambda sql: sql.startswith("CREATE TABLE costs") and os.kill(os.getpid(), signal.SIGKILL))
    return db
sqlite3.connect = killed_on_the_costs
from kbtools.cli import main
main(sys.argv[1:])
"""

KILL_AT_THE_RENAME = """
import os, signal, sys
replace = os.replace
def killed_at_the_export(source, target, **kwargs):
    if os.path.basename(target) == "kb.sqlite":
        os.kill(os.getpid(), signal.SIGKILL)
    return replace(source, target, **kwargs)
os.replace = killed_at_the_export
from kbtools.cli import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("kill", [KILL_MID_TRANSACTION, KILL_AT_THE_RENAME], ids=["mid-transaction", "at-rename"])
def test_a_killed_export_leaves_no_journal_and_the_next_export_removes_its_debris(kb, tmp_path, kill):
    kb.source()
    kb.record("engines", "e1", "engine", "kind: serving-engine\n")
    out = tmp_path / "out"
    out.mkdir()
    # named like kb's temporary, but the user's: only a file carrying kb's mark is ever removed
    lookalike = out / ".kb.sqlite.kb-export-0000beef"
    lookalike.write_text("my notes\n")
    args = ["--root", str(kb.root), "export", "--sqlite", str(out / "kb.sqlite"), "--json", str(out / "kb.json")]
    killed = subprocess.run([sys.executable, "-c", kill, *args], capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = sorted(p.name for p in out.iterdir())
    assert not [name for name in left if name.endswith("-journal")], left
    debris = [name for name in left if name != lookalike.name]
    assert debris and all(name.startswith(".kb.sqlite.kb-export-") for name in debris), left
    result = kb.run("export", "--sqlite", str(out / "kb.sqlite"), "--json", str(out / "kb.json"))
    assert result.exit_code == 0, result.err
    assert sorted(p.name for p in out.iterdir()) == [lookalike.name, "kb.json", "kb.metadata.json", "kb.sqlite"]
    assert lookalike.read_text() == "my notes\n"
