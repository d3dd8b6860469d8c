"""Figures in prose checked against the record's own values, without history (KB610, KB611).

KB600 finds prose still quoting a replaced figure, but only for an edit git has seen. The audits of
the knowledge base this format descends from ranked a plainer defect first: a record whose own text
states one figure while its field holds another ("the recorded value is 31.5 GB/s" beside 63 GB/s).
Two checks read every figure a record writes in words (a number with a unit kb knows, `$` prices and
`N×` ratios):

- KB610, an error: a figure that claims to be one of the record's values and disagrees with it. A
  figure claims a field when it sits in that field's own text (its note or basis, or `<field>_note`)
  in a sentence that says so ("this value", "the recorded figure", ...), in any sentence that names
  the field (its name with spaces, or a word the schema lists in `x-kb-names`), or when the words right
  after it are words of that field's name and of no other's ("128 GB/s per direction": the field is
  bandwidth_per_direction). A sentence that links another record of the same type is about that record,
  not this one.
- KB611, a warning: a figure in the body that is one of the values this record or a record it links
  to holds, typed by hand where an inline `{{ value }}` would keep it true after an edit. Where several
  values equal it, the one the sentence is about: the field it names, else a record it links, else this
  record's own; where that still leaves several, all of them.

A figure the check must not read as a claim is written so it can tell (docs/records.md): an old figure
struck through (`~~128 GB/s~~`), a competing value entered among the field's values, a per-part figure
qualified by "per ..." or "each", a step of a calculation (the operands beside ×, ÷, +, −; the result
after `=` or `≈` is a claim). Quoted code is not prose.

Before calling a mismatch, both checks read which record and which quantity a sentence is about; on a
knowledge base kb did not write, a figure of another record or of another scope was the commonest false alarm:

- Which record. A sentence names another record when it links it (`[[other]]`) or writes the name, an alias
  or the id of a record this record links somewhere in its body ("the H100's 3.35 TB/s" in an H200 record
  whose body links the H100). A figure that agrees with one of a named record's values is that record's
  figure: no claim on this record's (KB610), and quoted as that record's (KB611). Only records the body links
  are looked up by name: they are what a warm check knows this record depends on, so a name search costs no
  scan of the corpus and a cached verdict cannot outlive an edit to the record it names. A figure of a named
  record that agrees with none of its values is still read against this record's fields as before.
- Which scope. A sentence that scopes its figures to a unit of topology (`per`, `each` or `every` before a
  link, lane, port, GPU, chip, card, die, stack, node, server, system, host, rack, pod or cluster: "NVLink
  gives 900 GB/s per GPU") gives figures of that scope, compared only with a field whose name carries the
  same word (throughput_per_gpu). A field's name is the only statement of its scope kb has: one knowledge
  base records an interconnect's bandwidth per link (50 GB/s), another summed over a GPU's links (900 GB/s),
  so a figure of a stated scope is not held against a field that states none.

KB611 is advice, not a finding: kb reports it only when the configuration asks for it (`KB611 = "warning"`
under kb.toml's `[severity]`, docs/configuration.md; kbtools.config.OPT_IN).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

from kbtools.check.prose_text import Figure, figures_in, prose_lines, sentences, unit_of
from kbtools.corpus import FieldPath, Record, dotted, text_fields
from kbtools.diagnostics import Diagnostic
from kbtools.lang.markdown import scan_body
from kbtools.lang.units import format_quantity, unit_registry

_PER_PART = re.compile(
    r"^\s*(?:per\b|each\b|a (?:lane|pin|stack|chip|link|port|die|gpu|card)\b|/\s?(?:lane|pin|stack|chip|link|port|die|GPU)\b)",
    re.IGNORECASE,
)
_CLAIMS_THIS = re.compile(
    r"\b(?:this|the) (?:recorded |stored |listed |stated )?(?:value|figure|number)\b"
    r"|\b(?:recorded|stored|listed) (?:here )?as\b|\bthis record (?:gives|states|stores|records)\b",
    re.IGNORECASE,
)
# a figure beside an arithmetic operator is an operand of a calculation (6,144 bits × 6.25 Gb/s); one an `=` or
# `≈` joins to others is a side of an equation (252 GB/s ÷ 8 = 31.5 GB/s)
_OPERATOR_BEFORE = re.compile(r"(?:[×÷*/+−]|\s-|\btimes)[\s(]*$")
_OPERATOR_AFTER = re.compile(r"[\s)]*(?:[×÷*/+−]|-\s|times\b)")
_RELATION_BEFORE = re.compile(r"[=≈][\s(]*$")
_RELATION_AFTER = re.compile(r"[\s)]*[=≈]")
_WORDS_AFTER = re.compile(r"(?:[ \t-]+[A-Za-z][A-Za-z0-9]*)+")  # "per direction" after "128 GB/s"
_MAX_WORDS_AFTER = 6
_LINK = re.compile(r"\[\[([^\]|#]+)")
# a unit of topology a sentence scopes its figures to ("900 GB/s per GPU", "each link"): the word, singular
_DOMAIN = re.compile(
    r"\b(?:per|each|every)\s+(link|lane|port|gpu|chip|card|die|stack|node|server|system|host|rack|pod|cluster)s?\b",
    re.IGNORECASE,
)
_SKIP_KEYS = frozenset(
    {
        "formula",
        "url",
        "config_url",
        "docs_url",
        "repository",
        "unit",
        "value",
        "id",
        "type",
        "source",
        "sources",
        "when",
        "rank",
        "basis",
    }
)


@dataclass(frozen=True)
class Known:
    """A value a figure may be compared with, and how prose would quote it inline."""

    quote: str  # what goes between {{ }}
    label: str  # record.field, for messages
    quantity: Any
    name: str  # the field, cost or input it is, in its record
    record: str  # the record's key
    competing: tuple[Any, ...] = ()
    own: bool = True  # this record's, where an exactly equal one-digit figure is taken as a quote of it
    computed: bool = False  # a cost: the only kind of value a bare ratio (3×) is compared with


@dataclass(frozen=True)
class FieldNames:
    """What prose calls the fields of one record: each field's name with spaces and as written, and the words
    the schema lists in x-kb-names; every field of its type, and the record's costs and inputs."""

    units: dict[str, Any]  # field -> its unit (None: any), for a figure of its kind
    phrases: dict[str, tuple[tuple[str, ...], ...]]  # field -> each of its names as lower-case words
    pattern: re.Pattern  # every name as whole words, the longest first: a match is the longest name at its place
    fields_of: dict[str, tuple[str, ...]]  # a name as lower-case text -> the fields it is a name of

    def named(self, sentence: str) -> dict[str, tuple[int, int]]:
        """The fields a sentence names, each with where it first does. A name inside a longer name of another
        field names only that one ("memory capacity" in "memory capacity physical")."""
        out: dict[str, tuple[int, int]] = {}
        for match in self.pattern.finditer(sentence):
            for name in self.fields_of.get(" ".join(match.group().lower().split()), ()):
                out.setdefault(name, match.span())
        return out

    def named_after(self, sentence: str, figure: Figure) -> str | None:
        """The field the words right after a figure name: the longest run of them that is one field's name, or
        part of the name of one field only ("128 GB/s per direction": bandwidth_per_direction). Of fields
        whose names all hold it, the one whose name the others' hold is meant (not raw_bandwidth_per_direction,
        without "raw"); words several names share otherwise ("peak BF16": dense or sparse) say which no more
        than the unit does, nor does one word that is only part of a name (a bandwidth "bandwidth")."""
        after = _WORDS_AFTER.match(sentence, figure.end)
        if after is None:
            return None
        words = tuple(re.split(r"[\s-]+", after.group().strip(" \t-").lower()))[:_MAX_WORDS_AFTER]
        kind = [
            n
            for n, unit in self.units.items()
            if unit is not None and _same_dimension(figure.quantity._units, unit._units)
        ]
        for count in range(len(words), 0, -1):
            run = words[:count]
            whole = [n for n in kind if run in self.phrases[n]]
            part = [n for n in kind if count > 1 and any(_holds(phrase, run) for phrase in self.phrases[n])]
            if whole:
                return whole[0] if len(whole) == 1 else None
            if part:
                return self._most_general(part)
        return None

    def _most_general(self, fields: list[str]) -> str | None:
        """The one of `fields` whose name every other's holds, or None."""
        for name in fields:
            if all(
                any(_holds(theirs, mine) for theirs in self.phrases[other] for mine in self.phrases[name])
                for other in fields
                if other != name
            ):
                return name
        return None


