"""`kb build`: the checked corpus -> a static site of plain files with relative links.

It reads the Corpus `kb check` produced (records, link graph, computed values) and
never re-parses a file. Templates and static assets are kb's packaged theme, overridden file by
file by the knowledge base's site/templates/ and site/static/ (site/theme.py); pages go to
site/_build/ (or --out).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from markupsafe import Markup

from kbtools import __version__
from kbtools.check.compute import Value, substituted
from kbtools.check.compute.incremental import fingerprint
from kbtools.check.links import Index, backlinks, iter_references
from kbtools.corpus import Corpus, Record, RecordValues
from kbtools.diagnostics import Diagnostic, Severity
from kbtools.ids import is_id
from kbtools.lang.units import format_quantity, unit_registry
from kbtools.outputs.targets import build_lock
from kbtools.progress import track
from kbtools.registry import DIR_PATTERN, RecordType
from kbtools.site.calculator import CalculatorExporter
from kbtools.site.charts import Bar, Roof, bar_chart, neighbourhood, roofline
from kbtools.site.publish import assert_inside, check_output, new_staging, remove_debris, swap_in
from kbtools.site.render import BodyRenderer, safe_url, value_anchor
from kbtools.site.theme import Theme, ThemeError

MANIFEST = ".kb-pages.json"  # page -> fingerprint of what it shows, for the next incremental build
SECTIONS = ("inputs", "costs", "hardware_parameters", "claims")  # shown in their own sections


def page_path(key: str | None) -> str:
    """Where a page lives in the site: records at dir/id.html, indexes at dir/index.html."""
    return "index.html" if key is None else f"{key}.html"


def relative(from_page: str, to_page: str) -> str:
    """A relative URL between two pages of the site (pages sit at most one directory deep)."""
    source_dir, _, _ = from_page.rpartition("/")
    target_dir, _, target_name = to_page.rpartition("/")
    if source_dir == target_dir:
        return target_name
    if "/" in source_dir or "/" in target_dir:  # deeper than the site's layout: the general case
        return posixpath.relpath(to_page, source_dir or ".")
    return ("../" if source_dir else "") + to_page


class SiteBuilder:
    def __init__(self, corpus: Corpus, out: Path, previous: Path | None = None):
        self.corpus, self.out, self.previous = corpus, out, previous
        self.previous_manifest: dict[str, str] = {}
        if previous is not None and (previous / MANIFEST).is_file():
            try:
                self.previous_manifest = json.loads((previous / MANIFEST).read_text())
            except (OSError, ValueError):
                self.previous_manifest = {}
        self.value_prints: dict[str, str] = {}
        self.neighbours: dict[str, set[str]] = defaultdict(set)
        self.neighbours_out: dict[str, set[str]] = defaultdict(set)
        for source, target, _, _ in corpus.edges or ():
            self.neighbours[source].add(target)
            self.neighbours[target].add(source)
            self.neighbours_out[source].add(target)
        self.registry = corpus.registry
        self.index = Index(corpus)
        self.theme = Theme(corpus.settings)
        self.env = self.theme.environment()
        self.env.filters["json_script"] = json_script
        self.env.filters["plural"] = plural
        self.errors_by_path: dict[str, list[Diagnostic]] = defaultdict(list)
        for d in corpus.diagnostics:
            self.errors_by_path[d.path].append(d)
        # a record whose file name is no valid id (KB108, shown only under --force) gets no page and is
        # never a link target: its name would otherwise reach paths and hrefs
        self.pages = {
            key for key, record in corpus.records.items() if is_id(record.stem) and DIR_PATTERN.match(record.dir)
        }
        self.renderer = BodyRenderer(
            corpus, lambda src, dst: relative(page_path(src), page_path(dst)) if dst in self.pages else ""
        )
        self.types_in_order = sorted(self.registry.types.values(), key=lambda t: t.title)
        self.type_views = [type_view(t) for t in self.types_in_order]
        self.calculator = CalculatorExporter(corpus)  # each record's values in base units, exported once
        self.global_key = (
            f"{corpus.cache.key if corpus.cache else ''}:{self.theme.fingerprint()}:{self.index.fingerprint()}"
        )

    # ------------------------------------------------------------ output
    def write(self, rel: str, text: str) -> None:
        # pages go into a staging directory that replaces the site whole (build_site), so a plain write will do
        path = self.out / rel
        assert_inside(path, self.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def render(self, template: str, page: str, **context: Any) -> None:
        root = relative(page, "index.html").removesuffix("index.html") or "./"
        context.setdefault("title", "")
        try:
            html = self.env.get_template(template).render(
                root=root,
                page=page,
                types=self.type_views,
                version=__version__,
                site_title=self.corpus.settings.title,
                **context,
            )
        except ThemeError:
            raise
        except Exception as exc:  # the theme is input: its failure is named, never an internal error
            raise self.theme.error(exc, template) from None
        self.write(page, html)

    def build(self) -> int:
        self.out.mkdir(parents=True, exist_ok=True)
        self.theme.copy_static(self.out)
        self.home()
        for record_type in self.types_in_order:
            self.type_index(record_type)
        manifest: dict[str, str] = {}
        for key in track([k for k in self.corpus.records if k in self.pages], "Writing pages"):
            page = page_path(key)
            fingerprint = self.fingerprint(key)
            if fingerprint is not None:
                manifest[page] = fingerprint
                if self.reuse(page, fingerprint):
                    continue
            self.record_page(key)
        self.graph_page()
        self.write("static/graph-data.json", json.dumps(self.graph_data(), separators=(",", ":")))
        self.write(MANIFEST, json.dumps(manifest, separators=(",", ":")))
        return len(self.corpus.records)

    # ------------------------------------------------------------ incremental builds
    def fingerprint(self, key: str) -> str | None:
        """What a record page shows rests on: the record itself; of its neighbours in the link graph and of
        the sources its values cite, what a link shows (name, id, type, status, URL, the fields that link
        them); of every record its values read (transitively), the fingerprints of those values; the
        records its calculator exports, whole; plus the theme, kb itself and the set of ids. None: render
        it every time. So an edit to a neighbour's prose or to a figure this page does not show re-renders
        nothing here."""
        record = self.corpus.records[key]
        cache = self.corpus.cache
        if cache is None or self.registry.has_role(record.type, "parameter"):
            return None  # parameter pages chart every record of a type: always rendered
        read = cache.records_read(key)
        shown = {key} | self.neighbours.get(key, set()) | {n for dep in read for n in self.neighbours_out.get(dep, ())}
        h = hashlib.blake2b(digest_size=16)
        h.update(self.global_key.encode())
        h.update(f"{key}={record.digest};".encode())
        for other in sorted(shown | set(read)):
            h.update(f"{other}:{self.shown_of(key, other)};".encode())
        for other, seen in sorted(read.items()):
            h.update(f"{other}<{sorted(seen.items())};".encode())
        for other in sorted(self.calculator_inputs(key)):  # the calculator exports their values
            h.update(f"{other}:{self.shown_of(key, other)}={self.values_of(other)};".encode())
        for d in self.errors_by_path.get(record.path, []):
            h.update(d.model_dump_json().encode())
        return h.hexdigest()

    def values_of(self, key: str) -> str:
        """Every value a record has, fingerprinted (what a calculator exports of it)."""
        if key not in self.value_prints:
            values = self.corpus.computed.get(key)
            if values is None:
                self.value_prints[key] = "-"
            else:
                named = sorted({**values.fields, **{f"costs.{n}": v for n, v in values.costs.items()}}.items())
                self.value_prints[key] = repr([(name, fingerprint(v)) for name, v in named])
        return self.value_prints[key]

    def shown_of(self, page_key: str, key: str) -> str:
        """What a page shows of another record: what its link shows, and the fields linking the two."""
        record = self.corpus.records.get(key)
        if record is None:
            return "-"
        data = record.data
        shown = [data.get("name"), record.id, record.type, data.get("status"), data.get("url")]
        graph = self.corpus.graph
        if graph is not None:
            for a, b in ((page_key, key), (key, page_key)):
                if graph.has_edge(a, b):
                    shown.append(sorted(str(e.get("field")) for e in graph.get_edge_data(a, b).values()))
        return repr(shown)

    def calculator_inputs(self, key: str) -> set[str]:
        model = self.calculator.model(key) if isinstance(self.corpus.records[key].data.get("costs"), dict) else None
        return set(model["records"]) if model else set()

    def reuse(self, page: str, fingerprint: str) -> bool:
        old = self.previous / page if self.previous else None
        if old is None or self.previous_manifest.get(page) != fingerprint or not old.is_file():
            return False
        target = self.out / page
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(old, target)  # the old site is deleted after the swap; the inode lives on here
        except OSError:
            shutil.copy2(old, target)
        return True

    # ------------------------------------------------------------ helpers for templates
    def link(self, page: str, key: str) -> dict[str, str]:
        record = self.corpus.records[key]
        name = record.data.get("name")
        return {
            "href": relative(page, page_path(key)) if key in self.pages else "",
            "label": name if isinstance(name, str) else record.id,
            "key": key,
            "type": record.type or "",
            "status": str(record.data.get("status", "")),
        }

    def value_view(self, page: str, value: Value | None, unit: str | None = None) -> dict[str, Any] | None:
        if value is None:
            return None
        sources = [self.source_link(page, s) for s in value.sources]
        view: dict[str, Any] = {
            "text": value.shown(unit),
            "basis": value.basis,
            "vendor_claim": value.vendor_claim,
            "note": value.note,
            "computed": value.computed,
            "sources": [s for s in sources if s],
            "anchor": value_anchor(value.name),
            "confidence": value.confidence,
        }
        if value.computed and value.rows is None:
            view["why"] = self.why(page, value)
        if value.alternatives:
            view["alternatives"] = [
                {
                    "text": a.shown(unit),
                    "rank": a.rank,
                    "basis": a.basis,
                    "note": a.note,
                    "sources": [s for s in (self.source_link(page, s) for s in a.sources) if s],
                }
                for a in value.alternatives
            ]
        if value.computed and value.variants:
            view["range"] = {
                "text": value.spread_shown(unit),
                "over": [f"{label}: {format_quantity(q, unit or value.unit, 4)}" for label, q in value.variants],
            }
        if value.recomputed is not None:
            view["recomputed"] = {"text": value.recomputed.shown(unit), "why": self.why(page, value.recomputed)}
        if value.rows is not None:
            view["rows"] = [
                {"key": row_key, "link": self.link(page, row_key), "value": self.value_view(page, row, value.unit)}
                for row_key, row in value.rows
            ]
            view["formula"] = value.formula.text if value.formula else ""
        return view

    def why(self, page: str, value: Value) -> dict[str, Any]:
        inputs = []
        for name, used in value.inputs:
            record = self.corpus.records.get(used.record)
            inputs.append(
                {
                    "name": name,
                    "text": used.shown(),
                    "basis": used.basis if not used.computed else "derived",
                    "link": self.link(page, used.record) if record else None,
                    "anchor": value_anchor(used.name),
                    "sources": [s for s in (self.source_link(page, s) for s in used.sources) if s],
                }
            )
        return {
            "formula": value.formula.text if value.formula else "",
            "substituted": substituted(value),
            "result": value.shown(),
            "input_basis": value.input_basis,
            "confidence": value.confidence,
            "inputs": inputs,
        }

    def parameter_link(self, page: str, parameter_id: str) -> dict[str, Any]:
        parameter, _ = self.index.resolve(parameter_id)
        return self.link(page, parameter.key) if parameter is not None else {"label": parameter_id, "href": None}

    def source_link(self, page: str, source_id: str) -> dict[str, Any] | None:
        record, _ = self.index.resolve(source_id)
        if record is None:
            return None
        view: dict[str, Any] = dict(self.link(page, record.key))
        url = record.data.get("url")
        view["url"] = url if isinstance(url, str) and safe_url(url) else None
        return view

    def diagnostics_for(self, record: Record) -> list[dict[str, Any]]:
        return [
            {"line": d.line, "code": d.code, "message": d.message, "severity": d.severity.value}
            for d in self.errors_by_path.get(record.path, [])
        ]

    # ------------------------------------------------------------ pages
    def home(self) -> None:
        counts = Counter(r.type for r in self.corpus.records.values())
        statuses = Counter(str(r.data.get("status")) for r in self.corpus.records.values())
        by_type = [
            {
                "title": t.title,
                "dir": t.dir,
                "count": counts.get(t.name, 0),
                "href": f"{t.dir}/index.html",
                "description": t.schema.get("description", ""),
            }
            for t in self.types_in_order
        ]
        # The theme chooses what "Start here" lists (home.html): it asks for a record by id and a type's
        # index by type name, and leaves out what this repository does not have.
        self.render(
            "home.html",
            "index.html",
            title="",
            by_type=by_type,
            statuses=sorted(statuses.items()),
            total=len(self.corpus.records),
            record_link=self.home_record_link,
            type_index=self.home_type_index,
            errors=sum(d.severity is Severity.ERROR for d in self.corpus.diagnostics),
        )

    def home_record_link(self, record_id: str) -> dict[str, str] | None:
        target, _ = self.index.resolve(record_id)
        return self.link("index.html", target.key) if target is not None and target.key in self.pages else None

    def home_type_index(self, type_name: str) -> str | None:
        record_type = self.registry.types.get(type_name)
        return f"{record_type.dir}/index.html" if record_type is not None else None

    def type_index(self, record_type) -> None:
        page = f"{record_type.dir}/index.html"
        columns = record_type.columns
        rows = []
        for key, record in sorted(
            self.corpus.records.items(), key=lambda kv: str(kv[1].data.get("name", kv[0])).lower()
        ):
            if record.type != record_type.name:
                continue
            computed = self.corpus.values(key).fields
            cells = []
            for column in columns:
                value = computed.get(column)
                if value is not None:
                    canonical = record_type.plan.properties[column].quantity
                    unit = canonical if canonical not in (None, "*") else None
                    cells.append(
                        {
                            "text": value.shown(unit),
                            "sort": _sort_key(value, unit),
                            "basis": value.basis,
                            "computed": value.computed,
                        }
                    )
                else:
                    raw = record.data.get(column)
                    text = ", ".join(map(str, raw)) if isinstance(raw, list) else ("" if raw is None else str(raw))
                    cells.append({"text": text, "sort": text.lower(), "basis": None, "computed": False})
            rows.append({"link": self.link(page, key), "status": str(record.data.get("status", "")), "cells": cells})
        chart = self.roofline_comparison(page, record_type) if record_type.chart("roofline") else ""
        self.render(
            "type_index.html",
            page,
            title=record_type.title,
            record_type=type_view(record_type),
            columns=columns,
            rows=rows,
            chart=Markup(chart),
        )

    def record_page(self, key: str) -> None:
        record = self.corpus.records[key]
        record_type = self.registry.types.get(record.type)
        page = page_path(key)
        computed = self.corpus.values(key)
        fields = []
        if record_type is not None:
            refs = defaultdict(list)
            for ref in iter_references(record, record_type.plan, set(self.registry.dirs)):
                if len(ref.path) <= 2 and ref.path[0] not in SECTIONS:
                    target, _ = self.index.resolve(ref.value)
                    refs[ref.path[0]].append(
                        self.link(page, target.key) if target else {"href": None, "label": ref.value}
                    )
            for name in record_type.property_order:
                if name in self.registry.envelope_fields or name in SECTIONS:
                    continue
                value = computed.fields.get(name)
                schema = record_type.schema.get("properties", {}).get(name, {})
                if value is not None:
                    fields.append(
                        {
                            "name": name,
                            "description": schema.get("description", ""),
                            "value": self.value_view(page, value),
                        }
                    )
                elif name in refs:
                    fields.append({"name": name, "description": schema.get("description", ""), "links": refs[name]})
                elif name in record.data:
                    raw = record.data[name]
                    url = (
                        raw
                        if schema.get("format") == "uri"
                        and isinstance(raw, str)
                        and safe_url(raw)
                        and raw.startswith("http")
                        else None
                    )
                    fields.append(
                        {
                            "name": name,
                            "description": schema.get("description", ""),
                            "url": url,
                            "text": ", ".join(map(str, raw)) if isinstance(raw, list) else str(raw),
                        }
                    )
        costs = self.costs_view(page, record, computed)
        inputs = self.inputs_view(page, record)
        hardware = [
            {
                "parameter": self.parameter_link(page, pid),
                "rows": [{"link": self.link(page, k), "value": self.value_view(page, v)} for k, v in table.items()],
                "chart": Markup(
                    bar_chart(
                        [
                            Bar(
                                self.corpus.records[k].data.get("name", k),
                                float(v.quantity.magnitude),
                                pid,
                                relative(page, page_path(k)),
                            )
                            for k, v in table.items()
                            if v is not None
                        ],
                        f"{next((v.quantity.units for v in table.values() if v), ''):~P}",
                        pid,
                        log=False,
                    )
                    if any(table.values())
                    else ""
                ),
            }
            for pid, table in computed.hardware.items()
        ]
        rows = (
            record.data.get("hardware_parameters") if isinstance(record.data.get("hardware_parameters"), list) else []
        )
        claims = record.data.get("claims") if isinstance(record.data.get("claims"), list) else []
        sources = [
            s
            for s in (self.source_link(page, sid) for sid in record.data.get("sources") or [] if isinstance(sid, str))
            if s
        ]
        outgoing: defaultdict[str, list[dict[str, str]]] = defaultdict(list)
        if self.corpus.graph is not None and key in self.corpus.graph:
            for _, target, data in self.corpus.graph.out_edges(key, data=True):
                # each figure's own long-form source joins one group rather than one per field
                field = "sources (per figure)" if data["field"].endswith(".source") else data["field"]
                if target != key and self.link(page, target) not in outgoing[field]:
                    outgoing[field].append(self.link(page, target))
        incoming = {field: [self.link(page, k) for k in keys] for field, keys in backlinks(self.corpus, key).items()}
        neighbours = {
            **{link["key"]: (link, "out") for links in outgoing.values() for link in links},
            **{link["key"]: (link, "in") for links in incoming.values() for link in links},
        }
        graph_svg = neighbourhood(
            (str(record.data.get("name", key)), record.type or "", page),
            [(link["label"], link["type"], link["href"], d) for link, d in neighbours.values()],
        )
        self.render(
            "record.html",
            page,
            title=str(record.data.get("name", key)),
            record=record_view(record),
            key=key,
            type_title=record_type.title if record_type else record.type,
            type_dir=record.dir,
            status=str(record.data.get("status", "")),
            confidence=record.data.get("confidence"),
            updated=record.data.get("updated"),
            notes=record.data.get("notes"),
            unknown=record.unknown,
            fields=fields,
            costs=costs,
            inputs=inputs,
            hardware=hardware,
            hardware_rows=rows,
            claims=claims,
            body=Markup(self.renderer.render(key)),
            sources=sources,
            outgoing=dict(sorted(outgoing.items())),
            incoming=incoming,
            graph=Markup(graph_svg),
            cost_chart=Markup(self.cost_chart(page, record, computed)),
            roofline=Markup(
                self.roofline_for(page, record_type, [key]) if record_type and record_type.chart("roofline") else ""
            ),
            parameter_chart=Markup(
                self.parameter_chart(page, record) if self.registry.has_role(record.type, "parameter") else ""
            ),
            calculator=self.calculator.model(key),
            diagnostics=self.diagnostics_for(record),
        )

    def inputs_view(self, page: str, record: Record) -> list[dict[str, Any]]:
        inputs = record.mapping("inputs")
        out = []
        for name, raw in inputs.items():
            items = raw if isinstance(raw, list) else [raw]
            links = []
            for item in items:
                target, _ = self.index.resolve(item) if isinstance(item, str) and "/" in item else (None, [])
                if target:
                    links.append(self.link(page, target.key))
            out.append({"name": name, "links": links, "text": None if links else str(raw)})
        return out

    def costs_view(self, page: str, record: Record, computed: RecordValues) -> list[dict[str, Any]]:
        """One entry per cost; a for_each cost with `beside: other` becomes a column of other's table, a
        row it has no figure for shown as not given (a measured figure next to the nominal one)."""
        specs = {n: s for n, s in record.mapping("costs").items() if isinstance(s, dict)}
        views: dict[str, dict[str, Any]] = {}
        for name, value in computed.costs.items():
            spec = specs.get(name, {})
            views[name] = {
                "name": name,
                "label": spec.get("label", ""),
                "note": spec.get("note", ""),
                "stated": _stated(record, name),
                "value": self.value_view(page, value),
                "columns": [],
            }
        for name, view in list(views.items()):
            other = specs.get(name, {}).get("beside")
            host = views.get(other) if isinstance(other, str) else None
            if host is None or "rows" not in host["value"] or "rows" not in view["value"]:
                continue
            figures = {r["key"]: r["value"] for r in view["value"]["rows"]}
            host["columns"].append(
                {"name": name, "label": view["label"], "note": view["note"], "formula": view["value"]["formula"]}
            )
            for row in host["value"]["rows"]:
                row.setdefault("beside", []).append(figures.get(row["key"]))
            del views[name]
        return list(views.values())

    # ------------------------------------------------------------ pictures
    def cost_chart(self, page: str, record: Record, computed: RecordValues) -> str:
        """Every time-valued table of a cost record on one log axis: hit paths against recompute."""
        ureg = unit_registry()
        bars = []
        for name, value in computed.costs.items():
            if value.rows is None or not value.rows:
                continue
            first = value.rows[0][1].quantity
            if first is None or not first.is_compatible_with(ureg.second):
                continue
            label = (record.data.get("costs", {}).get(name) or {}).get("label") or name
            for row_key, row in value.rows:
                target = self.corpus.records[row_key]
                bars.append(
                    Bar(
                        str(target.data.get("name", row_key)),
                        float(row.quantity.to("ms").magnitude),
                        label,
                        relative(page, page_path(row_key)),
                    )
                )
        return bar_chart(bars, "ms", "Time per row, by cost (log scale)") if bars else ""

    def roofs(
        self, page: str, spec: dict[str, Any], keys: list[str], labels: tuple[str, ...] | None = None
    ) -> list[Roof]:
        """A roof per record from the fields its type's roofline chart names (x-kb-charts)."""
        roofs = []
        peak_fields = {
            label: name for label, name in (spec.get("peaks") or {}).items() if labels is None or label in labels
        }
        for key in keys:
            fields = self.corpus.values(key).fields
            bandwidth = fields.get(spec["bandwidth"])
            if bandwidth is None:
                continue
            peaks = tuple(
                (label, float(fields[name].quantity.to("FLOP/s").magnitude))
                for label, name in peak_fields.items()
                if fields.get(name) is not None
            )
            if peaks:
                name = self.corpus.records[key].data.get("name", key)
                roofs.append(
                    Roof(
                        str(name), float(bandwidth.quantity.to("B/s").magnitude), peaks, relative(page, page_path(key))
                    )
                )
        return roofs

    def roofline_for(self, page: str, record_type, keys: list[str]) -> str:
        return roofline(
            self.roofs(page, record_type.chart("roofline"), keys),
            "Roofline: attainable dense FLOP/s by arithmetic intensity",
        )

    def roofline_comparison(self, page: str, record_type) -> str:
        spec = record_type.chart("roofline")
        keys = [k for k, r in self.corpus.records.items() if r.type == record_type.name]
        compare = spec.get("compare") or next(iter(spec.get("peaks") or {}), "")
        return roofline(self.roofs(page, spec, keys, (compare,)), f"Rooflines compared (dense {str(compare).upper()})")

    def parameter_chart(self, page: str, record: Record) -> str:
        carried = record.mapping("carried_by")
        bars = []
        unit = record.data.get("dimension") if isinstance(record.data.get("dimension"), str) else None
        for key in (k for type_name in carried for k in self.calculator.by_type.get(type_name, [])):
            other = self.corpus.records[key]
            field = carried.get(other.type or "")
            value = self.corpus.values(key).fields.get(field) if field else None
            if value is not None and value.quantity is not None and unit:
                try:
                    bars.append(
                        Bar(
                            str(other.data.get("name", key)),
                            float(value.quantity.to(unit).magnitude),
                            other.type or "",
                            relative(page, page_path(key)),
                        )
                    )
                except Exception:  # a dimension mismatch is reported by kb check (KB510)
                    continue
        bars.sort(key=lambda b: -b.value)
        return bar_chart(bars, unit or "", f"{record.data.get('name', record.id)} by record", log=True) if bars else ""

    # ------------------------------------------------------------ whole-corpus graph
    def graph_data(self) -> dict[str, Any]:
        nodes, index = [], {}
        types = [t.name for t in self.types_in_order]
        for i, (key, record) in enumerate(sorted((k, r) for k, r in self.corpus.records.items() if k in self.pages)):
            index[key] = i
            nodes.append(
                [key, str(record.data.get("name", key))[:80], types.index(record.type) if record.type in types else -1]
            )
        edges = set()
        for source, target, _, _ in self.corpus.edges or ():
            if source != target and source in index and target in index:
                edges.add((index[source], index[target]))
        return {"types": types, "nodes": nodes, "edges": sorted(edges)}

    def graph_page(self) -> None:
        self.render("graph.html", "graph.html", title="Link graph", total=len(self.corpus.records))


