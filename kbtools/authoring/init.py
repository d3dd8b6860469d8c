"""`kb init [DIR]`: a new knowledge base that passes `kb check` and `kb build` at once.

What it writes: a configuration (kb.toml), a starter schema set with an example record per type, a
.pre-commit-config.yaml running kb's published hooks, the GitHub workflow that checks, builds and
publishes the site, a README with the two set-up commands, and a .gitignore. It writes into an empty
or new directory, or (asked with `existing=True`) only the files a directory lacks; it never
replaces a file.

Type sets: `minimal` is the envelope, `defs` and `source` schemas and one example type (`device`);
`inference-cost` is this repository's own schemas (the packaged starter links to schema/, so there is
one copy), with a draft record of every type that cross-cite one another.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

from kbtools import __version__
from kbtools.atomic import create_file
from kbtools.authoring.new import AuthoringError, skeleton
from kbtools.registry import load_registry

STARTER = Path(__file__).resolve().parent.parent / "starter"
TYPE_SETS = ("minimal", "inference-cost")
SHARED_SCHEMAS = ("envelope.schema.json", "defs.schema.json", "source.schema.json")
EXAMPLE_SOURCE = "example-datasheet"


@dataclass
class Plan:
    """The files kb init would write: relative path -> text."""

    files: dict[str, str] = field(default_factory=dict)

    def add(self, rel: str, text: str) -> None:
        self.files[rel] = text


@dataclass(frozen=True)
class KbSource:
    """Where kb itself comes from, for the hooks and the CI of the new knowledge base."""

    requirement: str  # what pip installs in CI
    hook_repo: str | None  # a git repository pre-commit can clone (None: run the installed kb)
    hook_rev: str | None
    note: str = ""  # said in the files when the source is a guess


def kb_source() -> KbSource:
    """kb's own origin, from the installer's record of it (PEP 610 direct_url.json)."""
    for distribution in metadata.distributions(name="kbtools"):
        text = distribution.read_text("direct_url.json")
        if not text:
            continue
        try:
            origin = json.loads(text)
        except ValueError:
            continue
        url, vcs = origin.get("url", ""), origin.get("vcs_info") or {}
        if vcs.get("vcs") == "git" and vcs.get("commit_id"):
            return KbSource(f"kbtools @ git+{url}@{vcs['commit_id']}", url, vcs["commit_id"])
        if url.startswith("file://"):
            directory = Path(unquote(urlsplit(url).path))
            remote, head = _git(directory, "remote", "get-url", "origin"), _git(directory, "rev-parse", "HEAD")
            if remote and head:
                return KbSource(f"kbtools @ git+{remote}@{head}", remote, head)
            if head:  # a local clone with no remote: the hooks can use it, a CI machine cannot
                return KbSource(
                    f"kbtools @ git+file://{directory}@{head}",
                    str(directory),
                    head,
                    note=f"kb was installed from a local clone ({directory}); point CI at a repository it can reach",
                )
    return KbSource(
        f"kbtools=={__version__}",
        None,
        None,
        note="kb's repository is unknown (it was installed from a package index); the hooks run the installed kb",
    )


def _git(directory: Path, *args: str) -> str | None:
    try:
        run = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return run.stdout.strip() or None if run.returncode == 0 else None


def plan_files(types: str, title: str, source: KbSource, today: dt.date | None = None) -> Plan:
    if types not in TYPE_SETS:
        raise AuthoringError(f"no type set '{types}' (known: {', '.join(TYPE_SETS)})")
    plan = Plan()
    plan.add(
        "kb.toml",
        f"# kb's settings for this knowledge base (see kb's docs/configuration.md)\ntitle = {json.dumps(title)}\n",
    )
    schemas = STARTER / "inference-cost"
    if types == "minimal":
        for name in SHARED_SCHEMAS:
            plan.add(f"schema/{name}", (schemas / name).read_text(encoding="utf-8"))
        plan.add("schema/device.schema.json", (STARTER / "minimal" / "device.schema.json").read_text(encoding="utf-8"))
        for path in sorted((STARTER / "minimal" / "records").rglob("*.md")):
            rel = path.relative_to(STARTER / "minimal").as_posix()
            plan.add(rel, path.read_text(encoding="utf-8"))
    else:
        for path in sorted(schemas.glob("*.schema.json")):
            plan.add(f"schema/{path.name}", path.read_text(encoding="utf-8"))
        plan.files.update(_drafts(schemas, today or dt.date.today()))
    plan.add(".pre-commit-config.yaml", _hooks(source))
    plan.add(".github/workflows/kb.yml", _workflow(source))
    plan.add(".gitignore", ".kb-cache/\nsite/_build/\n")
    plan.add("README.md", _readme(title, source))
    return plan


def _drafts(schemas: Path, today: dt.date) -> dict[str, str]:
    """A draft of every type, each citing the example source and naming the other drafts where its schema
    wants a record (so every reference resolves and every draft is linked)."""
    registry = load_registry(schemas, schemas.parent)
    examples = {name: f"example-{t.dir.rstrip('s')}" for name, t in registry.types.items()}
    source_type = next((n for n, t in registry.types.items() if registry.has_role(n, "source")), None)
    if source_type is None:
        raise AuthoringError("the type set has no type with the source role (x-kb-role: source)")
    examples[source_type] = EXAMPLE_SOURCE
    out: dict[str, str] = {}
    for name, record_type in sorted(registry.types.items()):
        record_id = examples[name]
        label = f"Example {record_type.title.lower()}"
        if name == source_type:
            links = ", ".join(f"[[{t.dir}/{examples[n]}]]" for n, t in sorted(registry.types.items()) if n != name)
            text = _source_draft(record_type.name, record_id, today, links)
        else:
            text = skeleton(record_type, record_id, label, [EXAMPLE_SOURCE], today=today, examples=examples)
        out[f"records/{record_type.dir}/{record_id}.md"] = text
    return out


def _source_draft(type_name: str, record_id: str, today: dt.date, links: str) -> str:
    return (
        "---\n"
        f"id: {record_id}\n"
        f"type: {type_name}\n"
        "name: Example datasheet (an example)\n"
        "status: draft\n"
        "confidence: 0.5\n"
        f"updated: {today.isoformat()}\n"
        "url: https://example.com/datasheets/card.pdf\n"
        "publisher: Example Corp\n"
        "kind: datasheet\n"
        "origin: first-party\n"
        "notes: An example source written by kb init. Replace it with a document you have opened.\n"
        "---\n"
        f"An example source. The example records cite it: {links}.\n"
    )


def _hooks(source: KbSource) -> str:
    head = "# kb's hooks: records, links and recomputed figures are checked before every commit.\n"
    files = r"^(records/.*\.md|schema/.*\.json|kb\.toml|pyproject\.toml)$"
    if source.hook_repo and source.hook_rev:
        note = f"# {source.note}\n" if source.note else ""
        return (
            f"{head}{note}repos:\n"
            f"  - repo: {source.hook_repo}\n"
            f"    rev: {source.hook_rev}\n"
            "    hooks: [{id: kb-check}, {id: kb-fmt}]\n"
        )
    return (
        f"{head}# {source.note}: install kb in the environment that runs git.\n"
        "repos:\n"
        "  - repo: local\n"
        "    hooks:\n"
        f"      - {{id: kb-check, name: kb check, entry: kb check, language: system, files: '{files}', require_serial: true}}\n"
        "      - {id: kb-fmt, name: kb fmt --check, entry: kb fmt --check, language: system, files: '^records/.*\\.md$', require_serial: true}\n"
    )


def _workflow(source: KbSource) -> str:
    """kb's own workflow for knowledge bases, installing kb from where it came from."""
    text = (STARTER / "workflow.yml").read_text(encoding="utf-8")
    install = "run: python -m pip install -e ."
    if install not in text:
        raise AuthoringError("the packaged workflow has no install step to adapt (kbtools/starter/workflow.yml)")
    note = f"  # {source.note}" if source.note else ""
    return text.replace(install, f"run: python -m pip install {json.dumps(source.requirement)}{note}", 1)


