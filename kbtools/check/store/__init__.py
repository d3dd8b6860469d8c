"""The store: what one run of kb check keeps for the next, in kb's state directory (never the repository).

- key: what the store is keyed by (kb's code, the schemas, a file's bytes and stat);
- codec: kb's own types to JSON text and back (data only: no row can make kb run anything);
- rows: a table of entries, each field decoded when first asked for and written back only where set; the
  files table finds a file's entry by its stat or by its digest;
- reads: the reverse-dependency table (who read what of which record, with fingerprints);
- index: the corpus as the last run saw it (ids, edges, findings), its SQL written and asked in one place;
- store: the Cache that reads and writes all of it in one SQLite file.

No stage imports it: a stage judges, and the driver (kbtools.check.run) keeps and reuses its judgements
(tests/test_layout.py holds that). Its public names are these.
"""

from kbtools.check.store.codec import decode, encode, revive
from kbtools.check.store.key import RACY_NS, code_files, schema_key
from kbtools.check.store.store import Cache

__all__ = ["RACY_NS", "Cache", "code_files", "decode", "encode", "revive", "schema_key"]
