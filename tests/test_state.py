"""kb's own state (issue 41, items 1-4): never where a commit can plant it, opened without following links,
bounded. Probes A10, A10b, A06, A03, A12, F14 and M02b of reliability-probes-4.

Each test finds a state directory as kb names it, $XDG_CACHE_HOME/kb/repos/<blake2b-96 of the resolved
repository path>/, computed here and not asked of kb: what is tested is where kb puts it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from conftest import GIT_ENV, KB, KB_SCRIPT, git, run_kb

from kbtools.corpus import Settings

DAY = 24 * 3600


def state_of(root: Path, cache_home: Path) -> Path:
    """The state directory kb keeps for the repository at `root` under the cache directory `cache_home`."""
    name = hashlib.blake2b(os.fsencode(str(root.resolve())), digest_size=12).hexdigest()
    return cache_home / "kb" / "repos" / name


def small_kb(root: Path | KB) -> KB:
    """A source, an engine to move (eng-a) and one naming it (in a new knowledge base at `root`, or in `root`)."""
    kb = root if isinstance(root, KB) else KB(root)
    kb.source()
    kb.record("engines", "eng-a", "engine", "kind: serving-engine\n", body="Cites [[src-a]].\n")
    kb.record("engines", "eng-b", "engine", "kind: serving-engine\n", body="Like [[eng-a]].\n")
    return kb


def aged(root: Path) -> None:
    """Every file under records/ saved an hour ago: a whole run keeps its answer in the memo."""
    old = time.time() - 3600
    for path in [root / "records", *(root / "records").rglob("*")]:
        os.utime(path, (old, old), follow_symlinks=False)


def kb_in(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """kb as a process: for a FIFO or a link kb must not open (a hang fails by the timeout, not forever)."""
    return subprocess.run(
        [KB_SCRIPT, "--root", str(root), *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )


@pytest.fixture
def cache_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "cache-home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


# ---------------------------------------------------------------- 1. never where a commit can write (A10, A10b)


def test_a_relative_xdg_cache_home_leaves_nothing_in_the_repository_and_a_pulled_journal_is_never_replayed(tmp_path):
    origin = tmp_path / "origin"
    small_kb(origin)
    git(origin, "init", "-q")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "records")
    assert git(tmp_path, "clone", "-q", str(origin), "work").returncode == 0
    work = tmp_path / "work"
    env = {"XDG_CACHE_HOME": ".cache", "HOME": str(tmp_path / "home"), **GIT_ENV}  # as some CI cache setups write it

    first = run_kb("check", cwd=work, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert git(work, "status", "--porcelain", "--ignored").stdout == ""  # nothing of kb's state in the checkout
    assert (tmp_path / "home" / ".cache" / "kb" / "repos").is_dir()  # the relative value was ignored, as XDG says

    # a commit that plants a journal where a relative XDG_CACHE_HOME would put kb's state: it removes a record
    victim = work / "records" / "engines" / "eng-b.md"
    planted = state_of(work, work / ".cache") / "move-journal.json"
    remove = {
        "path": "records/engines/eng-b.md",
        "digest": hashlib.blake2b(victim.read_bytes(), digest_size=16).hexdigest(),
    }
    body = {"kb": "move-journal", "format": 1, "root": str(work.resolve()), "records": "records", "what": "x",
            "state": "committed", "files": [], "remove": remove}  # fmt: skip
    (origin / planted.relative_to(work)).parent.mkdir(parents=True)
    (origin / planted.relative_to(work)).write_text(json.dumps(body))
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "an innocent-looking commit")
    pulled = git(work, "pull", "-q", "--no-rebase")
    assert pulled.returncode == 0, pulled.stderr
    assert planted.is_file()

    after = run_kb("check", cwd=work, env=env)
    assert after.returncode == 0, after.stdout + after.stderr
    assert victim.is_file() and "kb mv" not in after.stderr
    assert git(work, "status", "--porcelain", "--ignored").stdout == ""

    # the control: the same journal in kb's own place is one kb acts on, so the test above could fail
    shutil.copy(planted, state_of(work, tmp_path / "home" / ".cache") / "move-journal.json")
    acted = run_kb("check", cwd=work, env=env)
    assert "finished a kb mv that was interrupted" in acted.stderr and not victim.exists(), acted.stderr


def test_a_state_directory_inside_a_git_work_tree_or_the_repository_is_refused_and_kb_cache_says_why(tmp_path):
    kb = small_kb(tmp_path / "kb")
    dotfiles = tmp_path / "home"  # a home directory kept in git, as some keep their dotfiles
    dotfiles.mkdir()
    git(dotfiles, "init", "-q")
    for env in (
        {"XDG_CACHE_HOME": str(dotfiles / ".cache"), "HOME": str(dotfiles)},
        {"XDG_CACHE_HOME": str(kb.root / ".cache"), "HOME": "relative"},
    ):
        result = run_kb("--root", str(kb.root), "check", env=env)
        assert result.returncode == 0 and "checked 3 records" in result.stdout, result.stdout + result.stderr
        assert not (dotfiles / ".cache").exists() and not (kb.root / ".cache").exists()
        shown = run_kb("--root", str(kb.root), "cache", env=env)
        assert shown.returncode == 0, shown.stderr
        assert "kb keeps no state" in shown.stdout, shown.stdout
        assert ("inside the git work tree" in shown.stdout) or ("inside the repository" in shown.stdout)


def test_a_relative_xdg_cache_home_with_no_absolute_home_works_without_state(tmp_path):
    kb = small_kb(tmp_path / "kb")
    env = {"XDG_CACHE_HOME": ".cache", "HOME": ""}
    for _ in range(2):
        result = run_kb("check", cwd=kb.root, env=env)
        assert result.returncode == 0 and "checked 3 records" in result.stdout, result.stdout + result.stderr
    assert not (kb.root / ".cache").exists()
    shown = run_kb("cache", cwd=kb.root, env=env)
    assert "kb keeps no state" in shown.stdout and "$XDG_CACHE_HOME is relative (.cache)" in shown.stdout, shown.stdout


# ---------------------------------------------------------------- 2. never through a link (A06)


def _users_database(path: Path) -> bytes:
    """A user's database with a `runs` table of 100 rows, shaped as kb's memo is."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE runs (key TEXT PRIMARY KEY, body TEXT, digest TEXT)")
    db.executemany("INSERT INTO runs VALUES (?, ?, ?)", [(f"run-{i}", f"result {i}", f"{i:032x}") for i in range(100)])
    db.commit()
    db.close()
    return path.read_bytes()


