"""Where kb keeps its own state for one knowledge base: in the user's cache directory, never in the
repository nor in any git work tree. Nothing a commit, a pull request or a copied checkout carries can be
found there, so no file in the repository can pose as a journal kb replays. (docs/state.md for the user.)

    $XDG_CACHE_HOME/kb/repos/<digest of the repository's resolved path>/   (default ~/.cache/kb/...)
        repository          the repository's resolved path: whose state this is (for kb cache and the sweep)
        check.sqlite        the per-stage cache (kbtools.check.store), with SQLite's -wal and -shm
        check-runs.sqlite   the last whole run's answer (kbtools.check.run.memo)
        move-journal.json   an unfinished kb mv (kbtools.authoring.journal)

The base is `$XDG_CACHE_HOME` when it is absolute (the XDG spec says a relative one is ignored), else
`~/.cache` when the home directory is absolute. A base whose state directory would lie inside the
repository (resolved) or inside any git work tree (a directory holding `.git` at or above it) is refused,
and the next one is tried; when none is left kb works without state (StateUnavailable), which costs
time and the ability to finish an interrupted kb mv, and `kb cache` says why.

The state directory is made private to the user (0700) and used only when it is theirs. Every file kb
opens in it is looked at first without following a link (`private_file`): a regular file of the user's,
or nothing. A link, dangling or not, a FIFO or another user's file there is neither read, nor written,
nor created through.

State is bounded: `sweep` removes, now and then and a few directories at a time, the state of
repositories that are gone; `kb cache` shows every state directory and `kb cache prune` removes the
state of the gone ones (`--all`: every one but a state holding an unfinished kb mv).
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import sqlite3
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from kbtools.files import _kind, read_regular_file, walk

RECORD = "repository"  # the resolved path of the repository a state directory belongs to
CACHE = "check.sqlite"
MEMO = "check-runs.sqlite"
JOURNAL = "move-journal.json"
SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")  # what SQLite opens beside a database, by its name

SWEEP_STAMP = "last-sweep"  # in kb's base directory: when the last sweep ran, and where it stopped
SWEEP_EVERY_S = 24 * 3600
SWEEP_BATCH = 16  # state directories looked at per sweep: a run never pays for a thousand of them
UNRECORDED_AGE_S = 30 * 24 * 3600  # a state directory of an older kb (no record) unused this long is removed
MAX_RECORD_BYTES = 64 * 1024


class StateUnavailable(OSError):
    """kb's state directory cannot be had safely (not the user's, shared, not writable, or in a place a
    commit could write to); str() says why."""

    def __init__(self, why: str, errno_: int = 0):
        super().__init__(errno_, why)
        self.why = why

    def __str__(self) -> str:
        return self.why


class NotPrivate(StateUnavailable):
    """A file in kb's state directory that is not a regular file of the user's: a link, a FIFO, a directory."""


def key(root: Path) -> str:
    """The name of a repository's state directory: a digest of its resolved path."""
    return hashlib.blake2b(os.fsencode(str(root.resolve())), digest_size=12).hexdigest()


# ---------------------------------------------------------------- where: the base directory


def _home() -> str | None:
    if "HOME" in os.environ:
        return os.environ["HOME"]
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return None


def _candidates() -> tuple[list[Path], list[str]]:
    """kb's base directories in order of preference, and why a setting gave none."""
    found, said = [], []
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        if os.path.isabs(xdg):
            found.append(Path(xdg) / "kb")
        else:
            said.append(f"$XDG_CACHE_HOME is relative ({xdg}), so it is ignored, as the XDG spec says")
    home = _home()
    if home and os.path.isabs(home):
        found.append(Path(home) / ".cache" / "kb")
    else:
        said.append(f"the home directory ({'$HOME is ' + repr(home) if home is not None else 'none'}) is not absolute")
    return found, said


def _refused(base: Path, root: Path | None) -> str | None:
    """Why a base directory must not hold kb's state, or None. A state directory a commit can write into
    could carry a journal kb replays or a link kb writes through."""
    real = Path(os.path.realpath(base))
    if root is not None:
        repository = root.resolve()
        if real == repository or repository in real.parents:
            return f"{base} lies inside the repository {repository}"
    for directory in (real, *real.parents):
        if os.path.lexists(directory / ".git"):
            return f"{base} lies inside the git work tree {directory}"
    return None


def _chosen(root: Path | None) -> tuple[Path | None, list[str]]:
    """The first base kb may use (None: none), and why each setting or directory before it was passed over."""
    candidates, said = _candidates()
    for base in candidates:
        problem = _refused(base, root)
        if problem is None:
            return base, said
        said.append(problem)
    return None, said


