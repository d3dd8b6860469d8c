"""The what-if calculator's model: a cost record's formulas exported for the browser.

The browser does not get re-typed formulas: it gets the very syntax trees `kb`
evaluates (parsed by formula.py), with every quantity already reduced to base
units and a dimension vector, so site/static/calc.js is a generic tree walker that
adds exponents on * and refuses to add unlike dimensions, exactly as pint does here.
"""

from __future__ import annotations

import ast
from typing import Any

from kbtools.check.compute import matching
from kbtools.check.links import Index
from kbtools.corpus import Corpus
from kbtools.lang.formula import FormulaError, _literal_number, constant, ident, parse_formula
from kbtools.lang.units import QuantityError, parse_quantity_text, parse_unit

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


_BASE: dict[Any, tuple[float, dict[str, Any]]] = {}  # a unit -> its factor to base units, and its dimensions


def base(quantity: Any) -> dict[str, Any]:
    """A quantity as {m: magnitude in base units, d: {dimension: exponent}}. pint converts by a factor per
    unit (for units without an offset), so the factor and dimensions are found once per distinct unit: a
    site exports thousands of values in a few dozen units."""
    if not quantity._is_multiplicative:
        reduced = quantity.to_base_units()
        return {"m": float(reduced.magnitude), "d": _dims(reduced)}
    known = _BASE.get(quantity._units)
    if known is None:
        one = quantity.__class__(1.0, quantity._units).to_base_units()
        known = _BASE[quantity._units] = (float(one.magnitude), _dims(one))
    factor, dims = known
    return {"m": float(quantity.magnitude) * factor, "d": dict(dims)}


def _dims(reduced: Any) -> dict[str, Any]:
    return {name.strip("[]"): power for name, power in reduced.dimensionality.items() if power}


def tree(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return {"q": base(parse_quantity_text(node.value, None))}
        return {"q": {"m": float(node.value) if isinstance(node.value, (int, float)) else 0.0, "d": {}}}
    if isinstance(node, ast.Name):
        return {"name": node.id}
    if isinstance(node, ast.Attribute):
        return {"attr": [ident(node.value), node.attr]}
    if isinstance(node, ast.UnaryOp):
        inner = tree(node.operand)
        return {"neg": inner} if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Pow):
            return {"pow": [tree(node.left), _literal_number(node.right)]}
        return {"op": _OPS[type(node.op)], "l": tree(node.left), "r": tree(node.right)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):  # record.function(args)
        return {"fn": [ident(node.func.value), node.func.attr], "args": [tree(a) for a in node.args]}
    if isinstance(node, ast.Call):
        if ident(node.func) == "param":
            return {"param": [ident(node.args[0]), constant(node.args[1])]}
        if ident(node.func) == "default":
            return {"default": [tree(node.args[0]), tree(node.args[1])]}
        return {"call": ident(node.func), "args": [tree(a) for a in node.args]}
    raise FormulaError("KB501", f"cannot export {type(node).__name__}")


MAX_CHOICES = 40  # alternatives offered per reference input: enough to explore, pages stay small


class CalculatorExporter:
    """Builds calculator models for a whole site, sharing what every page needs: the site's index,
    each record's exported values, records by type, the hardware parameters."""

    def __init__(self, corpus: Corpus, index: Index):
        self.corpus = corpus
        self.index = index
        self.exports: dict[str, Any] = {}
        self.models: dict[str, dict[str, Any] | None] = {}
        self.by_type: dict[str, list[str]] = {}
        for key, record in sorted(corpus.records.items(), key=lambda kv: str(kv[1].data.get("name", kv[0]))):
            self.by_type.setdefault(record.type or "", []).append(key)
        self.parameters = {
            r.id: r.data.get("carried_by")
            for r in corpus.records.values()
            if corpus.registry.has_role(r.type, "parameter") and isinstance(r.data.get("carried_by"), dict)
        }

    def model(self, key: str) -> dict[str, Any] | None:
        """A record's calculator model, made once a build: its page shows it and its fingerprint lists the
        records it exports (reuse.PageReuse)."""
        if key not in self.models:
            self.models[key] = calculator_model(self.corpus, key, self)
        return self.models[key]


