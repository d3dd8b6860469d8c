"""Test helpers: small corpora written in the test, checked by the real CLI entry point."""

from __future__ import annotations

import compileall
import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from kbtools.cli import main

REPO = Path(__file__).resolve().parent.parent

# The suite starts hundreds of kb processes, and each imports kb's modules afresh. Where
# PYTHONDONTWRITEBYTECODE is set (this project's machines set it) every one of them would compile kb's
# sources again, about 0.4 s a process: they are compiled once, at the start, and the processes read them.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Figures age (KB620 judges a price or a measurement against the day kb runs): the suite judges them against
# one fixed day, the day the corpus's time-bound records were last reviewed, so that no test passes today and
# fails next month with no change to kb or the records. The freshness tests set their own days; `kb check` run
# by hand judges the real one.
os.environ.setdefault("KB_TODAY", "2026-12-03")

# kb keeps a state directory per repository in the user's cache directory: the suite's hundreds of temporary
# repositories would leave one each in ~/.cache/kb. The suite has its own, absolute and outside every git work
# tree, removed at the end by the process that made it; kb processes the tests start inherit it, and a test that
# sets its own XDG_CACHE_HOME still has its own. pytest-xdist's workers share the one their controller made (they
# inherit its environment), so this repository's records are checked cold once a run, not once a worker: kb lets
# two processes share a store (test_incremental's two checks at once).
OWN_STATE = "KB_SUITE_STATE" not in os.environ
SUITE_STATE = os.environ.setdefault("KB_SUITE_STATE", tempfile.mkdtemp(prefix="kb-suite-state-"))
os.environ["XDG_CACHE_HOME"] = SUITE_STATE


def pytest_sessionstart(session) -> None:
    compileall.compile_dir(REPO / "kbtools", quiet=1)


def pytest_unconfigure(config) -> None:
    if OWN_STATE:
        shutil.rmtree(SUITE_STATE, ignore_errors=True)


def pytest_collection_modifyitems(items) -> None:
    """A test that drives Chromium is slow too: `pytest -m "not slow"`, the quick subset, leaves out both."""
    for item in items:
        if item.get_closest_marker("browser") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)


def signals_at_default(*signums: int):
    """A preexec_fn: the child starts with `signums` at their default action and unblocked, as a shell starts
    a foreground job, whatever this test process inherited. A suite started with `&` in a shell without job
    control runs with SIGINT ignored, and under `nohup` with SIGHUP ignored; a kb started from it would keep
    them ignored (the nohup convention kb honours), and a test's signal would be dropped as it is sent."""

    def reset() -> None:
        for signum in signums:
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signums)

    return reset


# the console script installed next to the interpreter running the tests
KB_SCRIPT = str(Path(sys.executable).parent / "kb")


# a source record as a file, for tests that lay out a knowledge base by hand (no KB fixture)
SOURCE_RECORD = (
    "---\nid: src-a\ntype: source\nname: A\nstatus: draft\nconfidence: 0.5\nupdated: 2026-11-29\n"
    "kind: docs\norigin: first-party\npublisher: Someone\nurl: https://example.org/a\n---\nA source.\n"
)


