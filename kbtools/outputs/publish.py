"""Where `kb build` may write a site (and `kb export --frontmatter` its directory), and how a new one
replaces the old.

kb deletes only what it wrote. An output directory is replaced only when it does not
exist, is empty, or holds kb's own manifest (`.kb-site.json` bearing kb's mark, a first key
"written_by" naming kb, as kb export marks its JSON) listing every file in it; never when it is
the repository, holds or lies inside records/, schema/ or the theme, is a symlink or a
file. The new site is written into a staging directory beside it, created and removed
only by the build that holds the lock, then swapped in with two renames, so a reader
sees the old site or the new one, never half of one, and two builds never interleave.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kbtools.corpus import Settings
from kbtools.outputs.targets import OutputError, carries_json_mark, inside, protected_paths

SITE_MANIFEST = ".kb-site.json"  # every file kb wrote into a site: what a later build may delete
MANIFEST_KEY = "written_by"  # the manifest's first key, naming the kb command that wrote it: kb's mark
SEARCH_DIR = "pagefind"  # the search index, inside the site
STAGING_MARK = ".kb-staging"  # inside a staging directory: proof that kb made it
_MADE_HERE: set[str] = set()  # the staging directories this process made (some may be gone): remove_own_staging


def check_output(out: Path, settings: Settings, option: str = "--out") -> Path:
    """The resolved output directory, or OutputError saying why kb will not write there (the option that
    named it, `option`, says which: kb build's --out, kb export's --frontmatter)."""
    named = f"{option} {out}"
    if out.is_symlink():
        raise OutputError(f"{named} is a symlink; kb does not replace what a link points at: name the real directory")
    resolved = out.resolve()
    for path, what, may_hold_site in protected_paths(settings):
        if inside(path, resolved):  # the output would contain (and so replace) it
            how = "is" if path == resolved else "contains"
            example = ", e.g. site/_build" if option == "--out" else ""
            raise OutputError(
                f"{named} {how} {what} ({path}), which kb would replace; choose an empty or new directory{example}"
            )
        if not may_hold_site and inside(resolved, path):
            raise OutputError(f"{named} lies inside {what} ({path}); choose a directory outside it")
    if resolved.exists() or resolved.is_symlink():
        mode = os.lstat(resolved).st_mode
        if not stat.S_ISDIR(mode):
            raise OutputError(f"{named} is a file, not a directory; kb never replaces a file")
        foreign = foreign_files(resolved)
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise OutputError(
                f"{named} holds files kb did not write ({shown}); kb replaces only an empty directory "
                "or one it wrote: move them, or choose another directory"
            )
    return resolved


def foreign_files(directory: Path) -> list[str]:
    """Files (and links, and empty directories) in `directory` that its kb manifest does not list."""
    try:
        entries = [e.name for e in os.scandir(directory)]
    except OSError as exc:
        return [f"(unreadable: {exc.strerror})"]
    if not entries:
        return []
    listed = read_manifest(directory)
    if listed is None:
        return sorted(entries)
    found = []
    for rel in walk_files(directory):
        if rel not in listed:
            found.append(rel)
    return sorted(found)


def read_manifest(directory: Path) -> set[str] | None:
    """The files kb's manifest in `directory` lists; None when there is none bearing kb's mark (a leading
    "written_by" naming kb): a `.kb-site.json` the user wrote, or a copy committed with their own files, is
    theirs, and never makes kb take their directory for its output."""
    path = directory / SITE_MANIFEST
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        text = path.read_bytes()
        if not carries_json_mark(text, MANIFEST_KEY, "kb "):
            return None
        data = json.loads(text.decode("utf-8"))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    return set(files) | {SITE_MANIFEST}


def walk_files(directory: Path) -> list[str]:
    """Every entry below `directory` that is not a directory with something in it, as relative paths; links not followed."""
    out = []
    for current, dirs, files in os.walk(directory, followlinks=False):
        base = Path(current).relative_to(directory)
        for name in files:
            out.append((base / name).as_posix())
        for name in list(dirs):
            full = Path(current) / name
            if full.is_symlink():
                out.append((base / name).as_posix())  # a link to a directory: an entry, never walked
                dirs.remove(name)
    return out


def write_manifest(directory: Path, by: str = "kb build") -> None:
    files = sorted([f for f in walk_files(directory) if f != STAGING_MARK] + [SITE_MANIFEST])
    manifest = {MANIFEST_KEY: by, "files": files}  # kb's mark first (read_manifest)
    (directory / SITE_MANIFEST).write_text(json.dumps(manifest, indent=0), encoding="utf-8")


def _staging_prefix(out: Path) -> str:
    return f".{out.name}.kb-staging-"


def remove_debris(out: Path) -> None:
    """Staging directories a killed build left behind. Called under the lock, so no live build owns one;
    only directories named by kb and holding kb's staging mark or kb's site manifest are removed, or empty
    ones (a build killed between making the directory and marking it)."""
    prefix = _staging_prefix(out)
    for entry in os.scandir(out.parent):
        if entry.name.startswith(prefix) or entry.name.startswith(f".{out.name}.kb-old-"):
            if entry.is_dir(follow_symlinks=False) and _kbs_own(Path(entry.path)):
                shutil.rmtree(entry.path, ignore_errors=True)


def _kbs_own(directory: Path) -> bool:
    if os.path.lexists(directory / STAGING_MARK) or read_manifest(directory) is not None:
        return True
    try:
        return not any(os.scandir(directory))
    except OSError:
        return False


def _own_directory(prefix: str, parent: Path) -> Path:
    """A new directory named `prefix` + random letters in `parent`, noted as this process's before it is
    made: a stop signal (kb serve turns SIGTERM into KeyboardInterrupt) landing between making it and noting
    it would leave a directory nobody removes. A name noted but never made is harmless to remove."""
    for _ in range(100):
        path = parent / f"{prefix}{secrets.token_hex(4)}"
        _MADE_HERE.add(str(path))
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free name for a staging directory in {parent}")


def new_staging(out: Path) -> Path:
    _MADE_HERE.difference_update([p for p in _MADE_HERE if not os.path.lexists(p)])  # kept to the ones still there
    staging = _own_directory(_staging_prefix(out), out.parent)
    (staging / STAGING_MARK).write_text("kb build staging directory; safe to delete when no build runs\n")
    os.chmod(staging, 0o755)  # mkdtemp makes it 0700; a published site is readable
    return staging


def remove_own_staging() -> None:
    """Remove the staging directories this process made that are still there: what a build or a search
    index leaves when a signal stops it (kb serve calls this on its way out, whatever stopped it). Each was
    made here by mkdtemp, so it is kb's own even when an interrupted removal already took its mark."""
    for path in sorted(_MADE_HERE):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
    _MADE_HERE.clear()


