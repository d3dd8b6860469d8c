"""kb: the checker and site builder for the LLM-inference cost knowledge base.

`kbtools.open(path)` is the checked knowledge base for a script (docs/api.md) and `kbtools.to_networkx(corpus)`
its link graph (the `graph` extra). Both are imported when first asked for, so `import kbtools`, which every kb
process does, imports neither pint, jsonschema nor networkx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbtools.version import __version__

__all__ = ["__version__", "open", "to_networkx"]

if TYPE_CHECKING:
    from kbtools.api import open
    from kbtools.interop.graph import to_networkx


def __getattr__(name: str) -> Any:
    if name == "open":
        from kbtools.api import open as opened

        return opened
    if name == "to_networkx":
        from kbtools.interop.graph import to_networkx as graph

        return graph
    raise AttributeError(f"module 'kbtools' has no attribute {name!r}")
