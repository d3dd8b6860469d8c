"""Stages 1-2, discover and load: record files -> Records with source positions.

The frontmatter is split off by hand and composed with PyYAML's node API rather
than loaded with python-frontmatter or yaml.safe_load: both drop positions, and
safe_load silently keeps the last of two duplicate keys. Composing gives every
key's line and column and lets us see duplicates.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import re
import stat
from pathlib import Path
from typing import Any, Protocol

import yaml

from kbtools.check.placeholders import find_placeholders
from kbtools.corpus import Corpus, FieldPath, Record, Settings, dotted
from kbtools.diagnostics import Diagnostic, KbError, internal_error
from kbtools.files import NotReadable, digest, read_regular_file, walk
from kbtools.ids import id_problem
from kbtools.lang.units import number_problem, shorten
from kbtools.progress import track
from kbtools.registry import TypeRegistry

FENCE = re.compile(r"^---[ \t]*$")
CLOSING_FENCE = re.compile(r"^(---|\.\.\.)[ \t]*$")
MAX_NODES = 100_000  # bounds alias expansion ("billion laughs") and absurd frontmatter
MAX_DEPTH = 100
MAX_RECORD_BYTES = 5 * 1024 * 1024  # a record is prose and figures; beyond this it is a mistake or an attack


# libyaml's parser when PyYAML has it (about 50x faster to compose), the pure-Python one otherwise;
# both give nodes with line/column marks and raise MarkedYAMLError with the problem's position.
_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """A safe loader without the timestamp resolver: dates stay strings and are checked by the schema."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


_NUMBER_TAGS = frozenset(("tag:yaml.org,2002:int", "tag:yaml.org,2002:float"))
_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{t}" for t in ("map", "seq", "str", "int", "float", "bool", "null", "merge", "timestamp")
)


class LoadError(KbError):
    """A file kb cannot read as a record; always positioned (line and column in the file)."""

    line: int
    column: int

    def __init__(self, code: str, line: int, column: int, message: str):
        super().__init__(code, message, line, column)


def discover(settings: Settings, registry: TypeRegistry) -> tuple[list[str], list[Diagnostic]]:
    """Every .md file under records/ (as paths relative to the root, '/'-separated, sorted);
    a file outside a type's directory is KB110. Plain strings: pathlib cost more than the
    rest of a warm run's loading."""
    records = str(settings.records_path)
    files: list[str] = []
    diagnostics: list[Diagnostic] = []
    if not os.path.isdir(records):
        return files, diagnostics
    known = set(registry.dirs)
    real_records = os.path.realpath(records)
    prefix = settings.records_dir.rstrip("/")

    def unreadable(error: OSError) -> None:
        where = os.path.relpath(error.filename or records, settings.root).replace(os.sep, "/")
        diagnostics.append(
            Diagnostic.make(
                "KB112", where, 1, 1, f"cannot read directory: {error.strerror}; its records were not checked"
            )
        )

    for inner, subdirs, names in walk(records, onerror=unreadable):
        for entry in [entry for entry in subdirs if entry.is_symlink()]:  # os.walk would pass over it silently
            subdirs.remove(entry)
            rel = f"{prefix}/{entry.name if inner == '.' else f'{inner}/{entry.name}'}"
            diagnostics.append(
                Diagnostic.make(
                    "KB112",
                    rel,
                    1,
                    1,
                    "is a symlink to a directory; kb does not follow it, so "
                    "its records were not checked (make it a real directory)",
                )
            )
        for entry in names:
            name = entry.name
            if not name.endswith(".md"):
                continue
            rel_in = name if inner == "." else f"{inner}/{name}"
            rel = f"{prefix}/{rel_in}"
            if entry.is_symlink():  # the directory listing says so: no lstat of its own
                target = os.path.realpath(entry.path)
                if os.path.commonpath([target, real_records]) != real_records:
                    diagnostics.append(
                        Diagnostic.make(
                            "KB112", rel, 1, 1, "record is a symlink to a file outside records/; it is not read"
                        )
                    )
                    continue
            parts = rel_in.split("/")
            if len(parts) != 2 or parts[0] not in known:
                where = "/".join(parts[:-1]) + "/" if len(parts) > 1 else "records/ itself"
                diagnostics.append(
                    Diagnostic.make(
                        "KB110",
                        rel,
                        1,
                        1,
                        f"'{where}' is not a record directory (known: {', '.join(sorted(known))})",
                        hint="records live at records/<dir>/<id>.md; add schema/<type>.schema.json with x-kb-dir to add a type",
                    )
                )
                continue
            files.append(rel)
    return sorted(files), diagnostics