@contextmanager
def replaced_whole(out: Path, settings: Settings, option: str = "--out", by: str = "kb build") -> Iterator[Path]:
    """A staging directory beside `out` to write into, swapped in for `out` when the block ends and removed
    either way: kb build's site, kb export's --frontmatter directory. The caller holds build_lock; `out` is
    checked again under it (another kb may have written there while this one waited)."""
    check_output(out, settings, option)
    resolved = out.resolve()
    remove_debris(resolved)
    staging = new_staging(resolved)
    try:
        yield staging
        swap_in(staging, resolved, by)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def swap_in(staging: Path, out: Path, by: str = "kb build") -> None:
    """Make `staging` the site (or the directory `by` wrote) at `out`; the previous one, checked by
    check_output, is removed. Where the system can exchange two names in one step (Linux's renameat2), a
    reader or a kill sees the old one or the new one, never none; elsewhere two renames leave a moment
    without one."""
    write_manifest(staging, by)  # first: from here to the swap the directory is marked, then manifested, as kb's
    (staging / STAGING_MARK).unlink()
    if out.exists() and _exchange(staging, out):
        shutil.rmtree(staging, ignore_errors=True)  # the previous site, under the staging name (its manifest marks it)
        return
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.kb-old-", dir=out.parent))
        (old / STAGING_MARK).write_text("")
        os.replace(out, old / "site")
    try:
        os.replace(staging, out)
    except OSError as exc:
        if old is not None:
            os.replace(old / "site", out)  # put the previous site back
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise OutputError(f"{out} appeared while building; nothing was replaced") from None
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


_RENAME_EXCHANGE = 2  # linux/fs.h


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories' names atomically (renameat2 with RENAME_EXCHANGE); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_cwd = -100
    if renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    if ctypes.get_errno() in (errno.EINVAL, errno.ENOSYS, errno.EXDEV, errno.EPERM):
        return False  # a file system or kernel that cannot exchange: the two-rename way
    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), str(b))


def assert_inside(path: Path, directory: Path) -> None:
    """A page path that leaves the site (a schema's odd x-kb-dir, an odd id) is a bug, never a write."""
    resolved = Path(os.path.normpath(path))
    if not inside(resolved, Path(os.path.normpath(directory))):
        raise OutputError(f"refusing to write {path}: it is outside the site directory {directory}")


def link_or_copy(old: str | Path, target: str | Path) -> None:
    """A file of the previous site into the new one: a hard link (the old site is deleted after the swap and
    the inode lives on here), or a copy where the file system has none."""
    try:
        os.link(old, target)
    except OSError:
        shutil.copy2(old, target)


def replace_part(out: Path, name: str, new: Path) -> None:
    """Put the directory `new` in place of `out/name` (the search index, indexed after the pages were
    published), and list its files in the site's manifest. The caller holds the build lock."""
    target = out / name
    if target.is_dir() and not target.is_symlink() and _exchange(new, target):
        shutil.rmtree(new, ignore_errors=True)  # the previous index, under the new one's name
    else:
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(new, target)
    write_manifest(out)
