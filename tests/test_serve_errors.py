"""Issue 29: what `kb serve` (and `kb check`, `kb build --force`) do when a record stops parsing, when the
port is taken, when the server is stopped mid-build, and how the summary line counts.

- A record whose file does not parse keeps its page, which shows the error where the record was, and the
  record again once the file is fixed; the open page reloads itself both times (a real browser).
- A page kb serve does not have (a 404) carries the reload script, so it shows the page once a build makes it.
- The findings that follow from a record that did not parse (references, links and inline values naming
  it) are printed under their cause, which comes first: in kb serve's terminal, in kb check's text report and
  on the pages; JSON, SARIF and GitHub annotations still list every finding.
- SIGTERM during a build, or while the search index is built, removes the staging directories and exits 0.
- "1 record", "1 error", "1 warning".

No test waits for a duration: each waits for something the server prints, the browser shows or a process
is seen to do.
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest
from conftest import KB_SCRIPT, run_kb, signals_at_default
from site_support import PageWatch, Served, browser, new_kb, serving


@pytest.fixture
def served(tmp_path):
    yield from serving(tmp_path)


DATASHEET = "records/sources/example-datasheet.md"
DATASHEET_NAME = "name: Example Corp card datasheet (an example)"
BROKEN_NAME = 'name: "Example Corp card datasheet (an example)'  # a quote never closed: KB104
CAUSE_SAYS = "(and 3 errors that follow from it: references to sources/example-datasheet, which did not parse)"


def break_datasheet(root: Path) -> str:
    """The datasheet's frontmatter made invalid YAML; its text before, to put back."""
    path = root / DATASHEET
    text = path.read_text()
    assert DATASHEET_NAME in text
    path.write_text(text.replace(DATASHEET_NAME, BROKEN_NAME))
    return text


def open_page(watch: PageWatch, url: str):
    """Open `url` and return its response once its reload script has its version and waits for the next (its
    second question names the version it has): from then on, a new build reloads the page."""
    with watch.page.expect_request(lambda r: "/__kb/version" in r.url and "seen=" in r.url, timeout=30_000):
        response = watch.page.goto(url)
    return response


# ---------------------------------------------------------------- a record that does not parse, in the browser
@pytest.mark.browser
def test_a_record_that_stops_parsing_keeps_its_page_showing_the_error_and_shows_the_record_once_fixed(served):
    root, server = served
    with browser() as chromium:
        watch = PageWatch(chromium.new_context())
        open_page(watch, server.url + "sources/example-datasheet.html")
        assert watch.page.locator("h1").first.inner_text() == "Example Corp card datasheet (an example)"

        seen = len(server.lines)
        text = break_datasheet(root)
        # the page reloads by itself and shows the parse error (file, line, column, message) where the record was
        watch.page.wait_for_selector("text=This record did not parse", timeout=30_000)
        server.wait_for(r"^checked 1 record: 4 errors, 1 warning$", after=seen)  # the whole report is in
        cause = server.wait_for(
            r"^(records/sources/example-datasheet\.md:\d+:\d+): error KB104 invalid YAML", after=seen
        )
        shown = watch.page.locator(".kb-cause").inner_text()
        assert shown.startswith(f"{cause.group(1)}: error KB104 invalid YAML: "), shown
        # ... and what follows from it, each finding linking to its record's page
        assert watch.page.locator(".kb-follows summary").inner_text() == CAUSE_SAYS
        hrefs = watch.page.eval_on_selector_all(".kb-follows li a", "els => els.map(e => e.getAttribute('href'))")
        assert hrefs == ["../devices/example-card.html"] * 3

        # the terminal: the cause first, saying what follows from it, and those findings indented under it
        start = next(n for n in range(seen, len(server.lines)) if " KB104 " in server.lines[n])
        assert server.lines[start].endswith(CAUSE_SAYS), server.lines[start]
        under = server.lines[start + 1 : start + 4]
        assert [line.split()[2] for line in under] == ["KB300", "KB300", "KB302"], under
        assert all(line.startswith("  records/devices/example-card.md:") for line in under), under
        assert server.lines[start + 4].startswith("records/devices/example-card.md:2:1: warning KB306")
        assert server.lines[start + 5] == "checked 1 record: 4 errors, 1 warning"

        # the page of a record with such a finding names the record that did not parse
        card = chromium.new_context().new_page()
        card.goto(server.url + "devices/example-card.html")
        assert card.locator(".follows a").first.get_attribute("href") == "../sources/example-datasheet.html"

        (root / DATASHEET).write_text(text)  # fixed: the record again, without a reload by hand
        watch.page.wait_for_selector("h1:has-text('Example Corp card datasheet (an example)')", timeout=30_000)
        assert not watch.problems, watch.problems  # never a 404, never a failed request
    assert server.stop() == 0


