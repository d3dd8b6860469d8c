"""The package's layers (docs/architecture.md): what each part of kbtools may import.

A stage never imports the site or the outputs, a language imports no stage, the core (corpus,
diagnostics, the registry package) imports no layer above it. Lazy imports inside functions count too.
"""

from __future__ import annotations

import ast
import importlib

from conftest import REPO

CORE = {
    "corpus",
    "config",
    "diagnostics",
    "index",
    "fieldwalk",
    "progress",
    "atomic",
    "files",
    "ids",
    "state",
    "signals",
    "version",
    "__init__",
}
# packages of the core: every module inside one is core (the type registry: its model, loader, plan, annotations)
CORE_PACKAGES = {"registry"}
# layer -> the layers it may import (itself included)
ALLOWED = {
    "lang": {"lang"},
    "core": {"core", "lang"},
    "check": {"core", "lang", "check"},
    "outputs": {"core", "lang", "check", "outputs", "interop", "api"},
    "site": {"core", "lang", "check", "outputs", "site"},
    "authoring": {"core", "lang", "check", "authoring"},
    "cli": {"core", "lang", "check", "outputs", "site", "authoring", "interop", "cli"},
    # what kb offers other libraries: typed records, the link graph (imported only when asked for)
    "interop": {"core", "lang", "check", "interop", "api"},
    # kbtools.open: the checked knowledge base for a script
    "api": {"core", "lang", "check", "api"},
}
# The package's own __init__ hands out the public entry points lazily (kbtools.open, kbtools.to_networkx): the one
# place the core names a layer above it, inside a function, so `import kbtools` imports neither.
PUBLIC_ENTRY_POINTS = {"kbtools.api", "kbtools.interop.graph"}


def layer_of(parts: list[str]) -> str:
    if parts[0] in CORE_PACKAGES:
        return "core"
    if parts[0] == "api":
        return "api"
    if len(parts) > 1 and parts[0] in ALLOWED:
        return parts[0]
    return "cli" if parts[0] == "cli" else "core"


def imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kbtools"):
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names if a.name.startswith("kbtools"))


def test_every_module_imports_only_the_layers_below_it():
    package = REPO / "kbtools"
    broken = []
    for path in sorted(package.rglob("*.py")):
        mine = layer_of(list(path.relative_to(package).with_suffix("").parts))
        for line, module in imports(path):
            parts = module.split(".")[1:]
            if not parts:
                continue  # `from kbtools import X`: the package itself
            theirs = layer_of(parts)
            if mine == "lang" and parts == ["diagnostics"]:
                continue  # the coded-error base every layer raises (KbError); it imports nothing of kb
            if path == package / "__init__.py" and module in PUBLIC_ENTRY_POINTS:
                continue
            if theirs not in ALLOWED[mine]:
                broken.append(f"kbtools/{path.relative_to(package)}:{line}: {mine} imports {module} ({theirs})")
    assert not broken, "imports against the layering:\n" + "\n".join(broken)


def test_every_module_sits_in_a_layer():
    """A new top-level module, or package, must be core on purpose: the lists above name them."""
    package = REPO / "kbtools"
    loose = [p.stem for p in package.glob("*.py") if p.stem not in CORE | {"cli", "api"}]
    assert not loose, f"top-level modules outside the core list: {loose}"
    packages = {p.parent.name for p in package.glob("*/__init__.py")}
    assert CORE_PACKAGES <= packages, f"core packages that are not packages of kbtools: {CORE_PACKAGES - packages}"
    unplaced = sorted(packages - set(ALLOWED) - CORE_PACKAGES)
    assert not unplaced, f"packages that are neither a layer nor in the core's list: {unplaced}"
    assert layer_of(["registry", "loader"]) == layer_of(["registry"]) == "core"


def test_the_cache_key_covers_every_module_of_the_package():
    """A kb edited in a subpackage must not trust a cache an older kb wrote (the key once hashed only the
    top-level files)."""
    from kbtools.check.store import code_files

    package = REPO / "kbtools"
    expected = {p.resolve() for p in package.rglob("*.py") if "__pycache__" not in p.parts}
    expected.add((package / "lang" / "units.txt").resolve())
    assert set(code_files()) == expected


# Import edges that close a circle today, each (importer, imported), allowed until the work that unties them.
# None since issue 43 step 6: the kinds of value take the evaluator as an Evaluator protocol of their own.
KNOWN_CIRCLE_EDGES: set[tuple[str, str]] = set()


