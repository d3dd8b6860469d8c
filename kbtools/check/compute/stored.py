"""A record's computed values as the store keeps them, so that a build (any run that needs every value)
computes again only the records an edit can change and reads the rest.

A record's values are one JSON document: a table of value nodes (each Value's fields, its quantity as the
magnitude and pint's unit exponents), and its fields, costs, hardware tables and inline values as indexes
into that table. A value another record owns (an input read from it) is written as a reference to that
record's field or cost, never copied: copying would repeat every chain a value rests on in every reader.
References are resolved once every record's values are in hand, so a decoded value is equal to a freshly
computed one down to its deepest input, and `kb explain`, the site and exports see no difference.

Anything that does not decode (a row from another version, a reference to a value that is not there) makes
the record's values unknown, and the caller computes them: the store can cost time, never a wrong figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pint.util import UnitsContainer

from kbtools.check.compute.values import InlineValue, Value
from kbtools.corpus import Record, RecordValues
from kbtools.lang.formula import parse_formula
from kbtools.lang.units import unit_registry

FORMAT = 1  # bumped when the layout below changes: an older row is then unknown, and computed again
COST = "costs."  # how the compute stage names a cost among a record's values (a field has its bare name)


class Undecodable(ValueError):
    """A stored row kb cannot make values of."""


# ---------------------------------------------------------------- writing


class Encoder:
    """Values of the records of one run, each encoded with references to what other records own."""

    def __init__(self, memo: Mapping[tuple[str, str], Any], computed: Mapping[str, RecordValues]):
        # every value a record shows as its own field or cost -> (record, name): what a reference names
        self.owners: dict[int, tuple[str, str]] = {}
        for (key, name), value in memo.items():
            if isinstance(value, Value):
                self.owners.setdefault(id(value), (key, name))
        self.computed = computed

    def encode(self, record: Record, values: RecordValues | None) -> dict[str, Any] | None:
        """The record's values as stored; None when they cannot be kept (they are computed every run)."""
        try:
            return self._encode(record, values)
        except (Undecodable, RecursionError):  # an odd magnitude; a chain of costs deeper than Python recurses
            return None

    def _encode(self, record: Record, values: RecordValues | None) -> dict[str, Any]:
        if values is None:
            return {"format": FORMAT, "none": True}
        nodes: list[list[Any]] = []
        seen: dict[int, int] = {}

        def shared(value: Value) -> int | list[Any]:
            """An input, a hardware row or an inline value: another record's own value is referred to."""
            owner = self.owners.get(id(value))
            if owner is not None and owner[0] != record.key and self.kept(*owner):
                return ["ref", owner[0], owner[1]]
            return node(value)

        def node(value: Value) -> int:
            if id(value) in seen:
                return seen[id(value)]
            body = [
                quantity(value.quantity),
                value.record,
                value.name,
                value.path,
                value.line,
                value.basis,
                value.confidence,
                list(value.sources),
                value.unit,
                value.formula.text if value.formula is not None else None,
                [[n, shared(v)] for n, v in value.inputs],
                node(value.recomputed) if value.recomputed is not None else None,
                [[n, node(v)] for n, v in value.rows] if value.rows is not None else None,
                value.vendor_claim,
                value.note,
                [node(a) for a in value.alternatives],
                value.rank,
                value.weakest,
                [[label, quantity(q)] for label, q in value.variants],
            ]
            seen[id(value)] = len(nodes)
            nodes.append(body)
            return seen[id(value)]

        fields = {name: node(v) for name, v in values.fields.items()}
        costs = {name: node(v) for name, v in values.costs.items()}
        hardware = {
            parameter: {k: (shared(v) if v is not None else None) for k, v in table.items()}
            for parameter, table in values.hardware.items()
        }
        inline = [
            [i.line, i.column, i.source, shared(i.value) if i.value is not None else None, i.rendered]
            for i in values.inline
        ]
        return {
            "format": FORMAT,
            "nodes": nodes,
            "fields": fields,
            "costs": costs,
            "hardware": hardware,
            "inline": inline,
        }

    def kept(self, key: str, name: str) -> bool:
        """Whether the record's RecordValues holds the value named (what a reference can be resolved
        against): a cost of its costs block, or a field its type computes (compute.engine.record_values)."""
        values = self.computed.get(key)
        if values is not None:
            found = values.costs.get(name[len(COST) :]) if name.startswith(COST) else values.fields.get(name)
            return found is not None
        return False


def quantity(q: Any) -> list[Any] | None:
    if q is None:
        return None
    if type(q.magnitude) not in (int, float):
        raise Undecodable(f"a {type(q.magnitude).__name__} magnitude is not kept")  # the record is computed each run
    return [q.magnitude, [[unit, power] for unit, power in q._units.items()]]


# ---------------------------------------------------------------- reading