def state_base(root: Path | None = None) -> Path:
    """kb's base directory (…/kb, holding repos/), made or not. Raises StateUnavailable saying why none is usable."""
    base, said = _chosen(root)
    if base is None:
        raise StateUnavailable("kb keeps no state: " + "; ".join(said))
    return base


def notes(root: Path | None = None) -> list[str]:
    """Every setting or directory kb passed over, and why (kb cache shows them): a relative $XDG_CACHE_HOME, a
    cache directory inside a git work tree."""
    return _chosen(root)[1]


# ---------------------------------------------------------------- the state directory


def _own_directory(path: Path, private: bool) -> bool:
    """True when `path` is a directory (not a link) of this user's, and private if asked; False when absent.
    StateUnavailable otherwise."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StateUnavailable(f"cannot look at {path}: {exc.strerror}", exc.errno or 0) from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or (private and st.st_mode & 0o077):
        kind = "a private directory" if private else "a directory"
        raise StateUnavailable(f"{path} is not {kind} of this user's; kb keeps no state there")
    return True


def _make(path: Path) -> None:
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise StateUnavailable(f"cannot make kb's state directory {path}: {exc.strerror}", exc.errno or 0) from exc


def state_dir(root: Path, create: bool = True) -> Path:
    """This knowledge base's state directory; made (0700, with its record) when `create`. Raises StateUnavailable."""
    base = state_base(root)
    path = base / "repos" / key(root)
    if create:
        try:
            base.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateUnavailable(f"cannot make {base.parent}: {exc.strerror}", exc.errno or 0) from exc
        for directory in (base, base / "repos", path):
            _make(directory)
    for directory in (base, base / "repos"):
        if not _own_directory(directory, private=False):
            return path  # not made yet (create=False): nothing is stored there
    if not _own_directory(path, private=True):
        return path
    _record(path, root)  # also into a directory an older kb made: its repository is then known, not guessed by age
    return path


