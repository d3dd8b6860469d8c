"""Record bodies to safe HTML, with the same markdown-it parser `kb check` used.

Raw HTML is off, every text is escaped by markdown-it, and links are limited to
http(s), mailto and relative URLs, so nothing a record says can become script.
Wikilinks become links to record pages; inline values {{ ... }} become the figure
`kb check` computed, with its derivation in a title and an expandable note.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

from kbtools.index import CorpusIndex
from kbtools.lang.markdown import new_parser, slugify, too_large


def safe_url(url: str) -> bool:
    """Only web, mail and relative links: no javascript:, data:, vbscript:, file: and the like."""
    cleaned = re.sub(r"[\x00-\x20\x7f]+", "", html.unescape(url)).lower()
    scheme = re.match(r"^([a-z][a-z0-9+.-]*):", cleaned)
    return scheme is None or scheme.group(1) in ("http", "https", "mailto")


_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*")


def value_anchor(name: str) -> str:
    """The id of a value's row on its record page ('' for a computed expression, which has none)."""
    match = _IDENTIFIER.match(name)
    return f"v-{match.group(0)}" if match and match.end() == len(name.split("[")[0]) else ""


class BodyRenderer:
    def __init__(self, corpus: Any, index: CorpusIndex, href: Callable[[str, str], str]):
        self.corpus = corpus
        self.index = index  # the corpus's one index (SiteContext), shared with its links and calculators
        self.href = href  # (from_key, to_key) -> relative URL
        self.md = new_parser()
        self.md.validateLink = safe_url  # type: ignore[method-assign]  # markdown-it's documented way to vet URLs
        # markdown-it binds rules to its renderer: plain functions that close over self
        self.md.add_render_rule(
            "wikilink", lambda _r, tokens, idx, options, env: self._wikilink(tokens, idx, options, env)
        )
        self.md.add_render_rule(
            "kb_value", lambda _r, tokens, idx, options, env: self._value(tokens, idx, options, env)
        )
        self.md.add_render_rule(
            "link_open", lambda _r, tokens, idx, options, env: self._link_open(tokens, idx, options, env)
        )

    def render(self, key: str) -> str:
        record = self.corpus.records[key]
        if too_large(record.body):  # reported by kb check (KB114/KB115); shown as text, never parsed
            return f'<pre class="kb-unparsed">{html.escape(record.body)}</pre>'
        env = {"key": key, "inline": list(self.corpus.values(key).inline), "next": 0}
        return self.md.render(record.body, env)

    def _wikilink(self, tokens, idx, options, env) -> str:
        meta = tokens[idx].meta
        target, _ = self.index.resolve(meta["target"])
        name = target.data.get("name") if target is not None else None
        label = html.escape(str(meta["label"] or (name if isinstance(name, str) else meta["target"])))
        href = self.href(env["key"], target.key) if target is not None else ""
        if not href:
            return f'<span class="broken-link" title="no such record">{label}</span>'
        anchor = f"#{heading_id(meta['anchor'])}" if meta["anchor"] else ""
        kind = target.type or "" if target is not None else ""
        return (
            f'<a class="wikilink type-{html.escape(kind)}" href="{html.escape(href + anchor, quote=True)}">{label}</a>'
        )

    def _value(self, tokens, idx, options, env) -> str:
        inline = env["inline"]
        found = inline[env["next"]] if env["next"] < len(inline) else None
        env["next"] += 1
        source = html.escape(tokens[idx].content.strip())
        if found is None or found.rendered is None:
            return f'<span class="kb-value kb-value-error" title="not computed: see kb check">{{{{ {source} }}}}</span>'
        from kbtools.check.compute import substituted

        value = found.value
        why = f"{value.formula.text} = {substituted(value)}" if value.computed else f"stated in {value.record}"
        anchor = value_anchor(value.name)
        link = self.href(env["key"], value.record) + (f"#{anchor}" if anchor else "")
        return (
            f'<span class="kb-value" tabindex="0" title="{html.escape(why)}">{html.escape(found.rendered)}'
            f'<span class="kb-value-why"><code>{html.escape(source)}</code> {html.escape(why)} '
            f'(<a href="{html.escape(link)}">why</a>)</span></span>'
        )

    def _link_open(self, tokens, idx, options, env) -> str:
        token = tokens[idx]
        href = token.attrGet("href") or ""
        if href.startswith(("http:", "https:")):
            token.attrSet("rel", "noopener noreferrer nofollow")
        return self.md.renderer.renderToken(tokens, idx, options, env)  # type: ignore[attr-defined]


def heading_id(text: str) -> str:
    """The id a heading of a record's body has on its page (record_page.body_sections), and so the fragment a
    [[record#heading]] link goes to: the heading's GitHub-style slug (kbtools.lang.markdown.slugify, which an
    anchor is checked against, KB305) after "s-", so that no heading takes the id of one of the page's own parts or
    a figure's "v-" row. A slug's slug is itself, so the link's anchor and the heading's text give the same id."""
    return "s-" + slugify(text)
