"""Hostile schema rules and settings (issue 30, item 6): a rule whose argument has the wrong shape, a rule
taking one of kb's own codes, a plausible bound that is no finite quantity, and `kb init --existing` on a
knowledge base that has its own settings, or whose directories are symbolic links to elsewhere."""

from __future__ import annotations

import json
import re
import shutil

import pytest


def set_rules(kb, rules: list[dict]) -> str:
    """The engine schema's x-kb-constraints replaced by `rules`; its text, for line numbers."""
    path = kb.root / "schema" / "engine.schema.json"
    schema = json.loads(path.read_text())
    schema["x-kb-constraints"] = rules
    text = json.dumps(schema, indent=2)
    path.write_text(text)
    return text


def an_engine_and_its_source(kb) -> None:
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\nrepo: https://github.com/o/e\n", body="[[src-a]]\n")


def line_of(text: str, needle: str, after: str = "") -> int:
    start = text.index(after) if after else 0
    return text.count("\n", 0, text.index(needle, start)) + 1


def rule(code: str = "XY100", **parts) -> dict:
    return {"code": code, "severity": "error", "each": "record", "message": "m", **parts}


@pytest.mark.parametrize(
    "part, condition, said",
    [
        (
            "require",
            {"kind": {"in": ["a", "b"]}},
            'require.kind: {"in": ...} takes the name of a list field, not a list',
        ),
        ("require", {"kind": {"same_url_as": {"x": 1}}}, 'require.kind: {"same_url_as": ...} takes the name of'),
        ("cites", {"url": {"within_url_of": ["repo"]}}, 'cites.url: {"within_url_of": ...} takes the name of'),
        ("require", {"kind": {"in": 3}}, 'require.kind: {"in": ...} takes the name of a list field, not a number'),
        ("require", {"repo": {"present": "yes"}}, 'require.repo: {"present": ...} takes true or false, not a string'),
        ("when", {"kind": None}, "when.kind: a value to equal is a string, a number or a boolean, not null"),
        ("when", {"kind": [["a"]]}, "when.kind: a list of values holds strings, numbers or booleans, not a list"),
        ("when", {"kind": []}, "when.kind: a list of values names at least one"),
    ],
)
def test_a_condition_whose_argument_has_the_wrong_type_is_a_schema_error_at_the_rule(kb, part, condition, said):
    """Before: {"in": [...]} was a TypeError inside the check (KB900); a null or an empty list never matched."""
    text = set_rules(kb, [rule(require={"kind": "serving-engine"}) | {part: condition}])
    an_engine_and_its_source(kb)
    result = kb.check()
    assert "KB900" not in result.out + result.err and "Traceback" not in result.out + result.err
    found = [line for line in result.find("KB210") if "x-kb-constraints" in line]
    assert len(found) == 1, result.out
    line = line_of(text, '"XY100"', after='"x-kb-constraints"')
    where = f"schema/engine.schema.json:{line}:1: error KB210"
    assert found[0].startswith(f"{where} x-kb-constraints: constraint XY100: {said}"), found
    assert not result.find("XY100")  # an ill-formed rule is not applied


@pytest.mark.parametrize("code", ["KB900", "KB540", "KB120"])
def test_a_rule_may_not_take_one_of_kbs_own_codes(kb, code):
    """KB900 is kb's internal error: a rule reporting it would read as a bug in kb; any code kb defines is kb's."""
    set_rules(kb, [rule(code, require={"docs_url": {"present": True}})])
    an_engine_and_its_source(kb)
    result = kb.check()
    assert not [line for line in result.lines if f" {code} " in line and "engines/e" in line], result.out
    assert any(f"constraint code '{code}' is kb's own" in line for line in result.find("KB210")), result.out


def test_a_rule_code_is_two_capital_letters_and_three_digits(kb):
    set_rules(kb, [rule("kb561", require={"docs_url": {"present": True}})])
    an_engine_and_its_source(kb)
    assert any("constraint code 'kb561' is not like 'KB561'" in line for line in kb.check().find("KB210"))


def test_a_rule_of_the_envelope_is_reported_once_at_the_envelope(kb):
    """The envelope's rules hold for every type; a mistake in one is one finding at envelope.schema.json."""
    path = kb.root / "schema" / "envelope.schema.json"
    schema = json.loads(path.read_text())
    schema["x-kb-constraints"].append(rule("XY101", require={"basis": {"in": {"a": 1}}}))
    path.write_text(json.dumps(schema, indent=2))
    kb.source()
    found = [line for line in kb.check().find("KB210") if "XY101" in line]
    assert len(found) == 1 and found[0].startswith("schema/envelope.schema.json:"), found


def test_a_rule_code_a_schema_declares_can_be_configured(kb):
    """A project's own prefix (XY100) is a rule code like KB561: kb.toml may set its severity."""
    set_rules(kb, [rule(require={"docs_url": {"present": True}})])
    an_engine_and_its_source(kb)
    kb.write("kb.toml", '[severity]\nXY100 = "warning"\n')
    result = kb.check()
    assert not result.find("KB120"), result.out
    assert result.find("XY100") and " warning XY100 " in result.find("XY100")[0] and result.exit_code == 0


def test_a_schema_nested_too_deeply_to_check_is_a_schema_error(kb):
    """Before: the meta-schema check ran out of stack (KB900) on a schema of a few hundred levels."""
    deep: dict = {"type": "string"}
    for _ in range(300):
        deep = {"type": "object", "properties": {"a": deep}}
    (kb.root / "schema" / "deep.schema.json").write_text(json.dumps(deep))
    (kb.root / "schema" / "brackets.schema.json").write_text("[" * 100_000 + "]" * 100_000)
    kb.source()
    result = kb.check()
    assert "KB900" not in result.out + result.err, result.err
    for name in ("deep", "brackets"):
        assert f"schema/{name}.schema.json:1:1: error KB210 the schema nests too deeply to check" in result.out


