"""Every case of the bad-input catalogue: a diagnostic at the right file and line, fast, no traceback."""

from __future__ import annotations

import os
import time

import pytest
from catalogue import CASES, render
from conftest import REPO


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input(kb, case):
    kb.source()
    for rel, content in case.files.items():
        if isinstance(content, str) and content.startswith("SYMLINK:"):
            (kb.root / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(content.removeprefix("SYMLINK:"), kb.root / rel)
        elif content == "FIFO:":
            (kb.root / rel).parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(kb.root / rel)
        else:
            kb.write(rel, content if isinstance(content, bytes) else content.encode("utf-8"))
    start = time.monotonic()
    result = kb.check(*case.extra.get("args", []))
    elapsed = time.monotonic() - start
    if case.seconds:
        assert elapsed < case.seconds, f"took {elapsed:.1f} s"
    assert result.exit_code in (0, 1), result.err
    assert "Traceback" not in result.out + result.err
    if case.code is None:
        assert not [l for l in result.lines if l.startswith(case.path) and " error " in l], result.out
        return
    prefix = f"{case.path}:{case.line}:" if case.line else f"{case.path}:"
    found = [l for l in result.lines if l.startswith(prefix) and f" {case.code} " in l]
    assert found, f"expected {case.code} at {prefix}\n{result.out}"
    if "columns" in case.extra:
        assert [int(l[len(prefix) :].split(":")[0]) for l in found] == case.extra["columns"], found
    assert result.exit_code == (0 if case.code in ("KB305", "KB306", "KB307", "KB511") else 1)


def test_every_other_case_names_a_test_that_exists():
    import importlib

    from catalogue import OTHER_CASES, test_path

    for _, name, _, test in OTHER_CASES:
        module, _, function = test_path(test).partition("::")
        assert callable(getattr(importlib.import_module(module.removesuffix(".py")), function, None)), (name, test)


def test_catalogue_document_is_current():
    assert (REPO / "docs" / "bad-input.md").read_text() == render(), "python tests/catalogue.py > docs/bad-input.md"
    assert len(CASES) >= 60
