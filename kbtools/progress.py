"""Progress bars (rich) for work that takes more than about a second, on a terminal only.

Quiet when stderr is not a terminal (pre-commit, CI, pipes) or with --quiet; and a
bar only appears once a task has run for a second, so quick runs print nothing extra.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sized
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
DELAY = float(os.environ.get("KB_PROGRESS_DELAY", "1.0"))  # seconds of work before a bar appears
_enabled = False


def configure(quiet: bool) -> None:
    global _enabled
    _enabled = not quiet and sys.stderr.isatty()


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Each item of `items`, with a bar (once the work has taken DELAY seconds) that counts an item done when
    the caller asks for the next one, and so ends at total/total."""
    if not _enabled:
        yield from items
        return
    total = total if total is not None else (len(items) if isinstance(items, Sized) else None)
    start, bar, task, done = time.monotonic(), None, None, 0
    try:
        for item in items:
            if bar is None and time.monotonic() - start > DELAY:
                bar = _bar(counting=True)
                task = bar.add_task(description, total=total, completed=done)
            if bar is not None and task is not None:
                bar.update(task, completed=done)
            yield item
            done += 1
        if bar is not None and task is not None:
            bar.update(task, completed=done)  # the last item is done too: the bar's last frame says so
            bar.refresh()
    finally:
        if bar is not None:
            bar.stop()


@contextmanager
def waiting(description: str) -> Iterator[None]:
    """A spinner with the time taken, for work that reports no progress of its own (a subprocess such as
    the search indexer): shown once it has run for DELAY seconds, gone when it ends."""
    if not _enabled:
        yield
        return
    stop = threading.Event()

    def spin() -> None:
        if stop.wait(DELAY):
            return
        bar = _bar(counting=False)
        bar.add_task(description, total=None)
        try:
            stop.wait()
        finally:
            bar.stop()

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        yield
    finally:
        stop.set()
        spinner.join()


def _bar(counting: bool) -> Any:
    """A started rich Progress on stderr, which leaves no trace when stopped: a bar with done/total and the
    time left when `counting`, else a spinner and the time taken. (rich is imported only when one shows.)"""
    from rich import progress as rp
    from rich.console import Console

    columns = (
        (rp.BarColumn(), rp.MofNCompleteColumn(), rp.TimeRemainingColumn())
        if counting
        else (rp.SpinnerColumn(), rp.TimeElapsedColumn())
    )
    bar = rp.Progress(rp.TextColumn("{task.description}"), *columns, console=Console(stderr=True), transient=True)
    bar.start()
    return bar
