"""`kb mv`: a rename that rewrites every reference, link and value naming the record, all or nothing."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, run_kb

PARTS = ("records", "schema")


@pytest.fixture(scope="module")
def copied(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("move") / "kb"
    for part in PARTS:
        shutil.copytree(REPO / part, root / part)
    return root


@pytest.fixture
def repo(copied) -> Path:
    """A copy of this repository's knowledge base, as committed. One copy serves the module: what a test
    changed is put back, file by file, and a file left as it was keeps its stat, so kb's store for the copy
    stays warm (a cold check of the copy costs 2 s a test, and every test here runs kb at least once)."""
    wanted = {p.relative_to(REPO): p.read_bytes() for part in PARTS for p in (REPO / part).rglob("*") if p.is_file()}
    for part in PARTS:
        for path in sorted((copied / part).rglob("*"), reverse=True):  # files before their directories
            rel = path.relative_to(copied)
            if path.is_dir() and not path.is_symlink():
                if not any(path.iterdir()):
                    path.rmdir()
            elif rel not in wanted:
                path.unlink()
    for rel, data in wanted.items():
        path = copied / rel
        if not path.is_file() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    assert {p.relative_to(copied) for part in PARTS for p in (copied / part).rglob("*") if p.is_file()} == set(wanted)
    return copied


def kb(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return run_kb("--root", str(root), *args, env=env)


def tree(root: Path) -> dict[str, str]:
    """Every file under records/ (hidden ones too) -> its digest."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((root / "records").rglob("*"))
        if p.is_file()
    }


def texts(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted((root / "records").rglob("*.md"))}


def line_of(text: str, start: str) -> int:
    """The line number of the first line that starts with `start` (records move as they are edited)."""
    return next(number for number, line in enumerate(text.splitlines(), 1) if line.startswith(start))


OLD, NEW = "pcie-5-x16", "pcie-gen5-x16"
TOKEN = re.compile(rf"(?<![\w-]){re.escape(OLD)}(?![\w-])")


@pytest.mark.slow
def test_a_rename_rewrites_every_reference_and_nothing_else(repo):
    before = texts(repo)
    moved = kb(repo, "mv", f"interconnects/{OLD}", NEW)
    assert moved.returncode == 0, moved.stderr
    out = moved.stdout.splitlines()
    assert out[0] == f"moved records/interconnects/{OLD}.md -> records/interconnects/{NEW}.md"
    # each kind of naming, reported at its place: a typed reference, a list item, a cost input, a wikilink,
    # a row of an inline value
    host_link = line_of(before["records/accelerators/nvidia-h100-sxm.md"], f"host_link: {OLD}")
    assert f"records/accelerators/nvidia-h100-sxm.md:{host_link}:12: host_link: {OLD} -> {NEW}" in out
    listed = line_of(before["records/measurements/vllm-cpu-offload-h100-pcie5.md"], "interconnects: [")
    assert f"records/measurements/vllm-cpu-offload-h100-pcie5.md:{listed}:17: interconnects[]: {OLD} -> {NEW}" in out
    assert any(l.startswith("records/flops/kv-transfer.md:31:") and "inputs.links[]" in l for l in out)
    assert f"records/interconnects/cxl-2-x8.md:32:1: body: interconnects/{OLD} -> interconnects/{NEW}" in out
    assert any(l.startswith("records/flops/kv-transfer.md:80:") and "body" in l for l in out)
    after = texts(repo)
    assert f"records/interconnects/{OLD}.md" not in after
    assert after[f"records/interconnects/{NEW}.md"] == TOKEN.sub(NEW, before[f"records/interconnects/{OLD}.md"])
    changed = [rel for rel in before if rel in after and after[rel] != before[rel]]
    assert len(changed) >= 30
    for rel in changed:  # every change is the id's own replacement: layout, quoting and comments kept
        old_lines, new_lines = before[rel].split("\n"), after[rel].split("\n")
        assert len(old_lines) == len(new_lines)
        for a, b in zip(old_lines, new_lines, strict=True):
            assert a == b or TOKEN.sub(NEW, a) == b, (rel, a, b)
    check = kb(repo, "check", "--strict")
    assert check.returncode == 0, check.stdout[-2000:]
    assert re.search(r"checked \d+ records: 0 errors, 0 warnings", check.stdout)
    assert not any(f"[[{OLD}" in t or f"/{OLD}]]" in t for t in after.values())


def test_a_parameter_rename_rewrites_the_formulas_that_name_it(repo):
    moved = kb(repo, "mv", "transfer-bandwidth", "xfer-bandwidth")
    assert moved.returncode == 0, moved.stderr
    assert any(": formula: transfer-bandwidth -> xfer-bandwidth" in l for l in moved.stdout.splitlines())
    everything = "".join(texts(repo).values())
    assert "param(tier, 'xfer-bandwidth')" in everything
    # a formula quoted in a code span names no record: kept as written, and pointed out
    assert (
        "records/hardware-parameters/xfer-bandwidth.md:21:32: note: 'transfer-bandwidth' left as written "
        "(it names no record there)" in moved.stdout.splitlines()
    )
    check = kb(repo, "check")
    assert check.returncode == 0, check.stdout[-2000:]


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["nvidia-h100-sxm", "nvidia-h200-sxm"],
            "id 'nvidia-h200-sxm' is taken by records/accelerators/nvidia-h200-sxm.md",
        ),
        (["nvidia-h100-sxm", "H100"], "'H100' is not a valid id"),
        (["no-such-record", "x"], "no record 'no-such-record'"),
        (["accelerators/nvidia-h100-sxm", "engines/h100"], "is not a valid engine ('kind' is a required property)"),
        (["nvidia-h100-sxm", "nowhere/h100"], "no record type keeps its records in nowhere/"),
    ],
)
def test_refusals_change_nothing(repo, args, message):
    before = tree(repo)
    moved = kb(repo, "mv", *args)
    assert moved.returncode == 2 and message in moved.stderr, moved.stderr
    assert tree(repo) == before


def test_an_ambiguous_link_to_the_record_is_refused(repo):
    """Two records called the same: a bare [[id]] could mean either, so kb cannot tell which to rewrite."""
    twin = repo / "records" / "engines" / "nvidia-h100-sxm.md"
    engine = (repo / "records" / "engines" / "vllm.md").read_text().replace("id: vllm", "id: nvidia-h100-sxm")
    twin.write_text(engine)
    before = tree(repo)
    moved = kb(repo, "mv", "accelerators/nvidia-h100-sxm", "h100-sxm")
    assert moved.returncode == 2 and "is ambiguous" in moved.stderr
    assert tree(repo) == before


# Kills at every step, edits saved meanwhile and planted journals: tests/test_move_journal.py


@pytest.mark.slow
def test_a_move_to_another_type_is_refused_where_a_reference_wants_the_old_type(repo):
    """A type whose fields the record has (a copy of the interconnect schema), but host_link fields ask for
    an interconnect: the move would change what those records mean."""
    import json

    schema = json.loads((repo / "schema" / "interconnect.schema.json").read_text())
    schema.update({"title": "Widget", "x-kb-dir": "widgets"})
    schema["properties"]["type"] = {"const": "widget"}
    (repo / "schema" / "widget.schema.json").write_text(json.dumps(schema, indent=2))
    before = tree(repo)
    moved = kb(repo, "mv", f"interconnects/{OLD}", "widgets/w")
    assert moved.returncode == 2
    assert "host_link must name interconnect, not a widget; kb mv changes no record's meaning" in moved.stderr
    assert tree(repo) == before
