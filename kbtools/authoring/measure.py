"""`kb measure`: this machine's own tier bandwidths, sequential and KV-shaped, written as measurement records.

What is measured, each within a size and a time bound:

- memory: copy bandwidth with one process and with one per core (each byte counted once: bytes copied
  per second);
- a file tier at a directory the user names: a sequential read of a file kb writes there, with the page
  cache bypassed (O_DIRECT) where the filesystem allows it, else after asking the kernel to drop the
  file's cached pages (posix_fadvise DONTNEED), and said so;
- KV-shaped reads, for memory and for the file tier: a prefix read as one sequential run of blocks
  against the same number of blocks fetched from scattered places, a block being the engine's block
  tokens times the model's KV bytes per token;
- a GPU's copies, when a CUDA device and CuPy are present: host to device and back, from pinned and from
  pageable memory, within the device, and a KV prefix against scattered blocks from pinned host memory;
  otherwise one line says why not.

Each figure becomes a draft measurement record (basis measured) whose conditions say the machine, the
sizes, the repetitions and the spread, citing one source record for the run. Records are created, never
replacing a file (a taken id gets the next -N, tried by an exclusive create); the file kb writes to read
back is removed, also on Ctrl-C, SIGTERM or SIGHUP, and kb writes nowhere else under the path given.
--max-bytes is lowered to what the machine has (memory available, the path's free space) and a KV block
past it is refused before anything is allocated.
"""

from __future__ import annotations

import ctypes
import dataclasses
import datetime as dt
import functools
import itertools
import json
import mmap
import multiprocessing
import os
import platform
import random
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kbtools import __version__
from kbtools.atomic import ChangedMeanwhile, check_inside, create_file, replace_file, writers_lock
from kbtools.authoring.new import AuthoringError, slug
from kbtools.diagnostics import one_line
from kbtools.ids import id_problem

ALIGN = 4096  # O_DIRECT wants buffers, offsets and lengths aligned to the device's block; 4 KiB serves all
MiB = 1 << 20
MARK = ".kb-measure-"  # how the file kb writes under --path is named: hidden, and plainly kb's


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
    for line in _read("/proc/meminfo").splitlines():
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


def memory_cap(requested: int) -> Cap:
    available = memory_available()
    if available is None:  # nothing to go by: no more than the default bound
        limit, why = Bounds.bytes, "the default, as this machine does not say how much memory is available"
    else:
        limit, why = max(MiB, available // MEMORY_SHARE), "a quarter of the memory available"
    return Cap(requested) if requested <= limit else Cap(limit, why)


def file_cap(requested: int, directory: Path) -> Cap:
    try:
        free = free_space(directory)
    except OSError as exc:
        raise AuthoringError(f"--path {directory}: cannot tell its free space ({exc.strerror or exc})") from None
    limit = free // DISK_SHARE // ALIGN * ALIGN
    if limit < ALIGN:
        raise AuthoringError(f"--path {directory} has {free:,} B free: too little for kb's file to read back")
    return Cap(requested) if requested <= limit else Cap(limit, f"half the free space at {directory}")


def _lowered(cap: Cap) -> str:
    return f"--max-bytes lowered to {cap.bytes / MiB:,.0f} MiB ({cap.why})"


def _refuse_block(block: int, block_tokens: int, per_token: float, requested: int, caps: list[Cap]) -> None:
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


# ---------------------------------------------------------------- stop signals


STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class Stopped(KeyboardInterrupt):
    """A stop signal (SIGINT, SIGTERM, SIGHUP) raised where the run is, so that its cleanup runs as for
    Ctrl-C. A KeyboardInterrupt, so every caller that handles Ctrl-C handles it without a traceback."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _Held(threading.local):
    """How deep this thread is in signals_held blocks, and the stop signal that came meanwhile. Per thread:
    CPython runs signal handlers in the main thread, so the stop handler reads the main thread's."""

    depth = 0
    deferred: int | None = None


_held = _Held()


@contextmanager
def stop_signals_raise() -> Iterator[None]:
    """While the block runs, a stop signal raises Stopped into it, so each `finally` removes what kb made
    (a SIGTERM would otherwise end the process where it stands); inside a signals_held block, at that
    block's end. Afterwards the previous handlers are back, and a signal whose previous handler was the
    default one is delivered again: kb then ends as that signal ends a process, and whoever sent it sees
    so. A signal that was ignored (nohup) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers
        return
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    ours = [signum for signum, handler in previous.items() if handler not in (signal.SIG_IGN, None)]
    stopping: list[int] = []

    def stop(signum: int, frame: object) -> None:
        if stopping:
            return  # a second signal must not cut the first one's cleanup short
        stopping.append(signum)
        if _held.depth:  # held: the outermost block raises it as it ends, whichever thread the signal reached
            _held.deferred = signum
            return
        raise Stopped(signum)

    for signum in ours:
        signal.signal(signum, stop)
    try:
        yield
    finally:
        for signum in ours:
            signal.signal(signum, previous[signum])
        if stopping and previous[stopping[0]] is signal.SIG_DFL:
            signal.raise_signal(stopping[0])


@contextmanager
def signals_held() -> Iterator[None]:
    """The stop signals wait while the block runs: a stop between creating a file and noting its name
    would leave a file that nobody knows to remove. They are delivered when the outermost block ends.

    Held twice over: the thread's signal mask keeps a signal pending whatever handles it, and the depth
    counter makes kb's stop handler wait, since a mask covers only its own thread and a signal sent to the
    process may reach another one (CUDA's, or a program's that embeds kb), whose handler then runs here."""
    depth = _held.depth
    try:
        _held.depth = depth + 1
        with _stop_signals_masked():
            yield
    finally:
        _held.depth = depth  # set, not decremented: right wherever in the `try` a stop came
        if not depth and _held.deferred is not None:
            signum, _held.deferred = _held.deferred, None
            raise Stopped(signum)


@contextmanager
def _stop_signals_masked() -> Iterator[None]:
    """The stop signals blocked in this thread while the block runs, where threads have masks (not on
    Windows). The mask changes only inside the `try`: CPython runs a pending handler inside pthread_sigmask
    once the mask has changed, and whatever that raises, the mask goes back."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, ())  # the mask as it is, blocking nothing
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)  # a stop pending in the mask runs its handler here


