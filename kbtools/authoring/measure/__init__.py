"""`kb measure`: this machine's own tier bandwidths, sequential and KV-shaped, written as measurement records.

What is measured, each within a size and a time bound:

- memory: copy bandwidth with one process and with one per core (each byte counted once: bytes copied
  per second);
- a file tier at a directory the user names: a sequential read of a file kb writes there, with the page
  cache bypassed (O_DIRECT) where the filesystem allows it, else after asking the kernel to drop the
  file's cached pages (posix_fadvise DONTNEED), and said so;
- KV-shaped reads, for memory and for the file tier: a prefix read as one sequential run of blocks
  against the same number of blocks fetched from scattered places, a block being the engine's block
  tokens times the model's KV bytes per token;
- a GPU's copies, when a CUDA device and CuPy are present: host to device and back, from pinned and from
  pageable memory, within the device, and a KV prefix against scattered blocks from pinned host memory;
  otherwise one line says why not.

Each figure becomes a draft measurement record (basis measured) whose conditions say the machine, the
sizes, the repetitions and the spread, citing one source record for the run. Records are created, never
replacing a file (a taken id gets the next -N, tried by an exclusive create); the file kb writes to read
back is removed, also on Ctrl-C, SIGTERM or SIGHUP, and kb writes nowhere else under the path given.
--max-bytes is lowered to what the machine has (memory available, the path's free space) and a KV block
past it is refused before anything is allocated.

A run: the request is checked and settled into a Job (machine.py) before anything is measured, then each
Measurer in MEASURERS (memory.py, file.py, gpu.py) measures what the job asks of it, and the records are
written (records.py). The stop signals are kbtools.signals'.
"""

from __future__ import annotations

import datetime as dt
import platform
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kbtools.atomic import ChangedMeanwhile, check_inside, replace_file, writers_lock
from kbtools.authoring.measure.file import FileMeasurer, FileTier
from kbtools.authoring.measure.gpu import GpuMeasurer, gpu_skipped
from kbtools.authoring.measure.machine import (
    ALIGN,
    TIERS,
    Bounds,
    Figure,
    Job,
    Measurer,
    Request,
    file_cap,
    free_space,
    memory_available,
    memory_cap,
    refuse_block,
)
from kbtools.authoring.measure.memory import MemoryMeasurer
from kbtools.authoring.measure.records import (
    create_new,
    machine,
    record_text,
    remove_if_unchanged,
    role,
    source_text,
)
from kbtools.authoring.new import AuthoringError, slug
from kbtools.signals import STOP_SIGNALS, Stopped, signals_held, stop_signals_raise

__all__ = [
    "ALIGN",
    "MEASURERS",
    "STOP_SIGNALS",
    "TIERS",
    "Bounds",
    "FileTier",
    "Figure",
    "Measurer",
    "Request",
    "Run",
    "Stopped",
    "free_space",
    "gpu_skipped",
    "measure",
    "memory_available",
    "record_text",
    "signals_held",
    "stop_signals_raise",
    "write_records",
]

MEASURERS: tuple[Measurer, ...] = (MemoryMeasurer(), FileMeasurer(), GpuMeasurer())  # in the order they run


@dataclass
class Run:
    written: list[Path]  # the records, the run's source first
    citations: list[str]  # what to add to the tiers named so the cost model prices them with the figures


def measure(settings, request: Request, say: Callable[[str], None]) -> Run:
    """Measure what the request asks and write the records (AuthoringError on a refusal)."""
    job, registry, file_tier, memory_tier = _settle(settings, request, say)
    with stop_signals_raise():  # a SIGTERM or SIGHUP cleans up as Ctrl-C does: the file, the records part written
        figures: list[Figure] = []
        skipped = ""
        for measurer in MEASURERS:
            why = measurer.skipped(request)
            if why:
                say(f"{measurer.name} skipped: {why}")
                skipped = f": {measurer.name} skipped, {why}"
                continue
            figures += measurer.figures(job, say)
        if not figures:
            raise AuthoringError("nothing measured" + skipped)
        if memory_tier and not any(f.tier == memory_tier.id and f.shape for f in figures):
            say(
                f"the host-memory figures name {memory_tier.key} but do not price it: a hit served from host memory "
                "crosses the GPU's link, which kb measure gpu measures (kv-shaped with --kv-model) where a device is"
            )
        with writers_lock(settings.root, settings.records_path):  # no kb fmt or kb mv sweeps away a temporary of these
            written = write_records(settings, registry, figures, dt.datetime.now(dt.UTC))
    tiers_named = {t.key: t for t in (file_tier, memory_tier) if t is not None}.values()
    return Run(written, [line for t in tiers_named for line in citations(registry, t, figures)])