@lru_cache(maxsize=4096)
def _same_dimension(a: Any, b: Any) -> bool:
    """Whether two units containers measure one dimension: asked for every field of a type for every figure
    prose writes, so answered once per pair."""
    ureg = unit_registry()
    return ureg.Quantity(1, a).is_compatible_with(ureg.Quantity(1, b))


def _holds(phrase: tuple[str, ...], run: tuple[str, ...]) -> bool:
    return any(phrase[i : i + len(run)] == run for i in range(len(phrase) - len(run) + 1))


def check_prose(computer, record: Record, fields: dict[str, Any], costs: dict[str, Any]) -> list[Diagnostic]:
    own = _own_values(computer, record, fields, costs)
    record_type = computer.types.get(record.type)
    names = _field_names(record_type, own)
    found: list[Diagnostic] = []
    values_of: dict[str, list[Known]] = {record.key: []}  # another record's values, each read once

    def values(key: str) -> list[Known]:
        if key not in values_of:
            values_of[key] = _values_of(computer, key)
        return values_of[key]

    called: list[list[tuple[str, re.Pattern]]] = []  # the records the body links, read at the first figure

    def about(sentence: str, linked: list[str]) -> list[str]:
        if not called:
            called.append(_callers(computer, record))
        return _named_records(sentence, linked, called[0])

    def theirs_in(sentence: str, linked: list[str]) -> Callable[[], list[Known]]:
        """The values of the records a sentence names, read only when a figure disagrees with this record's own
        (which most do not): so is what prose calls each linked record, the pattern of its names."""
        return lambda: _theirs(values, about(sentence, linked))

    for path, text in text_fields(record.data, _SKIP_KEYS):
        claimed = _claimed_field(path, own)
        for sentence, offset in sentences(text):
            figures = list(figures_in(sentence))
            if not figures:
                continue
            linked = list(dict.fromkeys(_keys_linked(computer, sentence)))
            about_another = _about_another(computer, record, linked)
            theirs = theirs_in(sentence, linked)
            for figure, known in _contradictions(figures, sentence, claimed, names, own, about_another, theirs):
                line, col = _locate(computer, record, path, text, offset + figure.start)
                found.append(_contradiction(record, line, col, dotted(path), figure, known))
    asks_inline = record_type is not None and not record_type.quotes_documents
    names_of: dict[str, FieldNames] = {record.key: names}
    for offset, text in prose_lines(record.body or ""):
        for sentence, start in sentences(text, blanked=True):
            figures = list(figures_in(sentence))
            if not figures:
                continue
            linked = list(dict.fromkeys(_keys_linked(computer, sentence)))
            about_another = _about_another(computer, record, linked)
            theirs = theirs_in(sentence, linked)
            contradicted = {
                f.start: k for f, k in _contradictions(figures, sentence, None, names, own, about_another, theirs)
            }
            pool: list[Known] | None = None
            for figure in figures:
                line, col = record.body_line + offset, start + figure.start + 1
                if figure.start in contradicted:
                    found.append(_contradiction(record, line, col, "body", figure, contradicted[figure.start]))
                    continue
                if not asks_inline:
                    continue
                if pool is None:
                    named = about(sentence, linked)  # linked, then called by a name
                    pool = []
                    for key in named:
                        if key not in names_of:
                            target_type = computer.types.get(computer.corpus.records[key].type)
                            names_of[key] = _field_names(target_type, values(key))
                        pool.extend(values(key))
                    pool.extend(_in_scope(sentence, own))  # of another scope ("per GPU"): none of this record's
                    said = {key: names_of[key].named(sentence) for key in (*named, record.key)}
                quoted = _quoted(figure, pool, partial(_is_named, sentence, figure, said, names_of))
                if quoted:
                    found.append(_typed_by_hand(record, line, col, figure, quoted))
    return found


