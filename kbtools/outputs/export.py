"""`kb export`: the checked corpus as SQLite (a table per type) or JSON, for Datasette and friends.

Quantities are stored in their field's canonical unit with a `<field>_unit` column beside
them; columns are typed (REAL, INTEGER, TEXT); every cost, for_each rows included, is a row of
`costs`. Beside the SQLite file goes Datasette's metadata (titles, descriptions, units, labels):
`datasette kb.sqlite --metadata kb.metadata.json`. Computed values are included and flagged in
the JSON.

kb replaces a file only when it carries kb's mark, which only kb writes: the SQLite database its
application id, each JSON file a leading "generator" key. A file that merely begins like an export (every
SQLite database begins `SQLite format 3`) is the user's and is refused, as is one file named for two
outputs, before anything is written. Each output is written to a temporary beside it whose name carries
kb's mark, then renamed into place under the directory's lock; the SQLite temporary keeps no rollback
journal (it is thrown away whole if anything fails), so a killed export leaves only kb-marked
temporaries, which the next export into that directory removes.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import stat
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import yaml

from kbtools.atomic import write_synced
from kbtools.check.compute import scenario_text
from kbtools.corpus import Corpus, Settings
from kbtools.outputs.publish import check_output, replaced_whole
from kbtools.outputs.report import counted
from kbtools.outputs.targets import OutputError, build_lock, carries_json_mark, inside, protected_paths
from kbtools.version import __version__

# SQLite keeps a 32-bit application id at offset 68 of a database's header for the program whose file it
# is; by the convention of SQLite's registry of them (magic.txt, which file(1) reads) it is four ASCII
# letters. b"kbex" (0x6B626578) is not taken there, so it tells a database kb wrote from every
# other SQLite file, all of which begin with the same 16 bytes.
KB_APPLICATION_ID = int.from_bytes(b"kbex", "big")
_SQLITE_HEADER = b"SQLite format 3\x00"
# the first key of every JSON file kb export writes (targets.carries_json_mark); a user's JSON has no reason to
# begin with it
GENERATOR = f"kb export {__version__}"
_HEAD = 256  # bytes enough to hold any mark, however large the file
# a GraphML file kb wrote: the XML declaration, then a comment naming kb export (kbtools.interop.graph)
_GRAPHML_MARK = re.compile(rb"\A<\?xml [^>]*\?>\n<!-- kb export ")


def _canonical(corpus: Corpus, type_name: str, field: str) -> str | None:
    return corpus.registry.types[type_name].canonical_unit(field)


def _spread(value, units) -> dict[str, Any] | None:
    """The low and high figure over the competing values a value rests on, in the value's own unit."""
    spread = value.spread
    if spread is None:
        return None
    return {
        "low": float(spread[0].to(units).magnitude),
        "high": float(spread[1].to(units).magnitude),
        "over": [scenario_text(scenario) for scenario, _ in value.variants],
        "cases": [{"when": scenario_text(s), "value": float(q.to(units).magnitude)} for s, q in value.variants],
    }


def record_values(corpus: Corpus, key: str) -> dict[str, dict[str, Any]]:
    out = {}
    values = corpus.values(key)
    for group, named in (("fields", values.fields), ("costs", values.costs)):
        for name, value in named.items():
            if value.quantity is None:
                rows = {}
                for k, v in value.rows:
                    rows[k] = {"value": float(v.quantity.magnitude), "unit": _unit(f"{v.quantity.units:~P}")}
                    if v.spread is not None:
                        rows[k]["range"] = _spread(v, v.quantity.units)
                out[name] = {"rows": rows, "computed": True, "formula": value.formula.text if value.formula else None}
                continue
            unit = _canonical(corpus, corpus.records[key].type or "", name) if group == "fields" else value.unit
            quantity = value.quantity.to(unit) if unit else value.quantity
            out[name] = {
                "value": float(quantity.magnitude),
                "unit": _unit(unit or f"{quantity.units:~P}"),
                "basis": value.basis,
                "computed": value.computed,
                "sources": list(value.sources),
                "formula": value.formula.text if value.formula else None,
            }
            if value.spread is not None:
                out[name]["range"] = _spread(value, quantity.units)
    return out


