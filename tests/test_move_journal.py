"""`kb mv` all or nothing against kills, edits saved meanwhile and planted journals (issue 30, items 1-2).

The journal lives in the user's cache directory; a file the repository carries is never replayed, and one
in kb's own place is acted on only where every path and digest is what kb recorded."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import KB_SCRIPT, REPO, SOURCE_RECORD

HEAD = "---\nid: {id}\ntype: engine\nname: {id}\nstatus: draft\nconfidence: 0.5\nupdated: 2026-11-29\nsources: [src-a]\nkind: serving-engine\n---\n"


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}


def make_kb(root: Path) -> Path:
    """A source, the engine to move (eng-a) and three records naming it in their bodies."""
    shutil.copytree(REPO / "schema", root / "schema")
    (root / "records" / "sources").mkdir(parents=True)
    (root / "records" / "engines").mkdir()
    (root / "records" / "sources" / "src-a.md").write_text(SOURCE_RECORD)
    (root / "records" / "engines" / "eng-a.md").write_text(HEAD.format(id="eng-a") + "Cites [[src-a]].\n")
    for other in ("eng-b", "eng-c", "eng-d"):
        (root / "records" / "engines" / f"{other}.md").write_text(
            HEAD.format(id=other) + "Like [[eng-a]] and [[engines/eng-a|that one]]; [[src-a]].\n"
        )
    return root


def kb(root: Path, env: dict[str, str], *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [KB_SCRIPT, "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, **extra},
    )


def kb_here(root: Path, env: dict[str, str], monkeypatch, capsys, *args: str) -> subprocess.CompletedProcess:
    """The next command after a killed kb mv, in this process: what is tested is how it treats the journal,
    not how it starts."""
    from kbtools.cli import main

    monkeypatch.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])
    capsys.readouterr()
    code = main(["--root", str(root), *args])
    printed = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, printed.out, printed.err)


def tree(root: Path) -> dict[str, str]:
    """Every file under records/, hidden temporaries included -> its digest."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((root / "records").rglob("*"))
        if p.is_file() or p.is_symlink()
    }


@pytest.fixture
def corpora(tmp_path, env):
    """(the corpus before the move, the corpus after it): trees to compare with."""
    before = make_kb(tmp_path / "before")
    after = make_kb(tmp_path / "after")
    moved = kb(after, env, "mv", "engines/eng-a", "eng-z")
    assert moved.returncode == 0, moved.stderr
    return tree(before), tree(after)


@pytest.mark.slow
def test_a_kill_at_every_step_leaves_the_old_corpus_or_the_new_after_the_next_command(
    tmp_path, env, corpora, monkeypatch, capsys
):
    old, new = corpora
    seen = set()
    for step in range(1, 100):
        root = make_kb(tmp_path / f"k{step}")
        killed = kb(root, env, "mv", "engines/eng-a", "eng-z", KB_TEST_KILL_AT_STEP=str(step))
        if killed.returncode == 0:
            break
        assert killed.returncode == 137, killed.stderr
        check = kb_here(root, env, monkeypatch, capsys, "check")
        assert "Traceback" not in check.stderr
        assert check.returncode == 0, (step, check.stdout, check.stderr)
        after = tree(root)
        assert after in (old, new), (step, sorted(set(after) ^ set(old)))
        seen.add("old" if after == old else "new")
    else:
        pytest.fail("kb mv never finished")
    assert step > 8  # every temporary, the commit point, every rename, the removal: each was a kill point
    assert seen == {"old", "new"}


@pytest.mark.slow
def test_an_edit_saved_at_any_step_is_kept(tmp_path, env, monkeypatch, capsys):
    """Killed at each step, then a record kb rewrites is saved by an editor: the next command finishes or
    undoes the move around it, and the edit is in the file either way."""
    for step in range(1, 100):
        root = make_kb(tmp_path / f"e{step}")
        killed = kb(root, env, "mv", "engines/eng-a", "eng-z", KB_TEST_KILL_AT_STEP=str(step))
        if killed.returncode == 0:
            break
        edited = root / "records" / "engines" / "eng-b.md"
        edited.write_text(edited.read_text() + "A line the user saved.\n")
        check = kb_here(root, env, monkeypatch, capsys, "check")
        assert "Traceback" not in check.stderr
        assert "A line the user saved." in edited.read_text(), step
        assert check.returncode == 0, (step, check.stdout, check.stderr)
        assert not [p for p in (root / "records").rglob(".*")], step  # no temporary left behind
        moved = (root / "records" / "engines" / "eng-z.md").exists()
        assert moved != (root / "records" / "engines" / "eng-a.md").exists(), step
        assert ("eng-z" in edited.read_text()) == moved, step


def test_an_edit_saved_while_kb_mv_stages_is_never_lost(tmp_path, env, monkeypatch, capsys):
    """The save lands inside kb mv, between its staging and its commit point, at each step in turn."""
    from kbtools.authoring import journal
    from kbtools.cli import main

    monkeypatch.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])
    for at in range(1, 6):
        root = make_kb(tmp_path / f"s{at}")
        edited = root / "records" / "engines" / "eng-c.md"
        count = {"n": 0}

        def save(edited=edited, count=count, at=at):
            count["n"] += 1
            if count["n"] == at:
                edited.write_text(edited.read_text() + "Saved meanwhile.\n")

        monkeypatch.setattr(journal, "_step", save)
        code = main(["--root", str(root), "mv", "engines/eng-a", "eng-z"])
        err = capsys.readouterr().err
        assert "Saved meanwhile." in edited.read_text(), at
        assert code == 2 and "changed while kb worked on it" in err, (at, err)
        assert (root / "records" / "engines" / "eng-a.md").exists() and not (root / "records/engines/eng-z.md").exists()
        assert not [p for p in (root / "records").rglob(".*")]


