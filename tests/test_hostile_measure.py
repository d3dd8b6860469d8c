"""`kb measure` against hostile input (issue 30): sizes past what the machine has, blocks past --max-bytes,
a stop signal mid-run, a --path no record may hold raw, and two runs writing at once."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import KB_SCRIPT, REPO, signals_at_default
from ruamel.yaml import YAML
from test_measure import ignored_in_this_process

from kbtools.authoring import measure
from kbtools.corpus import Settings
from kbtools.registry import load_registry

MiB = 1 << 20
QUICK = ["--max-seconds", "0.2", "--repetitions", "1", "--blocks", "4"]
EXABYTE_AND_2_64 = ["1 EB", str(1 << 64)]


def kb_run(root: Path, *args: str | bytes, **popen) -> subprocess.CompletedProcess:
    return subprocess.run([KB_SCRIPT, "--root", str(root), *args], capture_output=True, text=True, timeout=600, **popen)


def frontmatter(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8").split("---\n")[1])


def records(root: Path) -> list[Path]:
    return sorted((root / "records").rglob("*.md"))


@pytest.fixture(scope="module")
def with_models(tmp_path_factory) -> Path:
    """A copy of this repository's records and schemas: KV-shaped reads need a model record."""
    root = tmp_path_factory.mktemp("hostile-measure") / "kb"
    for part in ("records", "schema"):
        shutil.copytree(REPO / part, root / part)
    return root