def test_a_link_as_the_memo_is_never_written_created_or_read_through(kb, tmp_path, cache_home):
    small_kb(kb)
    assert kb.check().exit_code == 0  # kb makes its state directory
    memo = state_of(kb.root, cache_home) / "check-runs.sqlite"
    memo.unlink(missing_ok=True)

    app = tmp_path / "app.sqlite"
    before = _users_database(app)
    memo.symlink_to(app)
    aged(kb.root)  # a whole run over files saved an hour ago would keep its answer in the memo
    assert kb.check().exit_code == 0
    assert app.read_bytes() == before and memo.is_symlink()

    memo.unlink()
    memo.symlink_to(tmp_path / "nothing.sqlite")  # a dangling link: SQLite would create what it names
    assert kb.check().exit_code == 0
    assert not (tmp_path / "nothing.sqlite").exists()

    # read: a database the link names holding a clean answer for exactly this tree, while a link dangles
    from kbtools.check.run.memo import fingerprint

    kb.write("records/engines/eng-b.md", kb.root.joinpath("records/engines/eng-b.md").read_text() + "[[nowhere]]\n")
    aged(kb.root)
    forged = tmp_path / "forged.sqlite"
    db = sqlite3.connect(forged)
    db.execute("CREATE TABLE runs (key TEXT PRIMARY KEY, body TEXT, digest TEXT)")
    body = json.dumps({"records": 3, "diagnostics": []})
    seen = fingerprint(Settings.configured(kb.root.resolve())).key
    db.execute(
        "INSERT INTO runs VALUES (?, ?, ?)", (seen, body, hashlib.blake2b(body.encode(), digest_size=16).hexdigest())
    )
    db.commit()
    db.close()
    memo.unlink()
    memo.symlink_to(forged)
    result = kb.check()
    assert result.exit_code == 1 and result.find("KB302"), result.out

    # the control: the same database as kb's own file answers for this tree (whoever can write kb's private
    # directory can forge its memo), so the forged row above was one kb would have believed
    memo.unlink()
    shutil.copy(forged, memo)
    assert kb.check().exit_code == 0


