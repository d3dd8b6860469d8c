"""Pictures drawn at build time as inline SVG: no chart library runs in the browser.

Every label is escaped; colours come from CSS classes (the theme decides them, in
light and dark), so the SVG carries no style attribute and passes a strict CSP.
The drawing functions take plain bars and roofs; `FigureCharts` gathers them from
the corpus's figures for a page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any

from kbtools.corpus import Record, RecordValues
from kbtools.lang.units import format_number, magnitude_in, unit_registry
from kbtools.registry import RecordType
from kbtools.site.context import Page, SiteContext, page_path, relative


@dataclass(frozen=True)
class Bar:
    label: str
    value: float  # in the chart's unit
    group: str  # series name: bars of one group share a colour
    href: str | None = None
    note: str = ""


def _log_ticks(low: float, high: float) -> list[float]:
    start, end = math.floor(math.log10(low)), math.ceil(math.log10(high))
    return [10.0**e for e in range(start, end + 1)]


def bar_chart(bars: list[Bar], unit: str, title: str, log: bool = True) -> str:
    """Horizontal bars, one per row, on a log (or linear) axis; groups get classes series-0..n."""
    bars = [b for b in bars if b.value > 0 and math.isfinite(b.value)]
    if not bars:
        return ""
    groups = list(dict.fromkeys(b.group for b in bars))
    row, label_w, width = 22, 250, 760
    legend_rows, x = 1, 0.0
    for group in groups:  # legend entries flow left to right, wrapping
        w = 24 + 6.2 * len(group)
        if x + w > width and x > 0:
            legend_rows, x = legend_rows + 1, 0.0
        x += w
    top = 28 + 16 * legend_rows
    plot_w = width - label_w - 90
    height = top + row * len(bars) + 40
    values = [b.value for b in bars]
    if log:
        ticks = _log_ticks(min(values), max(values))
        lo, hi = math.log10(ticks[0]), math.log10(ticks[-1])
        scale = lambda v: (math.log10(v) - lo) / ((hi - lo) or 1) * plot_w  # noqa: E731
    else:
        top_value = max(values) * 1.1
        ticks = [top_value * i / 4 for i in range(5)]
        scale = lambda v: v / top_value * plot_w  # noqa: E731
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<text class="chart-title" x="0" y="16">{escape(title)}</text>',
    ]
    for tick in ticks:
        x = label_w + scale(tick)
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{height - 30}"/>')
        out.append(
            f'<text class="tick" x="{x:.1f}" y="{height - 14}" text-anchor="middle">{escape(format_number(tick))}</text>'
        )
    out.append(
        f'<text class="tick" x="{width - 4}" y="{height - 14}" text-anchor="end">{escape(unit)}{" (log)" if log else ""}</text>'
    )
    for i, bar in enumerate(bars):
        y = top + i * row
        w = max(scale(bar.value), 1.5)
        series = groups.index(bar.group)
        short = bar.label if len(bar.label) <= 38 else bar.label[:36] + "…"
        label = escape(bar.label)
        text = f'<a href="{escape(bar.href)}">{escape(short)}</a>' if bar.href else escape(short)
        out.append(f'<text class="bar-label" x="{label_w - 8}" y="{y + 15}" text-anchor="end">{text}</text>')
        out.append(
            f'<rect class="bar series-{series}" x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row - 7}">'
            f"<title>{label}: {escape(format_number(bar.value))} {escape(unit)}{escape(bar.note)}</title></rect>"
        )
        out.append(
            f'<text class="bar-value" x="{label_w + w + 5:.1f}" y="{y + 15}">{escape(format_number(bar.value))}</text>'
        )
    legend_x, legend_y = 0.0, 24
    for series, group in enumerate(groups):
        w = 24 + 6.2 * len(group)
        if legend_x + w > width and legend_x > 0:
            legend_x, legend_y = 0.0, legend_y + 16
        out.append(
            f'<rect class="bar series-{series}" x="{legend_x}" y="{legend_y}" width="10" height="10"/>'
            f'<text class="legend" x="{legend_x + 14}" y="{legend_y + 9}">{escape(group)}</text>'
        )
        legend_x += w
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True)
class Roof:
    label: str
    bandwidth: float  # bytes/s
    peaks: tuple[tuple[str, float], ...]  # (precision, FLOP/s)
    href: str | None = None


def roofline(roofs: list[Roof], title: str) -> str:
    """Attainable FLOP/s = min(peak, intensity × bandwidth), log-log, with each ridge point marked."""
    roofs = [r for r in roofs if r.bandwidth > 0 and r.peaks]
    if not roofs:
        return ""
    lines = sum(len(r.peaks) for r in roofs)
    width, left, bottom, top = 760, 70, 40, 40
    plot_w, plot_h = width - left - 20, 300
    height = top + plot_h + bottom + 16 * lines + 10
    x_lo, x_hi = 1.0, 10_000.0  # FLOP/B
    peaks = [p for r in roofs for _, p in r.peaks]
    y_hi = 10 ** math.ceil(math.log10(max(peaks)))
    y_lo = 10 ** math.floor(math.log10(min(r.bandwidth * x_lo for r in roofs)))
    sx = lambda v: left + (math.log10(v) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo)) * plot_w  # noqa: E731
    sy = lambda v: top + plot_h - (math.log10(v) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)) * plot_h  # noqa: E731
    out = [
        f'<svg class="chart roofline" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<title>{escape(title)}</title><text class="chart-title" x="0" y="16">{escape(title)}</text>',
    ]
    for tick in _log_ticks(x_lo, x_hi):
        out.append(
            f'<line class="grid" x1="{sx(tick):.1f}" y1="{top}" x2="{sx(tick):.1f}" y2="{top + plot_h}"/>'
            f'<text class="tick" x="{sx(tick):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{format_number(tick)}</text>'
        )
    for tick in _log_ticks(y_lo, y_hi):
        out.append(
            f'<line class="grid" x1="{left}" y1="{sy(tick):.1f}" x2="{left + plot_w}" y2="{sy(tick):.1f}"/>'
            f'<text class="tick" x="{left - 6}" y="{sy(tick) + 4:.1f}" text-anchor="end">{escape(_flops(tick))}</text>'
        )
    axis_y = top + plot_h + 32
    out.append(
        f'<text class="tick" x="{left + plot_w / 2:.0f}" y="{axis_y}" text-anchor="middle">arithmetic intensity, FLOP/byte (log)</text>'
    )
    series = 0
    for roof in roofs:
        for precision, peak in roof.peaks:
            ridge = peak / roof.bandwidth
            points = [(x_lo, roof.bandwidth * x_lo), (ridge, peak), (x_hi, peak)]
            path = " ".join(f"{sx(x):.1f},{sy(min(y, y_hi)):.1f}" for x, y in points)
            name = f"{roof.label} {precision}"
            out.append(
                f'<polyline class="roof series-{series % 8}" points="{path}"><title>{escape(name)}: ridge at '
                f"{escape(format_number(ridge))} FLOP/B</title></polyline>"
            )
            out.append(f'<circle class="ridge series-{series % 8}" cx="{sx(ridge):.1f}" cy="{sy(peak):.1f}" r="3.5"/>')
            legend_x, legend_y = left, axis_y + 20 + 16 * series
            out.append(
                f'<text class="legend" x="{legend_x:.0f}" y="{legend_y}">'
                f'<tspan class="swatch series-{series % 8}">■</tspan> {escape(name)}: ridge {escape(format_number(ridge))} FLOP/B</text>'
            )
            series += 1
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True)
class Point:
    label: str
    x: float
    y: float
    group: str  # series name: points of one group share a colour
    href: str | None = None


def scatter_against(points: list[Point], unit: str, title: str, x_name: str, y_name: str) -> str:
    """Each point's y against its x on log-log axes of one unit, with the line y = x (where they agree) and
    dashed lines at half and twice it; groups get classes series-0..n, listed in a legend."""
    points = [p for p in points if p.x > 0 and p.y > 0 and math.isfinite(p.x) and math.isfinite(p.y)]
    if not points:
        return ""
    groups = list(dict.fromkeys(p.group for p in points))
    width, left, bottom, top, side = 520, 70, 44, 44, 400
    height = top + side + bottom + 16 * len(groups) + 8
    ticks = _log_ticks(min(min(p.x, p.y) for p in points), max(max(p.x, p.y) for p in points))
    lo, hi = math.log10(ticks[0]), math.log10(ticks[-1])
    span = (hi - lo) or 1.0
    sx = lambda v: left + (math.log10(v) - lo) / span * side  # noqa: E731
    sy = lambda v: top + side - (math.log10(v) - lo) / span * side  # noqa: E731
    out = [
        f'<svg class="chart scatter" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<title>{escape(title)}</title><text class="chart-title" x="0" y="16">{escape(title)}</text>',
    ]
    for tick in ticks:
        label = escape(format_number(tick))
        out.append(
            f'<line class="grid" x1="{sx(tick):.1f}" y1="{top}" x2="{sx(tick):.1f}" y2="{top + side}"/>'
            f'<text class="tick" x="{sx(tick):.1f}" y="{top + side + 16}" text-anchor="middle">{label}</text>'
            f'<line class="grid" x1="{left}" y1="{sy(tick):.1f}" x2="{left + side}" y2="{sy(tick):.1f}"/>'
            f'<text class="tick" x="{left - 6}" y="{sy(tick) + 4:.1f}" text-anchor="end">{label}</text>'
        )
    for factor, kind in ((1.0, "agree"), (0.5, "factor"), (2.0, "factor")):
        a, b = max(ticks[0], ticks[0] / factor), min(ticks[-1], ticks[-1] / factor)  # inside the plot both ways
        out.append(
            f'<line class="diagonal {kind}" x1="{sx(a):.1f}" y1="{sy(a * factor):.1f}" x2="{sx(b):.1f}" y2="{sy(b * factor):.1f}"/>'
        )
    for point in points:
        series = groups.index(point.group) % 8
        dot = (
            f'<circle class="dot series-{series}" cx="{sx(point.x):.1f}" cy="{sy(point.y):.1f}" r="4">'
            f"<title>{escape(point.label)}: {x_name} {escape(format_number(point.x))} {escape(unit)}, {y_name} "
            f"{escape(format_number(point.y))} {escape(unit)}</title></circle>"
        )
        out.append(f'<a href="{escape(point.href)}">{dot}</a>' if point.href else dot)
    axis_y = top + side + 34
    out.append(
        f'<text class="tick" x="{left + side / 2:.0f}" y="{axis_y}" text-anchor="middle">{escape(x_name)}, {escape(unit)} (log)</text>'
        f'<text class="tick" x="{left}" y="{top - 8}">{escape(y_name)}, {escape(unit)} (log); the solid line is agreement, '
        "the dashed ones twice and half</text>"
    )
    for i, group in enumerate(groups):
        out.append(
            f'<text class="legend" x="{left}" y="{axis_y + 20 + 16 * i}"><tspan class="swatch series-{i % 8}">●</tspan> '
            f"{escape(group)}</text>"
        )
    out.append("</svg>")
    return "".join(out)


def _flops(value: float) -> str:
    for scale, prefix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G")):
        if value >= scale:
            return f"{format_number(value / scale)} {prefix}FLOP/s"
    return f"{format_number(value)} FLOP/s"


def neighbourhood(center: tuple[str, str, str], nodes: list[tuple[str, str, str, str]]) -> str:
    """The record in the middle, its links around it: (label, type, href[, direction])."""
    if not nodes:
        return ""
    width, height = 760, 420
    cx, cy, radius = width / 2, height / 2, 160
    out = [
        f'<svg class="chart graph" viewBox="0 0 {width} {height}" role="img" aria-label="links of {escape(center[0])}" xmlns="http://www.w3.org/2000/svg">'
    ]
    shown = nodes[:36]
    for i, (_label, _kind, _href, direction) in enumerate(shown):
        angle = 2 * math.pi * i / len(shown) - math.pi / 2
        x, y = cx + radius * 1.7 * math.cos(angle), cy + radius * math.sin(angle)
        out.append(f'<line class="edge edge-{direction}" x1="{cx:.0f}" y1="{cy:.0f}" x2="{x:.0f}" y2="{y:.0f}"/>')
    for i, (label, kind, href, _direction) in enumerate(shown):
        angle = 2 * math.pi * i / len(shown) - math.pi / 2
        x, y = cx + radius * 1.7 * math.cos(angle), cy + radius * math.sin(angle)
        anchor = "start" if math.cos(angle) > 0.2 else "end" if math.cos(angle) < -0.2 else "middle"
        dx = 8 if anchor == "start" else -8 if anchor == "end" else 0
        out.append(
            f'<a href="{escape(href)}"><circle class="node type-{escape(kind)}" cx="{x:.0f}" cy="{y:.0f}" r="6"/>'
            f'<text class="node-label" x="{x + dx:.0f}" y="{y + 4:.0f}" text-anchor="{anchor}">{escape(label[:38])}</text></a>'
        )
    out.append(
        f'<circle class="node node-center type-{escape(center[1])}" cx="{cx:.0f}" cy="{cy:.0f}" r="10"/>'
        f'<text class="node-label node-center-label" x="{cx:.0f}" y="{cy - 16:.0f}" text-anchor="middle">{escape(center[0][:50])}</text>'
    )
    if len(nodes) > len(shown):
        out.append(f'<text class="tick" x="4" y="{height - 6}">+{len(nodes) - len(shown)} more (listed below)</text>')
    out.append("</svg>")
    return "".join(out)


class FigureCharts(Page):
    """The corpus's figures as the charts a page shows: a cost record's time tables, a type's rooflines,
    a hardware parameter across the records that carry it."""

    def __init__(self, site: SiteContext):
        super().__init__(site)
        self.bars: dict[tuple[str, str], list[Bar]] = {}  # (page, parameter) -> its bars

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
            label = (record.costs.get(name) or {}).get("label") or name
            for row_key, row in value.rows:
                target = self.corpus.records[row_key]
                bars.append(
                    Bar(
                        str(target.data.get("name", row_key)),
                        magnitude_in(row.quantity, "ms"),
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
                (label, magnitude_in(fields[name].quantity, "FLOP/s"))
                for label, name in peak_fields.items()
                if fields.get(name) is not None
            )
            if peaks:
                name = self.corpus.records[key].data.get("name", key)
                roofs.append(
                    Roof(str(name), magnitude_in(bandwidth.quantity, "B/s"), peaks, relative(page, page_path(key)))
                )
        return roofs

    def roofline_for(self, page: str, record_type: RecordType, keys: list[str]) -> str:
        """The records' rooflines ('' when their type draws none)."""
        spec = record_type.chart("roofline")
        if not spec:
            return ""
        return roofline(self.roofs(page, spec, keys), "Roofline: attainable dense FLOP/s by arithmetic intensity")

    def roofline_comparison(self, page: str, record_type: RecordType) -> str:
        """Every record of a type, one precision's roof each ('' when the type draws no roofline)."""
        spec = record_type.chart("roofline")
        if not spec:
            return ""
        keys = [k for k, r in self.corpus.records.items() if r.type == record_type.name]
        compare = spec.get("compare") or next(iter(spec.get("peaks") or {}), "")
        return roofline(self.roofs(page, spec, keys, (compare,)), f"Rooflines compared (dense {str(compare).upper()})")

    def parameter_chart(self, page: str, record: Record) -> str:
        unit = _dimension(record)
        bars = self.parameter_bars(page, record)
        return bar_chart(bars, unit or "", f"{record.data.get('name', record.id)} by record", log=True) if bars else ""

    def parameter_bars(self, page: str, record: Record) -> list[Bar]:
        """A parameter's bars: every record that carries it, with its figure in the parameter's dimension,
        largest first. Made once per page: the page's fingerprint (reuse.PageReuse) is made of them too."""
        key = (page, record.key)
        if key not in self.bars:
            self.bars[key] = self._parameter_bars(page, record)
        return self.bars[key]

    def _parameter_bars(self, page: str, record: Record) -> list[Bar]:
        carried = record.mapping("carried_by")
        bars = []
        unit = _dimension(record)
        for key in (k for type_name in carried for k in self.site.calculator.by_type.get(type_name, [])):
            other = self.corpus.records[key]
            field = carried.get(other.type or "")
            value = self.corpus.values(key).fields.get(field) if field else None
            if value is not None and value.quantity is not None and unit:
                try:
                    bars.append(
                        Bar(
                            str(other.data.get("name", key)),
                            magnitude_in(value.quantity, unit),
                            other.type or "",
                            relative(page, page_path(key)),
                        )
                    )
                except Exception:  # a dimension mismatch is reported by kb check (KB510)
                    continue
        bars.sort(key=lambda b: -b.value)
        return bars


def _dimension(record: Record) -> str | None:
    """The unit a hardware parameter's figures are charted in, as the parameter record names it."""
    dimension = record.data.get("dimension")
    return dimension if isinstance(dimension, str) else None
