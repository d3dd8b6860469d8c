"""Behaviour hangs on the schema, never on a type name in Python (issue 15).

A copy of the repository with every record type and directory renamed (accelerator -> t-accelerator's
new name, accelerators/ -> its new directory, every reference and link rewritten) must check, compute,
chart, calculate, create and show its home page exactly as the original does. And no type name, type
directory or record id is written in kbtools/.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, run_kb

TYPES = {
    p.name.removesuffix(".schema.json"): json.loads(p.read_text())["x-kb-dir"]
    for p in (REPO / "schema").glob("*.schema.json")
    if "x-kb-dir" in json.loads(p.read_text())
}
RENAMED = {name: f"r{n}" for n, name in enumerate(sorted(TYPES))}  # accelerator -> r0 ...
RENAMED_DIRS = {TYPES[name]: f"dir{n}" for n, name in enumerate(sorted(TYPES))}  # accelerators -> dir0 ...
_DIR_REF = re.compile(
    r"(?<![\w/.-])(" + "|".join(map(re.escape, sorted(RENAMED_DIRS, key=len, reverse=True))) + r")/(?=[a-z0-9])"
)


def _rename_schema(node, key=None):
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "x-kb-dir":
                out[k] = RENAMED_DIRS[v]
            elif k == "x-kb-ref":
                out[k] = [RENAMED.get(x, x) for x in v] if isinstance(v, list) else RENAMED.get(v, v)
            elif k == "const" and key == "type":
                out[k] = RENAMED.get(v, v)
            else:
                out[k] = _rename_schema(v, k)
        return out
    if isinstance(node, list):
        return [_rename_schema(x, key) for x in node]
    return node


def _rename_text(text: str) -> str:
    text = _DIR_REF.sub(lambda m: RENAMED_DIRS[m.group(1)] + "/", text)
    text = re.sub(r"^type: (\S+)$", lambda m: f"type: {RENAMED.get(m.group(1), m.group(1))}", text, count=1, flags=re.M)
    # carried_by maps type names to fields: '  accelerator: memory_bandwidth'
    return (
        re.sub(
            r"^(  )(" + "|".join(map(re.escape, TYPES)) + r"): ",
            lambda m: f"{m.group(1)}{RENAMED[m.group(2)]}: ",
            text,
            flags=re.M,
        )
        if "\ncarried_by:" in text
        else text
    )


@pytest.fixture(scope="module")
def renamed(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("renamed")
    (root / "schema").mkdir()
    for path in (REPO / "schema").glob("*.schema.json"):
        name = path.name.removesuffix(".schema.json")
        target = f"{RENAMED[name]}.schema.json" if name in RENAMED else path.name
        (root / "schema" / target).write_text(json.dumps(_rename_schema(json.loads(path.read_text())), indent=2))
    for directory in (REPO / "records").iterdir():
        out = root / "records" / RENAMED_DIRS[directory.name]
        out.mkdir(parents=True)
        for path in directory.glob("*.md"):
            (out / path.name).write_text(_rename_text(path.read_text()))
    shutil.copytree(REPO / "site" / "templates", root / "site" / "templates")
    home = root / "site" / "templates" / "home.html"  # the theme names the types its home page lists
    home.write_text(
        re.sub(r'type_index\("(\w+)"\)', lambda m: f'type_index("{RENAMED[m.group(1)]}")', home.read_text())
    )
    return root


def kb(root: Path, *args: str) -> subprocess.CompletedProcess:
    return run_kb("--root", str(root), *args)


def _values(root: Path, out: Path) -> dict:
    assert kb(root, "export", "--json", str(out)).returncode == 0
    exported = json.loads(out.read_text())
    return {r["key"].split("/", 1)[1]: r["values"] for r in exported["records"]}


def _strip_dirs(values):
    text = json.dumps(values, sort_keys=True)
    for old, new in RENAMED_DIRS.items():  # a key begins a string, or follows a space in a scenario's words
        text = re.sub(rf'(?<=["\s]){re.escape(new)}/', f"{old}/", text)
    return json.loads(text)


def _unordered_conditions(node):
    """A figure's cases with the conditions of each in one order: kb words a combination in the order of its
    conditions' record keys, and renaming the directories renames the keys, so the same combination reads
    'a and b' in one repository and 'b and a' in the other."""
    if isinstance(node, dict):
        out = {k: _unordered_conditions(v) for k, v in node.items()}
        if isinstance(out.get("cases"), list):
            out["cases"] = sorted(out["cases"], key=lambda c: json.dumps(c, sort_keys=True))
        if isinstance(out.get("over"), list):
            out["over"] = sorted(out["over"])
        return out
    if isinstance(node, list):
        return [_unordered_conditions(v) for v in node]
    if isinstance(node, str) and " and " in node:
        return " and ".join(sorted(node.split(" and ")))
    return node


@pytest.mark.slow
def test_the_renamed_repository_checks_and_computes_the_same(renamed, tmp_path):
    result = kb(renamed, "check", "--no-cache", "--strict", "--format", "json")
    assert result.returncode == 0, result.stdout[-2000:]
    assert json.loads(result.stdout)["summary"]["records"] == len(list((REPO / "records").glob("*/*.md")))
    renamed_values = _unordered_conditions(_strip_dirs(_values(renamed, tmp_path / "r.json")))
    assert renamed_values == _unordered_conditions(_values(REPO, tmp_path / "o.json"))


@pytest.mark.slow
def test_roles_still_drive_their_checks_in_the_renamed_repository(renamed):
    sources = renamed / "records" / RENAMED_DIRS["sources"]
    (sources / "uncited-doc.md").write_text(
        f"---\nid: uncited-doc\ntype: {RENAMED['source']}\nname: An uncited document\nstatus: draft\nconfidence: 0.5\n"
        "updated: 2026-11-29\nkind: docs\npublisher: P\nurl: https://example.org/uncited\n---\n"
    )
    try:
        out = kb(renamed, "check", "--no-cache").stdout
        assert (
            f"{RENAMED_DIRS['sources']}/uncited-doc.md:2:1: warning KB307 source 'uncited-doc' is cited by no record"
            in out
        )
    finally:
        (sources / "uncited-doc.md").unlink()


def test_new_and_query_work_by_the_new_names(renamed):
    result = kb(renamed, "new", RENAMED["accelerator"], "--name", "Test Chip", "--source", "nvidia-h100-datasheet")
    try:
        assert result.returncode == 0, result.stderr
        assert (renamed / "records" / RENAMED_DIRS["accelerators"] / "test-chip.md").is_file()
    finally:
        (renamed / "records" / RENAMED_DIRS["accelerators"] / "test-chip.md").unlink(missing_ok=True)
    rows = json.loads(kb(renamed, "query", f"type:{RENAMED['accelerator']}", "--format", "json").stdout)
    assert len(rows) == len(list((REPO / "records" / "accelerators").glob("*.md")))


@pytest.mark.slow
def test_the_site_keeps_its_charts_calculator_and_home_page(renamed, tmp_path):
    """The pages that chart, calculate and list by role, rendered as kb build renders them (test_site builds a
    whole site with the kb command)."""
    from site_support import rendered_from

    pages = [None, f"{RENAMED_DIRS['accelerators']}/index.html", f"{RENAMED_DIRS['accelerators']}/nvidia-h100-sxm"]
    pages += [f"{RENAMED_DIRS['hardware-parameters']}/memory-bandwidth"]
    pages += [f"{RENAMED_DIRS['flops']}/eng-profile-kv-tiering-moves-flops-to-bytes"]
    site = rendered_from(renamed, tmp_path / "site", pages)
    home = (site / "index.html").read_text()
    assert (
        home.count('<li><a href="') >= 3
        and f'href="{RENAMED_DIRS["storage-tiers"]}/index.html">Storage tiers compared' in home
    )
    assert "The seed:" in home
    chips = site / RENAMED_DIRS["accelerators"]
    assert "Rooflines compared" in (chips / "index.html").read_text()
    assert "Roofline: attainable dense FLOP/s" in (chips / "nvidia-h100-sxm.html").read_text()
    parameter = (site / RENAMED_DIRS["hardware-parameters"] / "memory-bandwidth.html").read_text()
    assert "by record" in parameter and "<svg" in parameter
    seed = (site / RENAMED_DIRS["flops"] / "eng-profile-kv-tiering-moves-flops-to-bytes.html").read_text()
    assert '<section class="calculator"' in seed and 'id="calculator-model"' in seed


def _literals(path: Path):
    tree = ast.parse(path.read_text())
    skip = set()
    # Documentation is not behaviour: the diagnostics table's examples (rendered into docs/), docstrings,
    # and the examples in a command's help text.
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
            getattr(t, "id", None) == "CODES" for t in getattr(node, "targets", [getattr(node, "target", None)])
        ):
            skip |= {id(n) for n in ast.walk(node)}
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        ):
            skip.add(id(node.body[0].value))
        if isinstance(node, ast.keyword) and node.arg == "help":
            skip |= {id(n) for n in ast.walk(node.value)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def _compared_with_a_type(path: Path):
    """Type names that are also field names (a storage tier's `accelerator`) still may not be compared with a
    record's type or looked up among the registry's types."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(x, ast.Attribute) and x.attr in ("type", "name") for x in sides):
                yield from ((node.lineno, x.value) for x in sides if isinstance(x, ast.Constant) and x.value in TYPES)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "types"
        ):
            yield from ((node.lineno, a.value) for a in node.args if isinstance(a, ast.Constant) and a.value in TYPES)


