"""The memory tier: copy bandwidth with one process and with one per core, and KV-shaped reads (a prefix as
one run of blocks against the same blocks from scattered places), each read from memory, not the cache."""

from __future__ import annotations

import ctypes
import functools
import multiprocessing
import os
import random
import time
from collections.abc import Callable
from pathlib import Path

from kbtools.authoring.measure.machine import Bounds, Figure, Job, MiB, Request, lowered, read_text, repeat
from kbtools.signals import default_stop_signals


def address(buffer: bytearray) -> int:
    """Where a bytearray's bytes start, for memset and for CUDA's copies."""
    return ctypes.addressof((ctypes.c_char * len(buffer)).from_buffer(buffer))


def filled(size: int) -> bytearray:
    """`size` bytes of data, every page written: a zeroed buffer's pages may all map the kernel's one zero
    page, and copying from it reads the same cached page over and over, not memory."""
    buffer = bytearray(os.urandom(MiB)) * (size // MiB + 1)  # one allocation, filled as it is made
    del buffer[size:]
    return buffer


def _copy_seconds(size: int, repetitions: int, barrier=None) -> float:
    """Seconds per copy of `size` bytes, after one untimed copy that faults every page in; with a
    barrier, the timed copies start together with the other processes'."""
    src, dst = filled(size), bytearray(size)
    dst[:] = src
    if barrier is not None:
        barrier.wait()
    start = time.perf_counter()
    for _ in range(repetitions):
        dst[:] = src
    return (time.perf_counter() - start) / repetitions


def _worker(size: int, repetitions: int, barrier, results) -> None:
    """One process of the all-cores copy: its own buffers, started together with the others."""
    default_stop_signals()
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

    samples = repeat(run, bounds, share * processes)
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
        text = read_text(str(path)).strip().upper()
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
        self.address = address(self.buffer)

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


def kv_pool(bounds: Bounds, block: int, blocks: int) -> int:
    """A memory pool of whole blocks for the scattered read: four times the prefix, within half the bound."""
    return max(block, min(max(block * blocks * 4, block * 8), bounds.bytes // 2) // block * block)


def memory_kv(bounds: Bounds, block: int, blocks: int, seed: int = 1) -> tuple[Figure, Figure]:
    """A prefix of `blocks` KV blocks copied as one run, and the same blocks from scattered places, each
    repetition reading from memory (the caches flushed first)."""
    pool_bytes = kv_pool(bounds, block, blocks)
    blocks, places = kv_layout(pool_bytes, block, blocks, seed)
    source, out = filled(pool_bytes), bytearray(block * blocks)
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
            repeat(sequential, bounds, block * blocks),
            shape,
        ),
        Figure(
            "memory-kv-scattered",
            "Host memory: the same KV blocks from scattered places",
            "host memory read of KV blocks from scattered places (non-prefix reuse)",
            repeat(scattered, bounds, block * blocks),
            shape + [f"block places drawn at random (seed {seed})"],
        ),
    )


class MemoryMeasurer:
    """Host memory: its copies when the memory tier is asked, its KV-shaped reads when a KV block is."""

    name = "memory figures"

    def skipped(self, request: Request) -> str | None:
        return None  # every machine has memory

    def figures(self, job: Job, say: Callable[[str], None]) -> list[Figure]:
        memory = job.in_memory
        figures: list[Figure] = []
        if "memory" in job.tiers:
            for processes in sorted({1, os.cpu_count() or 1}):
                say(f"memory copy, {processes} process{'es' if processes > 1 else ''} ...")
                figures.append(memory_copy(memory, processes))
        if job.block:
            say(f"memory, KV-shaped: up to {job.blocks} blocks of {job.block:,} B, prefix and scattered ...")
            figures.extend(memory_kv(memory, job.block, job.blocks))
        for figure in figures:
            figure.tier = job.memory_tier
            figure.conditions += lowered(job.memory)
        return figures