class Decoder:
    """Stored values of many records, made into Values; references resolved once all are made."""

    def __init__(self):
        self.ureg = unit_registry()
        self.units: dict[tuple, Any] = {}
        self.pending: list[tuple[str, Value, list, Any]] = []  # (reader, value, its stored inputs, its node table)

    def quantity(self, stored: Any) -> Any:
        if stored is None:
            return None
        magnitude, units = stored
        if not isinstance(magnitude, (int, float)) or isinstance(magnitude, bool):
            raise Undecodable("a magnitude is not a number")
        key = tuple((str(u), p) for u, p in units)
        container = self.units.get(key)
        if container is None:
            for name, _ in key:  # pint defines a prefixed unit ('millisecond') when it first parses it
                if dict(self.ureg.Unit(name)._units) != {name: 1}:
                    raise Undecodable(f"'{name}' is not a unit's own name")
            container = self.units[key] = UnitsContainer(dict(key))
        return self.ureg.Quantity(magnitude, container)

    def record(self, key: str, stored: Any) -> RecordValues | None:
        """One record's values, their references not yet resolved (`resolve` does that for all)."""
        if not isinstance(stored, dict) or stored.get("format") != FORMAT:
            raise Undecodable("a row of another layout")
        if stored.get("none"):
            return None
        made: list[Value] = []
        for body in stored["nodes"]:
            (
                q,
                record,
                name,
                path,
                line,
                basis,
                confidence,
                sources,
                unit,
                formula,
                inputs,
                recomputed,
                rows,
                vendor_claim,
                note,
                alternatives,
                rank,
                weakest,
                variants,
            ) = body
            value = Value(
                self.quantity(q),
                record,
                name,
                path,
                line,
                basis,
                confidence,
                tuple(sources),
                unit=unit,
                formula=parse_formula(formula) if formula is not None else None,
                recomputed=self.local(made, recomputed) if recomputed is not None else None,
                rows=tuple((n, self.local(made, i)) for n, i in rows) if rows is not None else None,
                vendor_claim=vendor_claim,
                note=note,
                alternatives=tuple(self.local(made, i) for i in alternatives),
                rank=rank,
                weakest=weakest,
                variants=tuple((label, self.quantity(v)) for label, v in variants),
            )
            made.append(value)
            if inputs:
                self.pending.append((key, value, inputs, made))
        return self.values(stored, made)

    def values(self, stored: dict, made: list[Value]) -> RecordValues:
        def at(i: Any) -> Any:
            return self.local(made, i) if not isinstance(i, list) else _Ref(i)

        return RecordValues(
            {n: at(i) for n, i in stored["fields"].items()},
            {n: at(i) for n, i in stored["costs"].items()},
            {p: {k: (at(i) if i is not None else None) for k, i in t.items()} for p, t in stored["hardware"].items()},
            tuple(
                InlineValue(line, column, source, at(i) if i is not None else None, rendered)
                for line, column, source, i, rendered in stored["inline"]
            ),
        )

    @staticmethod
    def local(made: list[Value], i: Any) -> Value:
        if type(i) is not int or not 0 <= i < len(made):
            raise Undecodable("a value refers to one not written before it")
        return made[i]

    def resolve(self, values: dict[str, RecordValues | None]) -> set[str]:
        """Put every reference in place against `values` (the whole run's, fresh and decoded). The records
        with a reference that names nothing there: their values are unknown."""
        broken: set[str] = set()

        def target(i: Any, reader: str) -> Value | None:
            if not isinstance(i, _Ref):
                return i
            owner = values.get(i.key)
            found = None
            if owner is not None:
                found = owner.costs.get(i.name[len(COST) :]) if i.name.startswith(COST) else owner.fields.get(i.name)
            if found is None or isinstance(found, _Ref):
                broken.add(reader)
            return found

        for reader, value, inputs, made in self.pending:
            resolved = []
            for n, i in inputs:
                resolved.append((n, target(_Ref(i) if isinstance(i, list) else self.local(made, i), reader)))
            object.__setattr__(value, "inputs", tuple(resolved))  # frozen: made whole here, before any use
        for reader, entry in values.items():
            if entry is None or reader in broken:
                continue
            for table in (entry.fields, entry.costs):
                for name, v in list(table.items()):
                    if isinstance(v, _Ref):
                        table[name] = target(v, reader)  # type: ignore[index]
            for table in entry.hardware.values():
                for name, v in list(table.items()):
                    if isinstance(v, _Ref):
                        table[name] = target(v, reader)  # type: ignore[index]
            if any(isinstance(i.value, _Ref) for i in entry.inline):
                object.__setattr__(
                    entry,
                    "inline",
                    tuple(
                        InlineValue(i.line, i.column, i.source, target(i.value, reader), i.rendered)
                        if isinstance(i.value, _Ref)
                        else i
                        for i in entry.inline
                    ),
                )
        return broken


class _Ref:
    """A stored reference to another record's field or cost, until `Decoder.resolve` puts the value there."""

    __slots__ = ("key", "name")

    def __init__(self, stored: list):
        if len(stored) != 3 or stored[0] != "ref" or not all(isinstance(s, str) for s in stored[1:]):
            raise Undecodable("a malformed reference")
        self.key, self.name = stored[1], stored[2]
