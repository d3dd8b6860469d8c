"""`kb serve` in a real browser: edit a record, see the open page change; search works; errors show."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import KB_SCRIPT
from site_support import PageWatch, Server, browser, serving


@pytest.fixture
def served(tmp_path):
    yield from serving(tmp_path)


@pytest.mark.browser
def test_an_edited_record_changes_the_open_page(served):
    root, server = served
    card = root / "records" / "devices" / "example-card.md"
    with browser() as chromium:
        watch = PageWatch(chromium.new_context())
        watch.page.goto(server.url + "devices/example-card.html")
        assert watch.page.locator("h1").first.inner_text().startswith("Example Corp card (an example)")

        seen = len(server.lines)
        card.write_text(card.read_text().replace("name: Example Corp card (an example)", "name: Renamed card"))
        server.wait_for(r"rendered \d+ of \d+ record pages? \(version 2\)", after=seen)
        watch.page.wait_for_selector("h1:has-text('Renamed card')", timeout=30_000)  # reloaded by itself

        # an error: printed in the terminal, and shown on the page it concerns
        seen = len(server.lines)
        card.write_text(card.read_text().replace("value: 350 W", "value: 400 W"))
        server.wait_for(r"records/devices/example-card\.md:15:1: error KB500 rack_power", after=seen)
        watch.page.wait_for_selector("text=kb check found problems in this record", timeout=30_000)

        # search: the index follows the pages, built beside the server, and is served
        server.wait_for(r"search index updated \(version 3\)", after=seen)
        watch.page.goto(server.url + "index.html")
        watch.page.fill("form.search input", "Renamed card")
        watch.page.wait_for_selector("form.search .search-results a", timeout=30_000)
        hrefs = watch.page.eval_on_selector_all(
            "form.search .search-results a", "els => els.map(e => e.getAttribute('href'))"
        )
        assert any("devices/example-card" in h for h in hrefs), hrefs
        assert not watch.problems, watch.problems
    assert server.stop() == 0


@pytest.mark.slow
def test_serve_listens_on_loopback_only_and_refuses_a_protected_output(tmp_path):
    root = tmp_path / "kb"
    assert subprocess.run([KB_SCRIPT, "init", str(root)], capture_output=True).returncode == 0
    refused = subprocess.run([KB_SCRIPT, "serve", "--out", "records"], cwd=root, capture_output=True, text=True)
    assert refused.returncode == 2 and "the records" in refused.stderr
    server = Server(root)
    try:
        assert server.url.startswith("http://127.0.0.1:")
    finally:
        assert server.stop() == 0


def test_a_port_in_use_is_refused_before_any_check_or_build(tmp_path):
    import socket

    root = tmp_path / "kb"
    assert subprocess.run([KB_SCRIPT, "init", str(root)], capture_output=True).returncode == 0
    shutil.rmtree(root / "site" / "_build", ignore_errors=True)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        refused = subprocess.run([KB_SCRIPT, "serve", "--port", port], cwd=root, capture_output=True, text=True)
    assert refused.returncode == 2
    # one line that says what is wrong and what to do
    assert refused.stderr.splitlines() == [
        f"kb serve: cannot listen on 127.0.0.1:{port}: port {port} is in use (another kb serve?); "
        "pass --port with another, or --port 0 for a free one"
    ], refused.stderr
    assert "checked" not in refused.stdout and not (root / "site" / "_build").exists()  # bound first
