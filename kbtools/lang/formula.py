"""The formula language: small, unit-aware arithmetic, parsed with `ast` and never `eval`'d.

Allowed: numbers; quantity literals in quotes ('1 token', '8 B'); names (fields,
inputs, costs, loop variables); one level of attribute (`model.kv_bytes_per_token`);
+ - * / and ** with a literal exponent of at most 64; the functions min, max,
ceil, floor, abs, sqrt, ln and exp (of a plain number: ln's above 0), zipf_top(n, c, s) and zipf_lru(n, c, s)
(cache hit rates under a Zipf law, kbtools.lang.caching), param(record, 'hardware-parameter-id') and
default(name, fallback) (the fallback when the name has no value); and a function its record's type declares in
its schema (`x-kb-functions`), called on the record: `model.kv_bytes(prefix_tokens)`. Everything else
(other calls, subscripts, comprehensions, lambdas, dunders, keywords, f-strings,
walrus...) is rejected before anything is evaluated (KB501); so is a call on anything but a record, a
quantity's own methods included (`n.to('s')`), before its arguments are read. The evaluator walks the
checked tree itself, so no Python code from a record ever runs.

Bounds (KB507): a number literal is at most 1e30, an exponent a literal in [-64, 64]; every value the
evaluator makes is finite, at most 1e300, in a unit whose powers stay within [-64, 64] (nested powers,
`((n ** 64) ** 64)`, stop there), and the result is within the same bound in base units too, so that no
later conversion (to the cost's unit, to a page's unit, to base units) turns it into an infinity.
"""

from __future__ import annotations

import ast
import math
import warnings
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pint

from kbtools.diagnostics import KbError
from kbtools.lang.arithmetic import ByUnits, combine, converted
from kbtools.lang.caching import ARGUMENTS as CACHE_ARGUMENTS
from kbtools.lang.caching import FUNCTIONS as CACHE_FUNCTIONS
from kbtools.lang.caching import domain_problem
from kbtools.lang.units import MAX_MAGNITUDE, QuantityError, format_quantity, parse_quantity_text, unit_registry

MAX_LENGTH = 2000
MAX_NODES = 400
MAX_DEPTH = 40  # evaluation and display recurse once per level: a deeper formula is refused, never a RecursionError
MAX_EXPONENT = 64
MAX_RESULT = 1e300  # the largest magnitude a computed value may have, in its own units and in base units
FUNCTIONS = {"min", "max", "ceil", "floor", "abs", "sqrt", "ln", "exp", "param", "default", *CACHE_FUNCTIONS}
# the arguments of a function that takes more than one (min and max take any number; default and param have
# their own forms, checked as the formula is read); every other function takes one
SIGNATURES = {name: CACHE_ARGUMENTS for name in CACHE_FUNCTIONS}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


class FormulaError(KbError):
    """A formula kb refuses or cannot evaluate; `code` says why (KB501-KB508)."""


class MissingName(FormulaError):
    """A name the formula uses has no value (an input that is not there)."""

    def __init__(self, name: str, message: str | None = None):
        super().__init__("KB502", message or f"'{name}' has no value")
        self.name = name


class AbsentValue(MissingName):
    """A record the formula reads has no value for the field named: what a for_each with skip_missing
    leaves out as a row, where any other missing name is still an error."""

    def __init__(self, name: str, record: str, message: str):
        super().__init__(name, message)
        self.record = record


@dataclass(frozen=True)
class Formula:
    text: str
    tree: ast.expr
    names: tuple[tuple[str, ...], ...]  # every name or name.attr it reads, in order