def _record(path: Path, root: Path) -> None:
    """Write whose state this is, once: made exclusively, so never through a link nor over a file."""
    try:
        fd = os.open(path / RECORD, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return  # there already (or cannot be made: the state works without it, and is judged by age)
    try:
        os.write(fd, os.fsencode(str(root.resolve())) + b"\n")
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------- files in it, never through a link


def private_file(path: Path) -> os.stat_result | None:
    """What is at `path` in kb's state directory, looked at without following a link: None when nothing is
    there, its stat when it is a regular file of this user's. Anything else (a link, dangling or not, a
    FIFO, a directory, another user's file) raises NotPrivate: kb neither reads nor writes nor creates it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise NotPrivate(f"cannot look at {path}: {exc.strerror}", exc.errno or 0) from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else _kind(st.st_mode)
        raise NotPrivate(f"{path.name} is {kind}, not a regular file")
    if st.st_uid != os.getuid():
        raise NotPrivate(f"{path.name} belongs to another user")
    return st


def private_database(path: Path) -> bool:
    """True when an SQLite database kb keeps is there, False when it is not; NotPrivate when it, or a file
    SQLite opens beside it by name (-journal, -wal, -shm), is a link or anything but the user's regular file.
    Call it before sqlite3 opens the path: SQLite follows links, and creates the file a dangling one names."""
    there = private_file(path) is not None
    for suffix in SQLITE_SIDE_FILES:
        private_file(path.with_name(path.name + suffix))
    return there


def read_private(path: Path, limit: int) -> bytes:
    """A file of kb's state, at most `limit` bytes, read only when it is the user's regular file: never through
    a link, never a FIFO. FileNotFoundError when nothing is there; NotPrivate or NotReadable otherwise."""
    seen = private_file(path)
    if seen is None:
        raise FileNotFoundError(errno.ENOENT, "no such file", str(path))
    raw, read = read_regular_file(path, limit)
    if (read.st_dev, read.st_ino) != (seen.st_dev, seen.st_ino):  # swapped between the look and the open
        raise NotPrivate(f"{path.name} was replaced while kb read it")
    return raw


def disk_full(exc: BaseException) -> bool:
    """A write failed for want of space: the system call says so (ENOSPC, a quota's EDQUOT), or SQLite does
    (SQLITE_FULL), or SQLite reports an I/O error, as it does when its -shm or -wal cannot grow on a full
    disk (SQLITE_IOERR_SHMSIZE, _WRITE). A store with an I/O error is doubtful whatever the cause."""
    if isinstance(exc, sqlite3.Error):
        return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR)
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def discard_database(path: Path) -> None:
    """Remove one of kb's SQLite stores and the files beside it (a full disk: a store that cannot be written
    must not keep the last free space). Links are removed, never followed; other kinds are left alone."""
    for name in (path.name, *(path.name + suffix for suffix in SQLITE_SIDE_FILES)):
        target = path.with_name(name)
        try:
            if not stat.S_ISDIR(os.lstat(target).st_mode):
                target.unlink()
        except OSError:
            pass


# ---------------------------------------------------------------- bounded: every state directory, and the gone ones


@dataclass(frozen=True)
class Held:
    """One state directory, as `kb cache` shows it."""

    path: Path
    repository: str | None  # the resolved path it belongs to; None: made by a kb before the record
    size: int  # bytes of its files
    last_used_s: float  # the newest modification of it or anything in it
    gone: bool  # its repository is no longer there (or, unrecorded, it is unused for UNRECORDED_AGE_S)
    journal: bool  # it holds an unfinished kb mv


def _repository(path: Path) -> str | None:
    try:
        raw = read_private(path / RECORD, MAX_RECORD_BYTES)
    except OSError:
        return None
    text = os.fsdecode(raw.rstrip(b"\n"))
    return text if os.path.isabs(text) and "\n" not in text and "\0" not in text else None


def _is_gone(name: str, repository: str) -> bool:
    """The repository a state directory was made for no longer exists, or its path names another directory now."""
    try:
        os.lstat(repository)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False  # cannot tell (a permission): kept
    try:
        return key(Path(repository)) != name
    except (OSError, RuntimeError):
        return False


def look(path: Path, now: float | None = None) -> Held:
    """A state directory's repository, size and last use, read without following a link."""
    repository = _repository(path)
    size, newest = 0, os.lstat(path).st_mtime
    journal = False
    for inner, _subdirs, names in walk(str(path)):
        for entry in names:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            size += st.st_size if stat.S_ISREG(st.st_mode) else 0
            newest = max(newest, st.st_mtime)
            journal = journal or (entry.name == JOURNAL and inner == ".")
    if repository is not None:
        gone = _is_gone(path.name, repository)
    else:
        gone = (now if now is not None else time.time()) - newest > UNRECORDED_AGE_S
    return Held(path, repository, size, newest, gone, journal)


def _held_directories(repos: Path) -> list[Path]:
    """The state directories under repos/: directories (never a link) of this user's, by name."""
    out = []
    try:
        with os.scandir(repos) as entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
                    out.append(Path(entry.path))
    except OSError:
        return []
    return sorted(out)


def held(root: Path | None = None) -> list[Held]:
    """Every state directory of this user's kb. StateUnavailable when kb keeps no state."""
    repos = state_base(root) / "repos"
    if not _own_directory(repos.parent, private=False) or not _own_directory(repos, private=False):
        return []
    now = time.time()
    out = []
    for path in _held_directories(repos):
        try:
            out.append(look(path, now))
        except OSError:
            continue  # removed meanwhile
    return out


def remove(path: Path) -> bool:
    """Remove one state directory, after looking again that it is a directory of this user's (never a link;
    rmtree follows none inside)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return False
    shutil.rmtree(path, ignore_errors=True)
    return not os.path.lexists(path)


def sweep(root: Path | None = None, now: float | None = None) -> list[Path]:
    """Now and then (once a day at most, keyed by a stamp in kb's base directory), look at a few state
    directories (SWEEP_BATCH, going on next time where this one stopped) and remove those of repositories
    that are gone. What it removed. Never raises: a sweep that cannot run costs nothing."""
    try:
        base = state_base(root)
        repos = base / "repos"
        if not _own_directory(base, private=False) or not _own_directory(repos, private=False):
            return []
        stamp = base / SWEEP_STAMP
        now = time.time() if now is None else now
        try:
            if 0 <= now - os.lstat(stamp).st_mtime < SWEEP_EVERY_S:
                return []
        except FileNotFoundError:
            pass
        try:
            after = os.fsdecode(read_private(stamp, 256)).strip()
        except OSError:
            after = ""  # none yet, or one kb cannot read: the sweep starts from the first directory
        every = _held_directories(repos)
        batch = [p for p in every if p.name > after][:SWEEP_BATCH]
        batch += every[: SWEEP_BATCH - len(batch)] if len(batch) < SWEEP_BATCH and after else []
        _write_stamp(stamp, batch[-1].name if batch else "")  # first, so two kb at once do not both sweep
        removed = []
        for path in dict.fromkeys(batch):
            try:
                gone = look(path, now).gone
            except OSError:
                continue
            if gone and remove(path):
                removed.append(path)
        return removed
    except (OSError, ValueError, RuntimeError):  # ValueError, RuntimeError: a path kb cannot look at (a loop)
        return []


def _write_stamp(stamp: Path, text: str) -> None:
    try:
        private_file(stamp)
    except NotPrivate:  # a link or a FIFO where kb keeps its stamp: removed (a link, not what it names)
        if not stat.S_ISDIR(os.lstat(stamp).st_mode):
            stamp.unlink()
    fd = os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid():
            os.write(fd, os.fsencode(text) + b"\n")
    finally:
        os.close(fd)
