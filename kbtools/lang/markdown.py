"""Finding [[wikilinks]] in record bodies with markdown-it-py.

A markdown-it inline rule recognises `[[target]]`, `[[target|label]]` and
`[[target#heading]]`, so text in code spans, code blocks and HTML is never a link:
the parser, not a regular expression, decides what is prose. The same parser
(`markdown()`) renders bodies for the site, so check and site agree on every link.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

from kbtools.lang.formula import MAX_LENGTH as MAX_FORMULA_LENGTH

MAX_TARGET = 300  # the longest [[...]] looked for: a closing bracket is sought no further
# the longest {{...}}: any formula the formula language accepts (a longer one was plain text, unchecked, so an
# overflowing value hid behind its length), plus room for the spaces around it
MAX_VALUE = MAX_FORMULA_LENGTH + 16
MAX_BODY_CHARS = 200_000  # markdown-it parses this in a few seconds even in its slow paths; records are far shorter
MAX_BODY_LINKS = 10_000  # more wikilinks or inline values than any page needs


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


def _closing(src: str, pos: int, closer: str, reach: int = MAX_TARGET) -> int:
    """Where `closer` ends the construct opened at pos: on the same line and within `reach`, else -1.
    Bounded so that many unclosed openers cost linear time, never a scan to the paragraph's end each."""
    limit = pos + 2 + reach + len(closer)
    newline = src.find("\n", pos, limit)
    return src.find(closer, pos + 2, newline if newline >= 0 else limit)


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not src.startswith("[[", pos):
        return False
    end = _closing(src, pos, "]]")
    if end < 0:
        return False
    inner = src[pos + 2 : end]
    if not inner.strip() or "[" in inner:
        return False
    if not silent:
        target, _, label = inner.partition("|")
        target, _, anchor = target.partition("#")
        token = state.push("wikilink", "", 0)
        token.meta = {
            "target": target.strip(),
            "anchor": anchor.strip() or None,
            "label": label.strip() or None,
            "offset": pos,
        }
        token.content = inner
    state.pos = end + 2
    return True


def _inline_value_rule(state: StateInline, silent: bool) -> bool:
    """{{ expression | unit }}: a computed figure quoted in prose (checked, rendered by the site)."""
    src, pos = state.src, state.pos
    if not src.startswith("{{", pos):
        return False
    end = _closing(src, pos, "}}", MAX_VALUE)
    if end < 0:
        return False
    if not silent:
        token = state.push("kb_value", "", 0)
        token.content = src[pos + 2 : end]
        token.meta = {"offset": pos}
    state.pos = end + 2
    return True


def new_parser() -> MarkdownIt:
    """CommonMark with tables and ~~strikethrough~~ (how prose marks an old figure), raw HTML off, the wikilink rule and inline values."""
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
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
    """What a body links to and quotes, found in one parse; `skipped` says why a body was not scanned."""

    links: tuple[WikiLink, ...]
    values: tuple[InlineSpan, ...]
    skipped: tuple[str, str] | None = None  # (code, message)


def too_large(body: str) -> tuple[str, str] | None:
    """Why a body is not scanned, as (code, message), or None. Checked before any parse."""
    if body.count("[[") > MAX_BODY_LINKS or body.count("{{") > MAX_BODY_LINKS:
        return (
            "KB114",
            f"the body has more than {MAX_BODY_LINKS:,} [[links]] or {{{{values}}}}; none of them was checked",
        )
    if len(body) > MAX_BODY_CHARS:
        return "KB115", (
            f"the body is {len(body):,} characters long, more than the {MAX_BODY_CHARS:,} kb checks; "
            "its links and values were not checked"
        )
    return None


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
    reason = too_large(body)
    if reason is not None:
        return BodyScan((), (), reason)
    if "[[" not in body and "{{" not in body:
        return BodyScan((), ())  # nothing to find: skip the parse
    if plain_prose(body):
        return _scan_plain(body)
    return _scan_parsed(body)


# What makes markdown-it, not a line scan, decide what is prose: code (backticks, ~~~ fences, indented
# lines), escapes, entities, autolinks, inline links and reference definitions (whose brackets and URLs
# the parser takes first), tables (whose pipes split a [[link|label]]) and line breaks other than \n.
_NOT_PLAIN = re.compile(r"[`\\&<\t\r\x00\x0b\x0c\x1c-\x1e\x85\u2028\u2029]|~~~|\]\(|\]:|^ {4}|^[ |:-]*-[ |:-]*$", re.M)