def type_view(record_type: RecordType) -> dict[str, Any]:
    """What a template sees of a record type: data, not kb's object (theme.ThemeSandbox)."""
    return {
        "name": record_type.name,
        "title": record_type.title,
        "dir": record_type.dir,
        "schema": record_type.schema,
        "columns": list(record_type.columns),
    }


def record_view(record: Record) -> dict[str, Any]:
    """What a template sees of a record: its frontmatter and where it lives."""
    return {
        "key": record.key,
        "id": record.id,
        "type": record.type,
        "dir": record.dir,
        "path": record.path,
        "data": record.data,
    }


def plural(title: str) -> str:
    return title + ("es" if title.endswith(("s", "x", "ch", "sh")) else "s")


def json_script(data: Any) -> Markup:
    """JSON for a <script type="application/json"> block: no '<' can end the block early."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return Markup(
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _stated(record: Record, name: str) -> str | None:
    spec = (record.data.get("costs") or {}).get(name)
    if isinstance(spec, dict) and "stated" in spec:
        stated = spec["stated"]
        return str(stated.get("value") if isinstance(stated, dict) else stated)
    return None


def _sort_key(value: Value, unit: str | None) -> str:
    try:
        magnitude = float(value.quantity.to(unit).magnitude) if unit else float(value.quantity.magnitude)
    except Exception:
        return ""
    return f"{magnitude:.12e}"


def run_pagefind(out: Path) -> str | None:
    """Index the built pages for search; returns a warning text when it cannot."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pagefind", "--site", str(out), "--output-subdir", "pagefind"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"search index not built: {exc}"
    if proc.returncode != 0:
        return "search index not built: " + (proc.stderr.strip().splitlines() or ["pagefind failed"])[-1]
    return None


def build_site(corpus: Corpus, out: Path, search: bool = True) -> tuple[int, str | None]:
    """Write the site into `out` whole (a staging directory swapped in), return (pages, warning).
    OutputError when `out` is a place kb must not replace (see publish.check_output); ThemeError (one)
    when the theme cannot make it. The warning names the theme files left out and a search index not built."""
    resolved = out.resolve()
    resolved.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(resolved):
        check_output(out, corpus.settings)  # under the lock: another build may have changed `out` while this one waited
        remove_debris(resolved)
        staging = new_staging(resolved)
        try:
            builder = SiteBuilder(corpus, staging, previous=resolved if resolved.is_dir() else None)
            count = builder.build()
            warnings = list(builder.theme.problems)
            if search:
                warnings.append(run_pagefind(staging) or "")
            swap_in(staging, resolved)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return count, "; ".join(w for w in warnings if w) or None
