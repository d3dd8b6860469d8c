"""A warm `kb check` with nothing changed answers from the last run's result (kbtools/check/run/memo.py), and
that answer is always the one a cold, uncached check gives: after any edit, addition, removal, schema or
settings change, and with a corrupt store."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import KB_SCRIPT

PAST_NS = 1_600_000_000 * 10**9  # 2020: far older than the racy-clean window


@pytest.fixture(autouse=True)
def own_state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "state"))


def age(root: Path) -> None:
    """Every file under records/ modified long ago, so that its stat alone may say it is unchanged."""
    for path in (root / "records").rglob("*"):
        os.utime(path, ns=(PAST_NS, PAST_NS), follow_symlinks=False)


def engine(kb, id_: str, body: str = "Uses [[src-a]].\n", extra: str = "kind: serving-engine\n") -> Path:
    return kb.record("engines", id_, "engine", extra, body)


def small(kb) -> None:
    kb.source()
    engine(kb, "a", "Uses [[src-a]] and [[b]].\n")
    engine(kb, "b", "Uses [[src-a]] and [[a]].\n")
    age(kb.root)


def cold(kb, *args: str):
    return kb.check("--no-cache", *args)


def test_a_warm_check_with_nothing_changed_reads_no_record(kb, monkeypatch):
    small(kb)
    first = kb.check()
    import kbtools.check.pipeline as pipeline

    def no_pipeline(*_args, **_kw):
        raise AssertionError("the pipeline ran although nothing changed")

    monkeypatch.setattr(pipeline, "start_run", no_pipeline)
    again = kb.check()
    assert (again.exit_code, again.out) == (first.exit_code, first.out)
    assert "checked 3 records" in again.out


def test_a_warm_check_in_a_fresh_process_imports_no_parser_or_unit_library(kb):
    small(kb)
    kb.check()
    probe = (
        "import sys; from kbtools.cli import main; code = main(['--root', sys.argv[1], 'check']);"
        "heavy = [m for m in ('yaml', 'jsonschema', 'pint', 'markdown_it', 'networkx') if m in sys.modules];"
        "print('HEAVY', heavy); sys.exit(code)"
    )
    python = str(Path(KB_SCRIPT).parent / "python")
    result = subprocess.run([python, "-c", probe, str(kb.root)], capture_output=True, text=True, timeout=120)
    assert "HEAVY []" in result.stdout, result.stdout + result.stderr


def test_a_file_modified_within_the_racy_window_is_not_trusted_by_its_stat(kb, monkeypatch):
    small(kb)
    engine(kb, "a", "Uses [[src-a]] and [[b]] and [[nowhere]].\n")  # just now: racily clean
    first = kb.check()
    assert first.find("KB302")
    import kbtools.check.run.memo as memo

    assert memo.recall(_settings(kb), memo.fingerprint(_settings(kb))) is None  # no memo was kept


def _settings(kb):
    from kbtools.corpus import Settings

    return Settings.configured(kb.root)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_every_answer_from_the_memo_is_the_cold_answer_over_random_edits(kb, seed):
    rng = random.Random(seed)
    small(kb)
    names = ["a", "b"]
    kb.check()
    for step in range(12):
        action = rng.choice(["edit", "break", "add", "remove", "same-size", "schema", "settings"])
        if action == "edit" and names:
            engine(kb, rng.choice(names), f"Uses [[src-a]] ({step}).\n")
        elif action == "break" and names:
            engine(kb, rng.choice(names), f"Uses [[src-a]] and [[missing-{step}]].\n")
        elif action == "add":
            names.append(f"n{step}")
            engine(kb, names[-1], f"Uses [[src-a]] and [[{rng.choice(names)}]].\n")
        elif action == "remove" and len(names) > 1:
            (kb.root / "records" / "engines" / f"{names.pop(rng.randrange(len(names)))}.md").unlink()
        elif action == "same-size" and names:
            path = kb.root / "records" / "engines" / f"{rng.choice(names)}.md"
            text = path.read_text()
            path.write_text(text.replace("[[src-a]]", "[[src-b]]", 1))  # a dangling link, same size
        elif action == "schema":
            schema = kb.root / "schema" / "engine.schema.json"
            schema.write_text(schema.read_text().replace('"title"', ' "title"', 1))
        elif action == "settings":
            kb.write("kb.toml", f'title = "Run {step}"\n[severity]\nKB306 = "{rng.choice(["error", "off"])}"\n')
        age(kb.root)
        warm = kb.check()  # a fresh fingerprint: an answer from the memo only if nothing changed
        fresh = cold(kb)
        assert (warm.exit_code, warm.out) == (fresh.exit_code, fresh.out), (step, action)
        import kbtools.check.run.memo as memo

        assert memo.recall(_settings(kb), memo.fingerprint(_settings(kb))) is not None  # the memo holds it
        again = kb.check()  # now from the memo
        assert (again.exit_code, again.out) == (warm.exit_code, warm.out), (step, action)
        for form in ("json", "sarif"):
            assert kb.check("--format", form).out == cold(kb, "--format", form).out


def test_a_corrupt_or_truncated_memo_costs_a_full_check_never_a_wrong_answer(kb):
    import kbtools.check.run.memo as memo

    small(kb)
    good = kb.check().out
    store = memo._store(_settings(kb), create=False)
    engine(kb, "b", "Uses [[src-a]] and [[a]] and [[gone]].\n")
    age(kb.root)
    broken = kb.check()
    assert broken.find("KB302")
    connection = sqlite3.connect(store)
    body = connection.execute("SELECT body FROM runs").fetchone()[0]
    connection.execute("UPDATE runs SET body = ?", (body.replace("KB302", "KB999"),))  # altered, digest kept
    connection.commit()
    connection.close()
    assert kb.check().out == broken.out and broken.out != good
    store.write_bytes(store.read_bytes()[:100])  # truncated
    assert kb.check().out == broken.out
    store.write_bytes(b"not a database at all")
    assert kb.check().out == broken.out
