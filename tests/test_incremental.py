"""A stale cache must never hide an error: incremental and full checks agree after any edit."""

from __future__ import annotations

import os
import random
import re
import sys
from pathlib import Path

import pytest
from conftest import REPO, kb_store

sys.path.insert(0, str(REPO / "benchmarks"))
from generate import generate  # noqa: E402

from kbtools.check.pipeline import check_corpus, checked, start_run  # noqa: E402
from kbtools.corpus import Settings  # noqa: E402


def diagnostics(root: Path, cached: bool) -> list[tuple]:
    corpus = check_corpus(Settings(root=root), use_cache=cached, complete=not cached, scoped=cached)
    return sorted((d.path, d.line, d.column, d.code, d.message) for d in corpus.diagnostics)


CHAIN_MIDDLE = """---
id: chain-m
type: measurement
name: Chain middle
status: verified
confidence: 0.7
updated: 2026-11-25
sources: [source-000001]
basis: measured
metric: KV transfer rate
value: 10 GB/s
measured_by: vendor
published: 2026-11-01
engine: engine-000000
accelerators: [accelerator-000000]
inputs:
  tier: storage-tiers/chain-tier
  size: 1 GB
costs:
  read_time:
    formula: size / tier.bandwidth
    unit: ms
---
Read by [[flops/chain-f]]; reads one gigabyte from [[storage-tiers/chain-tier]].
"""

CHAIN_END = """---
id: chain-f
type: flop
name: Chain end
status: verified
confidence: 0.7
updated: 2026-11-25
sources: [source-000001]
basis: secondary
class: kv_transfer
bound_by: storage
inputs:
  m: measurements/chain-m
costs:
  twice:
    formula: m.read_time * 2
    unit: ms
    stated: {stated}
---
Twice the time of [[measurements/chain-m]].
"""

CHAIN_HEAD = """---
id: chain-tier
type: storage_tier
name: Chain head
status: verified
confidence: 0.7
updated: 2026-11-25
sources: [source-000001]
basis: measured
medium: nvme
path: tiered-offload
bandwidth: 20 GB/s
---
Read by [[measurements/chain-m]].
"""

TIER = "records/storage-tiers/chain-tier.md"


def add_chain(root: Path) -> str:
    """tier -> measurement (a cost reading the tier's bandwidth) -> FLOP class (a stated cost reading that cost):
    the FLOP class reads the tier only through the measurement's value, so only a transitive closure sees it."""
    (root / TIER).write_text(CHAIN_HEAD)
    (root / "records" / "measurements" / "chain-m.md").write_text(CHAIN_MIDDLE)
    (root / "records" / "flops" / "chain-f.md").write_text(CHAIN_END.format(stated="100 ms"))
    return TIER


