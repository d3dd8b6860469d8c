"""`kb init`, driven as a new user drives it: the installed console script in a fresh directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_kb

BIN = Path(sys.executable).parent


def kb(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return run_kb(*args, cwd=cwd)


def test_a_new_knowledge_base_checks_clean_and_builds_at_once(tmp_path):
    target = tmp_path / "facilities-kb"
    made = kb("init", str(target))
    assert made.returncode == 0, made.stderr
    assert "wrote schema/device.schema.json" in made.stdout and "wrote records/devices/example-card.md" in made.stdout
    check = kb("check", cwd=target)  # found from the working directory, as a user runs it
    assert check.returncode == 0, check.stdout
    assert check.stdout.strip() == "checked 2 records: 0 errors, 0 warnings"
    build = kb("build", cwd=target)  # with search: the whole main job
    assert build.returncode == 0, build.stderr
    site = target / "site" / "_build"
    assert "<title>Facilities kb</title>" in (site / "index.html").read_text()
    assert (site / "devices" / "example-card.html").is_file() and (site / "pagefind").is_dir()
    # the example type's derived figure is recomputed: an edit of its input that is not carried through fails
    card = target / "records" / "devices" / "example-card.md"
    card.write_text(card.read_text().replace("value: 350 W", "value: 400 W"))
    check = kb("check", cwd=target)
    assert check.returncode == 1
    assert "records/devices/example-card.md:15:1: error KB500 rack_power: stated 5.6 kW" in check.stdout


def test_the_inference_cost_types_are_this_repositorys_schemas_with_a_clean_draft_of_each(tmp_path):
    target = tmp_path / "kb"
    assert kb("init", str(target), "--types", "inference-cost", "--title", "Our inference costs").returncode == 0
    for schema in (REPO / "schema").glob("*.schema.json"):
        assert (target / "schema" / schema.name).read_text() == schema.read_text()
    check = kb("--root", str(target), "check")
    # a draft of every type but one whose costs its schema supplies (a workload: a calculation over the others)
    types = [
        p
        for p in (REPO / "schema").glob("*.schema.json")
        if json.loads(p.read_text()).get("x-kb-dir") and not json.loads(p.read_text()).get("x-kb-costs")
    ]
    assert check.returncode == 0, check.stdout
    # the drafts are kb new's: every value it made up is a placeholder, which fails --strict until replaced
    warnings = [line for line in check.stdout.splitlines() if " warning " in line]
    assert warnings and all(" KB117 " in line for line in warnings), warnings
    assert check.stdout.splitlines()[-1] == f"checked {len(types)} records: 0 errors, {len(warnings)} warnings"
    assert kb("--root", str(target), "check", "--strict").returncode == 1
    assert kb("--root", str(target), "build", "--no-search").returncode == 0


def test_kb_new_writes_a_draft_that_checks_for_every_type(tmp_path):
    """Conditional requirements (a price of an accelerator-hour needs the accelerator), dates and references
    get placeholders the schema accepts; a reference names an existing record of its type."""
    target = tmp_path / "kb"
    assert kb("init", str(target), "--types", "inference-cost").returncode == 0
    for schema in sorted((REPO / "schema").glob("*.schema.json")):
        if not json.loads(schema.read_text()).get("x-kb-dir") or schema.name == "source.schema.json":
            continue
        made = kb(
            "--root",
            str(target),
            "new",
            schema.name.removesuffix(".schema.json"),
            "--name",
            "Second one",
            "--id",
            f"second-{schema.stem.split('.')[0].replace('_', '-')}",
            "--source",
            "example-datasheet",
        )
        assert made.returncode == 0, made.stderr
    check = kb("--root", str(target), "check")
    errors = [line for line in check.stdout.splitlines() if " error " in line]
    dangling = [line for line in errors if " KB300 " in line]  # a reference kb new cannot guess: "TODO"
    assert errors == dangling, errors
    for line in dangling:
        assert "no record 'TODO'" in line


def test_refuses_a_directory_that_is_not_empty_and_writes_nothing(tmp_path):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("mine\n")
    made = kb("init", str(target))
    assert made.returncode == 2
    assert "is not empty (notes.txt)" in made.stderr and "--existing" in made.stderr
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]


def test_existing_adds_only_the_missing_files_and_never_replaces_one(tmp_path):
    target = tmp_path / "mine"
    (target / "records" / "sources").mkdir(parents=True)
    (target / "README.md").write_text("# Mine\n")
    mine = target / "records" / "sources" / "example-datasheet.md"
    mine.write_text("my own words\n")
    made = kb("init", str(target), "--existing")
    assert made.returncode == 0, made.stderr
    assert "kept README.md (it exists; kb init never replaces a file)" in made.stdout
    assert "kept records/sources/example-datasheet.md" in made.stdout
    assert (target / "README.md").read_text() == "# Mine\n" and mine.read_text() == "my own words\n"
    assert (target / "schema" / "source.schema.json").is_file()


def test_the_hooks_and_the_workflow_are_valid_for_their_tools(tmp_path):
    target = tmp_path / "kb"
    assert kb("init", str(target)).returncode == 0
    config = target / ".pre-commit-config.yaml"
    valid = subprocess.run([str(BIN / "pre-commit"), "validate-config", str(config)], capture_output=True, text=True)
    assert valid.returncode == 0, valid.stdout + valid.stderr
    text = config.read_text()
    assert "{id: kb-check}" in text and "rev: " in text  # kb's published hooks, at the commit kb came from
    workflow = target / ".github" / "workflows" / "kb.yml"
    valid = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True,
        text=True,
    )
    assert valid.returncode == 0, valid.stdout + valid.stderr
    assert "pip install -e ." not in workflow.read_text() and "kbtools" in workflow.read_text()
    readme = (target / "README.md").read_text()
    assert ".venv/bin/kb check && .venv/bin/kb build" in readme and "pre-commit install" in readme


@pytest.mark.parametrize("types", ["minimal", "inference-cost"])
def test_a_new_knowledge_base_is_a_git_repository_s_worth_of_files_only(tmp_path, types):
    """What kb init writes is what a repository should hold: no cache, no build, nothing hidden besides
    the tools' own files."""
    target = tmp_path / "kb"
    assert kb("init", str(target), "--types", types).returncode == 0
    hidden = sorted(p.relative_to(target).as_posix() for p in target.rglob(".*"))
    assert hidden == [".github", ".gitignore", ".pre-commit-config.yaml"]


def test_without_a_known_kb_repository_the_hooks_run_the_installed_kb(tmp_path):
    """kb installed from a package index: no repository to name, so the hooks are local ones, and say why."""
    from kbtools.authoring.init import KbSource, plan_files

    source = KbSource("kbtools==0.1.0", None, None, note="kb's repository is unknown")
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(plan_files("minimal", "T", source).files[".pre-commit-config.yaml"])
    valid = subprocess.run([str(BIN / "pre-commit"), "validate-config", str(config)], capture_output=True, text=True)
    assert valid.returncode == 0, valid.stdout + valid.stderr
    assert "repo: local" in config.read_text() and "kb's repository is unknown" in config.read_text()
