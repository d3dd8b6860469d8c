// The what-if calculator: evaluates the syntax trees kb exported (calculator.py) with
// dimension vectors, so units are checked here exactly as kb checks them.
"use strict";

(function () {
  // zipf_top(n, c, s) and zipf_lru(n, c, s): cache hit rates under a Zipf law, as kbtools/lang/caching.py
  // computes them (its docstring says how), step for step, so that both give the same figure to 1e-9
  const caching = (() => {
    const K = 10000, MAX_SKEW = 10, PANEL = 0.5, SATURATED = Math.log(40), LINEAR = -30, HUGE = 700;
    const TOLERANCE = 1e-12, MAX_STEPS = 200, RANGE_SKEWS = 8;
    const GAUSS = [[0.1834346424956498, 0.362683783378362], [0.525532409916329, 0.31370664587788727],
      [0.7966664774136267, 0.22238103445337448], [0.9602898564975363, 0.10122853629037626]];
    const LOGS = []; for (let i = 1; i <= K; i++) LOGS.push(Math.log(i));
    const problem = (role, low, high) => {
      if (!(Number.isFinite(low) && Number.isFinite(high))) return `a finite ${role}`;
      if (role === "n" && low < 1) return "n of at least 1";
      if (role === "s" && (low < 0 || high > MAX_SKEW)) return `s between 0 and ${MAX_SKEW}`;
      return null;
    };
    const checked = (n, c, s) => {
      [["n", n], ["c", c], ["s", s]].forEach(([role, v]) => { const p = problem(role, v, v); if (p) throw new Error(`needs ${p}`); });
      return Math.floor(n);
    };
    const expIntegral = (k, r, a, b) => { // the integral of e^(k + r u) over [a, b]
      const width = b - a;
      if (width <= 0) return 0;
      if (r === 0) return Math.exp(k) * width;
      const rate = Math.abs(r);
      return Math.exp(k + r * (r > 0 ? b : a)) * -Math.expm1(-rate * width) / rate;
    };
    const harmonic = (n, s) => {
      let total = 0;
      for (let i = 0; i < Math.min(n, K); i++) total += Math.exp(-s * LOGS[i]);
      if (n > K) {
        const a = LOGS[K - 1], b = Math.log(n), fK = Math.exp(-s * a), fN = Math.exp(-s * b);
        total += expIntegral(0, 1 - s, a, b) + (fN - fK) / 2 + (-s * fN / n + s * fK / K) / 12;
      }
      return total;
    };
    const zipfTop = (n, c, s) => {
      const whole = checked(n, c, s);
      if (c <= 0) return 0;
      if (c >= whole) return 1;
      if (s === 0) return c / whole;
      const held = Math.floor(c);
      const top = harmonic(held, s) + (c - held) * Math.exp(-s * Math.log(held + 1));
      return Math.min(1, top / harmonic(whole, s));
    };
    const cheSums = (x, s, logH, n, logP, p) => { // [count, slope, hit] at T = e^x
      let count = 0, slope = 0, hit = 0;
      for (let i = 0; i < logP.length; i++) {
        const lz = x + logP[i];
        if (lz > HUGE) { count += 1; hit += p[i]; continue; }
        const z = Math.exp(lz), em = Math.expm1(-z);
        count -= em; slope += z * (1 + em); hit -= p[i] * em;
      }
      if (n <= K) return [count, slope, hit];
      const beta = x - logH, a = Math.log(K), b = Math.log(n);
      const u1 = Math.min(Math.max((beta - SATURATED) / s, a), b), u2 = Math.min(Math.max((beta - LINEAR) / s, u1), b);
      count += expIntegral(0, 1, a, u1);
      hit += expIntegral(-logH, 1 - s, a, u1);
      const linear = expIntegral(beta, 1 - s, u2, b);
      count += linear; slope += linear;
      hit += expIntegral(beta - logH, 1 - 2 * s, u2, b);
      if (u2 > u1) {
        const panels = Math.ceil((u2 - u1) / (PANEL / Math.max(s, 1))), half = (u2 - u1) / panels / 2;
        for (let j = 0; j < panels; j++) {
          const middle = u1 + (2 * j + 1) * half;
          for (const [node, weight] of GAUSS) {
            for (const u of [middle - half * node, middle + half * node]) {
              const z = Math.exp(beta - s * u), em = Math.expm1(-z), size = weight * half * Math.exp(u);
              count -= size * em; slope += size * z * (1 + em);
              hit -= weight * half * Math.exp((1 - s) * u - logH) * em;
            }
          }
        }
      }
      const ends = [K, n].map((y) => {
        const ly = Math.log(y), lz = beta - s * ly, share = Math.exp(-s * ly - logH);
        if (lz > HUGE) return [1, 0, 0, share, -s / y * share];
        const z = Math.exp(lz), em = Math.expm1(-z), kept = z * (1 + em);
        return [-em, -s / y * kept, kept, -share * em, -s / y * share * (kept - em)];
      });
      const [[fK, dfK, gK, hK, dhK], [fN, dfN, gN, hN, dhN]] = ends;
      return [count + (fN - fK) / 2 + (dfN - dfK) / 12, slope + (gN - gK) / 2, hit + (hN - hK) / 2 + (dhN - dhK) / 12];
    };
    const zipfLru = (n, c, s) => {
      const whole = checked(n, c, s);
      if (c <= 0) return 0;
      if (c >= whole) return 1;
      if (s === 0) return c / whole;
      const logH = Math.log(harmonic(whole, s));
      const logP = LOGS.slice(0, Math.min(whole, K)).map((l) => -s * l - logH), p = logP.map(Math.exp);
      const sums = (x) => cheSums(x, s, logH, whole, logP, p);
      const share = c / whole;
      const logT = share < 0.5
        ? Math.log(c) - Math.log(whole) + (share > 0 ? Math.log(-Math.log1p(-share) / share) : 0)
        : Math.log(-Math.log((whole - c) / whole));
      let low = Math.log(c), high = logT + s * Math.log(whole) + logH;
      for (let i = 0; i < 64; i++) { if (sums(low)[0] <= c) break; low -= 1; }
      for (let i = 0; i < 64; i++) { const [count, slope] = sums(high); if (count >= c || slope === 0) break; high += 1; }
      const fuller = c > whole / 2;
      let x = fuller ? high : low;
      for (let i = 0; i < MAX_STEPS; i++) {
        const [count, slope] = sums(x);
        if (count === c) break;
        if (count < c) low = x; else high = x;
        let step = NaN;
        if (fuller && whole > count && slope > 0) step = (Math.log(whole - count) - Math.log(whole - c)) * (whole - count) / slope;
        else if (!fuller && count > 0 && slope > 0) step = (Math.log(c) - Math.log(count)) * count / slope;
        if (Math.abs(step) < TOLERANCE) { x += step; break; }
        x = low < x + step && x + step < high ? x + step : (low + high) / 2;
        if (high - low < TOLERANCE) break;
      }
      return Math.min(1, Math.max(0, sums(x)[2]));
    };
    const FUNCTIONS = { zipf_top: zipfTop, zipf_lru: zipfLru };
    return { FUNCTIONS, problem, zipfTop, zipfLru };
  })();
  window.kbCaching = caching; // for the tests, which hold these figures to kb's

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
      if (node.call in caching.FUNCTIONS) { // plain numbers, in the functions' domain, as kb checks them (KB503, KB507)
        const numbers = args.map((a, i) => {
          const role = ["n", "c", "s"][i];
          Object.keys(a.d).length === 0 || fail(`${node.call}() needs a plain number for ${role}`);
          const p = caching.problem(role, a.m, a.m);
          return p ? fail(`${node.call}() needs ${p}`) : a.m;
        });
        numbers.length === 3 || fail(`${node.call}() takes 3 arguments: ${node.call}(n, c, s)`);
        return { m: caching.FUNCTIONS[node.call](...numbers), d: {} };
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

  // a figure with its unit; a plain number (unit "1") is shown alone: "8", not "8 1"
  const withUnit = (text, unit) => (!unit || unit === "1" || unit === "dimensionless" ? text : `${text} ${unit}`);

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
            : span && span.low !== span.high ? withUnit(`${format(span.low / spec.factor)} to ${format(span.high / spec.factor)}`, spec.unit) : "";
          const cells = [spec.label || spec.name, key ? model.records[key].label : "", withUnit(format(v.m / spec.factor), spec.unit), shown];
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
      label.textContent = input.unit && input.unit !== "1" ? `${input.name} (${input.unit})` : input.name;
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
