"""What the kinds of value (derivations, costs, parameters, inline) may ask of the evaluator: its narrow
surface, as a Protocol. The kinds import this and never the engine, which imports them, so the compute
package has no import circle even for type checking (tests/test_layout.py); the engine (Computer) is the
one implementation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from kbtools.corpus import Corpus, FieldPath, Record
from kbtools.diagnostics import Diagnostic
from kbtools.lang.units import Written

if TYPE_CHECKING:
    from kbtools.check.compute.values import Value


class Evaluator(Protocol):
    corpus: Corpus
    types: Any  # type name -> kbtools.registry.RecordType (the registry's own mapping)
    diagnostics: list[Diagnostic]
    # the written figures of the records parsed so far (derivations.parse_quantities fills them, once a record)
    written: dict[tuple[str, FieldPath], Written]
    competing: dict[tuple[str, FieldPath], list[Written]]
    parsed: set[str]
    broken_schema_formulas: set[tuple[str, str]]
    # this run's values, by (record key, field or costs.NAME), FAILED for one that failed; and what each read
    memo: dict[tuple[str, str], Any]
    value_reads: dict[tuple[str, str], frozenset[tuple[str, str]]]

    def resolve(self, query: str) -> tuple[Record | None, list[Record]]: ...

    def peek(self, record: Record, key: str) -> Any: ...

    def report(self, code: str, record: Record, path: FieldPath, message: str, line: int | None = None) -> None: ...

    def report_value(self, code: str, record: Record, path: FieldPath, message: str) -> None: ...

    def stated_value(self, record: Record, path: FieldPath, name: str, written: Written, unit: str | None) -> Value: ...

    def field(self, record: Record, name: str) -> Value | None: ...

    def cost(self, record: Record, name: str) -> Value: ...

    def memoised(self, record: Record, name: str, compute: Any) -> Any: ...

    def field_or_cost(self, record: Record, name: str) -> Value | None: ...

    def referenced(self, record: Record, name: str, bindings: dict[str, Record]) -> Record | None: ...
