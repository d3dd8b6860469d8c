"""Files kb reads or writes that are not what they seem (issue 30, items 9 and 12): a record that is a
symlink under kb fmt, a type directory that is a symlink, a full disk under kb check and kb build, a
4.9 MB frontmatter string under kb fmt, and a records path that does not exist."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import KB_SCRIPT, REPO, SOURCE_RECORD

UNFORMATTED = (
    "---\nname: N\nid: {id}\ntype: engine\nstatus: draft\nconfidence: 0.5\nupdated: 2026-11-29\nsources: [src-a]\n"
    "kind: serving-engine\n{filler}---\nUses [[src-a]].\n"
)


def fmt(root: Path, *paths: str) -> subprocess.CompletedProcess:
    return subprocess.run([KB_SCRIPT, "--root", str(root), "fmt", *paths], capture_output=True, text=True, timeout=300)


def test_kb_fmt_on_a_record_that_is_a_symlink_keeps_the_link_and_formats_its_target(kb):
    kb.source()
    target = kb.write("records/engines/real.md", UNFORMATTED.format(id="real", filler=""), dedent=False)
    link = kb.root / "records" / "engines" / "alias.md"
    os.symlink("real.md", link)
    result = fmt(kb.root, str(link))
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == "real.md"
    assert target.read_text().startswith("---\nid: real\n")  # formatted, in place of the link's target


def test_kb_fmt_never_writes_through_a_link_that_leaves_the_records(kb, tmp_path):
    kb.source()
    outside = tmp_path / "outside.md"
    outside.write_text(UNFORMATTED.format(id="out", filler=""))
    before = outside.read_bytes()
    link = kb.root / "records" / "engines" / "out.md"
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, link)
    result = fmt(kb.root, str(link))
    assert result.returncode == 1 and "symlink to a file outside records/" in result.stderr, result.stderr
    assert link.is_symlink() and outside.read_bytes() == before


def test_kb_fmt_does_not_follow_a_type_directory_that_is_a_symlink_within_the_repository(kb):
    kb.source()
    elsewhere = kb.root / "drafts"
    elsewhere.mkdir()
    record = elsewhere / "x.md"
    record.write_text(UNFORMATTED.format(id="x", filler=""))
    before = record.read_bytes()
    shutil.rmtree(kb.root / "records" / "engines", ignore_errors=True)
    os.symlink("../drafts", kb.root / "records" / "engines")
    check = kb.check()
    assert check.find("KB112"), check.out  # kb check does not follow it either
    for paths in ([str(kb.root / "records" / "engines" / "x.md")], []):
        result = fmt(kb.root, *paths)
        assert "Traceback" not in result.stderr
        assert record.read_bytes() == before, paths
    assert "is a symlink to a directory" in fmt(kb.root, str(kb.root / "records/engines/x.md")).stderr


@pytest.mark.slow
def test_a_frontmatter_string_of_4_9_mb_is_formatted_on_one_line(kb):
    kb.source()
    filler = 'notes: "' + "word " * 980_000 + '"\n'
    path = kb.write("records/engines/x.md", UNFORMATTED.format(id="x", filler=filler), dedent=False)
    result = fmt(kb.root, str(path))
    assert result.returncode == 0, result.stderr
    text = path.read_text()
    assert text.startswith("---\nid: x\n")
    notes = [line for line in text.splitlines() if line.startswith("notes:")]
    assert len(notes) == 1 and len(notes[0]) > 4_900_000  # not folded into a thousand lines
    assert kb.check().exit_code == 0


@pytest.fixture
def full_disk(tmp_path):
    """A knowledge base on a 3 MB file system, filled to the last byte after it was copied there."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("needs a tmpfs mount (root)")
    try:
        root = mnt / "kb"
        shutil.copytree(REPO / "schema", root / "schema")
        (root / "records" / "engines").mkdir(parents=True)
        (root / "records" / "sources").mkdir()
        (root / "records" / "sources" / "src-a.md").write_text(SOURCE_RECORD)
        (root / "records" / "engines" / "x.md").write_text(UNFORMATTED.format(id="x", filler=""))
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass  # full
        finally:
            os.close(fd)
        yield root
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_a_full_disk_under_kb_check_still_checks(full_disk):
    result = subprocess.run([KB_SCRIPT, "--root", str(full_disk), "check"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "KB900" not in result.stdout + result.stderr and "Traceback" not in result.stderr
    assert "checked 2 records" in result.stdout


def test_a_full_disk_under_kb_build_is_a_clear_refusal(full_disk):
    result = subprocess.run(
        [KB_SCRIPT, "--root", str(full_disk), "build", "--no-search"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "KB900" not in result.stderr and "Traceback" not in result.stderr
    assert "No space left on device" in result.stderr and "is unchanged" in result.stderr


def test_a_records_path_that_does_not_exist_is_an_error_naming_it(kb):
    kb.source()
    kb.write("kb.toml", 'records = "recrods"\n')
    result = kb.check()
    assert result.exit_code == 1
    assert result.find("KB112") and "recrods/ does not exist" in result.out, result.out
    built = kb.run("build", "--no-search")
    assert built.exit_code == 1  # refused: no empty site is published


def test_a_repository_without_records_is_an_error(kb):
    shutil.rmtree(kb.root / "records")
    result = kb.check()
    assert result.exit_code == 1 and "records/ does not exist" in result.out, result.out


def test_a_record_named_twice_is_formatted_once(kb):
    kb.source()
    path = kb.write("records/engines/x.md", UNFORMATTED.format(id="x", filler=""), dedent=False)
    result = fmt(kb.root, str(path), str(kb.root / "records" / "engines" / "." / "x.md"))
    assert result.returncode == 0 and "1 record: 1 changed" in result.stdout, result.stdout


@pytest.mark.parametrize("plant", ["fifo", "/dev/zero"])
@pytest.mark.parametrize(
    "rel, code", [("schema/x.schema.json", "KB210"), ("kb.toml", "KB120")], ids=["schema", "configuration"]
)
def test_a_schema_or_configuration_that_is_no_regular_file_is_reported_not_waited_on(kb, plant, rel, code):
    """Every file kb reads is opened without blocking and checked as a regular file: a FIFO named like a
    schema hung kb check before the registry saw it, a FIFO as kb.toml was skipped without a word."""
    kb.source()
    path = kb.root / rel
    if plant == "fifo":
        os.mkfifo(path)
    else:
        os.symlink(plant, path)
    result = subprocess.run([KB_SCRIPT, "--root", str(kb.root), "check"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{rel}:1:1: error {code} not a regular file" in result.stdout.replace("schema file: ", ""), result.stdout


def test_a_build_killed_before_it_marked_its_staging_leaves_nothing_behind(kb):
    """mkdtemp, then the mark: a kill between the two left an empty, unmarked staging directory that no later
    build removed. An empty directory named by kb is kb's, and nothing is lost by removing it."""
    kb.source()
    site = kb.root / "site"
    site.mkdir()
    (site / "._build.kb-staging-k1ll3d00").mkdir()
    (site / "._build.kb-old-k1ll3d00").mkdir()
    assert kb.run("build", "--no-search").exit_code == 0
    assert sorted(p.name for p in site.iterdir()) == ["_build"]


def test_a_new_site_takes_the_old_ones_place_in_one_step(tmp_path, monkeypatch):
    """Two renames left a moment with no site at all (a kill there lost the published site); on Linux the
    names are exchanged in one system call."""
    from kbtools.outputs import publish

    out, staging = tmp_path / "site", publish.new_staging(tmp_path / "site")
    out.mkdir()
    (out / "index.html").write_text("old")
    (staging / "index.html").write_text("new")

    def no_second_rename(*args, **kwargs):
        raise AssertionError("the site was moved away before the new one took its place")

    monkeypatch.setattr(os, "replace", no_second_rename)
    publish.swap_in(staging, out)
    monkeypatch.undo()
    assert (out / "index.html").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_a_directory_tree_deeper_than_pythons_stack_is_walked(kb):
    """1,200 nested directories under records/: the check (with its store and without), kb fmt and kb mv walk
    them without recursion (each gave KB900, a RecursionError, before). The record at the bottom is outside
    every type's directory (KB110)."""
    kb.source()
    made = [str(kb.root / "records" / "engines")]
    for _ in range(1200):  # one at a time: pathlib's and os's makedirs recurse, as does shutil.rmtree below
        made.append(made[-1] + "/d")
    for directory in made:
        os.mkdir(directory)
    bottom = Path(made[-1]) / "x.md"
    bottom.write_text("---\nid: x\n---\n")
    try:
        for args in (("--no-cache",), (), ()):
            result = kb.check(*args)
            assert result.exit_code == 1 and "KB900" not in result.out, result.out[-500:]
            assert [line.split()[2] for line in result.lines] == ["KB110", "KB307"], result.out[-500:]
            assert result.lines[0].split(":")[0] == "records/engines" + "/d" * 1200 + "/x.md"
        fmt = kb.run("fmt")
        assert fmt.exit_code == 0 and "KB900" not in fmt.out + fmt.err, fmt.out + fmt.err
        moved = kb.run("mv", "src-a", "src-b")  # refused for the record kb cannot place, and said so
        assert moved.exit_code == 2 and "cannot read every record" in moved.err, moved.err
    finally:
        bottom.unlink(missing_ok=True)
        for directory in reversed(made):
            os.rmdir(directory)
