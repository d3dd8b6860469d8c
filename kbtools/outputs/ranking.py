"""`kb plan RECORD`'s ranking as data: its options best first, each with the lines kb plan prints under it, in its
words (kbtools.outputs.plan), for a record's page (kbtools.site.plan_view) to show as a table."""

from __future__ import annotations

from dataclasses import dataclass

from kbtools.corpus import Corpus, Record
from kbtools.outputs.plan import (
    Figure,
    Option,
    Plan,
    limited_lines,
    make_plan,
    planned_type,
    ranking_heading,
    verdict_line,
    within_line,
)


@dataclass(frozen=True)
class Ranked:
    """One option of a plan, best first, with what kb plan prints under it, in its words: a row of the
    "tiers, best first" table on a workload's page."""

    rank: int
    option: Option
    ranked_by: Figure | None  # the figure the plan ranks by (ttft); None: kb cannot rank the option
    unranked: tuple[str, ...]  # then why, as kb plan says it: "no ttft: storage-tiers/x has no capacity"
    compared: tuple[Figure, ...]  # what the verdict compares: the option's hit time, the node's recompute time
    verdict: str | None  # "a hit against the recompute: faster (0.0421× the time)"
    broken: tuple[str, ...]  # the limits it breaks: "the working set does not fit in the KV the tier can hold"
    within: str | None  # "within its limits: tier_fill 0.001342 (each at most 1)"
    not_checked: tuple[str, ...]  # "not checked (the hits need …): the workload has no request_rate"
    limited_by: tuple[str, ...]  # "reader_rate limited by the tier's own links"


@dataclass(frozen=True)
class Ranking:
    plan: Plan
    options: tuple[Ranked, ...]  # best first

    @property
    def heading(self) -> str:
        return ranking_heading(self.plan)


def ranking(corpus: Corpus, record: Record) -> Ranking:
    """`kb plan RECORD`'s ranking as data, for a record of the checked corpus whose type plans (a workload): its
    options in kb plan's order, each with the lines kb plan prints under it (as_text), sorted by what they say."""
    plan = make_plan(corpus, record)
    worded = planned_type(corpus, record).planning.get("verdict")
    node = {f.name: f for f in plan.figures}
    ranked = []
    for n, option in enumerate(plan.options, 1):
        own = {f.name: f for f in option.figures}
        ranked_by = own.get(plan.rank_by)
        said = own.get(worded) if isinstance(worded, str) else None
        compared = tuple(
            found for name, _ in (said.value.inputs if said else ()) if (found := own.get(name) or node.get(name))
        )
        ranked.append(
            Ranked(
                n,
                option,
                ranked_by,
                (option.unranked,) if option.unranked else (),
                compared,
                verdict_line(option),
                option.breaches,
                within_line(option),
                option.unpriced,
                limited_lines(option),
            )
        )
    return Ranking(plan, tuple(ranked))
