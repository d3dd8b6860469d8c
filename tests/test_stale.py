"""Stale figures: a field changed in git while prose still quotes the old number."""

import pytest
from conftest import git as run_git

RECORD = """---
id: pcie-6-x16
type: interconnect
name: PCIe 6.0 x16
status: draft
confidence: 0.5
updated: 2026-11-29
sources: [src-a]
kind: pcie
scope: host
bandwidth_per_direction: {value}
---
PCIe 6.0 x16 moves 128 GB/s each way, about 1.0e2 GB/s after framing.
Computed: {{{{ bandwidth_per_direction }}}}. In code: `128 GB/s`. Also 0.128 TB/s, and 128 GB (a capacity).
The first tables printed ~~128 GB/s~~, an old figure struck through, which is not a stale quote.
"""
READER = """---
id: reader
type: engine
name: Reader
status: draft
confidence: 0.5
updated: 2026-11-29
sources: [src-a]
kind: serving-engine
---
Over [[pcie-6-x16]] it reads at 128 GB/s.
"""


def git(root, *args):
    proc = run_git(root, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def history(kb):
    kb.source()
    kb.write("records/interconnects/pcie-6-x16.md", RECORD.format(value="128 GB/s"), dedent=False)
    kb.write("records/engines/reader.md", READER, dedent=False)
    git(kb.root, "init", "-q", "-b", "main")
    git(kb.root, "add", "-A")
    git(kb.root, "commit", "-q", "-m", "first")
    kb.write("records/interconnects/pcie-6-x16.md", RECORD.format(value="242 GB/s"), dedent=False)
    return kb


def test_since_reports_both_places(history):
    result = history.check("--since", "HEAD")
    assert result.exit_code == 1
    stale = history.check("--since", "HEAD").find("KB600")
    assert stale == [
        "records/engines/reader.md:11:33: error KB600 quotes 128 GB/s, the old value of interconnects/pcie-6-x16.bandwidth_per_direction "
        "(now 242 GB/s, changed since HEAD at records/interconnects/pcie-6-x16.md:11); quote it as {{ interconnects/pcie-6-x16.bandwidth_per_direction }} instead",
        "records/interconnects/pcie-6-x16.md:13:20: error KB600 quotes 128 GB/s, the old value of interconnects/pcie-6-x16.bandwidth_per_direction "
        "(now 242 GB/s, changed since HEAD at records/interconnects/pcie-6-x16.md:11); quote it as {{ interconnects/pcie-6-x16.bandwidth_per_direction }} instead",
        "records/interconnects/pcie-6-x16.md:14:68: error KB600 quotes 0.128 TB/s, the old value of interconnects/pcie-6-x16.bandwidth_per_direction "
        "(now 242 GB/s, changed since HEAD at records/interconnects/pcie-6-x16.md:11); quote it as {{ interconnects/pcie-6-x16.bandwidth_per_direction }} instead",
    ]


def test_pre_commit_path_reports_it_for_the_named_file(history):
    result = history.check(str(history.root / "records/interconnects/pcie-6-x16.md"))
    assert result.exit_code == 1
    assert len(result.find("KB600")) == 3


def test_fixed_prose_is_clean_and_bad_revision_is_a_usage_error(history):
    path = history.root / "records/interconnects/pcie-6-x16.md"
    path.write_text(
        RECORD.format(value="242 GB/s")
        .replace("128 GB/s each way", "242 GB/s each way")
        .replace("0.128 TB/s", "0.242 TB/s")
    )
    reader = history.root / "records/engines/reader.md"
    reader.write_text(
        READER.replace("128 GB/s", "{{ pcie-6-x16.bandwidth_per_direction }}").replace(
            "{{ pcie-6", "{{ interconnects/pcie-6"
        )
    )
    assert history.check("--since", "HEAD").find("KB600") == []
    assert history.check("--since", "no-such-rev").exit_code == 2
