"""docs/tutorial.md, followed step by step on a copy of the repository."""

import json
import re
import shutil

from conftest import REPO


def copy_repo(kb):
    shutil.rmtree(kb.root / "schema")
    shutil.rmtree(kb.root / "records")
    shutil.copytree(REPO / "schema", kb.root / "schema")
    shutil.copytree(REPO / "records", kb.root / "records")


def test_add_a_source_and_a_record(kb):
    copy_repo(kb)
    assert kb.run("new", "source", "--name", "Acme X1 datasheet").out.startswith(
        "wrote records/sources/acme-x1-datasheet.md"
    )
    assert kb.run("new", "accelerator", "--name", "Acme X1", "--source", "acme-x1-datasheet").exit_code == 0
    path = kb.root / "records/accelerators/acme-x1.md"
    text = path.read_text().replace(
        'vendor: "TODO"', "vendor: Acme\nmemory_bandwidth: 3.2 TB/s\npeak_fp8_dense: 1500 TFLOP/s"
    )
    path.write_text(
        text.split("---\n")[0] + "---\n" + text.split("---\n")[1] + "---\nRidge point {{ ridge_point_fp8 }}.\n"
    )
    result = kb.check()
    assert [l for l in result.lines if " error " in l] == []
    assert "= 468.8 FLOP/B" in kb.run("explain", "accelerators/acme-x1.ridge_point_fp8").out.splitlines()[0]
    assert kb.run("fmt").exit_code == 0


def test_add_a_derived_field(kb):
    copy_repo(kb)
    schema_path = kb.root / "schema/storage_tier.schema.json"
    schema = json.loads(schema_path.read_text())
    schema["properties"]["seconds_per_gb"] = {"$ref": "defs.schema.json#/$defs/quantity", "x-kb-quantity": "s/GB"}
    schema["x-kb-derive"]["seconds_per_gb"] = {"formula": "1 / bandwidth", "tolerance": 0.01}
    schema_path.write_text(json.dumps(schema, indent=2))
    assert kb.check("--strict").exit_code == 0
    out = kb.run("explain", "storage-tiers/object-storage-s3.seconds_per_gb").out
    assert out.splitlines()[0] == "storage-tiers/object-storage-s3.seconds_per_gb = 11.11 s/GB"


def test_add_a_record_type(kb):
    copy_repo(kb)
    tutorial = (REPO / "docs/tutorial.md").read_text()
    schema = re.search(r"write\n`schema/facility.schema.json`:\n\n(.*?)\n\nthen", tutorial, re.S).group(1)
    (kb.root / "schema/facility.schema.json").write_text("\n".join(line[4:] for line in schema.splitlines()))
    (kb.root / "records/facilities").mkdir()
    assert kb.run("new", "facility", "--name", "Acme hall 1", "--source", "nvidia-h200-product-page").exit_code == 0
    path = kb.root / "records/facilities/acme-hall-1.md"
    path.write_text(
        path.read_text()
        .replace('accelerator: "TODO"  # the id of an accelerator record', "accelerator: nvidia-h200-sxm")
        .replace('power_capacity: "1 MW"  # a quantity in MW: fill in', "power_capacity: 12 MW")
    )
    result = kb.check()
    assert [l for l in result.lines if " error " in l] == [], result.out
    rows = json.loads(kb.run("query", "power_capacity>10 MW", "--format", "json").out)
    assert [r["key"] for r in rows] == ["facilities/acme-hall-1"]
    wrong = kb.root / "records/facilities/acme-hall-1.md"
    wrong.write_text(wrong.read_text().replace("12 MW", "12 MJ"))
    assert kb.check().find("KB402")