# ------------------------------------------------------------------ what a record holds
def _own_values(computer, record: Record, fields: dict[str, Any], costs: dict[str, Any]) -> list[Known]:
    out = []
    for name, value in fields.items():
        if value.quantity is not None:
            out.append(
                Known(
                    name,
                    f"{record.key}.{name}",
                    value.quantity,
                    name,
                    record.key,
                    tuple(a.quantity for a in value.alternatives if a.quantity is not None),
                )
            )
    for name, value in costs.items():
        if value.quantity is not None:
            out.append(Known(name, f"{record.key}.costs.{name}", value.quantity, name, record.key, computed=True))
    for name in record.mapping("inputs"):
        written = computer.written.get((record.key, ("inputs", name)))
        if written is not None:
            out.append(Known(name, f"{record.key}.inputs.{name}", written.quantity, name, record.key))
    return out


def _about_another(computer, record: Record, linked: list[str]) -> bool:
    """A sentence that links another record of this record's type is about that one, not this one."""
    records = computer.corpus.records
    return any(key != record.key and records[key].type == record.type for key in linked)


def _callers(computer, record: Record) -> list[tuple[str, re.Pattern]]:
    """Each other record this record's body links, with a pattern of what prose calls it: its name, its
    aliases and its id, as whole words, in any case. A name inside one of this record's own names (an "H100"
    in "H100 NVL") is not the other's. Read through the computer (resolve, peek), so a warm check knows this
    record's verdict depends on them."""
    out: list[tuple[str, re.Pattern]] = []
    mine = _called(record.data.get("name"), record.data.get("aliases"), record.id)
    linked = (computer.resolve(link.target)[0] for link in scan_body(record.body or "").links)  # outside code
    for key in dict.fromkeys(found.key for found in linked if found is not None):
        if key == record.key:
            continue
        target = computer.corpus.records[key]
        words = [
            w
            for w in _called(computer.peek(target, "name"), computer.peek(target, "aliases"), target.id)
            if not any(_holds_words(m, w) for m in mine)
        ]
        if words:
            out.append((key, _any_of(tuple(sorted(words, key=len, reverse=True)))))
    return out


