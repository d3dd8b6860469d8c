"""`kb measure` on small sizes: records that pass kb check, bounded, cleaned up, never overwriting."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import KB_SCRIPT, REPO, signals_at_default
from site_support import PageWatch, browser, rendered_from, serve

from kbtools import __version__

SMALL = ["--max-bytes", "8 MiB", "--max-seconds", "1", "--repetitions", "2", "--blocks", "4"]


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


@pytest.mark.slow
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
        f"kb {__version__}",
    ):
        assert part in conditions, (part, conditions)
    assert "O_DIRECT" in conditions or "posix_fadvise" in conditions
    memory = (root / next(w for w in written if "memory-kv-prefix" in w)).read_text()
    assert "caches flushed before each repetition" in memory or "caches partly flushed" in memory
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
        (["--max-bytes", "0", "memory"], "--max-bytes must be at least 1 B, not 0 B"),
        (["--max-bytes=-1 MiB", "memory"], "--max-bytes must be at least 1 B, not -1,048,576 B"),
        (["--repetitions", "0", "memory"], "--repetitions must be at least 1, not 0"),
        (["--blocks", "-3", "memory"], "--blocks must be at least 1, not -3"),
        *(
            (
                [f"--max-seconds={seconds}", "memory"],
                f"--max-seconds must be a number of seconds above 0 and at most 86,400 (a day), not {shown}",
            )
            for seconds, shown in (
                ("nan", "nan"),
                ("inf", "inf"),
                ("-inf", "-inf"),
                ("1e300", "1e+300"),
                ("0", "0"),
                ("-1", "-1"),
            )
        ),
        (["kv", "--kv-model", "models/nothing"], "no kv_bytes_per_token for 'models/nothing'"),
    ],
)
def test_refusals_write_nothing(measured, args, message):
    root, _, _ = measured
    before = sorted((root / "records").rglob("*.md"))
    run = kb(root, "measure", *args)
    assert run.returncode == 2 and message in run.stderr, run.stderr
    assert "KB900" not in run.stderr and "memory copy" not in run.stderr  # refused before anything is measured
    assert sorted((root / "records").rglob("*.md")) == before


@pytest.mark.slow
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


@pytest.mark.browser
def test_a_tier_citing_its_measurements_is_priced_with_them_beside_its_nominal_figure(measured, tmp_path):
    """The planner's loop: kb measure names the fields to add; once the tier cites the run, the seed's
    table shows the hit at the measured prefix and scattered reads next to the nominal one, and the
    tiers nobody measured say so."""
    root, tier, _ = measured
    nvme, model = ["--tier", "storage-tiers/local-nvme-gen5"], ["--kv-model", "models/deepseek-v3"]
    run = kb(root, "measure", "file", "kv", "--path", str(tier), *nvme, *model, *SMALL)
    assert run.returncode == 0, run.stderr
    cite = re.findall(r"^  (local_(?:prefix|scattered)_read): (measurements/\S+)$", run.stdout, re.M)
    assert [field for field, _ in cite] == ["local_prefix_read", "local_scattered_read"], run.stdout
    assert "add to records/storage-tiers/local-nvme-gen5.md:" in run.stdout
    record = root / "records" / "storage-tiers" / "local-nvme-gen5.md"
    head, sep, rest = record.read_text().partition("\n---\n")
    record.write_text(head + "".join(f"\n{f}: {k}" for f, k in cite) + sep + rest)
    assert kb(root, "check", "--strict").returncode == 0

    measured_gbps = [
        float(re.search(r"^  value: ([0-9.e+-]+) GB/s$", (root / "records" / f"{k}.md").read_text(), re.M).group(1))
        for _, k in cite
    ]
    explained = kb(root, "explain", "flops/eng-profile-kv-tiering-moves-flops-to-bytes.hit_path_bytes").stdout
    hit_bytes_gb = float(re.search(r"= ([0-9.]+) GB", explained).group(1))

    site = rendered_from(root, tmp_path / "site", ["flops/eng-profile-kv-tiering-moves-flops-to-bytes"])
    page = (site / "flops" / "eng-profile-kv-tiering-moves-flops-to-bytes.html").read_text()
    table = page[page.index('<div class="cost" id="v-hit_path_time"') :]
    table = table[: table.index("</table>")]
    rows = {
        re.sub(r"<[^>]+>", "", cells[0]).strip(): [re.sub(r"<[^>]+>|\s+", " ", c).strip() for c in cells[1:]]
        for cells in (
            re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S) for tr in re.findall(r"<tr id=.*?</tr>", table, re.S)
        )
    }
    nvme = rows["Local NVMe SSD, PCIe Gen5"]
    assert len(nvme) == 3, nvme  # nominal, measured prefix, measured scattered
    shown = [float(re.match(r"([0-9,.]+) ms", cell).group(1).replace(",", "")) for cell in nvme]
    for cell, gbps in zip(shown[1:], measured_gbps, strict=True):
        assert cell == pytest.approx(hit_bytes_gb / gbps * 1000, rel=2e-3)
    assert rows["Local NVMe SSD, PCIe Gen4"][1:] == ["not given", "not given"]

    # the page's calculator leaves out the same rows and gives the same figures, in Chromium
    with serve(site) as url, browser() as chromium:
        watch = PageWatch(chromium.new_context())
        watch.page.goto(url + "flops/eng-profile-kv-tiering-moves-flops-to-bytes.html")
        for name, expected in zip(("hit_path_time_measured", "scattered_hit_time_measured"), shown[1:], strict=True):
            cells = watch.page.locator(f"tr[data-cost={name}] td.calc-value")
            assert cells.count() == 1  # one tier measured, one row
            assert float(cells.inner_text().split()[0].replace(",", "")) == pytest.approx(expected, rel=2e-3)
        assert watch.page.locator(".calc-error").count() == 0 and watch.problems == []


def test_gpu_copies_where_a_device_is_present(measured):
    """On a machine with a CUDA device and CuPy (the gpu extra): five copy figures that check, and the
    KV-shaped host-to-device reads a host-DRAM tier is priced with."""
    from kbtools.authoring.measure import gpu_skipped

    why = gpu_skipped()
    if why:
        pytest.skip(f"the GPU path needs a device: {why}")
    root, _, _ = measured
    run = kb(root, "measure", "gpu", *SMALL)
    assert run.returncode == 0, run.stderr
    written = re.findall(r"^wrote (records/measurements/\S+)$", run.stdout, re.M)
    for kind in ("gpu-h2d-pinned", "gpu-h2d-pageable", "gpu-d2h-pinned", "gpu-d2h-pageable", "gpu-d2d"):
        assert any(kind in w for w in written), (kind, written)
    assert all("timed to its synchronize" in (root / w).read_text() for w in written)
    dram, model = ["--memory-tier", "storage-tiers/host-dram-pcie5"], ["--kv-model", "models/deepseek-v3"]
    kv = kb(root, "measure", "gpu", "kv", *model, *dram, *SMALL)
    assert kv.returncode == 0, kv.stderr
    assert re.search(r"^  local_prefix_read: measurements/\S+-gpu-kv-prefix-\d{8}", kv.stdout, re.M), kv.stdout
    assert re.search(r"^  local_scattered_read: measurements/\S+-gpu-kv-scattered-\d{8}", kv.stdout, re.M), kv.stdout
    assert kb(root, "check", "--strict").returncode == 0


def test_gpu_alone_without_a_device_says_why_and_writes_nothing(measured):
    from kbtools.authoring.measure import gpu_skipped

    why = gpu_skipped()
    if not why:
        pytest.skip("a CUDA device is present: the GPU path is measured instead")
    root, _, _ = measured
    before = sorted((root / "records").rglob("*.md"))
    run = kb(root, "measure", "gpu", *SMALL)
    assert run.returncode == 2
    assert f"GPU copies skipped: {why}" in run.stderr and "nothing measured: GPU copies skipped" in run.stderr
    assert sorted((root / "records").rglob("*.md")) == before


@contextlib.contextmanager
def ignored_in_this_process(signum: int) -> Iterator[None]:
    """`signum` ignored by the test process, as a suite started with `&` has SIGINT and one started under nohup
    SIGHUP: what a child inherits unless it is started as a shell starts a foreground job."""
    previous = signal.signal(signum, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signum, previous)


@pytest.fixture(params=["as inherited", "ignored"])
def suite_sigint(request) -> Iterator[None]:
    """The Ctrl-C test run with this process's SIGINT as the suite has it, and ignored whatever that is."""
    with ignored_in_this_process(signal.SIGINT) if request.param == "ignored" else contextlib.nullcontext():
        yield


