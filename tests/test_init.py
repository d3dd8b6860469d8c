"""`kb init`, driven as a new user drives it: the installed console script in a fresh directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import REPO, git, run_kb
from packaging.requirements import Requirement

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


def test_the_inference_cost_types_are_this_repositorys_schemas_with_a_quiet_example_of_each(tmp_path):
    target = tmp_path / "kb"
    assert kb("init", str(target), "--types", "inference-cost", "--title", "Our inference costs").returncode == 0
    for schema in (REPO / "schema").glob("*.schema.json"):
        assert (target / "schema" / schema.name).read_text() == schema.read_text()
    check = kb("--root", str(target), "check")

    # an example of every type but one that must name several records of a type (a fit's cases): the starter has
    # one example of each; the workload among them, which kb plan plans with
    def drafted(schema: dict) -> bool:
        several = any(
            schema["properties"][name].get("minItems", 0) > 1
            and "x-kb-ref" in schema["properties"][name].get("items", {})
            for name in schema.get("required", ())
        )
        return bool(schema.get("x-kb-dir")) and not several

    types = [p for p in (REPO / "schema").glob("*.schema.json") if drafted(json.loads(p.read_text()))]
    assert len(types) >= 11 and (target / "records" / "workloads" / "example-workload.md").is_file()
    # the examples' figures are made up, not kb new's placeholders: nothing to report, --strict included
    assert check.returncode == 0, check.stdout
    assert check.stdout.strip() == f"checked {len(types)} records: 0 errors, 0 warnings"
    assert kb("--root", str(target), "check", "--strict").returncode == 0
    assert kb("--root", str(target), "fmt", "--check").returncode == 0  # canonical already: a kb-fmt hook passes
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
    dangling = [line for line in errors if " KB300 " in line]  # a reference kb new cannot guess: "TODO", "TODO-2"
    assert errors == dangling, errors
    for line in dangling:
        assert "no record 'TODO" in line


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


# kb's own clone as a user may have it: a tiny repository named kbtools (an in-tree build backend, so pip reads
# its metadata offline), cloned, with the clone's origin set each way `git remote get-url origin` can print it
TINY_BACKEND = """\
import os


def prepare_metadata_for_build_wheel(directory, config_settings=None):
    info = os.path.join(directory, "kbtools-0.0.1.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\\nName: kbtools\\nVersion: 0.0.1\\n")
    return "kbtools-0.0.1.dist-info"


def build_wheel(directory, config_settings=None, metadata_directory=None):
    raise NotImplementedError
"""
TOKEN = "ghp_0123456789abcdefSECRET"
NETWORK_ORIGINS = {
    "https": ("https://github.com/example/kb.git", "git+https://github.com/example/kb.git"),
    "https without .git": ("https://gitlab.example.org/group/kb", "git+https://gitlab.example.org/group/kb"),
    "https with a token": (
        f"https://x-access-token:{TOKEN}@github.com/example/kb.git",
        "git+https://github.com/example/kb.git",
    ),
    "https with a token as the user": (
        f"https://{TOKEN}@github.com/example/kb.git",
        "git+https://github.com/example/kb.git",
    ),
    "ssh://": ("ssh://git@github.com/example/kb.git", "git+ssh://git@github.com/example/kb.git"),
    "scp-like": ("git@github.com:example/kb.git", "git+ssh://git@github.com/example/kb.git"),
}


@pytest.fixture
def upstream(tmp_path) -> Path:
    """kb's repository: what the clone's origin names."""
    repo = tmp_path / "repos" / "kb upstream"  # a space: the URL must quote it
    repo.mkdir(parents=True)
    (repo / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )
    (repo / "backend.py").write_text(TINY_BACKEND)
    assert git(repo, "init", "-q").returncode == 0
    assert git(repo, "add", ".").returncode == 0
    assert git(repo, "commit", "-qm", "kb").returncode == 0
    return repo


def clone_of(upstream: Path, into: Path, origin: str | None) -> Path:
    """A clone of `upstream` at `into` whose origin is `origin` (None: no origin)."""
    into.parent.mkdir(parents=True, exist_ok=True)
    made = git(into.parent, "clone", "-q", str(upstream), into.name)
    assert made.returncode == 0, made.stderr
    changed = (
        git(into, "remote", "remove", "origin") if origin is None else git(into, "remote", "set-url", "origin", origin)
    )
    assert changed.returncode == 0, changed.stderr
    return into


def written_for(clone: Path) -> tuple[str, dict[str, str]]:
    """What kb init writes when kb comes from `clone`: the requirement, the same in the README's set-up line
    and in the workflow's install step, and the files."""
    from kbtools.authoring.init import clone_source, plan_files

    source = clone_source(clone)
    assert source is not None
    files = plan_files("minimal", "T", source).files
    readme = re.findall(r"\.venv/bin/pip install '([^']+)' && \.venv/bin/kb check", files["README.md"])
    workflow = re.findall(r"run: python -m pip install (\"[^\"]*\")", files[".github/workflows/kb.yml"])
    assert len(readme) == 1 and len(workflow) == 1, (readme, workflow)
    assert json.loads(workflow[0]) == readme[0]
    return readme[0], files


def head_of(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").stdout.strip()


def pip_dry_run(requirement: str) -> subprocess.CompletedProcess:
    """What pip makes of the line, offline: it clones the repository at the commit and reads its metadata."""
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_CONFIG_FILE=os.devnull)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            requirement,
        ],
        capture_output=True,
        text=True,
        env=env,
    )


@pytest.mark.parametrize("form", NETWORK_ORIGINS)
def test_a_network_origin_becomes_a_requirement_pip_reads_with_no_credentials(tmp_path, upstream, form):
    origin, url = NETWORK_ORIGINS[form]
    clone = clone_of(upstream, tmp_path / "kb", origin)
    line, files = written_for(clone)
    commit = head_of(clone)
    assert line == f"kbtools @ {url}@{commit}"
    requirement = Requirement(line)
    assert requirement.name == "kbtools"
    assert requirement.url is not None and requirement.url.startswith(("git+https://", "git+ssh://"))
    parts = urlsplit(requirement.url.removeprefix("git+"))
    assert parts.password is None and (parts.scheme == "ssh" or parts.username is None)
    for text in files.values():  # never a token in a file: the hooks name the repository without it too
        assert TOKEN not in text
    assert "installs kb here only" not in " ".join(files["README.md"].split())  # CI can reach it: nothing to say


@pytest.mark.parametrize("form", ["absolute path", "file:// URL", "relative path", "no origin"])
def test_a_repository_on_this_machine_becomes_a_requirement_pip_installs_and_the_readme_says_it_is_local(
    tmp_path, upstream, form
):
    clone = tmp_path / "work" / "kb"
    origin = {
        "absolute path": str(upstream),
        "file:// URL": upstream.as_uri(),
        "relative path": os.path.relpath(upstream, clone),  # ../../repos/kb upstream: git reads it from the clone
        "no origin": None,
    }[form]
    clone_of(upstream, clone, origin)
    assert git(clone, "ls-remote", "origin").returncode == (0 if origin else 128)  # as git reads it
    line, files = written_for(clone)
    installed = pip_dry_run(line)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "Would install kbtools-0.0.1" in installed.stdout
    assert line.endswith(f"@{head_of(clone)}")
    local = clone if origin is None else upstream
    readme = " ".join(files["README.md"].split())
    assert (
        f"kb comes from a repository on this machine ({local.resolve()}), so that `pip install` line installs kb here only"
        in readme
    )
    assert "point CI at a repository it can reach" in files[".github/workflows/kb.yml"]
