"""`kb init [DIR]`: a new knowledge base that passes `kb check` and `kb build` at once.

What it writes: a configuration (kb.toml), a starter schema set with an example record per type, a
.pre-commit-config.yaml running kb's published hooks, the GitHub workflow that checks, builds and
publishes the site, a README with the two set-up commands, and a .gitignore. It writes into an empty
or new directory, or (asked with `existing=True`) only the files a directory lacks; it never
replaces a file. In a directory that has kb's settings already (kb.toml, or [tool.kb] in pyproject.toml)
it writes none, which would change them, and puts records and schemas where those settings say; into a
schema directory that holds schemas it adds no starter types or example records (they would become types
and records of that knowledge base). Every path is checked before the first is written: none is written
through a symbolic link or below a file, so nothing lands outside the directory.

Type sets: `minimal` is the envelope, `defs` and `source` schemas and one example type (`device`);
`inference-cost` is this repository's own schemas (the packaged starter links to schema/, so there is
one copy), with an example record of every type that cross-cite one another: `kb new TYPE --set ...`'s guided
drafts, given the made-up values of starter/inference-cost-examples.yml, so the base checks with nothing to
report and its example workload plans at once.

kb init warns when the directory lies inside another knowledge base (enclosing_base).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path, PurePosixPath
from urllib.parse import quote, unquote, urlsplit

import yaml

from kbtools.atomic import create_file
from kbtools.authoring.new import AuthoringError, Peer, guided
from kbtools.config import config_file, load_config
from kbtools.diagnostics import one_line
from kbtools.registry import load_registry
from kbtools.version import __version__

STARTER = Path(__file__).resolve().parent.parent / "starter"
TYPE_SETS = ("minimal", "inference-cost")
SHARED_SCHEMAS = ("envelope.schema.json", "defs.schema.json", "source.schema.json")
EXAMPLE_SOURCE = "example-datasheet"
EXAMPLE_VALUES = "inference-cost-examples.yml"  # the values of its example records


@dataclass
class Plan:
    """The files kb init would write: relative path -> text."""

    files: dict[str, str] = field(default_factory=dict)

    def add(self, rel: str, text: str) -> None:
        self.files[rel] = text


@dataclass(frozen=True)
class Layout:
    """Where the knowledge base keeps its parts: kb's defaults, or what the settings it has say."""

    records: str = "records"
    schema: str = "schema"
    site: str = "site"
    settings: str | None = None  # the file that holds kb's settings already: kb init writes none
    title: str | None = None  # the title those settings give
    starter: bool = True  # the starter schemas and example records (not into a schema set a base has)

    @classmethod
    def of(cls, target: Path) -> Layout:
        found = config_file(target) if target.is_dir() else None
        # a mistake in the settings is kb check's to report (KB120); the paths it could read stand
        settings = load_config(target)[0] if found is not None else {}
        schema = settings.get("schema_dir", cls.schema)
        return cls(
            records=settings.get("records_dir", cls.records),
            schema=schema,
            site=settings.get("site_dir", cls.site),
            settings=found.name if found is not None else None,
            title=settings.get("title"),
            starter=not any((target / schema).glob("*.schema.json")),
        )


@dataclass(frozen=True)
class KbSource:
    """Where kb itself comes from, for the hooks and the CI of the new knowledge base."""

    requirement: str  # what pip installs in CI
    hook_repo: str | None  # a git repository pre-commit can clone (None: run the installed kb)
    hook_rev: str | None
    note: str = ""  # said in the files when the source is a guess
    local: Path | None = None  # the requirement names a repository on this machine: it installs here only


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
            source = git_source(url, vcs["commit_id"], Path.cwd())
            if source is not None:
                return source
        if url.startswith("file://"):
            source = clone_source(Path(unquote(urlsplit(url).path)))
            if source is not None:
                return source
    return KbSource(
        f"kbtools=={__version__}",
        None,
        None,
        note="kb's repository is unknown (it was installed from a package index); the hooks run the installed kb",
    )


