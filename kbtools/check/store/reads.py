"""The store's reverse-dependency table: for each record whose values were computed, what it read of every
other record, with a fingerprint of each value read. A warm run asks it who read a changed record (early
cut-off: a reader whose fingerprints all still hold is not computed again), and a build asks what each page
rests on."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any, Protocol


class Snapshot(Protocol):
    """What the table asks of the store that holds it: whether its rows are trusted, the run's one read
    transaction, and the records whose values it keeps (every one suspect when a row cannot be read)."""

    trusted: bool
    key: str

    @property
    def reader(self) -> sqlite3.Connection | None: ...

    @property
    def compute(self) -> Iterable[str]: ...


class StoredReads:
    """The rows of `reads` (reader, dep, {value: fingerprint}) as stored, and what this run set, which wins."""

    def __init__(self, store: Snapshot):
        self.store = store
        self.new_reads: dict[str, dict[str, dict[str, str]]] = {}  # reader -> {record read: {value: fingerprint}}
        self.held_reads: dict[str, dict[str, dict[str, str]]] | None = None  # see hold_reads

    def dependents(self, key: str) -> dict[str, dict[str, str]]:
        """Who read `key` when last computed, with a fingerprint of each value read: reader -> {value: fp}.
        Rows come from the table unless this run computed the reader again."""
        out: dict[str, dict[str, str]] = {}
        if self.store.trusted and self.store.reader is not None:
            try:
                rows = self.store.reader.execute("SELECT reader, body FROM reads WHERE dep = ?", (key,)).fetchall()
            except sqlite3.Error:  # a cache of the kb before this table: every reader is suspect
                return {reader: {"": ""} for reader in self.store.compute}
            for reader, body in rows:
                seen = self._read_row(body)
                if seen is None:
                    return {reader: {"": ""} for reader in self.store.compute}  # corrupt: trust no row
                out[reader] = seen
        for reader, reads in self.new_reads.items():
            if key in reads:
                out[reader] = reads[key]
            else:
                out.pop(reader, None)
        return out

    @property
    def version(self) -> str:
        """The store's key (kb's code and the schemas): what every fingerprint here was computed under."""
        return self.store.key

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
        if not self.store.trusted or self.store.reader is None:
            return out
        try:
            rows = self.store.reader.execute(sql, args).fetchall()
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

    @staticmethod
    def create(connection: sqlite3.Connection) -> None:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS reads (reader TEXT, dep TEXT, body TEXT, PRIMARY KEY (reader, dep))"
        )
        connection.execute("CREATE INDEX IF NOT EXISTS reads_by_dep ON reads (dep)")

    def write(self, connection: sqlite3.Connection) -> None:
        """This run's rows, each reader's replacing all of its old ones (inside the store's write transaction)."""
        for reader, reads in self.new_reads.items():
            connection.execute("DELETE FROM reads WHERE reader = ?", (reader,))
            connection.executemany(
                "INSERT INTO reads VALUES (?, ?, ?)",
                [(reader, dep, json.dumps(seen, sort_keys=True, separators=(",", ":"))) for dep, seen in reads.items()],
            )
