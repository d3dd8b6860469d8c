"""The compiled validator (jsonschema-rs) only ever says "valid" where Python jsonschema finds no error, so kb
can skip the Python validator for a passing record and keep every message of a failing one; without the
wheel, the Python validator alone gives the same diagnostics."""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from referencing import Registry

from kbtools.check.load import load_record_bytes
from kbtools.registry import FieldPlan, RecordType, load_registry

REPO = Path(__file__).resolve().parent.parent
REGISTRY = load_registry(REPO / "schema", REPO)

# strings each format, pattern and enum of kb's schemas must judge alike in both validators
BAD_STRINGS = (
    "ht!tp://x",
    "not a url",
    "http://exa mple.com",
    "http://é.com",
    "https://example.org/a b",
    "2024-02-30",
    "2024-1-01",
    "2023-02-29",
    "2024-01-01\n",
    "abc\n",  # Python's `$` matches before a final newline
    "Abc",
    "a_b",
    "",
    "\ufeff",
    "٣",
    "a@",
)
GOOD_STRINGS = ("https://example.org/a", "2024-02-29", "abc-def", "abc_def", "draft")
ODD_VALUES = (12345, -1, 0, 0.5, 1.0, True, None, [], {}, [1, 1.0], "text", 10**30)


def _real_records() -> list[tuple[RecordType, dict[str, Any]]]:
    out = []
    for path in sorted((REPO / "records").glob("*/*.md")):
        record, _ = load_record_bytes(path.read_bytes(), path.relative_to(REPO).as_posix(), path, REGISTRY, "")
        if record is not None and record.type in REGISTRY.types:
            out.append((REGISTRY.types[record.type], dict(record.data)))
    return out


REAL = _real_records()


