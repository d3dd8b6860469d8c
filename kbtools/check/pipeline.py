"""The one pipeline: discover -> load -> schema -> links -> near-duplicates -> debris -> constraints -> superseded
-> binary units -> compute -> freshness.

`check_corpus` runs every stage over the whole repository and returns the checked
Corpus; the CLI, the site and exports all start from it and never re-parse.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kbtools.check.binary_units import BinaryUnitStage
from kbtools.check.compute import recompute_costs
from kbtools.check.constraints import ConstraintsStage
from kbtools.check.debris import DebrisStage
from kbtools.check.freshness import TODAY_CODE, reported
from kbtools.check.links import LinksStage
from kbtools.check.run.driver import CheckRun
from kbtools.check.schema import SchemaStage
from kbtools.check.shelf import ShelfLifeStage
from kbtools.check.similar import SimilarStage
from kbtools.check.superseded import SupersededStage
from kbtools.config import apply_severity, unknown_codes
from kbtools.corpus import Corpus, Settings
from kbtools.diagnostics import CODES, Diagnostic

STAGES = (
    SchemaStage(),
    LinksStage(),
    SimilarStage(),
    DebrisStage(),
    ConstraintsStage(),
    SupersededStage(),
    BinaryUnitStage(),
    recompute_costs,
    ShelfLifeStage(),
)


def start_run(
    settings: Settings, use_cache: bool = False, complete: bool = True, scoped: bool = False, on_demand: bool = False
) -> CheckRun:
    """A run of every stage. With use_cache, unchanged files reuse earlier results (the store in kb's state
    directory, outside the repository); complete=False also lets compute reuse stored diagnostics, so values
    exist only for what changed -- enough for `kb check`, not for the site. scoped lets a run after a few
    edits judge again only what they can change (kbtools.check.run.scope): its findings are whole, its
    records and values only what it read and computed again (kbtools.check.run.live merges them into the corpus
    it holds). A run that cannot be scoped is whole, and complete as asked. on_demand (a complete run that
    reads a few records' values: kb plan, kb explain) decodes each stored value when it is first asked for.
    Whoever starts a run closes it (`CheckRun.close`) when done with its corpus."""
    return CheckRun(settings, STAGES, use_cache, complete, scoped, on_demand)


def checked(run: CheckRun) -> Corpus:
    """The run's corpus, with the configuration's problems and severities and the day's filter applied."""
    corpus = run.check()
    registry = corpus.registry
    # the configuration's severities apply to what is reported and to what blocks a build, never to what
    # the store keeps: changing a severity needs no recheck
    known = set(CODES) | registry.rule_codes
    settings = run.settings
    problems = [*settings.config_problems, *unknown_codes(settings, known), *_missing_records(settings)]
    diagnostics = apply_severity([*corpus.diagnostics, *problems], settings.severity)
    # The one place a run meets the day it runs on: every stage and the store keep findings whatever the day,
    # and this drops those not yet due and words the age of the rest (the memo's answer applies the same
    # filter to what it kept). The findings as made stay beside them for the memo, which keeps them all.
    dated = tuple(d for d in diagnostics if d.due is not None)
    return corpus.changed(diagnostics=tuple(reported(diagnostics)), dated=dated)


def check_corpus(
    settings: Settings, use_cache: bool = False, complete: bool = True, scoped: bool = False, on_demand: bool = False
) -> Corpus:
    """The checked corpus of a run (start_run) whose store stays open for as long as the corpus is used."""
    return checked(start_run(settings, use_cache, complete, scoped, on_demand))


@contextmanager
def checked_corpus(
    settings: Settings, use_cache: bool = False, complete: bool = True, scoped: bool = False, on_demand: bool = False
) -> Iterator[Corpus]:
    """check_corpus for a command: the corpus, and the run's store let go when the command is done with it, even
    when it fails, so the store is not held past the work that reads it."""
    run = start_run(settings, use_cache, complete, scoped, on_demand)
    try:
        yield checked(run)
    finally:
        run.close()


def _missing_records(settings: Settings) -> list[Diagnostic]:
    """A records path that does not exist (a typo in the configuration, a repository without records/) would
    check nothing and pass; it is an error that names the path."""
    if settings.records_path.is_dir():
        return []
    return [
        Diagnostic.make(
            "KB112",
            settings.records_dir,
            1,
            1,
            f"the records directory {settings.records_dir}/ does not exist under {settings.root}, so no record was "
            "checked",
            hint='create it, or set records = "..." in kb.toml or [tool.kb] of pyproject.toml',
        )
    ]


# Link breakage anywhere is reported even when only some files are named: a
# deleted or renamed record breaks links in files the commit did not touch.
BREAKAGE_CODES = frozenset({"KB300", "KB302", "KB303", "KB600"})
CONFIG_CODES = frozenset({"KB120", TODAY_CODE})  # the configuration is every file's business


def select(corpus: Corpus, paths: Iterable[Path]) -> list[Diagnostic]:
    """The diagnostics to report for the files named on the command line (all when none)."""
    chosen = [p for p in paths]
    diagnostics = list(corpus.diagnostics)
    if chosen and not any(_is_schema(p) for p in chosen):
        root = corpus.settings.root
        named = set()
        for path in chosen:
            absolute = path if path.is_absolute() else Path.cwd() / path
            try:
                named.add(absolute.resolve().relative_to(root).as_posix())
            except ValueError:
                named.add(path.as_posix())
        diagnostics = [
            d
            for d in diagnostics
            if d.path in named
            or d.code in BREAKAGE_CODES | CONFIG_CODES
            or d.path.startswith(corpus.settings.schema_dir + "/")
        ]
    return sorted(diagnostics, key=Diagnostic.sort_key)


def _is_schema(path: Path) -> bool:
    """A schema edit can break any record of its type, so it widens the report to everything."""
    return path.name.endswith(".schema.json")
