"""kb build without a browser: refusal on errors, --force, atomic output."""
import shutil

from conftest import REPO


def theme(kb):
    shutil.copytree(REPO / "site" / "templates", kb.root / "site" / "templates")
    shutil.copytree(REPO / "site" / "static", kb.root / "site" / "static")


def test_refuses_a_corpus_with_errors(kb):
    theme(kb)
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[nowhere]]\n")
    result = kb.run("build", "--no-search")
    assert result.exit_code == 1
    assert "records/engines/e.md:11:1: error KB302" in result.out
    assert "refusing to build" in result.err
    assert not (kb.root / "site" / "_build").exists()


def test_force_builds_and_shows_errors_on_their_page(kb):
    theme(kb)
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[nowhere]] and [[src-a]]\n")
    result = kb.run("build", "--no-search", "--force")
    assert result.exit_code == 0, result.err
    page = (kb.root / "site" / "_build" / "engines" / "e.html").read_text()
    assert "kb check found problems in this record" in page and "KB302 dangling link [[nowhere]]" in page
    assert 'class="broken-link"' in page


def test_rebuild_replaces_the_output_whole(kb):
    theme(kb)
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


def test_missing_theme_is_a_usage_error(kb):
    kb.source()
    result = kb.run("build", "--no-search")
    assert result.exit_code == 2
    assert "site/templates" in result.err