class KeptFiles(Protocol):
    """What loading asks of the files a run keeps (the store's files table, kbtools.check.store.rows): a
    file's entry by its stat or by its digest, and a place for what this run parsed."""

    def unchanged(self, rel: str, st: os.stat_result) -> Any: ...

    def file(self, rel: str, file_digest: str) -> Any: ...

    def store_file(self, rel: str, file_digest: str, **fields: Any) -> Any: ...

    def note_stat(self, rel: str, st: os.stat_result) -> None: ...


def load_corpus(settings: Settings, registry: TypeRegistry, kept: KeptFiles | None = None) -> Corpus:
    """Every record file read and parsed; with `kept`, a file whose stat or bytes it knows is not parsed
    again, and what is parsed is kept there for the next run."""
    files, diagnostics = discover(settings, registry)
    records: dict[str, Record] = {}
    stats: dict[str, os.stat_result] = {}
    outcomes: list[tuple[str, Any, Any]] = []  # per file, in order: (rel, record, its load diagnostics)
    to_parse: list[tuple[int, str, str, bytes, str]] = []  # (outcome index, rel, path, bytes, digest)
    for rel in track(files, "Reading records"):
        path = settings.root / rel
        try:
            st = os.stat(path)
        except OSError as exc:
            diagnostics.append(Diagnostic.make("KB112", rel, 1, 1, f"cannot read file: {exc.strerror}"))
            continue
        # like git's index: a file whose size, times and inode match what the cache saw, and that
        # was not modified just before the cache was written, is not read again
        entry = kept.unchanged(rel, st) if kept is not None and stat.S_ISREG(st.st_mode) else None
        if entry is not None:
            outcomes.append((rel, entry["record"], entry["load"]))
            continue
        try:
            raw, st = read_regular(path)
        except LoadError as exc:
            diagnostics.append(exc.at(rel, 1, 1))
            continue
        file_digest = digest(raw)
        entry = kept.file(rel, file_digest) if kept is not None else None
        if entry is None:
            to_parse.append((len(outcomes), rel, str(path), raw, file_digest))
            outcomes.append((rel, None, None))
        else:
            outcomes.append((rel, entry["record"], entry["load"]))
        if kept is not None:  # a new entry too, or the next run would read every file again to learn it
            stats[rel] = st  # the stat taken before reading: an edit during the read shows next time
    for (index, rel, _, _, file_digest), (record, found, extra) in zip(
        to_parse, parse_all(to_parse, registry, with_stages=kept is not None), strict=True
    ):
        outcomes[index] = (rel, record, found)
        if kept is not None:
            kept.store_file(rel, file_digest, record=record, load=found, **extra)
    for rel, record, found in outcomes:
        if kept is not None and rel in stats:
            kept.note_stat(rel, stats.pop(rel))
        diagnostics.extend(found)
        if record is not None:
            records[record.key] = record
    return Corpus(
        settings=settings,
        registry=registry,
        records=records,
        diagnostics=tuple(registry.diagnostics) + tuple(diagnostics),
    )


# ---------------------------------------------------------------- parsing, over the cores when it pays
POOL_MIN = 2000  # files to parse before a pool pays: measured slower at 1k records (pickling), 5 % faster at 10k
_REGISTRY: TypeRegistry | None = None  # the registry a forked worker inherits


