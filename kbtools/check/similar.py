"""Stage: near-duplicates, the records an auditor finds twice.

Two records of one type whose names differ only in case, spacing or punctuation ("NVIDIA H100 SXM"
and "Nvidia H100-SXM") are KB309. Two sources that point at one document are KB310: the same URL
once the scheme, a leading www., the host's case, a default port, a trailing slash, the fragment
and tracking parameters are set aside, or the same DOI. Both are warnings that name the other
record. Records that are distinct on purpose say so with `distinct_from: [dir/id]` on either one.

One pass over the corpus, grouping by a key: no pairwise comparison, so it stays linear.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import parse_qsl, urlencode, urlsplit

from kbtools.check.links import Index
from kbtools.corpus import Corpus, Record
from kbtools.diagnostics import Diagnostic

_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.IGNORECASE)
_TRACKING = re.compile(r"^(utm_[a-z]+|fbclid|gclid|mc_cid|mc_eid|ref|ref_src|authuser)$")  # none changes the document


def name_key(name: str) -> str:
    """A name with case, spacing and punctuation set aside: 'NVIDIA H100-SXM' -> 'nvidiah100sxm'."""
    return re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", name).casefold())


def url_key(url: str) -> str | None:
    """The document a URL names: its DOI when it has one, else the URL without what does not change
    the document (scheme, www., host case, default port, trailing slash, fragment, tracking)."""
    doi = _DOI.search(url)
    if doi and ("doi.org" in url.lower() or "/doi/" in url.lower()):
        return "doi:" + doi.group(1).rstrip(".").lower()
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if not parts.netloc:
        return None
    host = (parts.hostname or "").lower().removeprefix("www.")
    port = parts.port if parts.port not in (None, 80, 443) else None
    query = urlencode(
        sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _TRACKING.match(k))
    )
    path = parts.path.rstrip("/") or "/"
    return f"{host}{':' + str(port) if port else ''}{path}{'?' + query if query else ''}"


def find_similar(corpus: Corpus) -> Corpus:
    index: list[Index] = []  # built only when some group holds two records: most runs never need it
    found: list[Diagnostic] = []
    document_of = document_key(corpus.registry)
    members = corpus.judged() if corpus.scope is None else _groups_around(corpus, document_of)
    for code, key_of, field in (("KB309", name_of, "name"), ("KB310", document_of, "url")):
        groups: dict[tuple[str, str], list[Record]] = {}
        for record in sorted(members, key=lambda r: r.path):
            key = key_of(record)
            if key is not None:
                groups.setdefault((record.type or "", key), []).append(record)
        for records in groups.values():
            first = records[0]
            for other in records[1:]:
                if not index:
                    index.append(Index(corpus))
                if _distinct(index[0], first, other):
                    continue
                line, col = other.value_position((field,))
                if code == "KB309":
                    message = (
                        f"name {other.data.get('name')!r} is the same as {first.key}'s {first.data.get('name')!r} but for "
                        f"case, spacing or punctuation: merge the two, or name them apart (distinct_from: [{first.key}] "
                        "if they are different things)"
                    )
                else:
                    message = (
                        f"url is the same document as {first.key}'s ({first.data.get('url')}): one document, two "
                        f"source records; merge them (distinct_from: [{first.key}] if they are different documents)"
                    )
                found.append(Diagnostic.make(code, other.path, line, col, message))
    return corpus.with_diagnostics(found)


def _groups_around(corpus: Corpus, document_of) -> list[Record]:
    """In a scoped run: the judged records and every member of a group one of them is in, or was in before
    this edit (from the store's id table), closed over the members' own groups, so that each returned
    record's groups are whole and its findings can be judged again."""
    scope = corpus.scope
    chosen = {record.key: record for record in corpus.judged()}
    frontier = list(chosen.values())
    seen: set[tuple[str | None, int, str]] = set()
    while frontier:
        record = frontier.pop()
        known = scope.index.known.get(record.key)
        keys = {(0, name_of(record)), (1, document_of(record))}
        keys |= {(kind, value) for kind, value in enumerate(known.groups)} if known is not None else set()
        for kind, value in keys:
            if value is None or (record.type, kind, value) in seen:
                continue
            seen.add((record.type, kind, value))
            for key in scope.index.group_members(record.type, kind, value) - set(chosen):
                chosen[key] = corpus.records[key]
                frontier.append(chosen[key])
    scope.cover("find_similar", (record.path for record in chosen.values()))
    return list(chosen.values())


def name_of(record: Record) -> str | None:
    """The key KB309 groups a record's name by."""
    name = record.data.get("name")
    return name_key(name) or None if isinstance(name, str) else None


def document_key(registry):
    """A record's document key (what KB310 groups by), for records of the type that plays the source role."""
    sources = registry.with_role("source")
    source_type = sources.name if sources else None

    def document_of(record: Record) -> str | None:
        url = record.data.get("url")
        return url_key(url) if isinstance(url, str) and source_type is not None and record.type == source_type else None

    return document_of


def _distinct(index: Index, a: Record, b: Record) -> bool:
    """Either record says, with distinct_from, that the other is a different thing."""
    for this, that in ((a, b), (b, a)):
        declared = this.data.get("distinct_from")
        for item in declared if isinstance(declared, list) else []:
            target, _ = index.resolve(item) if isinstance(item, str) else (None, [])
            if target is not None and target.key == that.key:
                return True
    return False
