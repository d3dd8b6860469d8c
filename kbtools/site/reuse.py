"""Incremental builds: a record page whose fingerprint matches the previous build's is linked, not rendered.

The previous site keeps a manifest (page -> fingerprint of what it shows); a page is reused when its
fingerprint now is the one the manifest holds and the old file is still there.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from kbtools.check.compute.incremental import fingerprint
from kbtools.outputs.publish import link_or_copy
from kbtools.site.charts import FigureCharts
from kbtools.site.context import SiteContext, page_path

MANIFEST = ".kb-pages.json"  # page -> fingerprint of what it shows, for the next incremental build
ONE_BY_ONE = 50  # pages whose reads are asked for one query each before the whole table is read


class PageReuse:
    def __init__(self, site: SiteContext, previous: Path | None, charts: FigureCharts):
        self.site, self.corpus, self.previous, self.charts = site, site.corpus, previous, charts
        self.previous_manifest: dict[str, str] = {}
        if previous is not None and (previous / MANIFEST).is_file():
            try:
                self.previous_manifest = json.loads((previous / MANIFEST).read_text())
            except (OSError, ValueError):
                self.previous_manifest = {}
        self.manifest: dict[str, str] = {}  # this build's, written by write_manifest
        self.value_prints: dict[str, str] = {}
        self.link_prints: dict[str, str] = {}  # record -> what a link to it shows, fingerprinted by shown_of
        self.neighbours: dict[str, set[str]] = defaultdict(set)
        self.neighbours_out: dict[str, set[str]] = defaultdict(set)
        for source, target, _, _ in self.corpus.edges or ():
            self.neighbours[source].add(target)
            self.neighbours[target].add(source)
            self.neighbours_out[source].add(target)
        stored = self.corpus.value_reads
        self.reads: dict[str, dict[str, dict[str, str]]] | None = None  # page -> what its values read, all at once
        self.asked = 0
        self.global_key = f"{stored.version if stored else ''}:{site.theme.fingerprint()}:{site.index.fingerprint()}"

    def reused(self, key: str) -> bool:
        """Put the previous build's page of a record in place when it shows the same; note its fingerprint."""
        page, fingerprint = page_path(key), self.fingerprint(key)
        if fingerprint is None:
            return False
        self.manifest[page] = fingerprint
        return self.reuse(page, fingerprint)

    def write_manifest(self) -> None:
        self.site.write(MANIFEST, json.dumps(dict(sorted(self.manifest.items())), separators=(",", ":")))

    def manifest_of(self, keys: Sequence[str]) -> dict[str, str]:
        """The fingerprints noted of these records' pages (what a render worker sends back)."""
        return {page: self.manifest[page] for page in map(page_path, keys) if page in self.manifest}

    def prepare(self, pages: int) -> None:
        """Before a build asks for many pages (in forked workers, which must not read the store): what every
        record read, all at once."""
        stored = self.corpus.value_reads
        if stored is not None and self.reads is None and pages > ONE_BY_ONE:
            self.reads = stored.all_records_read()

    def fingerprint(self, key: str) -> str | None:
        """What a record page shows rests on: the record itself; of its neighbours in the link graph and of
        the sources its values cite, what a link shows (name, id, type, status, URL, the fields that link
        them); of every record its values read (transitively), the fingerprints of those values; the
        records its calculator exports, whole; a parameter's chart, bar by bar; plus the theme, kb itself and
        the set of ids. None: render it every time. So an edit to a neighbour's prose or to a figure this
        page does not show re-renders nothing here."""
        record = self.corpus.records[key]
        if self.corpus.value_reads is None:
            return None
        read = self.read_by(key)
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
        for d in self.site.errors_by_path.get(record.path, []):
            h.update(d.as_json_text().encode())
        if self.site.registry.has_role(record.type, "parameter"):  # it charts every record that carries it
            h.update(repr(self.charts.parameter_bars(page_path(key), record)).encode())
        return h.hexdigest()

    def read_by(self, key: str) -> dict[str, dict[str, str]]:
        """What a record's values read of others, from the store: one query for each of the first few pages
        asked for (kb serve's quick pass asks for the open ones), the whole table at once beyond that."""
        stored = self.corpus.value_reads
        if stored is None:
            return {}
        self.asked += 1
        if self.reads is None and self.asked <= ONE_BY_ONE:
            return stored.records_read(key)
        if self.reads is None:
            self.reads = stored.all_records_read()
        return self.reads.get(key, {})

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
        """What a page shows of another record: what its link shows, and the fields linking the two. A page
        asks this of every record it shows or reads, so the first part is made once per record, and only a
        neighbour (the graph's links are the edges `neighbours` holds) is asked for the fields."""
        link = self.link_prints.get(key)
        if link is None:
            record = self.corpus.records.get(key)
            if record is None:
                link = "-"
            else:
                data = record.data
                link = repr([data.get("name"), record.id, record.type, data.get("status"), data.get("url")])
            self.link_prints[key] = link
        graph = self.corpus.graph
        if link == "-" or graph is None or key not in self.neighbours.get(page_key, ()):
            return link
        fields = [
            sorted(str(field) for field, _ in links)
            for links in (graph.links_between(page_key, key), graph.links_between(key, page_key))
            if links
        ]
        return f"{link}{fields!r}"

    def calculator_inputs(self, key: str) -> set[str]:
        calculator = self.site.calculator
        model = calculator.model(key) if self.corpus.records[key].costs else None
        return set(model["records"]) if model else set()

    def shows_the_same(self, key: str) -> bool:
        """The previous build's page of a record shows what it would show now."""
        fingerprint = self.fingerprint(key)
        return fingerprint is not None and self.previous_manifest.get(page_path(key)) == fingerprint

    def reuse(self, page: str, fingerprint: str) -> bool:
        old = self.previous / page if self.previous else None
        if old is None or self.previous_manifest.get(page) != fingerprint or not old.is_file():
            return False
        target = self.site.out / page
        target.parent.mkdir(parents=True, exist_ok=True)
        link_or_copy(old, target)
        return True
