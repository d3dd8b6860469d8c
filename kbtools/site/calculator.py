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
from kbtools.corpus import Corpus, Record
from kbtools.index import CorpusIndex
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


def leaf(value: Any) -> dict[str, Any]:
    """A value as the calculator reads it: its figure in base units and, when conditions vary it, its figure
    under each combination of them (`v`: the scenario as [condition, choice] pairs, sorted as kb sorts them),
    so the browser takes a range over the same combinations kb does."""
    out = base(value.quantity)
    if value.variants:
        out["v"] = [{"s": [list(choice) for choice in scenario], "m": base(q)["m"]} for scenario, q in value.variants]
    return out


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


def _default_unit(record_type: Any, name: str, raw: Any) -> str | None:
    """The unit a bare number is in: a field's canonical unit, a plain number for a cost's input."""
    number = raw.get("value") if isinstance(raw, dict) else raw
    if not isinstance(number, (int, float)) or isinstance(number, bool):
        return None
    return (record_type.canonical_unit(name) if record_type else None) or ""


MAX_CHOICES = 40  # alternatives offered per reference input: enough to explore, pages stay small


class CalculatorExporter:
    """Builds calculator models for a whole site, sharing what every page needs: the site's index,
    each record's exported values, records by type, the hardware parameters."""

    def __init__(self, corpus: Corpus, index: CorpusIndex[Record]):
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
    written = record.costs
    computed = corpus.values(key).costs
    record_type = corpus.registry.types.get(record.type or "")
    supplied = record_type.costs if record_type else {}
    if not written or not computed:
        return None
    # the costs kb computed; a cost the record's type supplies may not apply to it (a field it leaves out)
    costs = {name: spec for name, spec in written.items() if name in computed}
    if len(costs) != len(written) and any(name not in supplied for name in written if name not in computed):
        return None  # a cost of the record's own that did not compute: only records whose costs all did get one
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
        values = {name: leaf(v) for name, v in entry.fields.items() if v.quantity is not None}
        values.update({name: leaf(v) for name, v in entry.costs.items() if v.quantity is not None})
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
    asked = dict(record.data.get("inputs") or {})
    if supplied:  # a record whose costs its type supplies (a workload): its own fields are what one varies
        for name, plan in record_type.plan.properties.items():
            if (
                name in record.data
                and name not in asked
                and name not in record_type.envelope
                and (plan.quantity is not None or plan.ref_types or (plan.items is not None and plan.items.ref_types))
            ):
                asked[name] = record.data[name]
    for name, raw in asked.items():
        if isinstance(raw, dict) and isinstance(raw.get("choose"), list):
            found = [index.resolve(x)[0] for x in raw["choose"] if isinstance(x, str)]
            keys = [t.key for t in found if t is not None]
            types = {t.type or "" for t in found if t is not None}
            others = [k for t in sorted(types) for k in shared.by_type.get(t, [])[:MAX_CHOICES] if k not in keys]
            choices = keys + others[: max(0, MAX_CHOICES - len(keys))]
            for choice in choices:
                export_record(choice)
            inputs.append({"name": name, "kind": "choose", "value": keys, "choices": choices})
            continue
        items = raw if isinstance(raw, list) else [raw]
        inputs_written = record.data.get("inputs") or {}
        plan = record_type.plan.properties.get(name) if record_type and name not in inputs_written else None
        by_id = plan is not None and bool(plan.ref_types or (plan.items is not None and plan.items.ref_types))
        resolved = [index.resolve(x)[0] for x in items if isinstance(x, str) and ("/" in x or by_id)]
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
            competing = isinstance(raw, list) and raw and all(isinstance(x, dict) and "value" in x for x in raw)
            ranked: list[dict[str, Any]] = []
            if competing:  # competing values: the preferred one is the box, every one not deprecated a choice
                kept = [x for x in raw if isinstance(x, dict) and x.get("rank") != "deprecated"]
                ranked = sorted(kept, key=lambda x: x.get("rank") != "preferred")
                raw = ranked[0]
            try:
                quantity = parse_quantity_text(
                    raw["value"] if isinstance(raw, dict) else raw, _default_unit(record_type, name, raw)
                )
            except (QuantityError, KeyError, TypeError):
                return None
            unit = f"{quantity.units:~P}"
            entry = {
                "name": name,
                "kind": "quantity",
                "value": float(quantity.magnitude),
                "unit": unit,
                "factor": base(quantity.units * 1)["m"],
                "d": base(quantity)["d"],
            }
            if len(ranked) > 1:
                try:
                    entry["choices"] = [
                        {
                            "text": str(x.get("condition") or x["value"]),
                            "m": base(parse_quantity_text(x["value"], _default_unit(record_type, name, x)))["m"],
                        }
                        for x in ranked
                    ]
                except (QuantityError, TypeError, ValueError):
                    return None
            if isinstance(raw, dict) and raw.get("low") is not None and raw.get("high") is not None:
                try:  # a band: its ends are inputs too, and the calculator takes the range over them
                    entry["low"], entry["high"] = (
                        float(
                            parse_quantity_text(raw[end], _default_unit(record_type, name, raw[end]))
                            .to(quantity.units)
                            .magnitude
                        )
                        for end in ("low", "high")
                    )
                except (QuantityError, TypeError, ValueError):
                    pass
            inputs.append(entry)
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
