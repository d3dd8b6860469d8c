"""How evaluation signals what is not a value: a failure already reported (ValueFailed, and the FAILED
mark the memo keeps), a cycle, and a value deferred to the explicit stack when nesting runs deep."""

from __future__ import annotations

from kbtools.corpus import Record


class ValueFailed(Exception):
    """An input already reported its own error; the dependent stays silent."""


class Cycle(Exception):
    def __init__(self, chain: list[str]):
        shown = chain if len(chain) <= 12 else chain[:6] + [f"… {len(chain) - 11} more …"] + chain[-5:]
        super().__init__(" → ".join(shown))
        self.chain = chain


class Deferred(BaseException):
    """Raised when a value is needed DEFER_DEPTH values deep: the stack unwinds, the driver computes that
    value first at the top, then retries. So a chain of any length is evaluated on an explicit stack
    (Computer.drive) with bounded Python recursion, and a cycle of any length is found. A BaseException,
    so that no `except Exception` between here and the driver can swallow it."""

    def __init__(self, record: Record, name: str, compute, path: list[tuple[str, str]]):
        super().__init__(f"{record.key}.{name}")
        self.record, self.name, self.compute = record, name, compute
        self.path = path  # the values being computed, outermost first, when this one was needed


DEFER_DEPTH = 8  # values computed inside one another before the driver takes over (each costs ~15 frames)


FAILED = object()

# What a value read, as the cache keeps it, besides (record key, value name): a reference resolved is
# (QUERY, the reference as written); another record's field read as written is (its key, RAW + field).
QUERY = "?"
RAW = "@"
