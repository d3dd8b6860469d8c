"""What a careless user or an attacker can do to kb beyond `kb check`'s input: where a site is written,
concurrent writers, the cache, odd files. Each test here failed on the kb before these fixes."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from conftest import GIT_ENV, KB_SCRIPT, REPO, git
from test_incremental import generate

ENV = dict(os.environ, **GIT_ENV)


def kb_cli(root: Path, *args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [KB_SCRIPT, "--root", str(root), *args], capture_output=True, text=True, env=env or ENV, timeout=timeout
    )


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A committed knowledge base laid out as this repository is (its schemas and theme overrides, records of
    every type). Where a site is written does not depend on how many records it has: 40 generated records
    test the same promises as this repository's 475, in a fraction of the build time."""
    root = tmp_path_factory.mktemp("clone") / "kb"
    generate(root, 40, seed=2)
    (root / ".gitignore").write_text(".kb-cache/\nsite/_build/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "kb")
    return root


def snapshot(root: Path) -> tuple[str, str, str]:
    head = git(root, "rev-parse", "HEAD").stdout
    status = git(root, "status", "--porcelain", "--ignored").stdout
    log = git(root, "log", "--oneline").stdout
    return head, status, log


# ---------------------------------------------------------------- 1. kb build --out deletes only what kb wrote


@pytest.mark.parametrize(
    "out", [".", "records", "schema", "site", "site/templates", "records/models", "..", "/", ".git"]
)
def test_build_refuses_to_replace_the_repository_or_its_parts(clone, out):
    before = snapshot(clone)
    files = sorted(p.relative_to(clone).as_posix() for p in clone.rglob("*") if ".git/" not in p.as_posix())
    result = subprocess.run(
        [KB_SCRIPT, "build", "--no-search", "--out", out], cwd=clone, capture_output=True, text=True, env=ENV
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("kb build: --out ") and "Traceback" not in result.stderr
    assert snapshot(clone) == before
    assert sorted(p.relative_to(clone).as_posix() for p in clone.rglob("*") if ".git/" not in p.as_posix()) == files


def test_build_refuses_a_symlink_a_file_and_a_directory_of_the_users(clone, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "CNAME").write_text("kb.example.org\n")
    (mine / "logo.png").write_bytes(b"\x89PNG")
    link = tmp_path / "link"
    link.symlink_to(mine)
    plain = tmp_path / "notes.txt"
    plain.write_text("keep me\n")
    sibling = tmp_path / ".mine-drafts"  # a user's own directory that looks like an old build's debris
    sibling.mkdir()
    (sibling / "draft.md").write_text("draft\n")
    for out, says in (
        (mine, "holds files kb did not write (CNAME, logo.png)"),
        (link, "is a symlink"),
        (plain, "is a file"),
    ):
        result = kb_cli(clone, "build", "--no-search", "--out", str(out))
        assert result.returncode == 2 and says in result.stderr, result.stderr
    assert sorted(p.name for p in mine.iterdir()) == ["CNAME", "logo.png"]
    assert plain.read_text() == "keep me\n" and not (tmp_path / ".notes.txt-old").exists()
    assert (sibling / "draft.md").read_text() == "draft\n"


@pytest.mark.slow
def test_a_site_kb_built_is_replaced_and_the_users_siblings_are_kept(clone, tmp_path):
    out = tmp_path / "site"
    sibling = tmp_path / ".site-backup"
    sibling.mkdir()
    (sibling / "keep.txt").write_text("mine\n")
    assert kb_cli(clone, "build", "--no-search", "--out", str(out)).returncode == 0
    manifest = json.loads((out / ".kb-site.json").read_text())
    assert "index.html" in manifest["files"] and ".kb-site.json" in manifest["files"]
    assert kb_cli(clone, "build", "--no-search", "--out", str(out)).returncode == 0  # its own site: replaced
    (out / "CNAME").write_text("kb.example.org\n")  # the user adds a file to the built site
    result = kb_cli(clone, "build", "--no-search", "--out", str(out))
    assert result.returncode == 2 and "CNAME" in result.stderr
    assert (out / "CNAME").exists() and (out / "index.html").exists()
    assert (sibling / "keep.txt").read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".site-backup", "site"]


def test_an_empty_directory_is_used(clone, tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    assert kb_cli(clone, "build", "--no-search", "--out", str(out)).returncode == 0
    assert (out / "index.html").is_file()


def test_debris_of_a_killed_build_is_removed_but_only_kbs_own(clone, tmp_path):
    out = tmp_path / "site"
    debris = tmp_path / ".site.kb-staging-abc123"
    debris.mkdir()
    (debris / ".kb-staging").write_text("")
    (debris / "index.html").write_text("half")
    lookalike = tmp_path / ".site.kb-staging-mine"  # named like debris, but not made by kb
    lookalike.mkdir()
    (lookalike / "notes.md").write_text("mine\n")
    assert kb_cli(clone, "build", "--no-search", "--out", str(out)).returncode == 0
    assert not debris.exists()
    assert (lookalike / "notes.md").read_text() == "mine\n"


@pytest.mark.slow
def test_twenty_pairs_of_concurrent_builds_each_publish_a_whole_site(kb, tmp_path):
    kb.source()
    for i in range(5):
        kb.record("engines", f"e{i}", "engine", "kind: serving-engine\n", body=f"[[src-a]] [[e{(i + 1) % 5}]]\n")
    tmp_path = tmp_path / "sites"
    tmp_path.mkdir()
    out = tmp_path / "site"
    kb_cli(kb.root, "check")  # warm the cache so each build is quick
    for pair in range(20):
        procs = [
            subprocess.Popen(
                [KB_SCRIPT, "--root", str(kb.root), "build", "--no-search", "--out", str(out)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=ENV,
            )
            for _ in range(2)
        ]
        results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
        for code, err in results:
            assert code == 0 or (code == 2 and err.startswith("kb build:")), (pair, code, err)
        listed = json.loads((out / ".kb-site.json").read_text())["files"]
        present = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
        assert present == sorted(listed), pair  # every file the manifest names, and nothing else
        assert (out / "index.html").stat().st_size > 0
        assert [p.name for p in tmp_path.iterdir()] == ["site"], pair  # no staging left behind


def test_out_of_tree_pages_are_never_written(kb, tmp_path):
    """A schema whose x-kb-dir climbs out is refused (KB210), so a build refuses, and --force writes nothing outside."""
    kb.source()
    schema = kb.root / "schema" / "engine.schema.json"
    schema.write_text(schema.read_text().replace('"x-kb-dir": "engines"', '"x-kb-dir": "../../escaped"'))
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n")
    result = kb.check()
    assert any(
        l.startswith("schema/engine.schema.json:") and " KB210 x-kb-dir must be one directory name" in l
        for l in result.lines
    ), result.out
    assert kb.run("build", "--no-search").exit_code == 1
    assert kb.run("build", "--no-search", "--force").exit_code == 0
    assert not [p for p in tmp_path.parent.rglob("escaped")]
    assert [
        p.relative_to(kb.root).as_posix() for p in tmp_path.rglob("index.html") if "_build" not in p.as_posix()
    ] == []


def test_a_file_name_cannot_break_out_of_an_href(kb):
    """A record file named with a quote and markup (KB108) gets no page and is never a link target."""
    kb.source()
    evil = 'x"><meta http-equiv=refresh content=0>'
    kb.write(
        f"records/engines/{evil}.md",
        "---\nid: x\ntype: engine\nname: X\nstatus: draft\nconfidence: 0.5\n"
        "updated: 2026-11-29\nsources: [src-a]\nkind: serving-engine\n---\n[[src-a]]\n",
    )
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body=f"[[src-a]] [[engines/{evil}]] and [[x]]\n")
    assert any(" KB108 " in l for l in kb.check().lines)
    assert kb.run("build", "--no-search", "--force").exit_code == 0
    out = kb.root / "site" / "_build"
    for page in out.rglob("*.html"):
        assert "<meta http-equiv=refresh" not in page.read_text(), page
    assert not [p for p in out.rglob("*") if "meta" in p.name]


# ---------------------------------------------------------------- 2. writers never lose a concurrent edit

FORMATTABLE = (
    "---\nname: N\nid: x\ntype: engine\nstatus: draft\nconfidence: 0.5\nupdated: 2026-11-29\nsources: [src-a]\n"
    "kind: serving-engine\nlanguages:\n- Python\n- C++\n{filler}---\nUses [[src-a]].\n"
)


def test_fmt_skips_a_file_saved_while_it_worked(kb, monkeypatch, capsys):
    import kbtools.authoring.fmt as fmt

    kb.source()
    path = kb.write("records/engines/x.md", FORMATTABLE.format(filler=""), dedent=False)
    saved = FORMATTABLE.format(filler="license: MIT\n")
    real = fmt.format_text

    def save_meanwhile(text, order):  # the user's editor saves between kb's read and its rename
        path.write_text(saved)
        return real(text, order)

    monkeypatch.setattr(fmt, "format_text", save_meanwhile)
    result = kb.run("fmt")
    assert result.exit_code == 1
    assert "records/engines/x.md:1:1: the file changed while kb fmt worked on it; it was left as it is" in result.err
    assert path.read_text() == saved


@pytest.mark.slow
def test_fmt_never_loses_a_concurrent_save_in_twenty_trials(kb):
    kb.source()
    filler = "".join(f"# comment line {i} to make the frontmatter large\n" for i in range(1500))
    path = kb.write("records/engines/x.md", FORMATTABLE.format(filler=filler), dedent=False)
    command = [KB_SCRIPT, "--root", str(kb.root), "fmt", str(path)]
    started = time.monotonic()
    subprocess.run(command, capture_output=True, timeout=60)
    run = time.monotonic() - started  # how long one kb fmt takes here: the saves below are spread over it
    for trial in range(20):  # saves from before kb fmt reads the file to after it is done, through its work
        path.write_text(FORMATTABLE.format(filler=filler))
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(run * 1.25 * trial / 19)
        edited = FORMATTABLE.format(filler=filler).replace("name: N", f"name: Edited {trial}")
        path.write_text(edited)
        proc.wait(timeout=60)
        final = path.read_text()
        assert f"name: Edited {trial}" in final, trial  # the save survives, formatted or as written


def test_fmt_keeps_mode_and_owner(kb):
    kb.source()
    path = kb.write("records/engines/x.md", FORMATTABLE.format(filler=""), dedent=False)
    os.chmod(path, 0o640)
    if os.geteuid() == 0:
        os.chown(path, 12345, 12346)
    assert kb.run("fmt").exit_code == 0
    st = path.stat()
    assert oct(st.st_mode & 0o777) == oct(0o640)
    if os.geteuid() == 0:
        assert (st.st_uid, st.st_gid) == (12345, 12346)
    assert "name: N" in path.read_text() and path.read_text().startswith("---\nid: x\n")


def test_new_records_get_the_umask_mode_not_0600(kb):
    kb.source()
    assert kb.run("new", "engine", "--name", "Fresh", "--source", "src-a").exit_code == 0
    mode = (kb.root / "records/engines/fresh.md").stat().st_mode & 0o777
    umask = os.umask(0o022)
    os.umask(umask)
    assert mode == 0o666 & ~umask


def test_new_force_skips_a_record_saved_meanwhile(kb, monkeypatch):
    import kbtools.authoring.new as authoring

    kb.source()
    assert kb.run("new", "engine", "--name", "Fresh", "--source", "src-a").exit_code == 0
    path = kb.root / "records/engines/fresh.md"
    monkeypatch.setattr(authoring, "replace_file", _replace_after_read(authoring.replace_file, path))
    result = kb.run("new", "engine", "--name", "Fresh", "--source", "src-a", "--force")
    assert result.exit_code == 2 and "changed while kb worked on it" in result.err
    assert path.read_text().endswith("Edited meanwhile.\n")


def _replace_after_read(replace, path):
    def wrapped(target, text, expected=None):
        path.write_text(path.read_text() + "Edited meanwhile.\n")  # a save after kb read the file
        return replace(target, text, expected)

    return wrapped


def test_fmt_goes_on_past_bad_paths(kb):
    kb.source()
    good = kb.write("records/engines/x.md", FORMATTABLE.format(filler=""), dedent=False)
    (kb.root / "records/engines/dir.md").mkdir()
    os.symlink("loop.md", kb.root / "records/engines/loop.md")
    os.mkfifo(kb.root / "records/engines/fifo.md")
    paths = [str(kb.root / "records/engines" / n) for n in ("dir.md", "loop.md", "fifo.md", "x.md")]
    result = subprocess.run(
        [KB_SCRIPT, "--root", str(kb.root), "fmt", *paths], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "records/engines/dir.md:1:1: KB112 not a regular file but a directory" in result.stderr
    assert "records/engines/fifo.md:1:1: KB112 not a regular file but a FIFO" in result.stderr
    assert "records/engines/loop.md:1:1: KB112 cannot read file" in result.stderr
    assert good.read_text().startswith("---\nid: x\n")  # the good one was formatted all the same


# ---------------------------------------------------------------- 3. the cache holds data, never code


def test_no_pickle_anywhere():
    for path in (REPO / "kbtools").glob("*.py"):
        assert "pickle" not in path.read_text(), path


def test_a_planted_pickle_is_never_loaded(kb, tmp_path):
    kb.source()
    marker = tmp_path / "pwned"
    payload = b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR."
    for name in ("check.pickle", "check.sqlite"):
        (kb.root / ".kb-cache").mkdir(exist_ok=True)
        (kb.root / ".kb-cache" / name).write_bytes(payload)
    result = kb_cli(kb.root, "check")
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr
    assert not marker.exists()


def _store(root: Path, state_home: Path) -> Path:
    """Where kb keeps the cache of the knowledge base at `root` for a user whose cache directory is state_home."""
    from kbtools.state import state_dir

    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(state_home)
    try:
        return state_dir(root, create=True) / "check.sqlite"
    finally:
        if before is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = before


def _forge(cache_file: Path) -> None:
    """Rewrite every row of a cache so that it reports nothing."""
    from kbtools.check.store import decode

    db = sqlite3.connect(cache_file)
    for table in ("files", "compute"):  # one row per entry and field, each field its own JSON text
        for name, field, body in db.execute(f"SELECT name, field, body FROM {table}_rows").fetchall():
            value = decode(body)
            if field in ("load", "schema", "diagnostics", "debris"):
                value = []
            elif field in ("links", "constraints"):
                value["diagnostics"] = []
            db.execute(
                f"UPDATE {table}_rows SET body = ? WHERE name = ? AND field = ?", (json.dumps(value), name, field)
            )
    db.execute("DELETE FROM findings")  # the index's findings per file (kbtools.check.run.scope)
    db.commit()
    db.close()


@pytest.mark.slow
def test_a_forged_cache_cannot_hide_a_diagnostic(kb, tmp_path):
    """The cache lives in the user's own state directory: a forged one works only for whoever can write there,
    and one committed to the repository (where kb kept it until issue 26) is never read."""
    kb.source()
    path = kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]] [[nowhere]]\n")
    old = time.time() - 3600
    os.utime(path, (old, old))  # old enough to be trusted from the cache by stat alone
    other = dict(ENV, XDG_CACHE_HOME=str(tmp_path / "attacker"))
    named = str(path)  # a named file: the per-stage cache answers, not the whole-run memo
    assert " KB302 " in kb_cli(kb.root, "check", named, env=other).stdout
    forged = _store(kb.root, tmp_path / "attacker")
    _forge(forged)
    hidden = kb_cli(kb.root, "check", named, env=other)
    assert " KB302 " not in hidden.stdout  # the forgery works for whoever can write that user's state ...
    (kb.root / ".kb-cache").mkdir()
    shutil.copy(forged, kb.root / ".kb-cache" / "check.sqlite")  # ... and a pull request can only commit it here
    mine = dict(ENV, XDG_CACHE_HOME=str(tmp_path / "me"))
    assert " KB302 " in kb_cli(kb.root, "check", named, env=mine).stdout


def test_a_fifo_as_the_cache_file_does_not_hang(kb, tmp_path):
    kb.source()
    (kb.root / ".kb-cache").mkdir()
    os.mkfifo(kb.root / ".kb-cache" / "check.sqlite")  # where kb kept it before
    os.mkfifo(_store(kb.root, tmp_path / "state"))  # where kb keeps it
    result = kb_cli(kb.root, "check", env=dict(ENV, XDG_CACHE_HOME=str(tmp_path / "state")), timeout=30)
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr


def test_the_cache_leaves_no_temporaries(kb, tmp_path):
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n")
    env = dict(ENV, XDG_CACHE_HOME=str(tmp_path / "state"))
    for path in (kb.root / "records").rglob("*"):
        _aged(path)  # saved an hour ago: the first run keeps its answer, and the next two are answered from it
    for _ in range(3):
        kb_cli(kb.root, "check", env=env)
    store = _store(kb.root, tmp_path / "state").parent
    assert {p.name for p in store.iterdir()} <= {"check.sqlite", "check-runs.sqlite", "repository"}
    assert not (kb.root / ".kb-cache").exists()  # nothing of kb's state in the repository


# ---------------------------------------------------------------- 7. change detection: what git uses, stat before read


def _aged(path: Path) -> os.stat_result:
    old = time.time() - 3600
    os.utime(path, (old, old))
    return path.stat()


@pytest.mark.parametrize("how", ["touch -r", "cp -p", "tar -x"])
def test_a_same_size_edit_with_the_mtime_kept_is_seen(kb, tmp_path, how):
    kb.source()
    path = kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]] [[src-a]]\n")
    before = _aged(path)
    assert kb_cli(kb.root, "check").returncode == 0
    edited = path.read_text().replace("[[src-a]] [[src-a]]", "[[src-a]] [[src-b]]")  # same size
    assert len(edited.encode()) == before.st_size
    if how == "touch -r":
        path.write_text(edited)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    else:  # a new file with the old times moved into place (cp -p, rsync -t, tar -x)
        other = tmp_path / "e.md"
        other.write_text(edited)
        os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
        os.replace(other, path) if how == "cp -p" else shutil.copy2(other, path)
    result = kb_cli(kb.root, "check")
    assert "records/engines/e.md:11:11: error KB302 dangling link [[src-b]]" in result.stdout, result.stdout


