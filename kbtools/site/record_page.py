"""A record's page: its fields, costs and their calculator, hardware tables, claims, body, sources, the
records it links and that link to it, and its charts. A record file that did not parse keeps a page at the
same place (UnparsedPage): the error, and what follows from it."""

from __future__ import annotations

import html
import re
from collections import defaultdict
from dataclasses import replace
from typing import Any

from markupsafe import Markup

from kbtools.check.links import backlinks
from kbtools.corpus import Record, RecordValues
from kbtools.fieldwalk import iter_references
from kbtools.outputs.report import NOT_READ, without_guess
from kbtools.registry import RecordType
from kbtools.site.charts import Bar, FigureCharts, bar_chart, neighbourhood
from kbtools.site.context import Page, SiteContext, page_path, relative
from kbtools.site.plan_view import missing_rows, ranking_view
from kbtools.site.render import heading_id, safe_url

SECTIONS = ("inputs", "costs", "hardware_parameters", "claims")  # shown in their own sections


class RecordPage(Page):
    def __init__(self, site: SiteContext, charts: FigureCharts):
        super().__init__(site)
        self.charts = charts

    def write(self, key: str) -> None:
        site, record = self.site, self.corpus.records[key]
        record_type = site.registry.types.get(record.type)
        page = page_path(key)
        computed = self.corpus.values(key)
        fields = self.fields_view(page, record, record_type, computed) if record_type is not None else []
        costs = self.costs_view(page, record, computed)
        inputs = self.inputs_view(page, record)
        hardware = self.hardware_view(page, computed)
        rows = (
            record.data.get("hardware_parameters") if isinstance(record.data.get("hardware_parameters"), list) else []
        )
        claims = record.data.get("claims") if isinstance(record.data.get("claims"), list) else []
        sources = [
            s
            for s in (site.source_link(page, sid) for sid in record.data.get("sources") or [] if isinstance(sid, str))
            if s
        ]
        outgoing = self.outgoing(page, key)
        incoming = {field: [site.link(page, k) for k in keys] for field, keys in backlinks(self.corpus, key).items()}
        neighbours = {
            **{link["key"]: (link, "out") for links in outgoing.values() for link in links},
            **{link["key"]: (link, "in") for links in incoming.values() for link in links},
        }
        graph_svg = neighbourhood(
            (str(record.data.get("name", key)), record.type or "", page),
            [(link["label"], link["type"], link["href"], d) for link, d in neighbours.values()],
        )
        body, sections = body_sections(site.renderer.render(key))
        site.render(
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
            body=Markup(body),
            sections=sections,
            sources=sources,
            outgoing=dict(sorted(outgoing.items())),
            incoming=incoming,
            graph=Markup(graph_svg),
            cost_chart=Markup(self.charts.cost_chart(page, record, computed)),
            roofline=Markup(self.charts.roofline_for(page, record_type, [key]) if record_type else ""),
            parameter_chart=Markup(
                self.charts.parameter_chart(page, record) if site.registry.has_role(record.type, "parameter") else ""
            ),
            calculator=site.calculator.model(key),
            diagnostics=site.diagnostics_for(record),
            ranking=ranking_view(site, page, record, record_type) if record_type is not None else None,
        )

    def fields_view(
        self, page: str, record: Record, record_type: RecordType, computed: RecordValues
    ) -> list[dict[str, Any]]:
        """The record's own fields in schema order: a value, links to the records it names, or its text."""
        site, registry = self.site, self.site.registry
        refs = defaultdict(list)
        for ref in iter_references(record, record_type.plan, set(registry.dirs)):
            if len(ref.path) <= 2 and ref.path[0] not in SECTIONS:
                target, _ = site.index.resolve(ref.value)
                refs[ref.path[0]].append(site.link(page, target.key) if target else {"href": None, "label": ref.value})
        fields: list[dict[str, Any]] = []
        for name in record_type.property_order:
            if name in registry.envelope_fields or name in SECTIONS:
                continue
            value = computed.fields.get(name)
            schema = record_type.schema.get("properties", {}).get(name, {})
            if value is not None:
                fields.append(
                    {"name": name, "description": schema.get("description", ""), "value": site.value_view(page, value)}
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
        return fields

    def hardware_view(self, page: str, computed: RecordValues) -> list[dict[str, Any]]:
        """One table (and bar chart) per hardware parameter the record's costs read, a row per record."""
        site = self.site
        return [
            {
                "parameter": site.parameter_link(page, pid),
                "rows": [{"link": site.link(page, k), "value": site.value_view(page, v)} for k, v in table.items()],
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

    def outgoing(self, page: str, key: str) -> defaultdict[str, list[dict[str, str]]]:
        """The records this one links to, grouped by the field the link stands in."""
        outgoing: defaultdict[str, list[dict[str, str]]] = defaultdict(list)
        if self.corpus.graph is not None:
            for target, linked_by, _ in self.corpus.graph.out_links(key):
                # each figure's own long-form source joins one group rather than one per field
                field = "sources (per figure)" if linked_by.endswith(".source") else linked_by
                if target != key and self.site.link(page, target) not in outgoing[field]:
                    outgoing[field].append(self.site.link(page, target))
        return outgoing

    def inputs_view(self, page: str, record: Record) -> list[dict[str, Any]]:
        inputs = record.mapping("inputs")
        out = []
        for name, raw in inputs.items():
            items = raw if isinstance(raw, list) else [raw]
            links = []
            for item in items:
                target, _ = self.site.index.resolve(item) if isinstance(item, str) and "/" in item else (None, [])
                if target:
                    links.append(self.site.link(page, target.key))
            out.append({"name": name, "links": links, "text": None if links else str(raw)})
        return out

    def costs_view(self, page: str, record: Record, computed: RecordValues) -> list[dict[str, Any]]:
        """One entry per cost; a for_each cost with `beside: other` becomes a column of other's table, a
        row it has no figure for shown as not given (a measured figure next to the nominal one)."""
        specs = {n: s for n, s in record.costs.items() if isinstance(s, dict)}
        views: dict[str, dict[str, Any]] = {}
        for name, value in computed.costs.items():
            spec = specs.get(name, {})
            views[name] = {
                "name": name,
                "label": spec.get("label", ""),
                "note": spec.get("note", ""),
                "stated": _stated(record, name),
                "value": self.site.value_view(page, value),
                "columns": [],
            }
        missing_rows(self.site, page, record, views)
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
        self._name_bottlenecks(record, computed, views)
        return list(views.values())

    def _name_bottlenecks(self, record: Record, computed: RecordValues, views: dict[str, dict[str, Any]]) -> None:
        """Each row of a figure that is the least of its stages (the type's x-kb-plan `stages`) says which
        stage limits it, as kb plan says it: "limited by the accelerator's host link"."""
        from kbtools.outputs.plan import slowest_stage

        record_type = self.corpus.registry.types.get(record.type or "")
        stages = record_type.planning.get("stages") if record_type is not None else None
        if not isinstance(stages, dict):
            return
        per_option = {name: dict(value.rows or ()) for name, value in computed.costs.items()}
        for figure, named in stages.items():
            view = views.get(figure)
            if view is None or not isinstance(named, dict) or "rows" not in view["value"]:
                continue
            for row in view["value"]["rows"]:
                found = slowest_stage(figure, named, per_option, row["key"])
                if found is not None:
                    row["limited_by"] = found.words


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


_HEADING = re.compile(r"<h([2-6])>(.*?)</h\1>", re.S)
_HIDDEN = re.compile(r'<span class="kb-value-why">.*?</span>', re.S)  # a figure's derivation, shown on hover


def body_sections(body: str) -> tuple[str, list[tuple[str, str]]]:
    """The rendered body with an id on each of its headings (render.heading_id: where a [[record#Heading]] link
    goes), and each h2's (id, text), for the page's contents list."""
    sections: list[tuple[str, str]] = []
    taken: set[str] = set()

    def named(match: re.Match[str]) -> str:
        level, inner = match.group(1), match.group(2)
        text = " ".join(html.unescape(re.sub(r"<[^>]*>", "", _HIDDEN.sub("", inner))).split())
        slug = heading_id(text) if heading_id(text) != "s-" else f"s-{len(taken) + 1}"
        unique, n = slug, 1
        while unique in taken:
            n += 1
            unique = f"{slug}-{n}"
        taken.add(unique)
        if level == "2":
            sections.append((unique, text))
        return f'<h{level} id="{unique}">{inner}</h{level}>'

    return _HEADING.sub(named, body), sections


def _stated(record: Record, name: str) -> str | None:
    spec = record.costs.get(name)
    if isinstance(spec, dict) and "stated" in spec:
        stated = spec["stated"]
        return str(stated.get("value") if isinstance(stated, dict) else stated)
    return None


class UnparsedPage(Page):
    """The page of a record file that yields no record (it did not parse, or kb did not read it), where the
    record's page would be: the finding that says why (file, line, column, message) in place of the record,
    and the findings that follow from it. A browser open on the record shows the error, never a 404, and
    the record again once the file is fixed."""

    def write(self, key: str) -> None:
        site = self.site
        cause, group = site.unparsed[key]
        page = page_path(key)
        folder = key.partition("/")[0]
        record_type = site.registry.by_dir(folder)
        site.render(
            "unparsed.html",
            page,
            title=key,
            key=key,
            type_title=record_type.title if record_type else folder,
            type_dir=folder,
            cause=site.finding_view(page, cause),
            read=cause.code not in NOT_READ,
            summary=group.summary() if group is not None else "",
            follows=[site.finding_view(page, replace(d, message=without_guess(d.message))) for d in group.follows]
            if group is not None
            else [],
        )
