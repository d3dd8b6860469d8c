"""Where a cold `kb check` spends its time, stage by stage, against what the same work costs at its floor.

    python benchmarks/stages.py --records 10000 100000

For each size it replicates this repository's records (replicate.py: real bodies, cost blocks and for_each
tables, with consistent renames), then runs one cold check in this process with no store, timing discovery
and loading and then each stage of the pipeline. Beside each it times a floor, the least any tool must do
for that work, over the same records:

- loading: libyaml's C parser on every record's frontmatter text (no positions, no checks);
- schema: jsonschema-rs (the compiled validator kb itself uses first) on every record's data;
- every other stage: one walk over every record's data in its schema's shape (kbtools.fieldwalk).

It prints a Markdown table (seconds, microseconds a record, the ratio to the floor) and the run's peak
memory, for BENCHMARKS.md. One process, one run per size: a profile, not a benchmark to quote as a ratio
against peers (benchmarks/run.py does that, command against command).
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replicate import replicate  # noqa: E402

from kbtools.check.load import FENCE, load_corpus  # noqa: E402
from kbtools.check.pipeline import STAGES  # noqa: E402
from kbtools.check.run.stages import run_stage  # noqa: E402
from kbtools.check.stage import Stage  # noqa: E402
from kbtools.corpus import Corpus, Settings  # noqa: E402
from kbtools.fieldwalk import walk_plan  # noqa: E402
from kbtools.registry import load_registry  # noqa: E402


def seconds(work: Callable[[], object]) -> tuple[float, object]:
    gc.collect()
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def frontmatters(root: Path) -> list[str]:
    texts = []
    for path in sorted((root / "records").rglob("*.md")):
        lines = path.read_text(encoding="utf-8").split("\n")
        end = next(i for i, line in enumerate(lines[1:], 1) if FENCE.match(line))
        texts.append("\n".join(lines[1:end]))
    return texts


def floors(corpus: Corpus, root: Path) -> dict[str, float]:
    texts = frontmatters(root)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    parse, _ = seconds(lambda: [yaml.load(text, Loader=loader) for text in texts])  # noqa: S506 -- the C safe loader
    types = corpus.registry.types

    def validate() -> None:
        for record in corpus.records.values():
            found = types.get(record.type)
            if found is not None and found.fast_validator is not None:
                found.fast_validator.is_valid(dict(record.data))

    def walk() -> None:
        for record in corpus.records.values():
            found = types.get(record.type)
            if found is not None:
                for _ in walk_plan(found.plan, dict(record.data)):
                    pass

    valid, _ = seconds(validate)
    walked, _ = seconds(walk)
    return {"libyaml parse": parse, "jsonschema-rs validation": valid, "a dict walk": walked}


def profile(records: int) -> list[str]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "kb"
        made = replicate(root, records)
        settings = Settings(root=root)
        registry = load_registry(settings.schema_path, settings.root)
        rows: list[tuple[str, float, str]] = []
        took, corpus = seconds(lambda: load_corpus(settings, registry, None))
        rows.append(("discover and load", took, "libyaml parse"))
        for stage in STAGES:
            name = stage.name if isinstance(stage, Stage) else stage.__name__
            floor = "jsonschema-rs validation" if name == "schema" else "a dict walk"
            took, corpus = seconds(
                lambda stage=stage, corpus=corpus: (
                    run_stage(stage, corpus) if isinstance(stage, Stage) else stage(corpus, None)
                )
            )
            rows.append((name, took, floor))
        floor = floors(corpus, root)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = sum(took for _, took, _ in rows)
    out = [
        f"### Cold `kb check` by stage, {made:,} records (this repository replicated), one process, no store",
        "",
        "| stage | s | µs a record | its floor | floor µs a record | × the floor |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for name, took, floor_name in rows:
        low = floor[floor_name]
        out.append(
            f"| {name} | {took:.2f} | {took / made * 1e6:.0f} | {floor_name} | {low / made * 1e6:.0f} | "
            f"{took / low:.1f} |"
        )
    out += [f"| **all** | **{total:.2f}** | {total / made * 1e6:.0f} | | | |", "", f"Peak memory: {peak:.0f} MiB.", ""]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[10_000])
    args = parser.parse_args()
    for records in args.records:
        print("\n".join(profile(records)))


if __name__ == "__main__":
    main()
