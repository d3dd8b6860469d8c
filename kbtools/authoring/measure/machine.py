"""What every measurer shares: the request and the job made of it, the bounds, a figure, what this machine
has (memory available, a directory's free space) and the caps --max-bytes is lowered to, and repetitions."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from kbtools.authoring.new import AuthoringError

ALIGN = 4096  # O_DIRECT wants buffers, offsets and lengths aligned to the device's block; 4 KiB serves all
MiB = 1 << 20
TIERS = ("memory", "file", "kv", "gpu")


@dataclass
class Bounds:
    bytes: int = 256 * MiB  # the largest buffer or file one measurement uses
    seconds: float = 20.0  # the longest one measurement runs (repetitions stop early past it)
    repetitions: int = 5


@dataclass
class Figure:
    """One measured figure and everything a record needs to say about it."""

    slug: str  # the record id's tail
    name: str
    metric: str
    samples: list[float]  # bytes per second, one per repetition
    conditions: list[str] = field(default_factory=list)
    tier: str | None = None  # the storage tier's id the figure is of, when the user named it
    shape: str | None = None  # what a tier's x-kb-measured-as field may cite it as (kv-prefix, kv-scattered)
    key: str | None = None  # dir/id of the record written for it

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.samples), max(self.samples)


@dataclass
class Request:
    tiers: set[str]  # empty: every one that applies
    path: Path | None
    kv_model: str | None
    block_tokens: int
    blocks: int
    bounds: Bounds
    out: Path | None  # None: the measurement type's directory
    file_tier: str | None = None
    memory_tier: str | None = None

    def asked(self) -> set[str]:
        """The tiers this run measures: the ones named, else memory, KV-shaped reads and a GPU, and the
        file tier when --path names a directory."""
        return self.tiers or {"memory", "kv", "gpu"} | ({"file"} if self.path else set())


@dataclass(frozen=True)
class Job:
    """What a run measures, settled from the request before anything is: the tiers, what --max-bytes comes
    to for each kind of buffer, the KV block, and the storage tier records the figures are of."""

    tiers: frozenset[str]
    bounds: Bounds  # as asked: the file tier's reads repeat within these
    memory: Cap  # every buffer held in memory, the GPU's host buffers among them
    file: Cap | None  # the file kb writes under `path`, when the file tier is measured
    path: Path | None
    block: int | None  # a KV block's bytes, when KV-shaped reads are measured
    blocks: int
    memory_tier: str | None = None  # the id of the record --memory-tier names
    file_tier: str | None = None  # the id of the record --tier names

    @property
    def in_memory(self) -> Bounds:
        return replace(self.bounds, bytes=self.memory.bytes)


class Measurer(Protocol):
    """One tier kb measure measures. `measure()` asks each in turn (MEASURERS), within one stop_signals_raise
    block: anything a measurer makes is removed in a `finally` of its own."""

    name: str  # what kb calls its figures when it says it skips them

    def skipped(self, request: Request) -> str | None:
        """Why this machine cannot measure what the request asks of it (said, and the run goes on); None when
        it can, or when the request asks nothing of it. A request it cannot take is refused before anything
        is measured, not skipped."""
        ...

    def figures(self, job: Job, say: Callable[[str], None]) -> list[Figure]:
        """The figures the job asks of it, in the order their records are written ([] when none)."""
        ...


def repeat(run: Callable[[], float], bounds: Bounds, moved: int) -> list[float]:
    """Bytes per second of each repetition of `run` (which returns the seconds it took to move `moved` bytes)."""
    samples: list[float] = []
    started = time.monotonic()
    while len(samples) < bounds.repetitions and (not samples or time.monotonic() - started < bounds.seconds):
        samples.append(moved / max(run(), 1e-9))
    return samples


def read_text(path: str) -> str:
    """A system file's text (/proc, /sys): '' where there is none to read."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# ---------------------------------------------------------------- what this machine has


MEMORY_SHARE = 4  # the memory figures use at most a quarter of the memory available: the KV reads hold a
# pool, the blocks and a flush buffer at once, the GPU ones a pinned and a pageable copy, and the rest of
# the machine goes on running beside them
DISK_SHARE = 2  # the file is at most half the free space, so measuring never fills the disk under others


@dataclass
class Cap:
    """What --max-bytes comes to for one kind of buffer on this machine."""

    bytes: int
    why: str | None = None  # what the machine has, when that is below --max-bytes (which is then lowered)


def memory_available() -> int | None:
    """Bytes of memory this machine can give without swapping (MemAvailable, else its free pages); None
    where it does not say."""
    for line in read_text("/proc/meminfo").splitlines():
        fields = line.split()
        if fields[:1] == ["MemAvailable:"] and len(fields) > 1 and fields[1].isdigit():
            return int(fields[1]) * 1024
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def free_space(directory: Path) -> int:
    """Bytes an unprivileged writer may still put on `directory`'s filesystem."""
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


# The caps take what they ask of the machine as an argument: measure() passes the package's own names, so
# that a stand-in for this machine (a test's) put in kbtools.authoring.measure reaches them.


def memory_cap(requested: int, available: Callable[[], int | None] = memory_available) -> Cap:
    memory = available()
    if memory is None:  # nothing to go by: no more than the default bound
        limit, why = Bounds.bytes, "the default, as this machine does not say how much memory is available"
    else:
        limit, why = max(MiB, memory // MEMORY_SHARE), "a quarter of the memory available"
    return Cap(requested) if requested <= limit else Cap(limit, why)


def file_cap(requested: int, directory: Path, free: Callable[[Path], int] = free_space) -> Cap:
    try:
        space = free(directory)
    except OSError as exc:
        raise AuthoringError(f"--path {directory}: cannot tell its free space ({exc.strerror or exc})") from None
    limit = space // DISK_SHARE // ALIGN * ALIGN
    if limit < ALIGN:
        raise AuthoringError(f"--path {directory} has {space:,} B free: too little for kb's file to read back")
    return Cap(requested) if requested <= limit else Cap(limit, f"half the free space at {directory}")


def lowered(cap: Cap) -> list[str]:
    """The condition a figure held to `cap` carries when --max-bytes was lowered for it; none when not."""
    return [f"--max-bytes lowered to {cap.bytes / MiB:,.0f} MiB ({cap.why})"] if cap.why else []


def refuse_block(block: int, block_tokens: int, per_token: float, requested: int, caps: list[Cap]) -> None:
    """Refuse before anything is allocated a KV block that would not fit the tightest bound it is held in
    (memory always; the file too for a file tier's KV reads)."""
    tightest = min(caps, key=lambda cap: cap.bytes)
    if block <= tightest.bytes:
        return
    size = f"a block of {block:,} B ({block_tokens:,} block tokens × {per_token:,.0f} B of KV per token)"
    if tightest.why:
        raise AuthoringError(
            f"{size} is larger than --max-bytes {tightest.bytes:,} B (lowered from {requested:,} B to "
            f"{tightest.why}): nothing measured; lower --block-tokens"
        )
    raise AuthoringError(
        f"{size} is larger than --max-bytes {tightest.bytes:,} B: nothing measured; raise --max-bytes or lower "
        "--block-tokens"
    )
