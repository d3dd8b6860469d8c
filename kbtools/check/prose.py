"""Figures in prose checked against the record's own values, without history (KB610, KB611).

KB600 finds prose still quoting a replaced figure, but only for an edit git has seen. The audits of
the knowledge base this format descends from ranked a plainer defect first: a record whose own text
states one figure while its field holds another ("the recorded value is 31.5 GB/s" beside 63 GB/s).
Two checks read every figure a record writes in words (a number with a unit kb knows, `$` prices and
`N×` ratios):

- KB610, an error: a figure that claims to be one of the record's values and disagrees with it. A
  figure claims a field when it sits in that field's own text (its note or basis, or `<field>_note`)
  in a sentence that says so ("this value", "the recorded figure", ...) or in any sentence that names
  the field (its name with spaces, or a word the schema lists in `x-kb-names`). A sentence that links
  another record of the same type is about that record, not this one.
- KB611, a warning: a figure in the body that is one of the values this record or a record it links
  to holds, typed by hand where an inline `{{ value }}` would keep it true after an edit.

A figure the check must not read as a claim is written so it can tell (docs/records.md): an old figure
struck through (`~~128 GB/s~~`), a competing value entered among the field's values, a per-part figure
qualified by "per ..." or "each". Quoted code is not prose.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kbtools.corpus import FieldPath, Record, dotted, text_fields
from kbtools.diagnostics import Diagnostic
from kbtools.lang.markdown import blank_inline_values, too_large
from kbtools.lang.units import QuantityError, format_quantity, parse_unit, unit_registry

_NUMBER = r"(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
_FIGURE = re.compile(
    r"(?<![\w.,/{$~-])" + _NUMBER + r"(?:(×)(?!\s*[\dA-Z(])|(\s)([A-Za-zµ]+(?:/[A-Za-z]+)?)(?![\w/]))"
    r"|(?<![\w.$])\$" + _NUMBER + r"(?:\s?/\s?([A-Za-z]+)(?![\w/])|\s+per\s+([A-Za-z]+)(?![\w/]))?"
)
_PER_PART = re.compile(
    r"^\s*(?:per\b|each\b|a (?:lane|pin|stack|chip|link|port|die|gpu|card)\b|/\s?(?:lane|pin|stack|chip|link|port|die|GPU)\b)",
    re.IGNORECASE,
)
_CLAIMS_THIS = re.compile(
    r"\b(?:this|the) (?:recorded |stored |listed |stated )?(?:value|figure|number)\b"
    r"|\b(?:recorded|stored|listed) (?:here )?as\b|\bthis record (?:gives|states|stores|records)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[*_`{])|(?<=;)\s+|\n\s*\n")
_OPERATOR = re.compile(r"[×÷*/+=≈−]|\s-\s|\btimes\b")
_NOT_PROSE = re.compile(
    r"`[^`\n]*`|~~.*?~~|\]\([^)\s]*\)|https?://\S+|<[^>\n]*>"
    r'|"[^"\n]*"|“[^”\n]*”'
)  # quoted: a document's words, figures as printed
_LINK = re.compile(r"\[\[([^\]|#]+)")
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
class Figure:
    text: str  # as written, e.g. "31.5 GB/s"
    number: str  # the digits as written
    unit: str
    quantity: Any  # pint.Quantity
    start: int  # offset in the text it was found in
    end: int


@dataclass(frozen=True)
class Known:
    """A value a figure may be compared with, and how prose would quote it inline."""

    quote: str  # what goes between {{ }}
    label: str  # record.field, for messages
    quantity: Any
    field: str | None  # the field or cost of this record it is (None: another record's)
    competing: tuple[Any, ...] = ()
    own: bool = True  # this record's, where an exactly equal one-digit figure is taken as a quote of it
    computed: bool = False  # a cost: the only kind of value a bare ratio (3×) is compared with


def check_prose(computer, record: Record, fields: dict[str, Any], costs: dict[str, Any]) -> list[Diagnostic]:
    own = _own_values(computer, record, fields, costs)
    names = _field_names(computer, record, own)
    found: list[Diagnostic] = []
    for path, text in text_fields(record.data, _SKIP_KEYS):
        claimed = _claimed_field(path, own)
        for sentence, offset in _sentences(text):
            figures = list(_figures(sentence))
            about_another = _about_another(computer, record, _keys_linked(computer, sentence)) if figures else False
            for figure in figures:
                known = _contradicted(figure, figures, sentence, claimed, names, own, about_another)
                if known is not None:
                    line, col = _locate(computer, record, path, text, offset + figure.start)
                    found.append(_contradiction(record, line, col, dotted(path), figure, known))
    record_type = computer.types.get(record.type)
    asks_inline = record_type is not None and not record_type.quotes_documents
    values_of: dict[str, list[Known]] = {}
    for offset, text in prose_lines(record.body or ""):
        for sentence, start in _sentences(text, blanked=True):
            figures = list(_figures(sentence))
            if not figures:
                continue
            linked = list(dict.fromkeys(_keys_linked(computer, sentence)))
            about_another = _about_another(computer, record, linked)
            pool: list[Known] | None = None
            for figure in figures:
                line, col = record.body_line + offset, start + figure.start + 1
                known = _contradicted(figure, figures, sentence, None, names, own, about_another)
                if known is not None:
                    found.append(_contradiction(record, line, col, "body", figure, known))
                    continue
                if not asks_inline:
                    continue
                if pool is None:
                    # another record's values count where the sentence links it, and come first: "[[x]], 50 GB/s"
                    # is x's figure even when this record has a 50 GB/s of its own
                    pool = []
                    for key in linked:
                        if key not in values_of:
                            values_of[key] = _values_of(computer, key) if key != record.key else []
                        pool.extend(values_of[key])
                    pool.extend(own)
                match = _quoted(figure, pool)
                if match is not None:
                    found.append(
                        Diagnostic.make(
                            "KB611",
                            record.path,
                            line,
                            col,
                            f"body: {figure.text} is {match.label} ({format_quantity(match.quantity, None, 6)}) typed by hand; "
                            f"write {{{{ {match.quote}{_unit_suffix(figure, match)} }}}} so an edit to it cannot leave this stale",
                        )
                    )
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
                    tuple(a.quantity for a in value.alternatives if a.quantity is not None),
                )
            )
    for name, value in costs.items():
        if value.quantity is not None:
            out.append(Known(name, f"{record.key}.costs.{name}", value.quantity, name, computed=True))
    for name in record.mapping("inputs"):
        written = computer.written.get((record.key, ("inputs", name)))
        if written is not None:
            out.append(Known(name, f"{record.key}.inputs.{name}", written.quantity, name))
    return out


def _about_another(computer, record: Record, linked: list[str]) -> bool:
    """A sentence that links another record of this record's type is about that one, not this one."""
    records = computer.corpus.records
    return any(key != record.key and records[key].type == record.type for key in linked)


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
                        None,
                        tuple(a.quantity for a in value.alternatives if a.quantity is not None),
                        own=False,
                    )
                )
        cost_specs = computer.peek(target, "costs")
        for name in cost_specs if isinstance(cost_specs, dict) else ():
            value = computer.cost_or_none(target, name)
            if value is not None and value.quantity is not None:
                out.append(
                    Known(f"{key}.{name}", f"{key}.costs.{name}", value.quantity, None, own=False, computed=True)
                )
    return out


