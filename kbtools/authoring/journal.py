"""Rewriting several records all or nothing, so that a kill at any point leaves, after the next kb command,
either every file as it was or every file as the rewrite made it, and an edit saved meanwhile is kept.

The journal is kb's own state, in the user's cache directory (kbtools.state), never in the repository: a
journal that a commit carries is never read. Even so, kb trusts nothing in it that it can check: every path
must lie in the records directory and name a record file (or one of kb's marked temporaries beside it), and
kb renames a temporary only while it holds exactly the bytes kb staged and its target holds exactly the
bytes kb read. Anything else is a conflict, and a conflict undoes the rewrite.

One function says whether a kb mv is unfinished (`unfinished`): anything at the journal's place. kb check,
every other command and kb mv itself ask it, and recover() either acts on the journal or, when it cannot
read it (not JSON, too large, nested past reason, a FIFO, a directory, a link) or will not act on it (a
path outside the records), reports it once, sets it aside unopened and changes nothing: then kb mv can
go on. A kb killed while writing the journal leaves a marked temporary beside it; recover() removes those.

    staging    the journal lists the temporaries before they exist; killed here, the next kb removes
               them (those that carry kb's mark and are regular files) and the records are as they were
    committed  every temporary is written and synced and every target re-read unchanged; from here the
               next kb finishes the rewrite: each target re-checked just before its rename
    conflict   a target not yet renamed, or its temporary, is not what kb recorded (an edit saved meanwhile,
               a `git checkout .`, a `git stash -u`): what was renamed is put back from the journal's copy
               of the old text (only where the file still holds kb's new text), the rest is left alone, and
               kb says so. A target edited after kb renamed into it is no conflict: the edit was made on
               kb's text, so finishing the rewrite keeps it
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from kbtools.atomic import TEMP_MARK, ChangedMeanwhile, replace_file, take_mode, write_synced
from kbtools.files import digest
from kbtools.ids import is_id
from kbtools.state import JOURNAL, StateUnavailable, read_private, state_dir

FORMAT = 1
NAME = JOURNAL
SET_ASIDE = JOURNAL + ".set-aside"  # a journal kb would not act on, moved out of the way unopened
# a kb mv whose journal (the old text of every file it rewrites) would be larger is refused before it begins
MAX_JOURNAL_BYTES = 128 * 1024 * 1024
_JOURNAL_TEMPORARY = re.compile(r"^\." + re.escape(JOURNAL + TEMP_MARK) + r"[a-z0-9_]{8}$")  # atomic.staged's
TEMPORARY = re.compile(r"^\.(?P<target>.+\.md)\.[0-9a-f]{8}$")  # .<target name>.<8 hex>: kb's mark
NOT_A_FILE = "not-a-regular-file"


class Conflict(ChangedMeanwhile):
    """A file is not what the journal recorded; the rewrite was undone (or never began)."""


def _step() -> None:
    """A point where a kill is survivable; the kill-at-every-step test stops kb at the N-th."""
    stop = os.environ.get("KB_TEST_KILL_AT_STEP")
    if stop is None:
        return
    _step.count = getattr(_step, "count", 0) + 1  # type: ignore[attr-defined]
    if _step.count == int(stop):  # type: ignore[attr-defined]
        os._exit(137)


def journal_path(root: Path) -> Path:
    return state_dir(root, create=False) / NAME


def unfinished(root: Path) -> Path | None:
    """The journal of a kb mv that did not finish: whatever is at its place (a file, a link, a FIFO, a
    directory), since recover() either acts on it or sets it aside. None when nothing is, or kb keeps no state."""
    try:
        path = journal_path(root)
        os.lstat(path)
    except FileNotFoundError:
        return None
    except StateUnavailable:
        return None
    except OSError:
        pass  # there, but not to be looked at: recover() says so
    return path


def _held(path: Path) -> str | None:
    """The digest of a regular file's bytes; None when nothing is there; NOT_A_FILE for a link, a
    directory or anything else (never followed, never read)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return NOT_A_FILE
    return digest(path.read_bytes())


@dataclass
class Entry:
    target: str  # relative to the root, under the records directory
    temporary: str
    old: str | None  # digest of what kb read there; None: a new file
    new: str  # digest of what kb staged
    old_text: str | None  # what kb read, to put back on a conflict