def module_graph() -> dict[str, set[str]]:
    """Every module of kbtools -> the modules of kbtools it imports, wherever the import stands (module level,
    inside a function, under TYPE_CHECKING). `from package import name` imports the submodule `name` when
    there is one, else the package itself; the parent packages Python initialises on the way are not counted."""
    package = REPO / "kbtools"
    names = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        names[path] = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    modules = set(names.values())
    graph: dict[str, set[str]] = {}
    for path, name in names.items():
        here = graph.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                here.update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the importing module's package, `level - 1` packages up
                    package_parts = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    base = ".".join(package_parts[: len(package_parts) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    if target in modules:
                        here.add(target)
                    elif base in modules:
                        here.add(base)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of `graph`: each strongly connected group of two or more modules (or a module that
    imports itself), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1 or node in graph.get(node, ()):
                        found.append(sorted(group))
    return sorted(found)


def test_no_two_modules_import_each_other_directly_or_around_a_circle():
    """A circle of imports is concepts in the wrong module (the corpus index once lived in the links stage, which
    imported the store, which imported the near-duplicate stage, which imported the links stage). Imports inside
    functions and under TYPE_CHECKING count: they hide a circle, they do not untie it."""
    graph = module_graph()
    gone = sorted(edge for edge in KNOWN_CIRCLE_EDGES if edge[1] not in graph.get(edge[0], ()))
    assert not gone, f"no longer imported, take them off KNOWN_CIRCLE_EDGES: {gone}"
    for importer, imported in KNOWN_CIRCLE_EDGES:
        graph[importer] = graph[importer] - {imported}
    found = circles(graph)
    assert not found, "modules that import each other, around a circle:\n" + "\n".join(
        " <-> ".join(group)
        + "\n    "
        + "\n    ".join(f"{a} -> {b}" for a in group for b in sorted(graph[a]) if b in group)
        for group in found
    )


def test_the_circle_finder_finds_a_circle_and_only_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert circles(graph) == [["a", "b", "c"], ["e"]]
    assert circles({"a": {"b"}, "b": set()}) == []


DRIVER = ("kbtools.check.run", "kbtools.check.pipeline")  # the driver, and the pipeline that starts it
STORE = ("kbtools.check.store", "kbtools.check.run")  # the store, and the driver's scope and memo over it


def test_no_stage_imports_the_store_or_the_scope():
    """A stage only judges (kbtools.check.stage): what is kept, reused and widened is the driver's
    (kbtools.check.run). Every module that defines a Stage imports neither the store nor the scope, directly
    or through any module it imports under check/ (the driver and the pipeline excepted)."""
    graph = module_graph()
    files = {
        p.relative_to(REPO).with_suffix("").as_posix().replace("/", "."): p for p in REPO.glob("kbtools/check/*.py")
    }
    stages = sorted(name for name, path in files.items() if "(Stage)" in path.read_text())
    assert {"kbtools.check.links", "kbtools.check.similar", "kbtools.check.schema", "kbtools.check.shelf"} <= set(
        stages
    )
    for stage in stages:
        reached, frontier = set(), [stage]
        while frontier:
            for imported in {m for m in graph[frontier.pop()] - reached if not m.startswith(DRIVER)}:
                reached.add(imported)
                frontier.append(imported)
        wrong = {m for m in reached if m.startswith(STORE)}
        assert not wrong, f"{stage} reaches {sorted(wrong)}"


def test_under_check_only_the_driver_and_the_store_import_the_store():
    """What is kept between runs is the driver's business alone: no module under kbtools/check/ other than the
    driver's package and the store's own imports the store (nor the driver's scope or memo, which read it).
    Outside check/, only what writes no record result may: a move's journal hashes bytes as the store does."""
    graph = module_graph()
    under_check = [m for m in graph if m.startswith("kbtools.check.") and not m.startswith(DRIVER + STORE)]
    assert "kbtools.check.load" in under_check and "kbtools.check.compute.incremental" in under_check
    wrong = {m: sorted(i for i in graph[m] if i.startswith(STORE)) for m in under_check}
    assert not {m: i for m, i in wrong.items() if i}, wrong


def test_a_corpus_carries_no_state_of_the_run_that_made_it():
    """Outputs get one shape of corpus: the store, the scope and what a run chose (complete, on demand) are the
    run's (kbtools.check.run.driver.CheckRun), never fields of the corpus."""
    from dataclasses import fields

    from kbtools.corpus import Corpus

    names = {f.name for f in fields(Corpus)}
    assert not names & {"cache", "scope", "complete", "on_demand", "store"}, names
    assert not hasattr(Corpus, "judged") and not hasattr(Corpus, "sources_linking_to")


def test_a_usage_error_is_caught_once_in_the_cli():
    """Every refusal a command makes (an unknown record, a query kb cannot read, an output place it will not
    write) is a UsageError (kbtools.diagnostics), said in one line with exit 2 by the CLI's one handler: no
    command handler catches one to say it itself."""
    from kbtools.diagnostics import UsageError

    tree = ast.parse((REPO / "kbtools" / "cli.py").read_text())
    handlers = [
        (function.name, name.id if isinstance(name, ast.Name) else name.attr)
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef)
        for handler in ast.walk(function)
        if isinstance(handler, ast.ExceptHandler) and handler.type is not None
        for name in (handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type])
        if isinstance(name, ast.Name | ast.Attribute)
    ]
    refusals = {
        "AuthoringError": "kbtools.authoring.new",
        "ChangedMeanwhile": "kbtools.atomic",
        "ExplainError": "kbtools.outputs.explain",
        "OutputError": "kbtools.outputs.targets",
        "PlanError": "kbtools.outputs.plan",
        "QueryError": "kbtools.outputs.query",
    }
    for name, module in refusals.items():
        assert issubclass(getattr(importlib.import_module(module), name), UsageError), name
    caught = [(function, name) for function, name in handlers if name in refusals or name == "UsageError"]
    assert caught == [("_guarded", "UsageError")], caught


def test_no_module_over_700_lines_and_no_class_over_250():
    """The sizes issue 43 set, so that a concept too big for one reading is split before it lands: Cache had
    422 lines and measure.py 1,086 when it was filed."""
    too_big = []
    for path in sorted((REPO / "kbtools").rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > 700:
            too_big.append(f"{path.relative_to(REPO)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and (node.end_lineno or 0) - node.lineno + 1 > 250:
                too_big.append(
                    f"{path.relative_to(REPO)}: class {node.name}, {node.end_lineno - node.lineno + 1} lines"
                )
    assert too_big == [], too_big
