"""The store's index of the corpus as the last run saw it: every record's id, type, digest and near-duplicate
keys (`ids`), every link (`edges`), every file's findings per stage (`findings`). Written here (write_index),
inside the store's write transaction, and asked here (StoredIndex), inside a run's read transaction: the
tables' SQL in one module. kbtools.check.run.scope decides from it what a scoped run judges."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any, NamedTuple

from kbtools.check.store.key import INDEX_TABLES


class StoreFailed(Exception):
    """The store could not answer what a scoped run needed: the run is done again, whole."""


class Known(NamedTuple):
    """One record as the last run indexed it (a row of the store's id table)."""

    path: str
    id: str
    type: str | None
    digest: str
    name_key: str | None  # kbtools.check.similar's groups (kbtools.lang.normal)
    url_key: str | None

    @property
    def groups(self) -> tuple[str | None, str | None]:
        return self.name_key, self.url_key


class StoredIndex:
    """The last run's index of the corpus, asked within the run's one read transaction."""

    def __init__(self, connection: sqlite3.Connection):
        self.connection = connection
        try:
            rows = connection.execute("SELECT key, path, id, type, digest, name_key, url_key FROM ids ORDER BY path")
            self.known = {row[0]: Known(*row[1:]) for row in rows}
        except sqlite3.Error as exc:
            raise StoreFailed(str(exc)) from None

    def _query(self, sql: str, args: Iterable[Any]) -> list[tuple]:
        try:
            return self.connection.execute(sql, tuple(args)).fetchall()
        except sqlite3.Error as exc:
            raise StoreFailed(str(exc)) from None

    def sources_into(self, keys: Iterable[str]) -> set[str]:
        return {s for key in keys for (s,) in self._query("SELECT source FROM edges WHERE target = ?", (key,))}

    def targets_from(self, keys: Iterable[str]) -> set[str]:
        return {t for key in keys for (t,) in self._query("SELECT target FROM edges WHERE source = ?", (key,))}

    def linked_from_outside(self, key: str, judged: frozenset[str] | set[str]) -> bool:
        """A stored link into `key` from a record this run did not judge again (whose links are as stored)."""
        rows = self._query("SELECT DISTINCT source FROM edges WHERE target = ? AND source != ?", (key, key))
        return any(source not in judged for (source,) in rows)

    def group_members(self, type_: str | None, kind: int, value: str) -> set[str]:
        column = ("name_key", "url_key")[kind]
        return {k for (k,) in self._query(f"SELECT key FROM ids WHERE type IS ? AND {column} = ?", (type_, value))}

    def groups_of(self, key: str) -> tuple[str | None, ...]:
        """The near-duplicate groups `key` was in when the last run indexed it (none for a new record)."""
        known = self.known.get(key)
        return known.groups if known is not None else ()

    def findings(self) -> list[tuple[str, str, str]]:
        """(path, stage, diagnostics as JSON) of every file the last run found something in."""
        return self._query("SELECT path, stage, body FROM findings", ())


def write_index(connection: sqlite3.Connection, update: Any) -> None:
    """The corpus as this run saw it (kbtools.check.run.scope): ids, links and findings, whole or in part."""
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
