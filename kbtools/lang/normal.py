"""Text set in a normal form, so that two spellings of one thing compare equal: a name without its case,
spacing and punctuation, a URL without what does not change the document it names.

Pure functions of a string. The near-duplicate stage groups records by them (kbtools.check.similar), the
store keeps them in its id table (kbtools.check.run.scope), and the constraints compare sources' URLs with them.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import parse_qsl, urlencode, urlsplit

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