def run_kb(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`kb ARGS` run by kb's entry point in this process: its exit code and what it printed, as a finished
    process would give them. For tests where the process boundary is not what is tested: a kb process costs
    about 0.4 s of interpreter start and imports before it does anything. `env` is laid over this process's
    environment for the call; `cwd` is the directory the call runs in."""
    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors, as the console script exits with them
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["kb", *args], code, out.getvalue(), err.getvalue())


# an accelerator record's fields for tests that need one whose figures all check: the bandwidth its bus gives
# (6144 pins x 6.25 Gb/s), an FP8 peak, and why the other precisions are absent
TEST_GPU = """
    vendor: V
    memory_bus_width: 6144
    memory_pin_rate: 6.25 Gb/s
    memory_bandwidth: 4.8 TB/s
    peak_fp8_dense: 1979 TFLOP/s
    not_published:
      peak_fp4_dense: the test part has no FP4 units in its made-up datasheet
      peak_bf16_dense: the made-up datasheet lists FP8 only, as some vendor tables do
      peak_int8_dense: the made-up datasheet lists FP8 only, as some vendor tables do
"""


# a DeepSeek-V3-shaped MLA model record's fields (61 layers of a 512 + 64 latent): its KV is worked by hand in tests
TEST_MLA_MODEL = """
    architecture: moe
    attention: mla
    params_active: 37 Gparam
    num_layers: 61
    kv_lora_rank: 512
    qk_rope_head_dim: 64
    kv_dtype_size: 2 B
"""


@pytest.fixture
def own_state(tmp_path, monkeypatch):
    """A test's own kb state directory and the real day (no KB_TODAY): for tests of what kb says on a given day."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("KB_TODAY", raising=False)


def check_on(kb, *args: str, today: str | None = "2026-06-01") -> Result:
    """`kb check ARGS` on the day `today` (KB_TODAY; None: unset, the UTC date)."""
    env = {"KB_TODAY": today} if today is not None else {}
    done = run_kb("--root", str(kb.root), "check", *args, env=env)
    return Result(done.returncode, done.stdout, done.stderr)


@dataclass
class Result:
    exit_code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return [line for line in self.out.splitlines() if not line.startswith("checked ")]

    def codes(self) -> list[str]:
        return [line.split()[2] for line in self.lines]

    def find(self, code: str) -> list[str]:
        return [line for line in self.lines if f" {code} " in line]


class KB:
    """A knowledge-base repository in a temporary directory, with this repo's schemas."""

    def __init__(self, root: Path):
        self.root = root
        shutil.copytree(REPO / "schema", root / "schema")
        (root / "records").mkdir()

    def write(self, rel: str, text: str | bytes, dedent: bool = True) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(textwrap.dedent(text).lstrip("\n") if dedent else text, encoding="utf-8")
        return path

    def record(
        self, dir_: str, id_: str, type_: str, extra: str = "", body: str = "", sources: str = "[src-a]"
    ) -> Path:
        fields = f"id: {id_}\ntype: {type_}\nname: {id_} name\nstatus: draft\nconfidence: 0.5\nupdated: 2026-11-29\n"
        if type_ not in ("source", "hardware_parameter"):
            fields += f"sources: {sources}\n"
        text = "---\n" + fields + textwrap.dedent(extra).lstrip("\n") + "---\n" + textwrap.dedent(body).lstrip("\n")
        return self.write(f"records/{dir_}/{id_}.md", text, dedent=False)

    def source(self, id_: str = "src-a") -> Path:
        return self.record(
            "sources",
            id_,
            "source",
            f"kind: docs\norigin: first-party\npublisher: Someone\nurl: https://example.org/{id_}\n",
        )

    def run(self, *args: str) -> Result:
        done = run_kb("--root", str(self.root), *args)
        return Result(done.returncode, done.stdout, done.stderr)

    def check(self, *args: str) -> Result:
        return self.run("check", *args)

    def check_json(self, *args: str) -> dict:
        return json.loads(self.check("--format", "json", *args).out)


GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
}


def git(cwd, *args, env=None):
    """Run git in a test repository with a fixed identity."""
    import os
    import subprocess

    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=env or dict(os.environ, **GIT_ENV)
    )


@pytest.fixture
def kb(tmp_path) -> KB:
    return KB(tmp_path / "kb")


def kb_store(root: Path) -> Path:
    """Where kb keeps the per-stage cache of the knowledge base at `root` (kb's state directory, under this
    process's XDG_CACHE_HOME), as kb computes it."""
    from kbtools.state import state_dir

    return state_dir(root, create=True) / "check.sqlite"


@pytest.fixture(scope="session")
def records(tmp_path_factory):
    """Every record of the repository as `kb export --json` gives it, by key (plan_support.exported_records):
    exported once a worker, read and never changed by the tests that ask for it."""
    from plan_support import exported_records

    return exported_records(tmp_path_factory.mktemp("export"))
