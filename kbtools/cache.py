"""A persistent cache of per-record stage results, so a re-run only redoes what changed.

What is cached, per record file (keyed by a hash of its bytes): the loaded Record or
its load diagnostics, its schema diagnostics, and its body scan (links and inline
values). Per record, the compute stage's diagnostics with the records it read and how
each reference it used resolved; a record is recomputed when it, or anything it read
(transitively), changed, or when a reference it used would now resolve differently.

The whole cache is dropped when the tool version, the Python version or any schema
file changes. It lives in .kb-cache/ (git-ignored) and is written atomically; an
unreadable or foreign cache file is ignored, never trusted. A stale cache must never
hide an error: tests compare incremental and full runs over random edit sequences.
"""
from __future__ import annotations

import gc
import hashlib
import os
import pickle
import sys
from pathlib import Path
from typing import Any

from . import __version__

CACHE_DIR = ".kb-cache"
FORMAT = 1


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def schema_key(schema_dir: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{FORMAT}:{__version__}:{sys.version_info[:2]}".encode())
    for path in sorted(schema_dir.glob("*.json")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    # the tool's own code and unit definitions: a kb that changed may store or judge differently
    for path in sorted(Path(__file__).parent.glob("*.py")) + [Path(__file__).with_name("units.txt")]:
        h.update(path.read_bytes())
    return h.hexdigest()


class Cache:
    def __init__(self, root: Path, schema_dir: Path, enabled: bool = True):
        self.path = root / CACHE_DIR / "check.pickle"
        self.enabled = enabled
        self.key = schema_key(schema_dir) if schema_dir.is_dir() else ""
        self.files: dict[str, dict[str, Any]] = {}  # rel path -> {digest, record, load, schema, scan}
        self.compute: dict[str, dict[str, Any]] = {}  # record key -> {digest, deps, resolved, diagnostics}
        self.compute_global: list = []  # compute diagnostics that belong to no record (schema formulas)
        self.hits = 0
        self.changed = False  # anything to write back?
        self.written_ns = 0  # when the cache file was last written (for the racy-clean rule)
        if enabled:
            self._read()

    def _read(self) -> None:
        try:
            gc.disable()  # unpickling many small objects is much faster without collections
            with open(self.path, "rb") as handle:
                stored = pickle.load(handle)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError, TypeError, ValueError):
            return
        finally:
            gc.enable()
        try:
            self.written_ns = self.path.stat().st_mtime_ns
        except OSError:
            return
        if isinstance(stored, dict) and stored.get("key") == self.key:
            self.files = stored.get("files", {})
            self.compute = stored.get("compute", {})
            self.compute_global = stored.get("compute_global", [])

    def unchanged(self, rel: str, path: Path) -> dict[str, Any] | None:
        """The entry for a file whose (size, mtime) match and that is not 'racily clean'."""
        entry = self.files.get(rel)
        if entry is None or "stat" not in entry:
            return None
        try:
            stat = path.stat()
        except OSError:
            return None
        if (stat.st_size, stat.st_mtime_ns) != entry["stat"] or stat.st_mtime_ns >= self.written_ns - 2_000_000_000:
            return None
        self.hits += 1
        return entry

    def note_stat(self, rel: str, path: Path) -> None:
        entry = self.files.get(rel)
        if entry is not None:
            try:
                stat = path.stat()
            except OSError:
                return
            if entry.get("stat") != (stat.st_size, stat.st_mtime_ns):
                entry["stat"] = (stat.st_size, stat.st_mtime_ns)
                self.changed = True

    def file(self, rel: str, file_digest: str) -> dict[str, Any] | None:
        entry = self.files.get(rel)
        if entry is not None and entry["digest"] == file_digest:
            self.hits += 1
            return entry
        return None

    def store_file(self, rel: str, file_digest: str, **results: Any) -> dict[str, Any]:
        entry = {"digest": file_digest, **results}
        self.files[rel] = entry
        self.changed = True
        return entry

    def save(self, live_paths: set[str]) -> None:
        if not self.enabled:
            return
        live = {rel: entry for rel, entry in self.files.items() if rel in live_paths}
        if len(live) != len(self.files):
            self.files, self.changed = live, True
        if not self.changed:
            return
        payload = {"key": self.key, "files": self.files, "compute": self.compute, "compute_global": self.compute_global}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            with open(tmp, "wb") as handle:
                pickle.dump(payload, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.path)
            ignore = self.path.parent / ".gitignore"
            if not ignore.exists():
                ignore.write_text("*\n")
        except OSError:
            pass  # a cache that cannot be written only costs time
