// The what-if calculator: evaluates the syntax trees kb exported (calculator.py) with
// dimension vectors, so units are checked here exactly as kb checks them.
"use strict";

(function () {
  const form = document.querySelector("form.calc-inputs");
  if (!form) return;
  const model = JSON.parse(document.getElementById(form.dataset.calculator).textContent);
  const output = document.querySelector(".calc-output");

  const dims = (a, b, sign) => {
    const out = Object.assign({}, a);
    for (const [k, v] of Object.entries(b)) { out[k] = (out[k] || 0) + sign * v; if (out[k] === 0) delete out[k]; }
    return out;
  };
  const same = (a, b) => { const k = new Set([...Object.keys(a), ...Object.keys(b)]); for (const x of k) if ((a[x] || 0) !== (b[x] || 0)) return false; return true; };
  const fail = (message) => { throw new Error(message); };
  // a name with no value: default(name, fallback) takes the fallback, anything else reports it
  const missing = (message, record) => { const e = new Error(message); e.missing = true; e.record = record; throw e; };

  function evaluate(node, scope) {
    if (node.q) return node.q;
    if (node.name !== undefined) return scope.name(node.name);
    if (node.attr) return scope.attr(node.attr[0], node.attr[1]);
    if (node.neg) { const v = evaluate(node.neg, scope); return { m: -v.m, d: v.d }; }
    if (node.pow) { const v = evaluate(node.pow[0], scope); const e = node.pow[1]; const d = {}; for (const [k, x] of Object.entries(v.d)) d[k] = x * e; return { m: Math.pow(v.m, e), d }; }
    if (node.param) return scope.param(node.param[0], node.param[1]);
    if (node.default) {
      try { return evaluate(node.default[0], scope); } catch (e) { if (!e.missing) throw e; return evaluate(node.default[1], scope); }
    }
    if (node.fn) return scope.fn(node.fn[0], node.fn[1], node.args.map((a) => evaluate(a, scope)));
    if (node.call) {
      const args = node.call === "min" || node.call === "max"
        ? node.args.flatMap((a) => { const v = evaluate(a, scope); return v.rows ? Object.values(v.rows) : [v]; })
        : node.args.map((a) => evaluate(a, scope));
      if (node.call === "min" || node.call === "max") {
        args.forEach((a) => same(a.d, args[0].d) || fail(`${node.call}() of unlike units`));
        return args.reduce((best, v) => ((node.call === "min" ? v.m < best.m : v.m > best.m) ? v : best));
      }
      const v = args[0];
      if (node.call === "abs") return { m: Math.abs(v.m), d: v.d };
      if (node.call === "sqrt") { const d = {}; for (const [k, x] of Object.entries(v.d)) d[k] = x / 2; return { m: Math.sqrt(v.m), d }; }
      Object.keys(v.d).length === 0 || fail(`${node.call}() needs a plain number`);
      // ln and exp as kb bounds them: ln of 0 or less, and exp past 1e300, have no figure (KB507)
      if (node.call === "ln") { v.m > 0 || fail("ln() needs a number above 0"); return { m: Math.log(v.m), d: {} }; }
      if (node.call === "exp") { const m = Math.exp(v.m); m <= 1e300 || fail("exp() is too large (at most 1e+300)"); return { m, d: {} }; }
      return { m: node.call === "ceil" ? Math.ceil(v.m) : Math.floor(v.m), d: {} };
    }
    const l = evaluate(node.l, scope), r = evaluate(node.r, scope);
    if (l.rows || r.rows) fail("a table needs min() or max(), or the same for_each");
    switch (node.op) {
      case "+": case "-": same(l.d, r.d) || fail("cannot add unlike units"); return { m: node.op === "+" ? l.m + r.m : l.m - r.m, d: l.d };
      case "*": return { m: l.m * r.m, d: dims(l.d, r.d, 1) };
      case "/": r.m !== 0 || fail("division by zero"); return { m: l.m / r.m, d: dims(l.d, r.d, -1) };
    }
    return fail("unknown node");
  }

  const INPUT = "calculator input "; // the conditions the calculator's own inputs make: a band, a choice of records

  function state() {
    const values = {};
    for (const input of model.inputs) {
      if (input.kind === "quantity") {
        const field = form.elements[`in-${input.name}`];
        values[input.name] = { value: { m: parseFloat(field.value) * input.factor, d: input.d } };
        if (input.choices) { // competing values: the box is the preferred one, the others stay as the record has them
          values[input.name].alts = input.choices.map((c, i) => ({ text: c.text, v: i === 0 ? values[input.name].value : { m: c.m, d: input.d } }));
        }
        const low = form.elements[`in-${input.name}-low`], high = form.elements[`in-${input.name}-high`];
        if (low && high && low.value !== "" && high.value !== "") {
          values[input.name].band = {
            low: { m: parseFloat(low.value) * input.factor, d: input.d },
            value: values[input.name].value,
            high: { m: parseFloat(high.value) * input.factor, d: input.d },
          };
        }
      } else if (input.kind === "choose") {
        values[input.name] = { choose: Array.from(form.querySelectorAll(`input[name="in-${input.name}"]:checked`)).map((c) => c.value) };
        if (values[input.name].choose.length === 0) fail(`${input.name}: choose at least one`);
      } else if (input.kind === "ref") {
        values[input.name] = { ref: form.elements[`in-${input.name}`].value };
      } else {
        values[input.name] = { list: Array.from(form.querySelectorAll(`input[name="in-${input.name}"]:checked`)).map((c) => c.value) };
      }
    }
    return values;
  }

  // A figure under a combination of choices (`joint`, condition -> choice): the leaf's own figure for the
  // conditions it rests on, as kb computed it; every condition met is noted in `found` with its choices.
  const under = (v, joint, found) => {
    if (!v.v) return v;
    const own = new Set();
    for (const entry of v.v) for (const [c, t] of entry.s) { own.add(c); (found[c] = found[c] || new Set()).add(t); }
    const conds = [...own].sort();
    if (!conds.every((c) => c in joint)) return v;
    const key = JSON.stringify(conds.map((c) => [c, joint[c]]));
    const hit = v.v.find((entry) => JSON.stringify(entry.s) === key);
    return hit ? { m: hit.m, d: v.d } : v;
  };

  function run(values, joint = {}, found = {}) {
    const record = model.records[model.record];
    const memo = {};
    const recordOf = (name, bindings) => {
      if (name in bindings) return bindings[name];
      if (values[name] && values[name].choose) {
        const cond = INPUT + name, keys = values[name].choose;
        (found[cond] = found[cond] || new Set()); keys.forEach((k) => found[cond].add(k));
        return cond in joint ? joint[cond] : keys[0];
      }
      if (values[name] && values[name].ref) return values[name].ref;
      if (name in record.refs && typeof record.refs[name] === "string") return record.refs[name];
      // a reference the record leaves out (a workload naming no system): missing, so default() falls back as kb's does
      return missing(`'${name}' names no record here`);
    };
    const valueOf = (key, field) => {
      const target = model.records[key] || fail(`no data for ${key}`);
      if (key === model.record && model.costs.some((c) => c.name === field)) return cost(field, {}, null);
      return under(target.values[field] || missing(`${target.label} has no ${field}`, key), joint, found);
    };
    // record.function(args): the type's function as exported for that record, over its own fields
    const callOn = (key, name, args) => {
      const target = model.records[key] || fail(`no data for ${key}`);
      const spec = (target.functions || {})[name] || fail(`${target.label} has no function ${name}`);
      spec.params.length === args.length || fail(`${name}() takes ${spec.params.length} argument(s)`);
      const bound = Object.fromEntries(spec.params.map((p, i) => [p, args[i]]));
      return evaluate(spec.tree, {
        name: (n) => (n in bound ? bound[n] : valueOf(key, n)),
        attr: () => fail(`${name}() reads only its record's fields`),
        param: () => fail(`${name}() reads only its record's fields`),
        fn: (n, f, a) => callOn(key, f, a),
      });
    };
    const scopeFor = (bindings, row, list) => ({
      name: (n) => {
        if (values[n] && values[n].band) {
          const cond = INPUT + n;
          found[cond] = new Set(["low", "value", "high"]);
          return values[n].band[cond in joint ? joint[cond] : "value"];
        }
        if (values[n] && values[n].alts) {
          const cond = INPUT + n;
          found[cond] = new Set(values[n].alts.map((a) => a.text));
          return cond in joint ? values[n].alts.find((a) => a.text === joint[cond]).v : values[n].value;
        }
        if (values[n] && values[n].value) return values[n].value;
        const read = model.costs.find((c) => c.name === n);
        if (read) {
          const v = cost(n, bindings, row);
          if (v.rows && row) {
            if (row in v.rows) return v.rows[row];
            // a row the table left out (skip_missing) is left out of a table over the same rows reading it, as kb does
            if (read.for_each && read.for_each[1] === list) missing(`${n} has no row for ${row}`, row);
          }
          return v;
        }
        return under(record.values[n] || missing(`'${n}' has no value`), joint, found);
      },
      attr: (n, f) => valueOf(recordOf(n, bindings), f),
      fn: (n, f, args) => callOn(recordOf(n, bindings), f, args),
      param: (n, id) => {
        const key = recordOf(n, bindings);
        const field = (model.parameters[id] || {})[model.records[key].type] || fail(`${id} is not carried by ${model.records[key].type}`);
        return valueOf(key, field);
      },
    });
    function cost(name, bindings, row) {
      const spec = model.costs.find((c) => c.name === name);
      if (spec.for_each) {
        if (memo[name]) return memo[name];
        const [variable, list] = spec.for_each;
        const keys = values[list] ? values[list].list : record.refs[list] || [];
        const rows = {};
        for (const key of keys) {
          try {
            rows[key] = evaluate(spec.tree, scopeFor({ ...bindings, [variable]: key }, key, list));
          } catch (e) {
            // skip_missing: a row whose record has no value for a field is left out, as kb leaves it out
            if (!(spec.skip_missing && e.missing && e.record === key)) throw e;
          }
        }
        return (memo[name] = { rows });
      }
      if (!memo[name]) memo[name] = evaluate(spec.tree, scopeFor(bindings, row));
      return memo[name];
    }
    const results = {};
    for (const spec of model.costs) results[spec.name] = cost(spec.name, {}, null);
    return results;
  }

  const MAX_SCENARIOS = 64; // as kb: past this many combinations no range is taken here

  // Every figure's low and high end over every combination of the conditions met (a condition read in two
  // places takes one choice in both, as kb takes it); conditions met only under some choice are found on the
  // way, so the combinations are taken again until no new condition turns up.
  function ranges(values, found) {
    let conds = [];
    let ends = null;
    for (let round = 0; round < 4; round++) {
      const names = Object.keys(found).sort();
      if (names.length === conds.length) break;
      conds = names;
      const options = conds.map((c) => [...found[c]]);
      const count = options.reduce((n, o) => n * o.length, 1);
      if (count > MAX_SCENARIOS) return null;
      ends = {};
      const take = (key, v) => {
        const e = ends[key] || (ends[key] = { low: v.m, high: v.m });
        e.low = Math.min(e.low, v.m); e.high = Math.max(e.high, v.m);
      };
      for (let i = 0; i < count; i++) {
        const joint = {};
        let rest = i;
        conds.forEach((c, j) => { joint[c] = options[j][rest % options[j].length]; rest = Math.floor(rest / options[j].length); });
        let results;
        try { results = run(values, joint, found); } catch (e) { continue; } // a combination that cannot be computed
        for (const [name, result] of Object.entries(results)) {
          if (result.rows) for (const [row, v] of Object.entries(result.rows)) take(`${name} ${row}`, v);
          else take(name, result);
        }
      }
    }
    return ends;
  }

  // the same rules as kbtools.units.format_number, so both show the same digits
  const format = (v) => {
    if (v === 0) return "0";
    if (!isFinite(v)) return String(v);
    if (Number.isInteger(v) && Math.abs(v) < 1e12) return v.toLocaleString("en-US");
    if (Math.abs(v) >= 1e-3 && Math.abs(v) < 1e12) {
      const digits = Math.max(0, 3 - Math.floor(Math.log10(Math.abs(v))));
      return v.toLocaleString("en-US", { minimumFractionDigits: 0, maximumFractionDigits: digits });
    }
    return v.toPrecision(4).replace(/e\+?/, "e+").replace("e+-", "e-");
  };

  function render() {
    const table = document.createElement("table");
    table.className = "rows";
    table.innerHTML = "<thead><tr><th scope='col'>cost</th><th scope='col'>row</th><th scope='col'>value</th><th scope='col'>range</th></tr></thead>";
    const body = document.createElement("tbody");
    try {
      const values = state();
      const found = {};
      const results = run(values, {}, found);
      const spans = Object.keys(found).length ? ranges(values, found) : {};
      for (const spec of model.costs) {
        const result = results[spec.name];
        const entries = result.rows ? Object.entries(result.rows) : [[null, result]];
        for (const [key, v] of entries) {
          const tr = document.createElement("tr");
          tr.dataset.cost = spec.name;
          if (key) tr.dataset.row = key;
          const span = spans === null ? null : spans[key ? `${spec.name} ${key}` : spec.name];
          const shown = span === null ? "too many combinations to take here"
            : span && span.low !== span.high ? `${format(span.low / spec.factor)} to ${format(span.high / spec.factor)} ${spec.unit}` : "";
          const cells = [spec.label || spec.name, key ? model.records[key].label : "", `${format(v.m / spec.factor)} ${spec.unit}`, shown];
          cells.forEach((text, i) => {
            const td = document.createElement("td"); td.textContent = text;
            if (i === 2) td.className = "calc-value";
            if (i === 3) td.className = "calc-range";
            tr.appendChild(td);
          });
          body.appendChild(tr);
        }
      }
      table.appendChild(body);
      output.replaceChildren(table);
    } catch (error) {
      const p = document.createElement("p");
      p.className = "calc-error";
      p.textContent = error.message;
      output.replaceChildren(p);
    }
  }

  for (const input of model.inputs) {
    if (input.kind === "quantity") {
      const label = document.createElement("label");
      label.textContent = input.unit ? `${input.name} (${input.unit})` : input.name;
      const field = document.createElement("input");
      field.type = "number"; field.name = `in-${input.name}`; field.value = input.value; field.step = "any"; field.min = "0";
      label.appendChild(field);
      form.appendChild(label);
      if (input.low !== undefined && input.high !== undefined) {
        for (const end of ["low", "high"]) { // a band: its ends are inputs too
          const at = document.createElement("label");
          at.textContent = `${input.name}, ${end} end`;
          const box = document.createElement("input");
          box.type = "number"; box.name = `in-${input.name}-${end}`; box.value = input[end]; box.step = "any"; box.min = "0";
          at.appendChild(box);
          form.appendChild(at);
        }
      }
    } else if (input.kind === "ref") {
      const label = document.createElement("label");
      label.textContent = input.name;
      const select = document.createElement("select");
      select.name = `in-${input.name}`;
      for (const key of input.choices) {
        const option = document.createElement("option");
        option.value = key; option.textContent = model.records[key].label; option.selected = key === input.value;
        select.appendChild(option);
      }
      label.appendChild(select);
      form.appendChild(label);
    } else { // a list, or a choice among records (every figure is computed for each one ticked)
      const set = document.createElement("fieldset");
      const legend = document.createElement("legend");
      legend.textContent = input.name;
      set.appendChild(legend);
      for (const key of input.choices) {
        const label = document.createElement("label");
        const box = document.createElement("input");
        box.type = "checkbox"; box.name = `in-${input.name}`; box.value = key; box.checked = input.value.includes(key);
        label.append(box, model.records[key].label);
        set.appendChild(label);
      }
      form.appendChild(set);
    }
  }
  form.addEventListener("input", render);
  form.addEventListener("submit", (event) => event.preventDefault());
  render();
})();
