"""A record type's index page: one row per record, sortable by its type's columns, and the type's charts."""

from __future__ import annotations

from markupsafe import Markup

from kbtools.check.compute import Value
from kbtools.lang.units import magnitude_in
from kbtools.registry import RecordType
from kbtools.site.charts import FigureCharts
from kbtools.site.context import Page, SiteContext, type_view


class TypeIndexPage(Page):
    def __init__(self, site: SiteContext, charts: FigureCharts):
        super().__init__(site)
        self.charts = charts

    def write(self, record_type: RecordType) -> None:
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
            rows.append(
                {"link": self.site.link(page, key), "status": str(record.data.get("status", "")), "cells": cells}
            )
        self.site.render(
            "type_index.html",
            page,
            title=record_type.title,
            record_type=type_view(record_type),
            columns=columns,
            rows=rows,
            chart=Markup(self.charts.roofline_comparison(page, record_type)),
        )


def _sort_key(value: Value, unit: str | None) -> str:
    try:
        magnitude = magnitude_in(value.quantity, unit) if unit else float(value.quantity.magnitude)
    except Exception:
        return ""
    return f"{magnitude:.12e}"
