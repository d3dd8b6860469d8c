"""What `kb cache` says: every state directory of this user's kb (the store, the memo, a move journal), one
line each, and which of them `kb cache prune` removes: those of repositories that are gone, or with --all
every one (never one holding an unfinished kb mv of a repository that is still there)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from kbtools import state
from kbtools.diagnostics import one_line
from kbtools.outputs.report import counted

STATELESS = "kb works without a cache, a memo or a move journal (each check is a cold one)"


def state_report(here: Path | None, prune: bool, every: bool) -> Iterator[str]:
    """The lines of `kb cache` (`here`: the knowledge base it runs in, whose line is marked; None outside one)."""
    try:
        base = state.state_base(here)
    except state.StateUnavailable as exc:
        yield f"{one_line(str(exc))}; {STATELESS}"
        return
    for note in state.notes(here):  # a setting kb did not follow: the user may think it did
        yield f"note: {one_line(note)}"
    try:
        if here is not None:
            state.state_dir(here, create=False)
    except state.StateUnavailable as exc:
        yield f"note: for this repository {one_line(str(exc))}: {STATELESS}"
    try:
        held = state.held(here)
    except state.StateUnavailable as exc:
        yield f"{one_line(str(exc))}; {STATELESS}"
        return
    mine = state.key(here) if here is not None else None

    def shown(item: state.Held) -> str:
        if item.repository is None:
            days = (time.time() - item.last_used_s) / 86400
            return f"unknown (made by an older kb; unused for {days:.0f} days)"
        return one_line(item.repository) + (" (this repository)" if item.path.name == mine else "")

    if prune:
        removed, freed = 0, 0
        for item in held:
            if not (item.gone or every):
                continue
            if item.journal and not item.gone:
                yield f"kept {item.path.name}: {shown(item)} holds an unfinished kb mv; kb check there finishes it"
            elif state.remove(item.path):
                removed, freed = removed + 1, freed + item.size
                yield f"removed {item.path.name}: {shown(item)}{' (gone)' if item.gone else ''}, {_size(item.size)}"
        yield (
            f"removed the state of {counted(removed, 'repository', 'repositories')} ({_size(freed)}) from "
            f"{one_line(str(base / 'repos'))}"
        )
        return
    total = sum(item.size for item in held)
    yield (
        f"kb keeps its state in {one_line(str(base / 'repos'))}: "
        f"{counted(len(held), 'repository', 'repositories')}, {_size(total)}"
    )
    for item in held:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(item.last_used_s))
        flags = (" gone" if item.gone else "") + (" (an unfinished kb mv)" if item.journal else "")
        yield f"{item.path.name}  {_size(item.size):>9}  last used {used}  {shown(item)}{flags}"
    gone = [item for item in held if item.gone]
    if gone:
        yield (
            f"{counted(len(gone), 'repository', 'repositories')} gone ({_size(sum(item.size for item in gone))}): "
            "kb cache prune removes that state"
        )


def _size(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 1e6 else f"{count / 1e3:.0f} kB"