@lru_cache(maxsize=4096)
def _any_of(words: tuple[str, ...]) -> re.Pattern:
    """One pattern for any of these names as whole words, longest first: compiled once per set of names, as
    every record linking a record asks for the same set (re's own cache of 512 patterns is too small here)."""
    return re.compile("|".join(map(_whole_word, words)), re.IGNORECASE)


def _called(name: Any, aliases: Any, record_id: str) -> list[str]:
    words = [name, *(aliases if isinstance(aliases, list) else ()), record_id]
    return list(dict.fromkeys(" ".join(w.split()) for w in words if isinstance(w, str) and len(w.strip()) > 1))


def _whole_word(words: str) -> str:
    """A pattern for these words as whole words: not inside a longer word or hyphenated id, any run of spaces."""
    return r"(?<![\w-])" + r"\s+".join(map(re.escape, words.split(" "))) + r"(?![\w-])"


def _holds_words(text: str, words: str) -> bool:
    """Whether `words` stand in `text` as whole words, in any case (as _whole_word's pattern would find them;
    both have their spaces made single by _called): no pattern is compiled for a question asked once."""
    text, words = text.lower(), words.lower()
    start = text.find(words)
    while start >= 0:
        end = start + len(words)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before in "_-") and not (after.isalnum() or after in "_-"):
            return True
        start = text.find(words, start + 1)
    return False


def _theirs(values: Callable[[str], list[Known]], keys: list[str]) -> list[Known]:
    """The values of the other records a sentence names: read only when a figure disagrees with this record's."""
    return [known for key in keys for known in values(key)]


def _named_records(sentence: str, linked: list[str], callers: list[tuple[str, re.Pattern]]) -> list[str]:
    """The other records a sentence is about: those it links, then those it calls by a name."""
    named = [key for key, pattern in callers if key not in linked and pattern.search(sentence)]
    return [*linked, *named]


def _scopes(sentence: str) -> set[str]:
    """The units of topology a sentence scopes its figures to ("per GPU", "each link"), lower case."""
    return {m.lower() for m in _DOMAIN.findall(sentence)}


def _in_scope(sentence: str, values: list[Known]) -> list[Known]:
    """The values a figure of this sentence may be: where it scopes its figures to a unit of topology, only
    those whose names carry that unit's word (throughput_per_gpu for "per GPU")."""
    scopes = _scopes(sentence)
    if not scopes:
        return values
    return [k for k in values if scopes <= set(k.name.lower().split("_"))]


def _keys_linked(computer, sentence: str) -> list[str]:
    out = []
    for target in _LINK.findall(sentence):
        found, _ = computer.resolve(target.strip())
        if found is not None:
            out.append(found.key)
    return out


