"""Typed records: pydantic v2 models of every record type, generated from a knowledge base's own schemas.

    python -m kbtools.interop.models OUT_DIR [--root KB]

writes OUT_DIR as a Python package (OUT_DIR/__init__.py and one module per schema file) with a model per record type,
`MODELS` (type name -> model), `DIRS` (records/ directory -> type name) and `validate(data)`. It needs the `models`
extra (`pip install 'kbtools[models]'`: pydantic and datamodel-code-generator) and works offline: every $ref of kb's
schemas is a file beside it (defs.schema.json, envelope.schema.json). docs/models.md shows how to use the models.

How the schemas become models. datamodel-code-generator reads a copy of the schema directory, changed in four ways
before it runs; afterwards, one pass over its output fills in the quantity type (the first point), and nothing else
in its output is edited:

- A quantity field (a $ref to defs.schema.json#/$defs/quantity, with the field's x-kb-quantity) becomes a
  `customTypePath` naming a placeholder class, one per canonical unit. The generator then writes the placeholder's
  name where the field's type goes, whatever shape the field has (optional, in a list, a dict's values, a union), and
  one pass over its output puts `Annotated[PintQuantity, KbQuantity("GB/s")]` (kbtools.interop.quantity) in its place
  and fixes the imports. A placeholder is an identifier no schema writes, so the replacement cannot touch anything
  else; the unit comes from the schema, is checked against kb's unit grammar and is written as a Python string
  literal (repr), never as code. Where a quantity without a unit stands among other choices (a cost's input, which
  may also be a reference dir/id), a reference string is added as a choice, as kb reads it.
  Generating with the generator's own type mapping instead would need an option for a parameterised custom type that
  it lacks (x-python-type admits no string argument but a Literal's), and a custom base class's hook rewriting field
  types at import would rely on pydantic's internals; a textual swap of a name the generator treats as an opaque
  class, checked afterwards, relies on neither.
- kb's annotations (x-kb-*) are removed: they are instructions to kb, not types.
- A type's required top-level fields (its own and those of the envelope it includes) are taken out of `required`
  and given to the model as `kb_required`: kb lets a record leave out a required field it lists under `unknown:`
  with the reason (the record is incomplete, not invalid), which JSON Schema's `required` cannot say. RecordModel,
  the base every generated model has, reports a required field that is missing and not listed there as pydantic's
  own `missing` error at the field. Likewise a top-level anyOf whose choices only require fields (a measurement has
  `published` or `superseded_by`) becomes `kb_required_any`: the generator would make one model per choice and a
  union of them, with no model of the type.
- Each type's title becomes its class name (accelerator -> Accelerator), so MODELS can name each one.

After generating, the package is imported and checked: every type has its model, and every quantity field of every
type carries KbQuantity with its schema's unit. A generator that writes something else fails here, loudly, instead
of giving models that accept any value.

Only kbtools.interop imports pydantic (this module, and kbtools.interop.quantity which it and the generated models
import) and datamodel-code-generator (this module, inside generate()); `kb check` imports neither module.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import importlib.util
import json
import re
import sys
import tempfile
import uuid
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from kbtools.corpus import Settings
from kbtools.index import QUALIFIED
from kbtools.interop.quantity import KbQuantity
from kbtools.lang.units import QuantityError, parse_unit
from kbtools.registry.loader import SCHEMA_SUFFIX

PLACEHOLDER = "KbQuantityPlaceholder"
QUANTITY_MODULE = "kbtools.interop.quantity"
# a placeholder where the generator wrote it, by its name or by a dotted path to it (nothing else has the name)
_PLACEHOLDER_USE = re.compile(rf"(?:\b[\w.]+\.)?\b{PLACEHOLDER}(\d+)\b")
# an import statement naming a placeholder: `from kbtools.interop.quantity import A, B` or parenthesised over lines
_PLACEHOLDER_IMPORT = re.compile(
    rf"^from {re.escape(QUANTITY_MODULE)} import (?:\([^)]*\)|[^\n]*)\n|^import {re.escape(QUANTITY_MODULE)}\n",
    re.MULTILINE,
)
_UNIT_TEXT = re.compile(r"^[A-Za-z0-9µ_ */^.+-]*$")  # what kb's unit grammar is written with (kbtools.lang.units)


class GenerationError(Exception):
    """The schemas cannot be made into models, or the generator wrote something this module does not expect."""


class RecordModel(BaseModel):
    """The base of every generated model. A record type's model knows its required top-level fields (kb_required);
    one that is missing is pydantic's `missing` error at the field, unless the record lists it under `unknown:` with
    the reason why, as `kb check` allows."""

    kb_required: ClassVar[tuple[str, ...]] = ()
    kb_required_any: ClassVar[tuple[tuple[str, ...], ...]] = ()  # one of these sets of fields must all be given

    @model_validator(mode="wrap")
    @classmethod
    def _required_unless_unknown(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        if not (cls.kb_required or cls.kb_required_any) or not isinstance(data, Mapping):
            return handler(data)
        unknown = data.get("unknown")
        listed = unknown if isinstance(unknown, Mapping) else {}
        errors: list[InitErrorDetails] = [
            {"type": "missing", "loc": (name,), "input": dict(data)}
            for name in cls.kb_required
            if data.get(name) is None and name not in listed
        ]
        if cls.kb_required_any and not any(
            all(data.get(n) is not None for n in group) for group in cls.kb_required_any
        ):
            choices = ", or ".join(" and ".join(group) for group in cls.kb_required_any)
            error = PydanticCustomError("missing", "one of these is required: {choices}", {"choices": choices})
            errors.append({"type": error, "loc": (), "input": dict(data)})
        try:
            validated = handler(data)
        except ValidationError as exc:
            errors = [*_details(exc), *errors]
            validated = None
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return validated


def _details(exc: ValidationError) -> list[InitErrorDetails]:
    """The errors of a validation, to be raised again with others: each keeps its type, place and message (as a
    custom error, since a type of the Quantity's own is no pydantic built-in that from_exception_data knows)."""
    return [
        {
            "type": PydanticCustomError(error["type"], error["msg"]),  # no context: the text is kept as it is
            "loc": error["loc"],
            "input": error["input"],
        }
        for error in exc.errors()
    ]


@dataclass(frozen=True)
class RecordTypeSchema:
    """What generation learns of one record type from its schema file."""

    name: str  # the type ("accelerator")
    directory: str  # its records/ directory (x-kb-dir)
    module: str  # the generated module ("accelerator_schema")
    model: str  # the class name ("Accelerator")
    required: tuple[str, ...]
    required_any: tuple[tuple[str, ...], ...]  # a top-level anyOf whose choices each require fields
    quantities: dict[str, str | None]  # top-level quantity field -> its x-kb-quantity


# ---------------------------------------------------------------- the schemas, prepared for the generator


def _read_schemas(schema_dir: Path) -> dict[str, dict[str, Any]]:
    if not schema_dir.is_dir():
        raise GenerationError(f"{schema_dir}: no schema directory")
    documents: dict[str, dict[str, Any]] = {}
    for path in sorted(schema_dir.glob(f"*{SCHEMA_SUFFIX}")):
        try:
            documents[path.name] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise GenerationError(f"{path}: not a readable JSON schema ({exc}); `kb check` says more") from None
    if not documents:
        raise GenerationError(f"{schema_dir}: no *{SCHEMA_SUFFIX} files")
    return documents


def _is_quantity(node: Any) -> bool:
    return isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].endswith("#/$defs/quantity")