class Rewrite:
    """A set of whole-file rewrites (and one removal) under one journal. Hold the writers' lock."""

    def __init__(self, root: Path, records_dir: str, what: str):
        self.root, self.records_dir, self.what = root, records_dir, what
        self.entries: list[Entry] = []
        self.texts: dict[str, str] = {}
        self.remove: dict[str, str] | None = None

    def write(self, target: str, text: str, old: bytes | None) -> None:
        temporary = (PurePosixPath(target).parent / f".{PurePosixPath(target).name}.{secrets.token_hex(4)}").as_posix()
        self.entries.append(
            Entry(
                target,
                temporary,
                None if old is None else digest(old),
                digest(text.encode("utf-8")),
                None if old is None else old.decode("utf-8"),
            )
        )
        self.texts[target] = text

    def delete(self, target: str, old: bytes) -> None:
        self.remove = {"path": target, "digest": digest(old)}

    def _body(self, state: str) -> dict[str, Any]:
        return {
            "kb": "move-journal",
            "format": FORMAT,
            "root": str(self.root.resolve()),
            "records": self.records_dir,
            "what": self.what,
            "state": state,
            "files": [e.__dict__ for e in self.entries],
            "remove": self.remove,
        }

    def commit(self) -> None:
        """Stage, re-check, commit, apply. Raises Conflict (nothing changed) or OSError (nothing changed)."""
        journal = state_dir(self.root) / NAME
        if unfinished(self.root) is not None:  # recover() ran just before, under the same lock, and left it
            raise Conflict(
                f"an earlier kb mv's journal is still at {journal}: kb could neither finish nor set it aside; "
                "remove it, then run kb mv again"
            )
        _write_journal(journal, self._body("staging"))
        _step()
        try:
            for entry in self.entries:
                target = self.root / entry.target
                like = os.stat(target) if entry.old is not None else None
                _create(self.root / entry.temporary, self.texts[entry.target], like)
                _step()
            changed = [e.target for e in self.entries if _held(self.root / e.target) != e.old]
            if self.remove and _held(self.root / self.remove["path"]) != self.remove["digest"]:
                changed.append(self.remove["path"])
            if changed:
                raise Conflict(
                    f"{', '.join(changed)} changed while kb worked on it; nothing was changed (run kb mv again)"
                )
            _write_journal(journal, self._body("committed"))  # the commit point
        except BaseException:
            _discard(self.root, self._body("staging"), journal)
            raise
        _step()
        message = _finish(self.root, self._body("committed"), journal)
        if message:
            raise Conflict(message)


def _create(path: Path, text: str, like: os.stat_result | None) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.close(fd)
    take_mode(path, like)
    write_synced(path, text)


def _write_journal(journal: Path, body: dict[str, Any]) -> None:
    text = json.dumps(body)
    if len(text) > MAX_JOURNAL_BYTES:  # recover() would not read it back: so nothing is begun
        raise Conflict(
            f"kb mv would rewrite {len(text) / 1048576:.0f} MiB of records, more than kb journals "
            f"({MAX_JOURNAL_BYTES / 1048576:.0f} MiB); nothing was changed"
        )
    replace_file(journal, text)
    _sync_directory(journal.parent)


