"""What every page of the site shares: the corpus and its one index (`Corpus.index`), the theme, where pages
live and how they link, and what a template sees of a link and of a value.

Page kinds (home.py, type_index.py, record_page.py, graph.py) are `Page`s over one `SiteContext`, so a
look-up, a link or a value reads the same on every page and the corpus is indexed once per build.
"""

from __future__ import annotations

import json
import posixpath
from collections import defaultdict
from pathlib import Path
from typing import Any

from markupsafe import Markup

from kbtools.check.compute import Value, scenario_text, substituted
from kbtools.corpus import Corpus, Record
from kbtools.diagnostics import Diagnostic
from kbtools.ids import is_id
from kbtools.lang.units import format_quantity
from kbtools.outputs.publish import assert_inside
from kbtools.outputs.report import Group, grouped, unparsed_key, with_hint, without_guess
from kbtools.registry import DIR_PATTERN, RecordType
from kbtools.site.calculator import CalculatorExporter
from kbtools.site.render import BodyRenderer, safe_url, value_anchor
from kbtools.site.theme import Theme, ThemeError
from kbtools.version import __version__


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


class SiteContext:
    """The corpus as the site sees it, built once per build and shared by every page kind."""

    def __init__(self, corpus: Corpus, out: Path):
        self.corpus, self.out = corpus, out
        self.registry = corpus.registry
        # the one index of the corpus: links, record bodies and calculator models all resolve through it
        self.index = corpus.index
        self.theme = Theme(corpus.settings)
        self.env = self.theme.environment()
        self.env.filters["json_script"] = json_script
        self.env.filters["plural"] = plural
        self.errors_by_path: dict[str, list[Diagnostic]] = defaultdict(list)
        for d in corpus.diagnostics:
            self.errors_by_path[d.path].append(d)
        for found in self.errors_by_path.values():
            # in the file's order: a run that judged some stages again (kb serve's refresh) lists its findings in
            # another order than a cold run, and a page must not depend on which run made it
            found.sort(key=lambda d: (d.line or 0, d.column or 0, d.code, d.message))
        # a record whose file name is no valid id (KB108, shown only under --force) gets no page and is
        # never a link target: its name would otherwise reach paths and hrefs
        self.pages = {
            key for key, record in corpus.records.items() if is_id(record.stem) and DIR_PATTERN.match(record.dir)
        }
        # a record file that did not parse keeps a page, where its record's would be: the finding that says why,
        # and what follows from it; a finding that follows from one says so on its record's page
        self.unparsed, self.cause_of = self._unparsed()
        self.renderer = BodyRenderer(
            corpus, self.index, lambda src, dst: relative(page_path(src), page_path(dst)) if dst in self.pages else ""
        )
        self.types_in_order = sorted(self.registry.types.values(), key=lambda t: t.title)
        self.type_views = [type_view(t) for t in self.types_in_order]
        self.calculator = CalculatorExporter(corpus, self.index)  # each record's values in base units, exported once

    def _unparsed(self) -> tuple[dict[str, tuple[Diagnostic, Group | None]], dict[Diagnostic, Group]]:
        """The record files that yield no record, by the key their record would have (with the finding that
        says why and the group of what follows from it), and each finding that follows from a cause -> its group:
        a file that yields no record, or a figure kb refused (a unit error), which is a cause whether or not any
        file failed to parse."""
        corpus, settings = self.corpus, self.corpus.settings
        causes = [d for d in corpus.diagnostics if unparsed_key(d) is not None]
        loaded = corpus.record_paths()
        unparsed: dict[str, tuple[Diagnostic, Group | None]] = {}
        for d in sorted(causes, key=Diagnostic.sort_key):
            key = unparsed_key(d)
            assert key is not None
            folder, _, stem = key.partition("/")
            if (
                key not in unparsed
                and key not in corpus.records
                and d.path not in loaded
                and d.path == f"{settings.records_dir}/{key}.md"
                and self.registry.by_dir(folder) is not None
                and DIR_PATTERN.match(folder)
                and is_id(stem)
            ):
                unparsed[key] = (d, None)
        groups, _ = grouped(sorted(corpus.diagnostics, key=Diagnostic.sort_key))
        cause_of: dict[Diagnostic, Group] = {}
        for group in groups:
            if group.key in unparsed and unparsed[group.key][0] == group.cause:
                unparsed[group.key] = (group.cause, group)
            cause_of.update((d, group) for d in group.follows)
        return unparsed, cause_of

    def key_at(self, path: str) -> str | None:
        """The record whose file is `path`, when it has a page."""
        folder, _, name = path.rpartition("/")
        key = f"{folder.rpartition('/')[2]}/{name.removesuffix('.md')}"
        record = self.corpus.records.get(key) if key in self.pages else None
        return key if record is not None and record.path == path else None

    def follows_from(self, record: Record) -> bool:
        """Whether a finding on this record's page follows from a record that did not parse (the page says
        which, so it is rendered again while that holds: its fingerprint knows nothing of the other file)."""
        return any(d in self.cause_of for d in self.errors_by_path.get(record.path, ()))

    def finding_view(self, page: str, d: Diagnostic) -> dict[str, Any]:
        """A finding as a page lists it: where, what, and the page of its record when it has one."""
        key = self.key_at(d.path)
        return {
            "where": f"{d.path}:{d.line}:{d.column}",
            "path": d.path,
            "line": d.line,
            "column": d.column,
            "severity": d.severity.value,
            "code": d.code,
            "message": with_hint(d),
            "href": relative(page, page_path(key)) if key is not None else "",
        }

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

    # ------------------------------------------------------------ what templates see
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
        if value.spread_shown() is not None:
            view["range"] = {
                "text": value.spread_shown(unit),
                "low": format_quantity(value.low, unit or value.unit, 4),
                "high": format_quantity(value.high, unit or value.unit, 4),
                "over": [
                    f"if {scenario_text(scenario)}: {format_quantity(q, unit or value.unit, 4)}"
                    for scenario, q in value.variants
                ],
                "enclosure": value.bounds is not None,
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
        """The findings on a record's page; one that follows from a record that did not parse names it."""
        page = page_path(record.key)
        out = []
        for d in self.errors_by_path.get(record.path, []):
            group = self.cause_of.get(d)
            message = d.message if group is None else without_guess(d.message)
            view: dict[str, Any] = {"line": d.line, "code": d.code, "message": message, "severity": d.severity.value}
            if group is not None:
                view["follows"] = {
                    "key": group.key,
                    "what": group.what,
                    "href": relative(page, page_path(group.key)) if group.key in self.unparsed else "",
                    "where": f"{group.cause.path}:{group.cause.line}:{group.cause.column}",
                    "code": group.cause.code,
                }
            out.append(view)
        return out


class Page:
    """A kind of page of the site, written from the shared context."""

    def __init__(self, site: SiteContext):
        self.site = site
        self.corpus = site.corpus


def type_view(record_type: RecordType) -> dict[str, Any]:
    """What a template sees of a record type: data, not kb's object (theme.ThemeSandbox)."""
    return {
        "name": record_type.name,
        "title": record_type.title,
        "dir": record_type.dir,
        "schema": record_type.schema,
        "columns": list(record_type.columns),
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
