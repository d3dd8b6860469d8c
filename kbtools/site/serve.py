"""`kb serve`: the site on 127.0.0.1, rebuilt when a record, schema, theme file or the configuration
changes, and the open page reloaded.

A build here is `kb build --force` (errors are shown on the pages they concern, and printed in the
terminal, each finding that follows from a record that did not parse under that record's error) and
incremental: the process keeps the checked corpus (kbtools.check.run.live), a save re-checks
the files it changed and what they can change, and only the pages whose inputs changed are rendered. The
search index is rebuilt beside the server once the pages are out (SearchIndex). Files are watched
with watchfiles (the operating system's change notifications). A page learns of a new build from a script
the server adds to every HTML page it sends, by asking /__kb/version, which answers as soon as the version
changes (a long poll): the pages on disk are exactly what `kb build` writes. An error page the server
makes itself (a 404 for a page not built yet, or no longer) carries the same script, so it too shows the
page once a build makes it.

The port is taken before anything is checked or built: one in use is a one-line refusal at once. A
SIGTERM (or SIGHUP), like Ctrl-C, stops the server the way it stops a build: what the build was staging is removed
before the process exits (site/._build.kb-staging-*), and the exit is clean.

The server holds drafts, so it answers only requests addressed to it: a Host header naming this
machine by a loopback name or an IP address, at the port it listens on. A web page that points its own
name at 127.0.0.1 (DNS rebinding) sends its own name and is refused, as webpack's and Vite's
development servers refuse it. A malformed request gets a 400 (a path that is not UTF-8, `/%ff` or an
overlong `/..%c0%af..`, among them), a path no file can have (a name over NAME_MAX, a path over PATH_MAX) a
404, and a client that hangs up mid-answer is ignored: the terminal shows builds and diagnostics, never a
traceback, and file names as text (an escape sequence in one is shown, not sent). Listening beyond this
machine (`--host 0.0.0.0`) is allowed, with a warning that the drafts are then served to the network.
"""

from __future__ import annotations

import errno
import functools
import http.server
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from pathlib import Path

from kbtools.corpus import Settings
from kbtools.diagnostics import one_line
from kbtools.outputs.report import counted
from kbtools.signals import stop_signals_raise