def clone_source(clone: Path) -> KbSource | None:
    """kb from a clone on this machine (an editable install): its origin, at the commit checked out; the clone
    itself when it has no origin that pip can install from. None: not a git clone."""
    head = _git(clone, "rev-parse", "HEAD")
    if head is None:
        return None
    remote = _git(clone, "remote", "get-url", "origin")
    # a relative origin is relative to the top of the working tree, as git reads it
    base = Path(_git(clone, "rev-parse", "--show-toplevel") or clone)
    source = git_source(remote, head, base) if remote else None
    if source is not None:
        return source
    directory = clone.resolve()
    return KbSource(
        direct_reference(str(directory), head, directory),
        str(directory),
        head,
        note=f"kb was installed from a local clone ({directory}); point CI at a repository it can reach",
        local=directory,
    )


def git_source(remote: str, commit: str, base: Path) -> KbSource | None:
    """kb from the git repository `remote` at `commit`; None: a remote pip cannot install from."""
    url = _pip_git_url(remote, base)
    if url is None:
        return None
    if not url.startswith("file:"):
        return KbSource(direct_reference(remote, commit, base), url, commit)
    path = Path(unquote(urlsplit(url).path))
    return KbSource(
        direct_reference(remote, commit, base),
        str(path),
        commit,
        note=f"kb's repository is a path on this machine ({path}); point CI at a repository it can reach",
        local=path,
    )


def direct_reference(remote: str, commit: str, base: Path) -> str:
    """The PEP 508 requirement `kbtools @ git+URL@COMMIT` that pip installs, for a git remote as `git remote
    get-url origin` prints it or as pip records it (direct_url.json): an https or http URL (any credentials
    dropped: a token is never written into a file), ssh://, scp-like `user@host:path` (as the ssh:// URL),
    git://, a file:// URL, or a local path (a relative one resolved against `base`, as git resolves it).
    Raises ValueError for a remote pip cannot install from (a remote helper's `transport::address`)."""
    url = _pip_git_url(remote, base)
    if url is None:
        raise ValueError(f"pip cannot install from the git remote {_without_credentials(remote)!r}")
    return f"kbtools @ git+{url}@{commit}"


_SCP = re.compile(r"(?:(?P<user>[^@/]+)@)?(?P<host>\[[^\]/]+\]|[^:/\[\]]+):(?P<path>.*)", re.DOTALL)
_HELPER = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*::")
_NETWORK = {"https": "https", "http": "http", "ssh": "ssh", "git+ssh": "ssh", "ssh+git": "ssh", "git": "git"}


def _pip_git_url(remote: str, base: Path) -> str | None:
    """`remote` as a URL that both pip (after its `git+`) and git read; None when there is none."""
    remote = remote.strip()
    if remote.startswith("git+") and "://" in remote:  # pip's spelling (a URL pip recorded or was given)
        remote = remote[len("git+") :]
    if "://" in remote:
        parts = urlsplit(remote)
        scheme = parts.scheme.lower()
        if scheme == "file":
            return _file_url(Path(unquote(parts.path)), base)
        if scheme not in _NETWORK or not parts.hostname:
            return None
        host = parts.netloc.rpartition("@")[2]
        if _NETWORK[scheme] == "ssh" and parts.username:  # the account ssh logs in as (git@): never a password
            host = f"{parts.username}@{host}"
        return f"{_NETWORK[scheme]}://{host}{parts.path}" + (f"?{parts.query}" if parts.query else "")
    if _HELPER.match(remote):  # a remote helper's transport::address: git's own, nothing pip runs
        return None
    scp = _SCP.fullmatch(remote)
    if scp and not (os.name == "nt" and len(scp["host"]) == 1):  # C:\... is a path on Windows
        # `host:owner/repo` is relative to the account's home on the server; forges (GitHub, GitLab, ...) read
        # both spellings as the same repository, which is what an ssh:// URL of the path names
        user = f"{scp['user']}@" if scp["user"] else ""
        return f"ssh://{user}{scp['host']}/{scp['path'].lstrip('/')}"
    return _file_url(Path(remote), base)


def _file_url(path: Path, base: Path) -> str:
    # file://localhost/: pip before 24.1 (its packaging 21.3) refuses `git+file:///path` in a requirement, as a
    # URL with no host; every pip and git read the localhost form. `@` is quoted: pip splits the commit off at it
    return "file://localhost" + quote((base / path).resolve().as_posix(), safe="/")


