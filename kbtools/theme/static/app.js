// Progressive enhancement only: every page reads fully without this file.
"use strict";

function sortableTables() {
  document.querySelectorAll("table.sortable").forEach((table) => {
    const tools = table.closest("main").querySelector(".table-tools");
    if (tools) {
      tools.hidden = false;
      const filter = tools.querySelector(".table-filter");
      filter.addEventListener("input", () => {
        const needle = filter.value.trim().toLowerCase();
        table.tBodies[0].querySelectorAll("tr").forEach((row) => {
          row.hidden = needle !== "" && !row.textContent.toLowerCase().includes(needle);
        });
      });
    }
    table.querySelectorAll("th[data-sort]").forEach((th, column) => {
      th.tabIndex = 0;
      const sort = () => {
        const ascending = th.getAttribute("aria-sort") !== "ascending";
        table.querySelectorAll("th[data-sort]").forEach((other) => other.removeAttribute("aria-sort"));
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        const numeric = th.dataset.sort === "num";
        const rows = Array.from(table.tBodies[0].rows);
        const key = (row) => {
          const cell = row.cells[column];
          const raw = cell.dataset.sortValue ?? cell.textContent.trim().toLowerCase();
          return numeric ? (raw === "" ? Number.NEGATIVE_INFINITY : parseFloat(raw)) : raw;
        };
        rows.sort((a, b) => {
          const x = key(a), y = key(b);
          return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
        });
        rows.forEach((row) => table.tBodies[0].appendChild(row));
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", (event) => { if (event.key === "Enter") sort(); });
    });
  });
}

function search() {
  const form = document.querySelector("form.search");
  if (!form) return;
  const input = form.querySelector("input");
  const box = form.querySelector(".search-results");
  let pagefind = null;
  const selects = {};
  let loading = null;
  const load = () => (loading = loading || init());  // one import, however many callers
  const init = async () => {
    try {
      pagefind = await import(new URL(form.dataset.pagefind, document.baseURI).href);
      await pagefind.init();
      // filters by type and status, from the data-pagefind-filter marks on record pages
      const available = await pagefind.filters();
      for (const name of ["type", "status"]) {
        const select = document.createElement("select");
        select.setAttribute("aria-label", `Filter search by ${name}`);
        select.className = `search-filter search-filter-${name}`;
        select.append(new Option(`any ${name}`, ""));
        for (const value of Object.keys(available[name] || {}).sort()) select.append(new Option(value, value));
        select.addEventListener("change", () => input.dispatchEvent(new Event("input")));
        selects[name] = select;
        form.insertBefore(select, box);
      }
    } catch (error) {
      pagefind = null;
    }
    return pagefind;
  };
  input.addEventListener("focus", load, { once: true });
  const show = (nodes) => { box.replaceChildren(...nodes); box.hidden = nodes.length === 0; };
  const note = (text) => { const p = document.createElement("p"); p.textContent = text; return p; };
  let generation = 0;
  input.addEventListener("input", async () => {
    const query = input.value.trim();
    const mine = ++generation;
    if (!query) { show([]); return; }
    const engine = await load();
    if (!engine) { show([note("Search needs the site served over HTTP: run kb serve and open http://localhost:8000/.")]); return; }
    const filters = {};
    for (const [name, select] of Object.entries(selects)) if (select.value) filters[name] = select.value;
    const found = await engine.debouncedSearch(query, { filters }, 200);
    if (!found || mine !== generation) return;
    const results = await Promise.all(found.results.slice(0, 8).map((r) => r.data()));
    if (mine !== generation) return;
    show(results.length ? results.map((data) => {
      const a = document.createElement("a");
      a.href = data.url;
      a.textContent = data.meta.title || data.url;
      const small = document.createElement("small");
      small.textContent = [data.filters.type, data.filters.status].flat().filter(Boolean).join(" · ");
      a.appendChild(small);
      return a;
    }) : [note("No match.")]);
  });
  form.addEventListener("submit", (event) => event.preventDefault());
  document.addEventListener("click", (event) => { if (!form.contains(event.target)) box.hidden = true; });
}

// A link to a figure in a folded table opens the fold (a closed <details>) and shows it; Chromium opens it by
// itself on a fragment navigation, other browsers may not.
function revealTarget() {
  const id = decodeURIComponent(window.location.hash.slice(1));
  const target = id ? document.getElementById(id) : null;
  if (!target) return;
  let opened = false;
  for (let fold = target.closest("details:not([open])"); fold; fold = fold.parentElement && fold.parentElement.closest("details:not([open])")) {
    fold.open = true;
    opened = true;
  }
  if (opened) target.scrollIntoView();
}

document.addEventListener("DOMContentLoaded", () => { sortableTables(); search(); revealTarget(); });
window.addEventListener("hashchange", revealTarget);