def _ranges(views: dict[str, dict[str, dict[str, Any]]]) -> list[tuple]:
    """One row per figure that competing values make a range: (key, value, row, low, high, unit, over)."""
    found = []
    for key, values in sorted(views.items()):
        for name, view in values.items():
            for row, item in view["rows"].items() if "rows" in view else [(None, view)]:
                if item.get("range"):
                    r = item["range"]
                    found.append(
                        (key, name, row, r["low"], r["high"], item["unit"], json.dumps(r["over"], ensure_ascii=False))
                    )
    return found


def _unit(text: str) -> str:
    """A unit as the export spells it: a plain number is '1' (pint prints it as an empty string)."""
    return text or "1"


def _costs(corpus: Corpus, views: dict[str, dict[str, dict[str, Any]]]) -> list[tuple]:
    """(key, cost, label, row, low, value, high, unit, basis, formula): row is None for a single figure, the
    for_each entry (a record's key) for a row of a table; label is the cost's own words, when it has them."""
    found = []
    for key in sorted(corpus.records):
        costs = corpus.values(key).costs
        specs = corpus.records[key].costs
        for name, view in views[key].items():
            if name not in costs:
                continue
            spec = specs.get(name)
            label = spec.get("label") if isinstance(spec, dict) and isinstance(spec.get("label"), str) else None
            if "rows" in view:
                for row, item in view["rows"].items():
                    found.append((key, name, label, row, *_ends(item), item["unit"], "derived", view["formula"]))
            else:
                found.append((key, name, label, None, *_ends(view), view["unit"], view["basis"], view["formula"]))
    return found


def _ends(item: dict[str, Any]) -> tuple[float, float, float]:
    """(low, value, high): the value's own figure at both ends when nothing it rests on varies."""
    spread = item.get("range") or {"low": item["value"], "high": item["value"]}
    return spread["low"], item["value"], spread["high"]


def _sqlite_type(values: list[Any]) -> str:
    """The column's SQLite type from the values it holds: INTEGER, REAL, or TEXT (lists and mappings are JSON)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, (bool, int)) for v in present):
        return "INTEGER"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "REAL"
    return "TEXT"


def datasette_metadata(corpus: Corpus, database: str) -> dict[str, Any]:
    """Datasette's metadata for the export: each type's table titled and described from its schema, each
    column described (with its unit), the records labelled by their names.

    Units are said in the column descriptions, not in Datasette's `units` key: Datasette reads those with
    pint's default registry, which takes kb's GT/s for gigatesla per second and a pin count for pico-inches."""
    tables: dict[str, Any] = {}
    for type_name, record_type in sorted(corpus.registry.types.items()):
        schema_properties = record_type.schema.get("properties", {})
        columns: dict[str, str] = {"key": "The record: its directory and id (dir/id)"}
        for field in record_type.property_order:
            if field == "type":
                continue
            described = schema_properties.get(field, {}).get("description", "")
            unit = _canonical(corpus, type_name, field)
            if unit:
                columns[field] = f"{described} In {unit}.".strip() if described else f"In {unit}."
                columns[f"{field}_unit"] = f"The unit of {field}"
            elif described:
                columns[field] = described
        table: dict[str, Any] = {
            "title": record_type.title,
            "description": record_type.schema.get("description", ""),
            "columns": columns,
            "label_column": "name",
            "sort": "key",
        }
        tables[type_name] = table
    tables["costs"] = {
        "description": "Every cost a record computes: one figure, or one row per entry of a for_each table",
        "label_column": "label",
        "columns": {
            "label": "What the cost is, in its record's words",
            "row": "The for_each entry (a record) the row is for; empty for a single figure",
            "low": "The lowest figure over every combination of the conditions the cost rests on (the value when none vary)",
            "value": "The figure at the preferred value of every condition",
            "high": "The highest figure over every combination of the conditions the cost rests on",
        },
    }
    tables["links"] = {"description": "Every reference and wikilink: which record names which, in which field"}
    tables["ranges"] = {
        "description": "Figures that the conditions they rest on (competing values, bands, choices of record) make a "
        "range, with its ends and the combinations it is taken over"
    }
    tables["diagnostics"] = {"description": "What kb check reported when this export was made"}
    return {
        "generator": GENERATOR,
        "source": "kb export",
        "title": corpus.settings.title,
        "databases": {database: {"tables": tables}},
    }


def write_metadata(corpus: Corpus, path: Path, database: str) -> None:
    text = json.dumps(datasette_metadata(corpus, database), indent=1, ensure_ascii=False)
    _replace("metadata", path, lambda tmp: write_synced(tmp, text + "\n"))


def metadata_path(sqlite: Path) -> Path:
    """Where the Datasette metadata of an export goes: kb.sqlite -> kb.metadata.json, beside it."""
    return sqlite.with_name(f"{sqlite.stem}.metadata.json")


def to_json(corpus: Corpus) -> dict[str, Any]:
    return {
        "generator": GENERATOR,
        "records": [
            {
                "key": key,
                "type": r.type,
                "path": r.path,
                "data": dict(r.data),
                "values": record_values(corpus, key),
                "body": r.body,
            }
            for key, r in sorted(corpus.records.items())
        ],
        "links": [{"source": s, "target": t, "field": f, "line": line} for s, t, f, line in corpus.edges or ()],
        "diagnostics": [d.as_json() for d in corpus.diagnostics],
    }


def write_json(corpus: Corpus, path: Path) -> None:
    _replace(
        "json",
        path,
        # synced before the rename, as every rewrite of kb's is: a crash leaves the old export or the new one
        lambda tmp: write_synced(tmp, json.dumps(to_json(corpus), indent=1, ensure_ascii=False, default=str)),
    )


def write_graphml(graph: Any, path: Path) -> None:
    """The link graph (kbtools.interop.graph.to_networkx) as GraphML, kb's mark in a comment at its head."""
    from kbtools.interop.graph import graphml_text

    text = graphml_text(graph, GENERATOR)
    _replace("graphml", path, lambda tmp: write_synced(tmp, text))


