"""The page "How right is kb plan": every case of the prediction ledger (kbtools.outputs.ledger), with both
sides' sources, the median |error|, the verdicts, and kb's predictions plotted against the runs."""

from __future__ import annotations

from typing import Any

from kbtools.lang.units import unit_registry
from kbtools.outputs.ledger import Case, ledger, summary, verdict_word
from kbtools.site.charts import Point, scatter_against
from kbtools.site.context import Page

PAGE = "ledger.html"


class LedgerPage(Page):
    def write(self) -> None:
        book = ledger(self.corpus)
        self.site.render(
            "ledger.html",
            PAGE,
            title="How right is kb plan",
            summary=summary(book),
            cases=[self._case(case) for case in book.cases],
            chart=self._chart(book.cases),
        )

    def _link(self, key: str | None) -> dict[str, str] | None:
        return self.site.link(PAGE, key) if key is not None and key in self.corpus.records else None

    def _sources(self, names: tuple[str, ...]) -> list[dict[str, str]]:
        out = []
        for name in names:
            record, _ = self.corpus.index.resolve(name)
            if record is not None:
                out.append({**self.site.link(PAGE, record.key), "url": str(record.data.get("url") or "")})
        return out

    def _case(self, case: Case) -> dict[str, Any]:
        return {
            "case": self._link(case.key),
            "workload": self._link(case.workload),
            "tier": self._link(case.tier),
            "figure": case.figure,
            "publisher": case.publisher,
            "measured": case.measured.shown() if case.measured else "",
            "predicted": case.predicted.shown() if case.predicted else "no prediction",
            "predicted_range": case.predicted.spread_shown() if case.predicted else None,
            "error": f"{case.signed:+.0%}" if case.signed is not None else "",
            "within_band": case.within_band,
            "band": f"{case.band[0]:+.0%} to {case.band[1]:+.0%}" if case.band else "",
            "verdict": None
            if case.verdicts_agree is None
            else {
                "agrees": case.verdicts_agree,
                "measured": verdict_word(case.measured_ratio),
                "predicted": verdict_word(case.predicted_ratio),
            },
            "sources": self._sources(case.sources),
            "workload_sources": self._sources(case.workload_sources),
        }

    def _chart(self, cases: tuple[Case, ...]) -> str:
        ms = unit_registry().Unit("ms")
        points = []
        for case in cases:
            if case.measured is None or case.predicted is None:
                continue
            if not case.measured.quantity.is_compatible_with(ms):
                continue  # a case measured in another dimension is not a time: not on this plot
            measured, predicted = case.measured.quantity.to(ms), case.predicted.quantity.to(ms)
            link = self._link(case.key)
            points.append(
                Point(
                    case.key,
                    float(measured.magnitude),
                    float(predicted.magnitude),
                    case.figure,
                    link["href"] if link else None,
                )
            )
        return scatter_against(points, "ms", "kb's prediction against the measured run", "measured", "predicted")
