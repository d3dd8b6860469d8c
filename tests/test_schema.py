"""Schema validation: every error at the line of the offending key."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest


def test_schema_errors_point_at_their_keys(kb):
    kb.source()
    kb.record(
        "models",
        "m",
        "model",
        """
        architecture: moe
        attention: mla
        num_layers: -3
        num_layer: 61
        head_dim: "wide"
    """,
        body="Cites [[src-a]].\n",
    )
    kb.record("flops", "f", "flop", "class: kv_transfer\nbound_by: memory\n", body="[[models/m]]\n")
    kb.write(
        "records/models/m.md", (kb.root / "records/models/m.md").read_text().replace("status: draft", "status: done")
    )
    result = kb.check()
    assert result.exit_code == 1
    assert (
        "records/models/m.md:5:1: error KB200 status: 'done' is not one of ['verified', 'draft', 'contested', 'deprecated']"
        in result.lines
    )
    assert "records/models/m.md:11:1: error KB200 num_layers: -3 is less than the minimum of 1" in result.lines
    assert (
        "records/models/m.md:12:1: error KB201 unknown field 'num_layer' for type 'model' (did you mean 'num_layers'?) "
        "(hint: fields are declared in schema/model.schema.json)" in result.lines
    )
    assert "records/models/m.md:13:1: error KB200 head_dim: 'wide' is not of type 'integer'" in result.lines


def test_missing_required_field(kb):
    kb.source()
    kb.record("engines", "e", "engine", "", body="[[src-a]]\n")
    kb.record("flops", "f", "flop", "class: kv_transfer\nbound_by: memory\n", body="[[engines/e]]\n")
    result = kb.check()
    assert "records/engines/e.md:1:1: error KB202 missing required field 'kind'" in result.lines


def test_nested_row_error_points_at_row_key(kb):
    kb.source()
    kb.record(
        "hardware-parameters",
        "memory-bandwidth",
        "hardware_parameter",
        "dimension: GB/s\ncarried_by: {accelerator: memory_bandwidth}\n",
    )
    kb.record(
        "flops",
        "f",
        "flop",
        """
        class: kv_transfer
        bound_by: memory
        hardware_parameters:
          - parameter: memory-bandwidth
            effect: sets the hit-path time
            basis: maybe
    """,
    )
    result = kb.check()
    assert (
        "records/flops/f.md:14:5: error KB200 hardware_parameters.0.basis: 'maybe' is not one of ['recorded', 'derived', 'unverified']"
        in result.lines
    )


def test_non_source_records_must_cite(kb):
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", sources="[]")
    result = kb.check()
    assert any(
        l.startswith("records/engines/e.md:8:1: error KB200 sources: [] should be non-empty") for l in result.lines
    ), result.out


def test_broken_schema_file_is_a_diagnostic(kb):
    kb.write("schema/model.schema.json", '{"title": "x",\n  "x-kb-dir": "models",\n  "type": "strin"\n}\n')
    kb.source()
    result = kb.check()
    assert result.exit_code == 1
    assert any(
        l.startswith("schema/model.schema.json:3:1: error KB210 invalid JSON Schema") for l in result.find("KB210")
    ), result.out


def test_a_broken_schema_is_reported_by_every_run_the_store_answers(kb, monkeypatch, tmp_path):
    """The store vouches only for schema texts that met the meta-schema. A store written by a run that
    reported a broken schema once let the next run skip the check and report something else, whenever that
    next run was not answered whole from the memo (here: a record edited in between)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "state"))
    kb.write("schema/model.schema.json", '{"title": "x",\n  "x-kb-dir": "models",\n  "type": "strin"\n}\n')
    kb.source()
    broken = "schema/model.schema.json:3:1: error KB210 invalid JSON Schema"
    for step in range(3):
        result = kb.check()
        assert any(line.startswith(broken) for line in result.find("KB210")), (step, result.out)
        kb.source(f"src-{step}")  # a change the memo cannot answer for: the store's path
    from kbtools.check.run import driver
    from kbtools.registry import loader

    monkeypatch.setattr(driver, "_LOADED", {})  # a fresh process: nothing this one checked is remembered
    monkeypatch.setattr(loader, "_META_CHECKED", set())
    result = kb.check()
    assert any(line.startswith(broken) for line in result.find("KB210")), result.out


def test_schema_file_that_is_not_json(kb):
    kb.write("schema/model.schema.json", '{"title": "x",\n  oops\n}\n')
    result = kb.check()
    assert any(
        l.startswith("schema/model.schema.json:2:3: error KB210 schema file is not valid JSON")
        for l in result.find("KB210")
    ), result.out