def test_after_a_working_tree_reset_a_killed_moves_journal_is_not_replayed_blindly(tmp_path, env, corpora):
    old, _ = corpora
    root = make_kb(tmp_path / "reset")
    git = {
        **env,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=git)
    # killed after its commit point, with two of the four files renamed into place
    killed = kb(root, env, "mv", "engines/eng-a", "eng-z", KB_TEST_KILL_AT_STEP="8")
    assert killed.returncode == 137
    assert tree(root) != old
    subprocess.run(["git", "stash", "-u", "-q"], cwd=root, check=True, env=git)
    subprocess.run(["git", "checkout", "-q", "."], cwd=root, check=True, env=git)
    check = kb(root, env, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "the move was undone" in check.stderr
    assert tree(root) == old


def planted_journals(root: Path, outside: Path) -> list[dict]:
    rec = "records/engines"
    return [
        {"renames": [], "remove": str(outside / "victim.txt")},  # delete a file outside (absolute)
        {"renames": [[f"{rec}/eng-b.md", "../outside/victim.txt"]], "remove": f"{rec}/eng-c.md"},  # over ../
        {"renames": [[f"{rec}/eng-b.md", ".git/hooks/pre-commit"]], "remove": f"{rec}/eng-c.md"},  # a hook
        {"renames": [], "remove": f"{rec}/eng-d.md"},  # delete a record
        {"renames": [["records/engines", "records/x"]], "remove": "records"},  # a directory
    ]


@pytest.mark.parametrize("case", range(5))
@pytest.mark.parametrize("command", [["check"], ["build"], ["query", "type:engine"], ["fmt", "--check"]])
def test_a_journal_committed_in_the_repository_is_never_replayed(tmp_path, env, case, command):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("the user's file\n")
    root = make_kb(tmp_path / "kb")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".kb-cache").mkdir()
    (root / ".kb-cache" / "move-journal.json").write_text(json.dumps(planted_journals(root, outside)[case]))
    before = tree(root)
    result = kb(root, env, *command)
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr and "KB900" not in result.stderr
    assert tree(root) == before
    assert (outside / "victim.txt").read_text() == "the user's file\n"
    assert not (root / ".git" / "hooks" / "pre-commit").exists()


def test_a_journal_in_kbs_own_place_naming_paths_outside_the_records_is_refused(tmp_path, env, monkeypatch):
    from kbtools.authoring.journal import journal_path

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("the user's file\n")
    root = make_kb(tmp_path / "kb")
    (root / ".git" / "hooks").mkdir(parents=True)
    rec = (root / "records" / "engines" / "eng-b.md").read_bytes()
    from kbtools.files import digest

    with monkeypatch.context() as patched:  # the suite's own cache directory is back afterwards
        patched.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])
        path = journal_path(root)
    path.parent.mkdir(parents=True, mode=0o700)
    for target in (".git/hooks/pre-commit", "records/../.git/hooks/pre-commit", str(outside / "victim.txt")):
        entry = {
            "target": target,
            "temporary": "records/engines/eng-b.md",
            "old": None,
            "new": digest(rec),
            "old_text": None,
        }
        body = {"kb": "move-journal", "format": 1, "root": str(root.resolve()), "records": "records", "what": "x",
                "state": "committed", "files": [entry], "remove": None}  # fmt: skip
        path.write_text(json.dumps(body))
        before = tree(root)
        result = kb(root, env, "check")
        assert "ignored an unfinished kb mv's journal" in result.stderr, result.stderr
        assert tree(root) == before and not (root / ".git" / "hooks" / "pre-commit").exists()
        assert (outside / "victim.txt").read_text() == "the user's file\n"
        assert not path.exists()


@pytest.mark.parametrize(
    "new_id, message",
    [
        ("eng-z\n", "is not a valid id"),
        ("e" * 150, "at most 100 characters"),
        ("../x", "no record type keeps its records in ../"),
    ],
)
def test_an_id_kb_mv_cannot_use_is_refused_and_nothing_changes(tmp_path, env, new_id, message):
    root = make_kb(tmp_path / "kb")
    before = tree(root)
    moved = kb(root, env, "mv", "engines/eng-a", new_id)
    assert moved.returncode == 2 and message in moved.stderr, moved.stderr
    assert "KB900" not in moved.stderr and "\n" not in moved.stderr.rstrip("\n")
    assert tree(root) == before


def _mount_tmpfs(where: Path, options: str) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    return (
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True).returncode
        == 0
    )


@pytest.mark.parametrize("how", ["full", "read-only"])
def test_a_full_disk_or_a_read_only_records_directory_is_a_refusal_not_an_internal_error(tmp_path, env, how):
    mnt = tmp_path / "mnt"
    if not _mount_tmpfs(mnt, "size=256k"):
        pytest.skip("needs a tmpfs mount (root)")
    try:
        root = make_kb(mnt / "kb")
        before = tree(root)
        if how == "full":
            fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
            try:
                while os.write(fd, b"\0" * 4096):
                    pass
            except OSError:
                pass  # the disk is full
            finally:
                os.close(fd)
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        moved = kb(root, env, "mv", "engines/eng-a", "eng-z")
        assert moved.returncode == 2, moved.stderr
        assert "KB900" not in moved.stderr and "nothing was changed" in moved.stderr, moved.stderr
        assert tree(root) == before
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
