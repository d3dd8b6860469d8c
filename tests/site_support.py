"""Serving a built site on localhost and driving Debian's Chromium with Playwright."""

from __future__ import annotations

import functools
import http.server
import os
import socketserver
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

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
