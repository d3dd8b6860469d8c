"""The link graph as a networkx MultiDiGraph (`kbtools.to_networkx`, `kb export --graphml`): the `graph` extra.

networkx is imported here and nowhere else in kb. kb's own link graph (kbtools.corpus.LinkGraph) replaced
networkx's inside kb: building networkx's graph took 3.8 s of serve's 9.8 s at 10,000 records and no graph
algorithm was used (BENCHMARKS.md). Whoever wants the algorithms gets the same links here, built on demand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import networkx

    from kbtools.api import KnowledgeBase
    from kbtools.corpus import Corpus

INSTALL_HINT = "the link graph needs networkx: pip install 'kbtools[graph]' (or pip install networkx)"


def require_networkx() -> Any:
    """networkx, or ImportError saying how to install it."""
    try:
        import networkx
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return networkx


def to_networkx(corpus: Corpus | KnowledgeBase) -> networkx.MultiDiGraph:
    """One node per record, keyed by dir/id, with its `type`, `id` and `path` (`type` left out of a record
    in a directory no type owns); one edge per link, source to target, with the `field` it stands in ("body"
    for a [[wikilink]]) and its `line` in the source's file, in the order kb check found them. Takes the
    corpus kbtools.open returns, or its `.corpus`."""
    nx = require_networkx()
    checked = cast("Corpus", getattr(corpus, "corpus", corpus))
    graph = nx.MultiDiGraph()
    for key, record in sorted(checked.records.items()):
        attributes = {"type": record.type, "id": record.id, "path": record.path}
        graph.add_node(key, **{name: value for name, value in attributes.items() if value is not None})
    for source, target, field, line in checked.edges or ():
        graph.add_edge(source, target, field=field, line=line)
    return graph


GRAPHML_DECLARATION = "<?xml version='1.0' encoding='utf-8'?>"


def graphml_text(graph: networkx.MultiDiGraph, mark: str) -> str:
    """The graph as GraphML, what Gephi and yEd open: the XML declaration, then `mark` as an XML comment (what
    kb export looks for before it replaces a file), then the graph."""
    nx = require_networkx()
    lines = nx.generate_graphml(graph, encoding="utf-8", prettyprint=True)
    return "\n".join([GRAPHML_DECLARATION, f"<!-- {mark} -->", *lines]) + "\n"
