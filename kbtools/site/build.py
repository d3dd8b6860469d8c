"""`kb build`: the checked corpus -> a static site of plain files with relative links.

It reads the Corpus `kb check` produced (records, link graph, computed values) and
never re-parses a file. Templates and static assets are kb's packaged theme, overridden file by
file by the knowledge base's site/templates/ and site/static/ (site/theme.py); pages go to
site/_build/ (or --out). Each kind of page has its module (home, type_index, record_page, graph) over
the one SiteContext (context.py); reuse.py keeps record pages an edit did not change. A record file that
did not parse keeps its page, which shows the error (record_page.UnparsedPage).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from kbtools.corpus import Corpus
from kbtools.outputs.publish import (
    SEARCH_DIR,
    link_or_copy,
    new_staging,
    read_manifest,
    replaced_whole,
)
from kbtools.outputs.targets import build_lock
from kbtools.progress import waiting
from kbtools.site.charts import FigureCharts
from kbtools.site.context import SiteContext, page_path
from kbtools.site.graph import GraphPage
from kbtools.site.home import HomePage
from kbtools.site.ledger_page import LedgerPage
from kbtools.site.pool import in_workers
from kbtools.site.record_page import RecordPage, UnparsedPage
from kbtools.site.reuse import PageReuse
from kbtools.site.type_index import TypeIndexPage


class SiteBuilder:
    """Every page of the site, each kind written by its own module over one shared SiteContext."""

    def __init__(self, corpus: Corpus, out: Path, previous: Path | None = None):
        self.site = SiteContext(corpus, out)
        self.theme = self.site.theme
        charts = FigureCharts(self.site)
        self.reuse = PageReuse(self.site, previous, charts)
        self.home, self.graph, self.ledger = HomePage(self.site), GraphPage(self.site), LedgerPage(self.site)
        self.type_index, self.record_page = TypeIndexPage(self.site, charts), RecordPage(self.site, charts)
        self.unparsed_page = UnparsedPage(self.site)

    def build(self) -> int:
        site, corpus = self.site, self.site.corpus
        site.out.mkdir(parents=True, exist_ok=True)
        self.theme.copy_static(site.out)
        self.home.write()
        for record_type in site.types_in_order:
            self.type_index.write(record_type)
        keys = [k for k in corpus.records if k in site.pages]
        self.reuse.prepare(len(keys))
        in_workers(keys, self.record, self.reuse.manifest_of, self.reuse.manifest.update, "Writing pages")
        for key in sorted(site.unparsed):  # a few, and each made anew: no fingerprint, no reuse
            self.unparsed_page.write(key)
        self.graph.write()
        self.ledger.write()
        self.reuse.write_manifest()
        return len(corpus.records)

    def record(self, key: str) -> None:
        """A record's page: the previous build's where it shows the same, else rendered. A page naming a
        record that did not parse is rendered every time (and left out of the reuse manifest, so the first
        build after the fix renders it too): what it says of that file is in no fingerprint."""
        if self._names_unparsed(key) or not self.reuse.reused(key):
            self.record_page.write(key)

    def _names_unparsed(self, key: str) -> bool:
        return bool(self.site.cause_of) and self.site.follows_from(self.site.corpus.records[key])

    def patch(self, pages: set[str]) -> list[str]:
        """Of the pages named (the home page, type indexes, record pages), those whose inputs changed since the
        previous build, rendered into the staging directory: kb serve's quick pass for the pages open in a
        browser. The paths written."""
        site, written = self.site, []
        if page_path(None) in pages:
            self.home.write()
            written.append(page_path(None))
        for record_type in site.types_in_order:
            if f"{record_type.dir}/index.html" in pages:
                self.type_index.write(record_type)
                written.append(f"{record_type.dir}/index.html")
        for key in site.corpus.records:
            if (
                key in site.pages
                and page_path(key) in pages
                and (self._names_unparsed(key) or not self.reuse.shows_the_same(key))
            ):
                self.record_page.write(key)
                written.append(page_path(key))
        for key in sorted(site.unparsed):  # a record that stopped parsing: its error where its page was
            if page_path(key) in pages:
                self.unparsed_page.write(key)
                written.append(page_path(key))
        return written


def pagefind_command(site: Path, output: Path) -> list[str]:
    """Pagefind indexing the pages of `site` into the directory `output`."""
    return [sys.executable, "-m", "pagefind", "--site", str(site), "--output-path", str(output)]


def run_pagefind(out: Path) -> str | None:
    """Index the built pages for search; returns a warning text when it cannot."""
    try:
        with waiting("Indexing pages for search"):
            proc = subprocess.run(
                pagefind_command(out, out / SEARCH_DIR),
                capture_output=True,
                text=True,
                timeout=600,
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"search index not built: {exc}"
    if proc.returncode != 0:
        return "search index not built: " + (proc.stderr.strip().splitlines() or ["pagefind failed"])[-1]
    return None


def build_site(
    corpus: Corpus, out: Path, search: bool = True, keep_search: bool = False, first: set[str] | None = None
) -> tuple[int, str | None]:
    """Write the site into `out` whole (a staging directory swapped in), return (pages, warning).
    OutputError when `out` is a place kb must not replace (see publish.check_output); ThemeError (one)
    when the theme cannot make it. The warning names the theme files left out and a search index not built.
    keep_search (without search) carries the previous site's search index over, for `kb serve` to replace
    once it has indexed the new pages. `first` (kb serve's quick pass) only renders those pages again where
    they changed and replaces each in the published site; the rest waits for the whole build that follows."""
    resolved = out.resolve()
    resolved.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(resolved):
        if first is not None:
            patched = _patch(corpus, resolved, first)
            if patched is not None:
                return patched, None
        with replaced_whole(out, corpus.settings) as staging:
            builder = SiteBuilder(corpus, staging, previous=resolved if resolved.is_dir() else None)
            count = builder.build()
            warnings = list(builder.theme.problems)
            if search:
                warnings.append(run_pagefind(staging) or "")
            elif keep_search and (resolved / SEARCH_DIR).is_dir():
                shutil.copytree(resolved / SEARCH_DIR, staging / SEARCH_DIR, copy_function=link_or_copy)
    return count, "; ".join(w for w in warnings if w) or None


def _patch(corpus: Corpus, out: Path, pages: set[str]) -> int | None:
    """The pages named, rendered again where they changed and each put in place of its published file whole
    (a rename); every other file and both manifests as they were, so the next whole build still renders
    what else changed, these pages too. Only files kb's site manifest lists are replaced. None when there
    is no site kb built here to patch."""
    listed = read_manifest(out)
    if listed is None:
        return None
    staging = new_staging(out)
    try:
        written = SiteBuilder(corpus, staging, previous=out).patch({p for p in pages if p in listed})
        for rel in written:
            os.replace(staging / rel, out / rel)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return len(written)
