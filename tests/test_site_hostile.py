"""Hostile records: nothing a record says can become script on the site (checked in Chromium)."""

from __future__ import annotations

import html.parser
import re
import shutil
import subprocess

import pytest
from conftest import KB_SCRIPT, REPO
from site_support import PageWatch, browser, serve

KB = KB_SCRIPT
EVIL_NAME = "</script><script>window.__pwned='name'</script>\u202egnp.exe"
BODY = """
<script>window.__pwned = 'script'</script>
<img src=x onerror="window.__pwned='img'">
<svg onload="window.__pwned='svg'"><script>window.__pwned='svg-script'</script></svg>
<math><mtext><table><mglyph><style><img src=x onerror="window.__pwned='mathml'"></style></mglyph></table></mtext></math>
[click](javascript:window.__pwned='link') [click2](JaVaScRiPt:window.__pwned='link2')
[tab](java&#09;script:window.__pwned='entity') [data](data:text/html,<script>window.__pwned='data'</script>)
![img](javascript:window.__pwned='image') <a href="javascript:window.__pwned='raw-a'">raw</a>
[[src-a|<img src=x onerror="window.__pwned='label'">]] [[engines/e#"><script>window.__pwned='anchor'</script>]]
{{ </script><script>window.__pwned='value'</script> }}
<iframe src="javascript:window.__pwned='iframe'"></iframe>
"""


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    shutil.copytree(REPO / "schema", root / "schema")

    def record(rel, text):
        path = root / "records" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    quoted = EVIL_NAME.replace('"', '\\"')
    record(
        "sources/src-a.md",
        f'---\nid: src-a\ntype: source\nname: "{quoted}"\nstatus: draft\nconfidence: 0.5\n'
        f'updated: 2026-11-29\nkind: docs\npublisher: "<b onmouseover=alert(1)>x</b>"\nurl: "javascript:window.__pwned=\'url\'"\n---\n'
        f"Cited by [[engines/e]].\n",
    )
    record(
        "engines/e.md",
        f'---\nid: e\ntype: engine\nname: "{quoted}"\nstatus: contested\nconfidence: 0.5\nupdated: 2026-11-29\n'
        f"sources: [src-a]\nkind: serving-engine\nlicense: \"<script>window.__pwned='field'</script>\"\n"
        f"features: [\"</script><script>window.__pwned='list'</script>\"]\n---\n{BODY}",
    )
    record(
        "flops/f.md",
        f'---\nid: f\ntype: flop\nname: "{quoted}"\nstatus: draft\nconfidence: 0.5\nupdated: 2026-11-29\n'
        f"sources: [src-a]\nclass: kv_transfer\nbound_by: memory\nengines: [e]\ninputs:\n  tokens: 100 token\n"
        f"costs:\n  twice:\n    label: \"</script><script>window.__pwned='calc'</script>\"\n    formula: tokens * 2\n    unit: token\n---\n"
        f"{{{{ twice }}}} and [[engines/e]].\n",
    )
    out = root / "out"
    proc = subprocess.run(
        [KB, "--root", str(root), "build", "--force", "--out", str(out)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


class Audit(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.problems = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"<{tag} {name}>")
            if (
                name in ("href", "src", "action", "formaction", "xlink:href")
                and value
                and value.replace("\t", "")
                .replace("\n", "")
                .strip()
                .lower()
                .startswith(("javascript:", "data:", "vbscript:"))
            ):
                self.problems.append(f"<{tag} {name}={value}>")
        if tag == "script":
            attrs = dict(attrs)
            if not (
                attrs.get("type") == "application/json"
                or re.fullmatch(r"(\./|\.\./)*static/[a-z]+\.js", attrs.get("src") or "")
            ):
                self.problems.append(f"<script {attrs}>")
        if tag in ("iframe", "object", "embed", "base", "form") and tag != "form":
            self.problems.append(f"<{tag}>")


def test_built_pages_contain_no_executable_markup(hostile_site):
    for page in hostile_site.rglob("*.html"):
        if "pagefind" in page.parts:
            continue
        audit = Audit()
        audit.feed(page.read_text(encoding="utf-8"))
        assert audit.problems == [], page


def test_csp_is_restrictive(hostile_site):
    text = (hostile_site / "engines" / "e.html").read_text()
    assert "script-src 'self' 'wasm-unsafe-eval'" in text and "object-src 'none'" in text and "base-uri 'none'" in text
    assert "unsafe-inline" not in text


@pytest.mark.browser
def test_nothing_runs_in_the_browser(hostile_site):
    with serve(hostile_site) as url, browser() as chromium:
        context = chromium.new_context()
        watch = PageWatch(context)
        for rel in [
            "engines/e.html",
            "flops/f.html",
            "sources/src-a.html",
            "index.html",
            "engines/index.html",
            "graph.html",
        ]:
            watch.page.goto(url + rel, wait_until="networkidle")
            # every element gets the events a user's pointer and keyboard would send it, so a handler
            # smuggled into any attribute would run now
            watch.page.evaluate(
                """() => { for (const el of document.querySelectorAll('*')) {
                    for (const kind of ['pointerover', 'mouseover', 'mouseenter', 'mousemove', 'focus', 'focusin'])
                        el.dispatchEvent(new Event(kind, {bubbles: kind !== 'mouseenter' && kind !== 'focus'}));
                } }"""
            )
            assert watch.page.evaluate("window.__pwned") is None, rel
        assert watch.dialogs == []
        # the hostile name is shown as text, not markup
        watch.page.goto(url + "engines/e.html")
        assert "</script><script>" in watch.page.locator("h1").inner_text()
        context.close()
