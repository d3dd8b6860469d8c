"""What the store is keyed by: the format, kb's own code and the schemas (`schema_key`), a file's bytes
(kbtools.files.digest) and its stat (`file_stat`, git's racy-clean rule)."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from kbtools.files import MAX_SCHEMA_BYTES, read_regular_file
from kbtools.version import __version__

# 5: in kb's state directory, rows without a MAC; 6: the index of the corpus (kbtools.check.run.scope); 7: due dates;
# 8: freshness a Stage, judged per file
FORMAT = 8
RACY_NS = 2_000_000_000
INDEX_TABLES = ("ids", "edges", "findings")  # the corpus as the last run saw it (kbtools.check.run.scope)


def code_files() -> list[Path]:
    """Every module of every subpackage of kbtools, and the unit definitions: what the cache key hashes."""
    package = Path(__file__).resolve().parents[2]
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
    package = Path(__file__).resolve().parents[2]
    for path in code_files():
        h.update(path.relative_to(package).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def file_stat(st: os.stat_result) -> list[int]:
    """What git's index compares to call a file unchanged without reading it."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
