"""The type registry's model: a record type (RecordType), as its schema file declares it, and the registry of
them (TypeRegistry). Everything the tool knows about record types comes from schema/: registry/loader.py reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator

from kbtools.diagnostics import Diagnostic
from kbtools.registry.annotations import value_of
from kbtools.registry.plan import FieldPlan, inline_refs
from kbtools.registry.rules import DEFAULT_REQUIRE_CODE, Requirement

if TYPE_CHECKING:
    import jsonschema_rs


# Keywords jsonschema-rs judges otherwise than Python jsonschema, so its compiled validator asks Python for
# them: a pattern is Python's `re` dialect (its `$` also matches before a final newline, `\d` and `\w` are
# Unicode, `\s` is not U+FEFF), multipleOf of a float is Python's float division (0.07 is no multiple of
# 0.01 there), and a format is checked by Python's own functions (rfc3986-validator's uri; "a@" is an
# email) or, where Python has none (date-time without rfc3339-validator), not at all.
PYTHON_KEYWORDS = ("format", "pattern", "multipleOf")


def _python_keyword(keyword: str) -> type:
    """A jsonschema-rs keyword that Python jsonschema judges, as a schema of that one keyword."""

    class PythonKeyword:
        def __init__(self, parent_schema: dict[str, Any], value: Any, schema_path: list[str | int]) -> None:
            schema = {keyword: value}
            self.is_valid = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER).is_valid

        def validate(self, instance: Any) -> None:
            if not self.is_valid(instance):  # the message is never shown: Python validates a failing record again
                raise ValueError(f"fails {keyword}")

    return PythonKeyword


def _has_key(schema: Any, key: str) -> bool:
    """Whether `key` is a key of some object in `schema` (a property of that name counts too: it only costs speed)."""
    if isinstance(schema, dict):
        return key in schema or any(_has_key(value, key) for value in schema.values())
    return isinstance(schema, list) and any(_has_key(item, key) for item in schema)


@dataclass
class RecordType:
    name: str
    dir: str
    title: str
    schema_path: str
    schema: dict[str, Any]
    resolver: Any
    plan: FieldPlan
    property_order: tuple[str, ...]
    # x-kb-constraints of the type and of the schemas it allOf-$refs (the envelope's)
    constraints: tuple[dict, ...] = ()
    # the fields of the whole schemas its allOf $refs: the envelope every record has
    envelope: tuple[str, ...] = ()
    # x-kb-shelf-life as a list of specs {field, days, when?, reason?}; empty when the type has none or it is
    # ill-formed (then KB210 at the schema, and no record is judged by half of it)
    shelf_life: tuple[dict, ...] = ()
    # x-kb-require's well-formed rules; an ill-formed one is KB210 at the schema and judges no record
    require: tuple[Requirement, ...] = ()
    # the top-level fields its schema (and those it allOf-$refs) declares as dates (registry.plan.is_date)
    date_fields: frozenset[str] = frozenset()

    def canonical_unit(self, field: str) -> str | None:
        """The one unit a quantity field's figures are read and shown in (x-kb-quantity); None for a field that is
        no quantity, or one of any unit ('*')."""
        plan = self.plan.properties.get(field)
        return plan.quantity if plan is not None and plan.quantity not in (None, "*") else None

    @cached_property
    def inlined_schema(self) -> Any:
        """The schema with every $ref inlined: the same meaning (a $ref is an in-place applicator, like
        allOf), but no URI resolution per record, which was most of the validation time."""
        return inline_refs(self.schema, self.resolver)

    @cached_property
    def validator(self) -> Draft202012Validator:
        """Built on first use (a warm run validates nothing); its errors are kb's messages."""
        return Draft202012Validator(self.inlined_schema, format_checker=Draft202012Validator.FORMAT_CHECKER)

    @cached_property
    def fast_validator(self) -> jsonschema_rs.Validator | None:
        """The same schema compiled by jsonschema-rs, several times faster: a record it accepts is one
        `validator` finds no error in, so only a failing record needs `validator` (for its messages). None
        where the wheel is missing or cannot compile the schema: then `validator` judges every record."""
        try:
            import jsonschema_rs
        except ImportError:
            return None
        if _has_key(self.inlined_schema, "patternProperties"):
            return None  # regexes jsonschema-rs would match in its own dialect, with no keyword to hand to Python
        try:
            return jsonschema_rs.Draft202012Validator(
                self.inlined_schema,
                validate_formats=True,
                keywords={keyword: _python_keyword(keyword) for keyword in PYTHON_KEYWORDS},
            )
        except Exception:  # anything it cannot compile (an error of its own or a schema it rejects)
            return None

    @property
    def derive(self) -> dict[str, Any]:
        return value_of("x-kb-derive", self.schema)

    @property
    def costs(self) -> dict[str, Any]:
        """x-kb-costs: cost specs every record of the type has (its own costs block adds to them, or
        overrides one by name); a cost that reads a field the record leaves out does not apply to it."""
        return value_of("x-kb-costs", self.schema)

    @property
    def planning(self) -> dict[str, Any]:
        """x-kb-plan: {over, rank_by, verdict}, how `kb plan` lays out and ranks the type's costs; {} for a type
        kb plan does not plan with."""
        return value_of("x-kb-plan", self.schema)

    @property
    def ledger(self) -> dict[str, Any]:
        """x-kb-ledger: {case, measured, predicted: {figure: formula}, verdict, band}, how a record of the type
        is a case of the prediction ledger; {} for a type that has none."""
        return value_of("x-kb-ledger", self.schema)

    @property
    def functions(self) -> dict[str, Any]:
        """x-kb-functions: name -> {parameters: {name: unit}, formula, unit}; called as record.name(args)."""
        return value_of("x-kb-functions", self.schema)

    @property
    def columns(self) -> list[str]:
        return value_of("x-kb-columns", self.schema)

    @property
    def role(self) -> str | None:
        """x-kb-role: what kb's own features take this type to be (ROLES); None for a plain type."""
        return value_of("x-kb-role", self.schema)

    @property
    def charts(self) -> list[dict[str, Any]]:
        """x-kb-charts: the charts its pages draw, e.g. a roofline from a bandwidth and peak fields."""
        return value_of("x-kb-charts", self.schema)

    def chart(self, kind: str) -> dict[str, Any] | None:
        return next((c for c in self.charts if c.get("kind") == kind), None)

    @property
    def measured_as(self) -> dict[str, str]:
        """x-kb-measured-as: shape of a kb measure figure -> the reference field that cites it."""
        return {
            shape: name
            for name, spec in self._own_fields()
            if (shape := value_of("x-kb-measured-as", spec)) is not None
        }

    @property
    def quotes_documents(self) -> bool:
        """x-kb-quotes-documents: its bodies report what a document says (a source's), so a figure there
        is the document's as printed, not a value of the corpus to quote inline (KB611 skips them)."""
        return value_of("x-kb-quotes-documents", self.schema)

    @property
    def new_fields(self) -> tuple[str, ...]:
        """x-kb-new: the optional fields of its own that `kb new` drafts too (a source's origin)."""
        return tuple(name for name, spec in self._own_fields() if value_of("x-kb-new", spec))

    @property
    def from_config(self) -> dict[str, Any] | None:
        """x-kb-from-config: {format, fields: {config key: field}}, how `kb new --from-config` reads a record of the
        type from a config file; None for a type that cannot be read from one."""
        return value_of("x-kb-from-config", self.schema)

    def _own_fields(self) -> list[tuple[str, dict[str, Any]]]:
        """The fields its own schema declares (not the envelope's), each with its schema."""
        properties = self.schema.get("properties", {})
        items = properties.items() if isinstance(properties, dict) else ()
        return [(name, spec) for name, spec in items if isinstance(spec, dict)]


