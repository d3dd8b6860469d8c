"""The whole-corpus link graph: its page, and the nodes and edges graph.js draws on it."""

from __future__ import annotations

from typing import Any

from kbtools.site.context import Page


class GraphPage(Page):
    def write(self) -> None:
        # the data goes in the page, not beside it: a page opened from file:// may not fetch() a file
        self.site.render(
            "graph.html", "graph.html", title="Link graph", total=len(self.corpus.records), data=self.data()
        )

    def data(self) -> dict[str, Any]:
        nodes, index = [], {}
        types = [t.name for t in self.site.types_in_order]
        pages = self.site.pages
        for i, (key, record) in enumerate(sorted((k, r) for k, r in self.corpus.records.items() if k in pages)):
            index[key] = i
            nodes.append(
                [key, str(record.data.get("name", key))[:80], types.index(record.type) if record.type in types else -1]
            )
        edges = set()
        for source, target, _, _ in self.corpus.edges or ():
            if source != target and source in index and target in index:
                edges.add((index[source], index[target]))
        return {"types": types, "nodes": nodes, "edges": sorted(edges)}