# ---------------------------------------------------------------- 3. the journal (A03, M02b)


def test_a_journal_of_a_million_brackets_is_one_clear_message_and_kb_mv_then_works(kb, cache_home):
    small_kb(kb)
    assert kb.check().exit_code == 0
    journal = state_of(kb.root, cache_home) / "move-journal.json"
    journal.write_text("[" * 1_000_000)

    first = kb.check()
    assert first.exit_code == 0 and "checked 3 records" in first.out, first.out + first.err
    assert "KB900" not in first.err and "Traceback" not in first.err
    assert first.err.count("\n") == 1 and "ignored an unfinished kb mv's journal" in first.err, first.err
    assert "nests deeper" in first.err and "changed nothing" in first.err
    assert not journal.exists()
    set_aside = journal.with_name("move-journal.json.set-aside")
    assert set_aside.read_text() == "[" * 1_000_000  # kept as found, for whoever wants to look at it

    again = kb.check()
    assert again.exit_code == 0 and again.err == ""  # reported once
    moved = kb.run("mv", "engines/eng-a", "eng-z")
    assert moved.exit_code == 0, moved.err
    assert (kb.root / "records/engines/eng-z.md").exists() and "[[eng-z]]" in (
        kb.root / "records/engines/eng-b.md"
    ).read_text()


