"""A GPU's copies, when a CUDA device and CuPy are present: host to device and back, from pinned and from
pageable memory, within the device, and a KV prefix against scattered blocks from pinned host memory;
otherwise one line says why not."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable

from kbtools.authoring.measure.machine import Bounds, Figure, Job, MiB, Request, lowered, repeat
from kbtools.authoring.measure.memory import address, filled, kv_layout, kv_pool


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
        ctypes.memmove(buffer.ptr, address(filled(size)), size)  # every page written, from a buffer then dropped
        return buffer.ptr

    def pageable(self, size: int) -> int:
        """An ordinary host buffer of `size` bytes of data; its address. CUDA copies to and from such
        memory by staging it through a pinned buffer of its own, which is what the pageable figures time."""
        data = filled(size)
        self.keep.append(data)
        return address(data)

    def device_buffer(self, size: int):
        return self.cupy.cuda.alloc(size)

    def timed(self, copy: Callable[[], None]) -> Callable[[], float]:
        """A run for repeat(): wall-clock seconds from issuing `copy` until the stream has finished it, after
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
            repeat(gpu.timed(copy), bounds, size),
            gpu.conditions(f"{size // MiB} MiB per copy"),
        )
        for slug, what, copy in copies
    ]


def gpu_kv(gpu: Gpu, bounds: Bounds, block: int, blocks: int, seed: int = 1) -> tuple[Figure, Figure]:
    """A KV prefix copied from pinned host memory to the device as one run, and the same blocks from
    scattered places, one copy per block: the path a hit served from host DRAM takes."""
    pool = kv_pool(bounds, block, blocks)
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
            repeat(gpu.timed(prefix), bounds, block * blocks),
            shape,
            shape="kv-prefix",
        ),
        Figure(
            "gpu-kv-scattered",
            "Host to GPU: the same KV blocks from scattered places",
            "host-to-device copy of KV blocks from scattered places in pinned memory, one copy per block",
            repeat(gpu.timed(scattered), bounds, block * blocks),
            shape + [f"block places drawn at random (seed {seed})"],
            shape="kv-scattered",
        ),
    )


class GpuMeasurer:
    """The GPU's copies, and KV-shaped ones when a KV block is asked; its figures are of host memory read
    over the GPU's link, so they name the --memory-tier record."""

    name = "GPU copies"

    def skipped(self, request: Request) -> str | None:
        return gpu_skipped() if "gpu" in request.asked() else None

    def figures(self, job: Job, say: Callable[[str], None]) -> list[Figure]:
        if "gpu" not in job.tiers:
            return []
        memory = job.in_memory
        gpu = Gpu()
        say(f"GPU {gpu.name}: host to device and back, pinned and pageable, and within the device ...")
        figures = gpu_copies(gpu, memory)
        if job.block:
            say(f"GPU {gpu.name}, KV-shaped: a prefix and scattered blocks from pinned host memory ...")
            figures.extend(gpu_kv(gpu, memory, job.block, job.blocks))
        for figure in figures:
            figure.tier = job.memory_tier  # host memory read over the GPU's link
            figure.conditions += lowered(job.memory)
        return figures
