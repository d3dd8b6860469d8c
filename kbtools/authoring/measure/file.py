"""A file tier at a directory the user names: a sequential read of a file kb writes there, and KV-shaped
reads of it, with the page cache bypassed (O_DIRECT) where the filesystem allows it, else after asking the
kernel to drop the file's cached pages (posix_fadvise DONTNEED), and said so. The file is removed, also
on Ctrl-C, SIGTERM or SIGHUP; kb writes nowhere else under the path given."""

from __future__ import annotations

import mmap
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kbtools.authoring.measure.machine import ALIGN, Bounds, Figure, Job, MiB, Request, lowered, read_text, repeat
from kbtools.authoring.measure.memory import kv_layout
from kbtools.authoring.new import AuthoringError
from kbtools.signals import signals_held

MARK = ".kb-measure-"  # how the file kb writes under --path is named: hidden, and plainly kb's


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
    samples = repeat(lambda: tier.read_seconds(places, chunk), bounds, chunk * len(places))
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
            repeat(lambda: tier.read_seconds(prefix, block), bounds, block * count),
            shape,
            shape="kv-prefix",
        ),
        Figure(
            "file-kv-scattered",
            f"File at {tier.directory}: the same KV blocks from scattered places",
            f"file read of KV blocks from scattered places (non-prefix reuse) at {tier.directory}",
            repeat(lambda: tier.read_seconds(scattered, block), bounds, block * count),
            shape + [f"block places drawn at random (seed {seed})"],
            shape="kv-scattered",
        ),
    )


def filesystem(directory: Path) -> str:
    """The filesystem `directory` is on, and its device, from the mount table."""
    best, device, kind = "", "unknown device", "unknown filesystem"
    for line in read_text("/proc/self/mounts").splitlines():
        fields = line.split()
        if (
            len(fields) >= 3
            and (str(directory) + "/").startswith(fields[1].rstrip("/") + "/")
            and len(fields[1]) >= len(best)
        ):
            best, device, kind = fields[1], fields[0], fields[2]
    return f"{kind} on {device} (mounted at {best or '?'})"


class FileMeasurer:
    """The file tier at --path: a sequential read, and KV-shaped reads when a KV block is asked."""

    name = "file tier"

    def skipped(self, request: Request) -> str | None:
        return None  # a --path that cannot be measured is refused before anything is measured

    def figures(self, job: Job, say: Callable[[str], None]) -> list[Figure]:
        if job.file is None or job.path is None:
            return []
        say(f"file at {job.path}: writing a {job.file.bytes / MiB:.0f} MiB file to read back ...")
        tier = FileTier(job.path, job.file.bytes)
        figures: list[Figure] = []
        try:
            how = "O_DIRECT" if tier.direct else "after posix_fadvise"
            say(f"file at {tier.directory}: sequential read, {how} ...")
            figures.append(file_sequential(tier, job.bounds))
            if job.block:
                say("file, KV-shaped: prefix and scattered ...")
                figures.extend(file_kv(tier, job.bounds, job.block, job.blocks))
        finally:
            tier.remove()
        for figure in figures:
            figure.conditions.insert(0, filesystem(tier.directory))
            figure.tier = job.file_tier
            figure.conditions += lowered(job.file)
        return figures