def edit(root: Path, rng: random.Random) -> str:
    files = sorted((root / "records").rglob("*.md"))
    path = rng.choice(files)
    text = path.read_text()
    kind = rng.choice(
        [
            "quantity",
            "link",
            "delete",
            "rename",
            "add",
            "schema",
            "body",
            "unit",
            "yaml",
            "geometry",
            "geometry",
            "name",
        ]
        + ["quantity", "body"] * ((root / TIER).exists() and (root / "records/flops/chain-f.md").exists())
    )
    if kind == "geometry":  # a model's shape: every flop stating bytes from it is re-checked
        path = rng.choice(sorted((root / "records" / "models").glob("*.md")))
        text = path.read_text()
    if kind in ("quantity", "body") and rng.random() < 0.3 and (root / TIER).exists():
        path = root / TIER  # the head of the chain: read, through a value, two records away
        text = path.read_text()
    if kind == "quantity" and re.search(r"\d+(\.\d+)? (GB/s|TFLOP/s|W|GB)", text):
        text = re.sub(
            r"(\d+(?:\.\d+)?) (GB/s|TFLOP/s|W|GB)",
            lambda m: f"{float(m.group(1)) * rng.choice([2, 0.5, 1.001]):g} {m.group(2)}",
            text,
            count=1,
        )
    elif kind == "link":
        text = (
            text.replace("[[", "[[missing-", 1)
            if rng.random() < 0.5
            else text + f"\nSee [[{rng.choice(files).stem}]].\n"
        )
    elif kind == "delete":
        path.unlink()
        return f"delete {path.name}"
    elif kind == "rename":
        new_id = path.stem + "-renamed"
        path.unlink()
        text = text.replace(f"id: {path.stem}\n", f"id: {new_id}\n", 1)
        path = path.with_name(new_id + ".md")
    elif kind == "add":
        other = rng.choice(files)
        path = other.with_name(other.stem + f"-copy{rng.randint(0, 999)}.md")
        text = other.read_text().replace(f"id: {other.stem}\n", f"id: {path.stem}\n", 1)
    elif kind == "schema":
        schema = root / "schema" / "interconnect.schema.json"
        schema.write_text(
            schema.read_text().replace('"tolerance": 0.02', '"tolerance": 0.5')
            if rng.random() < 0.5
            else schema.read_text().replace('"tolerance": 0.5', '"tolerance": 0.02')
        )
        return "schema tolerance"
    elif kind == "geometry":
        text = re.sub(
            r"num_layers: (\d+)", lambda m: f"num_layers: {int(m.group(1)) + rng.choice([1, -1, 10])}", text, count=1
        )
    elif kind == "body":
        text = (
            text
            + "\n"
            + rng.choice(["More prose.", "A code span `[[not-a-link]]`.", "{{ nothing_here }}", "## A heading"])
            + "\n"
        )
    elif kind == "name":  # what every page linking here shows of it
        text = re.sub(r"(?m)^name: (.*)$", lambda m: f"name: {m[1]} renamed", text, count=1)
    elif kind == "unit":
        text = text.replace(" GB/s", " GB", 1)
    elif kind == "yaml":
        text = (
            text.replace("status:", "status: [", 1) if rng.random() < 0.5 else text.replace("status: [", "status:", 1)
        )
    path.write_text(text)
    if rng.random() < 0.5:  # sometimes an old mtime, so the cache's stat shortcut is exercised too
        stamp = rng.randint(1_000_000_000, 1_500_000_000)
        os.utime(path, (stamp, stamp))
    return f"{kind} {path.name}"


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_equals_full_over_random_edits(tmp_path, seed):
    root = tmp_path / "kb"
    generate(root, 60, seed=seed, defects=0.1)  # every kind of record and edit: what the edits reach is the test
    add_chain(root)
    rng = random.Random(seed)
    assert diagnostics(root, cached=True) == diagnostics(root, cached=False)
    for step in range(16):
        what = edit(root, rng)
        full = diagnostics(root, cached=False)
        incremental = diagnostics(root, cached=True)
        assert incremental == full, f"step {step}: {what}"
        assert diagnostics(root, cached=True) == full, f"step {step} (second cached run): {what}"


def test_an_edit_reaches_a_reader_two_records_away(tmp_path):
    """tier -> measurement -> FLOP class: doubling the tier's bandwidth halves the measurement's cost, so the
    FLOP class's stated figure, which reads only the measurement, no longer matches; halving it back cures it."""
    root = tmp_path / "kb"
    generate(root, 120, seed=11, defects=0.0)
    tier = root / add_chain(root)
    original = tier.read_text()

    def chain_findings(cached: bool) -> list[tuple]:
        return [d for d in diagnostics(root, cached=cached) if "chain" in d[0]]

    assert chain_findings(cached=True) == [] == chain_findings(cached=False)
    tier.write_text(re.sub(r"(?m)^bandwidth: ([\d.]+)", lambda m: f"bandwidth: {float(m[1]) * 2:g}", original))
    found = chain_findings(cached=True)
    assert [(d[0], d[3]) for d in found] == [("records/flops/chain-f.md", "KB500")]
    assert found == chain_findings(cached=False)
    tier.write_text(original + "\nA sentence that changes no value.\n")  # the value is back; the body moved on
    assert chain_findings(cached=True) == [] == chain_findings(cached=False)


