"""What kb does not import: `import kbtools` is cheap, and a `kb check` process never imports networkx,
pydantic, python-frontmatter or kb's interop modules (README, "Libraries you may expect")."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import KB_SCRIPT, SOURCE_RECORD

NEVER_IN_CHECK = ("networkx", "pydantic", "frontmatter", "kbtools.interop", "kbtools.api")


def imported(args: list[str], cwd, env=None) -> set[str]:
    """Every module a Python process imported, as -X importtime lists them on stderr."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert names, done.stderr[-2000:]
    return names


def forbidden(names: set[str]) -> list[str]:
    return sorted(n for n in names if any(n == f or n.startswith(f + ".") for f in NEVER_IN_CHECK))


def test_import_kbtools_imports_none_of_the_heavy_libraries(tmp_path):
    names = imported(["-c", "import kbtools; kbtools.__version__"], tmp_path)
    assert "kbtools" in names
    heavy = ("pint", "jsonschema", "networkx", "pydantic", "yaml", "kbtools.api", "kbtools.interop")
    assert sorted(n for n in names if n.split(".")[0] in heavy or n in heavy) == []


def test_kb_check_never_imports_the_interop_libraries(tmp_path):
    root = tmp_path / "kb"
    (root / "records" / "sources").mkdir(parents=True)
    import shutil

    from conftest import REPO

    shutil.copytree(REPO / "schema", root / "schema")
    (root / "records" / "sources" / "src-a.md").write_text(SOURCE_RECORD, encoding="utf-8")
    env = {"XDG_CACHE_HOME": str(tmp_path / "state")}
    cold = imported([KB_SCRIPT, "--root", str(root), "check"], tmp_path, env)
    assert "kbtools.check.pipeline" in cold  # the whole check ran
    assert forbidden(cold) == []
    named = imported([KB_SCRIPT, "--root", str(root), "check", "records/sources/src-a.md"], root, env)
    assert forbidden(named) == []
    warm = imported([KB_SCRIPT, "--root", str(root), "check", "--strict"], tmp_path, env)
    assert forbidden(warm) == []