@pytest.fixture
def at_most_256_mib_per_file():
    """Should the cap ever break, a file tier test writes 256 MiB and fails (EFBIG), not a disk's worth."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * MiB, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def mem_available() -> int:
    line = next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemAvailable:"))
    return int(line.split()[1]) * 1024


# ---------------------------------------------------------------- --max-bytes past what the machine has


@pytest.mark.parametrize("max_bytes", EXABYTE_AND_2_64)
def test_a_max_bytes_past_the_memory_available_is_lowered_with_a_note(kb, monkeypatch, max_bytes):
    """A machine with 64 MiB available: the memory figures use at most a quarter of it, say so on stderr
    and in their conditions, and the records check."""
    monkeypatch.setattr(measure, "memory_available", lambda: 64 * MiB, raising=False)
    run = kb.run("measure", "memory", "--max-bytes", max_bytes, *QUICK)
    assert run.exit_code == 0, run.err
    assert "Traceback" not in run.err and "KB900" not in run.err
    requested = 10**18 if max_bytes == "1 EB" else 1 << 64
    assert f"--max-bytes {requested:,} B is more than this machine has" in run.err, run.err
    assert f"at most {16 * MiB:,} B (a quarter of the memory available)" in run.err, run.err
    copies = sorted((kb.root / "records" / "measurements").glob("*-memory-copy-*.md"))
    assert len(copies) == 2
    for path in copies:
        conditions = frontmatter(path)["conditions"]
        per_process = int(re.search(r"(\d+) MiB copied per process per pass", conditions).group(1)) * MiB
        processes = int(m.group(1)) if (m := re.search(r"(\d+) processes", conditions)) else 1
        assert 2 * per_process * processes <= 64 * MiB  # source and destination, in every process
        assert "--max-bytes lowered to 16 MiB (a quarter of the memory available)" in conditions
    assert kb.check("--strict").exit_code == 0


@pytest.mark.parametrize("max_bytes", EXABYTE_AND_2_64)
def test_a_max_bytes_past_the_free_space_is_lowered_to_half_of_it(
    kb, tmp_path, monkeypatch, at_most_256_mib_per_file, max_bytes
):
    """The file tier's file: at most half the free space of --path's filesystem, never a full disk."""
    tier = tmp_path / "tier"
    tier.mkdir()
    monkeypatch.setattr(measure, "free_space", lambda directory: 64 * MiB, raising=False)
    run = kb.run("measure", "file", "--path", str(tier), "--max-bytes", max_bytes, *QUICK)
    assert run.exit_code == 0, run.err
    assert f"at most {32 * MiB:,} B (half the free space at {tier})" in run.err, run.err
    [sequential] = (kb.root / "records" / "measurements").glob("*-file-sequential-*.md")
    conditions = frontmatter(sequential)["conditions"]
    assert int(re.search(r"(\d+) MiB file read in", conditions).group(1)) * MiB <= 32 * MiB
    assert list(tier.iterdir()) == []
    assert kb.check("--strict").exit_code == 0


@pytest.mark.slow
def test_the_memory_this_machine_has_bounds_a_2_64_request(with_models):
    """No stand-in: on this machine, 2^64 bytes is lowered to under what /proc/meminfo says is available,
    which the refusal of a block past it names (so nothing is allocated to find out)."""
    before = records(with_models)
    run = kb_run(
        with_models, "measure", "memory", "kv", "--kv-model", "models/llama-3-1-8b",
        "--max-bytes", str(1 << 64), "--block-tokens", str(10**13),
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and "KB900" not in run.stderr
    bound = re.search(r"larger than --max-bytes ([\d,]+) B", run.stderr)
    assert bound, run.stderr
    assert int(bound.group(1).replace(",", "")) <= mem_available()
    assert "memory copy" not in run.stderr
    assert records(with_models) == before


# ---------------------------------------------------------------- a block larger than --max-bytes


@pytest.mark.parametrize("tiers", [["memory", "kv"], ["file", "kv"]])
def test_a_block_larger_than_max_bytes_is_refused_before_anything_is_measured(with_models, tmp_path, tiers):
    """16 tokens of Llama 3.1 8B's KV are 2,097,152 B: under a 1 MiB bound kb says both figures and stops."""
    tier = tmp_path / "tier"
    tier.mkdir()
    before = records(with_models)
    run = kb_run(
        with_models, "measure", *tiers, "--path", str(tier), "--kv-model", "models/llama-3-1-8b",
        "--max-bytes", "1 MiB", *QUICK,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert "a block of 2,097,152 B (16 block tokens × 131,072 B of KV per token)" in run.stderr, run.stderr
    assert "is larger than --max-bytes 1,048,576 B" in run.stderr, run.stderr
    assert "memory copy" not in run.stderr and "writing a" not in run.stderr  # nothing measured first
    assert "Traceback" not in run.stderr
    assert records(with_models) == before
    assert list(tier.iterdir()) == []


# ---------------------------------------------------------------- a stop signal mid-run


@pytest.mark.parametrize(
    "signum, suite",
    [(signal.SIGTERM, "as inherited"), (signal.SIGHUP, "as inherited"), (signal.SIGHUP, "ignored")],
)
def test_a_stop_signal_while_the_file_exists_removes_it(kb, tmp_path, signum, suite):
    """kb's file in --path carries kb's mark; a SIGTERM or SIGHUP once it exists removes it before kb
    dies of the signal, and no record is written. kb is started as a foreground job, whatever this process
    has: with the signal ignored here, as under nohup, it still reaches kb."""
    tier = tmp_path / "tier"
    tier.mkdir()
    with ignored_in_this_process(signum) if suite == "ignored" else contextlib.nullcontext():
        run = subprocess.Popen(
            [KB_SCRIPT, "--root", str(kb.root), "measure", "file", "--path", str(tier), "--max-bytes", "1 GiB"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=signals_at_default(signum),
        )
    try:
        seen: list[Path] = []
        for _ in range(1200):  # until kb's file exists (at most about a minute)
            seen = list(tier.iterdir())
            if seen or run.poll() is not None:
                break
            time.sleep(0.05)
        assert seen, "kb never created its file"
        assert [p.name.startswith(".kb-measure-") for p in seen] == [True]
        run.send_signal(signum)
        _, err = run.communicate(timeout=120)
    finally:
        run.kill()
    assert run.returncode == -signum, err
    assert "Traceback" not in err
    assert list(tier.iterdir()) == []
    assert records(kb.root) == []


def blocked_stop_signals() -> set[int]:
    """The stop signals this thread has blocked."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, ()) & set(measure.STOP_SIGNALS)


@pytest.fixture
def mask_put_back():
    """This thread's signal mask as it was after the test, even one that fails leaving it changed: every
    process the suite starts later would inherit it."""
    setmask = signal.pthread_sigmask  # the real one, whatever the test puts in its place
    before = setmask(signal.SIG_BLOCK, ())
    yield
    setmask(signal.SIG_SETMASK, before)


def test_a_stop_that_comes_as_the_signals_are_held_leaves_none_of_them_blocked(tmp_path, monkeypatch, mask_put_back):
    """CPython runs a pending handler inside pthread_sigmask, once the mask has changed; made to happen here on
    purpose. The stop reaches the caller, nothing is left under --path, and the stop signals are not left
    blocked: else a SIGTERM would no longer end the process, and every process it starts (a test's kb
    included) would inherit them blocked."""
    assert blocked_stop_signals() == set()
    setmask = signal.pthread_sigmask
    stops: list[int] = []

    def a_stop_arrives_as_they_are_blocked(how, signums):
        before = setmask(how, signums)
        if how == signal.SIG_BLOCK and set(signums) and not stops:
            stops.append(signal.SIGTERM)
            raise measure.Stopped(signal.SIGTERM)
        return before

    monkeypatch.setattr(signal, "pthread_sigmask", a_stop_arrives_as_they_are_blocked)
    with pytest.raises(measure.Stopped):
        measure.FileTier(tmp_path, measure.ALIGN)
    assert stops == [signal.SIGTERM]  # the stop came where it was meant to
    assert blocked_stop_signals() == set()
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def sigterm_handled_here():
    """SIGTERM handled in this process by a Python function that does nothing: kb's stop handler replaces it
    for its block and puts it back, and neither ends the test process."""
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_a_stop_that_another_thread_receives_waits_for_the_end_of_the_held_block(sigterm_handled_here, mask_put_back):
    """A mask covers one thread: with another thread alive, the kernel gives it a SIGTERM sent while the main
    thread holds the stop signals, and CPython runs the handler in the main thread, inside the held block. kb's
    handler waits for the block's end, so the file or record the block makes is always noted first."""
    unblocked, done = threading.Event(), threading.Event()

    def bystander() -> None:  # a thread that takes the stop signals, as CUDA's or an embedding program's would
        signal.pthread_sigmask(signal.SIG_UNBLOCK, measure.STOP_SIGNALS)
        unblocked.set()
        done.wait(timeout=120)

    thread = threading.Thread(target=bystander)
    thread.start()
    come, tell = os.pipe()
    os.set_blocking(tell, False)
    previous_wakeup = signal.set_wakeup_fd(tell)  # CPython writes each signal's number there as it comes
    steps: list[str] = []
    try:
        assert unblocked.wait(timeout=60)
        with pytest.raises(measure.Stopped) as stopped:
            with measure.stop_signals_raise(), measure.signals_held():
                os.kill(os.getpid(), signal.SIGTERM)
                assert select.select([come], [], [], 60)[0], "the SIGTERM never came"
                assert os.read(come, 1) == bytes([signal.SIGTERM])
                signal.pthread_sigmask(signal.SIG_BLOCK, ())  # runs the pending handler here, as any call may
                steps.append("the held block ran to its end")
    finally:
        signal.set_wakeup_fd(previous_wakeup)
        done.set()
        thread.join()
        os.close(come)
        os.close(tell)
    assert steps == ["the held block ran to its end"]
    assert stopped.value.signum == signal.SIGTERM  # raised as the block ended
    assert blocked_stop_signals() == set()


def test_an_interrupt_while_the_records_are_written_leaves_none_of_the_run(kb, monkeypatch):
    """A stop between two records: the run's records go with it, so no measurement cites a source that
    was never written."""
    settings = Settings(root=kb.root)
    registry = load_registry(settings.schema_path, settings.root)
    made = measure.record_text
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return made(*args, **kwargs)

    monkeypatch.setattr(measure, "record_text", interrupted)
    with pytest.raises(KeyboardInterrupt):
        measure.write_records(settings, registry, figures(), dt.datetime(2026, 12, 1, tzinfo=dt.UTC))
    assert records(kb.root) == []


# ---------------------------------------------------------------- a --path no record may hold raw


@pytest.mark.parametrize(
    "name, shown",
    [
        (b"new\nline", "new\\nline"),
        (b"del\x7fete", "del\\x7fete"),
        (b"not-utf8-\xff\xfe", "not-utf8-\\xff\\xfe"),
        (b"c1-\xc2\x9b-esc\x1b[31m", "c1-\\x9b-esc\\x1b[31m"),
        (b"tab\tand\rreturn", "tab\\tand\\rreturn"),
    ],
)
def test_a_path_with_control_or_undecodable_bytes_is_recorded_escaped(kb, tmp_path, name, shown):
    tier = os.fsencode(tmp_path) + b"/" + name
    os.mkdir(tier)
    run = kb_run(kb.root, "measure", "file", "--path", tier, "--max-bytes", "8 MiB", *QUICK)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "KB900" not in run.stderr
    check = kb_run(kb.root, "check", "--strict")
    assert check.returncode == 0, check.stdout[-2000:]
    written = records(kb.root)
    assert len(written) == 2  # the run's source and its sequential read
    for path in written:
        for value in (v for v in frontmatter(path).values() if isinstance(v, str)):
            assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]", value), (path, value)
    [sequential] = (kb.root / "records" / "measurements").glob("*-file-sequential-*.md")
    assert frontmatter(sequential)["name"].startswith(f"Sequential file read at {tmp_path}/{shown} (")
    assert os.listdir(tier) == []


# ---------------------------------------------------------------- two runs at once


def figures() -> list[measure.Figure]:
    return [
        measure.Figure("memory-copy-1-core", "Host memory copy", "host memory copy bandwidth", [1e9, 2e9]),
        measure.Figure("memory-copy-all-core", "Host memory copy, all", "host memory copy bandwidth", [3e9]),
    ]


def test_a_run_writing_while_another_writes_takes_the_next_ids(kb, monkeypatch):
    """The worst interleaving, made on purpose: a second run with the same timestamp writes all of its
    records after the first has chosen its first record's id and before it creates it. Both runs' records
    are whole and distinct, each citing its own source, and they check."""
    settings = Settings(root=kb.root)
    registry = load_registry(settings.schema_path, settings.root)
    now = dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.UTC)
    made = measure.record_text
    rival: list[list[Path]] = []

    def interleaved(*args, **kwargs):
        if not rival:
            rival.append([])  # the rival's own record_text calls come back here: run it once
            rival[0] = measure.write_records(settings, registry, figures(), now)
        return made(*args, **kwargs)

    monkeypatch.setattr(measure, "record_text", interleaved)
    first = measure.write_records(settings, registry, figures(), now)
    assert len(first) == len(rival[0]) == 3
    assert len(set(first) | set(rival[0])) == 6 and len(records(kb.root)) == 6
    for run in (first, rival[0]):
        source = frontmatter(run[0])["id"]
        for path in run[1:]:
            assert frontmatter(path)["sources"] == [source]
            assert f"measurements/{path.stem}" in run[0].read_text()
    assert any(p.stem.endswith("-2") for p in first[1:])
    check = kb.check("--strict")
    assert check.exit_code == 0, check.out


def test_two_runs_started_together_both_write_records_that_check(kb):
    args = [KB_SCRIPT, "--root", str(kb.root), "measure", "memory", "--max-bytes", "8 MiB", *QUICK]
    runs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in outputs]
    written = [w for out, _ in outputs for w in re.findall(r"^wrote (\S+)$", out, re.M)]
    assert len(written) == len(set(written)) == 6
    assert len(records(kb.root)) == 6
    assert kb_run(kb.root, "check", "--strict").returncode == 0


def test_a_host_name_outside_the_id_alphabet_still_makes_valid_ids(kb, monkeypatch):
    """The machine's name goes into the ids: only its ASCII letters and digits, as ids.py allows."""
    monkeypatch.setattr(measure.platform, "node", lambda: "Wörk_Station.LOCAL")
    settings = Settings(root=kb.root)
    registry = load_registry(settings.schema_path, settings.root)
    written = measure.write_records(settings, registry, figures(), dt.datetime(2026, 12, 1, tzinfo=dt.UTC))
    assert written[0].name == "kb-measure-work-station-local-20261201.md"
    check = kb.check("--strict")
    assert check.exit_code == 0, check.out
