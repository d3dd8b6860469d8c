"""Small defects a review and a newcomer found (issue 15): each as the user meets it."""

from __future__ import annotations

import json


def test_check_accepts_quiet_after_the_command(kb):
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n")
    assert kb.run("check", "-q").exit_code == 0
    assert kb.run("-q", "check").exit_code == 0


def test_a_hint_reaches_text_github_and_sarif(kb):
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\nlicence: MIT\n", body="[[src-a]]\n")
    hint = "hint: fields are declared in schema/engine.schema.json"
    assert any(hint in line for line in kb.check().find("KB201"))
    assert hint in kb.check("--format", "github").out
    sarif = json.loads(kb.check("--format", "sarif").out)
    assert any(hint in r["message"]["text"] for r in sarif["runs"][0]["results"])


def test_query_fields_name_is_one_column(kb):
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n")
    out = kb.run("query", "type:engine", "--fields", "name,kind", "--format", "csv").out
    assert out.splitlines()[0] == "key,name,kind"


def test_new_without_a_source_says_an_engine(kb):
    err = kb.run("new", "engine", "--name", "E").err
    assert "an engine record must cite at least one source" in err


def test_a_duplicate_directory_is_reported_at_its_line(kb):
    schema = json.loads((kb.root / "schema" / "engine.schema.json").read_text())
    schema["title"] = "Engine copy"
    kb.write("schema/engine2.schema.json", json.dumps(schema, indent=2))
    found = [l for l in kb.check().find("KB210") if "is already the directory of type" in l]
    assert len(found) == 1, found
    reported, at = found[0].split(":")[:2]
    text = (kb.root / reported).read_text()
    line = next(n for n, l in enumerate(text.splitlines(), 1) if '"x-kb-dir"' in l)
    assert at == str(line) and line > 1, found