RELOAD_SCRIPT = """// added by kb serve: reload this page when the site is rebuilt
(function () {
  let seen = null;
  async function poll() {
    try {
      // the server answers when the version is not `seen` any more, or after a while with the same one
      const asked = "?page=" + encodeURIComponent(location.pathname) + (seen === null ? "" : "&seen=" + seen);
      const response = await fetch("/__kb/version" + asked, {cache: "no-store"});
      const {version} = await response.json();
      if (seen !== null && version !== seen) { location.reload(); return; }
      seen = version;
      setTimeout(poll, 0);
    } catch (e) { setTimeout(poll, 1000); }  // the server is restarting or gone: ask again
  }
  poll();
})();
"""
WAIT_FOR_VERSION = 25.0  # seconds a page's question waits for a new version before it is answered as it is
OPEN_FOR = 2 * WAIT_FOR_VERSION  # a page that asked within this many seconds is open in a browser
RELOAD_WAIT = 3.0  # seconds the whole build waits for the open pages to reload after the quick pass
FOLLOWING_SHOWN = 5  # findings shown under their cause in the terminal (kb check lists them all)
RELOAD_TAG = '<script src="/__kb/reload.js" defer></script>'
# the server's own error pages (a 404 above all): with the reload script, so a page that is not there yet
# shows itself once a build makes it
ERROR_PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>%(code)d %(message)s · kb serve</title>
{RELOAD_TAG}
</head>
<body>
<h1>%(code)d %(message)s</h1>
<p>%(explain)s</p>
<p>kb serve reloads this page when it rebuilds the site.</p>
</body>
</html>
"""


class Site:
    """The built site and its version: what the handler serves and the watcher replaces. The checked corpus
    stays in memory between builds (kbtools.check.run.live), so a save re-checks what it can change and
    re-renders the pages that show it; the search index follows in the background (SearchIndex)."""

    def __init__(self, settings: Settings, out: Path, search: bool, report: Callable[[str], None]):
        from kbtools.check.run.live import LiveCorpus

        self.settings, self.out, self.search, self.report = settings, out, search, report
        self.live = LiveCorpus(settings)
        self.version = 0
        self.lock = threading.Lock()
        self.published = threading.Condition()  # notified when a new version is out
        # page path -> when a browser showing it last asked for the version, and which version it had
        self.asked: dict[str, tuple[float, int]] = {}

    def rebuild(self) -> bool:
        """Check and build; True when a new site was published."""
        from kbtools.diagnostics import Diagnostic
        from kbtools.outputs.report import format_text, summarize
        from kbtools.outputs.targets import OutputError
        from kbtools.site.build import build_site

        with self.lock:
            corpus = self.live.refresh()
            shown = sorted(corpus.diagnostics, key=Diagnostic.sort_key)
            summary = summarize(shown, len(corpus.records))
            self.report(format_text(shown, summary, shown=FOLLOWING_SHOWN).rstrip("\n"))
            before = self.record_pages(corpus.records)
            open_pages = self.open_pages() if self.version else set()
            reloaded: dict[str, bytes | None] | None = None  # the open pages as the quick pass left them
            try:
                if open_pages:  # Hugo's fast render: the pages a browser shows first, then the whole site
                    build_site(corpus, self.out, search=False, keep_search=self.search, first=open_pages)
                    reloaded = self.page_files(open_pages)
                    self.publish()
                    self.wait_for_reloads(open_pages)
                pages, warning = build_site(corpus, self.out, search=False, keep_search=self.search)
            except OutputError as exc:
                self.report(f"kb serve: {one_line(str(exc))}")
                return False
            finally:
                self.live.close()  # the store is read again at the next save, by then maybe by another kb
            if warning:
                self.report(f"kb serve: warning: {warning}")
            # an open page the quick pass could not render (a record that came, went or stopped parsing) is
            # made or removed by the whole build: the browser is told again, and reloads it
            if reloaded is None or self.page_files(open_pages) != reloaded:
                self.publish()
            rendered = rendered_since(before, self.record_pages(corpus.records))
            self.report(f"rendered {rendered:,} of {counted(pages, 'record page')} (version {self.version})")
            return True

    def record_pages(self, keys: Iterable[str]) -> tuple[dict[str, str], set[str]]:
        """Of the published site: the reuse manifest (record page -> the fingerprint of what it shows, noted by
        the build that wrote it: kbtools.site.reuse) and which of these records' pages the site lists."""
        from kbtools.outputs.publish import read_manifest
        from kbtools.site.context import page_path
        from kbtools.site.reuse import MANIFEST

        try:
            prints = json.loads((self.out / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            prints = {}
        listed = read_manifest(self.out) or set()
        return prints if isinstance(prints, dict) else {}, {page for page in map(page_path, keys) if page in listed}

    def page_files(self, pages: set[str]) -> dict[str, bytes | None]:
        """The published files of these pages (None: no such page)."""
        found: dict[str, bytes | None] = {}
        for page in pages:
            try:
                found[page] = (self.out / page).read_bytes()
            except OSError:
                found[page] = None
        return found

    def publish(self) -> None:
        with self.published:
            self.version += 1
            self.published.notify_all()

    def opened(self, url_path: str) -> None:
        """A browser showing the page at `url_path` asked for the version (it has the present one)."""
        page = urllib.parse.unquote(url_path).lstrip("/")
        if not page or page.endswith("/"):
            page += "index.html"
        if page.endswith(".html") and ".." not in page.split("/") and len(self.asked) < 10_000:
            with self.published:
                self.asked[page] = (time.monotonic(), self.version)
                self.published.notify_all()

    def open_pages(self) -> set[str]:
        """The site's pages open in a browser now (each asks again within WAIT_FOR_VERSION)."""
        now = time.monotonic()
        with self.published:
            for page, (when, _) in list(self.asked.items()):
                if now - when > OPEN_FOR:
                    del self.asked[page]
            return set(self.asked)

    def wait_for_reloads(self, pages: set[str]) -> None:
        """Until every page in `pages` has loaded the present version (its script asks again once loaded),
        or RELOAD_WAIT: the whole build that follows would take the cores and the interpreter from the
        server while the browser loads the page."""
        with self.published:
            self.published.wait_for(
                lambda: all(self.asked.get(page, (0.0, -1))[1] >= self.version for page in pages), timeout=RELOAD_WAIT
            )

    def version_after(self, seen: int | None) -> int:
        """The site's version, once it is not `seen` (or after WAIT_FOR_VERSION): a page learns of a new
        build as soon as it is out, not at its next poll."""
        with self.published:
            if seen is not None:
                self.published.wait_for(lambda: self.version != seen, timeout=WAIT_FOR_VERSION)
            return self.version

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
    error_message_format = ERROR_PAGE  # send_error's page: a 404 reloads itself too

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
        try:  # every name in the site is UTF-8: bytes that are not (%ff, an overlong %c0%af) name no page
            local = urllib.parse.unquote_to_bytes(self.path.split("?", 1)[0].split("#", 1)[0]).decode("utf-8")
        except UnicodeDecodeError:
            self._refuse(400, "the path is not UTF-8 text, so it names no page")
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
        path, _, query = self.path.partition("?")
        if path == "/__kb/version":
            asked = urllib.parse.parse_qs(query)
            self.site.opened(asked.get("page", [""])[0])
            seen = asked.get("seen", [""])[0]
            version = self.site.version_after(int(seen) if seen.isdigit() and len(seen) < 12 else None)
            self._send(json.dumps({"version": version}).encode(), "application/json")
        elif path == "/__kb/reload.js":
            self._send(RELOAD_SCRIPT.encode(), "text/javascript")
        elif path.endswith((".html", "/")) and self._page(path):
            return
        else:
            super().do_GET()

    def _page(self, path: str) -> bool:
        """Send the page at `path` with the reload script; False when there is none to send (the base class
        then answers, with a 404 for a name no file can have: over NAME_MAX or PATH_MAX)."""
        local = Path(self.translate_path(path))
        try:
            if local.is_dir():
                local = local / "index.html"
            html = local.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        tag = RELOAD_TAG
        html = html.replace("</head>", f"{tag}\n</head>", 1) if "</head>" in html else tag + html
        self._send(html.encode(), "text/html; charset=utf-8")
        return True

    def list_directory(self, path):
        """No listing of a directory without an index.html: a 404, which reloads itself (a listing is a page
        kb did not write, and could carry no reload script)."""
        self.send_error(404, "No page here", "The site has no page at this address (yet).")
        return None

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


def port_in_use(port: int) -> str:
    return f"port {port} is in use (another kb serve?); pass --port with another, or --port 0 for a free one"


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
    """The server, listening. OSError when it cannot listen; a port in use says so, and what to do, in its
    strerror (kb's CLI prints "kb serve: cannot listen on HOST:PORT: " and it)."""
    handler = type("SiteHandler", (Handler,), {"site": site})
    try:
        server = DevServer((host, port), functools.partial(handler, directory=str(out)))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise OSError(exc.errno, port_in_use(port)) from None
        raise
    server.names = frozenset({"localhost", host.strip("[]").lower()})
    return server


def network_exposure(server: DevServer) -> str | None:
    """What a user should know when the server listens beyond this machine (--host 0.0.0.0, or a name or
    address of a network interface): the site, drafts included, is open to the network. None on loopback."""
    address, port = str(server.server_address[0]), server.server_address[1]
    try:
        bound = ipaddress.ip_address(address)
    except ValueError:  # not an address the socket reports for AF_INET: said as listening beyond loopback
        bound = None
    if bound is not None and bound.is_loopback:
        return None
    where = "every network interface" if bound is not None and bound.is_unspecified else "a network interface"
    return (
        f"listening on {address} ({where}): anyone who can reach this machine on port {port} can read the site, "
        "drafts included; --host 127.0.0.1 (the default) serves this machine only"
    )


def rendered_since(before: tuple[dict[str, str], set[str]], after: tuple[dict[str, str], set[str]]) -> int:
    """How many record pages a build rendered, from the site before it and after it (Site.record_pages): a
    build reuses a page (kbtools.site.reuse) only where the page was there and its fingerprint is the one
    the manifest held, and notes the fingerprint; a page with none is rendered every time. So each page now
    that was not there, has no fingerprint now, or another one than before, was rendered (once, however often
    a quick pass for an open page rendered it first)."""
    (old_prints, old_pages), (prints, pages) = before, after
    return sum(
        1
        for page in pages
        if page not in old_pages or prints.get(page) is None or prints.get(page) != old_prints.get(page)
    )


class SearchIndex:
    """Pagefind over the published site, in its own process beside the server: a page shows an edit as soon
    as its pages are built, and the search index (pagefind reads every page, seconds at 10,000 records)
    follows. A save while it runs stops it, and the next build starts it again. The new index replaces the
    old one under the build lock, so a `kb build` into the same directory never sees half of it."""

    def __init__(self, out: Path, report: Callable[[str], None]):
        self.out, self.report = out.resolve(), report
        self.proc: subprocess.Popen | None = None
        self.staging: Path | None = None
        self.version = 0

    def start(self, version: int) -> None:
        from kbtools.outputs.publish import SEARCH_DIR, new_staging
        from kbtools.site.build import pagefind_command

        self.cancel()
        self.staging, self.version = new_staging(self.out), version
        try:
            self.proc = subprocess.Popen(
                pagefind_command(self.out, self.staging / SEARCH_DIR),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,  # `python -m pagefind` runs the pagefind binary as its child: stopped as a group
            )
        except OSError as exc:
            self.report(f"kb serve: warning: search index not built: {exc}")
            self._clear()

    def cancel(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the wrapper and the binary that holds its stderr open
            except OSError:
                self.proc.kill()
            self.proc.communicate()
        self._clear()

    def poll(self) -> None:
        """When pagefind has finished: its index in place of the old one, or a warning."""
        from kbtools.outputs.publish import SEARCH_DIR, replace_part
        from kbtools.outputs.targets import build_lock

        if self.proc is None or self.proc.poll() is None or self.staging is None:
            return
        _, errors = self.proc.communicate()
        if self.proc.returncode != 0:
            last = (errors.strip().splitlines() or ["pagefind failed"])[-1]
            self.report(f"kb serve: warning: search index not built: {one_line(last)}")
        else:
            with build_lock(self.out):
                replace_part(self.out, SEARCH_DIR, self.staging / SEARCH_DIR)
            self.report(f"search index updated (version {self.version})")
        self._clear()

    def _clear(self) -> None:
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
        self.proc, self.staging = None, None


def serve(settings: Settings, out: Path, host: str, port: int, search: bool = True) -> None:
    from watchfiles import watch

    from kbtools.outputs.publish import remove_own_staging

    def report(text: str) -> None:
        print(text, flush=True)

    site = Site(settings, out, search, report)
    index = SearchIndex(out, report)
    server = make_server(site, out, host, port)  # first: a port in use is said before any work
    exposed = network_exposure(server)
    if exposed:
        print(f"kb serve: warning: {exposed}", file=sys.stderr, flush=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    stop = threading.Event()
    try:
        with stop_signals_raise(ignored_too=True, end_as_signalled=False) as stops:  # a stop is how a server ends
            try:
                if site.rebuild() and search:
                    index.start(site.version)
                thread.start()
                serving = f"serving {out} at http://{host}:{server.server_address[1]}/ (Ctrl-C stops)"
                for changes in watch(
                    *site.watched(), stop_event=stop, debounce=300, step=50, rust_timeout=200, yield_on_timeout=True
                ):
                    if serving:  # said once the watcher watches (its first yield): a save after this line is seen
                        print(serving, flush=True)
                        serving = ""
                    index.poll()
                    touched = sorted({Path(p) for _, p in changes if site.changed(Path(p))})
                    if touched:
                        index.cancel()
                        shown = one_line(", ".join(str(p.relative_to(settings.root)) for p in touched[:3]))
                        report(f"changed: {shown}{' …' if len(touched) > 3 else ''}; rebuilding")
                        try:
                            if site.rebuild() and search:
                                index.start(site.version)
                        except Exception as exc:  # a bad edit must not stop the server: say so, serve the last site
                            report(
                                f"kb serve: the rebuild failed ({type(exc).__name__}: {one_line(str(exc))}); serving the last site"
                            )
            except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP (kbtools.signals): what was being built is unwound
                pass
            finally:
                stops.ignore()  # a second Ctrl-C must not cut the cleaning up short; it takes a moment
                stop.set()
                index.cancel()
                if thread.is_alive():
                    server.shutdown()
                server.server_close()
                remove_own_staging()  # what a build stopped midway could not remove itself
    finally:  # the handlers there were are back
        print("kb serve: stopped", file=sys.stderr, flush=True)