def _two_of_each_type() -> list[tuple[RecordType, dict[str, Any]]]:
    """The smallest and the median record of each type (by positions): every mutation of every position of
    a large flop record would take the Python validator most of a minute."""
    by_type: dict[str, list] = {}
    for record_type, data in REAL:
        by_type.setdefault(record_type.name, []).append((record_type, data))
    out = []
    for pairs in by_type.values():
        pairs.sort(key=lambda pair: len(list(_paths(pair[1]))))
        out.extend(pairs[index] for index in sorted({0, len(pairs) // 2}))
    return out


def _paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """Every position in a frontmatter: each key of a mapping and each entry of a list, at any depth."""
    if isinstance(value, dict):
        for key, sub in value.items():
            yield path + (key,)
            yield from _paths(sub, path + (key,))
    elif isinstance(value, list):
        for index, sub in enumerate(value):
            yield path + (index,)
            yield from _paths(sub, path + (index,))


def _replaced(data: dict, path: tuple, value: Any) -> dict:
    out = copy.deepcopy(data)
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def _dropped(data: dict, path: tuple) -> dict:
    out = copy.deepcopy(data)
    node = out
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return out


def _mutated_paths(data: dict) -> Iterator[tuple]:
    """Every position but those past a list's second entry: the third and later entries of a list are judged
    by the schema the first two are (no kb schema has prefixItems), and the flop records' long lists of
    values would double the Python validator's work for nothing new."""
    return (path for path in _paths(data) if not any(isinstance(part, int) and part >= 2 for part in path))


def _mutations(data: dict) -> Iterator[dict]:
    yield data
    yield {**data, "bogus_field": 1}  # unevaluatedProperties
    for path in _mutated_paths(data):
        yield _dropped(data, path)  # a required field, or a list entry
        strings = (*BAD_STRINGS, *GOOD_STRINGS) if isinstance(_at(data, path), str) else ()
        for value in (*strings, *ODD_VALUES):  # formats, patterns and enums are where a string is
            yield _replaced(data, path, value)
    for path in (p for p in _mutated_paths(data) if isinstance(_at(data, p), (dict, list))):
        container = _at(data, path)
        if isinstance(container, dict):
            yield _replaced(data, path, {**container, "bogus_field": 1})
        elif container:
            yield _replaced(data, path, [*container, container[0]])  # uniqueItems


def _at(data: Any, path: tuple) -> Any:
    for part in path:
        data = data[part]
    return data


def _agree(record_type: RecordType, data: Any) -> None:
    fast = record_type.fast_validator
    assert fast is not None
    python_valid = not any(record_type.validator.iter_errors(data))
    assert fast.is_valid(data) == python_valid, (record_type.name, data)


def test_every_type_of_kbs_schemas_compiles():
    assert REAL, "the repository's records load"
    assert {name: t.fast_validator is not None for name, t in REGISTRY.types.items()} == dict.fromkeys(
        REGISTRY.types, True
    )


def test_real_records_are_judged_alike():
    for record_type, data in REAL:
        _agree(record_type, data)


@pytest.mark.slow
@pytest.mark.parametrize("record_type,data", _two_of_each_type(), ids=lambda v: getattr(v, "name", ""))
def test_mutated_records_are_judged_alike(record_type, data):
    judged = list(_mutations(data))
    for mutated in judged:
        _agree(record_type, mutated)
    valid = sum(record_type.fast_validator.is_valid(m) for m in judged)
    assert 0 < valid < len(judged)  # the mutations are of both kinds


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.sampled_from(BAD_STRINGS),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_values_anywhere_are_judged_alike(data):
    record_type, record = data.draw(st.sampled_from(REAL))
    path = data.draw(st.sampled_from(list(_paths(record))))
    _agree(record_type, _replaced(record, path, data.draw(json_values)))


def _type_of(schema: dict) -> RecordType:
    return RecordType("t", "t", "T", "schema/t.schema.json", schema, Registry().resolver(), FieldPlan(), ())


@pytest.mark.parametrize(
    "schema,instance",
    [
        ({"multipleOf": 0.01}, 0.07),  # no multiple in float division
        ({"not": {"pattern": "^a$"}}, "a\n"),  # Python's `$` also matches before a final newline
        ({"pattern": "^\\s*$"}, "\ufeff"),  # U+FEFF is no whitespace to Python
        ({"pattern": "^\\d$"}, "٣"),  # Python's \d is Unicode
        ({"propertyNames": {"pattern": "^\\w+$"}}, {"é": 1}),
        ({"format": "email"}, "a@"),  # Python's email check is lax
        ({"format": "date-time"}, "x"),  # not checked without rfc3339-validator
        ({"format": "uri"}, "http://exa mple.com"),
        ({"format": "date"}, "2023-02-29"),
    ],
)
def test_keywords_jsonschema_rs_reads_otherwise_are_judged_by_python(schema, instance):
    _agree(_type_of(schema), instance)


def test_regexes_it_would_match_in_its_own_dialect_leave_the_schema_to_python():
    assert _type_of({"patternProperties": {"^a$": {"type": "string"}}}).fast_validator is None


def _bad_corpus(kb) -> None:
    kb.source()
    kb.record(
        "sources",
        "src-b",
        "source",
        "kind: docs\norigin: first-party\npublisher: Someone\nurl: http://exa mple.com\n",
    )
    kb.record(
        "sources",
        "src-c",
        "source",
        "kind: docs\norigin: first-party\npublisher: Someone\nurl: https://example.org/c\npublished: 2023-02-29\n",
    )
    kb.record("engines", "e", "engine", "languages: [Go, 3]\nbogus_field: 1\n", body="[[src-a]]\n")


SCHEMA_DIAGNOSTICS = [
    ("KB200", "records/engines/e.md", 9),
    ("KB200", "records/sources/src-b.md", 11),
    ("KB200", "records/sources/src-c.md", 12),
    ("KB201", "records/engines/e.md", 10),
    ("KB202", "records/engines/e.md", 1),
]


def _schema_diagnostics(kb) -> list[tuple[str, str, int]]:
    result = kb.check("--no-cache")
    assert result.exit_code == 1
    found = [line.split(" ", 3) for line in result.lines]
    return sorted(
        (code, where.rsplit(":", 3)[0], int(where.rsplit(":", 3)[1]))
        for where, _, code, _ in found
        if code.startswith("KB2")
    )


def test_bad_records_get_their_diagnostics(kb):
    _bad_corpus(kb)
    assert _schema_diagnostics(kb) == SCHEMA_DIAGNOSTICS


def test_without_the_wheel_the_same_diagnostics_come_out(kb, monkeypatch):
    _bad_corpus(kb)
    compiled = kb.check("--no-cache").lines
    monkeypatch.setitem(sys.modules, "jsonschema_rs", None)  # `import jsonschema_rs` raises ImportError
    assert load_registry(kb.root / "schema", kb.root).types["source"].fast_validator is None
    assert kb.check("--no-cache").lines == compiled
    assert _schema_diagnostics(kb) == SCHEMA_DIAGNOSTICS
