"""Stage: a record kept as history names its replacement in `superseded_by` (check/freshness.py); when the
replacement is itself superseded, the chain should point at the record that replaces it now (KB311).

Written against the Stage seam alone: it resolves the name and reads the record it names through its
Context, and the driver keeps the judgement while that name resolves the same and that record's bytes are
the same. Nothing here knows about the store or a scoped run.
"""

from __future__ import annotations

from kbtools.check.freshness import SUPERSEDED_BY
from kbtools.check.stage import Context, Judgement, Stage
from kbtools.corpus import Record
from kbtools.diagnostics import Diagnostic


class SupersededStage(Stage):
    name = "superseded"

    def judge(self, record: Record, ctx: Context) -> Judgement:
        named = record.data.get(SUPERSEDED_BY)
        if not isinstance(named, str):
            return Judgement()
        replacement, _ = ctx.resolve(named)
        if replacement is None:
            return Judgement()  # a dangling name is the links stage's finding
        newer = ctx.read(replacement).data.get(SUPERSEDED_BY)
        if not isinstance(newer, str) or replacement.key == record.key:
            return Judgement()
        line, col = record.value_position((SUPERSEDED_BY,))
        message = (
            f"{SUPERSEDED_BY}: {replacement.key} is itself superseded by '{newer}'; "
            "name the record that replaces this one now"
        )
        return Judgement((Diagnostic.make("KB311", record.path, line, col, message),))