@lru_cache(maxsize=4096)
def parse_formula(text: str) -> Formula:
    if not isinstance(text, str) or not text.strip():
        raise FormulaError("KB501", "empty formula")
    if len(text) > MAX_LENGTH:
        raise FormulaError("KB501", f"formula longer than {MAX_LENGTH} characters")
    try:
        with warnings.catch_warnings():  # Python's own SyntaxWarnings ("invalid decimal literal") are not for our users
            warnings.simplefilter("ignore")
            tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise FormulaError("KB501", f"formula syntax error at column {exc.offset or 1}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError):
        raise FormulaError("KB501", "formula cannot be parsed") from None
    names: list[tuple[str, ...]] = []
    count = 0
    for node in ast.walk(tree):
        count += 1
        if count > MAX_NODES:
            raise FormulaError("KB501", f"formula has more than {MAX_NODES} parts")
        _check_node(node, names)
    depth, stack = 0, [(tree.body, 1)]
    while stack:  # iteratively: the check itself must not recurse
        node, level = stack.pop()
        depth = max(depth, level)
        if depth > MAX_DEPTH:
            raise FormulaError("KB501", f"formula nests more than {MAX_DEPTH} levels deep; split it into named costs")
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr))
    return Formula(text, tree.body, tuple(dict.fromkeys(names)))


def _check_node(node: ast.AST, names: list[tuple[str, ...]]) -> None:
    if isinstance(node, (ast.Expression, ast.Load, ast.operator, ast.unaryop)):
        if isinstance(node, ast.operator) and type(node) not in _BINOPS:
            raise FormulaError("KB501", f"operator {type(node).__name__} is not allowed (only + - * / **)")
        if isinstance(node, ast.unaryop) and not isinstance(node, (ast.USub, ast.UAdd)):
            raise FormulaError("KB501", f"operator {type(node).__name__} is not allowed")
        return
    if isinstance(node, (ast.BinOp, ast.UnaryOp)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            exponent = _literal_number(node.right)
            if exponent is None or abs(exponent) > MAX_EXPONENT:
                raise FormulaError(
                    "KB507", f"an exponent must be a number literal between -{MAX_EXPONENT} and {MAX_EXPONENT}"
                )
        return
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float, str)):
            raise FormulaError("KB501", f"constant {node.value!r} is not allowed")
        if isinstance(node.value, (int, float)) and (not math.isfinite(node.value) or abs(node.value) > MAX_MAGNITUDE):
            raise FormulaError("KB507", f"number {node.value!r} is out of range")
        return
    if isinstance(node, ast.Name):
        _check_identifier(node.id)
        names.append((node.id,))
        return
    if isinstance(node, ast.Attribute):
        if not isinstance(node.value, ast.Name):
            raise FormulaError("KB501", "only one level of attribute is allowed (record.field)")
        _check_identifier(node.attr)
        names.append((ident(node.value), node.attr))
        return
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        # record.function(args): a function the record's type declares (x-kb-functions), checked when evaluated
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise FormulaError(
                "KB501",
                f"{ast.unparse(node.func)}() takes plain positional arguments, like model.kv_bytes(prefix_tokens)",
            )
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or ident(node.func) not in FUNCTIONS:
            shown = ident(node.func) if isinstance(node.func, ast.Name) else ast.unparse(node.func)[:40]
            raise FormulaError(
                "KB501",
                f"function '{shown}' is not allowed (allowed: {', '.join(sorted(FUNCTIONS))}, "
                "or a function a record's type declares, called as record.name(...))",
            )
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args) or not node.args:
            raise FormulaError("KB501", f"{ident(node.func)}() takes plain positional arguments")
        if ident(node.func) == "default" and (
            len(node.args) != 2 or not isinstance(node.args[0], (ast.Name, ast.Attribute))
        ):
            raise FormulaError(
                "KB501", "default() is written default(name, fallback): the fallback when the name has no value"
            )
        if ident(node.func) == "param":
            if (
                len(node.args) != 2
                or not isinstance(node.args[0], ast.Name)
                or not (isinstance(node.args[1], ast.Constant) and isinstance(constant(node.args[1]), str))
            ):
                raise FormulaError("KB501", "param() is written param(record, 'hardware-parameter-id')")
        return
    raise FormulaError("KB501", f"{_describe(node)} is not allowed in a formula")


