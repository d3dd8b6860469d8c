"""Record pages over the machine's cores: a build forks workers that each fingerprint and render their share.

A page depends only on the checked corpus, which every forked worker inherits as it stands, so a worker
needs nothing sent to it and sends back only what the build keeps of its share (the pages' fingerprints).
Forking is done only where it is safe and pays: a single-threaded process (kb serve's threads rule it out:
a lock another thread held at the fork would stay held in the child), and enough pages that starting the
workers costs less than it saves. A worker that fails for any reason has its share done again here, so an
error (a broken theme) is raised by this process with the message it would have without workers, and a
worker dies with this process (Linux's parent-death signal), so a killed build leaves nothing writing.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kbtools.progress import track

POOL_MIN = 1000  # pages before workers pay: forking and the reuse table they inherit cost a few tenths of a second
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def workers_for(pages: int) -> int:
    """How many processes render `pages` pages: 1 (this one alone) unless a pool is safe and pays."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return 1
    if pages < int(os.environ.get("KB_RENDER_POOL_MIN", POOL_MIN)):
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, pages // 2))


def in_workers(
    keys: Sequence[str],
    work: Callable[[str], None],
    gather: Callable[[Sequence[str]], dict[str, Any]],
    merge: Callable[[dict[str, Any]], None],
    description: str,
) -> None:
    """`work(key)` for every key, over the workers `workers_for` allows. Each worker's `gather(its keys)`
    (JSON data) is passed to `merge` here; this process's own share needs none."""
    workers = workers_for(len(keys))
    if workers < 2:
        for key in track(keys, description):
            work(key)
        return
    shares = [list(keys[i::workers]) for i in range(workers)]
    with tempfile.TemporaryDirectory(prefix="kb-pages-") as scratch:
        children: list[tuple[int, list[str], Path]] = []
        gc.freeze()  # what exists now is never collected in a worker, so its pages stay shared, not copied
        try:
            for n, share in enumerate(shares[1:], 1):
                result = Path(scratch) / f"{n}.json"
                children.append((_fork(share, work, gather, result), share, result))
            # this process's share is the one it can count; the workers' go at the same pace
            for key in track(shares[0], f"{description} ({workers} processes, this one's share)"):
                work(key)
        finally:
            finished = [(os.waitpid(pid, 0)[1], share, result) for pid, share, result in children]
            gc.unfreeze()
        for status, share, result in finished:
            gathered = _read(result) if status == 0 else None
            if gathered is None:
                for key in share:  # again, here: what failed there fails here, with this process's error
                    work(key)
            else:
                merge(gathered)


def _fork(
    share: list[str], work: Callable[[str], None], gather: Callable[[Sequence[str]], dict[str, Any]], result: Path
) -> int:
    pid = os.fork()
    if pid != 0:
        return pid
    code = 1
    try:
        _die_with_parent()
        for key in share:
            work(key)
        result.write_text(json.dumps(gather(share)), encoding="utf-8")
        code = 0
    except BaseException:  # noqa: BLE001 -- the parent does this share again and reports what fails
        pass
    finally:
        os._exit(code)  # never the parent's exit handlers, buffers or store connections


def _die_with_parent() -> None:
    """Linux: SIGKILL this worker when the build that forked it dies, whatever kills it."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)


def _read(result: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