def _field_names(computer, record: Record, own: list[Known]) -> dict[str, re.Pattern]:
    """For each of the record's values, the words a sentence names it by."""
    record_type = computer.types.get(record.type)
    out = {}
    for known in own:
        name = known.field or ""  # a record's own value always has one
        plan = record_type.plan.properties.get(name) if record_type else None
        words = [name.replace("_", " "), name, *((plan.names or ()) if plan is not None else ())]
        out[name] = _words_pattern(tuple(words))
    return out


@lru_cache(maxsize=1024)
def _words_pattern(words: tuple[str, ...]) -> re.Pattern:
    return re.compile("|".join(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])" for w in words), re.IGNORECASE)


# ------------------------------------------------------------------ reading text
def _blank(text: str) -> str:
    """Inline values, quoted code, struck-through (old) figures, URLs and HTML blanked, columns kept
    (inline values by a linear scan: a line of unclosed {{ must not cost a search from each)."""
    return _NOT_PROSE.sub(lambda m: " " * len(m.group(0)), blank_inline_values(text))


def prose_lines(body: str) -> Iterator[tuple[int, str]]:
    """A body's prose, line by line (0-based offset, text): code blocks left out; inline values, quoted code,
    struck-through figures, quotations, URLs and HTML blanked, columns kept. What the figure checks read
    (this one and KB600's), so an old figure struck through is quiet for both. A body too large to check
    (KB114/KB115) gives nothing."""
    if too_large(body) is not None:
        return
    fenced = False
    for offset, text in enumerate(body.splitlines()):
        if text.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced and not text.startswith("    "):
            yield offset, _blank(text)


def _sentences(text: str, blanked: bool = False) -> Iterator[tuple[str, int]]:
    if not blanked:
        text = _blank(text)
    start = 0
    for boundary in _SENTENCE.finditer(text):
        yield text[start : boundary.start()], start
        start = boundary.end()
    yield text[start:], start