def _readme(title: str, source: KbSource) -> str:
    return f"""# {title}

A knowledge base checked by [kb](https://pypi.org/project/kbtools/): Markdown records with YAML
frontmatter under `records/`, one JSON Schema per type under `schema/`. `kb check` validates every
record, resolves every link and recomputes every derived figure; `kb build` makes the site.

## Set-up

    python3 -m venv .venv && .venv/bin/pip install '{source.requirement}' && .venv/bin/kb check && .venv/bin/kb build
    .venv/bin/pip install pre-commit && .venv/bin/pre-commit install

The first installs kb, checks the records and builds the site into `site/_build/`. The second runs
the same check before every commit.

## Writing

- `kb new TYPE --name "..." --source SOURCE-ID` writes a draft record; `kb fmt` keeps frontmatter canonical.
- `kb explain DIR/ID` shows how each value was computed; `kb query` and `kb export` read the checked records.
- Settings (title, paths, severities) live in `kb.toml`. A file under `site/templates/` or `site/static/`
  overrides kb's theme file of that name.
"""


def init(
    target: Path, types: str = "minimal", title: str | None = None, existing: bool = False
) -> tuple[list[str], list[str]]:
    """Write the knowledge base; (written, kept as they were) as relative paths."""
    if target.exists() and not target.is_dir():
        raise AuthoringError(f"{target} is a file, not a directory")
    if target.is_dir() and any(target.iterdir()) and not existing:
        entries = sorted(p.name for p in target.iterdir())
        shown = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
        raise AuthoringError(
            f"{target} is not empty ({shown}); kb init writes into an empty or new directory, "
            "or pass --existing to add only the files it lacks (nothing is ever replaced)"
        )
    name = title or _title_of(target)
    plan = plan_files(types, name, kb_source())
    written, kept = [], []
    for rel, text in plan.files.items():
        path = target / rel
        if os.path.lexists(path):
            kept.append(rel)
            continue
        try:
            create_file(path, text)
        except FileExistsError:  # made meanwhile: still never replaced
            kept.append(rel)
            continue
        written.append(rel)
    return written, kept


def _title_of(target: Path) -> str:
    words = re.sub(r"[-_]+", " ", target.resolve().name).strip()
    return (words[:1].upper() + words[1:]) if words else "Knowledge base"