def set_plausible(kb, field: str, bounds: dict) -> str:
    path = kb.root / "schema" / "accelerator.schema.json"
    schema = json.loads(path.read_text())
    schema["properties"][field]["x-kb-plausible"] = bounds
    text = json.dumps(schema, indent=2)
    path.write_text(text)
    return text


@pytest.mark.parametrize(
    "bounds, bad, said",
    [
        ({"min": "100 MB", "max": "1e999 GB"}, "1e999 GB", "max '1e999 GB' is out of range"),
        ({"min": "-1e999 GB", "max": "2 TB"}, "-1e999 GB", "min '-1e999 GB' is out of range"),
        ({"min": "nan GB"}, "nan GB", "min 'nan GB' is not a quantity"),
        ({"max": "2 TB/s"}, "2 TB/s", "max '2 TB/s' is information per time, but the field is information (like GB)"),
        ({"min": "4 TB", "max": "2 TB"}, "4 TB", "min 4 TB is above max 2 TB"),
        ({"max": 2000}, "2000", "max 2000 is a number: write a quantity with its unit as a string"),
        ({"reason": "r"}, '"x-kb-plausible"', "gives neither min nor max"),
    ],
)
def test_a_plausible_bound_that_is_no_finite_quantity_of_the_field_is_a_schema_error(kb, bounds, bad, said):
    """Before: a bound that did not parse was skipped in silence, so the range checked nothing."""
    text = set_plausible(kb, "memory_capacity", bounds)
    kb.source()
    result = kb.check()
    line = line_of(text, bad, after='"memory_capacity"')
    assert f"schema/accelerator.schema.json:{line}:1: error KB210 x-kb-plausible of memory_capacity: {said}" in (
        result.out
    ), result.out
    assert "KB900" not in result.out + result.err


def test_a_refused_plausible_range_checks_nothing(kb):
    """A refused range is the schema's KB210 alone: it flags no record's figure (KB540)."""
    set_plausible(kb, "memory_capacity", {"min": "1e999 GB"})
    kb.source()
    kb.record("accelerators", "gpu", "accelerator", "vendor: V\nmemory_capacity: 80 GB\n")
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[gpu]]\n")
    result = kb.check()
    assert result.find("KB210") and not result.find("KB540"), result.out


def records_checked(result) -> int:
    match = re.search(r"^checked (\d+) records?:", result.out, re.M)
    assert match, result.out + result.err
    return int(match[1])


def test_init_existing_keeps_the_settings_of_pyproject_and_checks_the_same_records(kb):
    """Before: kb init wrote a kb.toml, which wins over [tool.kb], so a knowledge base whose records live
    elsewhere than records/ checked the two example records instead of its own."""
    kb.source()
    kb.source("src-b")
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]] [[src-b]]\n")
    (kb.root / "records").rename(kb.root / "kb-records")
    (kb.root / "schema").rename(kb.root / "types")
    kb.write(
        "pyproject.toml",
        '[project]\nname = "mine"\n\n[tool.kb]\ntitle = "Mine"\nrecords = "kb-records"\nschema = "types"\n',
    )
    pyproject = (kb.root / "pyproject.toml").read_bytes()
    before = kb.check()
    assert records_checked(before) == 3
    made = kb.run("init", str(kb.root), "--existing")
    assert made.exit_code == 0, made.err
    assert not (kb.root / "kb.toml").exists() and (kb.root / "pyproject.toml").read_bytes() == pyproject
    assert not (kb.root / "records").exists() and not (kb.root / "schema").exists()
    assert (kb.root / ".github" / "workflows" / "kb.yml").is_file()
    after = kb.check()
    assert records_checked(after) == records_checked(before) and after.lines == before.lines


def test_init_existing_writes_the_starter_into_the_configured_directories(kb):
    target = kb.root
    shutil.rmtree(target / "schema")
    (target / "records").rmdir()
    (target / "kb.toml").write_text('records = "data"\nschema = "types"\n')
    made = kb.run("init", str(target), "--existing")
    assert made.exit_code == 0, made.err
    assert (target / "kb.toml").read_text() == 'records = "data"\nschema = "types"\n'
    assert (target / "types" / "device.schema.json").is_file() and (target / "data" / "devices").is_dir()
    assert not (target / "schema").exists() and not (target / "records").exists()
    assert kb.check().out.strip() == "checked 2 records: 0 errors, 0 warnings"


@pytest.mark.parametrize("link", [".github", "schema"])
def test_init_never_writes_through_a_symbolic_link(kb, tmp_path, link):
    """Before: .github/workflows/kb.yml and the starter schemas were written into the link's target."""
    shutil.rmtree(kb.root / "schema")
    outside = tmp_path / f"elsewhere-{link.strip('.')}"
    outside.mkdir()
    (kb.root / link).symlink_to(outside, target_is_directory=True)
    before = sorted(p.relative_to(kb.root).as_posix() for p in kb.root.rglob("*"))
    made = kb.run("init", str(kb.root), "--existing")
    assert made.exit_code == 2 and "Traceback" not in made.err
    assert f"kb init: {link} is a symbolic link" in made.err and "nothing was written" in made.err, made.err
    assert list(outside.iterdir()) == []
    assert sorted(p.relative_to(kb.root).as_posix() for p in kb.root.rglob("*")) == before
