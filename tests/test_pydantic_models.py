"""Typed records (issue 46, item 3): pydantic v2 models generated from kb's own schemas by the documented command,
`python -m kbtools.interop.models OUT_DIR`, validate every record of this repository as kb reads it, type quantity
fields as pint Quantities read with kb's unit registry, and refuse an invalid record naming the field."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pint
import pytest
from pydantic import BaseModel, ValidationError

from kbtools.check.load import parse_record_bytes
from kbtools.interop.models import load
from kbtools.interop.quantity import KbQuantity, PintQuantity, Quantity

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The models, generated once for the module by the command docs/models.md gives, from outside the repository."""
    out = tmp_path_factory.mktemp("generated") / "kb_models"
    run = subprocess.run(
        [sys.executable, "-m", "kbtools.interop.models", str(out), "--root", str(REPO)],
        cwd=out.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "Accelerator" in run.stdout and str(out) in run.stdout
    return load(out, "kb_models")  # the name docs/models.md imports it by


def frontmatter(rel: str) -> dict[str, Any]:
    """A record's frontmatter as kb reads it (kbtools' own loader)."""
    return parse_record_bytes((REPO / rel).read_bytes())[0]


def test_every_record_validates(models: Any) -> None:
    files = sorted((REPO / "records").glob("*/*.md"))
    refused = {}
    for path in files:
        model = models.MODELS[models.DIRS[path.parent.name]]
        try:
            model.model_validate(frontmatter(path.relative_to(REPO).as_posix()))
        except ValidationError as exc:
            refused[path.relative_to(REPO).as_posix()] = str(exc)
    assert len(files) > 700  # the whole corpus was read, not an empty glob
    assert refused == {}
    assert set(models.DIRS) == {p.name for p in (REPO / "records").iterdir() if p.is_dir()}


def test_a_quantity_field_is_a_pint_quantity_in_its_unit(models: Any) -> None:
    data = frontmatter("records/accelerators/nvidia-h200-sxm.md")
    record = models.validate(data)
    assert type(record).__name__ == "Accelerator"
    # the long form: the record writes its bandwidth as "<number> GB/s"
    number, unit = data["memory_bandwidth"]["value"].split()
    assert unit == "GB/s"
    assert isinstance(record.memory_bandwidth, pint.Quantity)
    assert record.memory_bandwidth.to("GB/s").magnitude == pytest.approx(float(number))
    assert record.memory_bandwidth.to("TB/s").magnitude == pytest.approx(float(number) / 1000)
    # a bare number is in the field's canonical unit (x-kb-quantity "pin" for memory_bus_width)
    pins = data["memory_bus_width"]["value"]
    assert isinstance(pins, int)
    assert record.memory_bus_width.to("pin").magnitude == pins
    # JSON shows a quantity as text kb reads back
    assert record.model_dump(mode="json")["memory_bandwidth"] == f"{number} GB/s"


def test_competing_values_give_the_preferred_one(models: Any) -> None:
    data = frontmatter("records/accelerators/nvidia-h100-sxm.md")
    competing = data["memory_bandwidth"]
    assert isinstance(competing, list) and len(competing) > 1
    (preferred,) = [v for v in competing if v["rank"] == "preferred"]
    number, unit = preferred["value"].split()
    assert models.validate(data).memory_bandwidth.to(unit).magnitude == pytest.approx(float(number))


def test_an_invalid_record_is_refused_naming_the_field(models: Any) -> None:
    data = frontmatter("records/accelerators/nvidia-h200-sxm.md")
    with pytest.raises(ValidationError) as wrong_dimension:
        models.validate({**data, "memory_bandwidth": "3 TFLOP/s"})
    (error,) = wrong_dimension.value.errors()
    assert error["loc"] == ("memory_bandwidth",)
    assert "KB402" in error["msg"]
    with pytest.raises(ValidationError) as misspelt:
        models.validate({**data, "memory_bandwith": "3 TB/s"})
    assert [e["loc"] for e in misspelt.value.errors()] == [("memory_bandwith",)]
    with pytest.raises(ValidationError) as bad_status:
        models.validate({**data, "status": "great"})
    assert [e["loc"] for e in bad_status.value.errors()] == [("status",)]


def test_a_required_field_may_be_listed_as_unknown(models: Any) -> None:
    data = {k: v for k, v in frontmatter("records/accelerators/nvidia-h200-sxm.md").items() if k != "vendor"}
    with pytest.raises(ValidationError) as missing:
        models.validate(data)
    assert [(e["loc"], e["type"]) for e in missing.value.errors()] == [(("vendor",), "missing")]
    assert models.validate({**data, "unknown": {"vendor": "the datasheet does not say"}}).vendor is None


def test_the_quantity_type_reads_every_form() -> None:
    class Part(BaseModel):
        bandwidth: Annotated[PintQuantity, KbQuantity("GB/s")]
        anything: Quantity | None = None

    assert Part.model_validate({"bandwidth": "4.8 TB/s"}).bandwidth.to("GB/s").magnitude == pytest.approx(4800)
    assert Part.model_validate({"bandwidth": 900}).bandwidth.to("GB/s").magnitude == 900
    assert Part.model_validate({"bandwidth": {"value": "2 TB/s", "source": "x"}}).bandwidth.to(
        "GB/s"
    ).magnitude == pytest.approx(2000)
    both = [
        {"value": "1 TB/s", "rank": "normal", "source": "a"},
        {"value": "1.2 TB/s", "rank": "preferred", "source": "b"},
    ]
    assert Part.model_validate({"bandwidth": both}).bandwidth.to("GB/s").magnitude == pytest.approx(1200)
    anything = Part.model_validate({"bandwidth": "1 GB/s", "anything": "2 ms"}).anything
    assert anything is not None and anything.to("s").magnitude == pytest.approx(0.002)
    with pytest.raises(ValidationError, match="KB401"):
        Part.model_validate({"bandwidth": "3 furlongs/s"})
    with pytest.raises(ValidationError, match="exactly one must be"):
        Part.model_validate({"bandwidth": [{**v, "rank": "normal"} for v in both]})
    with pytest.raises(ValidationError):
        Part.model_validate({"bandwidth": {"value": "2 TB/s", "sorce": "x"}})  # a key kb does not read


def test_the_examples_of_docs_models_run(models: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    page = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    assert len(blocks) == 2
    monkeypatch.chdir(REPO)
    namespace: dict[str, Any] = {}
    for block in blocks:
        exec(compile(block, "docs/models.md", "exec"), namespace)
    assert "('memory_bandwidth',) KB402" in capsys.readouterr().out
    assert namespace["h200"].memory_bandwidth.to("TB/s").magnitude == pytest.approx(4.8)  # as the page says
    assert namespace["link"].bandwidth.to("GB/s").magnitude == pytest.approx(900)


def test_a_file_of_the_users_in_the_output_directory_is_left_alone(tmp_path: Path) -> None:
    """Nothing a user wrote is overwritten: OUT_DIR holding a package of the user's own is refused, untouched."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "__init__.py").write_text("ANSWER = 42\n", encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "kbtools.interop.models", str(out), "--root", str(REPO)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1
    assert f"{out / '__init__.py'} exists and was not written by this command" in run.stderr
    assert (out / "__init__.py").read_text(encoding="utf-8") == "ANSWER = 42\n"
    assert [p.name for p in out.iterdir()] == ["__init__.py"]
