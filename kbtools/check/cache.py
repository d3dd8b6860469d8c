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
what they can change (kbtools.check.scope). Rows are read entry by entry when a run asks for them, or all at
once (`preload`) by a run that visits every record; an entry writes back only the fields a run set.

A file is taken as unchanged, without reading it, when what git's index compares is
the same -- size, modification and change time (ns), inode -- and it was not changed
within two seconds before the cache was written (git's racy-clean rule).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from kbtools import __version__
from kbtools.diagnostics import Diagnostic, Severity
from kbtools.files import MAX_SCHEMA_BYTES, read_regular_file
from kbtools.state import (
    CACHE,
    StateUnavailable,
    discard_database,
    disk_full,
    private_database,
    state_dir,
)

FORMAT = 7  # 5: in kb's state directory, rows without a MAC; 6: the index of the corpus (scope.py); 7: due dates
RACY_NS = 2_000_000_000
INDEX_TABLES = ("ids", "edges", "findings")  # the corpus as the last run saw it (kbtools.check.scope)


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def code_files() -> list[Path]:
    """Every module of every subpackage of kbtools, and the unit definitions: what the cache key hashes."""
    package = Path(__file__).resolve().parent.parent
    return sorted(p for p in package.rglob("*") if p.suffix in (".py", ".txt") and "__pycache__" not in p.parts)


def schema_key(schema_dir: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{FORMAT}:{__version__}:{sys.version_info[:2]}".encode())
    for path in sorted(schema_dir.glob("*.json")):
        h.update(path.name.encode())
        try:  # a FIFO named like a schema must not hang kb here, before the registry reports it
            h.update(read_regular_file(path, MAX_SCHEMA_BYTES)[0])
        except OSError:
            h.update(b"unreadable")
    # the tool's own code and unit definitions: a kb that changed may store or judge differently
    package = Path(__file__).resolve().parent.parent
    for path in code_files():
        h.update(path.relative_to(package).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def file_stat(st: os.stat_result) -> list[int]:
    """What git's index compares to call a file unchanged without reading it."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


# ---------------------------------------------------------------- the codec: kb's own types <-> JSON
# json's C encoder and decoder do the walking; kb's types are tagged one-key objects ({"$d": [...]}),
# made by _default and turned back into kb's types by revive() when first used. revive() walks kb's own
# structure only, never into a tag's body, so nothing a record's frontmatter says can be taken for a tag.
# Tuples come back as lists.

_TYPES: dict[str, Any] = {}


def _types() -> dict[str, Any]:
    if not _TYPES:  # imported on first use: these modules import this one
        from kbtools.corpus import Record, Reference
        from kbtools.lang.markdown import BodyScan, InlineSpan, WikiLink

        _TYPES.update(Reference=Reference, Record=Record, BodyScan=BodyScan, InlineSpan=InlineSpan, WikiLink=WikiLink)
    return _TYPES


def _default(value: Any) -> Any:
    t = _types()
    if isinstance(value, Diagnostic):
        # with its due date (KB620's): the store keeps a finding whatever the day, and the filter at the end of a
        # run (kbtools.check.freshness) decides from it whether the finding is due
        return {
            "$d": [
                value.code,
                value.severity.value,
                value.path,
                value.line,
                value.column,
                value.message,
                value.hint,
                value.due,
            ]
        }
    if isinstance(value, t["Record"]):
        return {
            "$r": [
                value.path,
                value.dir,
                value.stem,
                value.data,
                Positions.pack(value.positions),
                Positions.pack(value.value_positions),
                value.body,
                value.body_line,
                value.type,
                value.digest,
            ]
        }
    if isinstance(value, t["Reference"]):
        return {"$ref": [list(value.path), value.value, list(value.types)]}
    if isinstance(value, t["BodyScan"]):
        return {
            "$scan": [
                [[link.target, link.anchor, link.label, link.line, link.column] for link in value.links],
                [[v.content, v.line, v.column] for v in value.values],
                value.skipped,
            ]
        }
    raise TypeError(f"kb does not cache a {type(value).__name__}")


_ARITY = {"$d": 8, "$r": 10, "$ref": 3, "$scan": 3}


def _hook(obj: dict) -> Any:
    if len(obj) != 1:
        return obj
    ((tag, body),) = obj.items()
    if _ARITY.get(tag) != (len(body) if isinstance(body, list) else -1):
        return obj  # an ordinary mapping that happens to have one key
    t = _types()
    if tag == "$d":
        code, severity, path, line, column, message, hint, due = body
        return Diagnostic(
            code=code,
            severity=Severity(severity),
            path=path,
            line=line,
            column=column,
            message=message,
            hint=hint,
            due=due,
        )
    if tag == "$r":
        path, directory, stem, data, positions, value_positions, text, body_line, type_, file_digest = body
        return t["Record"](
            path=path,
            dir=directory,
            stem=stem,
            data=data,
            positions=Positions(positions),
            value_positions=Positions(value_positions),
            body=text,
            body_line=body_line,
            type=type_,
            digest=file_digest,
        )
    if tag == "$ref":
        return t["Reference"](tuple(body[0]), body[1], tuple(body[2]))
    links, values, skipped = body
    return t["BodyScan"](
        tuple(t["WikiLink"](*link) for link in links),
        tuple(t["InlineSpan"](*v) for v in values),
        tuple(skipped) if skipped else None,
    )


class Positions(Mapping):
    """A record's key or value positions as cached, made into a dict only when first asked for:
    a warm run reads positions only of the records it reports on."""

    __slots__ = ("_raw", "_map")

    def __init__(self, raw: str):
        self._raw: str | None = raw
        self._map: dict | None = None

    @staticmethod
    def pack(positions: Mapping) -> str:
        """One JSON string, not a million small lists: the row decodes as fast as a string is copied."""
        if isinstance(positions, Positions) and positions._raw is not None:
            return positions._raw
        return json.dumps([[list(k), *v] for k, v in positions.items()], separators=(",", ":"), ensure_ascii=False)

    def _built(self) -> dict:
        if self._map is None:
            self._map = {tuple(p[0]): (p[1], p[2]) for p in json.loads(self._raw or "[]")}
            self._raw = None
        return self._map

    def __getitem__(self, key):
        return self._built()[key]

    def __iter__(self):
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())

    def get(self, key, default=None):
        return self._built().get(key, default)

    def __contains__(self, key) -> bool:
        return key in self._built()


def encode(value: Any) -> str:
    return json.dumps(value, default=_default, separators=(",", ":"), ensure_ascii=False)


def decode(text: str) -> Any:
    """JSON text -> plain data; kb's types inside are made by revive(), when a value is first used."""
    return json.loads(text)


def revive(value: Any) -> Any:
    """Plain decoded data -> kb's types, for the tags _default wrote."""
    if isinstance(value, list):
        return [revive(v) for v in value]
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)) in _ARITY:
            return _hook(value)  # a tag's body holds no further tags
        return {k: revive(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------- tables of entries, decoded on first use


def _same(value: Any) -> Any:
    return value


# how each field of an entry is revived: plain fields stay as they are (edges are thousands of small lists)
_REVIVERS = {
    "digest": _same,
    "stat": _same,
    "deps": _same,
    "resolved": _same,
    "values": _same,  # computed values, in compute.stored's own layout
    "links": lambda v: {**v, "diagnostics": revive(v.get("diagnostics", []))} if isinstance(v, dict) else v,
}


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
            value = _REVIVERS.get(key, revive)(decode(value))
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
        self.files = Table("files", self._fields)  # rel path -> {digest, stat, record, load, schema, scan, refs, links}
        self.compute = Table("compute", self._fields)  # record key -> {digest, deps, resolved, diagnostics}
        self.compute_global: list = []  # compute diagnostics that belong to no record (schema formulas)
        self.global_changed = False
        self.index_fingerprint: str | None = None  # the ids and types of the last run (kbtools.index)
        self.generation: Any = None  # how many runs saved values before the one this run read
        # the reverse-dependency table, asked row by row: reader -> what it read of one record, per record read
        self.new_reads: dict[str, dict[str, dict[str, str]]] = {}  # reader -> {record read: {value: fingerprint}}
        self._reader: sqlite3.Connection | None = None
        self.held_reads: dict[str, dict[str, dict[str, str]]] | None = None  # see hold_reads
        self.indexed = False  # the store's index of the corpus (ids, edges, findings) is the last save's
        self.index_update: Any = None  # what this run learnt of it, for save() (kbtools.check.scope)
        self.written_ns = 0  # when the cache was last written (for the racy-clean rule)
        if self.enabled:
            self._read()

    # ------------------------------------------------------------ rows
    @staticmethod
    def _meta_value(body: Any) -> Any:
        try:
            return revive(decode(body)) if isinstance(body, str) else None
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return None

    @staticmethod
    def _fields(table: str, name: str, fields: dict[str, str]) -> dict[str, str] | None:
        """An entry's rows, field -> JSON text (decoded when a field is first asked for)."""
        return fields if all(isinstance(body, str) for body in fields.values()) else None

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
                meta = {name: self._meta_value(body) for name, body in rows.items()}
                if meta.get("key") != self.key:
                    return  # another kb, another schema, another format: start afresh
                written = meta.get("written_ns")
                self.written_ns = written if isinstance(written, int) else 0
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

    # ------------------------------------------------------------ the reverse-dependency table
    def dependents(self, key: str) -> dict[str, dict[str, str]]:
        """Who read `key` when last computed, with a fingerprint of each value read: reader -> {value: fp}.
        Rows come from the table unless this run computed the reader again."""
        out: dict[str, dict[str, str]] = {}
        if self.trusted and self._reader is not None:
            try:
                assert self._reader is not None
                rows = self._reader.execute("SELECT reader, body FROM reads WHERE dep = ?", (key,)).fetchall()
            except sqlite3.Error:  # a cache of the kb before this table: every reader is suspect
                return {reader: {"": ""} for reader in self.compute}
            for reader, body in rows:
                seen = self._read_row(body)
                if seen is None:
                    return {reader: {"": ""} for reader in self.compute}  # corrupt: trust no row
                out[reader] = seen
        for reader, reads in self.new_reads.items():
            if key in reads:
                out[reader] = reads[key]
            else:
                out.pop(reader, None)
        return out

    def records_read(self, reader: str) -> dict[str, dict[str, str]]:
        """What `reader` read of other records when its values were last computed: record -> {value: fp}."""
        if reader in self.new_reads:
            return self.new_reads[reader]
        if self.held_reads is not None:
            return self.held_reads.get(reader, {})
        rows = self._stored_reads("SELECT reader, dep, body FROM reads WHERE reader = ?", (reader,))
        return rows.get(reader, {})

    def all_records_read(self) -> dict[str, dict[str, dict[str, str]]]:
        """records_read of every reader, in one pass over the table (a site build asks for every page)."""
        stored = (
            self.held_reads
            if self.held_reads is not None
            else self._stored_reads("SELECT reader, dep, body FROM reads")
        )
        return {**stored, **self.new_reads}

    def hold_reads(self) -> None:
        """Read the whole table now, in this run's read transaction. A run that computed only some records
        and still needs what every record read (a build's page fingerprints, after the save has ended the
        transaction) answers from this: from the same snapshot as the values it read, never from rows
        another kb wrote since."""
        if self.held_reads is None:
            self.held_reads = self._stored_reads("SELECT reader, dep, body FROM reads")

    def _stored_reads(self, sql: str, args: tuple[str, ...] = ()) -> dict[str, dict[str, dict[str, str]]]:
        """reader -> record read -> {value: fingerprint}, from the stored rows the query selects; a row that does
        not decode stands for a value no fingerprint matches."""
        out: dict[str, dict[str, dict[str, str]]] = {}
        if not self.trusted or self._reader is None:
            return out
        try:
            rows = self._reader.execute(sql, args).fetchall()
        except sqlite3.Error:
            return out
        for reader, dep, body in rows:
            seen = self._read_row(body)
            out.setdefault(reader, {})[dep] = seen if seen is not None else {"": ""}
        return out

    def set_reads(self, reader: str, reads: dict[str, dict[str, str]]) -> None:
        """What `reader` read this run (record read -> {value: fingerprint}); replaces all of its rows."""
        self.new_reads[reader] = reads

    @staticmethod
    def _read_row(body: Any) -> dict[str, str] | None:
        if not isinstance(body, str):
            return None
        try:
            seen = json.loads(body)
        except ValueError:
            return None
        ok = isinstance(seen, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in seen.items())
        return seen if ok else None

    # ------------------------------------------------------------ per file
    def unchanged(self, rel: str, st: os.stat_result) -> dict[str, Any] | None:
        """The entry for a file whose stat matches what the cache saw and that is not 'racily clean'."""
        entry = self.files.get(rel)
        if entry is None or not self.same_stat(entry.get("stat"), st):
            return None
        return entry

    def same_stat(self, stored: Any, st: os.stat_result) -> bool:
        """The file is as the store saw it, judged by its stat alone, and was not 'racily clean' then."""
        return stored == file_stat(st) and max(st.st_mtime_ns, st.st_ctime_ns) < self.written_ns - RACY_NS

    def note_stat(self, rel: str, st: os.stat_result) -> None:
        """Remember the stat taken before the file was read: an edit after that changes it, so is seen next time."""
        entry = self.files.get(rel)
        if entry is not None and entry.get("stat") != file_stat(st):
            entry["stat"] = file_stat(st)

    def file(self, rel: str, file_digest: str) -> dict[str, Any] | None:
        entry = self.files.get(rel)
        if entry is not None and entry.get("digest") == file_digest:
            return entry
        return None

    def store_file(self, rel: str, file_digest: str, **results: Any) -> dict[str, Any]:
        self.files[rel] = {"digest": file_digest, **results}
        return self.files[rel]

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
            or bool(self.new_reads)
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
            # a read-only connection closing last leaves the WAL files; a writer's close folds them in
            if self._usable_file() and self.path.exists():
                try:
                    writer = sqlite3.connect(self.path, timeout=1)
                    try:
                        writer.execute("PRAGMA schema_version").fetchone()  # opens the file: its close folds the WAL
                    finally:
                        writer.close()
                except sqlite3.Error:
                    pass

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
        meta = {name: self._meta_value(body) for name, body in stored.items()}
        fresh = meta.get("key") != self.key  # another kb, schema or format: none of it is kept
        if fresh:
            for old in ("files_rows", "compute_rows", "reads", *INDEX_TABLES):  # a format's may have other columns
                connection.execute(f"DROP TABLE IF EXISTS {old}")
        for table in (self.files, self.compute):
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {table.sql} (name TEXT, field TEXT, body TEXT, PRIMARY KEY (name, field))"
            )
        connection.execute(
            "CREATE TABLE IF NOT EXISTS reads (reader TEXT, dep TEXT, body TEXT, PRIMARY KEY (reader, dep))"
        )
        connection.execute("CREATE INDEX IF NOT EXISTS reads_by_dep ON reads (dep)")
        if fresh:
            for table in (self.files, self.compute):
                table.dirty.update(table.live)
                table.dirty.update(table.raw)
                table.rewrite_all = True
            for name in self.compute:  # an entry is kept only with the reads it was computed from
                if name not in self.new_reads:
                    del self.compute[name]
                    self.index_fingerprint = None
        elif meta.get("generation") != self.generation:
            # Another kb saved since this one read the cache. A file's rows hold what its bytes alone decide
            # (and what is checked again on use), so they are written; the values are not: a record computed
            # here may have read a neighbour the other run has since recomputed from newer bytes, and a
            # reader kept with an old neighbour's values would never be looked at again.
            self._write_table(connection, self.files)
            self._write_meta(connection, {"written_ns": time.time_ns(), "indexed": None})  # the index is the other's
            return
        for reader, reads in self.new_reads.items():
            connection.execute("DELETE FROM reads WHERE reader = ?", (reader,))
            connection.executemany(
                "INSERT INTO reads VALUES (?, ?, ?)",
                [(reader, dep, json.dumps(seen, sort_keys=True, separators=(",", ":"))) for dep, seen in reads.items()],
            )
        self._write_table(connection, self.files)
        self._write_table(connection, self.compute)
        generation = (self.generation if isinstance(self.generation, int) else 0) + 1
        update = self.index_update
        indexed = update is not None and (update.whole or (self.indexed and not fresh))
        if indexed:
            self._write_index(connection, update)
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

    @staticmethod
    def _write_index(connection: sqlite3.Connection, update: Any) -> None:
        """The corpus as this run saw it (kbtools.check.scope): ids, links and findings, whole or in part."""
        connection.execute(
            "CREATE TABLE IF NOT EXISTS ids (key TEXT PRIMARY KEY, path TEXT, id TEXT, type TEXT, digest TEXT, "
            "name_key TEXT, url_key TEXT)"
        )
        connection.execute("CREATE INDEX IF NOT EXISTS ids_by_name ON ids (name_key)")
        connection.execute("CREATE INDEX IF NOT EXISTS ids_by_url ON ids (url_key)")
        connection.execute("CREATE TABLE IF NOT EXISTS edges (source TEXT, target TEXT, field TEXT, line INTEGER)")
        connection.execute("CREATE INDEX IF NOT EXISTS edges_by_source ON edges (source)")
        connection.execute("CREATE INDEX IF NOT EXISTS edges_by_target ON edges (target)")
        connection.execute(
            "CREATE TABLE IF NOT EXISTS findings (path TEXT, stage TEXT, body TEXT, PRIMARY KEY (path, stage))"
        )
        if update.whole:
            for table in INDEX_TABLES:
                connection.execute(f"DELETE FROM {table}")
        connection.executemany("INSERT OR REPLACE INTO ids VALUES (?, ?, ?, ?, ?, ?, ?)", update.ids)
        connection.executemany("DELETE FROM edges WHERE source = ?", [(s,) for s in update.edge_sources])
        connection.executemany("INSERT INTO edges VALUES (?, ?, ?, ?)", update.edges)
        connection.executemany(
            "DELETE FROM findings WHERE path = ? AND stage = ?", [w for w, body in update.findings.items() if not body]
        )
        connection.executemany(
            "INSERT OR REPLACE INTO findings VALUES (?, ?, ?)",
            [(path, stage, body) for (path, stage), body in update.findings.items() if body],
        )

    def _write_table(self, connection: sqlite3.Connection, table: Table) -> None:
        """A changed entry's rows replaced together; a deleted entry's rows removed."""
        for name in table.dirty:
            entry = table.get(name)
            if entry is None:
                continue
            if table.rewrite_all or entry.changed is None:  # a new entry: none of its old fields survives
                connection.execute(f"DELETE FROM {table.sql} WHERE name = ?", (name,))
                connection.executemany(
                    f"INSERT INTO {table.sql} VALUES (?, ?, ?)",
                    [(name, field, body) for field, body in entry.packed().items()],
                )
            else:  # a stored entry of which a stage set some fields: only those rows change
                connection.executemany(
                    f"INSERT OR REPLACE INTO {table.sql} VALUES (?, ?, ?)",
                    [(name, field, body) for field, body in entry.packed(entry.changed).items()],
                )
        connection.executemany(f"DELETE FROM {table.sql} WHERE name = ?", [(n,) for n in table.deleted])

    def _write_meta(self, connection: sqlite3.Connection, meta: dict[str, Any]) -> None:
        for name, value in meta.items():
            connection.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, encode(value)))


T = TypeVar("T")


def remembered(
    cache: Cache | None, record: Any, name: str, compute: Callable[[], T], valid: Callable[[T], bool] | None = None
) -> T:
    """The cache's one seam for a stage: the result named `name` for this record, from the cache while the
    file's bytes (and kb and the schemas, which the cache key covers) are unchanged and `valid` accepts it;
    else computed now and kept. The entry marks itself to be written back; no stage sets a flag by hand."""
    entry = cache.file(record.path, record.digest) if cache is not None else None
    if entry is not None and name in entry:
        value = entry[name]
        if valid is None or valid(value):
            return value
    value = compute()
    if entry is not None:
        entry[name] = value
    return value
