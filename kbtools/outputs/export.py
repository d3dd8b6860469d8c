"""`kb export`: the checked corpus as SQLite (a table per type) or JSON, for Datasette and friends.

Quantities are stored in their field's canonical unit with a `<field>_unit` column beside
them; columns are typed (REAL, INTEGER, TEXT); every cost, for_each rows included, is a row of
`costs`. Beside the SQLite file goes Datasette's metadata (titles, descriptions, units, labels):
`datasette kb.sqlite --metadata kb.metadata.json`. Computed values are included and flagged in
the JSON. Files are written atomically.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from kbtools.atomic import staged
from kbtools.corpus import Corpus


def _canonical(corpus: Corpus, type_name: str, field: str) -> str | None:
    record_type = corpus.registry.types[type_name]
    plan = record_type.plan.properties.get(field)
    return plan.quantity if plan is not None and plan.quantity not in (None, "*") else None


def _spread(value, units) -> dict[str, Any] | None:
    """The low and high figure over the competing values a value rests on, in the value's own unit."""
    spread = value.spread
    if spread is None:
        return None
    return {
        "low": float(spread[0].to(units).magnitude),
        "high": float(spread[1].to(units).magnitude),
        "over": [label for label, _ in value.variants],
    }


def record_values(corpus: Corpus, key: str) -> dict[str, dict[str, Any]]:
    out = {}
    values = corpus.values(key)
    for group, named in (("fields", values.fields), ("costs", values.costs)):
        for name, value in named.items():
            if value.quantity is None:
                rows = {}
                for k, v in value.rows:
                    rows[k] = {"value": float(v.quantity.magnitude), "unit": f"{v.quantity.units:~P}"}
                    if v.variants:
                        rows[k]["range"] = _spread(v, v.quantity.units)
                out[name] = {"rows": rows, "computed": True, "formula": value.formula.text if value.formula else None}
                continue
            unit = _canonical(corpus, corpus.records[key].type or "", name) if group == "fields" else value.unit
            quantity = value.quantity.to(unit) if unit else value.quantity
            out[name] = {
                "value": float(quantity.magnitude),
                "unit": unit or f"{quantity.units:~P}",
                "basis": value.basis,
                "computed": value.computed,
                "sources": list(value.sources),
                "formula": value.formula.text if value.formula else None,
            }
            if value.variants:
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


def _costs(corpus: Corpus, views: dict[str, dict[str, dict[str, Any]]]) -> list[tuple]:
    """(key, cost, row, value, unit, basis, formula): row is None for a single figure, the for_each entry
    (a record's key) for a row of a table."""
    found = []
    for key in sorted(corpus.records):
        costs = corpus.values(key).costs
        for name, view in views[key].items():
            if name not in costs:
                continue
            if "rows" in view:
                for row, item in view["rows"].items():
                    found.append((key, name, row, item["value"], item["unit"], "derived", view["formula"]))
            else:
                found.append((key, name, None, view["value"], view["unit"], view["basis"], view["formula"]))
    return found


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
        "columns": {"row": "The for_each entry (a record) the row is for; empty for a single figure"},
    }
    tables["links"] = {"description": "Every reference and wikilink: which record names which, in which field"}
    tables["ranges"] = {"description": "Figures that competing sourced values make a range, with its ends"}
    tables["diagnostics"] = {"description": "What kb check reported when this export was made"}
    return {
        "source": "kb export",
        "title": corpus.settings.title,
        "databases": {database: {"tables": tables}},
    }


def write_metadata(corpus: Corpus, path: Path, database: str) -> None:
    text = json.dumps(datasette_metadata(corpus, database), indent=1, ensure_ascii=False)
    _atomic(path, lambda tmp: tmp.write_text(text + "\n", encoding="utf-8"))


def metadata_path(sqlite: Path) -> Path:
    """Where the Datasette metadata of an export goes: kb.sqlite -> kb.metadata.json, beside it."""
    return sqlite.with_name(f"{sqlite.stem}.metadata.json")


def to_json(corpus: Corpus) -> dict[str, Any]:
    return {
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
        "diagnostics": [d.model_dump(mode="json") for d in corpus.diagnostics],
    }


def _atomic(path: Path, write) -> None:
    with staged(path) as tmp:
        write(tmp)


def write_json(corpus: Corpus, path: Path) -> None:
    _atomic(
        path,
        lambda tmp: tmp.write_text(
            json.dumps(to_json(corpus), indent=1, ensure_ascii=False, default=str), encoding="utf-8"
        ),
    )


def _column(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def write_sqlite(corpus: Corpus, path: Path) -> None:
    views = {key: record_values(corpus, key) for key in corpus.records}  # once: the tables, costs and ranges

    def write(tmp: Path) -> None:
        tmp.unlink(missing_ok=True)
        db = sqlite3.connect(tmp)
        try:
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
                "CREATE TABLE costs (key TEXT, cost TEXT, row TEXT, value REAL, unit TEXT, basis TEXT, formula TEXT)"
            )
            db.executemany("INSERT INTO costs VALUES (?, ?, ?, ?, ?, ?, ?)", _costs(corpus, views))
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

    _atomic(path, write)
