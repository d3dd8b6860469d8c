"""A persistent cache of per-record stage results, so a re-run only redoes what changed.

What is cached, per record file (keyed by a hash of its bytes): the loaded Record or
its load diagnostics, its schema diagnostics, and its body scan (links and inline
values). Per record, the compute stage's diagnostics with the records it read and how
each reference it used resolved; a record is recomputed when it, or anything it read
(transitively), changed, or when a reference it used would now resolve differently.

The cache holds data, never code: an SQLite file of JSON rows, decoded by kb's own codec into kb's own
types, so no file can make kb run anything. It lives in kb's state directory (kbtools.state: the user's
cache directory, private to them, keyed by the repository's path), never in the repository, so nothing a
commit or a pull request carries is ever read as cache, and rows need no signature: a store copied from
another clone or machine (a restored CI cache, a copied home directory) never matches the files' stat
keys or their digests. (Until issue 26 it lived in .kb-cache/ and every row carried a keyed MAC; a
planted .kb-cache/ is now simply never read.) The whole cache is dropped when the tool, the Python
version or any schema file changes (the key in `meta`); a store SQLite cannot read is started anew. A
stale cache must never hide an error: tests compare incremental and full runs over random edit
sequences.

Beside the per-file results the store holds an index of the corpus as the last run saw it (ids, edges,
findings per file and stage; written by `_write_index`), which lets a run after a few edits judge again only
what they can change (kbtools.check.run.scope). Rows are read entry by entry when a run asks for them, or all at
once (`preload`) by a run that visits every record; an entry writes back only the fields a run set.

A file is taken as unchanged, without reading it, when what git's index compares is
the same -- size, modification and change time (ns), inode -- and it was not changed
within two seconds before the cache was written (git's racy-clean rule).
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from kbtools.check.store.codec import decode, encode, revive
from kbtools.check.store.index import write_index
from kbtools.check.store.key import INDEX_TABLES, schema_key
from kbtools.check.store.reads import StoredReads
from kbtools.check.store.rows import FileRows, Table
from kbtools.state import (
    CACHE,
    StateUnavailable,
    discard_database,
    disk_full,
    private_database,
    state_dir,
)


class Cache:
    def __init__(self, root: Path, schema_dir: Path, enabled: bool = True, settings: Any = None):
        try:
            self.path = state_dir(root, create=enabled) / CACHE
        except StateUnavailable:
            self.path, enabled = Path(os.devnull), False  # no safe place: every run is a full run
        self.enabled = enabled
        self.key = schema_key(schema_dir) if schema_dir.is_dir() else ""
        if settings is not None:  # a setting that changes what compute judges (not severities, applied after)
            self.key += f":tolerance={settings.tolerance!r}"
        self.trusted = False  # the stored rows are this kb's, this schema's and this user's
        self.meta_checked: frozenset[bytes] = frozenset()  # schema texts that met the meta-schema (digests)
        self.files = FileRows("files", _fields)  # rel path -> {digest, stat, record, load, and each stage's judgement}
        self.compute = Table("compute", _fields)  # record key -> {digest, deps, resolved, diagnostics}
        self.compute_global: list = []  # compute diagnostics that belong to no record (schema formulas)
        self.global_changed = False
        self.index_fingerprint: str | None = None  # the ids and types of the last run (kbtools.index)
        self.generation: Any = None  # how many runs saved values before the one this run read
        self._reader: sqlite3.Connection | None = None
        self.reads = StoredReads(self)  # the reverse-dependency table (kbtools.check.store.reads)
        self.indexed = False  # the store's index of the corpus (ids, edges, findings) is the last save's
        self.index_update: Any = None  # what this run learnt of it, for save() (kbtools.check.run.scope)
        if self.enabled:
            self._read()

    # ------------------------------------------------------------ rows
    # ------------------------------------------------------------ reading
    def _usable_file(self) -> bool:
        """The store and the files SQLite keeps beside it are regular files of this user's (never a FIFO, a
        device, a directory or a link), or nothing yet."""
        try:
            private_database(self.path)
        except OSError:
            return False
        return True

    def _read(self) -> None:
        if not self._usable_file():
            self.enabled = False  # neither read nor written: kb never writes through what it did not make
            return
        if not self.path.exists():
            return
        try:
            # one read transaction for the whole run: the reverse-dependency rows asked for later come from
            # the same snapshot as the entries read now, whatever another kb saves meanwhile (WAL)
            connection = sqlite3.connect(
                self.path.absolute().as_uri() + "?mode=ro", uri=True, timeout=30, isolation_level=None
            )
            try:
                connection.execute("BEGIN")
                rows = dict(connection.execute("SELECT name, body FROM meta").fetchall())
                meta = {name: _meta_value(body) for name, body in rows.items()}
                if meta.get("key") != self.key:
                    return  # another kb, another schema, another format: start afresh
                written = meta.get("written_ns")
                self.files.written_ns = written if isinstance(written, int) else 0
                self.compute_global = meta["compute_global"] if isinstance(meta.get("compute_global"), list) else []
                checked = meta.get("meta_checked")
                if isinstance(checked, list) and all(isinstance(h, str) and len(h) == 32 for h in checked):
                    self.meta_checked = frozenset(bytes.fromhex(h) for h in checked)
                index = meta.get("index")
                self.index_fingerprint = index if isinstance(index, str) else None
                self.generation = meta.get("generation")
                self.indexed = meta.get("indexed") == self.generation and self.generation is not None
                for table in (self.files, self.compute):
                    table.attach(connection)  # rows are read when asked for, or all at once by preload()
                self.trusted = True
            finally:
                if self.trusted:
                    self._reader = connection
                else:
                    connection.close()
        except (sqlite3.Error, ValueError, TypeError, OSError):
            self._forget()

    def _forget(self) -> None:
        """A store that cannot be read is no store: every result is computed again (and written anew)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        for table in (self.files, self.compute):
            table.raw, table.live, table.connection = {}, {}, None
            table.dirty.clear()
            table.deleted.clear()
        self.compute_global, self.trusted, self.indexed = [], False, False
        self.index_fingerprint = self.generation = None

    def preload(self, values: bool = True) -> None:
        """Every stored row, in one query per table: for a run that visits every record. Without `values`
        (kb check, which keeps none), records' stored values stay in the store: they are most of its
        bytes (16 MB of 18 at 10,000 records)."""
        try:
            self.files.preload()
            self.compute.preload(() if values else ("values",))
        except sqlite3.Error:
            self._forget()

    @property
    def reader(self) -> sqlite3.Connection | None:
        """The run's one read transaction on the store (None when nothing stored is trusted)."""
        return self._reader if self.trusted else None

    @property
    def read_failed(self) -> bool:
        return self.files.failed or self.compute.failed

    # ------------------------------------------------------------ per file
    def set_global(self, diagnostics: list) -> None:
        if diagnostics != self.compute_global:
            self.compute_global, self.global_changed = diagnostics, True

    # ------------------------------------------------------------ writing
    def save(self, live_paths: set[str]) -> None:
        if not self.enabled:
            return
        for rel in [rel for rel in self.files if rel not in live_paths]:
            del self.files[rel]
        scoped = self.index_update is not None and not self.index_update.whole
        if not (scoped and self._reader is not None and self._in_wal_mode(self._reader)):
            self.close()
        # In a scoped run in WAL mode the read transaction stays open past the save: a scoped run's corpus still
        # decodes stored records from it (kb check's stale-figure pass comes after), and a WAL reader
        # never blocks a writer, this process's or another's.
        changed = (
            any((t.dirty, t.deleted) for t in (self.files, self.compute))
            or self.global_changed
            or bool(self.reads.new_reads)
            or (self.index_update is not None and not self.index_update.empty)
            or (self.index_update is not None and not self.indexed)
        )
        if not changed:
            return
        try:
            if not self._usable_file():
                return
            try:
                self._write()
            except sqlite3.DatabaseError as exc:
                if disk_full(exc):
                    raise
                # not a database at all (a stray or planted file): kb's own cache, so start it anew
                self.path.unlink(missing_ok=True)
                for table in (self.files, self.compute):
                    table.dirty.update(table.live)
                    table.rewrite_all = True
                self._write()
        except (sqlite3.Error, OSError, TypeError, ValueError) as exc:
            if disk_full(exc):
                # a full disk: the store and its -wal and -shm would keep the last free space (5.6 MB of WAL
                # at 480 records); the next run with room starts the cache anew
                discard_database(self.path)
            # a cache that cannot be written only costs time

    def close(self) -> None:
        """End the run's read transaction (kb check calls it once its stale-figure pass is done)."""
        if self._reader is not None:
            for table in (self.files, self.compute):
                table.connection = None  # what was not asked for stays as it is stored
            self._reader.close()
            self._reader = None
            if self._usable_file() and self.path.exists():
                fold_wal(self.path)

    @staticmethod
    def _in_wal_mode(connection: sqlite3.Connection) -> bool:
        try:
            return connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        except sqlite3.Error:
            return False

    def _write(self) -> None:
        # WAL: readers never block the writer nor see half a write; BEGIN IMMEDIATE takes the write lock
        # before anything is read, so of two kb processes saving at once one waits for the other, and every
        # record's rows (its entry, its reads) are replaced together by the one that saves last.
        connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("BEGIN IMMEDIATE")
            try:
                self._write_rows(connection)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        finally:
            connection.close()

    def _write_rows(self, connection: sqlite3.Connection) -> None:
        connection.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, body TEXT)")
        stored = dict(connection.execute("SELECT name, body FROM meta WHERE name IN ('key', 'generation')").fetchall())
        meta = {name: _meta_value(body) for name, body in stored.items()}
        fresh = meta.get("key") != self.key  # another kb, schema or format: none of it is kept
        if fresh:
            for old in ("files_rows", "compute_rows", "reads", *INDEX_TABLES):  # a format's may have other columns
                connection.execute(f"DROP TABLE IF EXISTS {old}")
        for table in (self.files, self.compute):
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {table.sql} (name TEXT, field TEXT, body TEXT, PRIMARY KEY (name, field))"
            )
        self.reads.create(connection)
        if fresh:
            for table in (self.files, self.compute):
                table.dirty.update(table.live)
                table.dirty.update(table.raw)
                table.rewrite_all = True
            for name in self.compute:  # an entry is kept only with the reads it was computed from
                if name not in self.reads.new_reads:
                    del self.compute[name]
                    self.index_fingerprint = None
        elif meta.get("generation") != self.generation:
            # Another kb saved since this one read the cache. A file's rows hold what its bytes alone decide
            # (and what is checked again on use), so they are written; the values are not: a record computed
            # here may have read a neighbour the other run has since recomputed from newer bytes, and a
            # reader kept with an old neighbour's values would never be looked at again.
            self.files.write(connection)
            self._write_meta(connection, {"written_ns": time.time_ns(), "indexed": None})  # the index is the other's
            return
        self.reads.write(connection)
        self.files.write(connection)
        self.compute.write(connection)
        generation = (self.generation if isinstance(self.generation, int) else 0) + 1
        update = self.index_update
        indexed = update is not None and (update.whole or (self.indexed and not fresh))
        if indexed:
            write_index(connection, update)
        self._write_meta(
            connection,
            {
                "key": self.key,
                "generation": generation,
                "indexed": generation if indexed else None,
                "written_ns": time.time_ns(),
                "compute_global": list(self.compute_global),
                "index": self.index_fingerprint,
                "meta_checked": sorted(digest.hex() for digest in self.meta_checked),
            },
        )

    def _write_meta(self, connection: sqlite3.Connection, meta: dict[str, Any]) -> None:
        for name, value in meta.items():
            connection.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, encode(value)))


def fold_wal(path: Path) -> None:
    """A read-only connection closing last leaves the WAL files beside the store; a writer's close folds them in."""
    try:
        writer = sqlite3.connect(path, timeout=1)
        try:
            writer.execute("PRAGMA schema_version").fetchone()  # opens the file: its close folds the WAL
        finally:
            writer.close()
    except sqlite3.Error:
        pass


def _meta_value(body: Any) -> Any:
    try:
        return revive(decode(body)) if isinstance(body, str) else None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def _fields(table: str, name: str, fields: dict[str, str]) -> dict[str, str] | None:
    """An entry's rows, field -> JSON text (decoded when a field is first asked for)."""
    return fields if all(isinstance(body, str) for body in fields.values()) else None