def _figures(sentence: str) -> Iterator[Figure]:
    for match in _FIGURE.finditer(sentence):
        if match.group(1) is not None:
            number = match.group(1) + (match.group(2) or "")
            if match.group(3):
                unit_text, unit = "×", unit_registry().dimensionless
            else:
                unit_text = match.group(5)
                unit = _unit(unit_text)
                if unit is None or unit.dimensionless:  # "16 lanes" is a count, not a quantity
                    continue
        else:
            number = match.group(6) + (match.group(7) or "")
            per = match.group(8) or match.group(9)
            unit_text = "USD" + (f"/{per}" if per else "")
            unit = _unit(unit_text)
            if unit is None:
                unit_text, unit = "USD", _unit("USD")
        magnitude = float(number.replace(",", ""))
        if not math.isfinite(magnitude):
            continue
        yield Figure(match.group(0), number, unit_text, magnitude * unit, match.start(), match.end())


@lru_cache(maxsize=512)
def _unit(text: str):
    try:
        return parse_unit(text)
    except QuantityError:
        return None


# ------------------------------------------------------------------ the two checks
def _claimed_field(path: FieldPath, own: list[Known]) -> str | None:
    """The field whose own text `path` is: its note or basis, a competing value's note, `<field>_note`."""
    fields = {k.field for k in own}
    head = path[0] if path else None
    if head == "costs" and len(path) > 1 and path[1] in fields:
        return str(path[1])
    if isinstance(head, str) and head in fields and len(path) > 1:
        return head
    if isinstance(head, str) and head.endswith("_note") and head.removesuffix("_note") in fields:
        return head.removesuffix("_note")
    return None


def _contradicted(
    figure: Figure,
    figures: list[Figure],
    sentence: str,
    claimed: str | None,
    names: dict[str, re.Pattern],
    own: list[Known],
    about_another: bool,
) -> Known | None:
    """The value of this record that `figure` claims and contradicts, or None. `figures` are all of its
    sentence's; `about_another` says the sentence links another record of this type."""
    if about_another or figure.unit == "×" or _PER_PART.match(sentence[figure.end :]) or _is_operand(figure, sentence):
        return None
    if sum(f.quantity.is_compatible_with(figure.quantity) for f in figures) > 1:
        return None  # a sentence giving two figures of one kind compares or derives them
    for known in own:
        if not figure.quantity.is_compatible_with(known.quantity):
            continue
        named = names[known.field or ""].search(sentence) or (claimed == known.field and _CLAIMS_THIS.search(sentence))
        if not named:
            continue
        if any(_agrees(figure, q) for q in (known.quantity, *known.competing)):
            return None
        return known
    return None


def _is_operand(figure: Figure, sentence: str) -> bool:
    """A figure next to an operator (6,144 bits × 6.25 Gb/s) is a step of a calculation."""
    before, after = sentence[max(0, figure.start - 3) : figure.start], sentence[figure.end : figure.end + 3]
    return bool(_OPERATOR.search(before) or _OPERATOR.search(after))


def _same_family(figure: Figure, quantity: Any) -> bool:
    """GB/s and TB/s are one way of writing a figure; Gb/s against GB/s (a 400 Gb/s NIC against a
    50 GB/s copy rate) or GiB against GB are different figures that happen to convert."""
    ratio = float((1 * figure.quantity.units).to(quantity.units).magnitude)
    thousands = math.log10(ratio) / 3 if ratio > 0 else 0.5
    return abs(thousands - round(thousands)) < 1e-9


def _quoted(figure: Figure, pool: list[Known]) -> Known | None:
    """The value a hand-typed figure quotes: equal at the precision written, with at least two significant
    digits unless it is exactly this record's own (a bare '2 TB/s' is too coarse to say which value, and
    '2 bytes' per weight is not another record's 2-byte KV element)."""
    for known in pool:
        if figure.unit == "×" and not known.computed:
            continue
        if not figure.quantity.is_compatible_with(known.quantity) or not _same_family(figure, known.quantity):
            continue
        if any(_agrees(figure, q, strict=True) for q in known.competing):
            return None  # a competing value, which no inline value can quote alone
        if _agrees(figure, known.quantity, strict=True, exact=known.own):
            return known
    return None


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
        f"{where}: the text says {figure.text} for {known.field}, but {known.label} is "
        f"{format_quantity(known.quantity, figure.unit if figure.unit != '×' else None, 6)}: correct the text or the field; "
        f"quote the field as {{{{ {known.quote} }}}} in the body, strike an old figure through (~~{figure.text}~~), "
        "or enter a competing figure among the field's values",
    )


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