@pytest.mark.browser
def test_a_page_not_built_yet_is_a_404_that_reloads_itself_once_a_build_makes_it(served):
    root, server = served
    with browser() as chromium:
        watch = PageWatch(chromium.new_context())
        response = open_page(watch, server.url + "devices/second-card.html")
        assert response is not None and response.status == 404
        assert watch.page.locator('script[src="/__kb/reload.js"]').count() == 1

        card = (root / "records" / "devices" / "example-card.md").read_text()
        (root / "records" / "devices" / "second-card.md").write_text(
            card.replace("id: example-card", "id: second-card").replace(
                "name: Example Corp card (an example)", "name: Second card"
            )
        )
        watch.page.wait_for_selector("h1:has-text('Second card')", timeout=30_000)  # reloaded by itself
        assert [p for p in watch.problems if "404" not in p] == [], watch.problems  # but the 404s, two or more
    assert server.stop() == 0


# ---------------------------------------------------------------- the same, without a browser
def test_kb_check_prints_the_cause_first_with_what_follows_from_it_and_every_format_keeps_every_finding(tmp_path):
    root = new_kb(tmp_path)
    break_datasheet(root)
    text = run_kb("--root", str(root), "check")
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert re.fullmatch(
        r"records/sources/example-datasheet\.md:\d+:\d+: error KB104 invalid YAML: .*" + re.escape(f" {CAUSE_SAYS}"),
        lines[0],
    ), lines[0]
    assert lines[1:4] == [
        "  records/devices/example-card.md:8:11: error KB300 sources[]: no record 'example-datasheet'",
        "  records/devices/example-card.md:13:3: error KB300 power.source: no record 'example-datasheet'",
        "  records/devices/example-card.md:21:41: error KB302 dangling link [[example-datasheet]]: no record "
        "'example-datasheet'",
    ]
    assert lines[4].startswith("records/devices/example-card.md:2:1: warning KB306 orphan")
    assert lines[5:] == ["checked 1 record: 4 errors, 1 warning"]
    assert run_kb("--root", str(root), "check").stdout == text.stdout  # the memo's answer is worded alike

    payload = json.loads(run_kb("--root", str(root), "check", "--format", "json").stdout)
    found = payload["diagnostics"]
    assert sorted(d["code"] for d in found) == ["KB104", "KB300", "KB300", "KB302", "KB306"]  # every one
    cause = next(d for d in found if d["code"] == "KB104")
    position = {k: cause[k] for k in ("path", "line", "column", "code")}
    assert [d.get("caused_by") for d in found if d["code"] in ("KB300", "KB302")] == [position] * 3
    assert [d for d in found if d["code"] in ("KB104", "KB306") and "caused_by" in d] == []

    sarif = json.loads(run_kb("--root", str(root), "check", "--format", "sarif").stdout)
    assert len(sarif["runs"][0]["results"]) == 5
    github = run_kb("--root", str(root), "check", "--format", "github").stdout.splitlines()
    assert len([line for line in github if line.startswith("::")]) == 5
    assert github[-1] == "checked 1 record: 4 errors, 1 warning"


def test_kb_build_force_keeps_the_page_of_a_record_that_did_not_parse(tmp_path):
    root = new_kb(tmp_path)
    break_datasheet(root)
    built = run_kb("--root", str(root), "build", "--force", "--no-search")
    assert built.returncode == 0, built.stderr
    page = (root / "site" / "_build" / "sources" / "example-datasheet.html").read_text()
    assert "This record did not parse" in page
    assert re.search(r"<code>records/sources/example-datasheet\.md:\d+:\d+</code>: error KB104 invalid YAML", page)
    assert CAUSE_SAYS in page
    card = (root / "site" / "_build" / "devices" / "example-card.html").read_text()
    assert card.count('follows from <a href="../sources/example-datasheet.html">') == 3

    (root / DATASHEET).write_text((root / DATASHEET).read_text().replace(BROKEN_NAME, DATASHEET_NAME))
    assert run_kb("--root", str(root), "build", "--no-search").returncode == 0
    page = (root / "site" / "_build" / "sources" / "example-datasheet.html").read_text()
    assert "did not parse" not in page and "<h1>Example Corp card datasheet (an example)</h1>" in page
    assert "follows from" not in (root / "site" / "_build" / "devices" / "example-card.html").read_text()