def test_an_edit_during_the_read_is_seen_next_time(kb, monkeypatch, capsys):
    import kbtools.check.load as load

    kb.source()
    path = kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]] [[src-a]]\n")
    before = _aged(path)
    real = load.read_regular

    def edit_after_read(p):
        result = real(p)
        if p.name == "e.md":  # the user saves, keeping the size and the mtime, just after kb read it
            p.write_text(p.read_text().replace("[[src-a]] [[src-a]]", "[[src-a]] [[src-b]]"))
            os.utime(p, ns=(before.st_atime_ns, before.st_mtime_ns))
        return result

    monkeypatch.setattr(load, "read_regular", edit_after_read)
    assert kb.check().exit_code == 0  # this run read the old text
    monkeypatch.setattr(load, "read_regular", real)
    assert kb.check().find("KB302"), "the edit was cached as clean"


# ---------------------------------------------------------------- 11. the smaller ones


def _as_nobody(root: Path, *args: str) -> subprocess.CompletedProcess:
    """kb run by a user who cannot read what root made unreadable (chmod alone does not stop root)."""
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    env = dict(ENV, HOME=str(root.parent), XDG_CACHE_HOME=str(root.parent / "nobody-cache"))
    return subprocess.run(
        [*prefix, KB_SCRIPT, "--root", str(root), *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.fixture
def shared_kb():
    """A kb tree another user may read (pytest's tmp directories are private to their owner)."""
    import tempfile

    from conftest import KB

    base = Path(tempfile.mkdtemp(prefix="kb-shared-"))
    os.chmod(base, 0o755)
    yield KB(base / "kb")
    shutil.rmtree(base, ignore_errors=True)


def test_an_unreadable_record_directory_and_schema_are_reported(shared_kb):
    kb = shared_kb
    if os.geteuid() == 0 and (shutil.which("setpriv") is None or _as_nobody(kb.root, "--version").returncode != 0):
        pytest.skip("root reads everything, and kb cannot be run as another user here")
    kb.source()
    kb.record("models", "m", "model", "architecture: dense\nattention: gqa\n", body="[[src-a]]\n")
    for path in kb.root.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    os.chmod(kb.root / "records" / "models", 0o000)
    os.chmod(kb.root / "schema" / "storage_tier.schema.json", 0o000)
    try:
        result = _as_nobody(kb.root, "check", "--no-cache")
    finally:
        os.chmod(kb.root / "records" / "models", 0o755)
        os.chmod(kb.root / "schema" / "storage_tier.schema.json", 0o644)
    assert "Traceback" not in result.stderr and " KB900 " not in result.stdout + result.stderr, result.stderr
    assert "records/models:1:1: error KB112 cannot read directory: Permission denied" in result.stdout, (
        result.stdout + result.stderr
    )
    assert (
        "schema/storage_tier.schema.json:1:1: error KB210 schema file: cannot read file: Permission denied"
        in result.stdout
    )


def test_sarif_uris_are_percent_encoded(kb):
    kb.source()
    kb.write("records/engines/a b#c.md", "---\nid: x\n---\n")
    sarif = json.loads(kb.check("--format", "sarif").out)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]]
    assert "records/engines/a%20b%23c.md" in uris


