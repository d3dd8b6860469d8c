"""Serving a built site on localhost and driving Debian's Chromium with Playwright; a few pages rendered as kb
build renders them, for a test that reads those pages of a copied repository (test_site builds a whole site)."""

from __future__ import annotations

import functools
import http.server
import os
import signal
import socketserver
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import KB_SCRIPT, REPO, signals_at_default

sys.path.insert(0, str(REPO / "benchmarks"))
from serve import Served  # noqa: E402  (the benchmark's driver of kb serve)

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("KB_TEST_ARTIFACTS", Path(__file__).resolve().parent.parent / "test-artifacts"))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output readable
        pass


@contextmanager
def serve(directory: Path):
    handler = functools.partial(_Quiet, directory=str(directory))

    class Server(socketserver.ThreadingTCPServer):
        allow_reuse_address = True
        daemon_threads = True

    with Server(("127.0.0.1", 0), handler) as httpd:
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}/"
        finally:
            httpd.shutdown()


@contextmanager
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-quic",
            ],
        )
        try:
            yield instance
        finally:
            instance.close()


class PageWatch:
    """A page that records console errors, page errors, failed requests and dialogs."""

    def __init__(self, context):
        self.page = context.new_page()
        self.problems: list[str] = []
        self.dialogs: list[str] = []
        self.page.on(
            "console", lambda m: self.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None
        )
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        # a request the next navigation cancels (a late favicon) is not a fault of the page
        self.page.on(
            "requestfailed",
            lambda r: (
                None
                if "ERR_ABORTED" in (r.failure or "")
                else self.problems.append(f"request failed: {r.url} {r.failure}")
            ),
        )
        self.page.on(
            "response", lambda r: self.problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None
        )
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))


def new_kb(tmp_path: Path) -> Path:
    """A knowledge base as `kb init` makes one (the minimal starter), at tmp_path/kb."""
    root = tmp_path / "kb"
    made = subprocess.run([KB_SCRIPT, "init", str(root)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    return root


class Server(Served):
    """`kb serve --port 0 [more]` as a user starts it, in the knowledge base's directory."""

    def __init__(self, root: Path, *more: str):
        command = [KB_SCRIPT, "serve", "--port", "0", *more]
        super().__init__(command, cwd=root, patience=180, preexec_fn=signals_at_default(signal.SIGINT))  # for stop()
        self.url = self.wait_for(r"at (http://127\.0\.0\.1:\d+/)").group(1)


def serving(tmp_path: Path):
    """(root, Server): kb serve running in a fresh `kb init` knowledge base, stopped after the test. A test
    module's `served` fixture yields from it."""
    root = new_kb(tmp_path)
    server = Server(root)
    try:
        yield root, server
    finally:
        if server.proc.poll() is None:
            server.stop()


def rendered(corpus, out: Path, keys) -> Path:
    """The pages of these records (None: the home page; "dir/index.html": a type's index) as kb build renders
    them, its builder over `corpus`, with the theme's static files, into the new directory `out`: not the
    other 750 pages of a copied repository."""
    from kbtools.site.build import SiteBuilder
    from kbtools.site.context import page_path

    out.mkdir()
    builder = SiteBuilder(corpus, out)
    builder.theme.copy_static(out)
    wanted = {key if isinstance(key, str) and key.endswith(".html") else page_path(key) for key in keys}
    assert sorted(builder.patch(wanted)) == sorted(wanted)
    return out


def rendered_from(root: Path, out: Path, keys) -> Path:
    """rendered() over the run kb build makes in the knowledge base at `root`, which must check clean."""
    from kbtools.check.pipeline import checked_corpus
    from kbtools.corpus import Settings

    with checked_corpus(Settings.configured(root), use_cache=True, complete=True) as corpus:
        assert corpus.errors == [], corpus.errors[:3]
        return rendered(corpus, out, keys)