def test_new_record_type_is_only_a_schema_file(kb):
    """Adding a type needs no Python: a schema with x-kb-dir, and its directory."""
    kb.write(
        "schema/gadget.schema.json",
        """
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "gadget.schema.json",
         "x-kb-dir": "gadgets", "type": "object",
         "allOf": [{"$ref": "envelope.schema.json"}, {"$ref": "envelope.schema.json#/$defs/cited"}],
         "properties": {"type": {"const": "gadget"}, "uses": {"type": "string", "x-kb-ref": "model"}},
         "required": ["uses"], "unevaluatedProperties": false}
    """,
    )
    kb.source()
    kb.record("gadgets", "g", "gadget", "uses: src-a\n")
    result = kb.check()
    assert "records/gadgets/g.md:9:1: error KB301 uses: 'src-a' is a source, expected model" in result.lines


def test_ref_annotation_naming_unknown_type(kb):
    text = (kb.root / "schema/engine.schema.json").read_text().replace('"x-kb-ref": "engine"', '"x-kb-ref": "enginez"')
    kb.write("schema/engine.schema.json", text, dedent=False)
    result = kb.check()
    assert any("KB210 x-kb-ref names unknown record type 'enginez'" in l for l in result.lines)


# ------------------------------------------------------------------ the schemas outside kb

REPO = Path(__file__).resolve().parent.parent
CHECK_JSONSCHEMA = Path(sys.executable).parent / "check-jsonschema"


def _frontmatter_as_yaml(record: Path, out: Path) -> Path:
    out.write_text(record.read_text(encoding="utf-8").split("---\n", 2)[1], encoding="utf-8")
    return out


