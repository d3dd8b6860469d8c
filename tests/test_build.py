"""kb build without a browser: refusal on errors, --force, atomic output."""

import shutil

from conftest import KB_SCRIPT, REPO


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