def _class_name(type_name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", type_name) if part)


def _module_name(file_name: str) -> str:
    """The module the generator writes for a schema file: accelerator.schema.json -> accelerator_schema."""
    return re.sub(r"\W", "_", file_name.removesuffix(".json"))


class _Preparer:
    """Turns kb's schemas into the copy the generator reads (see the module's docstring)."""

    def __init__(self, documents: dict[str, dict[str, Any]]):
        self.originals = documents
        self.documents = copy.deepcopy(documents)
        self.units: list[str | None] = []  # placeholder number -> unit

    def placeholder(self, unit: str | None) -> str:
        if unit is not None and (not isinstance(unit, str) or not _UNIT_TEXT.match(unit)):
            raise GenerationError(f"x-kb-quantity {unit!r} is not a unit kb can read")
        if unit not in (None, "*"):
            try:
                parse_unit(unit)
            except QuantityError as exc:
                raise GenerationError(f"x-kb-quantity {unit!r}: {exc.message}") from None
        if unit not in self.units:
            self.units.append(unit)
        return f"{QUANTITY_MODULE}.{PLACEHOLDER}{self.units.index(unit)}"

    def rewrite(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.rewrite(item) for item in node]
        if not isinstance(node, dict):
            return node
        if _is_quantity(node):
            kept = {k: v for k, v in node.items() if k in ("description", "title")}
            return {**kept, "customTypePath": self.placeholder(node.get("x-kb-quantity"))}
        out = {key: self.rewrite(value) for key, value in node.items() if not key.startswith("x-kb-")}
        for keyword in ("anyOf", "oneOf"):
            choices = node.get(keyword)
            if (
                isinstance(choices, list)
                and len(choices) > 1
                and any(_is_quantity(c) and "x-kb-quantity" not in c for c in choices)
            ):
                out[keyword] = [*out[keyword], {"type": "string", "pattern": QUALIFIED.pattern}]
        return out

    def resolve(self, ref: str, here: str) -> tuple[str, list[str]] | None:
        """A $ref's (file, JSON pointer parts), when it points into one of the documents."""
        file, _, pointer = ref.partition("#")
        file = file or here
        if file not in self.documents:
            return None
        return file, [part for part in pointer.split("/") if part]

    def take_required(self, file: str, parts: list[str]) -> list[str]:
        """The `required` of the schema at file#parts, removed from the copy the generator reads."""
        nodes: list[Any] = [self.originals[file], self.documents[file]]
        for part in parts:
            nodes = [node.get(part) if isinstance(node, dict) else None for node in nodes]
        original, prepared = nodes
        if isinstance(prepared, dict):
            prepared.pop("required", None)
        required = original.get("required", []) if isinstance(original, dict) else []
        return [name for name in required if isinstance(name, str)]

    def prepare(self) -> list[RecordTypeSchema]:
        types: list[RecordTypeSchema] = []
        for file, original in self.originals.items():
            directory = original.get("x-kb-dir")
            type_name = ((original.get("properties") or {}).get("type") or {}).get("const")
            if not isinstance(directory, str) or not isinstance(type_name, str):
                continue  # a shared schema (the envelope, the definitions), not a record type
            required: list[str] = []
            for sub in original.get("allOf") or []:
                target = self.resolve(sub["$ref"], file) if isinstance(sub, dict) and "$ref" in sub else None
                if target is not None:
                    required += self.take_required(*target)
            required += self.take_required(file, [])
            choices = original.get("anyOf")
            required_any: tuple[tuple[str, ...], ...] = ()
            if (
                isinstance(choices, list)
                and choices
                and all(
                    isinstance(c, dict) and set(c) == {"required"} and isinstance(c["required"], list) for c in choices
                )
            ):
                required_any = tuple(tuple(c["required"]) for c in choices)
                del self.documents[file]["anyOf"]
            quantities = {
                name: sub.get("x-kb-quantity")
                for name, sub in (original.get("properties") or {}).items()
                if _is_quantity(sub)
            }
            self.documents[file]["title"] = _class_name(type_name)
            types.append(
                RecordTypeSchema(
                    type_name,
                    directory,
                    _module_name(file),
                    _class_name(type_name),
                    tuple(dict.fromkeys(required)),
                    required_any,
                    quantities,
                )
            )
        if not types:
            raise GenerationError("no schema declares a record type (x-kb-dir and a type const)")
        self.documents = {file: self.rewrite(document) for file, document in self.documents.items()}
        return types


# ---------------------------------------------------------------- generating, and the pass over the output


def _swap_placeholders(text: str, units: list[str | None]) -> str:
    """The generator's output with each placeholder made the annotated quantity type of its unit."""
    if not _PLACEHOLDER_USE.search(text):
        return text
    text = _PLACEHOLDER_IMPORT.sub("", text)
    text = _PLACEHOLDER_USE.sub(
        lambda m: (
            f"Annotated[PintQuantity, KbQuantity({units[int(m.group(1))]!r})]"
            if units[int(m.group(1))] is not None
            else "Annotated[PintQuantity, KbQuantity()]"
        ),
        text,
    )
    imports = f"from typing import Annotated\n\nfrom {QUANTITY_MODULE} import KbQuantity, PintQuantity\n"
    future = re.search(r"^from __future__ import annotations\n", text, re.MULTILINE)
    at = future.end() if future else 0
    return f"{text[:at]}{imports}{text[at:]}"


def _package_init(types: list[RecordTypeSchema], root: Path) -> str:
    lines = [
        f'"""Pydantic models of the record types of the knowledge base at {root.name or root}, generated from its',
        'schemas by `python -m kbtools.interop.models`; regenerate them rather than editing them (docs/models.md)."""',
        "",
        "from typing import Any",
        "",
        "from kbtools.interop.models import RecordModel",
        "",
    ]
    lines += [f"from .{t.module} import {t.model}" for t in types]
    lines += ["", "MODELS: dict[str, type[RecordModel]] = {"]
    lines += [f"    {t.name!r}: {t.model}," for t in types]
    lines += ["}", '"""Each record type\'s model, by type name."""', "", "DIRS: dict[str, str] = {"]
    lines += [f"    {t.directory!r}: {t.name!r}," for t in types]
    lines += ["}", '"""Each records/ directory\'s type."""', ""]
    lines += [f"{t.model}.kb_required = {t.required!r}" for t in types]
    lines += [f"{t.model}.kb_required_any = {t.required_any!r}" for t in types if t.required_any]
    lines += [
        "",
        "",
        "def validate(data: Any) -> RecordModel:",
        '    """A record\'s frontmatter as the model of its `type`; pydantic\'s ValidationError if it is not one."""',
        "    return MODELS[data['type']].model_validate(data)",
        "",
        "",
        f"__all__ = {['MODELS', 'DIRS', 'validate', *(t.model for t in types)]!r}",
        "",
    ]
    return "\n".join(lines)


def generate(out_dir: Path, root: Path | None = None) -> list[RecordTypeSchema]:
    """Write the models of the knowledge base at `root` (the one the working directory is in, by default) into
    `out_dir` as a package; returns the record types it made models of. GenerationError if it cannot."""
    from datamodel_code_generator import DataModelType, InputFileType
    from datamodel_code_generator import generate as run_generator

    settings = Settings.configured(root) if root is not None else Settings.discover()
    preparer = _Preparer(_read_schemas(settings.schema_path))
    types = preparer.prepare()
    with tempfile.TemporaryDirectory(prefix="kb-models-") as scratch:
        schemas, generated = Path(scratch, "schema"), Path(scratch, "out")
        schemas.mkdir()
        for file, document in preparer.documents.items():
            (schemas / file).write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # the generator's notices of its future defaults
            run_generator(
                schemas,
                input_file_type=InputFileType.JsonSchema,
                output=generated,
                output_model_type=DataModelType.PydanticV2BaseModel,
                base_class="kbtools.interop.models.RecordModel",
                strict_nullable=True,  # an optional field may be left out, not written as null
                disable_timestamp=True,  # the same schemas give the same files
            )
        made = sorted(generated.glob("*.py"))
        _refuse_foreign_files(out_dir, [path.name for path in made])
        out_dir.mkdir(parents=True, exist_ok=True)
        for path in made:
            text = _swap_placeholders(path.read_text(encoding="utf-8"), preparer.units)
            (out_dir / path.name).write_text(text, encoding="utf-8")
    (out_dir / "__init__.py").write_text(_package_init(types, settings.root), encoding="utf-8")
    _check_generated(out_dir, types)
    return types


# what every file this command writes carries near its top: the generator's header, or the package's docstring
GENERATED_MARKS = ("generated by datamodel-codegen", "python -m kbtools.interop.models")


def _refuse_foreign_files(out_dir: Path, names: list[str]) -> None:
    """Nothing a user wrote is overwritten: a file of OUT_DIR the run would replace must be one it wrote before."""
    for name in [*names, "__init__.py"]:
        target = out_dir / name
        if target.is_file() and not any(
            mark in target.read_text(encoding="utf-8", errors="replace")[:1000] for mark in GENERATED_MARKS
        ):
            raise GenerationError(
                f"{target} exists and was not written by this command: it is left alone; choose another OUT_DIR "
                "or move the file"
            )


def load(out_dir: Path, name: str | None = None) -> ModuleType:
    """Import a package `generate` wrote, from its directory, under `name` (a fresh one by default)."""
    name = name or f"kb_models_{uuid.uuid4().hex[:12]}"
    spec = importlib.util.spec_from_file_location(
        name, out_dir / "__init__.py", submodule_search_locations=[str(out_dir)]
    )
    if spec is None or spec.loader is None:
        raise GenerationError(f"{out_dir}: not a package")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _check_generated(out_dir: Path, types: list[RecordTypeSchema]) -> None:
    """Import what was written and check each type's model and its quantity fields (see the module's docstring)."""
    left = [p.name for p in out_dir.glob("*.py") if PLACEHOLDER in p.read_text(encoding="utf-8")]
    if left:
        raise GenerationError(f"a quantity placeholder was left in {', '.join(left)}")
    try:
        package = load(out_dir)
    except Exception as exc:
        raise GenerationError(f"the generated models do not import: {type(exc).__name__}: {exc}") from exc
    try:
        for t in types:
            model = package.MODELS.get(t.name)
            if not (isinstance(model, type) and issubclass(model, RecordModel)):
                raise GenerationError(f"type {t.name}: no model {t.model} was generated")
            for field_name, unit in t.quantities.items():
                info = model.model_fields.get(field_name)
                found = [m for m in (info.metadata if info else []) if isinstance(m, KbQuantity)]
                if not found:  # the metadata of an Optional[Annotated[...]] is inside the union
                    found = _quantity_markers(info.annotation if info else None)
                if not any(marker.unit == unit for marker in found):
                    raise GenerationError(f"{t.model}.{field_name} is not typed as a quantity in {unit!r}")
    finally:
        for name in [n for n in sys.modules if n == package.__name__ or n.startswith(package.__name__ + ".")]:
            del sys.modules[name]


def _quantity_markers(annotation: Any) -> list[KbQuantity]:
    found = [m for m in getattr(annotation, "__metadata__", ()) if isinstance(m, KbQuantity)]
    for arg in getattr(annotation, "__args__", ()) or ():
        found += _quantity_markers(arg)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kbtools.interop.models",
        description="Write pydantic v2 models of every record type, generated from the knowledge base's schemas, "
        "into OUT_DIR as a Python package (docs/models.md).",
    )
    parser.add_argument("out_dir", metavar="OUT_DIR", type=Path, help="the package directory to write")
    parser.add_argument(
        "--root", type=Path, default=None, help="the knowledge base (default: the one the working directory is in)"
    )
    args = parser.parse_args(argv)
    try:
        types = generate(args.out_dir, args.root)
    except GenerationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    names = ", ".join(t.model for t in types)
    print(f"wrote models of {len(types)} record types to {args.out_dir}: {names}")
    return 0


if __name__ == "__main__":
    # the generated models import RecordModel from kbtools.interop.models, not from __main__: run the main of this
    # module under its package name (a second copy of the module, not an import of itself from inside it)
    sys.exit(importlib.import_module("kbtools.interop.models").main())