def _values_of(computer, key: str) -> list[Known]:
    out: list[Known] = []
    target = computer.corpus.records[key]
    record_type = computer.types.get(target.type)
    if record_type is not None:
        for name, plan in record_type.plan.properties.items():
            if plan.quantity is None and name not in record_type.derive:
                continue
            value = computer.settled(computer.field, target, name)
            if value is not None and value.quantity is not None:
                out.append(
                    Known(
                        f"{key}.{name}",
                        f"{key}.{name}",
                        value.quantity,
                        name,
                        key,
                        tuple(a.quantity for a in value.alternatives if a.quantity is not None),
                        own=False,
                    )
                )
        cost_specs = computer.peek(target, "costs")
        for name in cost_specs if isinstance(cost_specs, dict) else ():
            value = computer.cost_or_none(target, name)
            if value is not None and value.quantity is not None:
                out.append(
                    Known(f"{key}.{name}", f"{key}.costs.{name}", value.quantity, name, key, own=False, computed=True)
                )
    return out


def _field_names(record_type, values: list[Known]) -> FieldNames:
    """The names of every field of a record's type (of any kind, with a value or not: a name another field's
    contains is told from it either way) and of the record's costs and inputs."""
    fields = dict(_type_field_names(record_type)) if record_type is not None else {}
    for known in values:
        if known.name not in fields or fields[known.name][0] is None:
            fields[known.name] = (known.quantity.units, fields.get(known.name, (None, ()))[1])
    return _compiled_names(tuple((name, unit, words) for name, (unit, words) in fields.items()))


_TYPE_FIELD_NAMES: dict[int, tuple[Any, dict[str, tuple[Any, tuple[str, ...]]]]] = {}


def _type_field_names(record_type) -> dict[str, tuple[Any, tuple[str, ...]]]:
    """Each quantity field of a type with its unit and its x-kb-names: the same for every record of the type,
    so read once per type (kept by identity: a type is not hashable, and holding it keeps its id its own)."""
    held = _TYPE_FIELD_NAMES.get(id(record_type))
    if held is None or held[0] is not record_type:
        fields = {}
        for name, plan in record_type.plan.properties.items():
            if plan.quantity is not None or name in record_type.derive:
                fields[name] = (unit_of(plan.quantity) if plan.quantity not in (None, "*") else None, plan.names)
        if len(_TYPE_FIELD_NAMES) > 256:  # a long-lived kb serve builds a new registry per schema edit
            _TYPE_FIELD_NAMES.clear()
        held = _TYPE_FIELD_NAMES[id(record_type)] = (record_type, fields)
    return held[1]


@lru_cache(maxsize=1024)
def _compiled_names(fields: tuple[tuple[str, Any, tuple[str, ...]], ...]) -> FieldNames:
    phrases: dict[str, tuple[tuple[str, ...], ...]] = {}
    fields_of: dict[str, tuple[str, ...]] = {}
    for name, _, extra in fields:
        written = [name.replace("_", " "), name, *extra]
        phrases[name] = tuple(dict.fromkeys(tuple(re.split(r"[\s_-]+", w.lower().strip())) for w in written))
        for text in dict.fromkeys(" ".join(w.lower().split()) for w in written):
            fields_of[text] = (*fields_of.get(text, ()), name)
    longest_first = sorted(fields_of, key=len, reverse=True)
    pattern = re.compile(
        "|".join(r"(?<![\w-])" + r"\s+".join(map(re.escape, t.split(" "))) + r"(?![\w-])" for t in longest_first)
        or r"(?!)",
        re.IGNORECASE,
    )
    return FieldNames({name: unit for name, unit, _ in fields}, phrases, pattern, fields_of)


# ------------------------------------------------------------------ reading text
# ------------------------------------------------------------------ the two checks
def _claimed_field(path: FieldPath, own: list[Known]) -> str | None:
    """The field whose own text `path` is: its note or basis, a competing value's note, `<field>_note`."""
    fields = {k.name for k in own}
    head = path[0] if path else None
    if head == "costs" and len(path) > 1 and path[1] in fields:
        return str(path[1])
    if isinstance(head, str) and head in fields and len(path) > 1:
        return head
    if isinstance(head, str) and head.endswith("_note") and head.removesuffix("_note") in fields:
        return head.removesuffix("_note")
    return None


