"""`kb fmt`: canonical frontmatter, with comments, unknown keys and the body kept.

ruamel.yaml's round-trip mode keeps comments; kb puts the keys in the schema's order
(the envelope first, then the type's fields), writes lists of plain values inline and lists
of mappings as blocks, and quotes only where YAML needs it. A key the schema does not know
(a misspelt `vender:`) stays where it was written, right after the key written before it:
a typo is kb check's finding (KB201, with its guess), not also a file that would reformat.
The body after the closing fence is kept byte for byte. Running it twice changes nothing.
"""

from __future__ import annotations

import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from kbtools.atomic import ChangedMeanwhile, replace_file
from kbtools.check.load import CLOSING_FENCE, FENCE, LoadError, parse_record_bytes, read_regular
from kbtools.registry import TypeRegistry


@dataclass
class Formatted:
    path: Path
    changed: bool
    error: str | None = None


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.width = sys.maxsize  # never fold a long line of prose (4096 folded a 4.9 MB string into 1,196 lines)
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.preserve_quotes = False
    return yaml


def _style(node) -> None:
    """Lists of plain values inline, lists of mappings as blocks; recursively."""
    if isinstance(node, CommentedMap):
        for value in node.values():
            _style(value)
    elif isinstance(node, CommentedSeq):
        if all(not isinstance(item, (CommentedMap, CommentedSeq)) for item in node) and not node.ca.items:
            node.fa.set_flow_style()
        else:
            node.fa.set_block_style()
        for item in node:
            _style(item)


def _ordered(data: CommentedMap, order: tuple[str, ...]) -> CommentedMap:
    """The keys the schema knows in its order; each key it does not know follows the key written before it
    (those written before every known key stay first), so kb fmt moves no unknown key among its neighbours."""
    known = set(order)
    after: dict[str | None, list[str]] = {}
    anchor: str | None = None
    for key in data:
        if key in known:
            anchor = key
        else:
            after.setdefault(anchor, []).append(key)
    keys = list(after.get(None, []))
    for key in order:
        if key in data:
            keys.append(key)
            keys.extend(after.get(key, []))
    if keys == list(data):
        return data
    out = CommentedMap()
    for key in keys:
        out[key] = data[key]
        if key in data.ca.items:
            out.ca.items[key] = data.ca.items[key]
    out.ca.comment = data.ca.comment
    return out


def format_text(text: str, order: tuple[str, ...]) -> str:
    lines = text.splitlines(keepends=True)
    if not lines or not FENCE.match(lines[0].rstrip("\r\n")):
        raise LoadError("KB102", 1, 1, "missing frontmatter fence")
    closing = next((i for i in range(1, len(lines)) if CLOSING_FENCE.match(lines[i].rstrip("\r\n"))), None)
    if closing is None:
        raise LoadError("KB103", 1, 1, "unclosed frontmatter")
    yaml = _yaml()
    data = yaml.load("".join(lines[1:closing]))
    if not isinstance(data, CommentedMap):
        raise LoadError("KB106", 2, 1, "frontmatter is not a mapping")
    data = _ordered(data, order)
    _style(data)
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    return "---\n" + buffer.getvalue() + "---\n" + "".join(lines[closing + 1 :])


def where_to_write(path: Path, records: Path) -> tuple[Path | None, str | None]:
    """The file kb fmt may rewrite for `path`, or why none, by the rules kb check reads records by: a record
    in a directory that is a symlink is not read; a record that is a symlink is rewritten at its target
    (the link is kept) when that target lies in records/, and not at all otherwise."""
    real_records = Path(os.path.realpath(records))
    try:
        inner = Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(records)))
    except ValueError:
        return None, "KB112 not under the records directory; kb fmt formats records only"
    here = Path(os.path.abspath(records))
    for part in inner.parts[:-1]:
        here = here / part
        if here.is_symlink():
            return None, f"KB112 {here.relative_to(records.parent)} is a symlink to a directory; kb does not follow it"
    if not path.is_symlink():
        return path, None
    target = Path(os.path.realpath(path))
    if os.path.commonpath([target, real_records]) != str(real_records):
        return None, "KB112 record is a symlink to a file outside records/; it is not read"
    return target, None


def format_file(path: Path, registry: TypeRegistry, check_only: bool, records: Path) -> Formatted:
    target, problem = where_to_write(path, records)
    if target is None:
        return Formatted(path, False, f"1:1: {problem}")
    path = target
    try:
        raw, _ = read_regular(path)  # a FIFO, a directory named x.md or an unreadable file: this file's error only
    except LoadError as exc:
        return Formatted(path, False, f"1:1: {exc.code} {exc.message}")
    try:
        parse_record_bytes(raw)  # kb's own loader first: never rewrite what kb check refuses
        text = raw.decode("utf-8")
        record_type = registry.by_dir(path.parent.name)
        order = record_type.property_order if record_type else ()
        formatted = format_text(text, order)
    except LoadError as exc:
        return Formatted(path, False, f"{exc.line}:{exc.column}: {exc.code} {exc.message}")
    except (YAMLError, UnicodeDecodeError) as exc:
        return Formatted(path, False, f"1:1: KB104 {exc}")
    before, _, _, _ = parse_record_bytes(raw)
    after, _, _, _ = parse_record_bytes(formatted.encode("utf-8"))
    if before != after:  # formatting must never change what a record says
        return Formatted(path, False, "1:1: KB900 formatting would change the data; left as it is")
    changed = formatted != text
    if changed and not check_only:
        try:
            replace_file(path, formatted, expected=raw)  # an edit saved since the read is never overwritten
        except ChangedMeanwhile:
            return Formatted(
                path, False, "1:1: the file changed while kb fmt worked on it; it was left as it is (run kb fmt again)"
            )
        except OSError as exc:
            return Formatted(path, False, f"1:1: cannot write the file: {exc.strerror}")
    return Formatted(path, changed)


def files_to_format(paths: list[Path], settings: Any, registry: TypeRegistry) -> list[Path]:
    """The files kb fmt formats: those named (a file named twice is formatted once; not resolved, so a
    symlink loop is that file's own error), else every record the repository holds."""
    from kbtools.check.load import discover

    if paths:
        return list(dict.fromkeys(Path(os.path.abspath(p)) for p in paths if p.suffix == ".md"))
    found, _ = discover(settings, registry)
    return [settings.root / rel for rel in found]
