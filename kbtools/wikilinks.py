"""Finding [[wikilinks]] in record bodies with markdown-it-py.

A markdown-it inline rule recognises `[[target]]`, `[[target|label]]` and
`[[target#heading]]`, so text in code spans, code blocks and HTML is never a link:
the parser, not a regular expression, decides what is prose. The same parser
(`markdown()`) renders bodies for the site, so check and site agree on every link.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

MAX_TARGET = 300


@dataclass(frozen=True, slots=True)
class WikiLink:
    target: str  # 'dir/id' or 'id'
    anchor: str | None
    label: str | None
    line: int  # 0-based line within the body
    column: int  # 1-based column within that line, best effort

    @property
    def text(self) -> str:
        inner = self.target + (f"#{self.anchor}" if self.anchor else "") + (f"|{self.label}" if self.label else "")
        return f"[[{inner}]]"


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not src.startswith("[[", pos):
        return False
    end = src.find("]]", pos + 2)
    if end < 0:
        return False
    inner = src[pos + 2:end]
    if not inner.strip() or "\n" in inner or "[" in inner or len(inner) > MAX_TARGET:
        return False
    if not silent:
        target, _, label = inner.partition("|")
        target, _, anchor = target.partition("#")
        token = state.push("wikilink", "", 0)
        token.meta = {"target": target.strip(), "anchor": anchor.strip() or None,
                      "label": label.strip() or None, "offset": pos}
        token.content = inner
    state.pos = end + 2
    return True


def _inline_value_rule(state: StateInline, silent: bool) -> bool:
    """{{ expression | unit }}: a computed figure quoted in prose (checked, rendered by the site)."""
    src, pos = state.src, state.pos
    if not src.startswith("{{", pos):
        return False
    end = src.find("}}", pos + 2)
    if end < 0 or "\n" in src[pos:end] or end - pos > MAX_TARGET:
        return False
    if not silent:
        token = state.push("kb_value", "", 0)
        token.content = src[pos + 2:end]
    state.pos = end + 2
    return True


def new_parser() -> MarkdownIt:
    """CommonMark with tables, raw HTML off, the wikilink rule and inline values."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.inline.ruler.before("link", "kb_value", _inline_value_rule)
    return md


markdown = lru_cache(maxsize=1)(new_parser)  # the shared parser `kb check` uses


@dataclass(frozen=True, slots=True)
class InlineSpan:
    content: str  # between {{ and }}
    line: int  # 0-based line within the body
    column: int


@dataclass(frozen=True, slots=True)
class BodyScan:
    """What a body links to and quotes, found in one parse."""

    links: tuple[WikiLink, ...]
    values: tuple[InlineSpan, ...]


_SCANS: dict[str, BodyScan] = {}  # body text -> its scan (filled from the cache too)


def remember_scan(body: str, scan: BodyScan) -> None:
    _SCANS[body] = scan


def scan_body(body: str) -> BodyScan:
    """Wikilinks and inline values outside code, with 0-based body lines (one parse per body)."""
    known = _SCANS.get(body)
    if known is None:
        known = _SCANS[body] = _scan(body)
    return known


def _scan(body: str) -> BodyScan:
    if "[[" not in body and "{{" not in body:
        return BodyScan((), ())  # nothing to find: skip the parse
    tokens = markdown().parse(body)
    lines = body.splitlines()
    links: list[WikiLink] = []
    values: list[InlineSpan] = []
    block_line = 0
    for token in tokens:
        if token.map:
            block_line = token.map[0]
        if token.type != "inline" or not token.children:
            continue
        line = token.map[0] if token.map else block_line
        for child in token.children:
            if child.type in ("softbreak", "hardbreak"):
                line += 1
            elif child.type in ("wikilink", "kb_value"):
                text = ("[[%s]]" if child.type == "wikilink" else "{{%s}}") % child.content
                source_line = lines[line] if line < len(lines) else ""
                column = source_line.find(text) + 1 if text in source_line else 1
                if child.type == "wikilink":
                    meta = child.meta
                    links.append(WikiLink(meta["target"], meta["anchor"], meta["label"], line, column))
                else:
                    values.append(InlineSpan(child.content, line, column))
    return BodyScan(tuple(links), tuple(values))


def find_inline_values(body: str) -> list[InlineSpan]:
    return list(scan_body(body).values)


def find_wikilinks(body: str) -> list[WikiLink]:
    return list(scan_body(body).links)


_SLUG_DROP = re.compile(r"[^\w\- ]+")


def slugify(heading: str) -> str:
    """GitHub-style heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    return _SLUG_DROP.sub("", heading.strip().lower()).replace(" ", "-")


def headings(body: str) -> set[str]:
    tokens = markdown().parse(body)
    return {slugify(tokens[i + 1].content) for i, t in enumerate(tokens)
            if t.type == "heading_open" and i + 1 < len(tokens)}