def _default_stop_signals() -> None:
    """A forked worker dies of a stop signal quietly, as the default does: the parent cleans up."""
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)


def _repeat(run: Callable[[], float], bounds: Bounds, moved: int) -> list[float]:
    """Bytes per second of each repetition of `run` (which returns the seconds it took to move `moved` bytes)."""
    samples: list[float] = []
    started = time.monotonic()
    while len(samples) < bounds.repetitions and (not samples or time.monotonic() - started < bounds.seconds):
        samples.append(moved / max(run(), 1e-9))
    return samples


# ---------------------------------------------------------------- memory


def _address(buffer: bytearray) -> int:
    """Where a bytearray's bytes start, for memset and for CUDA's copies."""
    return ctypes.addressof((ctypes.c_char * len(buffer)).from_buffer(buffer))


def _filled(size: int) -> bytearray:
    """`size` bytes of data, every page written: a zeroed buffer's pages may all map the kernel's one zero
    page, and copying from it reads the same cached page over and over, not memory."""
    buffer = bytearray(os.urandom(MiB)) * (size // MiB + 1)  # one allocation, filled as it is made
    del buffer[size:]
    return buffer


def _copy_seconds(size: int, repetitions: int, barrier=None) -> float:
    """Seconds per copy of `size` bytes, after one untimed copy that faults every page in; with a
    barrier, the timed copies start together with the other processes'."""
    src, dst = _filled(size), bytearray(size)
    dst[:] = src
    if barrier is not None:
        barrier.wait()
    start = time.perf_counter()
    for _ in range(repetitions):
        dst[:] = src
    return (time.perf_counter() - start) / repetitions


def _worker(size: int, repetitions: int, barrier, results) -> None:
    """One process of the all-cores copy: its own buffers, started together with the others."""
    _default_stop_signals()
    results.put(_copy_seconds(size, repetitions, barrier))


def memory_copy(bounds: Bounds, processes: int) -> Figure:
    """Copy bandwidth with `processes` processes, each copying its share of the bound."""
    share = max(MiB, (bounds.bytes // 2 // processes) // MiB * MiB)  # source and destination both fit the bound
    if processes == 1:

        def run() -> float:
            return _copy_seconds(share, 3)

    else:
        context = multiprocessing.get_context("fork")

        def run() -> float:
            barrier, results = context.Barrier(processes), context.Queue()
            workers = [context.Process(target=_worker, args=(share, 3, barrier, results)) for _ in range(processes)]
            for worker in workers:
                worker.start()
            try:
                return max(results.get(timeout=bounds.seconds * 10 + 60) for _ in workers)  # the slowest sets the pace
            finally:
                for worker in workers:
                    worker.join(timeout=10)
                    if worker.is_alive():
                        worker.kill()

    samples = _repeat(run, bounds, share * processes)
    who = "one process" if processes == 1 else f"{processes} processes, one per core"
    return Figure(
        f"memory-copy-{'1' if processes == 1 else 'all'}-core",
        f"Host memory copy bandwidth, {who}",
        f"host memory copy bandwidth, {who} (bytes copied per second, each byte counted once)",
        samples,
        [
            f"{share // MiB} MiB copied per process per pass, 3 passes per repetition",
            "memcpy via Python bytearray slices",
            *_fits_in_cache(2 * share * processes),
        ],
    )


def _fits_in_cache(touched: int) -> list[str]:
    cache = last_level_cache()
    if cache and touched < 2 * cache:
        return [
            f"the {touched / MiB:.0f} MiB the copy touches is under twice the {cache / MiB:.0f} MiB last-level "
            "cache: part of the figure may be the cache's (raise --max-bytes)"
        ]
    return []


@functools.cache
def last_level_cache() -> int:
    """The largest CPU cache's size in bytes, from sysfs (0 where it says nothing)."""
    sizes = [0]
    for path in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = _read(str(path)).strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes)


class Evictor:
    """Writes a buffer twice the last-level cache before each timed read, so a read repeated over the
    same bytes comes from memory, not from the cache the previous repetition filled."""

    def __init__(self, bound: int):
        self.cache = last_level_cache()
        self.wanted = 2 * (self.cache or 32 * MiB)  # no size in sysfs: assume a 32 MiB cache
        self.size = max(MiB, min(self.wanted, bound))  # --max-bytes bounds this buffer too
        self.buffer = bytearray(self.size)
        self.address = _address(self.buffer)

    def __call__(self) -> None:
        ctypes.memset(self.address, 0x5A, self.size)

    def condition(self) -> str:
        cache = f"the {self.cache / MiB:.0f} MiB last-level cache" if self.cache else "an assumed 32 MiB cache"
        if self.size < self.wanted:
            return (
                f"caches partly flushed before each repetition: {self.size / MiB:.0f} MiB written, under twice {cache} "
                "because --max-bytes bounds it, so part of the figure may be the cache's"
            )
        return f"caches flushed before each repetition by writing {self.size / MiB:.0f} MiB (twice {cache})"


def kv_layout(pool: int, block: int, blocks: int, seed: int) -> tuple[int, list[int]]:
    """How many blocks a prefix read takes from a pool of `pool` bytes, and where the scattered read
    finds them (block indices): scattered over four times the prefix when the pool allows it."""
    slots = max(1, pool // block)
    count = max(1, min(blocks, slots // 4 or slots))
    return count, random.Random(seed).sample(range(slots), count)


def _pool(bounds: Bounds, block: int, blocks: int) -> int:
    """A memory pool of whole blocks for the scattered read: four times the prefix, within half the bound."""
    return max(block, min(max(block * blocks * 4, block * 8), bounds.bytes // 2) // block * block)


def memory_kv(bounds: Bounds, block: int, blocks: int, seed: int = 1) -> tuple[Figure, Figure]:
    """A prefix of `blocks` KV blocks copied as one run, and the same blocks from scattered places, each
    repetition reading from memory (the caches flushed first)."""
    pool_bytes = _pool(bounds, block, blocks)
    blocks, places = kv_layout(pool_bytes, block, blocks, seed)
    source, out = _filled(pool_bytes), bytearray(block * blocks)
    view, target = memoryview(source), memoryview(out)
    evict = Evictor(bounds.bytes)

    def sequential() -> float:
        evict()
        start = time.perf_counter()
        target[:] = view[: block * blocks]
        return time.perf_counter() - start

    def scattered() -> float:
        evict()
        start = time.perf_counter()
        for i, place in enumerate(places):
            target[i * block : (i + 1) * block] = view[place * block : (place + 1) * block]
        return time.perf_counter() - start

    sequential(), scattered()  # fault every page in first
    shape = [
        f"{blocks} blocks of {block:,} B ({block * blocks / MiB:.1f} MiB) out of a {pool_bytes / MiB:.0f} MiB pool",
        evict.condition(),
    ]
    return (
        Figure(
            "memory-kv-prefix",
            "Host memory: a KV prefix read as one run",
            "host memory read of a KV prefix as one sequential run of blocks",
            _repeat(sequential, bounds, block * blocks),
            shape,
        ),
        Figure(
            "memory-kv-scattered",
            "Host memory: the same KV blocks from scattered places",
            "host memory read of KV blocks from scattered places (non-prefix reuse)",
            _repeat(scattered, bounds, block * blocks),
            shape + [f"block places drawn at random (seed {seed})"],
        ),
    )


# ---------------------------------------------------------------- a file tier


class FileTier:
    """A file kb writes under `directory` to read back, removed afterwards."""

    def __init__(self, directory: Path, size: int):
        self.directory = directory.resolve()
        self.size = max(ALIGN, size // ALIGN * ALIGN)
        self.made: Path | None = None  # the file once it exists, which remove() removes
        try:
            with signals_held():  # a stop once the file exists finds its name here
                handle, name = tempfile.mkstemp(prefix=MARK, dir=self.directory)  # never outside it
                self.path = self.made = Path(name)
            with os.fdopen(handle, "wb") as out:
                chunk = os.urandom(MiB)
                left = self.size
                while left:
                    out.write(chunk[: min(left, MiB)])
                    left -= min(left, MiB)
                out.flush()
                os.fsync(out.fileno())
            self.direct = self._direct_works()
        except BaseException:  # a full disk or Ctrl-C while writing: leave nothing behind
            self.remove()
            raise

    def _direct_works(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
        except (OSError, AttributeError):
            return False
        try:
            buffer = mmap.mmap(-1, ALIGN)
            os.preadv(fd, [buffer], 0)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def how(self) -> str:
        if self.direct:
            return "page cache bypassed (O_DIRECT)"
        return (
            "O_DIRECT refused by this filesystem: read after posix_fadvise(DONTNEED) asked the kernel to drop the "
            "file's cached pages, which it may not do in full (the figure may be partly cached)"
        )

    def _open(self) -> int:
        if self.direct:
            return os.open(self.path, os.O_RDONLY | os.O_DIRECT)
        fd = os.open(self.path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return fd

    def read_seconds(self, places: list[int], length: int) -> float:
        """Seconds to read `length` bytes at each offset in `places`, into one aligned buffer."""
        buffer = mmap.mmap(-1, length)
        fd = self._open()
        try:
            start = time.perf_counter()
            for offset in places:
                got = os.preadv(fd, [buffer], offset)
                if got != length:
                    raise AuthoringError(f"short read of {self.path.name} at {offset}: {got} of {length} bytes")
            return time.perf_counter() - start
        finally:
            os.close(fd)
            buffer.close()

    def remove(self) -> None:
        if self.made is not None:
            self.made.unlink(missing_ok=True)


def file_sequential(tier: FileTier, bounds: Bounds) -> Figure:
    chunk = 4 * MiB if tier.size >= 4 * MiB else tier.size
    places = list(range(0, tier.size - chunk + 1, chunk))
    samples = _repeat(lambda: tier.read_seconds(places, chunk), bounds, chunk * len(places))
    return Figure(
        "file-sequential",
        f"Sequential file read at {tier.directory}",
        f"sequential read of one file at {tier.directory}",
        samples,
        [f"{tier.size / MiB:.0f} MiB file read in {chunk // MiB or 1} MiB requests", tier.how()],
    )


def file_kv(tier: FileTier, bounds: Bounds, block: int, blocks: int, seed: int = 1) -> tuple[Figure, Figure]:
    block = max(ALIGN, block // ALIGN * ALIGN)
    count, places = kv_layout(tier.size, block, blocks, seed)
    prefix = [i * block for i in range(count)]
    scattered = [p * block for p in places]
    shape = [
        f"{count} blocks of {block:,} B ({block * count / MiB:.1f} MiB) in a {tier.size / MiB:.0f} MiB file",
        tier.how(),
    ]
    return (
        Figure(
            "file-kv-prefix",
            f"File at {tier.directory}: a KV prefix read as one run",
            f"file read of a KV prefix as one sequential run of blocks at {tier.directory}",
            _repeat(lambda: tier.read_seconds(prefix, block), bounds, block * count),
            shape,
            shape="kv-prefix",
        ),
        Figure(
            "file-kv-scattered",
            f"File at {tier.directory}: the same KV blocks from scattered places",
            f"file read of KV blocks from scattered places (non-prefix reuse) at {tier.directory}",
            _repeat(lambda: tier.read_seconds(scattered, block), bounds, block * count),
            shape + [f"block places drawn at random (seed {seed})"],
            shape="kv-scattered",
        ),
    )


# ---------------------------------------------------------------- a GPU


def gpu_skipped() -> str | None:
    """Why the GPU copies are not measured here, or None when they can be."""
    try:
        import cupy  # the optional GPU array library
    except ImportError:
        return "no GPU array library (the gpu extra, CuPy, measures the host-device copies)"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as exc:  # CuPy without a driver raises its own kinds
        return f"no usable CUDA device ({type(exc).__name__}: {str(exc)[:160]})"
    return None


class Gpu:
    """The current CUDA device through CuPy: buffers, one stream, and copies timed on it."""

    def __init__(self) -> None:
        import cupy

        self.cupy = cupy
        self.device = cupy.cuda.Device()
        props = cupy.cuda.runtime.getDeviceProperties(self.device.id)
        name = props["name"]
        self.name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.keep: list[object] = []  # host buffers a pointer was taken of

    def pinned(self, size: int) -> int:
        """A page-locked host buffer of `size` bytes of data; its address."""
        buffer = self.cupy.cuda.alloc_pinned_memory(size)
        self.keep.append(buffer)
        ctypes.memmove(buffer.ptr, _address(_filled(size)), size)  # every page written, from a buffer then dropped
        return buffer.ptr

    def pageable(self, size: int) -> int:
        """An ordinary host buffer of `size` bytes of data; its address. CUDA copies to and from such
        memory by staging it through a pinned buffer of its own, which is what the pageable figures time."""
        data = _filled(size)
        self.keep.append(data)
        return _address(data)

    def device_buffer(self, size: int):
        return self.cupy.cuda.alloc(size)

    def timed(self, copy: Callable[[], None]) -> Callable[[], float]:
        """A run for _repeat: wall-clock seconds from issuing `copy` until the stream has finished it, after
        one untimed copy (the first also maps what the driver maps once). Wall clock, not CUDA events,
        because a copy from pageable memory is staged by the host before the device sees it, and issuing
        one copy per scattered block is a cost the engine pays too."""

        def run() -> float:
            self.stream.synchronize()
            start = time.perf_counter()
            copy()
            self.stream.synchronize()
            return time.perf_counter() - start

        copy()
        self.stream.synchronize()
        return run

    def conditions(self, *more: str) -> list[str]:
        return [
            f"GPU {self.name} (device {self.device.id})",
            *more,
            "copies issued on one stream, timed to its synchronize",
        ]


def gpu_copies(gpu: Gpu, bounds: Bounds) -> list[Figure]:
    """Host to device and back, from pinned and from pageable memory, and a copy within the device."""
    size = max(MiB, bounds.bytes // 2 // MiB * MiB)  # the host buffer and the device buffers
    pinned, pageable = gpu.pinned(size), gpu.pageable(size)
    source, target, stream = gpu.device_buffer(size), gpu.device_buffer(size), gpu.stream
    copies: list[tuple[str, str, Callable[[], None]]] = [
        ("h2d-pinned", "host to device, from pinned memory", lambda: source.copy_from_host_async(pinned, size, stream)),
        (
            "h2d-pageable",
            "host to device, from pageable memory",
            lambda: source.copy_from_host_async(pageable, size, stream),
        ),
        ("d2h-pinned", "device to host, into pinned memory", lambda: source.copy_to_host_async(pinned, size, stream)),
        (
            "d2h-pageable",
            "device to host, into pageable memory",
            lambda: source.copy_to_host_async(pageable, size, stream),
        ),
        (
            "d2d",
            "within the device (each byte counted once, read and written)",
            lambda: target.copy_from_device_async(source, size, stream),
        ),
    ]
    return [
        Figure(
            f"gpu-{slug}",
            f"GPU copy {what.split(' (')[0]}",
            f"GPU copy bandwidth {what}",
            _repeat(gpu.timed(copy), bounds, size),
            gpu.conditions(f"{size // MiB} MiB per copy"),
        )
        for slug, what, copy in copies
    ]


def gpu_kv(gpu: Gpu, bounds: Bounds, block: int, blocks: int, seed: int = 1) -> tuple[Figure, Figure]:
    """A KV prefix copied from pinned host memory to the device as one run, and the same blocks from
    scattered places, one copy per block: the path a hit served from host DRAM takes."""
    pool = _pool(bounds, block, blocks)
    blocks, places = kv_layout(pool, block, blocks, seed)
    host, target, stream = gpu.pinned(pool), gpu.device_buffer(block * blocks), gpu.stream

    def prefix() -> None:
        target.copy_from_host_async(host, block * blocks, stream)

    def scattered() -> None:
        for i, place in enumerate(places):
            (target + i * block).copy_from_host_async(host + place * block, block, stream)

    shape = gpu.conditions(
        f"{blocks} blocks of {block:,} B ({block * blocks / MiB:.1f} MiB) out of a {pool / MiB:.0f} MiB pinned pool"
    )
    return (
        Figure(
            "gpu-kv-prefix",
            "Host to GPU: a KV prefix copied as one run",
            "host-to-device copy of a KV prefix from pinned memory as one run of blocks",
            _repeat(gpu.timed(prefix), bounds, block * blocks),
            shape,
            shape="kv-prefix",
        ),
        Figure(
            "gpu-kv-scattered",
            "Host to GPU: the same KV blocks from scattered places",
            "host-to-device copy of KV blocks from scattered places in pinned memory, one copy per block",
            _repeat(gpu.timed(scattered), bounds, block * blocks),
            shape + [f"block places drawn at random (seed {seed})"],
            shape="kv-scattered",
        ),
    )


# ---------------------------------------------------------------- the machine, and the records


def machine() -> list[str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in _read("/proc/cpuinfo").splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown CPU",
    )
    memory = next((line.split()[1] for line in _read("/proc/meminfo").splitlines() if line.startswith("MemTotal")), "")
    parts = [f"CPU {cpu}, {os.cpu_count()} cores"]
    if memory.isdigit():
        parts.append(f"{int(memory) / (1 << 20):.1f} GiB of memory")
    parts.append(f"Linux {platform.release()}" if sys.platform == "linux" else platform.platform())
    return parts


def filesystem(directory: Path) -> str:
    best, device, kind = "", "unknown device", "unknown filesystem"
    for line in _read("/proc/self/mounts").splitlines():
        fields = line.split()
        if (
            len(fields) >= 3
            and (str(directory) + "/").startswith(fields[1].rstrip("/") + "/")
            and len(fields[1]) >= len(best)
        ):
            best, device, kind = fields[1], fields[0], fields[2]
    return f"{kind} on {device} (mounted at {best or '?'})"


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _gbps(value: float) -> str:
    return f"{value / 1e9:.3g} GB/s"


# What one_line (which escapes C0 and C1 controls) leaves that a record may not hold raw: the surrogates
# Python decodes bytes that are not UTF-8 into (a path's, a host name's), and the two non-characters YAML
# refuses.
_UNWRITABLE = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _escaped(match: re.Match[str]) -> str:
    char = match.group(0)
    if "\udc80" <= char <= "\udcff":  # a byte that was not UTF-8: shown as the byte, as repr shows bytes
        return f"\\x{ord(char) - 0xDC00:02x}"
    return char.encode("unicode_escape").decode("ascii")


def _yaml_string(text: str) -> str:
    """A YAML double-quoted scalar of `text` as a person reads it: control characters (a newline or DEL in
    a path) and bytes that are not UTF-8 written as visible escapes, as kb shows them on a terminal, so
    nothing reaches a record raw and every record kb writes passes kb check. A JSON string is a YAML
    double-quoted one, so quotes and backslashes stay intact."""
    return json.dumps(_UNWRITABLE.sub(_escaped, one_line(text)), ensure_ascii=False)


def _when(now: dt.datetime, copy: int) -> str:
    """The time a name carries, which tells two runs of one day apart; with the id's -N for two in one
    second (kb check warns of two records named alike)."""
    return f"{now:%Y-%m-%d %H:%M:%S} UTC" + (f" #{copy}" if copy > 1 else "")


def record_text(
    figure: Figure,
    type_name: str,
    record_id: str,
    source_id: str,
    common: list[str],
    now: dt.datetime,
    copy: int = 1,
) -> str:
    today, when = now.date(), _when(now, copy)
    low, high = figure.spread
    conditions = "; ".join(
        [
            *common,
            *figure.conditions,
            f"{len(figure.samples)} repetitions, median {_gbps(figure.median)}, from {_gbps(low)} to {_gbps(high)}",
            f"kb {__version__}, {now:%Y-%m-%d %H:%M:%S} UTC",
        ]
    )
    return (
        "---\n"
        f"id: {record_id}\n"
        f"type: {type_name}\n"
        f"name: {_yaml_string(f'{figure.name} ({when})')}\n"
        "status: draft\n"
        "confidence: 0.6\n"
        f"updated: {today.isoformat()}\n"
        f"sources: [{source_id}]\n"
        "basis: measured\n"
        f"metric: {_yaml_string(figure.metric)}\n"
        "value:\n"
        f"  value: {figure.median / 1e9:.4g} GB/s\n"
        f"  source: {source_id}\n"
        f"conditions: {_yaml_string(conditions)}\n"
        "measured_by: local\n"
        f"published: {today.isoformat()}\n" + (f"storage_tiers: [{figure.tier}]\n" if figure.tier else "") + "---\n"
        f"Measured on this machine by `kb measure`: the median of {len(figure.samples)} repetitions,\n"
        f"{{{{ value }}}}. The conditions say the machine, the sizes and the spread. Cited by the run's\n"
        f"source, [[{source_id}]].\n"
    )


def source_text(
    type_name: str, source_id: str, common: list[str], now: dt.datetime, records: list[str], copy: int = 1
) -> str:
    today, when = now.date(), _when(now, copy)
    host = platform.node() or "this machine"

    return (
        "---\n"
        f"id: {source_id}\n"
        f"type: {type_name}\n"
        f"name: {_yaml_string(f'kb measure run on {host}, {when}')}\n"
        "status: draft\n"
        "confidence: 0.6\n"
        f"updated: {today.isoformat()}\n"
        "kind: measurement-run\n"
        "origin: independent\n"
        f"publisher: {_yaml_string(f'kb measure on {host}')}\n"
        f"no_url: {_yaml_string(f'a measurement made on this machine by kb measure {__version__}; its conditions are in each record')}\n"
        f"notes: {_yaml_string('; '.join(common))}\n"
        "---\n"
        "The run of `kb measure` that these measurement records cite: "
        + (", ".join(f"[[{r}]]" for r in records) or "(being written)")
        + ".\n"
    )


def write_records(settings, registry, figures: list[Figure], now: dt.datetime) -> list[Path]:
    """The run's source and one record per figure, each created (never replacing a file), the run's
    source first. The types are the ones playing the measurement and source roles (x-kb-role). A run
    stopped part way removes the records it created, so none is left citing a source never finished."""
    measurement, source = (_role(registry, role) for role in ("measurement", "source"))
    host, stamp = _host_word(), now.strftime("%Y%m%d")
    common = machine()
    sources, measurements = settings.records_path / source.dir, settings.records_path / measurement.dir
    created: list[tuple[Path, str]] = []
    try:
        # the source first, so that every record cites an id this run holds; it links them once they exist
        source_id, copy = _create_new(
            sources,
            f"kb-measure-{host}-{stamp}",
            lambda id_, n: source_text(source.name, id_, common, now, [], n),
            created,
        )
        keys = []
        for figure in figures:

            def text_of(record_id: str, n: int, figure: Figure = figure) -> str:
                return record_text(figure, measurement.name, record_id, source_id, common, now, n)

            record_id, _ = _create_new(measurements, f"{host}-{figure.slug}-{stamp}", text_of, created)
            figure.key = f"{measurement.dir}/{record_id}"
            keys.append(figure.key)
        path, placeholder = created[0]
        try:
            replace_file(path, source_text(source.name, source_id, common, now, keys, copy), placeholder.encode())
        except ChangedMeanwhile as exc:
            raise AuthoringError(str(exc)) from None
    except BaseException:
        for path, text in created:
            _remove_if_unchanged(path, text)
        raise
    return [path for path, _ in created]


def _host_word() -> str:
    """This machine's name as id words: letters reduced to ASCII (Wörk -> work), every other run of
    characters one hyphen, short enough that an id with it stays within ids.py's length."""
    name = unicodedata.normalize("NFKD", platform.node()).encode("ascii", "ignore").decode("ascii")
    return slug(name)[:40].strip("-") or "host"


def _role(registry, role: str):
    found = registry.with_role(role)
    if found is None:
        raise AuthoringError(
            f"no record type plays the {role} role (x-kb-role: {role} in a schema); kb measure writes one"
        )
    return found


def _create_new(
    directory: Path, base: str, text_for: Callable[[str, int], str], created: list[tuple[Path, str]]
) -> tuple[str, int]:
    """Create the record `base`, else `base-2`, `base-3` ...: each tried by an exclusive create, which
    fails on any file already there (another run's, one someone planted, a dangling link), so two runs at
    once never take one id and nothing is replaced. The id made and its number; noted in `created`."""
    for n in itertools.count(1):
        record_id = base if n == 1 else f"{base}-{n}"
        problem = id_problem(record_id)
        if problem:
            raise AuthoringError(f"kb measure made '{record_id}', which is not a record id: {problem}")
        path, text = directory / f"{record_id}.md", text_for(record_id, n)
        try:
            with signals_held():  # a stop once the record exists finds it in `created`
                create_file(path, text)
                created.append((path, text))
        except FileExistsError:
            if not directory.is_dir():  # not a taken id: the type's directory is a file
                raise AuthoringError(f"{directory} is not a directory; kb measure writes its records there") from None
            continue
        return record_id, n
    raise AssertionError("unreachable")  # itertools.count never ends


def _remove_if_unchanged(path: Path, text: str) -> None:
    """Remove a record this run created, unless someone has changed it since: then it is theirs."""
    try:
        if path.read_bytes() == text.encode():
            path.unlink()
    except OSError:
        pass


# ---------------------------------------------------------------- a run


TIERS = ("memory", "file", "kv", "gpu")


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


MAX_SECONDS = 24 * 3600  # --max-seconds' ceiling: a day per figure is more than any measurement here needs, and
# the memory copy's wait for its workers (ten times the bound) stays within what a timeout can hold


def _refuse_out_of_range(request: Request) -> None:
    """Each count at least 1, and --max-seconds a number of seconds within (0, a day]: a NaN or an infinity
    would otherwise reach a timeout that cannot hold it, mid-run."""
    bounds = request.bounds
    for flag, value, unit in (
        ("--max-bytes", bounds.bytes, " B"),
        ("--repetitions", bounds.repetitions, ""),
        ("--block-tokens", request.block_tokens, ""),
        ("--blocks", request.blocks, ""),
    ):
        if value < 1:
            raise AuthoringError(f"{flag} must be at least 1{unit}, not {value:,}{unit}")
    if not 0 < bounds.seconds <= MAX_SECONDS:  # also false for NaN
        raise AuthoringError(
            f"--max-seconds must be a number of seconds above 0 and at most {MAX_SECONDS:,} (a day), not {bounds.seconds:g}"
        )


def measure(settings, request: Request, say: Callable[[str], None]) -> Run:
    """Measure what the request asks and write the records (AuthoringError on a refusal)."""
    from kbtools.registry import load_registry

    bounds = request.bounds
    _refuse_out_of_range(request)
    unknown = sorted(request.tiers - set(TIERS))
    if unknown:
        raise AuthoringError(f"no tier {', '.join(unknown)} (known: {', '.join(TIERS)})")
    tiers = request.tiers or {"memory", "kv", "gpu"} | ({"file"} if request.path else set())
    if "file" in tiers and request.path is None:
        raise AuthoringError(
            "the file tier needs --path DIR: a directory on the tier, where kb may write one file and remove it"
        )
    if "file" in tiers and request.path is not None and not request.path.is_dir():
        raise AuthoringError(f"--path {request.path} is not a directory")
    # --max-bytes is a bound, so what the machine has lowers it (said, and written in the conditions) and
    # the run goes on within it: nothing is ever allocated past memory or written past the free space
    memory_bound = memory_cap(bounds.bytes)
    file_bound = file_cap(bounds.bytes, request.path) if "file" in tiers and request.path is not None else None
    wanted = "kv" in tiers and request.kv_model
    corpus = None
    if wanted or request.file_tier or request.memory_tier:  # the model's KV bytes, or a tier to resolve
        from kbtools.check.pipeline import check_corpus

        corpus = check_corpus(settings, use_cache=True, complete=True)
    registry = corpus.registry if corpus else load_registry(settings.schema_path, settings.root)  # read once
    directory = _role(registry, "measurement").dir
    out = request.out or settings.records_path / directory
    if out.parent.resolve() != settings.records_path.resolve() or out.name != directory:
        raise AuthoringError(
            f"--out {out} is not the measurements directory of {settings.records_path}; records live there"
        )
    for kind in (directory, _role(registry, "source").dir):  # --out is the first of these, as checked above
        check_inside(settings.root, settings.records_path / kind)  # before anything is measured: no link out
    block, file_tier, memory_tier = None, None, None
    if corpus is not None:
        index = corpus.index
        file_tier, memory_tier = (_tier(corpus, index, t) for t in (request.file_tier, request.memory_tier))
        if wanted:
            per_token = corpus.values(str(request.kv_model)).fields.get("kv_bytes_per_token")
            if per_token is None or per_token.quantity is None:
                raise AuthoringError(
                    f"no kv_bytes_per_token for '{request.kv_model}' (is it a model record that kb check computes?)"
                )
            per_token_bytes = float(per_token.quantity.to("B/token").magnitude)
            block = int(per_token_bytes * request.block_tokens)
            _refuse_block(
                block,
                request.block_tokens,
                per_token_bytes,
                bounds.bytes,
                [memory_bound] + ([file_bound] if file_bound else []),  # a file's KV read holds a block in memory
            )
    elif "kv" in tiers:
        say("KV-shaped reads need --kv-model DIR/ID (the model whose KV bytes per token size a block); skipped")
    in_memory = memory_bound if tiers & {"memory", "gpu"} or block else None  # the file tier alone holds little
    for cap, what in ((in_memory, "the memory figures"), (file_bound, "the file")):
        if cap is not None and cap.why:
            say(
                f"--max-bytes {bounds.bytes:,} B is more than this machine has: {what} use at most {cap.bytes:,} B ({cap.why})"
            )
    memory = dataclasses.replace(bounds, bytes=memory_bound.bytes)
    with stop_signals_raise():  # a SIGTERM or SIGHUP cleans up as Ctrl-C does: the file, the records part written
        figures: list[Figure] = []
        if "memory" in tiers:
            for processes in sorted({1, os.cpu_count() or 1}):
                say(f"memory copy, {processes} process{'es' if processes > 1 else ''} ...")
                figures.append(memory_copy(memory, processes))
        if block:
            say(f"memory, KV-shaped: up to {request.blocks} blocks of {block:,} B, prefix and scattered ...")
            figures.extend(memory_kv(memory, block, request.blocks))
        for figure in figures:
            figure.tier = memory_tier.id if memory_tier else None
        if file_bound is not None and request.path is not None:
            say(f"file at {request.path}: writing a {file_bound.bytes / MiB:.0f} MiB file to read back ...")
            tier = FileTier(request.path, file_bound.bytes)
            on_file: list[Figure] = []
            try:
                how = "O_DIRECT" if tier.direct else "after posix_fadvise"
                say(f"file at {tier.directory}: sequential read, {how} ...")
                on_file.append(file_sequential(tier, bounds))
                if block:
                    say("file, KV-shaped: prefix and scattered ...")
                    on_file.extend(file_kv(tier, bounds, block, request.blocks))
            finally:
                tier.remove()
            for figure in on_file:
                figure.conditions.insert(0, filesystem(tier.directory))
                figure.tier = file_tier.id if file_tier else None
            figures += on_file
        skipped = None
        if "gpu" in tiers:
            skipped = gpu_skipped()
            if skipped:
                say(f"GPU copies skipped: {skipped}")
            else:
                gpu = Gpu()
                say(f"GPU {gpu.name}: host to device and back, pinned and pageable, and within the device ...")
                on_gpu = gpu_copies(gpu, memory)
                if block:
                    say(f"GPU {gpu.name}, KV-shaped: a prefix and scattered blocks from pinned host memory ...")
                    on_gpu.extend(gpu_kv(gpu, memory, block, request.blocks))
                for figure in on_gpu:
                    figure.tier = memory_tier.id if memory_tier else None  # host memory read over the GPU's link
                figures.extend(on_gpu)
        if not figures:
            raise AuthoringError("nothing measured" + (f": GPU copies skipped, {skipped}" if skipped else ""))
        for figure in figures:
            cap = file_bound if figure.slug.startswith("file-") else memory_bound
            if cap is not None and cap.why:
                figure.conditions.append(_lowered(cap))
        if memory_tier and not any(f.tier == memory_tier.id and f.shape for f in figures):
            say(
                f"the host-memory figures name {memory_tier.key} but do not price it: a hit served from host memory "
                "crosses the GPU's link, which kb measure gpu measures (kv-shaped with --kv-model) where a device is"
            )
        with writers_lock(settings.root, settings.records_path):  # no kb fmt or kb mv sweeps away a temporary of these
            written = write_records(settings, registry, figures, dt.datetime.now(dt.UTC))
    tiers_named = {t.key: t for t in (file_tier, memory_tier) if t is not None}.values()
    return Run(written, [line for t in tiers_named for line in citations(registry, t, figures)])


@dataclass
class Run:
    written: list[Path]  # the records, the run's source first
    citations: list[str]  # what to add to the tiers named so the cost model prices them with the figures


def citations(registry, tier, figures: list[Figure]) -> list[str]:
    """What to add to the tier's record so the cost model prices it with these figures: the fields its
    type marks x-kb-measured-as. kb says it and leaves the record as its author wrote it."""
    fields = registry.types[tier.type].measured_as if tier.type in registry.types else {}
    lines = [f"  {fields[f.shape]}: {f.key}" for f in figures if f.tier == tier.id and f.shape in fields and f.key]
    if not lines:
        return []
    return [
        f"to price {tier.key} with these figures (if this machine's path is that tier's), add to {tier.path}:",
        *lines,
    ]


def _tier(corpus, index, name: str | None):
    """The storage tier record `name` names: one of the type the measurement type's storage_tiers field
    refers to."""
    if not name:
        return None
    measurement = corpus.registry.with_role("measurement")
    plan = measurement.plan.properties.get("storage_tiers") if measurement else None
    wanted = plan.items.ref_types if plan is not None and plan.items is not None else ()
    record, _ = index.resolve(name)
    if record is None or record.type not in wanted:
        raise AuthoringError(f"no storage tier '{name}' (a record of type {' or '.join(wanted) or '?'})")
    return record
