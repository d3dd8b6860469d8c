"""Writing files so that a crash or a kill never leaves half a file, and nothing is overwritten by surprise."""
from __future__ import annotations

import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def staged(path: Path) -> Iterator[Path]:
    """A temporary file beside `path` to write; it becomes `path` in one rename when the block succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(handle)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write_synced(tmp: Path, text: str) -> None:
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())


def replace_file(path: Path, text: str) -> None:
    """Write `path` whole, replacing what was there."""
    with staged(path) as tmp:
        _write_synced(tmp, text)


def create_file(path: Path, text: str) -> None:
    """Write `path` whole, only if it does not exist yet (FileExistsError otherwise, even in a race)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(handle)
    try:
        _write_synced(Path(name), text)
        os.link(name, path)  # fails if the target exists: two writers can never both create it
    finally:
        os.unlink(name)


_TEMP = re.compile(r"^\..+\.md\.[A-Za-z0-9_]{8}$")  # what mkstemp above names a staged record


def remove_stale_temporaries(directory: Path) -> int:
    """Temporary files a killed writer left behind (the records themselves are always whole)."""
    removed = 0
    for path in directory.rglob(".*.md.*"):
        if path.is_file() and _TEMP.match(path.name):
            path.unlink(missing_ok=True)
            removed += 1
    return removed
