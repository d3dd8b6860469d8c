"""The store's codec: kb's own types <-> JSON text."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kbtools.diagnostics import Diagnostic, Severity

# ---------------------------------------------------------------- the codec: kb's own types <-> JSON
# json's C encoder and decoder do the walking; kb's types are tagged one-key objects ({"$d": [...]}),
# made by _default and turned back into kb's types by revive() when first used. revive() walks kb's own
# structure only, never into a tag's body, so nothing a record's frontmatter says can be taken for a tag.
# Tuples come back as lists.

_TYPES: dict[str, Any] = {}


def _types() -> dict[str, Any]:
    if not _TYPES:  # imported on first use: these modules import this one
        from kbtools.corpus import Record, Reference
        from kbtools.lang.markdown import BodyScan, InlineSpan, WikiLink

        _TYPES.update(Reference=Reference, Record=Record, BodyScan=BodyScan, InlineSpan=InlineSpan, WikiLink=WikiLink)
    return _TYPES


def _default(value: Any) -> Any:
    t = _types()
    if isinstance(value, Diagnostic):
        # with its due date (KB620's): the store keeps a finding whatever the day, and the filter at the end of a
        # run (kbtools.check.freshness) decides from it whether the finding is due
        return {
            "$d": [
                value.code,
                value.severity.value,
                value.path,
                value.line,
                value.column,
                value.message,
                value.hint,
                value.due,
            ]
        }
    if isinstance(value, t["Record"]):
        return {
            "$r": [
                value.path,
                value.dir,
                value.stem,
                value.data,
                Positions.pack(value.positions),
                Positions.pack(value.value_positions),
                value.body,
                value.body_line,
                value.type,
                value.digest,
                value.type_costs,
            ]
        }
    if isinstance(value, t["Reference"]):
        return {"$ref": [list(value.path), value.value, list(value.types)]}
    if isinstance(value, t["BodyScan"]):
        return {
            "$scan": [
                [[link.target, link.anchor, link.label, link.line, link.column] for link in value.links],
                [[v.content, v.line, v.column] for v in value.values],
                value.skipped,
            ]
        }
    raise TypeError(f"kb does not cache a {type(value).__name__}")


_ARITY = {"$d": 8, "$r": 11, "$ref": 3, "$scan": 3}


def _hook(obj: dict) -> Any:
    if len(obj) != 1:
        return obj
    ((tag, body),) = obj.items()
    if _ARITY.get(tag) != (len(body) if isinstance(body, list) else -1):
        return obj  # an ordinary mapping that happens to have one key
    t = _types()
    if tag == "$d":
        code, severity, path, line, column, message, hint, due = body
        return Diagnostic(
            code=code,
            severity=Severity(severity),
            path=path,
            line=line,
            column=column,
            message=message,
            hint=hint,
            due=due,
        )
    if tag == "$r":
        path, directory, stem, data, positions, value_positions, text, body_line, type_, file_digest, costs = body
        return t["Record"](
            path=path,
            dir=directory,
            stem=stem,
            data=data,
            positions=Positions(positions),
            value_positions=Positions(value_positions),
            body=text,
            body_line=body_line,
            type=type_,
            digest=file_digest,
            type_costs=costs,
        )
    if tag == "$ref":
        return t["Reference"](tuple(body[0]), body[1], tuple(body[2]))
    links, values, skipped = body
    return t["BodyScan"](
        tuple(t["WikiLink"](*link) for link in links),
        tuple(t["InlineSpan"](*v) for v in values),
        tuple(skipped) if skipped else None,
    )


class Positions(Mapping):
    """A record's key or value positions as cached, made into a dict only when first asked for:
    a warm run reads positions only of the records it reports on."""

    __slots__ = ("_raw", "_map")

    def __init__(self, raw: str):
        self._raw: str | None = raw
        self._map: dict | None = None

    @staticmethod
    def pack(positions: Mapping) -> str:
        """One JSON string, not a million small lists: the row decodes as fast as a string is copied."""
        if isinstance(positions, Positions) and positions._raw is not None:
            return positions._raw
        return json.dumps([[list(k), *v] for k, v in positions.items()], separators=(",", ":"), ensure_ascii=False)

    def _built(self) -> dict:
        if self._map is None:
            self._map = {tuple(p[0]): (p[1], p[2]) for p in json.loads(self._raw or "[]")}
            self._raw = None
        return self._map

    def __getitem__(self, key):
        return self._built()[key]

    def __iter__(self):
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())

    def get(self, key, default=None):
        return self._built().get(key, default)

    def __contains__(self, key) -> bool:
        return key in self._built()


def encode(value: Any) -> str:
    return json.dumps(value, default=_default, separators=(",", ":"), ensure_ascii=False)


def decode(text: str) -> Any:
    """JSON text -> plain data; kb's types inside are made by revive(), when a value is first used."""
    return json.loads(text)


def revive(value: Any) -> Any:
    """Plain decoded data -> kb's types, for the tags _default wrote."""
    if isinstance(value, list):
        return [revive(v) for v in value]
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)) in _ARITY:
            return _hook(value)  # a tag's body holds no further tags
        return {k: revive(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------- tables of entries, decoded on first use


def _same(value: Any) -> Any:
    return value


# how each field of an entry is revived: plain fields stay as they are (edges are thousands of small lists)
REVIVERS = {
    "digest": _same,
    "stat": _same,
    "deps": _same,
    "resolved": _same,
    "values": _same,  # computed values, in compute.stored's own layout
    "links": lambda v: {**v, "diagnostics": revive(v.get("diagnostics", []))} if isinstance(v, dict) else v,
}