def _plant(journal: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(journal)
    elif kind == "directory":
        journal.mkdir()
        (journal / "inside").write_text("x")
    else:
        journal.symlink_to("/dev/zero")


@pytest.mark.parametrize("kind", ["fifo", "directory", "link"])
def test_a_journal_that_is_no_regular_file_is_treated_alike_by_check_and_mv(kb, tmp_path, kind):
    """The first command after it, kb check or kb mv, reports it once and sets it aside unopened; kb mv goes on."""
    small_kb(kb)
    said = {}
    for command in (["check"], ["mv", "engines/eng-a", "eng-z"]):
        home = tmp_path / f"home-{command[0]}"
        env = {"XDG_CACHE_HOME": str(home)}
        assert run_kb("--root", str(kb.root), "check", env=env).returncode == 0
        journal = state_of(kb.root, home) / "move-journal.json"
        _plant(journal, kind)
        result = kb_in(kb.root, *command, env=env)
        assert result.returncode == 0, result.stderr
        assert "KB900" not in result.stderr and "Traceback" not in result.stderr
        notes = [line for line in result.stderr.splitlines() if "journal" in line]
        assert len(notes) == 1 and "ignored an unfinished kb mv's journal" in notes[0], result.stderr
        said[command[0]] = notes[0].replace(str(home), "HOME")
        assert not os.path.lexists(journal)
        assert run_kb("--root", str(kb.root), "check", env=env).stderr == ""  # once
    assert said["check"] == said["mv"]  # one decision, one message
    assert (kb.root / "records/engines/eng-z.md").exists()  # the mv went on


def test_a_temporary_of_a_kb_mv_killed_while_writing_its_journal_is_removed(kb, cache_home):
    small_kb(kb)
    assert kb.check().exit_code == 0
    state = state_of(kb.root, cache_home)
    killed = state / ".move-journal.json.kb-tmp-a1b2c3d4"  # what atomic.staged names it
    killed.write_text('{"kb": "move-journal", "state": "sta')
    assert kb.run("mv", "engines/eng-a", "eng-z").exit_code == 0
    assert not killed.exists()
    assert sorted(p.name for p in state.iterdir() if "journal" in p.name) == []


# ---------------------------------------------------------------- 4. bounded (A12)


def test_the_state_of_deleted_repositories_is_shown_and_pruned_and_swept(tmp_path, cache_home):
    live = small_kb(tmp_path / "live")
    gone = []
    for i in range(12):
        kb = small_kb(tmp_path / f"clone{i}")
        assert kb.check().exit_code == 0
        gone.append(state_of(kb.root, cache_home))
        shutil.rmtree(kb.root)
    assert live.check().exit_code == 0
    repos = cache_home / "kb" / "repos"
    assert all(path.is_dir() for path in gone)

    shown = live.run("cache")
    assert shown.exit_code == 0, shown.err
    assert "13 repositories" in shown.out and "12 repositories gone" in shown.out, shown.out
    for i in range(12):
        assert f"{tmp_path / f'clone{i}'} gone" in shown.out
    assert f"{live.root} (this repository)" in shown.out

    # the sweep: at most once a day, so the stamp of the last one is made a day old
    stamp = cache_home / "kb" / "last-sweep"
    os.utime(stamp, (time.time() - 2 * DAY, time.time() - 2 * DAY))
    older = repos / ("0" * 24)  # a state directory of a kb before the record, unused for 40 days
    older.mkdir(mode=0o700)
    (older / "check.sqlite").write_bytes(b"x" * 1000)
    for path in (older / "check.sqlite", older):
        os.utime(path, (time.time() - 40 * DAY, time.time() - 40 * DAY))
    recent = repos / ("1" * 24)  # one of a kb before the record, used yesterday
    recent.mkdir(mode=0o700)
    assert live.check().exit_code == 0
    assert sorted(p.name for p in repos.iterdir()) == sorted([state_of(live.root, cache_home).name, recent.name])

    # kb cache prune: the same, at once, whatever the day
    for i in range(3):
        kb = small_kb(tmp_path / f"more{i}")
        assert kb.check().exit_code == 0
        shutil.rmtree(kb.root)
    pruned = live.run("cache", "prune")
    assert pruned.exit_code == 0 and "removed the state of 3 repositories" in pruned.out, pruned.out
    assert sorted(p.name for p in repos.iterdir()) == sorted([state_of(live.root, cache_home).name, recent.name])
    everything = live.run("cache", "prune", "--all")
    assert everything.exit_code == 0 and not list(repos.iterdir()), everything.out
    assert live.run("cache", "--all").exit_code == 2  # --all goes with prune


# ---------------------------------------------------------------- 5. a full disk (F14)


def test_a_cache_that_cannot_be_written_on_a_full_disk_is_removed_not_left_holding_the_space(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("needs a tmpfs mount (root)")
    try:
        kb = small_kb(tmp_path / "kb")
        kb.write("records/engines/eng-b.md", kb.root.joinpath("records/engines/eng-b.md").read_text() + "[[nowhere]]\n")
        aged(kb.root)
        cold = kb_in(kb.root, "check", "--no-cache", env={"XDG_CACHE_HOME": str(tmp_path / "elsewhere")})
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass  # full
        os.ftruncate(fd, os.fstat(fd).st_size - 24 * 1024)  # 24 KiB left, as the probe left it
        os.close(fd)
        result = kb_in(kb.root, "check", env={"XDG_CACHE_HOME": str(mnt)})
        assert (result.returncode, result.stdout) == (cold.returncode, cold.stdout)  # checked as before
        assert "KB900" not in result.stderr and "Traceback" not in result.stderr
        state = state_of(kb.root, mnt)
        assert not [p.name for p in state.iterdir() if p.name.startswith("check.sqlite")]  # nor -wal, -shm, -journal
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