def _without_credentials(remote: str) -> str:
    return re.sub(r"(://)[^/@]*@", r"\1", remote)


def _git(directory: Path, *args: str) -> str | None:
    try:
        run = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return run.stdout.strip() or None if run.returncode == 0 else None


def plan_files(
    types: str, title: str, source: KbSource, today: dt.date | None = None, layout: Layout = Layout()
) -> Plan:
    if types not in TYPE_SETS:
        raise AuthoringError(f"no type set '{types}' (known: {', '.join(TYPE_SETS)})")
    plan = Plan()
    if layout.settings is None:
        plan.add(
            "kb.toml",
            f"# kb's settings for this knowledge base (see kb's docs/configuration.md)\ntitle = {json.dumps(title)}\n",
        )
    schemas = STARTER / "inference-cost"
    starter: dict[str, str] = {}
    if types == "minimal":
        for name in SHARED_SCHEMAS:
            starter[f"schema/{name}"] = (schemas / name).read_text(encoding="utf-8")
        starter["schema/device.schema.json"] = (STARTER / "minimal" / "device.schema.json").read_text(encoding="utf-8")
        for path in sorted((STARTER / "minimal" / "records").rglob("*.md")):
            starter[path.relative_to(STARTER / "minimal").as_posix()] = path.read_text(encoding="utf-8")
    else:
        for path in sorted(schemas.glob("*.schema.json")):
            starter[f"schema/{path.name}"] = path.read_text(encoding="utf-8")
        starter.update(_drafts(schemas, today or dt.date.today()))
    if layout.starter:
        moved = {"records": layout.records, "schema": layout.schema}
        for rel, text in starter.items():
            top, _, rest = rel.partition("/")
            plan.add(f"{moved[top]}/{rest}", text)
    plan.add(".pre-commit-config.yaml", _hooks(source, layout))
    plan.add(".github/workflows/kb.yml", _workflow(source, layout))
    plan.add(".gitignore", f".kb-cache/\n{layout.site}/_build/\n")
    plan.add("README.md", _readme(title, source, layout))
    return plan


def _drafts(schemas: Path, today: dt.date) -> dict[str, str]:
    """An example record of every type, each citing the example source and naming the other examples where its
    schema wants a record (so every reference resolves and every example is linked). Each is the guided draft of
    `kb new TYPE --set ...` (kbtools.authoring.new.guided), given the values of inference-cost-examples.yml: made-up
    figures that need no placeholder, so a new knowledge base checks quietly and its workload plans at once."""
    registry = load_registry(schemas, schemas.parent)
    examples = {name: f"example-{t.dir.rstrip('s')}" for name, t in registry.types.items()}
    source_type = next((n for n, t in registry.types.items() if registry.has_role(n, "source")), None)
    if source_type is None:
        raise AuthoringError("the type set has no type with the source role (x-kb-role: source)")
    examples[source_type] = EXAMPLE_SOURCE
    text = (STARTER / EXAMPLE_VALUES).read_text(encoding="utf-8").replace('"{today}"', today.isoformat())
    values = yaml.safe_load(text) or {}
    # a type that must name several records of one type (a fit, its cases) cannot be drafted from one example of each
    drafted = sorted(n for n, t in registry.types.items() if n != source_type and not _needs_several_records(t.schema))
    peers = [Peer(name, examples[name], values.get(name) or {}) for name in drafted]
    out: dict[str, str] = {}
    for name in drafted:
        record_type = registry.types[name]
        record_id = examples[name]
        label = f"Example {record_type.title.lower()}"
        cited = f"[[{registry.types[source_type].dir}/{EXAMPLE_SOURCE}]]"
        body = (
            f"{label}, written by kb init: its figures are made up, citing {cited}. Replace them with those of a "
            "real one, from a document you have opened, or delete this record."
        )
        given = values.get(name) or {}
        draft, _ = guided(
            registry, record_type, record_id, label, [EXAMPLE_SOURCE], given, peers, today, body, examples
        )
        out[f"records/{record_type.dir}/{record_id}.md"] = draft
    links = ", ".join(f"[[{registry.types[n].dir}/{examples[n]}]]" for n in drafted)
    out[f"records/{registry.types[source_type].dir}/{EXAMPLE_SOURCE}.md"] = _source_draft(
        source_type, EXAMPLE_SOURCE, today, links
    )
    return out


