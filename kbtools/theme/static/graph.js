// Whole-corpus link graph on a canvas: records clustered by type (sunflower spirals, the
// most linked in the middle, the clusters in rows), edges faint, pan/zoom/find; stays responsive at 10k records.
"use strict";

(async function () {
  const canvas = document.querySelector("canvas.corpus-graph");
  if (!canvas) return;
  const root = document.body.dataset.root || "";
  // the page carries its data (a page opened from file:// may not fetch a file beside it)
  const data = JSON.parse(document.getElementById(canvas.dataset.src).textContent);
  const css = getComputedStyle(document.documentElement);
  // a colour per type, as many as the theme defines (--s0, --s1, …)
  const palette = Array.from({ length: 13 }, (_, i) => css.getPropertyValue(`--s${i}`).trim()).filter(Boolean);
  const line = css.getPropertyValue("--line").trim(), fg = css.getPropertyValue("--fg").trim();
  const n = data.nodes.length;
  const degree = new Float64Array(n);
  for (const [a, b] of data.edges) { degree[a]++; degree[b]++; }
  const byType = new Map();
  data.nodes.forEach((node, i) => { const t = node[2]; if (!byType.has(t)) byType.set(t, []); byType.get(t).push(i); });
  const x = new Float64Array(n), y = new Float64Array(n);
  const groups = Array.from(byType.keys()).sort((a, b) => a - b);
  groups.forEach((t) => byType.get(t).sort((a, b) => degree[b] - degree[a]));
  const name = (t) => data.types[t] || "unknown";
  const legend = document.querySelector(".graph-legend");
  groups.forEach((t) => {
    const span = document.createElement("span");
    span.textContent = `● ${name(t)} (${byType.get(t).length})`;
    span.style.color = palette[t % palette.length];
    legend.appendChild(span);
  });
  if (!groups.length) { canvas.dataset.ready = "0"; return; }
  const ctx = canvas.getContext("2d");
  const ratio = () => window.devicePixelRatio || 1;
  const dot = (s) => Math.max(1.5, Math.min(7, 6 * s)); // a node's radius on the canvas, at scale s
  const labelFont = () => `600 ${12 * ratio()}px system-ui, sans-serif`;
  const LABEL = 18, GAP = 10; // a cluster's label above it, and the space left between clusters (CSS px)

  // Each type is a cluster: a sunflower spiral, the most linked record in the middle, its radius set by its
  // size. The clusters sit in rows, largest first, as text does: each in its own box, which holds the
  // cluster and its label above it at the scale the canvas shows them, so no two clusters overlap and no
  // label sits inside another cluster.
  const radius = (t) => 14 * Math.sqrt(byType.get(t).length + 0.5);
  const centers = new Map();
  let scale = 1, ox = 0, oy = 0, hover = -1, found = -1;
  const box = (t, s) => { // [left, top, right, bottom] in layout units at scale s, label included
    const [cx, cy] = centers.get(t), r = radius(t) + dot(s) / s, pad = (GAP * ratio()) / s / 2;
    const half = Math.max(r, ctx.measureText(name(t)).width / 2 / s) + pad;
    return [cx - half, cy - r - (LABEL * ratio()) / s - pad, cx + half, cy + r + pad];
  };
  const extent = (s) => {
    const e = [Infinity, Infinity, -Infinity, -Infinity];
    for (const t of groups) { const b = box(t, s); e[0] = Math.min(e[0], b[0]); e[1] = Math.min(e[1], b[1]); e[2] = Math.max(e[2], b[2]); e[3] = Math.max(e[3], b[3]); }
    return e;
  };
  const scaleFor = () => { // the scale at which the clusters, labels included, fill the canvas (a fixed point)
    let s = 1;
    for (let i = 0; i < 6; i++) { const e = extent(s); s = Math.min(canvas.width / (e[2] - e[0]), canvas.height / (e[3] - e[1])); }
    return s;
  };
  const order = [...groups].sort((a, b) => radius(b) - radius(a) || a - b);
  const place = (s) => { // the clusters in rows as wide as the canvas at scale s
    const limit = canvas.width / s;
    let top = 0, left = 0, row = [];
    const close = () => { // centre the row across, and its clusters within its height
      const tallest = Math.max(...row.map(([, h]) => h));
      for (const [t, h] of row) { const [cx, cy] = centers.get(t); centers.set(t, [cx + (limit - left) / 2, cy + (tallest - h) / 2]); }
      top += tallest; left = 0; row = [];
    };
    for (const t of order) {
      centers.set(t, [0, 0]);
      const [l, up, r, down] = box(t, s);
      if (row.length && left + r - l > limit) close();
      centers.set(t, [left - l, top - up]);
      left += r - l; row.push([t, down - up]);
    }
    close();
  };
  const layout = () => {
    ctx.font = labelFont();
    for (const t of groups) centers.set(t, [0, 0]);
    // placed for a scale a little below the one they then fill the canvas at: shown larger, the boxes only shrink
    let s = scaleFor();
    for (let i = 0; i < 40; i++) { const at = 0.97 * s; place(at); s = scaleFor(); if (s >= at) break; }
    for (const t of groups) {
      const [cx, cy] = centers.get(t);
      byType.get(t).forEach((i, j) => {
        const r = 14 * Math.sqrt(j + 0.5), a = j * 2.399963229728653;
        x[i] = cx + r * Math.cos(a); y[i] = cy + r * Math.sin(a);
      });
    }
  };
  const fit = () => {
    canvas.width = canvas.clientWidth * ratio(); canvas.height = canvas.clientHeight * ratio();
    layout();
    scale = scaleFor();
    const e = extent(scale);
    ox = canvas.width / 2 - scale * (e[0] + e[2]) / 2; oy = canvas.height / 2 - scale * (e[1] + e[3]) / 2;
  };
  const draw = () => {
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.globalAlpha = n > 2000 ? 0.15 : 0.45;
    ctx.strokeStyle = line; ctx.lineWidth = 1;
    ctx.beginPath();
    for (const [a, b] of data.edges) { ctx.moveTo(ox + scale * x[a], oy + scale * y[a]); ctx.lineTo(ox + scale * x[b], oy + scale * y[b]); }
    ctx.stroke();
    ctx.globalAlpha = 1;
    const size = dot(scale);
    for (let i = 0; i < n; i++) {
      ctx.fillStyle = palette[data.nodes[i][2] % palette.length] || fg;
      ctx.beginPath(); ctx.arc(ox + scale * x[i], oy + scale * y[i], size, 0, 2 * Math.PI); ctx.fill();
    }
    ctx.fillStyle = fg; ctx.textAlign = "center"; ctx.font = labelFont();
    for (const [t, [cx, cy]] of centers) ctx.fillText(name(t), ox + scale * cx, oy + scale * (cy - radius(t)) - size - 6 * ratio());
    ctx.textAlign = "start";
    for (const i of [hover, found]) {
      if (i < 0) continue;
      ctx.fillStyle = fg; ctx.font = `${13 * (window.devicePixelRatio || 1)}px system-ui, sans-serif`;
      ctx.beginPath(); ctx.arc(ox + scale * x[i], oy + scale * y[i], size + 3, 0, 2 * Math.PI); ctx.stroke();
      ctx.fillText(data.nodes[i][1], ox + scale * x[i] + 8, oy + scale * y[i] - 8);
    }
  };
  const nearest = (px, py) => {
    let best = -1, bestD = 144 * (window.devicePixelRatio || 1);
    for (let i = 0; i < n; i++) {
      const dx = ox + scale * x[i] - px, dy = oy + scale * y[i] - py, d = dx * dx + dy * dy;
      if (d < bestD) { bestD = d; best = i; }
    }
    return best;
  };
  const point = (event) => { const r = canvas.getBoundingClientRect(), k = canvas.width / r.width; return [(event.clientX - r.left) * k, (event.clientY - r.top) * k]; };
  let drag = null;
  canvas.addEventListener("mousedown", (event) => { drag = { p: point(event), ox, oy, moved: false }; });
  window.addEventListener("mouseup", (event) => {
    if (drag && !drag.moved) { const i = nearest(...point(event)); if (i >= 0) window.location.href = `${root}${data.nodes[i][0]}.html`; }
    drag = null;
  });
  canvas.addEventListener("mousemove", (event) => {
    const p = point(event);
    if (drag) { ox = drag.ox + p[0] - drag.p[0]; oy = drag.oy + p[1] - drag.p[1]; drag.moved = drag.moved || Math.abs(p[0] - drag.p[0]) > 3; draw(); return; }
    const i = nearest(...p);
    if (i !== hover) { hover = i; canvas.title = i >= 0 ? data.nodes[i][1] : ""; draw(); }
  });
  canvas.addEventListener("wheel", (event) => {
    event.preventDefault();
    const [px, py] = point(event), k = Math.exp(-event.deltaY * 0.0015);
    ox = px - (px - ox) * k; oy = py - (py - oy) * k; scale *= k; draw();
  }, { passive: false });
  const find = document.querySelector(".graph-find");
  find.addEventListener("input", () => {
    const q = find.value.trim().toLowerCase();
    found = q ? data.nodes.findIndex((node) => node[1].toLowerCase().includes(q) || node[0].includes(q)) : -1;
    if (found >= 0) { ox = canvas.width / 2 - scale * x[found]; oy = canvas.height / 2 - scale * y[found]; }
    draw();
  });
  window.addEventListener("resize", () => { fit(); draw(); });
  fit(); draw();
  canvas.dataset.ready = String(n);
})();