@pytest.mark.slow
def test_check_jsonschema_validates_every_record_type_with_only_the_schema_file(tmp_path):
    """A user's own validator, given nothing but --schemafile, resolves every $ref from the files themselves
    (no base URI by hand, any working directory) and accepts the repository's records of every type."""
    types = {}
    for schema in sorted((REPO / "schema").glob("*.schema.json")):
        directory = json.loads(schema.read_text()).get("x-kb-dir")
        if directory:
            types[schema] = sorted((REPO / "records" / directory).glob("*.md"))
    assert len(types) >= 10 and all(types.values())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for schema, records in types.items():
        files = [_frontmatter_as_yaml(r, tmp_path / f"{schema.stem}-{r.stem}.yaml") for r in records[:3]]
        run = subprocess.run(
            [str(CHECK_JSONSCHEMA), "--schemafile", str(schema), *map(str, files)],
            cwd=elsewhere,
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, f"{schema.name}: {run.stdout[-800:]}{run.stderr[-800:]}"

    # and it is validating, not waving through: a misspelt field fails the envelope's unevaluatedProperties
    model = tmp_path / "bad-model.yaml"
    model.write_text(
        _frontmatter_as_yaml(types[REPO / "schema" / "model.schema.json"][0], model).read_text() + "num_layer: 61\n"
    )
    run = subprocess.run(
        [str(CHECK_JSONSCHEMA), "--schemafile", str(REPO / "schema" / "model.schema.json"), str(model)],
        cwd=elsewhere,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1 and "num_layer" in run.stdout


def test_a_relative_id_is_a_warning_at_its_line(kb):
    """A relative $id makes other validators resolve $refs against their working directory (KB211)."""
    kb.source()
    path = kb.root / "schema" / "source.schema.json"
    text = path.read_text()
    path.write_text(text.replace('"title"', '"$id": "source.schema.json",\n  "title"', 1))
    line = path.read_text().splitlines().index('  "$id": "source.schema.json",') + 1
    result = kb.check()
    assert any(
        l.startswith(f'schema/source.schema.json:{line}:1: warning KB211 $id "source.schema.json" is relative')
        for l in result.lines
    ), result.lines
    # an absolute $id is the user's choice: no warning
    path.write_text(text.replace('"title"', '"$id": "https://kb.example/schema/source.schema.json",\n  "title"', 1))
    assert not any("KB211" in l for l in kb.check().lines)


# ---------------------------------------------------------------- the annotations, one table


def test_a_require_rule_with_a_code_declared_nowhere_is_a_schema_error_and_its_records_are_still_checked(kb):
    """Issue 43 (architecture review 3, section 11.2): `"x-kb-require": [{"any_of": ["x"], "code": "XY123",
    "message": ...}]` made `kb check` print `error KB900 internal error ... KeyError: 'XY123'` for every record of
    the type. The rule is KB210 at the schema, as an x-kb-constraints rule with such a code is (a project's code
    comes with its severity), and each record is checked with everything else but the broken rule."""
    path = kb.root / "schema" / "source.schema.json"
    schema = json.loads(path.read_text())
    schema["x-kb-require"] = [{"any_of": ["x"], "code": "XY123", "message": "a source needs an x"}]
    text = json.dumps(schema, indent=2)
    path.write_text(text)
    kb.record("sources", "src-a", "source", "kind: docs\norigin: first-party\npublisher: Someone\nwebsite: w\n")
    result = kb.check()
    assert "KB900" not in result.out and "Traceback" not in result.err, result.out
    line = text.count("\n", 0, text.index('"code": "XY123"')) + 1  # the rule's own line
    rule = f"schema/source.schema.json:{line}:1: error KB210 "
    assert rule + "x-kb-require: rule XY123: severity is 'error' or 'warning', not None" in result.lines, result.out
    assert rule + "x-kb-require: rule XY123: any_of: 'x' is not a field of source" in result.lines, result.out
    record = [line for line in result.lines if line.startswith("records/sources/src-a.md:")]
    assert not [line for line in record if "XY123" in line], record
    assert any(" error KB201 unknown field 'website' for type 'source'" in line for line in record), record


def test_the_annotation_table_is_the_one_the_docs_describe():
    """docs/records.md's table of annotations names each annotation kb reads, and no other."""
    from kbtools.registry.annotations import ANNOTATIONS

    documented = re.findall(r"^\| `(x-kb-[a-z-]+)", (REPO / "docs" / "records.md").read_text(), re.MULTILINE)
    assert sorted(documented) == sorted(ANNOTATIONS)


def _annotations_in(node, top: bool = True):
    """(key, whether it stands at the top of the file) for each x-kb-* key of a schema."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key.startswith("x-kb-"):
                yield key, top
            yield from _annotations_in(value, top=False)
    elif isinstance(node, list):
        for value in node:
            yield from _annotations_in(value, top=False)


@pytest.mark.parametrize(
    "schema_dir",
    ["schema", "kbtools/starter/minimal", "kbtools/starter/inference-cost"],
)
def test_every_annotation_a_shipped_schema_carries_is_in_the_table_where_it_may_stand(schema_dir):
    from kbtools.registry.annotations import ANNOTATIONS

    misplaced = []
    for path in sorted((REPO / schema_dir).glob("*.schema.json")):
        contents = json.loads(path.read_text())
        for key, top in _annotations_in(contents):
            where = ANNOTATIONS[key].where if key in ANNOTATIONS else "nowhere: not in the table"
            fits = where in ("type", "schema") if top else where == "field"
            if not fits or (top and where == "type" and "x-kb-dir" not in contents):
                misplaced.append(f"{path.name}: {key} ({where})")
    assert not misplaced


@pytest.mark.parametrize(
    ("schema", "annotation", "value"),
    [
        ("source.schema.json", "x-kb-role", ["source"]),
        (
            "accelerator.schema.json",
            "x-kb-charts",
            [{"kind": "roofline", "bandwidth": "memory_bandwidth", "peaks": ["peak_bf16_dense"]}],
        ),
    ],
)
def test_an_annotation_of_the_wrong_shape_is_a_schema_error_not_a_crash(kb, schema, annotation, value):
    """x-kb-role given as a list, or a roofline chart's peaks as a list, is KB210 at the schema file, and
    the records are still checked: never KB900."""
    import json as json_module

    path = kb.root / "schema" / schema
    data = json_module.loads(path.read_text())
    data[annotation] = value
    path.write_text(json_module.dumps(data, indent=2))
    kb.source()
    result = kb.check()
    assert not result.find("KB900"), result.out + result.err
    assert any(schema in line for line in result.find("KB210")), result.out
    assert "checked" in result.out


@pytest.mark.parametrize(
    "annotation, value",
    [
        ("x-kb-require", [{"any_of": ["sources"], "code": "KB202", "message": "a record needs a source"}]),
        ("x-kb-columns", ["name"]),
    ],
)
def test_a_type_annotation_on_a_shared_schema_is_a_schema_error_not_silence(kb, annotation, value):
    """An annotation that belongs on a record type's schema, written on the envelope (which every type allOf-$refs,
    but which is no type), would apply to no record: KB210 at its line says so, instead of a rule that never runs."""
    import json as json_module

    path = kb.root / "schema" / "envelope.schema.json"
    data = json_module.loads(path.read_text())
    data[annotation] = value
    text = json_module.dumps(data, indent=2)
    path.write_text(text)
    kb.source()
    line = next(n for n, written in enumerate(text.splitlines(), 1) if f'"{annotation}"' in written)
    found = [found for found in kb.check().find("KB210") if annotation in found]
    assert found == [
        f"schema/envelope.schema.json:{line}:1: error KB210 {annotation} belongs on a record type's schema (one "
        "with x-kb-dir): on a shared schema it applies to no record; move it to each type it is meant for"
    ], found
