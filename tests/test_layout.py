"""The package's layers (docs/architecture.md): what each part of kbtools may import.

A stage never imports the site or the outputs, a language imports no stage, the core (corpus,
diagnostics, registry) imports no layer above it. Lazy imports inside functions count too.
"""

from __future__ import annotations

import ast

from conftest import REPO

CORE = {"corpus", "config", "diagnostics", "registry", "progress", "atomic", "files", "ids", "state", "__init__"}
# layer -> the layers it may import (itself included)
ALLOWED = {
    "lang": {"lang"},
    "core": {"core", "lang"},
    "check": {"core", "lang", "check"},
    "outputs": {"core", "lang", "check", "outputs"},
    "site": {"core", "lang", "check", "outputs", "site"},
    "authoring": {"core", "lang", "check", "authoring"},
    "cli": {"core", "lang", "check", "outputs", "site", "authoring", "cli"},
}


def layer_of(parts: list[str]) -> str:
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
                continue  # `from kbtools import __version__`
            theirs = layer_of(parts)
            if mine == "lang" and parts == ["diagnostics"]:
                continue  # the coded-error base every layer raises (KbError); it imports nothing of kb
            if theirs not in ALLOWED[mine]:
                broken.append(f"kbtools/{path.relative_to(package)}:{line}: {mine} imports {module} ({theirs})")
    assert not broken, "imports against the layering:\n" + "\n".join(broken)


def test_every_module_sits_in_a_layer():
    """A new top-level module must be core on purpose: the list above names them."""
    package = REPO / "kbtools"
    loose = [p.stem for p in package.glob("*.py") if p.stem not in CORE | {"cli"}]
    assert not loose, f"top-level modules outside the core list: {loose}"


def test_the_cache_key_covers_every_module_of_the_package():
    """A kb edited in a subpackage must not trust a cache an older kb wrote (the key once hashed only the
    top-level files)."""
    from kbtools.check.cache import code_files

    package = REPO / "kbtools"
    expected = {p.resolve() for p in package.rglob("*.py") if "__pycache__" not in p.parts}
    expected.add((package / "lang" / "units.txt").resolve())
    assert set(code_files()) == expected
