"""kbtools.open, the Python API: docs/api.md is its contract, and every example there runs here."""

from __future__ import annotations

import contextlib
import datetime
import io
import os
import re
from pathlib import Path

import pytest
from conftest import REPO, TEST_GPU, TEST_MLA_MODEL

import kbtools
from kbtools.api import ClosedError, Link

PAGE = REPO / "docs" / "api.md"
BLOCK = re.compile(r"```python\n(?P<code>.*?)```\s*(?:```text\n(?P<out>.*?)```)?", re.S)


def examples() -> list[tuple[str, str | None]]:
    """Every ```python block of the page, with the ```text block right after it (what it prints), if any."""
    return [(m["code"], m["out"]) for m in BLOCK.finditer(PAGE.read_text(encoding="utf-8"))]


def test_every_example_of_the_page_runs_and_prints_what_the_page_shows():
    found = examples()
    assert len(found) >= 6 and all(out is not None for _, out in found), "each example shows what it prints"
    namespace: dict = {}
    saved = os.getcwd()
    os.chdir(REPO)  # the page opens "." : the repository's root
    try:
        for code, expected in found:
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(compile(code, str(PAGE), "exec"), namespace)
            assert printed.getvalue() == expected, f"the example\n{code}\nprinted\n{printed.getvalue()}"
    finally:
        os.chdir(saved)
        opened = namespace.get("kb")
        if opened is not None:
            opened.close()
    assert namespace["kb"].closed  # the page closes what it opens
    assert store_files_open(REPO) == []


GPU = TEST_GPU
MODEL = TEST_MLA_MODEL


def small(kb):
    kb.source()
    kb.record("models", "mla-model", "model", MODEL)
    # the body's first line is line 19: 1 fence, 7 envelope lines, the 9 lines of GPU, 1 fence
    kb.record("accelerators", "gpu-a", "accelerator", GPU, body="Serves [[mla-model]].\n")
    return kb


def store_files_open(root: Path) -> list[str]:
    """The files of kb's store for `root` this process holds open."""
    from kbtools.state import state_dir

    state = str(state_dir(root, create=False))
    names = []
    for fd in list(os.listdir("/proc/self/fd")):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(state):
                names.append(target)
    return names


def test_records_fields_values_and_links_of_a_small_knowledge_base(kb):
    small(kb)
    with kbtools.open(kb.root) as opened:
        assert set(opened.records) == {"sources/src-a", "models/mla-model", "accelerators/gpu-a"}
        gpu = opened.record("gpu-a")
        assert gpu is opened.records["accelerators/gpu-a"] and gpu.type == "accelerator"
        assert gpu.path == "records/accelerators/gpu-a.md" and gpu.body == "Serves [[mla-model]].\n"
        # as written, and as typed: a quantity in its field's unit (GB/s for memory bandwidth), a date a date
        assert gpu.data["memory_bandwidth"] == "4.8 TB/s"
        bandwidth = gpu["memory_bandwidth"]
        assert (bandwidth.value, bandwidth.unit) == (4800.0, "GB/s") and bandwidth.to("TB/s") == pytest.approx(4.8)
        assert not bandwidth.computed and str(bandwidth) == "4,800 GB/s"
        assert gpu["updated"] == datetime.date(2026, 11, 29) and gpu["vendor"] == "V"
        assert gpu.get("host_link") is None
        # derived by the schema: 61 layers x (512 + 64) latent and rotary elements x 2 B
        kv = opened.record("models/mla-model").figure("kv_bytes_per_token")
        assert kv.computed and kv.unit == "B/token" and kv.value == pytest.approx(61 * (512 + 64) * 2)
        assert kv.low == kv.high == kv.value and kv.formula
        with pytest.raises(KeyError, match="no value 'nope'"):
            gpu.figure("nope")
        body = Link("accelerators/gpu-a", "models/mla-model", "body", 19)
        assert body in gpu.links and body in opened.record("mla-model").backlinks and body in opened.links
        assert opened.of_type("model") == [opened.records["models/mla-model"]]
        assert "accelerator" in opened.types and not opened.errors
    assert opened.closed


def test_diagnostics_are_what_kb_check_reports(kb):
    small(kb)
    kb.record("accelerators", "gpu-b", "accelerator", "vendor: V\n", body="Next to [[gpu-nope]].\n")
    reported = kb.check_json()["diagnostics"]
    with kbtools.open(kb.root) as opened:
        mine = [(d.code, d.path, d.line, d.column, d.message) for d in opened.diagnostics]
        assert mine == [(d["code"], d["path"], d["line"], d["column"], d["message"]) for d in reported]
        broken = opened.record("gpu-b").diagnostics
        assert broken and all(d.path == "records/accelerators/gpu-b.md" for d in broken)
        assert opened.errors and {d.code for d in opened.errors} <= {d["code"] for d in reported}


def test_the_store_is_open_inside_the_with_block_and_closed_after_it(kb):
    small(kb)
    kb.check()  # a store to answer from
    with kbtools.open(kb.root) as opened:
        assert not opened.closed
        model = opened.record("mla-model")
        model.figures  # noqa: B018 -- read before the close, so kept
    assert store_files_open(kb.root) == []
    assert model.figure("kv_bytes_per_token").value == pytest.approx(70272)
    assert opened.record("gpu-a").data["vendor"] == "V"  # records stay readable
    with pytest.raises(ClosedError, match="inside its with-block"):
        opened.record("gpu-a").figures  # noqa: B018 -- never read while open
    opened.close()  # twice is harmless


def test_close_without_with_and_an_error_inside_the_block(kb):
    small(kb)
    opened = kbtools.open(kb.root / "records" / "models")  # any directory inside the knowledge base
    assert opened.root == kb.root and not opened.closed
    opened.close()
    assert opened.closed and store_files_open(kb.root) == []
    with pytest.raises(ZeroDivisionError), kbtools.open(kb.root) as inside:
        inside.record("gpu-a").figures["nope"] = 1 / 0
    assert store_files_open(kb.root) == []


def test_cold_open_keeps_no_state(kb, tmp_path, monkeypatch):
    small(kb)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "state"))
    with kbtools.open(kb.root, cache=False) as opened:
        assert opened.record("mla-model").figure("kv_bytes_per_token").value == pytest.approx(70272)
    assert not (tmp_path / "state").exists()


def test_not_a_knowledge_base(tmp_path):
    with pytest.raises(FileNotFoundError, match="no knowledge base"):
        kbtools.open(tmp_path)