# ---------------------------------------------------------------- the request, settled before anything is measured


MAX_SECONDS = 24 * 3600  # --max-seconds' ceiling: a day per figure is more than any measurement here needs, and
# the memory copy's wait for its workers (ten times the bound) stays within what a timeout can hold


def _refuse_out_of_range(request: Request) -> None:
    """Each count at least 1, and --max-seconds a number of seconds within (0, a day]: a NaN or an infinity
    would otherwise reach a timeout that cannot hold it, mid-run."""
    bounds = request.bounds
    for flag, value, unit in (
        ("--max-bytes", bounds.bytes, " B"),
        ("--repetitions", bounds.repetitions, ""),
        ("--block-tokens", request.block_tokens, ""),
        ("--blocks", request.blocks, ""),
    ):
        if value < 1:
            raise AuthoringError(f"{flag} must be at least 1{unit}, not {value:,}{unit}")
    if not 0 < bounds.seconds <= MAX_SECONDS:  # also false for NaN
        raise AuthoringError(
            f"--max-seconds must be a number of seconds above 0 and at most {MAX_SECONDS:,} (a day), not {bounds.seconds:g}"
        )


def _settle(settings, request: Request, say: Callable[[str], None]):
    """The job the request comes to on this machine, the registry, and the storage tier records --tier and
    --memory-tier name; refused (AuthoringError) before anything is measured or written."""
    from kbtools.registry import load_registry

    bounds = request.bounds
    _refuse_out_of_range(request)
    unknown = sorted(request.tiers - set(TIERS))
    if unknown:
        raise AuthoringError(f"no tier {', '.join(unknown)} (known: {', '.join(TIERS)})")
    tiers = request.asked()
    if "file" in tiers and request.path is None:
        raise AuthoringError(
            "the file tier needs --path DIR: a directory on the tier, where kb may write one file and remove it"
        )
    if "file" in tiers and request.path is not None and not request.path.is_dir():
        raise AuthoringError(f"--path {request.path} is not a directory")
    # --max-bytes is a bound, so what the machine has lowers it (said, and written in the conditions) and
    # the run goes on within it: nothing is ever allocated past memory or written past the free space. The
    # machine is asked through this package's names (memory_available, free_space), which a test may replace.
    memory_bound = memory_cap(bounds.bytes, memory_available)
    file_bound = (
        file_cap(bounds.bytes, request.path, free_space) if "file" in tiers and request.path is not None else None
    )
    wanted = "kv" in tiers and request.kv_model
    corpus = None
    if wanted or request.file_tier or request.memory_tier:  # the model's KV bytes, or a tier to resolve
        from kbtools.check.pipeline import check_corpus

        corpus = check_corpus(settings, use_cache=True, complete=True)
    registry = corpus.registry if corpus else load_registry(settings.schema_path, settings.root)  # read once
    directory = role(registry, "measurement").dir
    out = request.out or settings.records_path / directory
    if out.parent.resolve() != settings.records_path.resolve() or out.name != directory:
        raise AuthoringError(
            f"--out {out} is not the measurements directory of {settings.records_path}; records live there"
        )
    for kind in (directory, role(registry, "source").dir):  # --out is the first of these, as checked above
        check_inside(settings.root, settings.records_path / kind)  # before anything is measured: no link out
    block, file_tier, memory_tier = None, None, None
    if corpus is not None:
        index = corpus.index
        file_tier, memory_tier = (_tier(corpus, index, t) for t in (request.file_tier, request.memory_tier))
        if wanted:
            per_token = corpus.values(str(request.kv_model)).fields.get("kv_bytes_per_token")
            if per_token is None or per_token.quantity is None:
                raise AuthoringError(
                    f"no kv_bytes_per_token for '{request.kv_model}' (is it a model record that kb check computes?)"
                )
            per_token_bytes = float(per_token.quantity.to("B/token").magnitude)
            block = int(per_token_bytes * request.block_tokens)
            refuse_block(
                block,
                request.block_tokens,
                per_token_bytes,
                bounds.bytes,
                [memory_bound] + ([file_bound] if file_bound else []),  # a file's KV read holds a block in memory
            )
    elif "kv" in tiers:
        say("KV-shaped reads need --kv-model DIR/ID (the model whose KV bytes per token size a block); skipped")
    in_memory = memory_bound if tiers & {"memory", "gpu"} or block else None  # the file tier alone holds little
    for cap, what in ((in_memory, "the memory figures"), (file_bound, "the file")):
        if cap is not None and cap.why:
            say(
                f"--max-bytes {bounds.bytes:,} B is more than this machine has: {what} use at most {cap.bytes:,} B ({cap.why})"
            )
    job = Job(
        frozenset(tiers),
        bounds,
        memory_bound,
        file_bound,
        request.path,
        block,
        request.blocks,
        memory_tier=memory_tier.id if memory_tier else None,
        file_tier=file_tier.id if file_tier else None,
    )
    return job, registry, file_tier, memory_tier


