"""The one pipeline: discover -> load -> schema -> links -> near-duplicates -> debris -> constraints -> superseded
-> compute -> freshness.

`check_corpus` runs every stage over the whole repository and returns the checked
Corpus; the CLI, the site and exports all start from it and never re-parse.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from kbtools.check.compute import recompute_costs
from kbtools.check.constraints import ConstraintsStage
from kbtools.check.debris import DebrisStage
from kbtools.check.freshness import TODAY_CODE, check_freshness, reported
from kbtools.check.links import LinksStage
from kbtools.check.load import load_corpus, load_scoped
from kbtools.check.run import run_stage
from kbtools.check.schema import SchemaStage
from kbtools.check.scope import decode_findings, scoped_index, whole_index
from kbtools.check.similar import SimilarStage
from kbtools.check.stage import Stage
from kbtools.check.store import Cache, schema_key
from kbtools.check.store.index import StoreFailed
from kbtools.check.superseded import SupersededStage
from kbtools.config import apply_severity, unknown_codes
from kbtools.corpus import Corpus, Settings
from kbtools.diagnostics import CODES, Diagnostic
from kbtools.registry import TypeRegistry, load_registry

STAGES = (
    SchemaStage(),
    LinksStage(),
    SimilarStage(),
    DebrisStage(),
    ConstraintsStage(),
    SupersededStage(),
    recompute_costs,
    check_freshness,
)


def check_corpus(
    settings: Settings, use_cache: bool = False, complete: bool = True, scoped: bool = False, on_demand: bool = False
) -> Corpus:
    """Run every stage. With use_cache, unchanged files reuse earlier results (the cache in kb's state
    directory, outside the repository); complete=False also lets compute reuse cached diagnostics, so values
    exist only for what changed -- enough for `kb check`, not for the site. scoped lets a run after a few
    edits judge again only what they can change (kbtools.check.scope): its findings are whole, its records
    and values only what it read and computed again (`scope` is set on such a corpus, and
    kbtools.check.live merges it into the corpus it holds). A run that cannot be scoped is whole, and
    complete as asked. on_demand (a complete run that reads a few records' values: kb plan, kb explain)
    decodes each stored value when it is first asked for."""
    cache = Cache(settings.root, settings.schema_path, enabled=use_cache, settings=settings) if use_cache else None
    registry = _registry(settings, cache)
    corpus = None
    if cache is not None and scoped:
        try:
            corpus = _scoped_run(settings, registry, cache)
        except StoreFailed:  # the store could not answer: the whole run, from a store read afresh
            cache.close()
            cache = Cache(settings.root, settings.schema_path, enabled=use_cache, settings=settings)
            corpus = None
    if corpus is None:
        if cache is not None:
            cache.preload(values=complete)
        corpus = replace(
            load_corpus(settings, registry, cache), complete=complete or cache is None, on_demand=on_demand
        )
        corpus = _whole_run(corpus)
    if cache is not None:
        cache.save(corpus.record_paths() | {d.path for d in corpus.diagnostics})
    # the configuration's severities apply to what is reported and to what blocks a build, never to what
    # the cache keeps: changing a severity needs no recheck
    known = set(CODES) | registry.rule_codes
    problems = [*settings.config_problems, *unknown_codes(settings, known), *_missing_records(settings)]
    diagnostics = apply_severity([*corpus.diagnostics, *problems], settings.severity)
    # The one place a run meets the day it runs on: every stage and the store keep findings whatever the day,
    # and this drops those not yet due and words the age of the rest (the memo's answer applies the same
    # filter to what it kept). The findings as made stay beside them for the memo, which keeps them all.
    dated = tuple(d for d in diagnostics if d.due is not None)
    return corpus.changed(diagnostics=tuple(reported(diagnostics)), dated=dated)


_LOADED: dict[tuple[str, str, str], TypeRegistry] = {}  # the last registry this process loaded


def _registry(settings: Settings, cache: Cache | None) -> TypeRegistry:
    """The schema directory's types. A long-lived process (kb serve) checks again after every save, so the
    registry it loaded last is used again while the store's key, which hashes every schema file and kb's
    own code, is the same (without a store, the same hash): a schema edit loads it afresh. The store vouches
    for the schema texts an earlier run found valid, and keeps the ones this run did."""
    vouched = cache.meta_checked if cache is not None and cache.trusted else frozenset()
    key = cache.key if cache is not None else schema_key(settings.schema_path) if settings.schema_path.is_dir() else ""
    memo = (str(settings.schema_path), str(settings.root), key)
    if not key:
        registry = load_registry(settings.schema_path, settings.root, vouched)
    elif memo in _LOADED:
        registry = _LOADED[memo]
    else:
        _LOADED.clear()
        registry = _LOADED[memo] = load_registry(settings.schema_path, settings.root, vouched)
    if cache is not None:
        cache.meta_checked = registry.meta_checked
    return registry


def _stages(corpus: Corpus) -> tuple[Corpus, dict[str, list[Diagnostic]]]:
    """Every stage in order, and what each one found (its name -> diagnostics)."""
    found: dict[str, list[Diagnostic]] = {}
    for stage in STAGES:
        before = len(corpus.diagnostics)
        corpus = run_stage(stage, corpus) if isinstance(stage, Stage) else stage(corpus)
        found[stage.name if isinstance(stage, Stage) else stage.__name__] = list(corpus.diagnostics[before:])
    return corpus, found


def _whole_run(corpus: Corpus) -> Corpus:
    cache = corpus.cache
    loaded = list(corpus.diagnostics)
    corpus, found = _stages(corpus)
    if cache is not None:
        stored_files = set(cache.files.live)
        found["load"] = [d for d in loaded if d.path in stored_files]
        cache.index_update = whole_index(corpus, found, stored_files)
    return corpus


def _scoped_run(settings: Settings, registry, cache: Cache) -> Corpus | None:
    corpus = load_scoped(settings, registry, cache)
    if corpus is None:
        return None
    scope = corpus.scope
    judged_paths = {corpus.records[k].path for k in scope.keys} | set(scope.changed_paths)
    loaded = [d for d in corpus.diagnostics if d.path in scope.changed_paths]
    corpus, found = _stages(corpus)
    found["load"] = loaded
    covered = {stage: judged_paths | scope.covered.get(stage, set()) for stage in found}
    covered["load"] = set(scope.changed_paths)
    kept = decode_findings(scope.index.findings(), covered)
    if cache.read_failed:
        raise StoreFailed("a stored row could not be read")
    cache.index_update = scoped_index(corpus, found, covered)
    return corpus.with_diagnostics(kept)


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
