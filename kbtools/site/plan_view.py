"""What kb plan says of a record it plans (a workload), on that record's page: its ranking of the options, best
first (kbtools.outputs.ranking, in kb plan's words), and a row in each per-option table for an option it has
no figure for, saying which field of which record is missing."""

from __future__ import annotations

from typing import Any

from kbtools.corpus import Record
from kbtools.registry import RecordType
from kbtools.site.context import SiteContext


def missing_rows(site: SiteContext, page: str, record: Record, views: dict[str, dict[str, Any]]) -> None:
    """A record kb plan plans (a workload): each for_each table gets a row for every option it has no figure
    for, saying which field of which record is missing, as kb plan says it ("storage-tiers/x has no
    capacity"), where the table would leave the option out (skip_missing) or say only that no row has one."""
    from kbtools.outputs.explain import missing_fields

    record_type = site.corpus.registry.types.get(record.type or "")
    if record_type is None or not record_type.planning:
        return
    specs = {n: s for n, s in record.costs.items() if isinstance(s, dict)}
    index = site.corpus.index
    for name, view in views.items():
        each = specs.get(name, {}).get("for_each")
        if (
            not (isinstance(each, dict) and len(each) == 1 and isinstance(view["value"], dict))
            or "rows" not in view["value"]
        ):
            continue
        [(var, listed)] = each.items()
        listed_keys = record.data.get(listed) if isinstance(listed, str) else None
        shown = {row["key"] for row in view["value"]["rows"]}
        for text in listed_keys if isinstance(listed_keys, list) else []:
            target, _ = index.resolve(text) if isinstance(text, str) else (None, [])
            if target is None or target.key in shown:  # an unresolved one is kb check's error
                continue
            shown.add(target.key)
            why = missing_fields(site.corpus, index, record, specs, var, name, target.key, target)
            view["value"]["rows"].append(
                {
                    "key": target.key,
                    "link": site.link(page, target.key),
                    "value": {"text": "not computed", "note": why, "missing": True},
                }
            )


def ranking_view(site: SiteContext, page: str, record: Record, record_type: RecordType) -> dict[str, Any] | None:
    """A record of a type kb plan plans (a workload): `kb plan RECORD`'s ranking, from the values the
    checked corpus holds (kbtools.outputs.ranking), best first, each option with its rank figure, the
    figures its verdict compares, the verdict, its fit and what kb cannot rank it for, in kb plan's words."""
    from kbtools.outputs.plan import PlanError
    from kbtools.outputs.ranking import ranking

    if not record_type.planning:
        return None
    try:
        found = ranking(site.corpus, record)
    except PlanError:
        return None
    plan = found.plan
    compared = list(dict.fromkeys(f.name for ranked in found.options for f in ranked.compared))
    labels = {f.name: f.label for ranked in found.options for f in (*ranked.compared, *ranked.option.figures)}
    labels.update({f.name: f.label for f in plan.figures})
    rows = []
    for ranked in found.options:
        option, figures = ranked.option, {f.name: f for f in ranked.compared}
        known = option.key in site.corpus.records
        rows.append(
            {
                "rank": ranked.rank,
                "key": option.key,
                "link": site.link(page, option.key) if known else {"href": "", "label": option.name},
                "ranked_by": ranked.ranked_by.shown() if ranked.ranked_by else None,
                "unranked": list(ranked.unranked),
                "compared": [figures[n].shown() if n in figures else None for n in compared],
                "verdict": ranked.verdict,
                "broken": list(ranked.broken),
                "within": ranked.within,
                "not_checked": list(ranked.not_checked),
                "limited_by": list(ranked.limited_by),
            }
        )
    return {
        "title": f"{plan.over[:1].upper()}{plan.over[1:]}, best first",
        "said": found.heading,
        "command": f"kb plan {record.key}",
        "option": plan.over_var,
        "rank_by": {"name": plan.rank_by, "label": labels.get(plan.rank_by, "")},
        "compared": [{"name": n, "label": labels.get(n, "")} for n in compared],
        "rows": rows,
    }
