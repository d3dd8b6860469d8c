"""`kb serve` as a user meets it, timed in a real browser (Debian's chromium, driven by Playwright).

Start: from launching `kb serve` to the moment it says it serves (the site is built and the port answers),
with kb's store warm from the rows before and no site built yet.
Save: the open record page of the first accelerator; a save changes its first figure (as run.py's edit_one
does) and adds a sentence to its body; the time runs from the write until the browser, reloaded by kb's
script, shows the sentence. Before each save the server is let finish its search index, as it would between
a user's edits, so each save is timed from a quiet server.
"""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"


class Served:
    """A running `kb serve` (the command given, on port 0), with what it prints collected as it prints it.
    The benchmark and tests/test_serve.py both drive it."""

    def __init__(
        self,
        command: list[str],
        cwd: Path | None = None,
        patience: float = 900,
        preexec_fn: Callable[[], None] | None = None,
    ):
        self.patience = patience  # seconds wait_for waits by default
        self.proc = subprocess.Popen(  # preexec_fn: the tests start it with the signals they send at their default
            command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=preexec_fn
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float | None = None, after: int = 0) -> re.Match:
        """The first line after the `after`-th that matches; RuntimeError, with what it printed, when none
        comes before the server exits or `timeout` seconds pass."""
        deadline = time.monotonic() + (self.patience if timeout is None else timeout)
        while time.monotonic() < deadline:
            for line in self.lines[after:]:
                found = re.search(pattern, line)
                if found:
                    return found
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"kb serve never printed {pattern!r}; it printed:\n" + "\n".join(self.lines))

    def peak_mib(self) -> float:
        """The server's peak resident set so far (VmHWM)."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0.0
        found = re.search(r"VmHWM:\s+(\d+) kB", status)
        return int(found.group(1)) / 1024 if found else 0.0

    def stop(self) -> int:
        """Ctrl-C, as a user stops it; its exit code."""
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=60)


def time_serve(kb: str, root: Path, saves: int, edited: Callable[[Path, int], str]) -> tuple[float, list[float], float]:
    """(seconds to start, seconds per save until the page shows it, peak MiB of the server); `edited` gives
    the record's text with its i-th figure edit."""
    from playwright.sync_api import sync_playwright

    path = sorted((root / "records" / "accelerators").glob("*.md"))[0]
    started = time.perf_counter()
    server = Served([kb, "--root", str(root), "serve", "--port", "0"])
    try:
        url = server.wait_for(r"at (http://127\.0\.0\.1:\d+/)").group(1)
        start = time.perf_counter() - started
        times = []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM)
            page = browser.new_page()
            page.goto(f"{url}accelerators/{path.stem}.html")
            for i in range(saves):
                server.wait_for(rf"search index updated \(version {i + 1}\)")
                marker = f"Served edit number {i}."
                text = edited(path, i).rstrip("\n") + f"\n\n{marker}\n"
                began = time.perf_counter()
                path.write_text(text)  # one write, as an editor saves
                page.wait_for_selector(f"text={marker}", timeout=300_000)
                times.append(time.perf_counter() - began)
            browser.close()
        return start, times, server.peak_mib()
    finally:
        if server.proc.poll() is None:
            server.stop()
