"""kb build without a browser: refusal on errors, --force, atomic output."""

import re

import pytest
from conftest import KB_SCRIPT, REPO


def test_refuses_a_corpus_with_errors(kb):
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[nowhere]]\n")
    result = kb.run("build", "--no-search")
    assert result.exit_code == 1
    assert "records/engines/e.md:11:1: error KB302" in result.out
    assert "refusing to build" in result.err
    assert not (kb.root / "site" / "_build").exists()


def test_force_builds_and_shows_errors_on_their_page(kb):
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[nowhere]] and [[src-a]]\n")
    result = kb.run("build", "--no-search", "--force")
    assert result.exit_code == 0, result.err
    page = (kb.root / "site" / "_build" / "engines" / "e.html").read_text()
    assert "kb check found problems in this record" in page and "KB302 dangling link [[nowhere]]" in page
    assert 'class="broken-link"' in page


def test_rebuild_replaces_the_output_whole(kb):
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n")
    out = kb.root / "out"
    assert kb.run("build", "--no-search", "--out", str(out)).exit_code == 0
    (kb.root / "records/engines/e.md").unlink()
    (kb.root / "records/sources/src-a.md").write_text((kb.root / "records/sources/src-a.md").read_text())
    assert kb.run("build", "--no-search", "--out", str(out)).exit_code == 0
    assert not (out / "engines" / "e.html").exists()
    assert (out / "sources" / "src-a.html").exists()
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".out")] == []


def test_a_knowledge_base_without_a_theme_builds_with_the_packaged_one(kb):
    """No site/ at all: kb's own theme (templates and static files) makes the site."""
    kb.source()
    assert not (kb.root / "site").exists()
    result = kb.run("build", "--no-search")
    assert result.exit_code == 0, result.err
    out = kb.root / "site" / "_build"
    home = (out / "index.html").read_text()
    assert "<title>Knowledge base</title>" in home and "1 record<" in home
    assert (out / "static" / "style.css").read_text() == (
        REPO / "kbtools" / "theme" / "static" / "style.css"
    ).read_text()
    assert 'href="https://example.org/src-a"' in (out / "sources" / "src-a.html").read_text()


def test_a_repositorys_theme_files_override_the_packaged_ones_one_by_one(kb):
    """site/templates/home.html and site/static/style.css replace the packaged files of those names; every
    other template and static file still comes from kb; a new static file is added; the title is the
    configuration's."""
    kb.source()
    kb.write("kb.toml", 'title = "Facilities KB"\n')
    kb.write(
        "site/templates/home.html",
        '{% extends "base.html" %}{% block content %}<h1 id="mine">Ours: {{ total }}</h1>{% endblock %}\n',
    )
    kb.write("site/static/style.css", "body { color: rebeccapurple; }\n")
    kb.write("site/static/extra.js", "// added\n")
    result = kb.run("build", "--no-search")
    assert result.exit_code == 0, result.err
    out = kb.root / "site" / "_build"
    home = (out / "index.html").read_text()
    assert '<h1 id="mine">Ours: 1</h1>' in home  # the override
    assert "<title>Facilities KB</title>" in home and 'class="site-header"' in home  # the packaged base.html
    record = (out / "sources" / "src-a.html").read_text()
    assert "Facilities KB" in record and 'class="site-header"' in record  # the packaged record.html
    assert (out / "static" / "style.css").read_text() == "body { color: rebeccapurple; }\n"
    assert (out / "static" / "extra.js").read_text() == "// added\n"
    assert (out / "static" / "app.js").read_text() == (REPO / "kbtools" / "theme" / "static" / "app.js").read_text()
    # an override edited later re-renders the pages (the theme's fingerprint covers the files used)
    kb.write(
        "site/templates/home.html",
        '{% extends "base.html" %}{% block content %}<h1 id="mine">Changed</h1>{% endblock %}\n',
    )
    assert kb.run("build", "--no-search").exit_code == 0
    assert '<h1 id="mine">Changed</h1>' in (out / "index.html").read_text()


@pytest.mark.slow
def test_a_killed_build_leaves_the_previous_site_intact(kb, tmp_path):
    """The site is built in a staging directory and swapped in whole: killing kb mid-build loses nothing."""
    import signal
    import subprocess
    import sys
    import time

    sys.path.insert(0, str(REPO / "benchmarks"))
    from generate import generate

    root = tmp_path / "big"
    generate(root, 600, seed=3)
    kb_script = KB_SCRIPT
    out = root / "site" / "_build"
    first = subprocess.run([kb_script, "--root", str(root), "build", "--no-search"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*.html")}
    (root / "records" / "sources" / "source-000001.md").write_text(
        (root / "records" / "sources" / "source-000001.md").read_text().replace("Publisher", "Changed publisher")
    )
    proc = subprocess.Popen(
        [kb_script, "--root", str(root), "build", "--no-search"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(200):  # kill it once it is writing pages into its staging directory
        time.sleep(0.02)
        if any(p.is_dir() for p in out.parent.glob("._build.kb-*")):
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*.html")}
    assert after == before
    again = subprocess.run([kb_script, "--root", str(root), "build", "--no-search"], capture_output=True, text=True)
    assert again.returncode == 0
    assert not list(out.parent.glob("._build.kb-*"))
    assert "Changed publisher" in (out / "sources" / "source-000001.html").read_text()


def test_a_link_to_a_heading_lands_on_it(kb):
    """[[record#heading]] goes to that heading on the record's page: the link's fragment is the id the heading is
    given (the fragment was the bare slug, and no heading had an id)."""
    kb.source()
    kb.record(
        "engines", "a", "engine", "kind: serving-engine\n", body="[[src-a]] [[b]]\n\n## Which wins: the hit\n\nText.\n"
    )
    kb.record("engines", "b", "engine", "kind: serving-engine\n", body="See [[a#which-wins-the-hit]] and [[src-a]].\n")
    assert kb.check("--strict").exit_code == 0  # the heading exists (KB305 would say otherwise)
    assert kb.run("build", "--no-search").exit_code == 0
    site = kb.root / "site" / "_build" / "engines"
    href = re.search(r'<a class="wikilink[^"]*" href="a\.html#([^"]+)"', (site / "b.html").read_text())
    assert href, (site / "b.html").read_text()
    assert f'id="{href.group(1)}">Which wins: the hit<' in (site / "a.html").read_text()
