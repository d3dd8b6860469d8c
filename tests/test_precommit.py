"""The published hook, run by the real pre-commit framework on a real `git commit`."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import GIT_ENV, REPO, git

GOOD = textwrap.dedent("""\
    ---
    id: src-a
    type: source
    name: A source
    status: draft
    confidence: 0.5
    updated: 2026-11-29
    kind: docs
    publisher: Someone
    ---
    Cited by [[engines/e]].
    """)
ENGINE = textwrap.dedent("""\
    ---
    id: e
    type: engine
    name: E
    status: draft
    confidence: 0.5
    updated: 2026-11-29
    sources: [src-a]
    kind: serving-engine
    ---
    Uses [[src-a]].
    """)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """A knowledge-base repository whose pre-commit config uses this repo's published hook."""
    head = git(REPO, "rev-parse", "HEAD")
    if head.returncode != 0:
        pytest.skip("the kb repository has no commit to pin the hook to")
    root = tmp_path_factory.mktemp("user-kb")
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path_factory.mktemp("pre-commit-home")), **GIT_ENV)
    git(root, "init", "-q", "-b", "main", env=env)
    shutil.copytree(REPO / "schema", root / "schema")
    (root / "records" / "sources").mkdir(parents=True)
    (root / "records" / "engines").mkdir(parents=True)
    (root / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {REPO}\n    rev: {head.stdout.strip()}\n    hooks:\n      - id: kb-check\n"
    )
    git(root, "add", "-A", env=env)
    git(root, "commit", "-q", "--no-verify", "-m", "schemas", env=env)
    install = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"], cwd=root, capture_output=True, text=True, env=env
    )
    assert install.returncode == 0, install.stderr
    return root, env


@pytest.mark.slow
def test_good_records_commit(hook_repo):
    root, env = hook_repo
    (root / "records/sources/src-a.md").write_text(GOOD)
    (root / "records/engines/e.md").write_text(ENGINE)
    git(root, "add", "-A", env=env)
    commit = git(root, "commit", "-m", "good records", env=env)
    assert commit.returncode == 0, commit.stdout + commit.stderr
    assert "kb check" in commit.stdout + commit.stderr and "Passed" in commit.stdout + commit.stderr


def test_bad_record_is_refused_with_its_line(hook_repo):
    root, env = hook_repo
    (root / "records/engines/e.md").write_text(ENGINE.replace("Uses [[src-a]].", "Uses [[src-b]]."))
    git(root, "add", "-A", env=env)
    commit = git(root, "commit", "-m", "bad link", env=env)
    output = commit.stdout + commit.stderr
    assert commit.returncode != 0
    assert "Failed" in output
    assert "records/engines/e.md:11:6: error KB302 dangling link [[src-b]]" in output