def _column(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def write_sqlite(corpus: Corpus, path: Path) -> None:
    views = {key: record_values(corpus, key) for key in corpus.records}  # once: the tables, costs and ranges

    def write(tmp: Path) -> None:
        db = sqlite3.connect(tmp)
        try:
            # no rollback journal to leave behind: a temporary that fails part way is discarded whole
            db.execute("PRAGMA journal_mode=OFF")
            db.execute(f"PRAGMA application_id={KB_APPLICATION_ID}")  # first, so even a killed run's is marked
            for type_name, record_type in sorted(corpus.registry.types.items()):
                # every field of the type, the envelope's first; the type is the table
                fields = [f for f in record_type.property_order if f != "type"]
                quantity_fields = [
                    f for f in fields if record_type.plan.properties.get(f) and record_type.plan.properties[f].quantity
                ]
                mine = [(key, r) for key, r in sorted(corpus.records.items()) if r.type == type_name]
                columns = {"key": "TEXT PRIMARY KEY"}
                for field in fields:
                    if field in quantity_fields:
                        columns[field], columns[f"{field}_unit"] = "REAL", "TEXT"
                    else:
                        columns[field] = _sqlite_type([r.data.get(field) for _, r in mine])
                db.execute(
                    f"CREATE TABLE {_column(type_name)} ({', '.join(f'{_column(c)} {t}' for c, t in columns.items())})"
                )
                for key, record in mine:
                    values = views[key]
                    row: dict[str, Any] = {"key": key}
                    for field in fields:
                        if field in quantity_fields and field in values and "value" in values[field]:
                            row[field], row[f"{field}_unit"] = values[field]["value"], values[field]["unit"]
                        else:
                            raw = record.data.get(field)
                            row[field] = (
                                json.dumps(raw, ensure_ascii=False, default=str)
                                if isinstance(raw, (list, dict))
                                else int(raw)
                                if isinstance(raw, bool)
                                else raw
                            )
                    db.execute(
                        f"INSERT INTO {_column(type_name)} ({', '.join(map(_column, row))}) VALUES ({', '.join('?' * len(row))})",
                        [v if isinstance(v, (int, float, str)) or v is None else str(v) for v in row.values()],
                    )
            # every cost of every record: a single figure, or one row per entry of its for_each table
            db.execute(
                "CREATE TABLE costs (key TEXT, cost TEXT, label TEXT, row TEXT, low REAL, value REAL, high REAL, "
                "unit TEXT, basis TEXT, formula TEXT)"
            )
            db.executemany("INSERT INTO costs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", _costs(corpus, views))
            db.execute("CREATE TABLE links (source TEXT, target TEXT, field TEXT, line INTEGER)")
            db.executemany("INSERT INTO links VALUES (?, ?, ?, ?)", list(corpus.edges or ()))
            # a figure resting on competing values is a range; the per-type tables hold the preferred figure
            db.execute(
                "CREATE TABLE ranges (key TEXT, value TEXT, row TEXT, low REAL, high REAL, unit TEXT, over TEXT)"
            )
            db.executemany("INSERT INTO ranges VALUES (?, ?, ?, ?, ?, ?, ?)", _ranges(views))
            db.execute(
                "CREATE TABLE diagnostics (code TEXT, severity TEXT, path TEXT, line INTEGER, column INTEGER, message TEXT)"
            )
            db.executemany(
                "INSERT INTO diagnostics VALUES (?, ?, ?, ?, ?, ?)",
                [(d.code, d.severity.value, d.path, d.line, d.column, d.message) for d in corpus.diagnostics],
            )
            db.commit()
        finally:
            db.close()

    _replace("sqlite", path, write)


def _head(path: Path) -> bytes | None:
    """The first bytes of `path` when it is a regular file (read through no link, never blocking on a
    FIFO); None when it is anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return os.read(fd, _HEAD) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)


def _carries_mark(head: bytes, kind: str) -> bool:
    if kind == "sqlite":
        return head.startswith(_SQLITE_HEADER) and head[68:72] == KB_APPLICATION_ID.to_bytes(4, "big")
    if kind == "graphml":
        return _GRAPHML_MARK.match(head) is not None
    return carries_json_mark(head, "generator", "kb export ")


def _refuse_unless_kbs(kind: str, path: Path) -> None:
    """OutputError unless `path` is absent or an earlier export of this kind, by kb's mark on it."""
    if path.is_symlink():
        raise OutputError(f"{path} is a symlink; kb does not write through links: name the real file")
    if not path.exists():
        return
    head = _head(path)
    if head is None:
        raise OutputError(f"{path} exists and is not a file")
    if not _carries_mark(head, kind):
        raise OutputError(
            f"{path} exists and is not an earlier kb {kind} export; kb replaces only files bearing its mark, "
            "which an export by an older kb lacks: delete it by hand or choose another path"
        )


def _check_target(settings: Settings, kind: str, path: Path) -> None:
    resolved = path.resolve()
    for protected, what, may_hold_site in protected_paths(settings):
        if not may_hold_site and resolved.is_relative_to(protected):
            raise OutputError(f"{path} lies inside {what} ({protected}); write the export elsewhere")
    _check_parent(path)
    _refuse_unless_kbs(kind, path)


def _check_parent(path: Path) -> None:
    """OutputError unless the directory `path` goes into exists: kb export makes no directory it was not
    named (a mistyped path would otherwise become a tree of new directories)."""
    parent = path.parent
    if not parent.is_dir():
        why = "is not a directory" if os.path.lexists(parent) else "does not exist"
        raise OutputError(
            f"cannot write {path}: {parent} {why}; kb export makes no directories: create it, or choose another path"
        )


def _same_file(a: Path, b: Path) -> bool:
    """Whether two names reach one file: `./x` and `x`, or through a symlinked directory or a hard link."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False


def _temporary_prefix(path: Path) -> str:
    return f".{path.name}.kb-export-"


def _debris(path: Path) -> re.Pattern[str]:
    return re.compile(re.escape(_temporary_prefix(path)) + r"[0-9a-f]{8}")


def _remove_debris(path: Path) -> None:
    """The temporaries a killed export of `path` left: named by kb, and empty or bearing kb's mark, so a
    user's file that only looks like one is kept. Called under the directory's lock, so none is a live
    export's."""
    named = _debris(path)
    for entry in os.scandir(path.parent):
        if named.fullmatch(entry.name):
            head = _head(Path(entry.path))
            if head is not None and (
                head == b"" or any(_carries_mark(head, kind) for kind in ("sqlite", "json", "graphml"))
            ):
                os.unlink(entry.path)


def _replace(kind: str, path: Path, write: Callable[[Path], object]) -> None:
    """`write` a kb-marked temporary beside `path`, then rename it into place: a reader, or a kill, sees
    the old file or the new one. The target is checked again just before the rename, so a file the user
    put there meanwhile is kept."""
    try:
        with build_lock(path):
            _remove_debris(path)
            tmp = path.with_name(_temporary_prefix(path) + secrets.token_hex(4))
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # a new file's mode, by the umask
            try:
                write(tmp)
                _refuse_unless_kbs(kind, path)
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def export(
    settings: Settings,
    sqlite: Path | None,
    json_path: Path | None,
    checked: Callable[[], AbstractContextManager[Corpus]],
    frontmatter: Path | None = None,
    graphml: Path | None = None,
) -> str:
    """`kb export`: the corpus `checked` gives (a context: its run's store is let go after), as SQLite at `sqlite` (its Datasette metadata beside it),
    JSON at `json_path`, the link graph as GraphML at `graphml` (kbtools.interop.graph: networkx, the `graph`
    extra) and/or one YAML file per record under the directory `frontmatter`; what to tell the user. Every target is checked before the corpus is, so a refusal (OutputError) leaves everything as it
    was: one file named for two outputs, a path inside the repository's records or schemas, a link, an
    existing file without kb's mark, a directory holding files kb did not write, or one in a directory that
    does not exist."""
    metadata = metadata_path(sqlite) if sqlite else None
    targets = [
        (kind, path, named)
        for kind, path, named in (
            ("sqlite", sqlite, f"--sqlite {sqlite}"),
            ("metadata", metadata, f"the Datasette metadata of --sqlite, {metadata}"),
            ("json", json_path, f"--json {json_path}"),
            ("graphml", graphml, f"--graphml {graphml}"),
        )
        if path
    ]
    for i, (_, path, named) in enumerate(targets):
        for _, other, other_named in targets[i + 1 :]:
            if _same_file(path, other):
                raise OutputError(f"{named} and {other_named} name the same file; give each its own")
    for kind, path, _ in targets:
        _check_target(settings, kind, path)
    if frontmatter is not None:
        check_output(frontmatter, settings, "--frontmatter")
        _check_parent(frontmatter)
        for _, path, named in targets:
            if inside(path.resolve(), frontmatter.resolve()):
                raise OutputError(f"{named} lies inside --frontmatter {frontmatter}, which kb replaces whole")
    if graphml is not None:
        from kbtools.interop.graph import require_networkx

        try:
            require_networkx()  # before the check: a missing networkx is said at once and costs nothing
        except ImportError as exc:
            raise OutputError(f"--graphml {graphml}: {exc}") from None
    with checked() as corpus:  # the run's store is let go once the files are written
        said = _write(corpus, sqlite, metadata, json_path, graphml, frontmatter)
    return "\n".join(said)


def _write(
    corpus: Corpus,
    sqlite: Path | None,
    metadata: Path | None,
    json_path: Path | None,
    graphml: Path | None,
    frontmatter: Path | None,
) -> list[str]:
    """Each export asked, written from the checked corpus: what was written, a line each."""
    said = []
    if sqlite and metadata:
        write_sqlite(corpus, sqlite)
        write_metadata(corpus, metadata, sqlite.stem)
        said.append(f"wrote {sqlite} and {metadata} (datasette {sqlite} --metadata {metadata})")
    if json_path:
        write_json(corpus, json_path)
        said.append(f"wrote {json_path}")
    if graphml is not None:
        from kbtools.interop.graph import to_networkx

        graph = to_networkx(corpus)
        write_graphml(graph, graphml)
        said.append(
            f"wrote {graphml}: {counted(graph.number_of_nodes(), 'record')}, {counted(graph.number_of_edges(), 'link')}"
        )
    if frontmatter is not None:
        count = write_frontmatter(corpus, frontmatter)
        said.append(
            f"wrote the frontmatter of {counted(count, 'record')} into {frontmatter}, one YAML file each "
            f"(check-jsonschema --schemafile schema/TYPE.schema.json {frontmatter}/DIR/*.yaml)"
        )
    return said


FRONTMATTER_WRITER = "kb export --frontmatter"


def write_frontmatter(corpus: Corpus, out: Path) -> int:
    """Each record's frontmatter as kb checked it (its type's costs merged in, dates as ISO text) in
    out/<dir>/<id>.yaml, for a validator that reads YAML or JSON files and not a record's Markdown: the
    directory is staged beside `out` and swapped in whole, as kb build's site is, so a reader or a kill sees
    the previous export or this one. Returns how many records were written."""
    resolved = out.resolve()
    with build_lock(resolved), replaced_whole(out, corpus.settings, "--frontmatter", FRONTMATTER_WRITER) as staging:
        for record in corpus.records.values():
            target = staging / record.dir / f"{record.stem}.yaml"
            target.parent.mkdir(exist_ok=True)
            head = f"# {record.path}: its frontmatter as kb checked it ({FRONTMATTER_WRITER} {__version__})\n"
            text = yaml.safe_dump(dict(record.data), sort_keys=False, allow_unicode=True, width=1_000_000)
            target.write_text(head + text, encoding="utf-8")
    return len(corpus.records)
