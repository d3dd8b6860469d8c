"""Stage: a figure past its type's shelf life (KB620), judged one record at a time.

What it judges is the record alone (its date, its type's shelf life and whether it names a replacement), so
the driver keeps the judgement while the file's bytes are the same. The finding carries its due date and is
made whatever the day: the filter a run ends with (kbtools.check.freshness.reported) decides whether it is due.
"""

from __future__ import annotations

from kbtools.check.freshness import past_shelf_life
from kbtools.check.stage import Context, Judgement, Stage
from kbtools.corpus import Record
from kbtools.diagnostics import internal_error


class ShelfLifeStage(Stage):
    name = "check_freshness"  # the store's key for its judgements, as it was when this stage was a function

    def judge(self, record: Record, ctx: Context) -> Judgement:
        record_type = ctx.corpus.registry.types.get(record.type) if record.type else None
        if record_type is None or not record_type.shelf_life:
            return Judgement()
        try:
            finding = past_shelf_life(record, record_type)
        except Exception as exc:  # a bug of kb's own: one diagnostic for this file, the others are still judged
            finding = internal_error(record.path, exc)
        return Judgement((finding,) if finding is not None else ())
