"""The store's rows: a table of entries (a file's, a record's), each field kept as JSON text until a run
asks for it, and written back only where a run set it."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from typing import Any

from kbtools.check.store.codec import REVIVERS, decode, encode, revive
from kbtools.check.store.key import RACY_NS, file_stat


class Entry(dict):
    """One cached entry; setting a key marks it to be written back. Each field is stored as its own JSON
    text and decoded, into kb's types, only when first asked for: a warm run never touches most of them,
    and a field never asked for is written back as the same text."""

    def __init__(self, data: dict, table: Table, name: str, stored: bool = False):
        super().__init__(data)
        self._table, self._name = table, name
        self._pending = set(data) if stored else set()
        self.changed: set[str] | None = set() if stored else None  # fields to write back (None: every one)

    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        if key in self._pending:
            self._pending.discard(key)
            value = REVIVERS.get(key, revive)(decode(value))
            super().__setitem__(key, value)
        return value

    def packed(self, fields: set[str] | None = None) -> dict[str, str]:
        """Every field (or those named) as JSON text (what a row's body holds)."""
        return {
            key: value if key in self._pending else encode(value)
            for key, value in dict.items(self)
            if fields is None or key in fields
        }

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __setitem__(self, key: str, value: Any) -> None:
        self._pending.discard(key)
        super().__setitem__(key, value)
        if self.changed is not None:
            self.changed.add(key)
        self._table.dirty.add(self._name)


def _decoded_or_none(body: str) -> Any:
    try:
        return decode(body)
    except ValueError:
        return None


class Table:
    """Rows of one SQLite table, one row per entry and field (a record's file and a stage's result):
    name -> Entry. Rows are read either all at once (`preload`, for a run that visits every record) or
    entry by entry when first asked for (a run that re-judges a few records reads only theirs); each field
    is decoded when it is first asked for."""

    def __init__(self, name: str, verify):
        self.name, self.verify = name, verify
        self.sql = f"{name}_rows"
        self.raw: dict[str, dict[str, str]] = {}  # name -> field -> JSON text, when preloaded
        self.live: dict[str, Entry] = {}
        self.dirty: set[str] = set()
        self.deleted: set[str] = set()
        self.connection: sqlite3.Connection | None = None  # entry by entry from here, until preloaded
        self._names: set[str] | None = None  # every stored entry's name, when asked for in lazy mode
        self.failed = False  # a read of the store failed mid-run: what it would have answered is unknown
        self.rewrite_all = False  # the stored rows are gone (a new store): every field of an entry is written

    def attach(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def preload(self, skip: tuple[str, ...] = ()) -> None:
        """Every stored row but those of the fields in `skip` (which this run will not ask for)."""
        if self.connection is None:
            return
        raw: dict[str, dict[str, str]] = {}
        rows = self.connection.execute(
            f"SELECT name, field, body FROM {self.sql} WHERE field NOT IN ({', '.join('?' * len(skip))})", skip
        )
        for name, field, body in rows:
            if name not in self.live and name not in self.deleted:
                raw.setdefault(name, {})[field] = body
        self.raw, self.connection, self._names = raw, None, None

    def _fetch(self, key: str) -> dict[str, str] | None:
        if self.connection is None:
            return self.raw.pop(key, None)
        if key in self.deleted:
            return None
        try:
            rows = self.connection.execute(f"SELECT field, body FROM {self.sql} WHERE name = ?", (key,)).fetchall()
        except sqlite3.Error:
            self.failed = True
            return None
        return {field: body for field, body in rows} or None

    def _stored_names(self) -> set[str]:
        if self.connection is None:
            return set(self.raw)
        if self._names is None:
            try:
                self._names = {n for (n,) in self.connection.execute(f"SELECT DISTINCT name FROM {self.sql}")}
            except sqlite3.Error:
                self.failed, self._names = True, set()
        return self._names - set(self.live) - self.deleted

    def field_of_all(self, field: str) -> dict[str, Any]:
        """One field of every stored entry, decoded (a stat walk asks for every file's stat, nothing else)."""
        rows: list[tuple[str, Any]] = []
        if self.connection is not None:
            try:
                rows = self.connection.execute(
                    f"SELECT name, body FROM {self.sql} WHERE field = ?", (field,)
                ).fetchall()
            except sqlite3.Error:
                self.failed = True
        else:
            rows = [(name, fields.get(field)) for name, fields in self.raw.items()]
        rows = [(n, b) for n, b in rows if isinstance(b, str) and n not in self.live and n not in self.deleted]
        try:  # one decoding of all of them: ten thousand small ones cost more than the rest of a stat walk
            values = decode("[" + ",".join(body for _, body in rows) + "]")
        except ValueError:
            values = [_decoded_or_none(body) for _, body in rows]  # a corrupt one is read again when asked for
        out = {name: value for (name, _), value in zip(rows, values, strict=True) if value is not None}
        for name, entry in self.live.items():
            if field in entry:
                out[name] = entry[field]
        return out

    def get(self, key: str, default: Any = None) -> Entry | None:
        if key in self.live:
            return self.live[key]
        raw = self._fetch(key)
        if raw is None:
            return default
        data = self.verify(self.name, key, raw)
        if not isinstance(data, dict):
            self.deleted.add(key)  # forged, corrupt or foreign: dropped, and recomputed
            return default
        entry = self.live[key] = Entry(data, self, key, stored=True)
        return entry

    def __getitem__(self, key: str) -> Entry:
        entry = self.get(key)
        if entry is None:
            raise KeyError(key)
        return entry

    def __setitem__(self, key: str, data: dict) -> None:
        self.raw.pop(key, None)
        self.live[key] = Entry(data, self, key)
        self.dirty.add(key)
        self.deleted.discard(key)

    def __delitem__(self, key: str) -> None:
        self.raw.pop(key, None)
        self.live.pop(key, None)
        self.dirty.discard(key)
        self.deleted.add(key)

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None if isinstance(key, str) else False

    def __iter__(self) -> Iterator[str]:
        return iter([*self.live, *sorted(self._stored_names())])

    def __len__(self) -> int:
        return len(self.live) + len(self._stored_names())

    def write(self, connection: sqlite3.Connection) -> None:
        """A changed entry's rows replaced together; a deleted entry's rows removed."""
        for name in self.dirty:
            entry = self.get(name)
            if entry is None:
                continue
            if self.rewrite_all or entry.changed is None:  # a new entry: none of its old fields survives
                connection.execute(f"DELETE FROM {self.sql} WHERE name = ?", (name,))
                connection.executemany(
                    f"INSERT INTO {self.sql} VALUES (?, ?, ?)",
                    [(name, field, body) for field, body in entry.packed().items()],
                )
            else:  # a stored entry of which a stage set some fields: only those rows change
                connection.executemany(
                    f"INSERT OR REPLACE INTO {self.sql} VALUES (?, ?, ?)",
                    [(name, field, body) for field, body in entry.packed(entry.changed).items()],
                )
        connection.executemany(f"DELETE FROM {self.sql} WHERE name = ?", [(n,) for n in self.deleted])


class FileRows(Table):
    """The files table: a record file's entry, found by its stat (git's racy-clean rule: unchanged without
    reading it) or by the digest of its bytes."""

    written_ns = 0  # when the store was last written, as its meta says (set when it is read)

    def unchanged(self, rel: str, st: os.stat_result) -> dict[str, Any] | None:
        """The entry for a file whose stat matches what the store saw and that is not 'racily clean'."""
        entry = self.get(rel)
        if entry is None or not self.same_stat(entry.get("stat"), st):
            return None
        return entry

    def same_stat(self, stored: Any, st: os.stat_result) -> bool:
        """The file is as the store saw it, judged by its stat alone, and was not 'racily clean' then."""
        return stored == file_stat(st) and max(st.st_mtime_ns, st.st_ctime_ns) < self.written_ns - RACY_NS

    def note_stat(self, rel: str, st: os.stat_result) -> None:
        """Remember the stat taken before the file was read: an edit after that changes it, so is seen next time."""
        entry = self.get(rel)
        if entry is not None and entry.get("stat") != file_stat(st):
            entry["stat"] = file_stat(st)

    def file(self, rel: str, file_digest: str) -> dict[str, Any] | None:
        """The entry of the file whose bytes have this digest (None when they changed)."""
        entry = self.get(rel)
        if entry is not None and entry.get("digest") == file_digest:
            return entry
        return None

    def store_file(self, rel: str, file_digest: str, **results: Any) -> dict[str, Any]:
        self[rel] = {"digest": file_digest, **results}
        return self[rel]