def _check_identifier(name: str) -> None:
    if name.startswith("_"):
        raise FormulaError("KB501", f"name '{name}' is not allowed (names may not start with '_')")


def ident(node: ast.expr) -> str:
    """The name a checked formula has at this node: _check_node lets only a name stand here."""
    if not isinstance(node, ast.Name):
        raise FormulaError("KB501", f"expected a name, not {ast.unparse(node)}")
    return node.id


def constant(node: ast.expr) -> Any:
    """The literal a checked formula has at this node (param()'s field name, say)."""
    if not isinstance(node, ast.Constant):
        raise FormulaError("KB501", f"expected a literal, not {ast.unparse(node)}")
    return node.value


def _literal_number(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _literal_number(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    return None


def _describe(node: ast.AST) -> str:
    return {
        "Lambda": "a lambda",
        "ListComp": "a comprehension",
        "GeneratorExp": "a generator",
        "SetComp": "a comprehension",
        "DictComp": "a comprehension",
        "Subscript": "indexing",
        "JoinedStr": "an f-string",
        "NamedExpr": "an assignment (:=)",
        "Compare": "a comparison",
        "BoolOp": "and/or",
        "IfExp": "if/else",
        "Starred": "unpacking",
        "List": "a list",
        "Tuple": "a tuple",
        "Dict": "a mapping",
        "Set": "a set",
        "Await": "await",
        "Yield": "yield",
        "Slice": "a slice",
        "FormattedValue": "an f-string",
    }.get(type(node).__name__, type(node).__name__)


# ---------------------------------------------------------------- evaluation

Lookup = Callable[[tuple[str, ...]], Any]  # returns a pint.Quantity, or a Table
ParamLookup = Callable[[str, str], pint.Quantity]
# record.function(args): (record name, function name, the arguments, the call as written) -> Quantity. The
# arguments come as a function that evaluates them, called once the callee is known to be a record's function.
CallLookup = Callable[[str, str, Callable[[], list], str], pint.Quantity]


class Table(dict):
    """Rows of a for_each cost: row key -> Quantity. min() and max() reduce it."""


# The fallback of the default(name, fallback) whose name is being looked up, as a thunk, while that look-up
# runs: a name read through a choice among records (engine: choose [vllm, lmcache]) is absent on some choices
# only, and each of those takes the fallback, where the others keep their own figure. Set only around a
# default() whose first argument is a bare name; every evaluate() starts without one, so a formula evaluated
# on the way (another record's cost) never sees an outer formula's fallback.
ABSENT_FALLBACK: ContextVar[Callable[[], Any] | None] = ContextVar("absent_fallback", default=None)


def evaluate(
    formula: Formula, lookup: Lookup, param: ParamLookup | None = None, call: CallLookup | None = None
) -> pint.Quantity:
    """The formula's value: always one quantity (a whole table is an error, KB508), finite and bounded in
    its own units and in base units (KB507)."""
    token = ABSENT_FALLBACK.set(None)
    try:
        value = FIGURES.scalar(walk(formula.tree, FIGURES, lookup, param, call), formula.tree)
    finally:
        ABSENT_FALLBACK.reset(token)
    _bounded_in_base(value)
    return value


def _bounded_in_base(value: pint.Quantity) -> None:
    """KB507 unless the value is within MAX_RESULT, in base-unit powers within MAX_EXPONENT, once in base
    units. Checked from each unit's cached factor and the unit's dimensions, not by converting: every
    evaluation passes here, and pint's conversion costs ten times as much."""
    if _log10_in_base(value) > math.log10(MAX_RESULT):
        raise FormulaError("KB507", f"result is too large in base units (at most {MAX_RESULT:g})")
    for dimension, power in value.dimensionality.items():
        if abs(power) > MAX_EXPONENT:
            raise FormulaError(
                "KB507", f"result is {dimension}^{power:g} in base units; a power of a unit is at most {MAX_EXPONENT}"
            )


def in_unit(value: pint.Quantity, unit: pint.Unit) -> pint.Quantity:
    """A computed value converted to `unit`, still bounded (KB507): a value within bounds can overflow when
    converted to a unit much smaller than its own. Every figure computed passes here, so the unit is
    written out for a message only when there is one to give."""
    try:
        return _bounded(converted(value, unit), lambda: f"in {unit:~P}")
    except OverflowError:  # pint's conversion factor is past a float: GB⁶⁴/s⁶⁴ in base units needs 1e9 ** 64
        where = f"in {unit:~P}"
        target = _log10_in_base(value) - _log10_in_base(1 * unit)
        if target > math.log10(MAX_RESULT):
            raise FormulaError("KB507", f"result is too large {where} (at most {MAX_RESULT:g})") from None
        raise FormulaError(  # GB⁶⁴/TB⁶⁴: a modest figure, but no conversion of it can be computed
            "KB507",
            f"result in {value.units:~P} cannot be converted {where}: its conversion factor is past any number; "
            "divide by a quantity in the same unit (x / '1 GB', not x / '1 TB') before raising to a power",
        ) from None


def _log10_in_base(value: pint.Quantity) -> float:
    """log10 of |value| in base units, from each unit's own factor: defined where pint's factor overflows."""
    magnitude = abs(value.magnitude)
    total: float = math.log10(magnitude) if magnitude else 0.0
    for unit, power in value.unit_items():
        exponent: Any = power  # pint types it as any number; a formula's unit powers are real
        total += exponent * _log10_factor(unit)
    return total


@lru_cache(maxsize=512)
def _log10_factor(unit: str) -> float:
    return math.log10(abs(unit_registry().Quantity(1, unit).to_root_units().magnitude))


class Algebra:
    """What the formula walker (walk) does with the figures it meets: one quantity each here (the point
    figures `evaluate` gives); kbtools.lang.interval's Intervals, a range each, in its subclass. The walker
    owns the language (names, attributes, calls of a record's functions, default(), param(), min() and max()
    over tables, the argument rules); an algebra owns only what an operator makes of its operands."""

    def literal(self, quantity: pint.Quantity) -> Any:
        return quantity

    def scalar(self, value: Any, node: ast.AST) -> Any:
        """The value, unless it is a whole table (KB508): a table only feeds min() and max()."""
        if isinstance(value, Table):
            raise FormulaError(
                "KB508",
                f"'{ast.unparse(node)}' is a table (one row per for_each item); "
                "use min() or max() over it, or the same for_each",
            )
        return value

    def negate(self, value: Any) -> Any:
        return -value

    def binary(self, op: str, left: Any, right: Any, node: ast.BinOp) -> Any:
        if op == "/" and right.magnitude == 0:
            raise FormulaError("KB505", f"division by zero: {ast.unparse(node.right)} is 0")
        return _bounded(_apply(lambda: combine(op, left, right), left, right, op))

    def power(self, base: Any, exponent: float) -> Any:
        return _bounded(_apply(lambda: base**exponent, base, None, "**"))

    def extreme(self, name: str, values: list[Any]) -> Any:
        """min() or max() of several values (a table's rows among them)."""
        try:
            return (min if name == "min" else max)(values)
        except pint.DimensionalityError as exc:
            raise FormulaError("KB503", f"{name}() of values in different units: {exc}") from None

    def function(self, name: str, values: list[Any], arguments: list[ast.expr]) -> Any:
        """abs, sqrt, ceil, floor, ln or exp of one value, zipf_top or zipf_lru of three; `arguments` are the
        formula's text of them."""
        ureg = unit_registry()
        if name in CACHE_FUNCTIONS:
            n, c, s = (low for low, _ in cache_arguments(name, [(v, v) for v in values], arguments))
            return ureg.Quantity(CACHE_FUNCTIONS[name](n, c, s), ureg.dimensionless)
        value, argument = values[0], arguments[0]
        if name == "abs":
            return abs(value)
        if name == "sqrt":
            return self.power(value, 0.5)
        number = plain_number(name, value)
        if name in ("ln", "exp"):
            return ln_or_exp(name, number, argument_text(argument), lambda: format_quantity(value))
        return ureg.Quantity(math.ceil(number) if name == "ceil" else math.floor(number), ureg.dimensionless)


def plain_number(name: str, value: pint.Quantity, role: str | None = None) -> float:
    """The value as a plain number (50 percent is 0.5, GB/MB a thousand), for a function that takes only
    plain numbers (ceil, floor, ln, exp, zipf_top's and zipf_lru's `role`); a quantity with a dimension is KB503."""
    if not value.dimensionless:
        raise FormulaError(
            "KB503", f"{name}() needs a plain number{f' for {role}' if role else ''}, got {value.units:~P}"
        )
    return float(value.to(unit_registry().dimensionless).magnitude)


def cache_arguments(
    name: str,
    ends: list[tuple[pint.Quantity, pint.Quantity]],
    arguments: list[ast.expr],
    shown: list[Callable[[], str]] | None = None,
) -> list[tuple[float, float]]:
    """zipf_top's or zipf_lru's arguments (n, c, s) as plain numbers, each as its range's two ends (a figure's
    twice): one with a dimension is KB503, one outside the functions' domain (n below 1, s outside 0 to 10,
    an infinity) KB507, as ln of 0 is. A message names the argument as written (its value for a literal), and
    `shown`, the range it has when it is one."""
    numbers = []
    for i, (role, (low, high), argument) in enumerate(zip(CACHE_ARGUMENTS, ends, arguments, strict=True)):
        low_number, high_number = plain_number(name, low, role), plain_number(name, high, role)
        problem = domain_problem(role, low_number, high_number)
        if problem:
            what, value = argument_text(argument), shown[i]() if shown else format_quantity(low)
            raise FormulaError(
                "KB507", f"{name}() needs {problem}" + (f": {what} is {value}" if what else f", not {value}")
            )
        numbers.append((low_number, high_number))
    return numbers


def ln_or_exp(name: str, number: float, argument: str | None, shown: Callable[[], str]) -> pint.Quantity:
    """ln or exp of a plain number, a plain number. ln of 0 or less has no (real, finite) value and exp past
    about 690 is beyond MAX_RESULT: both KB507, as any other value that is infinite, not a number or too large
    is. A message names the argument as written (None for a literal) and `shown()`, the value it has."""
    ureg = unit_registry()
    if name == "ln":
        if not number > 0:
            raise FormulaError(
                "KB507",
                "ln() needs a number above 0" + (f": {argument} is {shown()}" if argument else f", not {shown()}"),
            )
        return ureg.Quantity(math.log(number), ureg.dimensionless)
    try:
        result = math.exp(number)
    except OverflowError:
        result = math.inf
    if result > MAX_RESULT:
        raise FormulaError(
            "KB507",
            f"exp() of {argument or shown()} is too large (at most {MAX_RESULT:g})"
            + (f": {argument} is {shown()}" if argument else ""),
        )
    return ureg.Quantity(result, ureg.dimensionless)


def argument_text(argument: ast.expr | None) -> str | None:
    """A function's argument as written, for a message; None for a number literal, which its value says."""
    if argument is None or _literal_number(argument) is not None:
        return None
    return node_text(argument)


FIGURES = Algebra()


def walk(
    node: ast.AST,
    algebra: Algebra,
    lookup: Lookup,
    param: Callable[[str, str], Any] | None,
    call: Callable[[str, str, Callable[[], list], str], Any] | None,
) -> Any:
    """The value of a checked formula's tree under `algebra`; `lookup`, `param` and `call` answer in its
    terms (a quantity, an Interval, or a Table of them). The kinds of node most formulas are made of are
    tested first: every evaluation walks every node."""
    if isinstance(node, ast.Name):
        return lookup((node.id,))
    if isinstance(node, ast.BinOp):
        left = algebra.scalar(walk(node.left, algebra, lookup, param, call), node.left)
        if isinstance(node.op, ast.Pow):
            exponent = _literal_number(node.right)  # the parser admits only a literal number here
            return algebra.power(left, exponent if exponent is not None else 1.0)
        right = algebra.scalar(walk(node.right, algebra, lookup, param, call), node.right)
        return algebra.binary(_BINOPS[type(node.op)], left, right, node)
    if isinstance(node, ast.Attribute):
        return lookup((ident(node.value), node.attr))
    if isinstance(node, ast.Constant):
        return algebra.literal(_literal(node.value))
    if isinstance(node, ast.UnaryOp):
        value = algebra.scalar(walk(node.operand, algebra, lookup, param, call), node.operand)
        return algebra.negate(value) if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if call is None:
            raise FormulaError("KB501", f"{ast.unparse(node.func)}() is not available here")

        def arguments() -> list:
            return [algebra.scalar(walk(a, algebra, lookup, param, call), a) for a in node.args]

        return call(ident(node.func.value), node.func.attr, arguments, node_text(node))
    if isinstance(node, ast.Call):
        name = ident(node.func)
        if name == "default":
            bare = isinstance(node.args[0], (ast.Name, ast.Attribute))
            token = ABSENT_FALLBACK.set(lambda: walk(node.args[1], algebra, lookup, param, call)) if bare else None
            try:
                return walk(node.args[0], algebra, lookup, param, call)
            except MissingName:
                pass
            finally:
                if token is not None:
                    ABSENT_FALLBACK.reset(token)
            return walk(node.args[1], algebra, lookup, param, call)
        if name == "param":
            if param is None:
                raise FormulaError("KB501", "param() is not available here")
            return param(ident(node.args[0]), constant(node.args[1]))
        args = [walk(a, algebra, lookup, param, call) for a in node.args]
        if name in ("min", "max"):
            values = [v for a in args for v in (a.values() if isinstance(a, Table) else [a])]
            if not values:
                raise FormulaError("KB502", f"{name}() over an empty table")
            return algebra.extreme(name, values)
        wanted = SIGNATURES.get(name, ("x",))
        if len(args) != len(wanted):
            raise FormulaError(
                "KB501",
                f"{name}() takes one argument"
                if len(wanted) == 1
                else f"{name}() takes {len(wanted)} arguments: {name}({', '.join(wanted)})",
            )
        return algebra.function(name, [algebra.scalar(v, a) for v, a in zip(args, node.args, strict=True)], node.args)
    raise FormulaError("KB501", f"{_describe(node)} is not allowed in a formula")


@lru_cache(maxsize=65536)
def node_text(node: ast.AST) -> str:
    """A node of a parsed formula as text (a call or a name, which values and their inputs are keyed by):
    parsed formulas are kept (parse_formula) and shared by every value computed with them, so each of their
    nodes is written out once, however often a site writes a formula out with its figures."""
    return ast.unparse(node)


@lru_cache(maxsize=4096, typed=True)  # typed: the literal 1 stays an int, apart from 1.0
def _literal(value: str | int | float) -> pint.Quantity:
    """A formula's literal as a quantity ('8 B', or a plain number), read once however often it is evaluated.
    Shared between evaluations: nothing changes a quantity in place."""
    if isinstance(value, str):
        try:
            return parse_quantity_text(value, None)
        except QuantityError as exc:
            raise FormulaError(exc.code, f"in quantity literal: {exc.message}") from None
    ureg = unit_registry()
    return ureg.Quantity(value, ureg.dimensionless)


def _apply(operation: Callable[[], Any], left: Any, right: Any, op: str) -> pint.Quantity:
    try:
        return operation()
    except pint.DimensionalityError:
        verb = {"+": "add", "-": "subtract"}.get(op, "combine")
        raise FormulaError(
            "KB503",
            f"cannot {verb} {_unit_phrase(left)} and {_unit_phrase(right)}"
            if right is not None
            else f"cannot raise {left.units:~P} to that power",
        ) from None
    except ZeroDivisionError:
        raise FormulaError("KB505", "division by zero") from None
    except OverflowError:
        raise FormulaError("KB507", "number too large") from None


def _unit_phrase(value: pint.Quantity) -> str:
    """'GB (information)', or 'a plain number' for a dimensionless value."""
    from kbtools.lang.units import describe_dimension

    if value.dimensionless and not f"{value.units:~P}":
        return "a plain number"
    return f"{value.units:~P} ({describe_dimension(value.dimensionality)})"


def _bounded(value: pint.Quantity, where: Callable[[], str] | None = None) -> pint.Quantity:
    """The value, when it is a finite real number within MAX_RESULT in a unit of bounded powers; else KB507,
    saying `where()` when given. Compared without converting: float() of a huge exact int raises OverflowError."""
    magnitude = value.magnitude
    if (
        isinstance(magnitude, complex)
        or (isinstance(magnitude, float) and not math.isfinite(magnitude))
        or abs(magnitude) > MAX_RESULT
    ):
        shown = "not a number" if isinstance(magnitude, complex) or magnitude != magnitude else "too large"
        raise FormulaError(
            "KB507", f"result is {shown}" + (f" {where()}" if where else "") + f" (at most {MAX_RESULT:g})"
        )
    if not _powers_bounded(value._units):
        for unit, power in value.unit_items():
            if abs(power) > MAX_EXPONENT:
                raise FormulaError(
                    "KB507", f"result's unit has {unit}^{power:g}; a power of a unit is at most {MAX_EXPONENT}"
                )
    return value


# whether each power of a unit is within MAX_EXPONENT, asked once per units: every value computed is checked
_powers_bounded = ByUnits(lambda units: all(abs(power) <= MAX_EXPONENT for power in units.values()))


# ---------------------------------------------------------------- display

_PRECEDENCE = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.Div: 2, ast.Pow: 4}
_SYMBOL = {ast.Add: "+", ast.Sub: "−", ast.Mult: "×", ast.Div: "÷", ast.Pow: "^"}


def written_out(node: ast.AST, name_text: Callable[[ast.AST], str | None], parent: int = 0, right: bool = False) -> str:
    """The formula in reader's notation, each name replaced by name_text(node) when it gives one."""
    if isinstance(node, (ast.Name, ast.Attribute)):
        text = name_text(node)
        return text if text is not None else ast.unparse(node)
    if isinstance(node, ast.Constant):
        return str(node.value) if not isinstance(node.value, str) else node.value
    if isinstance(node, ast.UnaryOp):
        return ("−" if isinstance(node.op, ast.USub) else "+") + written_out(node.operand, name_text, 3)
    if isinstance(node, ast.BinOp):
        mine = _PRECEDENCE[type(node.op)]
        text = (
            f"{written_out(node.left, name_text, mine)} {_SYMBOL[type(node.op)]} "
            f"{written_out(node.right, name_text, mine, right=True)}"
        )
        return f"({text})" if mine < parent or (right and mine == parent) else text
    if isinstance(node, ast.Call):
        if (
            isinstance(node.func, ast.Name) and ident(node.func) == "default"
        ):  # the value it took: the name's, or the fallback
            text = name_text(node.args[0])
            return text if text is not None else written_out(node.args[1], name_text, parent, right)
        if (
            isinstance(node.func, ast.Attribute) or ident(node.func) == "param"
        ):  # the value it read, when known, stands for the call
            text = name_text(node)
            return text if text is not None else ast.unparse(node)
        return f"{ident(node.func)}(" + ", ".join(written_out(a, name_text) for a in node.args) + ")"
    return ast.unparse(node)