@dataclass
class TypeRegistry:
    types: dict[str, RecordType]
    diagnostics: list[Diagnostic]
    # digests of the schema texts that met the meta-schema, for a store to vouch for them next time
    meta_checked: frozenset[bytes] = frozenset()

    @cached_property
    def rule_codes(self) -> frozenset[str]:
        """The codes the schemas' own rules report (x-kb-constraints, x-kb-require), beside kb's own."""
        constraints = (
            str(rule.get("code", DEFAULT_REQUIRE_CODE)) for t in self.types.values() for rule in t.constraints
        )
        return frozenset(constraints) | {rule.code for t in self.types.values() for rule in t.require}

    @cached_property
    def envelope_fields(self) -> tuple[str, ...]:
        """The fields every record type shares (envelope.schema.json's), in schema order."""
        return tuple(dict.fromkeys(f for t in self.types.values() for f in t.envelope))

    def by_dir(self, directory: str) -> RecordType | None:
        for record_type in self.types.values():
            if record_type.dir == directory:
                return record_type
        return None

    def with_role(self, role: str) -> RecordType | None:
        """The type that plays a role (the registry allows one per role)."""
        return next((t for t in self.types.values() if t.role == role), None)

    def has_role(self, type_name: str | None, role: str) -> bool:
        record_type = self.types.get(type_name) if type_name else None
        return record_type is not None and record_type.role == role

    @property
    def dirs(self) -> list[str]:
        return sorted(t.dir for t in self.types.values())
