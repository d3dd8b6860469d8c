"""The home page: the record types with their counts, statuses, and what the theme's "Start here" asks for."""

from __future__ import annotations

from collections import Counter

from kbtools.diagnostics import Severity
from kbtools.site.context import Page


class HomePage(Page):
    def write(self) -> None:
        types_in_order = self.site.types_in_order
        counts = Counter(r.type for r in self.corpus.records.values())
        statuses = Counter(str(r.data.get("status")) for r in self.corpus.records.values())
        by_type = [
            {
                "title": t.title,
                "dir": t.dir,
                "count": counts.get(t.name, 0),
                "href": f"{t.dir}/index.html",
                "description": t.schema.get("description", ""),
            }
            for t in types_in_order
        ]
        # The theme chooses what "Start here" lists (home.html): it asks for a record by id and a type's
        # index by type name, and leaves out what this repository does not have.
        self.site.render(
            "home.html",
            "index.html",
            title="",
            by_type=by_type,
            statuses=sorted(statuses.items()),
            total=len(self.corpus.records),
            record_link=self.record_link,
            type_index=self.type_index,
            errors=sum(d.severity is Severity.ERROR for d in self.corpus.diagnostics),
        )

    def record_link(self, record_id: str) -> dict[str, str] | None:
        target, _ = self.site.index.resolve(record_id)
        return (
            self.site.link("index.html", target.key) if target is not None and target.key in self.site.pages else None
        )

    def type_index(self, type_name: str) -> str | None:
        record_type = self.site.registry.types.get(type_name)
        return f"{record_type.dir}/index.html" if record_type is not None else None
