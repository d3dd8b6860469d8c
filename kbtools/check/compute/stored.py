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

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from pint.util import UnitsContainer

from kbtools.check.compute.values import InlineValue, Value
from kbtools.corpus import Record, RecordValues
from kbtools.lang.formula import parse_formula
from kbtools.lang.units import unit_registry

FORMAT = 2  # bumped when the layout below changes: an older row is then unknown, and computed again
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
            body = [kinds.get(name, _plain)(getattr(value, name)) for name in VALUE_FIELDS]
            seen[id(value)] = len(nodes)
            nodes.append(body)
            return seen[id(value)]

        kinds: dict[str, Callable[[Any], Any]] = {  # how each field is stored; any other as it is (_plain)
            "quantity": quantity,
            "sources": list,
            "formula": lambda f: f.text if f is not None else None,
            "inputs": lambda inputs: [[n, shared(v)] for n, v in inputs],
            "recomputed": lambda v: node(v) if v is not None else None,
            "rows": lambda rows: [[n, node(v)] for n, v in rows] if rows is not None else None,
            "alternatives": lambda values: [node(a) for a in values],
            "variants": lambda variants: [
                [[list(choice) for choice in scenario], quantity(q)] for scenario, q in variants
            ],
            "bounds": lambda bounds: [quantity(q) for q in bounds] if bounds is not None else None,
        }

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
        """Whether the record's RecordValues holds the value named (what a reference can be resolved against)."""
        return owned(self.computed.get(key), name) is not None


def owned(values: RecordValues | None, name: str) -> Any:
    """The value a record's RecordValues holds under a compute-stage name: a cost of its costs block
    ('costs.x'), or a field its type computes (compute.engine.record_values). None when it holds none."""
    if values is None:
        return None
    return values.costs.get(name[len(COST) :]) if name.startswith(COST) else values.fields.get(name)


VALUE_FIELDS = tuple(f.name for f in dataclasses.fields(Value))  # a node is these, in this order


def _plain(value: Any) -> Any:
    """A field stored as it is: JSON's own kinds only, so a field added to Value that is none of them fails
    here, where the record's values are then not kept, rather than in the store's write."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    raise Undecodable(f"a {type(value).__name__} field is not kept")


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
        self.named_in_tables: set[str] = set()  # records a field, cost, hardware row or inline value refers to

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

    @staticmethod
    def scenario(stored: Any) -> tuple[tuple[str, str], ...]:
        if not isinstance(stored, list) or not all(
            isinstance(c, list) and len(c) == 2 and all(isinstance(t, str) for t in c) for c in stored
        ):
            raise Undecodable("a scenario of another layout")
        return tuple((c[0], c[1]) for c in stored)

    def record(self, key: str, stored: Any) -> RecordValues | None:
        """One record's values, their references not yet resolved (`resolve` does that for all)."""
        if not isinstance(stored, dict) or stored.get("format") != FORMAT:
            raise Undecodable("a row of another layout")
        if stored.get("none"):
            return None
        made: list[Value] = []
        kinds: dict[str, Callable[[Any], Any]] = {
            "quantity": self.quantity,
            "sources": tuple,
            "formula": lambda f: parse_formula(f) if f is not None else None,
            "inputs": lambda _: (),  # put in place by `resolve`, once every record's values are made
            "recomputed": lambda i: self.local(made, i) if i is not None else None,
            "rows": lambda rows: tuple((n, self.local(made, i)) for n, i in rows) if rows is not None else None,
            "alternatives": lambda indexes: tuple(self.local(made, i) for i in indexes),
            "variants": lambda variants: tuple((self.scenario(s), self.quantity(v)) for s, v in variants),
            "bounds": lambda bounds: tuple(self.quantity(q) for q in bounds) if bounds is not None else None,
        }
        for body in stored["nodes"]:
            if not isinstance(body, list) or len(body) != len(VALUE_FIELDS):
                raise Undecodable("a value node of another layout")
            value = Value(
                **{name: kinds.get(name, _plain)(part) for name, part in zip(VALUE_FIELDS, body, strict=True)}
            )
            inputs = body[VALUE_FIELDS.index("inputs")]
            made.append(value)
            if inputs:
                self.pending.append((key, value, inputs, made))
        return self.values(stored, made)

    def values(self, stored: dict, made: list[Value]) -> RecordValues:
        def at(i: Any) -> Any:
            if not isinstance(i, list):
                return self.local(made, i)
            reference = _Ref(i)
            self.named_in_tables.add(reference.key)
            return reference

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

    def named(self) -> set[str]:
        """The records the references of every record decoded so far name: what must be decoded beside them."""
        keys = {i[1] for _, _, inputs, _ in self.pending for _, i in inputs if isinstance(i, list) and len(i) == 3}
        return keys | self.named_in_tables

    def resolve(
        self, values: Mapping[str, RecordValues | None], readers: Mapping[str, RecordValues | None] | None = None
    ) -> set[str]:
        """Put every reference in place against `values` (the whole run's, fresh and decoded). The records
        with a reference that names nothing there: their values are unknown."""
        broken: set[str] = set()

        def target(i: Any, reader: str) -> Value | None:
            if not isinstance(i, _Ref):
                return i
            found = owned(values.get(i.key), i.name)
            if found is None or isinstance(found, _Ref):
                broken.add(reader)
            return found

        for reader, value, inputs, made in self.pending:
            resolved = []
            for n, i in inputs:
                resolved.append((n, target(_Ref(i) if isinstance(i, list) else self.local(made, i), reader)))
            object.__setattr__(value, "inputs", tuple(resolved))  # frozen: made whole here, before any use
        for reader, entry in (values if readers is None else readers).items():  # the tables of what it made
            if entry is None or reader in broken:
                continue
            for table in (entry.fields, entry.costs, *entry.hardware.values()):
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