def plain_prose(body: str) -> bool:
    """A body in which every [[ and {{ is a construct exactly where a line scan finds it (tested against the
    parser on every record and on a catalogue of look-alikes)."""
    return _NOT_PLAIN.search(body) is None


def _scan_plain(body: str) -> BodyScan:
    """The fast path: the wikilink and inline-value rules applied left to right along each line, as the
    parser would apply them to prose with nothing else in it."""
    links: list[WikiLink] = []
    values: list[InlineSpan] = []
    for number, line in enumerate(body.split("\n")):
        pos = 0
        while True:
            link, value = line.find("[[", pos), line.find("{{", pos)
            if link < 0 and value < 0:
                break
            pos = link if value < 0 or (0 <= link < value) else value
            if pos == link:
                end = _closing(line, pos, "]]")
                inner = line[pos + 2 : end] if end >= 0 else ""
                if end < 0 or not inner.strip() or "[" in inner:
                    pos += 1
                    continue
                target, _, label = inner.partition("|")
                target, _, anchor = target.partition("#")
                links.append(WikiLink(target.strip(), anchor.strip() or None, label.strip() or None, number, pos + 1))
            else:
                end = _closing(line, pos, "}}", MAX_VALUE)
                if end < 0:
                    pos += 1
                    continue
                values.append(InlineSpan(line[pos + 2 : end], number, pos + 1))
            pos = end + 2
    return BodyScan(tuple(links), tuple(values))


def _scan_parsed(body: str) -> BodyScan:
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
        first_line = token.map[0] if token.map else block_line
        line_starts = [0] + [i + 1 for i, c in enumerate(token.content) if c == "\n"]
        indents: dict[int, int] = {}  # per line of the inline text: where it starts in the source line
        line = first_line
        for child in token.children:
            if child.type in ("softbreak", "hardbreak"):
                line += 1
            elif child.type in ("wikilink", "kb_value"):
                column = _column(child.meta.get("offset", 0), token.content, line_starts, lines, first_line, indents)
                if child.type == "wikilink":
                    meta = child.meta
                    links.append(WikiLink(meta["target"], meta["anchor"], meta["label"], line, column))
                else:
                    values.append(InlineSpan(child.content, line, column))
    return BodyScan(tuple(links), tuple(values))


def _column(
    offset: int, content: str, line_starts: list[int], lines: list[str], first_line: int, indents: dict[int, int]
) -> int:
    """The 1-based column in the source line of a construct at `offset` of an inline token's text.
    markdown-it strips each line's indentation and block markers (>, list bullets) from the inline text, so
    the line's own start is found once per line (never a search per link) and the offset counted from it."""
    index = bisect.bisect_right(line_starts, offset) - 1
    start = line_starts[index]
    if index not in indents:
        source = lines[first_line + index] if first_line + index < len(lines) else ""
        end = content.find("\n", start)
        raw = content[start : end if end >= 0 else len(content)]
        text = raw.strip()
        found = source.find(text[:40]) if text else -1
        # the inline text may keep some of the line's indentation (a paragraph's continuation lines): the
        # line's start in the source is where its text is found, less what the inline text kept before it
        indents[index] = max(found - (len(raw) - len(raw.lstrip())), 0) if found >= 0 else 0
    return indents[index] + (offset - start) + 1


def find_inline_values(body: str) -> list[InlineSpan]:
    return list(scan_body(body).values)


_SLUG_DROP = re.compile(r"[^\w\- ]+")


def slugify(heading: str) -> str:
    """GitHub-style heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    return _SLUG_DROP.sub("", heading.strip().lower()).replace(" ", "-")


def headings(body: str) -> set[str]:
    if too_large(body):
        return set()
    tokens = markdown().parse(body)
    return {
        slugify(tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open" and i + 1 < len(tokens)
    }


def blank_inline_values(text: str) -> str:
    """kb's own {{ inline values }} blanked out, columns kept. A linear scan: a body full of unclosed
    {{ must not cost a search from each one to the end."""
    out, start = [], 0
    while True:
        opening = text.find("{{", start)
        closing = text.find("}}", opening + 2) if opening != -1 else -1
        if opening == -1 or closing == -1:
            out.append(text[start:])
            return "".join(out)
        span = text[opening : closing + 2]
        out.append(text[start:opening] + "".join(c if c == "\n" else " " for c in span))
        start = closing + 2
