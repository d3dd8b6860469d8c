"""Stage: a figure stored in a decimal unit whose own source states it in the binary one (KB407).

Vendors state some capacities in GiB (Google's TPU tables, AWS Neuron's pages) and others in GB. The two
look alike as labels and differ by 7.4 % as bytes (GiB = 2^30 B, GB = 10^9 B), and formulas divide bytes.
A record that writes `96 GB` where its source says `96 GiB` stores 6.9 % fewer bytes than the vendor
promised. This reads the notes of the source records the record cites, where the project quotes what it
opened (a value's own note may hold a driver's byte count in GiB, as the schema asks), and flags the same
number with the binary unit beside it, unless a cited source's notes also give the same number in the
decimal unit (a vendor that states both: the choice is sourced).
"""

from __future__ import annotations

import re
from typing import Any

from kbtools.check.stage import Context, Judgement, Stage
from kbtools.corpus import FieldPath, Record, dotted
from kbtools.diagnostics import Diagnostic
from kbtools.fieldwalk import walk_plan

BINARY_OF = {"kB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB", "PB": "PiB"}
SHORTFALL = {unit: 1 - 1000**power / 1024**power for power, unit in enumerate(BINARY_OF, 1)}


class BinaryUnitStage(Stage):
    name = "binary_units"

    def judge(self, record: Record, ctx: Context) -> Judgement:
        record_type = ctx.registry.types.get(record.type) if record.type else None
        if record_type is None:
            return Judgement()
        findings = []
        for path, value, plan in walk_plan(record_type.plan, dict(record.data)):
            if plan.quantity is None:
                continue
            entries = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
            for index, entry in entries:
                where = path if index is None else path + (index,)
                finding = self._binary_source(record, ctx, where, entry)
                if finding is not None:
                    findings.append(finding)
        return Judgement(tuple(findings))

    def _binary_source(self, record: Record, ctx: Context, path: FieldPath, entry: Any) -> Diagnostic | None:
        from kbtools.lang.units import NUMBER  # pint, only when a record is judged: a warm run reuses judgements

        text = entry.get("value") if isinstance(entry, dict) else entry
        match = NUMBER.match(text) if isinstance(text, str) else None
        if match is None or match.group(2) not in BINARY_OF:
            return None
        number, unit = match.groups()
        binary = BINARY_OF[unit]
        binary_said = re.compile(rf"(?<![\d.,]){re.escape(number)}\s?{binary}\b")
        decimal_said = re.compile(rf"(?<![\d.,]){re.escape(number)}\s?{unit}\b")
        cited = entry.get("source") if isinstance(entry, dict) else None
        listed = [name for name in record.data.get("sources") or () if isinstance(name, str)]
        places: list[tuple[str, str]] = []
        for name in dict.fromkeys([cited, *listed] if isinstance(cited, str) else listed):
            source, _ = ctx.resolve(name)
            if source is not None:
                places.append((f"source {name}", _current(ctx.read(source).data.get("notes"))))
        if any(decimal_said.search(words) for _, words in places):
            return None  # a source the project read states the decimal figure too: the record's choice is sourced
        for place, words in places:
            if binary_said.search(words):
                line, col = record.value_position(path + ("value",) if isinstance(entry, dict) else path)
                message = (
                    f"{dotted(path)}: {place} says {number} {binary}, and the record stores {number} {unit}, "
                    f"{SHORTFALL[unit]:.1%} fewer bytes; store the quantity as the vendor states it "
                    f"('{number} {binary}'), or quote the decimal figure the vendor gives"
                )
                return Diagnostic.make("KB407", record.path, line, col, message)
        return None


def _current(words: Any) -> str:
    """A note's text without what it strikes through (~~96 GiB~~ is what the record used to say)."""
    return re.sub(r"~~.*?~~", "", words, flags=re.S) if isinstance(words, str) else ""