def test_out_slash_is_a_usage_error(kb):
    kb.source()
    result = kb.run("build", "--out", "/")
    assert result.exit_code == 2 and "contains the repository" in result.err and "KB900" not in result.err


def test_export_never_overwrites_a_users_file_or_a_record(kb):
    kb.source()
    record = kb.root / "records/sources/src-a.md"
    before = record.read_bytes()
    for args in (["--json", str(record)], ["--sqlite", str(kb.root / "schema" / "x.db")]):
        result = kb.run("export", *args)
        assert result.exit_code == 2 and "lies inside" in result.err
    notes = kb.write("notes.json", '{"mine": true}\n')
    result = kb.run("export", "--json", str(notes))
    assert result.exit_code == 2 and "not an earlier kb json export" in result.err
    assert notes.read_text() == '{"mine": true}\n' and record.read_bytes() == before
    out = kb.root / "export.json"
    assert kb.run("export", "--json", str(out)).exit_code == 0
    assert kb.run("export", "--json", str(out)).exit_code == 0  # its own export: replaced


def test_a_unit_bomb_in_a_query_filter_is_refused_at_once(kb):
    kb.source()
    start = time.monotonic()
    result = kb.run("query", "memory_bandwidth>=4800 GB/s^(9^9^9)")
    assert time.monotonic() - start < 5
    assert result.exit_code == 2 and "is not a unit" in result.err, result.err
