"""Reading a file kb did not write (a record, a schema, a configuration, a theme file, a model config):
only a regular file, opened without blocking and checked once open, and at most `limit` bytes. A FIFO
never hangs kb, a link to /dev/zero is never read, and a file swapped for another between a check and the
read is the file that was checked."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator

MAX_SCHEMA_BYTES = 5 * 1024 * 1024  # this repository's largest schema is some 30 KB
MAX_CONFIG_BYTES = 1024 * 1024  # kb.toml, pyproject.toml: a few KB


def digest(data: bytes) -> str:
    """A file's bytes, hashed: what the store keys a file's results by and a move's journal checks against."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class NotReadable(OSError):
    """The path is no regular file, or is larger than kb reads, or cannot be read; str() says which."""

    def __init__(self, message: str, too_large: bool = False):
        super().__init__(message)
        self.message, self.too_large = message, too_large

    def __str__(self) -> str:
        return self.message


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def read_regular_file(path: str | os.PathLike[str], limit: int) -> tuple[bytes, os.stat_result]:
    """A regular file's bytes (at most `limit`) and its stat, taken before the read. NotReadable otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise NotReadable(f"cannot read file: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotReadable(f"not a regular file but {_kind(st.st_mode)}; it was not read")
        if st.st_size > limit:
            raise NotReadable(
                f"file is {st.st_size / 1048576:.1f} MiB; kb reads at most {limit / 1048576:g} MiB here (it was not read)",
                too_large=True,
            )
        with os.fdopen(os.dup(fd), "rb") as handle:
            try:
                raw = handle.read(limit + 1)
            except OSError as exc:
                raise NotReadable(f"cannot read file: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise NotReadable(f"file grew past {limit / 1048576:g} MiB while it was read; it was not read", too_large=True)
    return raw, st


def walk(
    top: str, onerror: Callable[[OSError], None] | None = None
) -> Iterator[tuple[str, list[os.DirEntry[str]], list[os.DirEntry[str]]]]:
    """os.walk's top-down walk, links never followed into: (a directory's path relative to `top` with '/'
    ('.' for top itself), its subdirectories, its other entries), each list sorted by name. Remove an entry from
    the subdirectories to skip it. Directory entries are scandir's, so an entry's kind and lstat cost no
    call of their own. A link to a directory is listed with the subdirectories, as os.walk lists it, and
    not descended. The walk keeps its own stack: a tree can be deeper than Python's (os.walk recurses)."""
    pending = [(top, ".")]
    while pending:
        directory, inner = pending.pop()
        subdirs: list[os.DirEntry[str]] = []
        names: list[os.DirEntry[str]] = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    (subdirs if is_dir else names).append(entry)
        except OSError as error:
            if onerror is not None:
                onerror(error)
            continue
        subdirs.sort(key=lambda entry: entry.name)
        names.sort(key=lambda entry: entry.name)
        yield inner, subdirs, names
        pending.extend(
            (entry.path, entry.name if inner == "." else f"{inner}/{entry.name}")
            for entry in reversed(subdirs)
            if not entry.is_symlink()
        )