def _sync_directory(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _valid(root: Path, records_dir: str, body: Any) -> str | None:
    """Why a journal cannot be acted on, or None. Every path must stay inside the records directory."""
    if not isinstance(body, dict) or body.get("kb") != "move-journal" or body.get("format") != FORMAT:
        return "it is not a journal of this kb"
    if body.get("root") != str(root.resolve()) or body.get("records") != records_dir:
        return "it was written for another knowledge base"
    if body.get("state") not in ("staging", "committed") or not isinstance(body.get("files"), list):
        return "its state is unreadable"
    records = (root / records_dir).resolve()

    def inside(rel: Any) -> bool:
        if not isinstance(rel, str) or "\x00" in rel:
            return False
        parts = PurePosixPath(rel).parts
        if PurePosixPath(rel).is_absolute() or ".." in parts or len(parts) < 3 or parts[0] != records_dir:
            return False
        if not (rel.endswith(".md") or TEMPORARY.match(parts[-1])):
            return False
        parent = (root / rel).parent
        return parent.resolve() == records / PurePosixPath(*parts[1:-1]) and not parent.is_symlink()

    for entry in body["files"]:
        if not isinstance(entry, dict) or set(entry) != set(Entry.__dataclass_fields__):
            return "an entry is unreadable"
        target, temporary = entry["target"], entry["temporary"]
        if not (inside(target) and inside(temporary) and target.endswith(".md")):
            return f"it names a path outside {records_dir}/"
        mark = TEMPORARY.match(PurePosixPath(temporary).name)
        if (
            not is_id(PurePosixPath(target).stem)
            or mark is None
            or mark.group("target") != PurePosixPath(target).name
            or PurePosixPath(temporary).parent != PurePosixPath(target).parent
        ):
            return f"{temporary} is not a temporary kb makes for {target}"
        if not isinstance(entry["new"], str) or not all(
            entry[k] is None or isinstance(entry[k], str) for k in ("old", "old_text")
        ):
            return "an entry is unreadable"
    remove = body.get("remove")
    if remove is not None and (
        not isinstance(remove, dict)
        or not inside(remove.get("path"))
        or not str(remove["path"]).endswith(".md")
        or not isinstance(remove.get("digest"), str)
    ):
        return f"it names a removal outside {records_dir}/"
    return None


def _discard(root: Path, body: dict[str, Any], journal: Path) -> None:
    """Before the commit point: remove kb's temporaries (those still holding what kb staged), then the journal."""
    for entry in body["files"]:
        path = root / entry["temporary"]
        if _held(path) not in (None, NOT_A_FILE):
            path.unlink(missing_ok=True)
    journal.unlink(missing_ok=True)
    _sync_directory(journal.parent)


def _finish(root: Path, body: dict[str, Any], journal: Path) -> str | None:
    """Apply a committed journal, or undo it on a conflict. None when finished; else what happened."""
    entries = [Entry(**e) for e in body["files"]]
    pending, conflicts = [], []
    for entry in entries:
        target, temporary = _held(root / entry.target), _held(root / entry.temporary)
        if temporary == entry.new and target == entry.old:
            pending.append(entry)
        elif temporary is None and target not in (entry.old, None, NOT_A_FILE):
            continue  # renamed before a kill (and perhaps edited since, on top of kb's text: going on keeps it)
        else:
            conflicts.append(entry.target)
    remove = body["remove"]
    if remove and _held(root / remove["path"]) not in (remove["digest"], None):
        conflicts.append(remove["path"])
    if not conflicts:
        for entry in pending:
            if _held(root / entry.target) != entry.old:  # re-checked just before the rename
                conflicts.append(entry.target)
                break
            os.replace(root / entry.temporary, root / entry.target)
            _step()
    if not conflicts and remove:
        if _held(root / remove["path"]) in (remove["digest"], None):
            (root / remove["path"]).unlink(missing_ok=True)
            _step()
        else:
            conflicts.append(remove["path"])
    if conflicts:
        kept = _undo(root, entries)
        journal.unlink(missing_ok=True)
        _sync_directory(journal.parent)
        return (
            f"{', '.join(sorted(set(conflicts)))} changed after kb mv ({body['what']}) read it, so the move was "
            f"undone: every record is as it was before the move, with what was saved since kept"
            + (f" (left as found: {', '.join(kept)})" if kept else "")
            + "; run kb mv again"
        )
    journal.unlink(missing_ok=True)
    _sync_directory(journal.parent)
    _step()
    return None


def _undo(root: Path, entries: list[Entry]) -> list[str]:
    """Put back each target that still holds kb's new text; remove kb's temporaries. Returns the targets
    that held something else and were left as found."""
    left = []
    for entry in entries:
        path, temporary = root / entry.target, root / entry.temporary
        if _held(temporary) == entry.new:
            temporary.unlink()
        held = _held(path)
        if held != entry.new:
            if held != entry.old:
                left.append(entry.target)
            continue
        try:
            if entry.old_text is None:
                path.unlink()
                continue
            now = path.read_bytes()
            if digest(now) != entry.new:  # saved between the look and the read: the save is kept
                raise ChangedMeanwhile(entry.target)
            replace_file(path, entry.old_text, expected=now)  # and again just before the rename
        except ChangedMeanwhile:
            left.append(entry.target)
    return left


def recover(root: Path, records_dir: str) -> tuple[bool, str | None]:
    """Finish or undo a kb mv that was killed (call under the writers' lock). (acted, message)."""
    try:
        _remove_temporaries(state_dir(root, create=False))
    except StateUnavailable:
        return False, None
    journal = unfinished(root)
    if journal is None:
        return False, None
    body: Any = None
    try:
        body = json.loads(read_private(journal, MAX_JOURNAL_BYTES).decode("utf-8"))
        problem = _valid(root, records_dir, body)
    except FileNotFoundError:
        return False, None  # finished by another kb meanwhile
    except OSError as exc:  # a link, a FIFO, a directory, another user's file, too large: never opened or read
        problem = str(exc)
    except UnicodeDecodeError:
        problem = "it is not UTF-8"
    except ValueError as exc:
        problem = f"it is not JSON: {exc}"
    except RecursionError:
        problem = "it nests deeper than any journal kb writes"
    if problem:
        return True, f"ignored an unfinished kb mv's journal ({problem}) and changed nothing; {_set_aside(journal)}"
    assert isinstance(body, dict)
    if body["state"] == "staging":
        _discard(root, body, journal)
        return True, f"kb mv ({body['what']}) was interrupted before it changed anything; its temporaries are removed"
    message = _finish(root, body, journal)
    return True, message or f"finished a kb mv that was interrupted ({body['what']})"


def _set_aside(journal: Path) -> str:
    """Move a journal kb will not act on out of the way, without opening it (a FIFO never blocks); one set
    aside earlier is replaced. Says where it went, or why it is still there."""
    aside = journal.with_name(SET_ASIDE)
    try:
        if os.path.lexists(aside):
            if stat.S_ISDIR(os.lstat(aside).st_mode):
                shutil.rmtree(aside)
            else:
                aside.unlink()
        os.rename(journal, aside)
        _sync_directory(journal.parent)
    except OSError as exc:
        return f"kb cannot set it aside ({exc.strerror or exc}): remove {journal}, then run kb mv again"
    return f"it is set aside as {aside}"


def _remove_temporaries(directory: Path) -> None:
    """The journal's temporaries a kb killed while writing it left (regular files with atomic.staged's mark;
    under the writers' lock no live kb mv is writing one)."""
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if _JOURNAL_TEMPORARY.match(entry.name) and entry.is_file(follow_symlinks=False):
                    Path(entry.path).unlink(missing_ok=True)
    except OSError:
        pass  # no state directory yet, or not one kb can list: nothing of kb's to remove
