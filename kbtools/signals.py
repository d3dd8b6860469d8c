"""The stop signals (SIGINT, SIGTERM, SIGHUP) raised as an exception where kb is, so that what it made is
removed as for Ctrl-C, and held while it makes something it must be able to find again.

Two commands stop this way. `kb measure` is a run: it removes its file and records, then ends as the signal
ends a process, and keeps a signal it was started ignoring (nohup) ignored. `kb serve` is a server: a stop
signal is how it ends, so it takes all three, unwinds the build under way and exits 0.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

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


@dataclass
class Stops:
    """The stop signals a stop_signals_raise block handles (none outside the main thread)."""

    handled: list[int] = field(default_factory=list)

    def ignore(self) -> None:
        """Ignore them from here to the block's end: a cleanup that takes a moment is not cut short."""
        for signum in self.handled:
            signal.signal(signum, signal.SIG_IGN)


@contextmanager
def stop_signals_raise(*, ignored_too: bool = False, end_as_signalled: bool = True) -> Iterator[Stops]:
    """While the block runs, a stop signal raises Stopped into it, so each `finally` removes what kb made
    (a SIGTERM would otherwise end the process where it stands); inside a signals_held block, at that
    block's end. A second stop signal does not cut the first one's cleanup short. Afterwards the previous
    handlers are back (but one set outside Python, which cannot be put back from here).

    - A signal that was ignored (nohup) stays ignored, unless `ignored_too`.
    - With `end_as_signalled`, a signal whose previous handler was the default one is delivered again once
      the handlers are back: kb then ends as that signal ends a process, and whoever sent it sees so.
      Without, the block's caller decides how kb ends (kb serve: stopped as asked, exit 0)."""
    stops = Stops()
    if threading.current_thread() is not threading.main_thread():
        yield stops  # only the main thread may set handlers
        return
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    stops.handled = [
        signum for signum, handler in previous.items() if ignored_too or handler not in (signal.SIG_IGN, None)
    ]
    stopping: list[int] = []

    def stop(signum: int, frame: object) -> None:
        if stopping:
            return  # a second signal must not cut the first one's cleanup short
        stopping.append(signum)
        if _held.depth:  # held: the outermost block raises it as it ends, whichever thread the signal reached
            _held.deferred = signum
            return
        raise Stopped(signum)

    for signum in stops.handled:
        signal.signal(signum, stop)
    try:
        yield stops
    finally:
        for signum in stops.handled:
            if previous[signum] is not None:  # None: a handler set outside Python
                signal.signal(signum, previous[signum])
        if end_as_signalled and stopping and previous[stopping[0]] is signal.SIG_DFL:
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


def default_stop_signals() -> None:
    """A forked worker dies of a stop signal quietly, as the default does: the parent cleans up. One the
    worker was started ignoring stays ignored."""
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