def parse_all(items: list[tuple[int, str, str, bytes, str]], registry: TypeRegistry, with_stages: bool) -> list:
    """(record, load diagnostics, stage results) per file, in order. With a cache (with_stages), each file is
    also validated against its schema and its body scanned, results the cache keeps and the schema and link
    stages then reuse. In a pool of forked workers only when asked for (KB_WORKERS=2 or more): in the
    benchmark, concurrent.futures' pool hung at 100k records (a worker forked while the pool's feeder thread
    held a lock), so the pool is multiprocessing's, whose workers are all forked before it starts a thread,
    and it stays off by default until it is measured safe and worth it at every size."""
    global _REGISTRY
    _REGISTRY = registry
    workers = min(os.cpu_count() or 1, int(os.environ.get("KB_WORKERS", "1")))
    jobs = [(rel, path, raw, file_digest, with_stages) for _, rel, path, raw, file_digest in items]
    if (
        workers < 2
        or len(jobs) < int(os.environ.get("KB_POOL_MIN", POOL_MIN))
        or "fork" not in mp.get_all_start_methods()
    ):
        return [_parse_one(job) for job in jobs]
    with mp.get_context("fork").Pool(workers) as pool:
        return pool.map(_parse_one, jobs, chunksize=max(1, min(500, len(jobs) // (workers * 8))))


def _parse_one(job: tuple[str, str, bytes, str, bool]) -> tuple[Record | None, list[Diagnostic], dict[str, Any]]:
    from kbtools.check.schema import validate_record  # the stages import this module
    from kbtools.lang.markdown import scan_body

    rel, path, raw, file_digest, with_stages = job
    registry = _REGISTRY
    assert registry is not None
    try:
        record, found = load_record_bytes(raw, rel, Path(path), registry, file_digest)
    except Exception as exc:  # a bug of kb's own must not hide the other files' results
        return None, [internal_error(rel, exc)], {}
    extra: dict[str, Any] = {}
    if with_stages and record is not None:
        record_type = registry.types.get(record.type) if record.type else None
        if record_type is not None:
            extra["schema"] = validate_record(record, record_type)
        extra["scan"] = scan_body(record.body)
    return record, found, extra


def read_regular(path: Path) -> tuple[bytes, os.stat_result]:
    """A record file's bytes and its stat taken before reading; LoadError KB112/KB113 for what is no readable
    record file (kbtools.files: a FIFO or a device never hangs kb)."""
    try:
        return read_regular_file(path, MAX_RECORD_BYTES)
    except NotReadable as exc:
        if exc.too_large:
            raise LoadError(
                "KB113", 1, 1, f"{exc}; a record may be at most {MAX_RECORD_BYTES // 1048576} MiB"
            ) from None
        raise LoadError("KB112", 1, 1, str(exc)) from None


def load_record_bytes(
    raw: bytes, rel: str, path: Path, registry: TypeRegistry, file_digest: str
) -> tuple[Record | None, list[Diagnostic]]:
    directory, stem = path.parent.name, path.stem
    record_type = registry.by_dir(directory)
    try:
        data, positions, values, body, body_line = parse_record_parts(raw)
    except LoadError as exc:
        return None, [exc.at(rel)]
    record = Record(
        path=rel,
        dir=directory,
        stem=stem,
        data=data,
        positions=positions,
        value_positions=values,
        body=body,
        body_line=body_line,
        type=record_type.name if record_type else None,
        digest=file_digest,
        type_costs=record_type.costs if record_type is not None else {},
    )
    found = check_identity(record, record_type.name if record_type else None)
    lines = raw.decode("utf-8", errors="replace").splitlines()
    found += find_placeholders(lines[1 : max(1, body_line - 2)], 2, data, values, body, body_line, rel)
    return record, found


def check_identity(record: Record, expected_type: str | None) -> list[Diagnostic]:
    """id = file stem, id is a slug, type = the directory's type."""
    out: list[Diagnostic] = []
    record_id = record.data.get("id")
    line, col = record.position(("id",))
    problem = id_problem(record.stem)
    if problem:
        out.append(
            Diagnostic.make(
                "KB108",
                record.path,
                1,
                1,
                f"file name '{record.stem}' is not a valid id: {problem}",
            )
        )
    if isinstance(record_id, str):
        if record_id != record.stem:  # (an id equal to a bad file name was reported on the name above)
            out.append(
                Diagnostic.make(
                    "KB107",
                    record.path,
                    line,
                    col,
                    f"id '{record_id}' does not match the file name '{record.stem}'",
                    hint=f"rename the file to {record_id}.md or set id: {record.stem}",
                )
            )
    elif record_id is not None:
        out.append(
            Diagnostic.make("KB108", record.path, line, col, f"id must be a string, not {_yaml_type(record_id)}")
        )
    declared = record.data.get("type")
    if expected_type is not None and declared is not None and declared != expected_type:
        line, col = record.position(("type",))
        out.append(
            Diagnostic.make(
                "KB109",
                record.path,
                line,
                col,
                f"type '{declared}' does not match directory '{record.dir}/' (type '{expected_type}')",
            )
        )
    return out


def parse_record_bytes(raw: bytes) -> tuple[dict[str, Any], dict[FieldPath, tuple[int, int]], str, int]:
    """Bytes -> (frontmatter, key positions, body, first body line). Raises LoadError."""
    data, positions, _, body, body_line = parse_record_parts(raw)
    return data, positions, body, body_line


def parse_record_parts(
    raw: bytes,
) -> tuple[dict[str, Any], dict[FieldPath, tuple[int, int]], dict[FieldPath, tuple[int, int]], str, int]:
    """Bytes -> (frontmatter, key positions, value positions, body, first body line). Raises LoadError."""
    if not raw.strip():
        raise LoadError("KB101", 1, 1, "empty file: a record needs a --- frontmatter block")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise LoadError(
            "KB100", line, column, f"invalid UTF-8 byte 0x{raw[exc.start]:02x}; save the file as UTF-8"
        ) from None
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not FENCE.match(lines[0].rstrip("\r\n")):
        raise LoadError("KB102", 1, 1, "missing frontmatter: the first line must be '---'")
    closing = next((i for i in range(1, len(lines)) if CLOSING_FENCE.match(lines[i].rstrip("\r\n"))), None)
    if closing is None:
        raise LoadError("KB103", 1, 1, "frontmatter opened here is never closed by a '---' line")
    yaml_text = "".join(lines[1:closing])
    data, positions, values = parse_frontmatter(yaml_text, line_offset=1)
    body = "".join(lines[closing + 1 :])
    return data, positions, values, body, closing + 2


def parse_frontmatter(
    yaml_text: str, line_offset: int
) -> tuple[dict[str, Any], dict[FieldPath, tuple[int, int]], dict[FieldPath, tuple[int, int]]]:
    """Compose YAML to nodes and convert them ourselves, recording positions and duplicates."""
    loader = _Loader(yaml_text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 + line_offset if mark else 1 + line_offset
        column = mark.column + 1 if mark else 1
        problem = exc.problem or str(exc)
        if exc.context:
            problem = f"{problem} ({exc.context})"
        if mark is not None and _char_at(yaml_text, mark.line, mark.column) == "\t":
            # libyaml words a tab by where it stands: "found character that cannot start any token" at the start
            # of a line, "a tab character that violates indentation" elsewhere; either way the tab is the fault
            problem = TAB_PROBLEM
        raise LoadError("KB104", line, column, f"invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise LoadError("KB104", 1 + line_offset, 1, f"invalid YAML: {exc}") from None
    except RecursionError:
        raise LoadError("KB111", 1 + line_offset, 1, "frontmatter nests too deeply to load") from None
    finally:
        loader.dispose()
    if node is None:
        raise LoadError("KB106", 1 + line_offset, 1, "frontmatter is empty; it must be a mapping of keys to values")
    converter = _Converter(loader, line_offset)
    if not isinstance(node, yaml.MappingNode):
        kind = "a list" if isinstance(node, yaml.SequenceNode) else "a single value"
        line, col = converter.where(node)
        raise LoadError("KB106", line, col, f"frontmatter must be a mapping of keys to values, not {kind}")
    positions: dict[FieldPath, tuple[int, int]] = {(): converter.where(node)}
    data = converter.convert(node, (), positions, 0)
    return data, positions, converter.values


TAB_PROBLEM = "a tab character where YAML expects spaces (YAML indents with spaces only)"


def _char_at(text: str, line: int, column: int) -> str:
    """The character at a YAML mark's 0-based line and column ('' past the end)."""
    lines = re.split("\r\n|[\r\n\x85\u2028\u2029]", text)  # the line breaks YAML counts
    return lines[line][column : column + 1] if 0 <= line < len(lines) and column >= 0 else ""


class _Converter:
    def __init__(self, loader: yaml.SafeLoader, line_offset: int):
        self.loader, self.line_offset, self.count = loader, line_offset, 0
        self.values: dict[FieldPath, tuple[int, int]] = {}  # where each scalar value's text starts

    def where(self, node: yaml.Node) -> tuple[int, int]:
        return node.start_mark.line + 1 + self.line_offset, node.start_mark.column + 1

    def convert(self, node: yaml.Node, path: FieldPath, positions: dict, depth: int) -> Any:
        if node.tag not in _PLAIN_TAGS:  # !!python/object, !!binary, custom tags: data only, never objects
            line, col = self.where(node)
            raise LoadError(
                "KB104", line, col, f"YAML tag {node.tag.replace('tag:yaml.org,2002:', '!!')} is not allowed in records"
            )
        self.count += 1
        if self.count > MAX_NODES or depth > MAX_DEPTH:
            line, col = self.where(node)
            what = (
                f"more than {MAX_NODES} YAML nodes (alias bomb?)"
                if self.count > MAX_NODES
                else f"nesting deeper than {MAX_DEPTH}"
            )
            raise LoadError("KB111", line, col, f"frontmatter expands to {what}")
        if isinstance(node, yaml.MappingNode):
            try:
                self.loader.flatten_mapping(node)  # resolves YAML merge keys (<<)
            except yaml.YAMLError as exc:
                line, col = self.where(node)
                raise LoadError(
                    "KB104", line, col, f"invalid YAML merge (<<): {getattr(exc, 'problem', None) or exc}"
                ) from None
            result: dict[str, Any] = {}
            first_seen: dict[str, int] = {}
            for key_node, value_node in node.value:
                key = self.scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else None
                line, col = self.where(key_node)
                if not isinstance(key, (str, int, float, bool)) or key is None:
                    raise LoadError("KB104", line, col, "invalid YAML: mapping keys must be plain scalars")
                key = str(key)
                if key in first_seen:
                    raise LoadError(
                        "KB105",
                        line,
                        col,
                        f"duplicate key '{key}' (first at line {first_seen[key]}); YAML would silently keep only the last",
                    )
                first_seen[key] = line
                positions[path + (key,)] = (line, col)
                result[key] = self.convert(value_node, path + (key,), positions, depth + 1)
            return result
        if isinstance(node, yaml.SequenceNode):
            items = []
            for index, item in enumerate(node.value):
                positions[path + (index,)] = self.where(item)
                items.append(self.convert(item, path + (index,), positions, depth + 1))
            return items
        if path:
            self.values[path] = self.where(node)
        return self.scalar(node, path)

    def scalar(self, node: yaml.ScalarNode, path: FieldPath = ()) -> Any:
        if node.tag in _NUMBER_TAGS:  # bounded before it is converted: int() of thousands of digits is the danger
            self.check_number(node, None, path)
        try:
            value = self.loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError) as exc:
            line, col = self.where(node)
            raise LoadError("KB104", line, col, f"invalid YAML value: {exc}") from None
        if isinstance(value, bytes):
            line, col = self.where(node)
            raise LoadError("KB104", line, col, "binary values are not allowed in records")
        if isinstance(value, float) and value != value:  # NaN is no figure
            line, col = self.where(node)
            raise LoadError("KB104", line, col, "NaN is not a value; leave the field out when it is unknown")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.check_number(node, value, path)
        return value

    def check_number(self, node: yaml.ScalarNode, value: Any, path: FieldPath) -> None:
        """Every number in the frontmatter is bounded where it is read (KB403), so nothing after the loader
        meets an infinity or an integer too large for a float."""
        problem = number_problem(node.value if value is None else None, value)
        if problem:
            line, col = self.where(node)
            raise LoadError(
                "KB403",
                line,
                col,
                (f"{dotted(path)}: " if path else "")
                + f"{shorten(node.value)} is out of range: {problem}; quote it if it is a name or a code, not a figure",
            )


def _yaml_type(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "a mapping"}.get(
        type(value), type(value).__name__
    )
