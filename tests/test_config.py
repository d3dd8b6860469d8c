"""The knowledge base's configuration: kb.toml or [tool.kb] in pyproject.toml, as a user writes it."""

from __future__ import annotations

import pytest
from conftest import REPO


def test_a_code_can_be_made_an_error_a_warning_or_off(kb):
    kb.source()  # cited by no record: KB307, a warning
    result = kb.check()
    assert result.exit_code == 0 and [l.split()[1:3] for l in result.lines] == [["warning", "KB307"]]

    kb.write("kb.toml", '[severity]\nKB307 = "error"\n')
    result = kb.check()
    assert result.exit_code == 1 and [l.split()[1:3] for l in result.lines] == [["error", "KB307"]]
    assert kb.run("build", "--no-search").exit_code == 1  # an error by configuration blocks a build too

    kb.write("kb.toml", '[severity]\nKB307 = "off"\n')
    result = kb.check("--strict")
    assert result.exit_code == 0 and result.lines == []
    assert "checked 1 record: 0 errors, 0 warnings" in result.out


def test_pyproject_tool_kb_table_sets_the_title_and_the_paths(kb):
    kb.source()
    (kb.root / "records").rename(kb.root / "notes")
    kb.write(
        "pyproject.toml",
        '[project]\nname = "mine"\n\n[tool.kb]\ntitle = "Facilities"\nrecords = "notes"\n\n'
        '[tool.kb.severity]\nKB307 = "off"\n',
    )
    result = kb.check()
    assert result.exit_code == 0, result.out
    assert "checked 1 record:" in result.out
    assert kb.run("build", "--no-search").exit_code == 0
    assert "<title>Facilities</title>" in (kb.root / "site" / "_build" / "index.html").read_text()


@pytest.mark.parametrize(
    "text, expected",
    [
        ('title = "A"\ntitel = "B"\n', "kb.toml:2:1: error KB120 unknown key 'titel' in [kb.toml]"),
        ('[severity]\nKB307 = "loud"\n', "kb.toml:2:1: error KB120 KB307: severity must be one of error, warning, off"),
        ('[severity]\nKB999 = "off"\n', "kb.toml:2:1: error KB120 no code KB999 in kb or the schemas"),
        ('[severity]\nKB120 = "off"\n', "kb.toml:2:1: error KB120 KB120 cannot be configured"),
        ('\n\nseverity = "off"\n', "kb.toml:3:1: error KB120 severity must be a table of codes"),
        ('records = "../elsewhere"\n', "kb.toml:1:1: error KB120 records must be the name of one directory"),
        ('title = "A\n', "kb.toml:1:"),  # not TOML: tomllib's own line and column
    ],
)
def test_a_mistake_in_the_configuration_is_an_error_at_its_line(kb, text, expected):
    kb.source()
    kb.write("kb.toml", text, dedent=False)
    result = kb.check()
    assert result.exit_code == 1
    found = [l for l in result.lines if " KB120 " in l]
    assert len(found) == 1 and found[0].startswith(expected), result.lines
    assert "Traceback" not in result.out + result.err


def test_a_configuration_mistake_is_reported_when_only_some_files_are_named(kb):
    """The pre-commit path names the staged records; a broken kb.toml still blocks the commit."""
    path = kb.source()
    kb.write("kb.toml", 'titel = "B"\n')
    result = kb.check(str(path))
    assert result.exit_code == 1 and result.codes() == ["KB120", "KB307"]


def test_a_severity_for_a_code_a_schema_declares_is_accepted(kb):
    """Constraint codes live in the schemas (x-kb-constraints), not in kb: configuring one is no mistake."""
    from conftest import REPO

    from kbtools.registry import load_registry

    registry = load_registry(REPO / "schema", REPO)
    declared = sorted({rule["code"] for t in registry.types.values() for rule in t.constraints})
    assert declared
    kb.source()
    kb.write("kb.toml", f'[severity]\n{declared[0]} = "warning"\n')
    assert kb.check().exit_code == 0


def test_the_default_tolerance_is_configurable_and_a_change_rechecks(kb):
    """A derived figure 1.5% off its formula: outside the 1% default, inside a configured 2%. The cache
    must not keep the old verdict when the setting changes."""
    kb.write("kb.toml", "")
    kb.source()
    kb.write(
        "schema/device.schema.json",
        (REPO / "kbtools" / "starter" / "minimal" / "device.schema.json")
        .read_text()
        .replace('"formula": "power * per_rack",\n      "tolerance": 0.01', '"formula": "power * per_rack"'),
        dedent=False,
    )
    card = (REPO / "kbtools" / "starter" / "minimal" / "records" / "devices" / "example-card.md").read_text()
    kb.write(
        "records/devices/example-card.md",
        card.replace("example-datasheet", "src-a").replace("value: 5.6 kW", "value: 5.684 kW"),
        dedent=False,
    )
    assert kb.check().find("KB500")
    kb.write("kb.toml", "tolerance = 0.02\n")
    assert not kb.check().find("KB500")
    kb.write("kb.toml", "tolerance = 2\n")
    result = kb.check()
    assert result.find("KB120") and "tolerance must be a fraction" in result.out
