"""`kb serve` keeps the checked corpus in memory and refreshes it after each save (kbtools.check.run.live): what it
reports and the site it builds must be what a cold run gives, after any edit."""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest
from test_incremental import add_chain, edit, generate

from kbtools.check.pipeline import check_corpus, checked, start_run
from kbtools.check.run.live import LiveCorpus
from kbtools.corpus import Corpus, Settings
from kbtools.site.build import build_site
from kbtools.site.reuse import MANIFEST


def findings(corpus: Corpus) -> list[tuple]:
    return sorted((d.path, d.line, d.column, d.code, d.message) for d in corpus.diagnostics)


def published(
    corpus: Corpus, out: Path, first: set[str] | None = None, live: LiveCorpus | None = None
) -> dict[str, bytes]:
    """Build the site (kb build --force --no-search) and read it back, but for the page-reuse manifest (its
    fingerprints are empty without a cache). With `first`, as kb serve does with pages open in a browser:
    those pages, then the whole site."""
    try:
        if first:
            build_site(corpus, out, search=False, first=first)
            assert all((out / page).is_file() for page in first if page.endswith(".html"))
        build_site(corpus, out, search=False)
    finally:
        if live is not None:
            live.close()
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != MANIFEST}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [7, 8])
def test_a_corpus_refreshed_after_each_edit_reports_and_builds_what_a_cold_run_does(tmp_path, seed):
    root, site, cold_site = tmp_path / "kb", tmp_path / "site", tmp_path / "cold"
    generate(root, 50, seed=seed, defects=0.1)
    add_chain(root)
    live = LiveCorpus(Settings(root=root))
    published(live.refresh(), site)
    rng = random.Random(seed)
    scoped = 0
    for step in range(14):
        what = edit(root, rng)
        corpus = live.refresh()
        scoped += live.last_was_scoped
        cold = check_corpus(Settings(root=root), use_cache=False)
        assert findings(corpus) == findings(cold), f"step {step}: {what}"
        shown = rng.sample(sorted(f"{key}.html" for key in corpus.records), 2) + ["index.html"]
        served = published(corpus, site, first=set(shown) if step % 2 else None)
        shutil.rmtree(cold_site, ignore_errors=True)
        built = published(cold, cold_site)
        assert served.keys() == built.keys(), f"step {step}: {what}"
        assert [page for page in built if served[page] != built[page]] == [], f"step {step}: {what}"
    assert scoped >= 5  # most edits were merged into the corpus held, not checked whole


def test_a_store_another_kb_wrote_meanwhile_costs_a_whole_run_never_a_stale_page(tmp_path):
    """An edit checked by `kb check` in a terminal before the server saw it: the store no longer describes
    the corpus the server holds, so the server checks whole rather than keep the record's old values."""
    root = tmp_path / "kb"
    generate(root, 40, seed=3, defects=0.0)
    add_chain(root)
    live = LiveCorpus(Settings(root=root))
    held = live.refresh()
    figure = re.compile(r"(?m)^(\w+: )(\d+(?:\.\d+)?) (GB/s|TFLOP/s)$")
    path = next(p for p in sorted((root / "records").rglob("*.md")) if figure.search(p.read_text()))
    path.write_text(figure.sub(lambda m: f"{m[1]}{float(m[2]) * 2:g} {m[3]}", path.read_text(), count=1))
    other = start_run(Settings(root=root), use_cache=True, complete=False, scoped=True)  # the terminal's kb check
    checked(other)
    other.close()
    corpus = live.refresh()
    assert not live.last_was_scoped
    cold = check_corpus(Settings(root=root), use_cache=False)
    assert findings(corpus) == findings(cold)
    key = next(k for k, r in corpus.records.items() if r.path == path.relative_to(root).as_posix())
    assert corpus.records[key].digest == cold.records[key].digest
    assert corpus.values(key).fields.keys() == cold.values(key).fields.keys()
    assert corpus.values(key).fields != held.values(key).fields  # the edit changed a figure it computes
    assert [str(v.quantity) for v in corpus.values(key).fields.values()] == [
        str(v.quantity) for v in cold.values(key).fields.values()
    ]


def test_the_pages_open_in_a_browser_are_rendered_first_and_the_rest_by_the_whole_build_after(tmp_path):
    """kb serve's quick pass renders the open page; a page that only links to the edited record keeps its
    previous file until the whole build that follows, which renders it."""
    root, site = tmp_path / "kb", tmp_path / "site"
    generate(root, 40, seed=6, defects=0.0)
    live = LiveCorpus(Settings(root=root))
    corpus = live.refresh()
    published(corpus, site)
    target = sorted((root / "records" / "accelerators").glob("*.md"))[0]
    key = f"accelerators/{target.stem}"
    linking = sorted({s for s, t, _, _ in corpus.edges if t == key and s != key and s in corpus.records})
    assert linking
    neighbour = site / f"{linking[0]}.html"
    target.write_text(re.sub(r"(?m)^name: (.*)$", r"name: \1 Renamed", target.read_text(), count=1))
    corpus = live.refresh()
    try:
        build_site(corpus, site, search=False, first={f"{key}.html"})
        assert " Renamed" in (site / f"{key}.html").read_text()
        assert " Renamed" not in neighbour.read_text()  # carried over as it was
        build_site(corpus, site, search=False)
    finally:
        live.close()
    assert " Renamed" in neighbour.read_text()


def test_a_refresh_whose_store_fails_part_way_is_a_whole_run_that_keeps_every_value(tmp_path):
    """A scoped refresh that finds a stored row it cannot read starts over as a whole run. That run is still the
    complete one kb serve asked for: every record's values, as a cold run computes them."""
    import sqlite3

    from conftest import kb_store

    root = tmp_path / "kb"
    generate(root, 40, seed=9, defects=0.0)
    add_chain(root)
    live = LiveCorpus(Settings(root=root))
    live.refresh()
    live.close()
    path = sorted((root / "records" / "accelerators").glob("*.md"))[0]
    path.write_text(re.sub(r"(?m)^name: (.*)$", r"name: \1 Renamed", path.read_text(), count=1))
    database = sqlite3.connect(kb_store(root))
    database.execute("UPDATE ids SET digest = 'forged'")  # a stored record the scoped run reads fails to match
    database.commit()
    database.close()
    corpus = live.refresh()
    live.close()
    assert not live.last_was_scoped
    cold = check_corpus(Settings(root=root), use_cache=False)
    assert findings(corpus) == findings(cold)
    assert set(corpus.computed) == set(cold.computed) and len(corpus.computed) > 1