def _contradictions(
    figures: list[Figure],
    sentence: str,
    claimed: str | None,
    names: FieldNames,
    own: list[Known],
    about_another: bool,
    theirs: Callable[[], list[Known]] = list,
) -> Iterator[tuple[Figure, Known]]:
    """Each figure of a sentence that claims a value of this record and contradicts it, with that value.
    `claimed` is the field whose own text the sentence is; `about_another` says it links another record of
    this type; `theirs` gives the values of the other records it names, a figure agreeing with one of which
    is that record's. A sentence that states two figures of one kind compares or derives them, unless each is
    followed by the words of its field's name. A figure so followed claims that field; any other, unless a
    per-part figure, the fields the sentence names. Of a sentence scoped to a unit of topology ("per GPU"),
    only fields whose names carry it."""
    stated = [f for f in _stated(figures, sentence) if f.unit != "×"] if not about_another else []
    if not stated:
        return
    own = _in_scope(sentence, own)
    bound = {f.start: names.named_after(sentence, f) for f in stated}
    named = names.named(sentence)
    if claimed is not None and claimed not in named:
        says_so = _CLAIMS_THIS.search(sentence)
        if says_so:
            named[claimed] = says_so.span()
    for figure in stated:
        field = bound[figure.start]
        alike = [f for f in stated if f.quantity.is_compatible_with(figure.quantity)]
        if len(alike) > 1 and any(bound[f.start] is None for f in alike):
            continue
        if field is not None:
            candidates = [k for k in own if k.name == field]
        elif _PER_PART.match(sentence[figure.end :]):
            continue
        else:
            candidates = [k for k in own if k.name in named]
        candidates = [k for k in candidates if figure.quantity.is_compatible_with(k.quantity)]
        if not candidates or any(_agrees(figure, q) for k in candidates for q in (k.quantity, *k.competing)):
            continue
        if any(
            figure.quantity.is_compatible_with(q) and _agrees(figure, q)
            for k in theirs()
            for q in (k.quantity, *k.competing)
        ):
            continue  # another record's figure, in a sentence that names it
        yield figure, min(candidates, key=lambda k: _distance(named.get(k.name), figure))


def _is_named(
    sentence: str, figure: Figure, said: dict[str, dict[str, Any]], names_of: dict[str, FieldNames], known: Known
) -> bool:
    """Whether a sentence names the field a value is, anywhere in it (`said`, per record) or right after the figure."""
    return known.name in said[known.record] or names_of[known.record].named_after(sentence, figure) == known.name


def _distance(span: tuple[int, int] | None, figure: Figure) -> int:
    """How far from a figure its sentence names a field (0: by the words right after it)."""
    if span is None:
        return 0
    return max(span[0] - figure.end, figure.start - span[1], 0)


def _stated(figures: list[Figure], sentence: str) -> list[Figure]:
    """The figures a sentence states. Not an operand of a calculation (a figure beside ×, ÷, +, −, / or
    'times'); of the figures an = or ≈ joins, the result: the one alone after it ("252 GB/s ÷ 8 = 31.5 GB/s",
    the last of a chain), or where a calculation follows it, the one alone before ("31.5 GB/s = 252 GB/s ÷ 8")."""
    operand = [
        bool(_OPERATOR_BEFORE.search(sentence, max(0, f.start - 12), f.start) or _OPERATOR_AFTER.match(sentence, f.end))
        for f in figures
    ]
    result = [
        not operand[i] and bool(_RELATION_BEFORE.search(sentence, max(0, f.start - 4), f.start))
        for i, f in enumerate(figures)
    ]
    return [
        f
        for i, f in enumerate(figures)
        if not operand[i] and not (_RELATION_AFTER.match(sentence, f.end) and i + 1 < len(figures) and result[i + 1])
    ]


def _same_family(figure: Figure, quantity: Any) -> bool:
    """GB/s and TB/s are one way of writing a figure; Gb/s against GB/s (a 400 Gb/s NIC against a
    50 GB/s copy rate) or GiB against GB are different figures that happen to convert."""
    ratio = float((1 * figure.quantity.units).to(quantity.units).magnitude)
    thousands = math.log10(ratio) / 3 if ratio > 0 else 0.5
    return abs(thousands - round(thousands)) < 1e-9


