"""The result of a whole `kb check`, kept for the next run while nothing it read has changed.

A warm `kb check` with nothing changed is a walk that stats every entry under the records directory and
one query: when the fingerprint of the tree (every name, kind, size, mtime, ctime and inode, as git's
index compares them), the schemas, kb's own code and the settings are what the last full run saw, its
diagnostics are the answer, and no record is read, parsed, validated or recomputed. That run imports
neither YAML, nor the JSON Schema validator, nor pint, nor markdown-it.

The memo lives in kb's state directory (kbtools.state), outside the repository, so nothing a commit
carries is ever read as a result, and it is opened only when it (and any file SQLite keeps beside it) is the
user's regular file or nothing: a link there is neither read, nor written, nor created through. A fingerprint is taken before the run reads anything, so a file saved
during a run changes the next fingerprint. A file modified within two seconds of the fingerprint is not
trusted by its stat (git's racy-clean rule): such a run keeps no memo. Each row carries a digest of its
body, so a corrupt or truncated store costs a full check, never a wrong answer.

A finding that depends on the day (a figure past its shelf life, KB620) is kept with its due date and its
age unworded, due or not, and the answer passes through the filter a run ends with
(kbtools.check.freshness.reported): the memo answers a later day, or another KB_TODAY, as a run would.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from kbtools.check.freshness import as_stored, reported
from kbtools.check.store import RACY_NS, schema_key
from kbtools.corpus import Settings
from kbtools.diagnostics import Diagnostic
from kbtools.files import walk
from kbtools.state import MEMO, StateUnavailable, discard_database, disk_full, private_database, state_dir


@dataclass(frozen=True)
class Fingerprint:
    key: str  # what the run's result depends on
    newest_ns: int  # the latest modification time of anything under records/
    taken_ns: int


def fingerprint(settings: Settings) -> Fingerprint:
    """Stat every entry under the records directory (links not followed: their text and target are hashed),
    plus the schemas, kb's code and the settings."""
    h = hashlib.blake2b(digest_size=20)
    taken = time.time_ns()
    h.update(schema_key(settings.schema_path).encode() if settings.schema_path.is_dir() else b"no schemas")
    h.update(settings.as_json_text().encode())
    newest = 0
    records = settings.records_path
    for _inner, subdirs, names in walk(str(records)):
        for entry in sorted([*subdirs, *names], key=lambda entry: entry.name):
            full = entry.path
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                h.update(f"{full}\0unreadable\n".encode())
                continue
            h.update(
                f"{full}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\n".encode(
                    "utf-8", "surrogateescape"
                )
            )
            if stat.S_ISLNK(st.st_mode):
                h.update(os.path.realpath(full).encode("utf-8", "surrogateescape"))
            newest = max(newest, st.st_mtime_ns)
    if not os.path.isdir(records):
        h.update(b"no records directory")
    return Fingerprint(h.hexdigest(), newest, taken)


def _store(settings: Settings, create: bool) -> Path:
    return state_dir(settings.root, create=create) / MEMO


def _body_digest(body: str) -> str:
    return hashlib.blake2b(body.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def recall(settings: Settings, seen: Fingerprint) -> tuple[list[Diagnostic], int] | None:
    """The diagnostics and record count of the last run over exactly this tree, or None: as a run would report
    them today, in the order `kb check` prints them."""
    try:
        path = _store(settings, create=False)
        if not private_database(path):
            return None
        connection = sqlite3.connect(path.absolute().as_uri() + "?mode=ro", uri=True, timeout=5)
        try:
            row = connection.execute("SELECT body, digest FROM runs WHERE key = ?", (seen.key,)).fetchone()
        finally:
            connection.close()
        if row is None or not isinstance(row[0], str) or _body_digest(row[0]) != row[1]:
            return None
        body = json.loads(row[0])
        kept = [Diagnostic.from_json(d) for d in body["diagnostics"]]
        return sorted(reported(kept), key=Diagnostic.sort_key), int(body["records"])
    except (StateUnavailable, sqlite3.Error, OSError, ValueError, TypeError, KeyError):
        return None  # no memo, or one kb cannot read: the full check answers


def keep(
    settings: Settings, seen: Fingerprint, diagnostics: list[Diagnostic], records: int, dated: tuple[Diagnostic, ...]
) -> None:
    """Remember this run's answer under the fingerprint taken before it read anything: what it reported, but
    the findings that depend on the day as the stages made them (`dated`), due or not, unworded."""
    if seen.newest_ns >= seen.taken_ns - RACY_NS:
        return  # something changed within the stat's granularity of the fingerprint: its stat proves nothing
    whole = as_stored(diagnostics, dated)
    body = json.dumps({"records": records, "diagnostics": [d.as_json() for d in whole]})
    path = None
    try:
        path = _store(settings, create=True)
        private_database(path)  # SQLite would write through a link, or create the file a dangling one names
        connection = sqlite3.connect(path, timeout=30, isolation_level=None)
        try:
            # a rollback journal, not WAL: recall reads read-only, and a read-only connection to a WAL database
            # makes its -wal and -shm files and cannot remove them, so every answer from the memo left two
            # files in kb's state directory. One row, rewritten once a run, needs no concurrent readers.
            connection.execute("PRAGMA journal_mode=DELETE")
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("CREATE TABLE IF NOT EXISTS runs (key TEXT PRIMARY KEY, body TEXT, digest TEXT)")
            connection.execute("DELETE FROM runs")  # one tree at a time: the last one checked
            connection.execute("INSERT INTO runs VALUES (?, ?, ?)", (seen.key, body, _body_digest(body)))
            connection.execute("COMMIT")
        finally:
            connection.close()
    except (StateUnavailable, sqlite3.Error, OSError) as exc:
        if path is not None and disk_full(exc):
            discard_database(path)  # not a store that holds the last free space
        # a memo that cannot be written only costs time