def _needs_several_records(schema: dict) -> bool:
    """The schema requires a list of at least two references (x-kb-ref items, minItems above 1)."""
    properties = schema.get("properties") or {}
    for name in schema.get("required") or ():
        field = properties.get(name) or {}
        if field.get("type") == "array" and "x-kb-ref" in (field.get("items") or {}) and field.get("minItems", 0) > 1:
            return True
    return False


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


def _hooks(source: KbSource, layout: Layout) -> str:
    head = "# kb's hooks: records, links and recomputed figures are checked before every commit.\n"
    records, schema = re.escape(layout.records), re.escape(layout.schema)
    files = rf"^({records}/.*\.md|{schema}/.*\.json|kb\.toml|pyproject\.toml)$"
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
        f"      - {{id: kb-fmt, name: kb fmt --check, entry: kb fmt --check, language: system, files: '^{records}/.*\\.md$', require_serial: true}}\n"
    )


def _workflow(source: KbSource, layout: Layout) -> str:
    """kb's own workflow for knowledge bases, installing kb from where it came from."""
    text = (STARTER / "workflow.yml").read_text(encoding="utf-8")
    install = "run: python -m pip install -e ."
    if install not in text:
        raise AuthoringError("the packaged workflow has no install step to adapt (kbtools/starter/workflow.yml)")
    note = f"  # {source.note}" if source.note else ""
    text = text.replace("path: site/_build", f"path: {layout.site}/_build")
    return text.replace(install, f"run: python -m pip install {json.dumps(source.requirement)}{note}", 1)


def _readme(title: str, source: KbSource, layout: Layout) -> str:
    settings = "`[tool.kb]` in `pyproject.toml`" if layout.settings == "pyproject.toml" else "`kb.toml`"
    local = (
        f"""
kb comes from a repository on this machine ({source.local}), so that `pip install` line installs kb here
only: CI cannot reach the path. Put the address of a kb repository it can reach in its place, here and in
`.github/workflows/kb.yml` (`kbtools @ git+https://HOST/OWNER/REPO.git@COMMIT`).
"""
        if source.local is not None
        else ""
    )
    # kb is on no package index: link the repository it came from, where a browser can open one
    web = source.hook_repo if source.hook_repo and re.match(r"https?://", source.hook_repo) else None
    kb = f"[kb]({web.removesuffix('.git')})" if web else "kb (the first set-up command below installs it)"
    return f"""# {title}

A knowledge base checked by {kb}: Markdown records with YAML
frontmatter under `{layout.records}/`, one JSON Schema per type under `{layout.schema}/`. `kb check` validates every
record, resolves every link and recomputes every derived figure; `kb build` makes the site.

## Set-up

    python3 -m venv .venv && .venv/bin/pip install '{source.requirement}' && .venv/bin/kb check && .venv/bin/kb build
    .venv/bin/pip install pre-commit && .venv/bin/pre-commit install

The first installs kb, checks the records and builds the site into `{layout.site}/_build/`. The second runs
the same check before every commit.
{local}
## Writing

- `kb new TYPE --name "..." --source SOURCE-ID` writes a draft record; `kb fmt` keeps frontmatter canonical.
- `kb explain DIR/ID` shows how each value was computed; `kb query` and `kb export` read the checked records.
- Settings (title, paths, severities) live in {settings}. A file under `{layout.site}/templates/` or `{layout.site}/static/`
  overrides kb's theme file of that name.
"""


