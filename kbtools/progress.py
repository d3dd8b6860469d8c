"""Progress bars (rich) for work that takes more than about a second, on a terminal only.

Quiet when stderr is not a terminal (pre-commit, CI, pipes) or with --quiet; and a
bar only appears once a task has run for a second, so quick runs print nothing extra.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator, Sized
from typing import TypeVar

T = TypeVar("T")
DELAY = float(os.environ.get("KB_PROGRESS_DELAY", "1.0"))  # seconds of work before a bar appears
_enabled = False


def configure(quiet: bool) -> None:
    global _enabled
    _enabled = not quiet and sys.stderr.isatty()


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    if not _enabled:
        yield from items
        return
    total = total if total is not None else (len(items) if isinstance(items, Sized) else None)
    start, bar, task = time.monotonic(), None, None
    try:
        for done, item in enumerate(items):
            if bar is None and time.monotonic() - start > DELAY:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

                bar = Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeRemainingColumn(),
                    console=Console(stderr=True),
                    transient=True,
                )
                bar.start()
                task = bar.add_task(description, total=total, completed=done)
            if bar is not None and task is not None:
                bar.update(task, completed=done)
            yield item
    finally:
        if bar is not None:
            bar.stop()
