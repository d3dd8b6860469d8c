// Whole-corpus link graph on a canvas: records clustered by type (sunflower spirals, the
// most linked in the middle), edges faint, pan/zoom/find; stays responsive at 10k records.
"use strict";

(async function () {
  const canvas = document.querySelector("canvas.corpus-graph");
  if (!canvas) return;
  const root = document.body.dataset.root || "";
  // the page carries its data (a page opened from file:// may not fetch a file beside it)
  const data = JSON.parse(document.getElementById(canvas.dataset.src).textContent);
  const css = getComputedStyle(document.documentElement);
  const palette = ["--s0", "--s1", "--s2", "--s3", "--s4", "--s5", "--s6", "--s7", "--s8"].map((v) => css.getPropertyValue(v).trim());
  const line = css.getPropertyValue("--line").trim(), fg = css.getPropertyValue("--fg").trim();
  const n = data.nodes.length;
  const degree = new Float64Array(n);
  for (const [a, b] of data.edges) { degree[a]++; degree[b]++; }
  const byType = new Map();
  data.nodes.forEach((node, i) => { const t = node[2]; if (!byType.has(t)) byType.set(t, []); byType.get(t).push(i); });
  const x = new Float64Array(n), y = new Float64Array(n);
  const groups = Array.from(byType.keys()).sort((a, b) => a - b);
  const spread = (count) => 14 * Math.sqrt(count + 0.5);
  // clusters sit on a ring just long enough to hold them side by side
  const ring = groups.length > 1 ? 1.25 * groups.reduce((sum, t) => sum + spread(byType.get(t).length) + 20, 0) / Math.PI : 0;
  const centers = [];
  groups.forEach((t, g) => {
    const members = byType.get(t).sort((a, b) => degree[b] - degree[a]);
    const angle = (2 * Math.PI * g) / groups.length - Math.PI / 2;
    const cx = ring * Math.cos(angle), cy = ring * Math.sin(angle);
    centers.push([t, cx, cy - spread(members.length) - 14]);
    members.forEach((i, k) => {
      const r = 14 * Math.sqrt(k + 0.5), a = k * 2.399963229728653;
      x[i] = cx + r * Math.cos(a); y[i] = cy + r * Math.sin(a);
    });
  });
  const legend = document.querySelector(".graph-legend");
  groups.forEach((t) => {
    const span = document.createElement("span");
    span.textContent = `● ${data.types[t] || "unknown"} (${byType.get(t).length})`;
    span.style.color = palette[t % palette.length];
    legend.appendChild(span);
  });
  const ctx = canvas.getContext("2d");
  let scale = 1, ox = 0, oy = 0, hover = -1, found = -1;
  const fit = () => {
    const ratio = window.devicePixelRatio || 1;
    canvas.width = canvas.clientWidth * ratio; canvas.height = canvas.clientHeight * ratio;
    let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
    for (let i = 0; i < n; i++) { minX = Math.min(minX, x[i]); maxX = Math.max(maxX, x[i]); minY = Math.min(minY, y[i]); maxY = Math.max(maxY, y[i]); }
    scale = Math.min(canvas.width / (maxX - minX + 120), canvas.height / (maxY - minY + 120));
    ox = canvas.width / 2 - scale * (minX + maxX) / 2; oy = canvas.height / 2 - scale * (minY + maxY) / 2;
  };
  const draw = () => {
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.globalAlpha = n > 2000 ? 0.15 : 0.45;
    ctx.strokeStyle = line; ctx.lineWidth = 1;
    ctx.beginPath();
    for (const [a, b] of data.edges) { ctx.moveTo(ox + scale * x[a], oy + scale * y[a]); ctx.lineTo(ox + scale * x[b], oy + scale * y[b]); }
    ctx.stroke();
    ctx.globalAlpha = 1;
    const radius = Math.max(1.5, Math.min(7, 6 * scale));
    for (let i = 0; i < n; i++) {
      ctx.fillStyle = palette[data.nodes[i][2] % palette.length] || fg;
      ctx.beginPath(); ctx.arc(ox + scale * x[i], oy + scale * y[i], radius, 0, 2 * Math.PI); ctx.fill();
    }
    ctx.fillStyle = fg; ctx.textAlign = "center";
    ctx.font = `600 ${12 * (window.devicePixelRatio || 1)}px system-ui, sans-serif`;
    for (const [t, cx, cy] of centers) ctx.fillText(data.types[t] || "", ox + scale * cx, oy + scale * cy);
    ctx.textAlign = "start";
    for (const i of [hover, found]) {
      if (i < 0) continue;
      ctx.fillStyle = fg; ctx.font = `${13 * (window.devicePixelRatio || 1)}px system-ui, sans-serif`;
      ctx.beginPath(); ctx.arc(ox + scale * x[i], oy + scale * y[i], radius + 3, 0, 2 * Math.PI); ctx.stroke();
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
