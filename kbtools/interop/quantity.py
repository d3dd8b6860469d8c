"""A pydantic v2 type for kb's quantities: a field's value, in any form a record may write it, read with kb's own
unit registry into a pint Quantity.

    from typing import Annotated
    from pydantic import BaseModel
    from kbtools.interop.quantity import KbQuantity, PintQuantity, Quantity

    class Part(BaseModel):
        bandwidth: Annotated[PintQuantity, KbQuantity("GB/s")]  # a bare number is GB/s; other units convert
        anything: Quantity  # no canonical unit: the value must carry its unit (a bare number is a plain number)

    Part(bandwidth="4.8 TB/s", anything="2 ms").bandwidth.to("GB/s").magnitude  # 4800.0

Every form docs/records.md describes is read: "VALUE UNIT", a bare number (the field's canonical unit), the long form
{value, basis, source, note, vendor_claim, low, high}, and a list of competing sourced values of which exactly one is
ranked preferred (the one kb computes with, and the one the type returns). The text is read by
kbtools.lang.units.parse_written, the reader `kb check` uses, so a unit kb knows (units.txt) is known here, a value in
the wrong dimension is refused as KB402 is, and a band's ends are checked. The shape of the long form and of a
competing value is kb's notation, fixed by that reader rather than by a knowledge base's schema, so it is declared here
with pydantic models that refuse keys kb does not read.

What the type returns is the figure alone: the provenance of a long form (its source, basis, note) is not kept on the
pint Quantity; read it from the record's data where it matters.

Only kbtools.interop imports this module: pydantic is an optional extra (`kbtools[models]`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pint
from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, StrictBool, StrictFloat, StrictInt, StrictStr
from pydantic_core import PydanticCustomError, core_schema

from kbtools.lang.units import QuantityError, check_dimension, parse_unit, parse_written

PintQuantity = pint.Quantity  # the class every registry's quantities are instances of

Number = StrictInt | StrictFloat  # a YAML true is no number (kb says KB400), and an int stays an int
Basis = Literal["vendor-spec", "measured", "derived", "secondary", "unverified"]


class LongForm(BaseModel):
    """A quantity with its provenance: {value, basis, source, note, vendor_claim, low, high}."""

    model_config = ConfigDict(extra="forbid")
    value: Number | StrictStr
    basis: Basis | None = None
    source: StrictStr | None = None
    note: StrictStr | None = None
    vendor_claim: StrictBool | None = None
    low: Number | StrictStr | None = None
    high: Number | StrictStr | None = None


class CompetingValue(BaseModel):
    """One of several sourced values of a quantity, with its rank (and the condition it holds under)."""

    model_config = ConfigDict(extra="forbid")
    value: Number | StrictStr
    rank: Literal["preferred", "normal", "deprecated"]
    source: StrictStr
    basis: Basis | None = None
    note: StrictStr | None = None
    vendor_claim: StrictBool | None = None
    condition: Annotated[StrictStr, Field(min_length=1)] | None = None


_FORMS: tuple[tuple[Any, str], ...] = (
    (StrictInt, "number"),
    (StrictFloat, "number"),
    (Annotated[StrictStr, Field(min_length=1)], "text"),
    (LongForm, "long form"),
    (Annotated[list[CompetingValue], Field(min_length=2)], "competing values"),
)


@dataclass(frozen=True)
class KbQuantity:
    """The validator of Annotated[PintQuantity, KbQuantity(unit)]: `unit` is the field's canonical unit (its
    x-kb-quantity: "GB/s", "1" for a plain number, "*" for a field whose value always writes its unit), or None where
    the schema names none (a cost's input: a bare number there is a plain number). A pint Quantity given as the value
    is accepted as it is, once its dimension is checked."""

    unit: str | None = None

    def __post_init__(self) -> None:
        if self.unit not in (None, "*"):
            try:
                parse_unit(self.unit)
            except QuantityError as exc:
                raise ValueError(f"KbQuantity({self.unit!r}): {exc.message}") from None

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        # the forms a record writes, each named as an error's place names it ("memory_bandwidth.long form.sorce")
        forms = core_schema.union_schema(
            [(handler.generate_schema(form), label) for form, label in _FORMS],
        )
        return core_schema.no_info_wrap_validator_function(
            self._validate,
            forms,
            serialization=core_schema.plain_serializer_function_ser_schema(_shown, when_used="json"),
        )

    def _validate(self, value: Any, handler: core_schema.ValidatorFunctionWrapHandler) -> pint.Quantity:
        if isinstance(value, pint.Quantity):
            return self.checked(value)
        return self.read(handler(value))

    def read(self, value: int | float | str | LongForm | list[CompetingValue]) -> pint.Quantity:
        """The figure a written value states (a competing list: its preferred value's), in its own unit."""
        try:
            if isinstance(value, list):
                return self._preferred(value)
            raw = value.model_dump(exclude_none=True) if isinstance(value, LongForm) else value
            return parse_written(raw, self._canonical(raw)).quantity
        except QuantityError as exc:
            raise _refusal(exc) from None

    def checked(self, value: pint.Quantity) -> pint.Quantity:
        """The figure, when it is in the field's dimension; else kb check's own KB402 words."""
        if self.unit not in (None, "*", ""):
            try:
                check_dimension(value, self.unit)
            except QuantityError as exc:
                raise _refusal(exc) from None
        return value

    def _canonical(self, raw: Any) -> str | None:
        number = raw.get("value") if isinstance(raw, dict) else raw
        if self.unit is None and isinstance(number, (int, float)):
            return ""  # a bare number where the schema names no unit is a plain number, as kb reads a cost's input
        return self.unit

    def _preferred(self, values: list[CompetingValue]) -> pint.Quantity:
        dumped = [v.model_dump(exclude_none=True) for v in values]
        read = [parse_written(raw, self._canonical(raw)) for raw in dumped]
        preferred = [w for w in read if w.rank == "preferred"]
        if len(preferred) != 1:
            raise PydanticCustomError(
                "kb_quantity",
                "{count} values are ranked preferred; exactly one must be (the one kb computes with)",
                {"count": len(preferred)},
            )
        return preferred[0].quantity


def _refusal(exc: QuantityError) -> PydanticCustomError:
    return PydanticCustomError("kb_quantity", "{code}: {message}", {"code": exc.code, "message": exc.message})


def _shown(value: pint.Quantity) -> str:
    """A quantity as JSON shows it: 'VALUE UNIT', which this type reads back."""
    return f"{value.magnitude!r} {value.units:~C}".strip()


Quantity = Annotated[PintQuantity, KbQuantity()]
"""A quantity with no canonical unit: its value writes its unit, or is a plain number."""
