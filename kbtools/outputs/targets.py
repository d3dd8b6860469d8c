"""Where kb may write what it makes (a site, an export): what it must never replace, and one writer at a
time per directory. Shared by kb build (kbtools.outputs.publish) and kb export."""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kbtools.corpus import Settings
from kbtools.diagnostics import UsageError


class OutputError(UsageError):
    """The output directory cannot be used; the message says why and what to do."""


def carries_json_mark(head: bytes, key: str, writer: str) -> bool:
    """Whether a JSON file, by its first bytes `head`, bears kb's mark: an object whose first key is `key`
    with a string value beginning `writer`. kb writes that key first in every JSON file it may later replace
    (an export's "generator", a site's manifest's "written_by"); a user's file has no reason to begin so,
    and one that merely has the key (or a manifest's "files" list) further on is the user's."""
    pattern = rb'\A\{\s*"' + re.escape(key.encode()) + rb'"\s*:\s*"' + re.escape(writer.encode())
    return re.match(pattern, head) is not None


def inside(path: Path, other: Path) -> bool:
    return path == other or other in path.parents


def protected_paths(settings: Settings) -> list[tuple[Path, str, bool]]:
    """What a build must never replace: (path, the words to name it, whether a site may live inside it)."""
    root = settings.root.resolve()
    theme = settings.site_path.resolve()
    out = [(root, "the repository itself", True), (theme, f"the theme ({settings.site_dir}/)", True)]
    for path, what in (
        (settings.records_path, "the records"),
        (settings.schema_path, "the schemas"),
        (theme / "templates", "the theme's templates"),
        (theme / "static", "the theme's static files"),
        (root / ".git", "git's history"),
        (root / ".kb-cache", "kb's cache"),
    ):
        out.append((path.resolve(), what, False))
    return out


@contextmanager
def build_lock(out: Path) -> Iterator[None]:
    """One build at a time per parent directory: a second build waits for the first to finish.
    The lock is taken on the parent directory itself, so no lock file is left beside the site."""
    fd = os.open(out.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