def init(
    target: Path, types: str = "minimal", title: str | None = None, existing: bool = False
) -> tuple[list[str], list[str]]:
    """Write the knowledge base; (written, kept as they were) as relative paths."""
    # before anything is written: text that cannot go into a UTF-8 file (a name in another encoding arrives
    # as surrogate escapes) would fail at the first file that holds it, after others were written
    _check_text("the directory", str(target))
    if title is not None:
        _check_text("--title", title)
        if not title.strip():
            raise AuthoringError("--title is empty: give the site a name, or leave --title out for the directory's")
    if target.exists() and not target.is_dir():
        raise AuthoringError(f"{target} is a file, not a directory")
    if target.is_dir() and any(target.iterdir()) and not existing:
        entries = sorted(p.name for p in target.iterdir())
        shown = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
        raise AuthoringError(
            f"{target} is not empty ({shown}); kb init writes into an empty or new directory, "
            "or pass --existing to add only the files it lacks (nothing is ever replaced)"
        )
    layout = Layout.of(target)
    name = title or layout.title or _title_of(target)
    if not (title or layout.title):
        _check_text("the directory's name, the title when --title is not given,", name)
    plan = plan_files(types, name, kb_source(), layout=layout)
    # a path that exists is kept as it is (a symbolic link too: nothing is written through it)
    kept = [rel for rel in plan.files if os.path.lexists(target / rel)]
    refused = _unsafe_parents(target, [rel for rel in plan.files if rel not in kept])
    if refused:
        raise AuthoringError(
            "; ".join(refused.values()) + "; kb init writes nothing through a symbolic link or below a file, "
            f"so nothing was written (make {' and '.join(refused)} a directory of the knowledge base's own)"
        )
    written = []
    for rel, text in plan.files.items():
        if rel in kept:
            continue
        path = target / rel
        try:
            create_file(path, text)
        except FileExistsError:  # made meanwhile: still never replaced
            kept.append(rel)
            continue
        written.append(rel)
    return written, kept


def enclosing_base(target: Path) -> str | None:
    """A warning when `target` lies inside another knowledge base (a directory above it holds kb.toml, or [tool.kb]
    in pyproject.toml; its git work tree too, whose top is such a directory): the new one would sit among that
    one's files and in its work tree, which is seldom meant. None when it does not."""
    for parent in Path(os.path.abspath(target)).parents:
        found = config_file(parent) if parent.is_dir() else None
        if found is not None:
            tree = " and git work tree" if _git(parent, "rev-parse", "--git-dir") else ""
            return (
                f"{target} is inside the knowledge base at {parent} (its {found.name}); the new knowledge base is "
                f"separate, but its files sit in that one's directory{tree}: if you did not mean that, remove it and "
                "run kb init in a directory outside it"
            )
    return None


def _check_text(what: str, text: str) -> None:
    """AuthoringError unless `text`, an argument kb init writes into its files or prints, is one line of UTF-8
    text: what the configuration's title (KB120 otherwise), a README heading and a terminal need."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # each byte Python could not decode (a surrogate escape, U+DC80 to U+DCFF) shown as the byte it was
        shown = "".join(f"\\x{ord(c) - 0xDC00:02x}" if "\udc80" <= c <= "\udcff" else c for c in text)
        raise AuthoringError(
            f"{what} '{one_line(shown)}' is not UTF-8 text (bytes of another encoding); kb writes UTF-8 files, "
            "so nothing was written"
        ) from None
    if one_line(text) != text:
        raise AuthoringError(
            f"{what} '{one_line(text)}' holds control characters; give one line of text, so nothing was written"
        )


def _unsafe_parents(target: Path, rels: list[str]) -> dict[str, str]:
    """The directories inside `target` that a file of `rels` would be written through that are symbolic
    links (the file would land wherever the link points) or not directories at all: path -> why."""
    refused: dict[str, str] = {}
    for rel in rels:
        parts = PurePosixPath(rel).parts
        for depth in range(1, len(parts)):
            sub = "/".join(parts[:depth])
            path = target / sub
            if path.is_symlink():
                refused.setdefault(sub, f"{sub} is a symbolic link (to {os.readlink(path)}): {rel} would land there")
                break
            if not os.path.lexists(path):
                break  # the rest is made new, inside the target
            if not path.is_dir():
                refused.setdefault(sub, f"{sub} is a file, not a directory to hold {rel}")
                break
    return refused


def _title_of(target: Path) -> str:
    words = re.sub(r"[-_]+", " ", target.resolve().name).strip()
    return (words[:1].upper() + words[1:]) if words else "Knowledge base"
