"""`kb measure` on small sizes: records that pass kb check, bounded, cleaned up, never overwriting."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import KB_SCRIPT, REPO

SMALL = ["--max-bytes", str(8 << 20), "--max-seconds", "1", "--repetitions", "2", "--blocks", "4"]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    root = tmp_path_factory.mktemp("measure") / "kb"
    for part in ("records", "schema"):
        shutil.copytree(REPO / part, root / part)
    tier = root.parent / "tier"
    tier.mkdir()
    run = kb(root, "measure", "--path", str(tier), "--kv-model", "models/llama-3-1-8b", *SMALL)
    return root, tier, run


def kb(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([KB_SCRIPT, "--root", str(root), *args], capture_output=True, text=True, timeout=600)


def test_memory_file_and_kv_shaped_figures_become_records_that_check(measured):
    root, tier, run = measured
    assert run.returncode == 0, run.stderr
    written = re.findall(r"^wrote (records/\S+)$", run.stdout, re.M)
    kinds = [
        "memory-copy-1-core",
        "memory-copy-all-core",
        "memory-kv-prefix",
        "memory-kv-scattered",
        "file-sequential",
        "file-kv-prefix",
        "file-kv-scattered",
    ]
    for kind in kinds:
        assert any(kind in w for w in written), (kind, written)
    assert any(w.startswith("records/sources/kb-measure-") for w in written)
    check = kb(root, "check", "--strict")
    assert check.returncode == 0, check.stdout[-3000:]
    scattered = next(root / w for w in written if "file-kv-scattered" in w)
    text = scattered.read_text()
    assert "basis: measured" in text and "status: draft" in text and "measured_by: local" in text
    assert re.search(r"^  value: [0-9.]+ GB/s$", text, re.M)
    conditions = re.search(r'^conditions: "(.*)"$', text, re.M).group(1)
    for part in (
        "cores",
        "GiB of memory",
        "Linux",
        "mounted at",
        "blocks of 2,097,152 B",
        "2 repetitions",
        "median",
        "kb 0.1.0",
    ):
        assert part in conditions, (part, conditions)
    assert "O_DIRECT" in conditions or "posix_fadvise" in conditions
    assert list(tier.iterdir()) == []  # the file kb read back is gone
    assert "GPU copies skipped:" in run.stderr or "GPU copies:" in run.stderr


def test_a_second_run_never_replaces_the_first(measured):
    root, tier, first = measured
    before = {p: p.read_bytes() for p in (root / "records" / "measurements").glob("*.md")}
    again = kb(root, "measure", "memory", *SMALL)
    assert again.returncode == 0, again.stderr
    assert all(p.read_bytes() == b for p, b in before.items())
    assert re.search(r"^wrote records/measurements/\S+-memory-copy-1-core-\d{8}-2\.md$", again.stdout, re.M)


@pytest.mark.parametrize(
    "args, message",
    [
        (["file"], "the file tier needs --path DIR"),
        (["--path", "/nonexistent-dir-kb", "file"], "is not a directory"),
        (["disk"], "no tier disk"),
        (["--out", "/tmp/elsewhere", "memory"], "is not the measurements directory"),
        (["--max-bytes", "0", "memory"], "must be positive"),
        (["kv", "--kv-model", "models/nothing"], "no kv_bytes_per_token for 'models/nothing'"),
    ],
)
def test_refusals_write_nothing(measured, args, message):
    root, _, _ = measured
    before = sorted((root / "records").rglob("*.md"))
    run = kb(root, "measure", *args)
    assert run.returncode == 2 and message in run.stderr, run.stderr
    assert sorted((root / "records").rglob("*.md")) == before


def test_figures_link_the_storage_tier_they_measure(measured):
    """--tier names the tier --path is on: the file figures link it, so its page lists them (backlinks)."""
    root, tier, _ = measured
    run = kb(root, "measure", "file", "--path", str(tier), "--tier", "storage-tiers/local-nvme-gen5", *SMALL)
    assert run.returncode == 0, run.stderr
    written = re.findall(r"^wrote (records/measurements/\S+)$", run.stdout, re.M)
    assert written and all("storage_tiers: [local-nvme-gen5]" in (root / w).read_text() for w in written)
    assert kb(root, "check", "--strict").returncode == 0
    wrong = kb(root, "measure", "file", "--path", str(tier), "--tier", "models/llama-3-1-8b", *SMALL)
    assert wrong.returncode == 2 and "no storage tier 'models/llama-3-1-8b'" in wrong.stderr