# ---------------------------------------------------------------- the summary line
def test_the_summary_line_says_one_record_one_error_one_warning(tmp_path):
    root = new_kb(tmp_path)
    card = root / "records" / "devices" / "example-card.md"
    card.write_text(card.read_text().replace("value: 350 W", "value: 400 W"))  # rack_power no longer follows
    assert run_kb("--root", str(root), "check").stdout.splitlines()[-1] == "checked 2 records: 1 error, 0 warnings"
    (root / "records" / "sources" / "example-datasheet.md").unlink()
    card.write_text(card.read_text().replace("value: 400 W", "value: 350 W"))
    found = run_kb("--root", str(root), "check").stdout.splitlines()
    assert found[-1] == "checked 1 record: 3 errors, 1 warning", found
    github = run_kb("--root", str(root), "check", "--format", "github").stdout.splitlines()
    assert github[-1] == "checked 1 record: 3 errors, 1 warning"


# ---------------------------------------------------------------- stopping
def staging(root: Path) -> list[Path]:
    """kb's staging directories beside the site (site/._build.kb-staging-*)."""
    try:
        return sorted(p for p in (root / "site").iterdir() if p.name.startswith("._build.kb-staging-"))
    except FileNotFoundError:
        return []


def stopped(pid: int) -> bool:
    """The process is stopped (SIGSTOP has taken effect): its state in /proc is T."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] in "Tt"


def test_sigterm_during_a_build_removes_its_staging_directories_and_exits_cleanly(tmp_path):
    """SIGTERM is sent while kb serve builds pages: the server is frozen (SIGSTOP) when a staging directory is
    seen, and the directory is still there while it is frozen, so the signal lands mid-build."""
    root = new_kb(tmp_path)
    card = root / "records" / "devices" / "example-card.md"
    original = card.read_text()
    command = [KB_SCRIPT, "serve", "--port", "0", "--no-search"]
    server = Served(command, cwd=root, patience=180, preexec_fn=signals_at_default(signal.SIGTERM))
    pid = server.proc.pid
    try:
        caught = False
        for attempt in range(500):  # each attempt one build: the first, then one per save
            seen = len(server.lines)
            if attempt:
                card.write_text(original + f"\nSaved {attempt} times.\n")
            while not caught and server.proc.poll() is None:
                if staging(root):
                    os.kill(pid, signal.SIGSTOP)
                    while not stopped(pid):
                        pass
                    caught = bool(staging(root))  # frozen with a staging directory: it is building
                    if not caught:
                        os.kill(pid, signal.SIGCONT)
                elif any(re.search(r"^rendered \d+ of \d+ record page", line) for line in server.lines[seen:]):
                    break  # this build finished unseen: the next save starts another
            if caught or server.proc.poll() is not None:
                break
        assert caught, "\n".join(server.lines)
        os.kill(pid, signal.SIGTERM)
        os.kill(pid, signal.SIGCONT)
        code = server.proc.wait(timeout=60)
    finally:
        if server.proc.poll() is None:
            os.kill(pid, signal.SIGCONT)
            server.proc.kill()
            server.proc.wait()
    assert code == 0, "\n".join(server.lines)  # not -15: the signal stopped it as Ctrl-C does
    assert staging(root) == []
    server.wait_for(r"^kb serve: stopped$", timeout=30)  # the reader has every line the process printed
    assert not any("Traceback" in line for line in server.lines), "\n".join(server.lines)


FAKE_PAGEFIND = """\
import os, signal, sys
from pathlib import Path

out = Path(sys.argv[sys.argv.index("--output-path") + 1])
out.mkdir(parents=True)
(out / "pid").write_text(str(os.getpid()))
signal.pause()  # indexes forever: until kb serve stops it
"""


def test_sigterm_while_the_search_index_is_built_removes_its_staging_and_stops_pagefind(tmp_path, monkeypatch):
    """A pagefind that never finishes (put first on PYTHONPATH, so `python -m pagefind` runs it): the search
    index's staging directory exists for as long as the test wants."""
    fake = tmp_path / "fake" / "pagefind"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text(FAKE_PAGEFIND)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(fake.parent), os.environ.get("PYTHONPATH")])))
    root = new_kb(tmp_path)
    server = Served(
        [KB_SCRIPT, "serve", "--port", "0"], cwd=root, patience=180, preexec_fn=signals_at_default(signal.SIGTERM)
    )
    indexer = None
    try:
        server.wait_for(r"at (http://127\.0\.0\.1:\d+/)")
        while indexer is None and server.proc.poll() is None:  # until pagefind runs, in its staging directory
            found = [p / "pagefind" / "pid" for p in staging(root) if (p / "pagefind" / "pid").is_file()]
            indexer = int(found[0].read_text()) if found and found[0].read_text() else None
        assert indexer is not None, "\n".join(server.lines)
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(timeout=60)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
        if indexer is not None and Path(f"/proc/{indexer}").exists():
            os.kill(indexer, signal.SIGKILL)  # what a server killed by the signal left running
            pytest.fail("pagefind was left running")
    assert code == 0, "\n".join(server.lines)
    assert staging(root) == []
    server.wait_for(r"^kb serve: stopped$", timeout=30)