@pytest.mark.slow
def test_no_type_name_directory_or_record_id_is_written_in_kbtools():
    fields = set()
    for path in (REPO / "schema").glob("*.schema.json"):
        fields |= set(re.findall(r'"([a-z_]+)":', path.read_text()))
    from kbtools.registry import ROLES

    names = set(TYPES) - fields - set(ROLES)  # a field or role that shares a type's name is not the type
    ids = {p.stem for p in (REPO / "records").glob("*/*.md") if len(p.stem) > 8}
    found = []
    for path in sorted((REPO / "kbtools").rglob("*.py")):
        for line, text in _literals(path):
            if (
                text in names
                or text in ids
                or any(re.search(rf"(?<![\w/.-]){re.escape(d)}/", text) for d in TYPES.values())
            ):
                found.append(f"{path.relative_to(REPO)}:{line}: {text[:60]!r}")
        found += [
            f"{path.relative_to(REPO)}:{line}: {text!r} compared with a record's type"
            for line, text in _compared_with_a_type(path)
        ]
    assert not found, "behaviour keyed to a type or record by name:\n" + "\n".join(found)


def _edit_schema(kb, name, change):
    path = kb.root / "schema" / f"{name}.schema.json"
    schema = json.loads(path.read_text())
    change(schema)
    path.write_text(json.dumps(schema, indent=2))


def test_a_role_kb_does_not_know_is_a_schema_error(kb):
    _edit_schema(kb, "engine", lambda s: s.update({"x-kb-role": "sauce"}))
    found = [l for l in kb.check().find("KB210") if "x-kb-role" in l]
    assert len(found) == 1 and found[0].startswith("schema/engine.schema.json:") and "not a role kb knows" in found[0]


def test_two_types_playing_one_role_is_a_schema_error(kb):
    _edit_schema(kb, "engine", lambda s: s.update({"x-kb-role": "source"}))
    found = [l for l in kb.check().find("KB210") if "x-kb-role" in l]
    assert len(found) == 1 and "one type plays a role" in found[0]


def test_a_chart_naming_a_missing_field_is_a_schema_error(kb):
    _edit_schema(kb, "accelerator", lambda s: s["x-kb-charts"][0].update({"bandwidth": "memory_bw"}))
    found = [l for l in kb.check().find("KB210") if "x-kb-charts" in l]
    assert len(found) == 1 and '"memory_bw" is not a quantity field of accelerator' in found[0]
