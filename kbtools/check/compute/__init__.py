"""Stage: quantities and recomputation.

Parses every quantity field with its unit, computes the schema's type-level derivations
(`x-kb-derive`) and each record's cost blocks (`inputs` + `costs`), checks the figures prose quotes,
and compares every stated figure with its recomputation. engine.py evaluates; derivations, costs,
parameters and inline hold the kinds of value; incremental.py decides what a warm run recomputes.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from kbtools.check.compute.engine import Computer
from kbtools.check.compute.incremental import (
    ValuesOnDemand,
    cut_off,
    dirty_records,
    keep_for_next_run,
    with_kept_diagnostics,
    with_stored_values,
)
from kbtools.check.compute.values import Value, how_far, matching, scenario_text, substituted, verdict
from kbtools.corpus import Corpus, RecordValues

if TYPE_CHECKING:
    from kbtools.check.stage import Run

__all__ = ["Computer", "Value", "how_far", "matching", "recompute_costs", "scenario_text", "substituted", "verdict"]


def recompute_costs(corpus: Corpus, run: Run | None = None) -> Corpus:
    """Compute every value; with a store, only for records whose inputs changed. kb check keeps no values
    of the rest; a run that needs them all (a build) reads theirs from the store (compute.stored)."""
    computer = Computer(corpus)
    cache = run.store if run is not None else None
    # a scoped run holds only the values it computed again, however complete its run asked to be: kb serve's
    # live corpus puts them in place of the old ones (kbtools.check.run.live)
    complete = run is None or (run.complete and run.scope is None)
    scoped = run is not None and run.scope is not None
    reuse = run is not None and cache is not None  # with a store, what still holds is not computed again
    only = dirty_records(corpus, run, computer) if run is not None and reuse else None
    computed = computer.run(only)
    frontier = set(only or ())
    while frontier and only is not None:  # the readers of what came out differently, until nothing does
        frontier = cut_off(corpus, cache, computer, frontier, only)
        only |= frontier
        computed.update(computer.run(frontier))
    values: Mapping[str, RecordValues] = computed
    if reuse and complete and only is not None:
        values = (
            ValuesOnDemand(corpus, cache, computer, computed)
            if run is not None and run.on_demand
            else with_stored_values(corpus, cache, computer, computed, only)
        )
    diagnostics = list(computer.diagnostics)
    if run is not None and cache is not None:
        if reuse and only is not None:
            diagnostics = with_kept_diagnostics(corpus, run, diagnostics, only)
        keep_for_next_run(corpus, cache, computer, only, reuse, values if complete else None)
    unique = list(dict.fromkeys(diagnostics))
    if not complete and not scoped:
        values = {}  # kb check keeps diagnostics only: the values would be most of its memory
    # a scoped run keeps the few it computed: a long-lived process (kbtools.check.run.live) puts them in place
    return corpus.with_diagnostics(unique, computed=MappingProxyType(values))