def _quoted(figure: Figure, pool: list[Known], named: Callable[[Known], bool]) -> list[Known]:
    """The values a hand-typed figure quotes: equal at the precision written, with at least two significant
    digits unless it is exactly this record's own (a bare '2 TB/s' is too coarse to say which value, and
    '2 bytes' per weight is not another record's 2-byte KV element). Of several, those the sentence is about:
    a field it names, else a record it links, else this record's own; all that are left when it cannot tell.
    None when one of those is a competing value, which no inline value can quote alone."""
    matched: list[tuple[Known, bool]] = []  # (the value, whether it is one of its competing values that agrees)
    for known in pool:
        if figure.unit == "×" and not known.computed:
            continue
        if not figure.quantity.is_compatible_with(known.quantity) or not _same_family(figure, known.quantity):
            continue
        if any(_agrees(figure, q, strict=True) for q in known.competing):
            matched.append((known, True))
        elif _agrees(figure, known.quantity, strict=True, exact=known.own):
            matched.append((known, False))
    ranks = [(named(known), not known.own) for known, _ in matched]
    top = [m for m, rank in zip(matched, ranks, strict=True) if rank == max(ranks)]
    if any(competing for _, competing in top):
        return []
    return list({known.label: known for known, _ in top}.values())


def _agrees(figure: Figure, quantity: Any, strict: bool = False, exact: bool = True) -> bool:
    value = float(quantity.to(figure.quantity.units).magnitude)
    written = float(figure.quantity.magnitude)
    coarse = len(figure.number.replace(",", "").replace(".", "").lstrip("0")) < 2
    if strict and coarse and not exact:
        return False
    if math.isclose(value, written, rel_tol=1e-9, abs_tol=1e-12):
        return True
    decimals = len(figure.number.partition(".")[2])
    if strict and coarse:
        return False
    return abs(value - written) <= 0.5 * 10**-decimals * (1 + 1e-9) or (
        not strict and math.isclose(value, written, rel_tol=0.01)
    )


def _unit_suffix(figure: Figure, known: Known) -> str:
    if figure.unit == "×":
        return ""
    shown = format_quantity(known.quantity, None, 6).partition(" ")[2]
    return "" if shown.replace(" ", "") == figure.unit.replace(" ", "") else f" | {figure.unit}"


def _contradiction(record: Record, line: int, col: int, where: str, figure: Figure, known: Known) -> Diagnostic:
    return Diagnostic.make(
        "KB610",
        record.path,
        line,
        col,
        f"{where}: the text says {figure.text} for {known.name}, but {known.label} is "
        f"{format_quantity(known.quantity, figure.unit if figure.unit != '×' else None, 6)}: correct the text or the field; "
        f"quote the field as {{{{ {known.quote} }}}} in the body, strike an old figure through (~~{figure.text}~~), "
        "or enter a competing figure among the field's values",
    )


def _typed_by_hand(record: Record, line: int, col: int, figure: Figure, quoted: list[Known]) -> Diagnostic:
    """KB611 for a figure that is one value, or any of several the sentence does not tell apart."""
    values = [f"{k.label} ({format_quantity(k.quantity, None, 6)})" for k in quoted]
    inline = [f"{{{{ {k.quote}{_unit_suffix(figure, k)} }}}}" for k in quoted]
    if len(quoted) == 1:
        said = f"{values[0]} typed by hand; write {inline[0]}"
    else:
        said = (
            f"{_either(values)} typed by hand, and the sentence does not say which; write the one it is, "
            f"{_either(inline)},"
        )
    return Diagnostic.make(
        "KB611", record.path, line, col, f"body: {figure.text} is {said} so an edit to it cannot leave this stale"
    )


def _either(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " or " + items[-1]


def _locate(computer, record: Record, path: FieldPath, text: str, offset: int) -> tuple[int, int]:
    """Line and column of a figure inside a frontmatter string: found in the file's own lines from
    where the value starts (a folded or quoted YAML string does not map offsets one to one)."""
    line, col = record.value_position(path)
    snippet = text[offset : offset + 24].split("\n")[0]
    try:
        lines = (computer.corpus.settings.root / record.path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return line, col
    for index in range(line - 1, min(len(lines), line - 1 + 200)):
        at = lines[index].find(snippet, col - 1 if index == line - 1 else 0)
        if at != -1:
            return index + 1, at + 1
    return line, col
