"""`kb serve`: the site on 127.0.0.1, rebuilt when a record, schema, theme file or the configuration
changes, and the open page reloaded.

A build here is `kb build --force` (errors are shown on the pages they concern, and printed in the
terminal) and incremental: a warm check and only the pages whose inputs changed. Files are watched
with watchfiles (the operating system's change notifications). A page learns of a new build by asking
/__kb/version once a second, from a script the server adds to every HTML page it sends: the pages
on disk are exactly what `kb build` writes.

The server holds drafts, so it answers only requests addressed to it: a Host header naming this
machine by a loopback name or an IP address, at the port it listens on. A web page that points its own
name at 127.0.0.1 (DNS rebinding) sends its own name and is refused, as webpack's and Vite's
development servers refuse it. A malformed request gets a 400 and a client that hangs up mid-answer is
ignored: the terminal shows builds and diagnostics, never a traceback.
"""

from __future__ import annotations

import functools
import http.server
import ipaddress
import json
import os
import sys
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from kbtools.corpus import Settings
from kbtools.diagnostics import one_line

RELOAD_SCRIPT = """// added by kb serve: reload this page when the site is rebuilt
(function () {
  let seen = null;
  async function poll() {
    try {
      const response = await fetch("/__kb/version", {cache: "no-store"});
      const {version} = await response.json();
      if (seen !== null && version !== seen) { location.reload(); return; }
      seen = version;
    } catch (e) { /* the server is rebuilding or gone: ask again */ }
    setTimeout(poll, 1000);
  }
  poll();
})();
"""


class Site:
    """The built site and its version: what the handler serves and the watcher replaces."""

    def __init__(self, settings: Settings, out: Path, search: bool, report: Callable[[str], None]):
        self.settings, self.out, self.search, self.report = settings, out, search, report
        self.version = 0
        self.lock = threading.Lock()

    def rebuild(self) -> None:
        from kbtools.check.pipeline import check_corpus
        from kbtools.diagnostics import Diagnostic
        from kbtools.outputs.report import format_text, summarize
        from kbtools.outputs.targets import OutputError
        from kbtools.site.build import build_site

        with self.lock:
            corpus = check_corpus(self.settings, use_cache=True, complete=True)
            shown = sorted(corpus.diagnostics, key=Diagnostic.sort_key)
            self.report(format_text(shown, summarize(shown, len(corpus.records))).rstrip("\n"))
            try:
                pages, warning = build_site(corpus, self.out, search=self.search)
            except OutputError as exc:
                self.report(f"kb serve: {exc}")
                return
            if warning:
                self.report(f"kb serve: warning: {warning}")
            self.version += 1
            self.report(f"built {pages} record pages (version {self.version})")

    def watched(self) -> list[Path]:
        from kbtools.config import FILES

        site = self.settings.site_path
        paths = [self.settings.records_path, self.settings.schema_path, site / "templates", site / "static"]
        paths += [self.settings.root / name for name in FILES]
        # a theme directory that is a link is no theme directory (kbtools.site.theme refuses it): watching it
        # would watch wherever it points, a committed `site/static -> /` the whole disk
        return [p for p in paths if p.exists() and not (p.parent == site and p.is_symlink())]

    def changed(self, path: Path) -> bool:
        """A change that can alter the site: not a hidden file or folder (an editor's temporary, kb's own
        staging), and not the site being written."""
        try:
            rel = path.relative_to(self.settings.root)
        except ValueError:
            return False
        if any(part.startswith((".", "#")) or part.endswith("~") for part in rel.parts):
            return False
        if self.out == path or self.out in path.parents:
            return False
        # what kb reads, by where it lies (an editor's or sed's temporary has another name)
        if self.settings.records_path in path.parents:
            return path.suffix == ".md"
        if self.settings.schema_path in path.parents:
            return path.suffix == ".json"
        return bool(path.suffix)


class DevServer(http.server.ThreadingHTTPServer):
    """The HTTP server, with the names it answers to, and quiet about clients that go away."""

    daemon_threads = True
    names: frozenset[str] = frozenset()

    def handle_error(self, request, client_address) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):  # a closed tab or a reload mid-answer: nothing went wrong here
            return
        print(
            f"kb serve: a request failed: {type(error).__name__}: {one_line(str(error))}", file=sys.stderr, flush=True
        )


