"""CheckRun: one run of kb check's stages, and the one owner of reuse, scope and the store.

A run chooses its keys three ways -- every record (a whole run), the records a few edits can change (a scoped
run, kbtools.check.run.scope), or a whole run whose values stay in the store until asked for (kb plan, kb
explain) -- and hands each stage the records it judges. The stages only judge (kbtools.check.stage); the
corpus a run returns is one shape whatever it chose: records, findings, links and values, never the store
or the scope.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kbtools.check.load import load_corpus
from kbtools.check.run.scope import Scope, decode_findings, load_scoped, scoped_index, whole_index
from kbtools.check.run.stages import NOTHING_STORED, run_stage
from kbtools.check.stage import Stage, Stored
from kbtools.check.store import Cache, schema_key
from kbtools.check.store.index import StoreFailed
from kbtools.corpus import Corpus, Record, Settings
from kbtools.diagnostics import Diagnostic
from kbtools.registry import TypeRegistry, load_registry


class CheckRun:
    """One run over a repository. `store`: the store it reuses and writes (None: a cold run that keeps
    nothing). `complete`: every record's values are wanted (a build, an export), not only the findings (kb
    check); a scoped run holds the values it computed again, which kbtools.check.run.live puts in place.
    `on_demand`: a complete run whose values are decoded when first asked for. `scope`: set when the run
    turned out scoped."""

    def __init__(
        self,
        settings: Settings,
        stages: Sequence[Any],
        use_store: bool = False,
        complete: bool = True,
        scoped: bool = False,
        on_demand: bool = False,
    ):
        self.settings, self.stages = settings, stages
        self.store = Cache(settings.root, settings.schema_path, settings=settings) if use_store else None
        self.complete = complete or self.store is None
        self.scoped, self.on_demand = scoped, on_demand
        self.scope: Scope | None = None

    def check(self) -> Corpus:
        """Every stage over the run's keys; the corpus with its findings, before the configuration's
        severities and the day's filter (kbtools.check.pipeline applies them)."""
        registry = self.registry()
        corpus = None
        if self.store is not None and self.scoped:
            try:
                corpus = self._scoped_run(registry, self.store)
            except StoreFailed:  # the store could not answer: the whole run, from a store read afresh
                self.store.close()
                self.store = Cache(self.settings.root, self.settings.schema_path, settings=self.settings)
                self.scope, corpus = None, None
        if corpus is None:
            corpus = self._whole_run(registry)
        if self.store is not None:
            self.store.save(corpus.record_paths() | {d.path for d in corpus.diagnostics})
            corpus = corpus.changed(value_reads=self.store.reads)
        return corpus

    def registry(self) -> TypeRegistry:
        """The schema directory's types. A long-lived process (kb serve) checks again after every save, so the
        registry it loaded last is used again while the store's key, which hashes every schema file and kb's
        own code, is the same (without a store, the same hash): a schema edit loads it afresh. The store
        vouches for the schema texts an earlier run found valid, and keeps the ones this run did."""
        store, settings = self.store, self.settings
        vouched = store.meta_checked if store is not None and store.trusted else frozenset()
        key = (
            store.key
            if store is not None
            else schema_key(settings.schema_path)
            if settings.schema_path.is_dir()
            else ""
        )
        memo = (str(settings.schema_path), str(settings.root), key)
        if not key:
            registry = load_registry(settings.schema_path, settings.root, vouched)
        elif memo in _LOADED:
            registry = _LOADED[memo]
        else:
            _LOADED.clear()
            registry = _LOADED[memo] = load_registry(settings.schema_path, settings.root, vouched)
        if store is not None:
            store.meta_checked = registry.meta_checked
        return registry

    # -------------------------------------------------------------- what a stage asks of its run
    def judged(self, corpus: Corpus) -> list[Record]:
        """The records a stage judges: every record, or in a scoped run those of the scope, in path order."""
        if self.scope is None:
            return list(corpus.records.values())
        return sorted((corpus.records[k] for k in self.scope.keys if k in corpus.records), key=lambda r: r.path)

    @property
    def stored(self) -> Stored:
        """What the store says of the records this run does not judge (nothing, in a whole run)."""
        return self.scope.index if self.scope is not None else NOTHING_STORED

    def cover(self, stage: str, paths: Iterable[str]) -> None:
        """A scoped run judged these files beyond its scope for `stage`: their stored findings give way."""
        if self.scope is not None:
            self.scope.cover(stage, paths)

    def sources_linking_to(self, corpus: Corpus, key: str) -> set[str]:
        """The records with a link into `key`: the links the run found, and in a scoped run the stored ones of
        the records it did not judge again."""
        sources = {source for source, target, _, _ in corpus.edges or () if target == key}
        if self.scope is not None:
            judged = {source for source, _, _, _ in corpus.edges or ()} | set(self.scope.keys)
            sources |= {s for s in self.scope.index.sources_into([key]) if s not in judged}
        return sources

    def close(self) -> None:
        """Let go of the store: a scoped run's corpus reads stored records until here."""
        if self.store is not None:
            self.store.close()

    # -------------------------------------------------------------- whole and scoped
    def _stages(self, corpus: Corpus) -> tuple[Corpus, dict[str, list[Diagnostic]]]:
        """Every stage in order, and what each one found (its name -> diagnostics)."""
        found: dict[str, list[Diagnostic]] = {}
        for stage in self.stages:
            before = len(corpus.diagnostics)
            corpus = run_stage(stage, corpus, self) if isinstance(stage, Stage) else stage(corpus, self)
            found[stage.name if isinstance(stage, Stage) else stage.__name__] = list(corpus.diagnostics[before:])
        return corpus, found

    def _whole_run(self, registry: TypeRegistry) -> Corpus:
        store = self.store
        if store is not None:
            store.preload(values=self.complete)
        corpus = load_corpus(self.settings, registry, store.files if store is not None else None)
        loaded = list(corpus.diagnostics)
        corpus, found = self._stages(corpus)
        if store is not None:
            stored_files = set(store.files.live)
            found["load"] = [d for d in loaded if d.path in stored_files]
            store.index_update = whole_index(corpus, found, stored_files)
        return corpus

    def _scoped_run(self, registry: TypeRegistry, store: Cache) -> Corpus | None:
        scoped = load_scoped(self.settings, registry, store)
        if scoped is None:
            return None
        corpus, scope = scoped
        self.scope = scope
        judged_paths = {corpus.records[k].path for k in scope.keys} | set(scope.changed_paths)
        loaded = [d for d in corpus.diagnostics if d.path in scope.changed_paths]
        corpus, found = self._stages(corpus)
        found["load"] = loaded
        covered = {stage: judged_paths | scope.covered.get(stage, set()) for stage in found}
        covered["load"] = set(scope.changed_paths)
        kept = decode_findings(scope.index.findings(), covered)
        if store.read_failed:
            raise StoreFailed("a stored row could not be read")
        store.index_update = scoped_index(corpus, scope, found, covered)
        return corpus.with_diagnostics(kept)


_LOADED: dict[tuple[str, str, str], TypeRegistry] = {}  # the last registry this process loaded
