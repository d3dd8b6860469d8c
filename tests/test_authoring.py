"""kb new: skeletons that pass kb check as drafts, wired to their sources, never overwriting."""

import datetime as dt

import pytest


@pytest.mark.parametrize(
    "type_, name",
    [
        ("accelerator", "Acme X1 (SXM)"),
        ("engine", "Fast Engine 2.0"),
        ("model", "Tiny-LM 7B"),
        ("flop", "Prefix hit from CXL memory"),
        ("interconnect", "CXL 3.0 x16"),
        ("storage_tier", "CXL memory pool"),
        ("measurement", "TTFT at 8K"),
        ("hardware_parameter", "HBM stacks"),
        ("source", "Acme X1 datasheet"),
    ],
)
def test_new_record_of_every_type_checks_clean_as_draft(kb, type_, name):
    kb.source()
    args = ["new", type_, "--name", name] + (
        ["--source", "src-a"] if type_ not in ("source", "hardware_parameter") else []
    )
    result = kb.run(*args)
    assert result.exit_code == 0, result.err
    written = result.out.split()[1]
    text = (kb.root / written).read_text()
    assert "status: draft" in text and f"updated: {dt.date.today().isoformat()}" in text
    check = kb.check()
    errors = [l for l in check.lines if " error " in l]
    assert errors == [], check.out


def test_id_is_made_from_the_name(kb):
    kb.source()
    assert kb.run("new", "accelerator", "--name", "NVIDIA H200 SXM", "--source", "src-a").out.startswith(
        "wrote records/accelerators/nvidia-h200-sxm.md"
    )


def test_never_overwrites(kb):
    kb.source()
    assert kb.run("new", "engine", "--name", "E", "--source", "src-a").exit_code == 0
    path = kb.root / "records/engines/e.md"
    path.write_text(path.read_text() + "My own words.\n")
    again = kb.run("new", "engine", "--name", "E", "--source", "src-a")
    assert again.exit_code == 2 and "already exists" in again.err  # a usage error, as README says
    assert path.read_text().endswith("My own words.\n")
    assert [p.name for p in path.parent.iterdir()] == ["e.md"]  # no temp files left behind
    assert kb.run("new", "engine", "--name", "E", "--source", "src-a", "--force").exit_code == 0
    assert "My own words." not in path.read_text()


def test_refuses_missing_or_unknown_sources_and_types(kb):
    kb.source()
    assert "must cite at least one source" in kb.run("new", "engine", "--name", "E").err
    assert "no source record 'nope'" in kb.run("new", "engine", "--name", "E", "--source", "nope").err
    assert "no record type 'gizmo'" in kb.run("new", "gizmo", "--name", "E", "--source", "src-a").err