class Handler(http.server.SimpleHTTPRequestHandler):
    site: Site
    server: DevServer

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base class's name)
        pass  # the terminal shows builds and diagnostics, not every request

    def parse_request(self) -> bool:
        """The base class's parsing, then the checks every request passes before anything is read for it."""
        if not super().parse_request():
            return False
        refusal = self._host_refusal()
        if refusal:
            self._refuse(403, refusal)
            return False
        local = urllib.parse.unquote(self.path.split("?", 1)[0].split("#", 1)[0], errors="surrogatepass")
        try:
            os.fsencode(local)
        except UnicodeEncodeError:
            self._refuse(400, "the path is not a file name")
            return False
        if "\0" in local:
            self._refuse(400, "the path holds a NUL byte")
            return False
        return True

    def _host_refusal(self) -> str | None:
        """Why the Host header does not name this server, or None when it does."""
        given = self.headers.get("Host", "")
        port = self.server.server_address[1]
        asked = _host_and_port(given)
        if asked is None:
            return f"kb serve answers only requests for this machine (open the address kb serve printed); the Host header was {one_line(repr(given))}"
        name, asked_port = asked
        if asked_port != port or not (name in self.server.names or _ip_address(name)):
            return f"kb serve does not answer for {one_line(given)}: open the address kb serve printed"
        return None

    def _refuse(self, status: int, text: str) -> None:
        body = f"{text}\n".encode()
        self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (the base class's name)
        path = self.path.split("?", 1)[0]
        if path == "/__kb/version":
            self._send(json.dumps({"version": self.site.version}).encode(), "application/json")
        elif path == "/__kb/reload.js":
            self._send(RELOAD_SCRIPT.encode(), "text/javascript")
        elif path.endswith((".html", "/")) and self._page(path):
            return
        else:
            super().do_GET()

    def _page(self, path: str) -> bool:
        local = Path(self.translate_path(path))
        if local.is_dir():
            local = local / "index.html"
        try:
            html = local.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        tag = '<script src="/__kb/reload.js" defer></script>'
        html = html.replace("</head>", f"{tag}\n</head>", 1) if "</head>" in html else tag + html
        self._send(html.encode(), "text/html; charset=utf-8")
        return True

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


def _host_and_port(header: str) -> tuple[str, int] | None:
    """A Host header's name (lower case, no brackets) and port (80 when it gives none); None when it is no
    plain host[:port]."""
    try:
        parts = urllib.parse.urlsplit(f"//{header}")
        port = 80 if parts.port is None else parts.port
    except ValueError:  # a port that is no number, or out of range
        return None
    if not parts.hostname or parts.netloc != header or parts.username is not None:
        return None
    return parts.hostname, port


def _ip_address(name: str) -> bool:
    """An address, not a name: DNS rebinding needs a name, so an address in the Host header is safe."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def make_server(site: Site, out: Path, host: str, port: int) -> DevServer:
    handler = type("SiteHandler", (Handler,), {"site": site})
    server = DevServer((host, port), functools.partial(handler, directory=str(out)))
    server.names = frozenset({"localhost", host.strip("[]").lower()})
    return server


def serve(settings: Settings, out: Path, host: str, port: int, search: bool = True) -> None:
    from watchfiles import watch

    def report(text: str) -> None:
        print(text, flush=True)

    site = Site(settings, out, search, report)
    site.rebuild()
    server = make_server(site, out, host, port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print(f"serving {out} at http://{host}:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
    stop = threading.Event()
    try:
        for changes in watch(*site.watched(), stop_event=stop, debounce=300, step=100):
            touched = sorted({Path(p) for _, p in changes if site.changed(Path(p))})
            if touched:
                shown = ", ".join(str(p.relative_to(settings.root)) for p in touched[:3])
                report(f"changed: {shown}{' …' if len(touched) > 3 else ''}; rebuilding")
                try:
                    site.rebuild()
                except Exception as exc:  # a bad edit must not stop the server: say so, serve the last site
                    report(f"kb serve: the rebuild failed ({type(exc).__name__}: {exc}); serving the last site")
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        server.shutdown()
        print("kb serve: stopped", file=sys.stderr, flush=True)