def calculator_model(corpus: Corpus, key: str, shared: CalculatorExporter) -> dict[str, Any] | None:
    record = corpus.records[key]
    costs = record.data.get("costs")
    computed = corpus.values(key).costs
    if not isinstance(costs, dict) or not computed or len(computed) != len(costs):
        return None  # only records whose every cost computed get a calculator
    index, exports = shared.index, shared.exports
    records: dict[str, dict[str, Any]] = {}

    def export_record(target_key: str) -> None:
        if target_key in records:
            return
        if target_key in exports:
            records[target_key] = exports[target_key]
            return
        target = corpus.records[target_key]
        entry = corpus.values(target_key)
        values = {name: base(v.quantity) for name, v in entry.fields.items() if v.quantity is not None}
        values.update({name: base(v.quantity) for name, v in entry.costs.items() if v.quantity is not None})
        refs: dict[str, str | list[str]] = {}
        record_type = corpus.registry.types.get(target.type or "")
        for name, plan in record_type.plan.properties.items() if record_type else []:
            raw = target.data.get(name)
            if plan.ref_types and isinstance(raw, str):
                resolved, _ = index.resolve(raw)
                if resolved:
                    refs[name] = resolved.key
            elif plan.items is not None and plan.items.ref_types and isinstance(raw, list):
                found = [index.resolve(x)[0] for x in raw if isinstance(x, str)]
                refs[name] = [r.key for r in found if r is not None]
        functions = {}  # the type's functions, each resolved to the variant this record's fields select
        for function, specs in record_type.functions.items() if record_type else []:
            spec = matching(target, specs)
            try:
                if spec is not None:
                    functions[function] = {
                        "params": list(spec.get("parameters", {})),
                        "tree": tree(parse_formula(spec["formula"]).tree),
                    }
            except (FormulaError, QuantityError, KeyError, TypeError):
                continue
        records[target_key] = exports[target_key] = {
            "label": str(target.data.get("name", target_key)),
            "type": target.type,
            "values": values,
            "refs": refs,
            "functions": functions,
        }

    export_record(key)
    inputs = []
    for name, raw in (record.data.get("inputs") or {}).items():
        items = raw if isinstance(raw, list) else [raw]
        resolved = [index.resolve(x)[0] for x in items if isinstance(x, str) and "/" in x]
        targets = [t for t in resolved if t is not None]
        if targets and len(targets) == len(resolved):
            types = {t.type or "" for t in targets}
            keys = [t.key for t in targets]
            others = [k for t in sorted(types) for k in shared.by_type.get(t, [])[:MAX_CHOICES] if k not in keys]
            choices = sorted(
                keys + others[: max(0, MAX_CHOICES - len(keys))],
                key=lambda k: str(corpus.records[k].data.get("name", k)),
            )
            for choice in choices:
                export_record(choice)
            inputs.append(
                {
                    "name": name,
                    "kind": "list" if isinstance(raw, list) else "ref",
                    "value": keys if isinstance(raw, list) else keys[0],
                    "choices": choices,
                }
            )
        else:
            try:
                quantity = parse_quantity_text(
                    raw["value"] if isinstance(raw, dict) else raw, "" if isinstance(raw, (int, float)) else None
                )
            except (QuantityError, KeyError, TypeError):
                return None
            unit = f"{quantity.units:~P}"
            inputs.append(
                {
                    "name": name,
                    "kind": "quantity",
                    "value": float(quantity.magnitude),
                    "unit": unit,
                    "factor": base(quantity.units * 1)["m"],
                    "d": base(quantity)["d"],
                }
            )
    # rows of for_each over the record's own reference lists, and their referenced records
    for refs in list(records[key]["refs"].values()):
        for target_key in refs if isinstance(refs, list) else [refs]:
            export_record(target_key)
    for target_key in list(records):
        for refs in list(records[target_key]["refs"].values()):
            for nested in refs if isinstance(refs, list) else [refs]:
                if nested in corpus.records and not corpus.registry.has_role(corpus.records[nested].type, "source"):
                    export_record(nested)
    parameters = shared.parameters
    exported_costs = []
    for name, spec in costs.items():
        try:
            formula = parse_formula(spec["formula"])
            cost_unit = parse_unit(spec["unit"])
            exported = {
                "name": name,
                "label": spec.get("label", ""),
                "tree": tree(formula.tree),
                "formula": formula.text,
                "unit": spec["unit"],
                "factor": base(1 * cost_unit)["m"],
            }
        except (FormulaError, QuantityError, KeyError):
            return None
        if isinstance(spec.get("for_each"), dict) and spec["for_each"]:
            exported["for_each"] = list(next(iter(spec["for_each"].items())))
            exported["skip_missing"] = spec.get("skip_missing") is True
        exported_costs.append(exported)
    return {
        "record": key,
        "inputs": inputs,
        "costs": exported_costs,
        "records": records,
        "parameters": parameters,
    }
