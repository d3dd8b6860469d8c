"""A stale cache must never hide an error: incremental and full checks agree after any edit."""

from __future__ import annotations

import os
import random
import re
import sys
from pathlib import Path

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from generate import generate  # noqa: E402

from kbtools.check.pipeline import check_corpus  # noqa: E402
from kbtools.corpus import Settings  # noqa: E402


def diagnostics(root: Path, cached: bool) -> list[tuple]:
    corpus = check_corpus(Settings(root=root), use_cache=cached, complete=not cached)
    return sorted((d.path, d.line, d.column, d.code, d.message) for d in corpus.diagnostics)


def edit(root: Path, rng: random.Random) -> str:
    files = sorted((root / "records").rglob("*.md"))
    path = rng.choice(files)
    text = path.read_text()
    kind = rng.choice(
        ["quantity", "link", "delete", "rename", "add", "schema", "body", "unit", "yaml", "geometry", "geometry"]
    )
    if kind == "geometry":  # a model's shape: every flop stating bytes from it is re-checked
        path = rng.choice(sorted((root / "records" / "models").glob("*.md")))
        text = path.read_text()
    if kind == "quantity" and re.search(r"\d+(\.\d+)? (GB/s|TFLOP/s|W|GB)", text):
        text = re.sub(
            r"(\d+(?:\.\d+)?) (GB/s|TFLOP/s|W|GB)",
            lambda m: f"{float(m.group(1)) * rng.choice([2, 0.5, 1.001]):g} {m.group(2)}",
            text,
            count=1,
        )
    elif kind == "link":
        text = (
            text.replace("[[", "[[missing-", 1)
            if rng.random() < 0.5
            else text + f"\nSee [[{rng.choice(files).stem}]].\n"
        )
    elif kind == "delete":
        path.unlink()
        return f"delete {path.name}"
    elif kind == "rename":
        new_id = path.stem + "-renamed"
        path.unlink()
        text = text.replace(f"id: {path.stem}\n", f"id: {new_id}\n", 1)
        path = path.with_name(new_id + ".md")
    elif kind == "add":
        other = rng.choice(files)
        path = other.with_name(other.stem + f"-copy{rng.randint(0, 999)}.md")
        text = other.read_text().replace(f"id: {other.stem}\n", f"id: {path.stem}\n", 1)
    elif kind == "schema":
        schema = root / "schema" / "interconnect.schema.json"
        schema.write_text(
            schema.read_text().replace('"tolerance": 0.02', '"tolerance": 0.5')
            if rng.random() < 0.5
            else schema.read_text().replace('"tolerance": 0.5', '"tolerance": 0.02')
        )
        return "schema tolerance"
    elif kind == "geometry":
        text = re.sub(
            r"num_layers: (\d+)", lambda m: f"num_layers: {int(m.group(1)) + rng.choice([1, -1, 10])}", text, count=1
        )
    elif kind == "body":
        text = (
            text
            + "\n"
            + rng.choice(["More prose.", "A code span `[[not-a-link]]`.", "{{ nothing_here }}", "## A heading"])
            + "\n"
        )
    elif kind == "unit":
        text = text.replace(" GB/s", " GB", 1)
    elif kind == "yaml":
        text = (
            text.replace("status:", "status: [", 1) if rng.random() < 0.5 else text.replace("status: [", "status:", 1)
        )
    path.write_text(text)
    if rng.random() < 0.5:  # sometimes an old mtime, so the cache's stat shortcut is exercised too
        stamp = rng.randint(1_000_000_000, 1_500_000_000)
        os.utime(path, (stamp, stamp))
    return f"{kind} {path.name}"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_equals_full_over_random_edits(tmp_path, seed):
    root = tmp_path / "kb"
    generate(root, 120, seed=seed, defects=0.1)
    rng = random.Random(seed)
    assert diagnostics(root, cached=True) == diagnostics(root, cached=False)
    for step in range(16):
        what = edit(root, rng)
        full = diagnostics(root, cached=False)
        incremental = diagnostics(root, cached=True)
        assert incremental == full, f"step {step}: {what}"
        assert diagnostics(root, cached=True) == full, f"step {step} (second cached run): {what}"


def test_named_file_check_reports_what_a_full_check_reports_for_it(tmp_path):
    root = tmp_path / "kb"
    generate(root, 120, seed=7, defects=0.0)
    diagnostics(root, cached=True)
    target = sorted((root / "records" / "accelerators").glob("*.md"))[0]
    target.write_text(target.read_text().replace("memory_bus_width: ", "memory_bus_width: 1", 1))
    full = [d for d in diagnostics(root, cached=False) if d[0] == target.relative_to(root).as_posix()]
    assert full and any(d[3] == "KB500" for d in full)
    cached = [d for d in diagnostics(root, cached=True) if d[0] == target.relative_to(root).as_posix()]
    assert cached == full


def build(root, out, fresh: bool):
    import shutil
    import subprocess

    from conftest import KB_SCRIPT

    if fresh:
        shutil.rmtree(root / ".kb-cache", ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    proc = subprocess.run(
        [KB_SCRIPT, "--root", str(root), "build", "--force", "--no-search", "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in out.rglob("*")
        if p.is_file() and p.name != ".kb-pages.json"
    }


@pytest.mark.parametrize("seed", [4, 5])
def test_incremental_build_equals_full_build_over_random_edits(tmp_path, seed):
    import shutil

    root, twin = tmp_path / "kb", tmp_path / "twin"
    generate(root, 80, seed=seed, defects=0.1)
    rng = random.Random(seed)
    build(root, tmp_path / "site", fresh=True)
    for step in range(8):
        what = edit(root, rng)
        incremental = build(root, tmp_path / "site", fresh=False)
        shutil.rmtree(twin, ignore_errors=True)
        shutil.copytree(root, twin, ignore=shutil.ignore_patterns(".kb-cache", "_build"))
        full = build(twin, tmp_path / "twin-site", fresh=True)
        assert incremental.keys() == full.keys(), f"step {step}: {what}"
        different = [page for page in full if incremental[page] != full[page]]
        assert different == [], f"step {step}: {what}: stale pages {different[:5]}"
