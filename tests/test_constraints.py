"""Rules of provenance as schema data (x-kb-constraints): each rule has its own code and severity,
is checked by the registry's shape rules, and holds across records (a figure and the source it cites)."""

from __future__ import annotations

import json

from conftest import REPO


def source(kb, id_, origin, url=None):
    return kb.record(
        "sources",
        id_,
        "source",
        f"kind: docs\norigin: {origin}\npublisher: P\nurl: {url or 'https://example.org/' + id_}\n",
    )


def sources_of_every_origin(kb):
    source(kb, "press", "secondary")
    source(kb, "maker", "first-party")
    source(kb, "lab", "independent")


def gpu(kb, entry, sources="[press]"):
    path = kb.record("accelerators", "gpu-x", "accelerator", f"vendor: V\nmemory_bandwidth:\n{entry}", sources=sources)
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[gpu-x]] [[press]] [[maker]] [[lab]]\n")
    return path


def test_a_vendor_spec_figure_resting_on_the_press_breaks_the_envelope_rule(kb):
    sources_of_every_origin(kb)
    path = gpu(kb, "  value: 3.35 TB/s\n  basis: vendor-spec\n  source: press\n")
    found = kb.check().find("KB561")
    line = path.read_text().splitlines().index("memory_bandwidth:") + 1
    assert found == [
        # what is wrong first, then the rule it breaks
        f"records/accelerators/gpu-x.md:{line}:1: error KB561 memory_bandwidth: press: origin is 'secondary', not "
        "'first-party'; the rule: a figure whose basis is vendor-spec cites a first-party document: the maker's "
        "datasheet, docs, repository or own benchmark submission (hint: cite a source with `origin: first-party`, "
        "or give it a basis other than vendor-spec)"
    ]


def test_the_same_figure_citing_the_makers_document_passes(kb):
    sources_of_every_origin(kb)
    gpu(kb, "  value: 3.35 TB/s\n  basis: vendor-spec\n  source: maker\n")
    assert not kb.check().find("KB561")


def test_a_record_level_basis_and_sources_are_what_a_short_figure_cites(kb):
    """Short form: the record's basis and its sources; one first-party source among them is enough."""
    sources_of_every_origin(kb)
    kb.record(
        "accelerators",
        "gpu-y",
        "accelerator",
        "vendor: V\nbasis: vendor-spec\nmemory_bandwidth: 3.35 TB/s\n",
        sources="[press]",
    )
    kb.record(
        "accelerators",
        "gpu-z",
        "accelerator",
        "vendor: V\nbasis: vendor-spec\nmemory_bandwidth: 3.35 TB/s\n",
        sources="[press, maker]",
    )
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[gpu-y]] [[gpu-z]] [[lab]]\n")
    found = kb.check().find("KB561")
    assert len(found) == 1 and found[0].startswith("records/accelerators/gpu-y.md:")


def test_a_vendor_claim_citing_an_independent_measurement_is_an_error(kb):
    sources_of_every_origin(kb)
    gpu(kb, "  value: 3.35 TB/s\n  basis: measured\n  vendor_claim: true\n  source: lab\n")
    found = kb.check().find("KB562")
    assert (
        len(found) == 1
        and "memory_bandwidth: lab: origin is 'independent', not one of first-party, secondary; the rule:" in found[0]
    )


def test_a_claim_naming_a_source_the_record_does_not_list(kb):
    source(kb, "press", "secondary")
    source(kb, "maker", "first-party")
    kb.record(
        "accelerators",
        "gpu-x",
        "accelerator",
        "vendor: V\nclaims:\n  - claim: 2x faster\n    source: maker\n    basis: vendor-spec\n"
        "  - claim: 3x faster\n    source: press\n    basis: secondary\n",
        sources="[press]",
    )
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[gpu-x]] [[maker]]\n")
    found = kb.check().find("KB563")
    assert (
        len(found) == 1
        and "claims[0]: source 'maker' is not among the record's sources; the rule: a claim names its source, "
        "and the record lists that source among its sources"
        in found[0]
    )


def test_an_engine_without_its_repository_among_its_sources_is_a_warning(kb):
    source(kb, "blog", "secondary")
    source(kb, "readme", "first-party", url="https://github.com/org/eng/blob/abc123/README.md")
    kb.record(
        "engines",
        "eng",
        "engine",
        "kind: serving-engine\nrepo: https://github.com/org/eng\n",
        sources="[blog]",
        body="[[readme]]\n",
    )
    kb.record(
        "engines",
        "eng2",
        "engine",
        "kind: serving-engine\nrepo: https://github.com/org/eng\n",
        sources="[blog, readme]",
        body="[[eng]]\n",
    )
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[eng2]]\n", sources="[blog]")
    result = kb.check()
    found = result.find("KB564")
    assert len(found) == 1 and found[0].startswith("records/engines/eng.md:") and " warning KB564 " in found[0]
    assert result.exit_code == 0  # a warning: the check passes unless --strict


def test_a_rule_of_a_new_type_needs_no_python(kb):
    """A constraint a user adds to a schema fires with the code and severity the schema gives it."""
    path = kb.root / "schema" / "engine.schema.json"
    schema = json.loads(path.read_text())
    schema["x-kb-constraints"] = [
        {
            "code": "XY100",
            "severity": "error",
            "each": "record",
            "when": {"kind": "orchestrator"},
            "require": {"docs_url": {"present": True}},
            "message": "an orchestrator links its docs",
        }
    ]
    path.write_text(json.dumps(schema))
    kb.source()
    kb.record("engines", "orc", "engine", "kind: orchestrator\n", body="[[src-a]]\n")
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[orc]]\n")
    found = kb.check().find("XY100")
    assert len(found) == 1 and "engines/orc: docs_url is missing; the rule: an orchestrator links its docs" in found[0]
    sarif = json.loads(kb.check("--format", "sarif").out)
    assert any(r["id"] == "XY100" for r in sarif["runs"][0]["tool"]["driver"]["rules"])


def test_a_malformed_rule_is_a_schema_error(kb):
    path = kb.root / "schema" / "engine.schema.json"
    schema = json.loads(path.read_text())
    schema["x-kb-constraints"] = [
        {"code": "nope", "severity": "fatal", "each": "record", "require": {"x": {"like": 1}}, "message": "m"}
    ]
    path.write_text(json.dumps(schema))
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n")
    lines = [l for l in kb.check().find("KB210") if "x-kb-constraints" in l]
    assert any("constraint code 'nope' is not like 'KB561'" in l for l in lines), lines
    assert any("severity is 'error' or 'warning', not 'fatal'" in l for l in lines), lines
    assert any("require.x: a condition object is one of" in l for l in lines), lines


def test_the_repositorys_rules_are_documented():
    page = (REPO / "docs" / "diagnostics.md").read_text()
    for name in ("envelope", "accelerator", "engine"):
        for rule in json.loads((REPO / "schema" / f"{name}.schema.json").read_text())["x-kb-constraints"]:
            assert f"| {rule['code']} | {rule['severity']} | `{name}.schema.json` |" in page
