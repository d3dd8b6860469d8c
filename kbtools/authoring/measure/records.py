"""What a run writes: the machine described, a measurement record's text and the run's source's, and each
record created under an id no other file has (never replacing one) and removed again if the run stops."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import platform
import re
import sys
from collections.abc import Callable
from pathlib import Path

from kbtools.atomic import create_file
from kbtools.authoring.measure.machine import Figure, read_text
from kbtools.authoring.new import AuthoringError
from kbtools.diagnostics import one_line
from kbtools.ids import id_problem
from kbtools.signals import signals_held
from kbtools.version import __version__


def machine() -> list[str]:
    """This machine as every record of a run states it: CPU, cores, memory, operating system."""
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in read_text("/proc/cpuinfo").splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown CPU",
    )
    memory = next(
        (line.split()[1] for line in read_text("/proc/meminfo").splitlines() if line.startswith("MemTotal")), ""
    )
    parts = [f"CPU {cpu}, {os.cpu_count()} cores"]
    if memory.isdigit():
        parts.append(f"{int(memory) / (1 << 20):.1f} GiB of memory")
    parts.append(f"Linux {platform.release()}" if sys.platform == "linux" else platform.platform())
    return parts


def _gbps(value: float) -> str:
    return f"{value / 1e9:.3g} GB/s"


# What one_line (which escapes C0 and C1 controls) leaves that a record may not hold raw: the surrogates
# Python decodes bytes that are not UTF-8 into (a path's, a host name's), and the two non-characters YAML
# refuses.
_UNWRITABLE = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _escaped(match: re.Match[str]) -> str:
    char = match.group(0)
    if "\udc80" <= char <= "\udcff":  # a byte that was not UTF-8: shown as the byte, as repr shows bytes
        return f"\\x{ord(char) - 0xDC00:02x}"
    return char.encode("unicode_escape").decode("ascii")


def _yaml_string(text: str) -> str:
    """A YAML double-quoted scalar of `text` as a person reads it: control characters (a newline or DEL in
    a path) and bytes that are not UTF-8 written as visible escapes, as kb shows them on a terminal, so
    nothing reaches a record raw and every record kb writes passes kb check. A JSON string is a YAML
    double-quoted one, so quotes and backslashes stay intact."""
    return json.dumps(_UNWRITABLE.sub(_escaped, one_line(text)), ensure_ascii=False)


def _when(now: dt.datetime, copy: int) -> str:
    """The time a name carries, which tells two runs of one day apart; with the id's -N for two in one
    second (kb check warns of two records named alike)."""
    return f"{now:%Y-%m-%d %H:%M:%S} UTC" + (f" #{copy}" if copy > 1 else "")


def record_text(
    figure: Figure,
    type_name: str,
    record_id: str,
    source_id: str,
    common: list[str],
    now: dt.datetime,
    copy: int = 1,
) -> str:
    today, when = now.date(), _when(now, copy)
    low, high = figure.spread
    conditions = "; ".join(
        [
            *common,
            *figure.conditions,
            f"{len(figure.samples)} repetitions, median {_gbps(figure.median)}, from {_gbps(low)} to {_gbps(high)}",
            f"kb {__version__}, {now:%Y-%m-%d %H:%M:%S} UTC",
        ]
    )
    return (
        "---\n"
        f"id: {record_id}\n"
        f"type: {type_name}\n"
        f"name: {_yaml_string(f'{figure.name} ({when})')}\n"
        "status: draft\n"
        "confidence: 0.6\n"
        f"updated: {today.isoformat()}\n"
        f"sources: [{source_id}]\n"
        "basis: measured\n"
        f"metric: {_yaml_string(figure.metric)}\n"
        "value:\n"
        f"  value: {figure.median / 1e9:.4g} GB/s\n"
        f"  source: {source_id}\n"
        f"conditions: {_yaml_string(conditions)}\n"
        "measured_by: local\n"
        f"published: {today.isoformat()}\n" + (f"storage_tiers: [{figure.tier}]\n" if figure.tier else "") + "---\n"
        f"Measured on this machine by `kb measure`: the median of {len(figure.samples)} repetitions,\n"
        f"{{{{ value }}}}. The conditions say the machine, the sizes and the spread. Cited by the run's\n"
        f"source, [[{source_id}]].\n"
    )


def source_text(
    type_name: str, source_id: str, common: list[str], now: dt.datetime, records: list[str], copy: int = 1
) -> str:
    today, when = now.date(), _when(now, copy)
    host = platform.node() or "this machine"

    return (
        "---\n"
        f"id: {source_id}\n"
        f"type: {type_name}\n"
        f"name: {_yaml_string(f'kb measure run on {host}, {when}')}\n"
        "status: draft\n"
        "confidence: 0.6\n"
        f"updated: {today.isoformat()}\n"
        "kind: measurement-run\n"
        "origin: independent\n"
        f"publisher: {_yaml_string(f'kb measure on {host}')}\n"
        f"no_url: {_yaml_string(f'a measurement made on this machine by kb measure {__version__}; its conditions are in each record')}\n"
        f"notes: {_yaml_string('; '.join(common))}\n"
        "---\n"
        "The run of `kb measure` that these measurement records cite: "
        + (", ".join(f"[[{r}]]" for r in records) or "(being written)")
        + ".\n"
    )


def role(registry, name: str):
    """The record type playing the role `name` (x-kb-role): kb measure writes measurements and a source."""
    found = registry.with_role(name)
    if found is None:
        raise AuthoringError(
            f"no record type plays the {name} role (x-kb-role: {name} in a schema); kb measure writes one"
        )
    return found


def create_new(
    directory: Path, base: str, text_for: Callable[[str, int], str], created: list[tuple[Path, str]]
) -> tuple[str, int]:
    """Create the record `base`, else `base-2`, `base-3` ...: each tried by an exclusive create, which
    fails on any file already there (another run's, one someone planted, a dangling link), so two runs at
    once never take one id and nothing is replaced. The id made and its number; noted in `created`."""
    for n in itertools.count(1):
        record_id = base if n == 1 else f"{base}-{n}"
        problem = id_problem(record_id)
        if problem:
            raise AuthoringError(f"kb measure made '{record_id}', which is not a record id: {problem}")
        path, text = directory / f"{record_id}.md", text_for(record_id, n)
        try:
            with signals_held():  # a stop once the record exists finds it in `created`
                create_file(path, text)
                created.append((path, text))
        except FileExistsError:
            if not directory.is_dir():  # not a taken id: the type's directory is a file
                raise AuthoringError(f"{directory} is not a directory; kb measure writes its records there") from None
            continue
        return record_id, n
    raise AssertionError("unreachable")  # itertools.count never ends


def remove_if_unchanged(path: Path, text: str) -> None:
    """Remove a record this run created, unless someone has changed it since: then it is theirs."""
    try:
        if path.read_bytes() == text.encode():
            path.unlink()
    except OSError:
        pass
