"""Writing files so that a crash or a kill never leaves half a file, nothing is overwritten by
surprise, and an edit someone saved meanwhile is never lost.

Every rewrite goes through a temporary file beside the target that becomes the target in one
rename. A rewrite of a file kb read first (kb fmt, kb new --force) passes the bytes it read:
just before the rename the file is read again, and if it changed in the meantime nothing is
replaced (ChangedMeanwhile). What is left between that re-check and the rename is the time
of one system call, the same window git's own index update has. The replacement keeps the
file's permission bits and, where the process may set them, its owner and group.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kbtools.diagnostics import UsageError, one_line
from kbtools.files import walk

# Every temporary kb stages a record in is '.' + the record's name + this mark + mkstemp's 8 characters. The
# mark is kb's own, so a user's hidden file beside a record ('.notes.md.original') is never taken for a killed
# run's temporary and removed.
TEMP_MARK = ".kb-tmp-"


class ChangedMeanwhile(UsageError):
    """The file changed after kb read it; kb left it as it is."""


@contextmanager
def staged(path: Path, like: os.stat_result | None = None) -> Iterator[Path]:
    """A temporary file beside `path` to write; it becomes `path` in one rename when the block succeeds.
    Its mode (and owner, when allowed) are those of `like`, else what a new file gets under the umask."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARK}", dir=path.parent)
    os.close(handle)
    tmp = Path(name)
    try:
        take_mode(tmp, like)
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def take_mode(tmp: Path, like: os.stat_result | None) -> None:
    if like is None:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 is for secrets, not records
        return
    os.chmod(tmp, stat.S_IMODE(like.st_mode))
    if (like.st_uid, like.st_gid) != (os.getuid(), os.getgid()):
        try:
            os.chown(tmp, like.st_uid, like.st_gid)
        except PermissionError:
            pass  # only root may give a file away; the content is still the user's


def write_synced(tmp: Path, text: str) -> None:
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())


def replace_file(path: Path, text: str, expected: bytes | None = None) -> None:
    """Write `path` whole, replacing what was there. With `expected` (the bytes kb read), refuse with
    ChangedMeanwhile when the file no longer holds exactly those bytes."""
    try:
        like = os.stat(path)
    except FileNotFoundError:
        like = None
    with staged(path, like) as tmp:
        write_synced(tmp, text)
        if expected is not None:
            try:
                now = path.read_bytes()
            except FileNotFoundError:
                now = None
            if now != expected:
                raise ChangedMeanwhile(
                    f"{path.name} changed while kb worked on it; it was left as it is (run kb again)"
                )


def temporary_beside(path: Path, text: str, like: os.stat_result | None = None) -> Path:
    """A hidden temporary next to `path` holding `text`, synced, with the mode of `like` (else a new
    file's): what becomes `path` in one rename or link. The caller removes it if it never does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARK}", dir=path.parent)
    os.close(handle)
    tmp = Path(name)
    try:
        take_mode(tmp, like)
        write_synced(tmp, text)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def create_file(path: Path, text: str) -> None:
    """Write `path` whole, only if it does not exist yet (FileExistsError otherwise, even in a race)."""
    tmp = temporary_beside(path, text)
    try:
        os.link(tmp, path)  # fails if the target exists: two writers can never both create it
    finally:
        tmp.unlink()


_TEMP = re.compile(r"^\..+\.md" + re.escape(TEMP_MARK) + r"[a-z0-9_]{8}$")  # what mkstemp names a staged record


class LeadsOutside(UsageError):
    """A directory kb would write records into leads outside the repository (a symbolic link out of it)."""


def check_inside(root: Path, directory: Path) -> None:
    """LeadsOutside unless `directory` (records/, or a directory under it), and every directory on the way to
    it from `root`, leads to a place inside the repository: through a records/ or records/<dir>/ that is a
    symbolic link out of it, a record kb writes would land wherever the link points."""
    resolved_root = root.resolve()
    rel = directory.relative_to(root)  # a directory kb names under the root: a ValueError is a bug
    for depth in range(1, len(rel.parts) + 1):
        shown = one_line(Path(*rel.parts[:depth]).as_posix())
        try:
            leads_to = root.joinpath(*rel.parts[:depth]).resolve()
        except (OSError, RuntimeError) as exc:  # a link loop: it leads nowhere kb could write
            raise LeadsOutside(f"{shown}/ cannot be followed ({exc}); nothing was written") from None
        if not leads_to.is_relative_to(resolved_root):
            raise LeadsOutside(
                f"{shown}/ leads outside the repository (to {one_line(str(leads_to))}); kb writes records only "
                f"inside it, so nothing was written (make {shown} a directory of the repository's own)"
            )


@contextmanager
def writers_lock(root: Path, directory: Path) -> Iterator[None]:
    """One kb writer of records at a time (kb fmt, kb new, kb mv, kb measure): a lock on the records
    directory itself. Every writer holds it while its temporaries exist, so under it any temporary is a
    killed run's. A records directory that leads outside the repository is refused here, for every writer
    at once (LeadsOutside)."""
    import fcntl

    check_inside(root, directory)
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield  # no records directory yet: nothing to guard
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def remove_stale_temporaries(directory: Path) -> int:
    """Temporary files a killed writer left behind (the records themselves are always whole).
    Call it holding writers_lock, so that no live writer's temporary is taken from it."""
    removed = 0
    for _inner, _subdirs, names in walk(str(directory)):  # no recursion: trees can be deep
        for entry in names:
            if not _TEMP.match(entry.name):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                Path(entry.path).unlink(missing_ok=True)
                removed += 1
    return removed