@pytest.mark.slow
def test_two_kb_checks_at_once_leave_a_cache_that_agrees_with_a_full_check(tmp_path):
    """Two kb processes on one repository, started together over and over between edits: neither fails,
    each reports what a full check does, the cache stays a sound database, and the next warm run is right."""
    import sqlite3
    import subprocess

    from conftest import KB_SCRIPT

    root = tmp_path / "kb"
    generate(root, 60, seed=12, defects=0.1)
    add_chain(root)
    rng = random.Random(12)

    def full_output() -> str:  # kb check --no-cache, in this process: the two at once are the processes tested
        from conftest import run_kb

        return run_kb("--root", str(root), "check", "--no-cache").stdout

    for step in range(6):
        what = edit(root, rng)
        expected = full_output()
        both = [
            subprocess.Popen(
                [KB_SCRIPT, "--root", str(root), "check"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(2)
        ]
        results = [p.communicate(timeout=300) for p in both]
        for p, (out, err) in zip(both, results, strict=True):
            assert p.returncode in (0, 1) and "Traceback" not in err, f"step {step}: {what}: {err}"
            assert out == expected, f"step {step}: {what}"
        database = sqlite3.connect(kb_store(root))
        try:
            assert database.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            assert database.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        finally:
            database.close()
        assert diagnostics(root, cached=True) == diagnostics(root, cached=False), f"step {step}: {what}"


def test_named_file_check_reports_what_a_full_check_reports_for_it(tmp_path):
    root = tmp_path / "kb"
    generate(root, 120, seed=7, defects=0.0)
    diagnostics(root, cached=True)
    target = sorted((root / "records" / "accelerators").glob("*.md"))[0]
    target.write_text(target.read_text().replace("memory_bus_width: ", "memory_bus_width: 1", 1))
    full = [d for d in diagnostics(root, cached=False) if d[0] == target.relative_to(root).as_posix()]
    assert full and any(d[3] == "KB500" for d in full)
    cached = [d for d in diagnostics(root, cached=True) if d[0] == target.relative_to(root).as_posix()]
    assert cached == full


def build(root, out, fresh: bool):
    """`kb build --force --no-search`, in this process (what is tested is the build, not a process boundary)."""
    import shutil

    from kbtools.cli import main

    if fresh:
        shutil.rmtree(kb_store(root).parent, ignore_errors=True)  # kb's state: the cache and the run memo
        shutil.rmtree(out, ignore_errors=True)
    assert main(["--root", str(root), "build", "--force", "--no-search", "--out", str(out)]) == 0
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in out.rglob("*")
        if p.is_file() and p.name != ".kb-pages.json"
    }


@pytest.mark.slow
@pytest.mark.parametrize("seed", [4, 5])
def test_incremental_build_equals_full_build_over_random_edits(tmp_path, seed):
    import shutil

    root, twin = tmp_path / "kb", tmp_path / "twin"
    generate(root, 50, seed=seed, defects=0.1)
    rng = random.Random(seed)
    build(root, tmp_path / "site", fresh=True)
    for step in range(8):
        what = edit(root, rng)
        incremental = build(root, tmp_path / "site", fresh=False)
        shutil.rmtree(twin, ignore_errors=True)
        shutil.copytree(root, twin, ignore=shutil.ignore_patterns("_build"))
        full = build(twin, tmp_path / "twin-site", fresh=True)
        assert incremental.keys() == full.keys(), f"step {step}: {what}"
        different = [page for page in full if incremental[page] != full[page]]
        assert different == [], f"step {step}: {what}: stale pages {different[:5]}"


def test_a_rebuild_renders_only_the_pages_that_show_what_changed(tmp_path):
    """A sentence added to an accelerator's body changes its own page only: the pages linking to it show its
    name, not its prose, and are kept from the last build (the same file); renaming it re-renders them."""
    root, out = tmp_path / "kb", tmp_path / "site"
    generate(root, 80, seed=6, defects=0.0)
    build(root, out, fresh=True)
    target = sorted((root / "records" / "accelerators").glob("*.md"))[0]
    key = f"accelerators/{target.stem}"
    corpus = check_corpus(Settings(root=root), use_cache=False)
    linking = sorted({s for s, t, _, _ in corpus.edges if t == key and s != key})
    assert linking
    charts = sorted(p for p in out.glob("hardware-parameters/*.html") if p.name != "index.html")
    name = re.search(r"(?m)^name: (.*)$", target.read_text())[1]  # type: ignore[index]
    assert charts and all(f">{name}<" in p.read_text() for p in charts)  # each charts every accelerator's bandwidth
    pages = [out / f"{key}.html"] + [out / f"{k}.html" for k in linking]
    before = {p: p.stat().st_ino for p in pages}
    before_charts = {p: p.stat().st_ino for p in charts}
    target.write_text(target.read_text() + "\nOne more sentence of prose.\n")
    build(root, out, fresh=False)
    assert "One more sentence of prose." in pages[0].read_text()
    assert pages[0].stat().st_ino != before[pages[0]]
    assert [p.name for p in pages[1:] if p.stat().st_ino != before[p]] == []
    assert [p.name for p in charts if p.stat().st_ino != before_charts[p]] == []
    target.write_text(re.sub(r"(?m)^name: (.*)$", r"name: \1 Renamed", target.read_text(), count=1))
    build(root, out, fresh=False)
    assert all(" Renamed" in p.read_text() for p in pages[1:])
    assert all(" Renamed" in p.read_text() for p in charts)  # a bar's label is the record's name


@pytest.mark.slow
def test_a_cold_check_in_a_process_pool_reports_what_one_process_does(tmp_path):
    """Loading, schema validation and the body scan of a cold check run in forked workers when there are
    many files; what kb reports, and what the next warm run reports from the cache they filled, is the same."""
    import subprocess

    from conftest import KB_SCRIPT

    root = tmp_path / "kb"
    generate(root, 300, seed=13, defects=0.1)

    def check(**env: str) -> str:
        proc = subprocess.run(
            [KB_SCRIPT, "--root", str(root), "check"], capture_output=True, text=True, env={**os.environ, **env}
        )
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        return proc.stdout

    memo = kb_store(root).parent / "check-runs.sqlite"  # the whole-run answer: forgotten, so each run works
    serial = check(KB_WORKERS="1")
    kb_store(root).unlink()
    memo.unlink(missing_ok=True)
    assert check(KB_POOL_MIN="1", KB_WORKERS="2") == serial
    memo.unlink(missing_ok=True)
    assert check(KB_WORKERS="1") == serial  # warm, from what the workers stored


def scoped_check(root: Path):
    """A pre-commit kb check's corpus, and its scope (None: the run was whole)."""
    run = start_run(Settings(root=root), use_cache=True, complete=False, scoped=True)
    corpus = checked(run)
    run.close()
    return corpus, run.scope


def findings(corpus) -> list[tuple]:
    return sorted((d.path, d.line, d.column, d.code, d.message) for d in corpus.diagnostics)


def test_a_one_file_edit_judges_again_only_what_it_can_change(tmp_path):
    """The pre-commit path: after one edit, kb check reads that file and judges the records whose findings
    can depend on it, not the corpus; what it reports is what a cold check reports. A file added makes the
    run a whole one."""
    root = tmp_path / "kb"
    generate(root, 120, seed=21, defects=0.1)
    add_chain(root)
    assert scoped_check(root)[1] is None  # nothing stored yet: a whole run, which writes the index
    tier = root / TIER
    tier.write_text(re.sub(r"(?m)^bandwidth: ([\d.]+)", lambda m: f"bandwidth: {float(m[1]) * 2:g}", tier.read_text()))
    corpus, scope = scoped_check(root)
    assert scope is not None
    assert "storage-tiers/chain-tier" in scope.keys and len(scope.keys) < 20
    assert findings(corpus) == diagnostics(root, cached=False)
    assert any(d.code == "KB500" and d.path == "records/flops/chain-f.md" for d in corpus.diagnostics)
    copy = root / "records" / "flops" / "chain-g.md"
    copy.write_text((root / "records" / "flops" / "chain-f.md").read_text().replace("id: chain-f", "id: chain-g"))
    corpus, scope = scoped_check(root)
    assert scope is None
    assert findings(corpus) == diagnostics(root, cached=False)
    assert scoped_check(root)[1] is not None  # the whole run wrote the index again


@pytest.mark.parametrize("damage", ["truncated", "garbage", "findings", "ids", "foreign"])
def test_a_damaged_store_costs_a_whole_run_never_a_hidden_finding(tmp_path, damage):
    import shutil
    import sqlite3

    root = tmp_path / "kb"
    generate(root, 120, seed=22, defects=0.2)
    scoped_check(root)
    store = kb_store(root)
    target = sorted((root / "records" / "accelerators").glob("*.md"))[0]
    target.write_text(target.read_text().replace("memory_bus_width: ", "memory_bus_width: 1", 1))
    expected = diagnostics(root, cached=False)
    assert any(d[3] == "KB500" for d in expected)
    if damage == "truncated":
        with open(store, "r+b") as handle:
            handle.truncate(store.stat().st_size // 2)
    elif damage == "garbage":
        with open(store, "r+b") as handle:
            handle.seek(8192)
            handle.write(b"\xff" * 8192)
    elif damage in ("findings", "ids"):
        database = sqlite3.connect(store)
        if damage == "findings":
            database.execute("UPDATE findings SET body = 'not json'")
        else:
            database.execute("UPDATE ids SET digest = 'forged'")
        database.commit()
        database.close()
    else:  # a store written for another clone of the same files (a restored CI cache, a copied home)
        twin = tmp_path / "twin"
        shutil.copytree(root, twin)
        scoped_check(twin)
        shutil.copyfile(kb_store(twin), store)
        for extra in ("-wal", "-shm"):
            Path(str(store) + extra).unlink(missing_ok=True)
    assert findings(scoped_check(root)[0]) == expected
    assert findings(scoped_check(root)[0]) == expected


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["none", "not values", "another layout", "dangling reference", "bad unit"])
def test_a_build_reads_stored_values_and_a_damaged_one_costs_a_recomputation(tmp_path, monkeypatch, damage):
    """After an edit a build computes only what the edit can change and reads every other value from the
    store; its site is byte-identical to a cold build's, with the stored values intact or damaged."""
    import shutil
    import sqlite3

    from kbtools.check.compute.stored import FORMAT

    root, twin = tmp_path / "kb", tmp_path / "twin"
    generate(root, 80, seed=23, defects=0.1)
    build(root, tmp_path / "site", fresh=True)
    database = sqlite3.connect(kb_store(root))
    stored = database.execute("SELECT count(*) FROM compute_rows WHERE field = 'values'").fetchone()[0]
    assert stored == len(list((root / "records").rglob("*.md")))  # every record's values are kept
    edits = {
        "not values": "UPDATE compute_rows SET body = '\"not values\"' WHERE field = 'values'",
        "another layout": f"UPDATE compute_rows SET body = replace(body, '\"format\":{FORMAT}', '\"format\":0')",
        "dangling reference": 'UPDATE compute_rows SET body = replace(body, \'["ref","\', \'["ref","gone/\')',
        "bad unit": "UPDATE compute_rows SET body = replace(body, '[\"byte\",', '[\"no_such_unit\",')",
    }
    if damage in edits:
        assert database.execute(edits[damage]).rowcount > 0
        database.commit()
    database.close()
    target = sorted((root / "records" / "accelerators").glob("*.md"))[0]
    target.write_text(target.read_text() + "\nOne more sentence of prose.\n")
    shutil.copytree(root, twin)
    full = build(twin, tmp_path / "twin-site", fresh=True)
    from kbtools.check.compute.engine import Computer

    computed: list[str] = []
    run = Computer.run

    def counted(self, only=None):
        found = run(self, only)
        computed.extend(found)
        return found

    monkeypatch.setattr(Computer, "run", counted)
    for attempt in range(2):  # the damaged rows are written anew by the first
        computed.clear()
        incremental = build(root, tmp_path / "site", fresh=False)
        assert incremental.keys() == full.keys()
        assert [page for page in full if incremental[page] != full[page]] == []
        if attempt == 1:  # nothing changed since: every value is read, the repaired rows too
            assert computed == []
        elif damage == "none":  # the edited record alone: a prose edit changes no value another reads
            assert computed == [f"accelerators/{target.stem}"]
        else:
            assert len(computed) > 1  # what did not decode was computed again


@pytest.mark.slow
def test_pages_rendered_in_forked_workers_are_the_pages_one_process_renders(tmp_path, monkeypatch):
    """With the render pool on for any number of pages, a cold build and a rebuild after an edit (pages reused
    by fingerprints the workers sent back) are byte-identical to builds in one process."""
    import shutil

    root, twin = tmp_path / "kb", tmp_path / "twin"
    generate(root, 80, seed=24, defects=0.1)
    shutil.copytree(root, twin)
    import kbtools.site.pool as pool

    workers = []  # how many processes each build rendered its pages in
    count = pool.workers_for
    monkeypatch.setattr(pool, "workers_for", lambda pages: workers.append(count(pages)) or workers[-1])
    monkeypatch.setenv("KB_RENDER_POOL_MIN", "1")
    pooled = build(root, tmp_path / "site", fresh=True)
    monkeypatch.setenv("KB_RENDER_POOL_MIN", "1000000")
    alone = build(twin, tmp_path / "twin-site", fresh=True)
    assert workers[1] == 1 and (workers[0] >= 2 or len(os.sched_getaffinity(0)) < 2), workers  # one per core
    assert pooled.keys() == alone.keys() and [p for p in alone if pooled[p] != alone[p]] == []
    rng = random.Random(24)
    for step in range(3):
        what = edit(root, rng)
        shutil.rmtree(twin)
        shutil.copytree(root, twin, ignore=shutil.ignore_patterns("_build"))
        monkeypatch.setenv("KB_RENDER_POOL_MIN", "1")
        pooled = build(root, tmp_path / "site", fresh=False)
        monkeypatch.setenv("KB_RENDER_POOL_MIN", "1000000")
        alone = build(twin, tmp_path / "twin-site", fresh=True)
        assert [p for p in alone if pooled.get(p) != alone[p]] == [], f"step {step}: {what}"


def test_a_theme_error_in_a_render_worker_is_reported_as_without_workers(tmp_path, monkeypatch, capsys):
    """A record template that fails for one record only: the build refuses with the template's file, line and
    error whether the page fell to a forked worker or to kb's own process, and the old site stands."""
    from kbtools.cli import main

    root = tmp_path / "kb"
    generate(root, 40, seed=25, defects=0.0)
    out = tmp_path / "site"
    assert main(["--root", str(root), "build", "--no-search", "--out", str(out)]) == 0
    # the second page a build renders: with two workers it falls to the forked one, whose share the build
    # then does again itself (the first falls to the build's own process)
    second = list(check_corpus(Settings(root=root), use_cache=False).records)[1]
    template = root / "site" / "templates" / "record.html"
    template.parent.mkdir(parents=True, exist_ok=True)
    template.write_text(
        '{% extends "base.html" %}{% block content %}\n'
        f"{{% if key == '{second}' %}}{{{{ 1 // 0 }}}}{{% endif %}}{{{{ key }}}}\n"
        "{% endblock %}\n"
    )
    reported = []
    for pool_min in ("1", "1000000"):
        monkeypatch.setenv("KB_RENDER_POOL_MIN", pool_min)
        capsys.readouterr()
        code = main(["--root", str(root), "build", "--no-search", "--out", str(out)])
        reported.append((code, capsys.readouterr().err))
    assert reported[0] == reported[1]
    assert reported[0][0] == 2 and "site/templates/record.html:2:" in reported[0][1], reported[0]
    assert "ZeroDivisionError" in reported[0][1]
    assert (out / "index.html").is_file() and not list(tmp_path.glob("site/._*"))


@pytest.mark.slow
def test_explain_and_export_from_stored_values_are_those_of_a_run_without_a_store(tmp_path, monkeypatch, capsys):
    """kb explain walks a value's inputs eight levels deep and kb export writes every value: read from the
    store after a build and random edits, both print what a run with no store prints."""
    import json

    from kbtools.cli import main

    root = tmp_path / "kb"
    generate(root, 80, seed=26, defects=0.1)
    add_chain(root)
    store = tmp_path / "state"

    def printed(*args: str, stored: bool) -> str:
        monkeypatch.setenv("XDG_CACHE_HOME", str(store if stored else tmp_path / f"none-{len(args)}-{args[-1][-9:]}"))
        capsys.readouterr()
        main(["--root", str(root), *args])
        return capsys.readouterr().out

    def exported(stored: bool) -> dict:
        out = tmp_path / ("stored.json" if stored else "cold.json")
        out.unlink(missing_ok=True)
        printed("export", "--json", str(out), stored=stored)
        data = json.loads(out.read_text())
        data.pop("generator", None)
        return data

    rng = random.Random(26)
    build(root, tmp_path / "site", fresh=False)  # under this test's store: every value is kept
    for step in range(4):
        what = edit(root, rng)
        printed("build", "--force", "--no-search", "--out", str(tmp_path / "site"), stored=True)
        for target in ("flops/chain-f.twice", "measurements/chain-m"):
            if (root / "records" / f"{target.split('.')[0]}.md").exists():
                assert printed("explain", target, stored=True) == printed("explain", target, stored=False), what
        assert exported(stored=True) == exported(stored=False), f"step {step}: {what}"


def test_a_link_to_a_heading_is_judged_again_only_when_the_targets_headings_change(tmp_path, monkeypatch):
    """A stage says what it read (kbtools.check.stage): a [[record#heading]] link reads its target's headings,
    not its bytes. Editing the target's prose keeps the linking record's judgement; renaming the heading
    judges it again and finds the broken anchor (KB305)."""
    from kbtools.check.links import LinksStage

    root = tmp_path / "kb"
    generate(root, 30, seed=5, defects=0)
    files = sorted((root / "records").rglob("*.md"))
    target, linker = files[3], files[4]
    target_key = f"{target.parent.name}/{target.stem}"
    target.write_text(target.read_text() + "\n## Read path\n\nThe first paragraph.\n")
    linker.write_text(linker.read_text() + f"\nSee [[{target_key}#read-path]].\n")
    judged: list[str] = []
    judge = LinksStage.judge

    def counted(self, record, ctx):
        judged.append(record.path)
        return judge(self, record, ctx)

    monkeypatch.setattr(LinksStage, "judge", counted)
    linker_path = linker.relative_to(root).as_posix()

    def check() -> list[tuple]:
        judged.clear()
        return findings(check_corpus(Settings(root=root), use_cache=True, complete=False))

    assert not [f for f in check() if f[3] == "KB305"] and linker_path in judged  # cold: every record judged
    target.write_text(target.read_text().replace("The first paragraph.", "The first paragraph, reworded."))
    assert not [f for f in check() if f[3] == "KB305"]
    assert linker_path not in judged and target.relative_to(root).as_posix() in judged
    target.write_text(target.read_text().replace("## Read path", "## The read path"))
    found = check()
    assert linker_path in judged
    assert [f[0] for f in found if f[3] == "KB305"] == [linker_path]


@pytest.mark.parametrize("damage", ["none", "not values", "dangling reference", "never kept"])
def test_explain_decodes_only_what_it_reads_and_a_damaged_row_costs_a_recomputation(
    tmp_path, monkeypatch, capsys, damage
):
    """kb explain (and kb plan) read a few records' values: after a build kept every value, they decode the
    records they ask for and the records those name, not the corpus; a row that does not decode, or a reference
    that names nothing, makes them compute the values instead. Either way they print what a run with no store
    prints."""
    import sqlite3

    from kbtools.check.compute import incremental
    from kbtools.cli import main

    root = tmp_path / "kb"
    generate(root, 60, seed=27, defects=0.1)
    add_chain(root)
    store = tmp_path / "state"

    def printed(*args: str, stored: bool) -> str:
        monkeypatch.setenv("XDG_CACHE_HOME", str(store if stored else tmp_path / "none"))
        capsys.readouterr()
        main(["--root", str(root), *args])
        return capsys.readouterr().out

    if damage == "never kept":  # kb check keeps no values: explain computes what it reads, not the corpus
        printed("check", stored=True)
    else:
        printed("build", "--no-search", "--out", str(tmp_path / "site"), stored=True)  # every value kept
    edits = {
        "not values": "UPDATE compute_rows SET body = '\"not values\"' WHERE field = 'values'",
        "dangling reference": 'UPDATE compute_rows SET body = replace(body, \'["ref","\', \'["ref","gone/\')',
    }
    if damage in edits:
        database = sqlite3.connect(kb_store(root))
        assert database.execute(edits[damage]).rowcount > 0
        database.commit()
        database.close()
    decoded: list[str] = []
    record = incremental.Decoder.record

    def counted(self, key, stored):
        decoded.append(key)
        return record(self, key, stored)

    monkeypatch.setattr(incremental.Decoder, "record", counted)
    from kbtools.check.compute.engine import Computer

    computed: list[str] = []

    run = Computer.run

    def computing(self, only=None):
        found = run(self, only)
        computed.extend(found if only is not None else ["(every record)"])
        return found

    monkeypatch.setattr(Computer, "run", computing)
    expected = printed("explain", "flops/chain-f", stored=False)
    computed.clear()
    assert printed("explain", "flops/chain-f", stored=True) == expected
    records = len(list((root / "records").rglob("*.md")))
    if damage == "never kept":
        assert not decoded and 0 < len(computed) < records / 4, computed
    else:
        assert 0 < len(set(decoded)) < records / 4  # the record explained and what it reads, not the corpus