def _tier(corpus, index, name: str | None):
    """The storage tier record `name` names: one of the type the measurement type's storage_tiers field
    refers to."""
    if not name:
        return None
    measurement = corpus.registry.with_role("measurement")
    plan = measurement.plan.properties.get("storage_tiers") if measurement else None
    wanted = plan.items.ref_types if plan is not None and plan.items is not None else ()
    record, _ = index.resolve(name)
    if record is None or record.type not in wanted:
        raise AuthoringError(f"no storage tier '{name}' (a record of type {' or '.join(wanted) or '?'})")
    return record


# ---------------------------------------------------------------- the records a run writes


def write_records(settings, registry, figures: list[Figure], now: dt.datetime) -> list[Path]:
    """The run's source and one record per figure, each created (never replacing a file), the run's
    source first. The types are the ones playing the measurement and source roles (x-kb-role). A run
    stopped part way removes the records it created, so none is left citing a source never finished."""
    measurement, source = (role(registry, name) for name in ("measurement", "source"))
    host, stamp = _host_word(), now.strftime("%Y%m%d")
    common = machine()
    sources, measurements = settings.records_path / source.dir, settings.records_path / measurement.dir
    created: list[tuple[Path, str]] = []
    try:
        # the source first, so that every record cites an id this run holds; it links them once they exist
        source_id, copy = create_new(
            sources,
            f"kb-measure-{host}-{stamp}",
            lambda id_, n: source_text(source.name, id_, common, now, [], n),
            created,
        )
        keys = []
        for figure in figures:

            def text_of(record_id: str, n: int, figure: Figure = figure) -> str:
                return record_text(figure, measurement.name, record_id, source_id, common, now, n)

            record_id, _ = create_new(measurements, f"{host}-{figure.slug}-{stamp}", text_of, created)
            figure.key = f"{measurement.dir}/{record_id}"
            keys.append(figure.key)
        path, placeholder = created[0]
        try:
            replace_file(path, source_text(source.name, source_id, common, now, keys, copy), placeholder.encode())
        except ChangedMeanwhile as exc:
            raise AuthoringError(str(exc)) from None
    except BaseException:
        for path, text in created:
            remove_if_unchanged(path, text)
        raise
    return [path for path, _ in created]


def _host_word() -> str:
    """This machine's name as id words: letters reduced to ASCII (Wörk -> work), every other run of
    characters one hyphen, short enough that an id with it stays within ids.py's length."""
    name = unicodedata.normalize("NFKD", platform.node()).encode("ascii", "ignore").decode("ascii")
    return slug(name)[:40].strip("-") or "host"


def citations(registry, tier, figures: list[Figure]) -> list[str]:
    """What to add to the tier's record so the cost model prices it with these figures: the fields its
    type marks x-kb-measured-as. kb says it and leaves the record as its author wrote it."""
    fields = registry.types[tier.type].measured_as if tier.type in registry.types else {}
    lines = [f"  {fields[f.shape]}: {f.key}" for f in figures if f.tier == tier.id and f.shape in fields and f.key]
    if not lines:
        return []
    return [
        f"to price {tier.key} with these figures (if this machine's path is that tier's), add to {tier.path}:",
        *lines,
    ]