def test_ctrl_c_while_the_file_is_written_leaves_nothing_behind(measured, tmp_path, suite_sigint):
    root, _, _ = measured
    tier = tmp_path / "tier"
    tier.mkdir()
    before = sorted((root / "records").rglob("*.md"))
    run = subprocess.Popen(
        [KB_SCRIPT, "--root", str(root), "measure", "file", "--path", str(tier), "--max-bytes", "1 GiB"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, which gets the Ctrl-C, as a terminal's foreground group does
        preexec_fn=signals_at_default(signal.SIGINT),  # and SIGINT as a foreground job has it, whatever the suite has
    )
    try:
        for _ in range(600):  # until kb has started writing its file (at most a minute)
            if list(tier.iterdir()):
                break
            time.sleep(0.1)
        assert list(tier.iterdir()), "kb never started writing"
        os.killpg(run.pid, signal.SIGINT)
        _, err = run.communicate(timeout=120)
    finally:
        run.kill()
    assert run.returncode == 130, err
    assert "writing a 1024 MiB file to read back" in err
    assert list(tier.iterdir()) == []
    assert sorted((root / "records").rglob("*.md")) == before


def test_host_memory_figures_name_a_dram_tier_but_are_not_offered_to_price_it(measured):
    """A host memcpy is not the DMA path a GPU reads host DRAM over: kb links the figures to the tier
    and says why it does not offer them as the tier's prefix read."""
    root, _, _ = measured
    dram, model = ["--memory-tier", "storage-tiers/host-dram-pcie5"], ["--kv-model", "models/llama-3-1-8b"]
    run = kb(root, "measure", "memory", "kv", *model, *dram, *SMALL)
    assert run.returncode == 0, run.stderr
    written = re.findall(r"^wrote (records/measurements/\S+)$", run.stdout, re.M)
    assert written and all("storage_tiers: [host-dram-pcie5]" in (root / w).read_text() for w in written)
    assert "local_prefix_read" not in run.stdout
    assert "do not price it: a hit served from host memory crosses the GPU's link" in run.stderr


@pytest.mark.slow
def test_a_directory_whose_name_has_quotes_gives_records_that_check(measured, tmp_path):
    """The path goes into a record's name and conditions: written as YAML strings, not pasted in quotes."""
    root, _, _ = measured
    tier = tmp_path / 'a "quoted" \\ dir'
    tier.mkdir()
    run = kb(root, "measure", "file", "--path", str(tier), *SMALL)
    assert run.returncode == 0, run.stderr
    check = kb(root, "check", "--strict")
    assert check.returncode == 0, check.stdout[-2000:]
    from ruamel.yaml import YAML

    written = re.findall(r"^wrote (records/measurements/\S+)$", run.stdout, re.M)
    data = YAML(typ="safe").load((root / written[0]).read_text().split("---\n")[1])
    assert data["name"].startswith(f"Sequential file read at {tier} (") and f"at {tier}" in data["metric"]


def test_max_bytes_takes_a_unit_and_refuses_a_wrong_one(measured):
    root, _, _ = measured
    run = kb(root, "measure", "memory", "--max-bytes", "3 s")
    assert run.returncode == 2 and "--max-bytes: 3 s is time, expected information" in run.stderr
