"""`kb mv DIR/ID [NEWDIR/]NEWID`: rename a record and rewrite everything that names it, all or nothing.

What names a record: a typed reference or a cost input in frontmatter, a `[[wikilink]]` in a body,
a `dir/id.field` or `field[id]` inside an `{{ inline value }}`, and a hardware parameter's id in
`param(x, 'id')` of a formula. Each is rewritten in place, in the form it was written (a bare id
stays bare), so comments, quoting and layout are kept byte for byte.

All or nothing (kbtools.authoring.journal): a kb killed at any point leaves, after the next kb command,
every file as it was or every file moved; an edit saved meanwhile is never lost.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from kbtools.atomic import ChangedMeanwhile, check_inside, remove_stale_temporaries, writers_lock
from kbtools.authoring.journal import Rewrite, recover
from kbtools.authoring.new import AuthoringError, article
from kbtools.check.load import MAX_RECORD_BYTES
from kbtools.corpus import Corpus, Record, Settings
from kbtools.fieldwalk import iter_references
from kbtools.files import digest, read_regular_file, walk
from kbtools.ids import id_problem
from kbtools.index import QUALIFIED, CorpusIndex, no_record
from kbtools.lang.markdown import scan_body
from kbtools.state import StateUnavailable


@dataclass
class Edit:
    line: int  # 1-based, in the file
    column: int  # 1-based: where `old` starts
    old: str
    new: str
    what: str  # the field or "body", for the report


@dataclass
class Move:
    source: Record
    new_dir: str
    new_id: str
    new_type: str
    edits: dict[str, list[Edit]] = field(default_factory=lambda: defaultdict(list))  # rel path -> edits

    @property
    def new_key(self) -> str:
        return f"{self.new_dir}/{self.new_id}"

    @property
    def new_path(self) -> str:
        return f"{Path(self.source.path).parent.parent.as_posix()}/{self.new_dir}/{self.new_id}.md"

    def named(self, target: str) -> str:
        """The new name in the form the old one was written: `dir/id` stays qualified, a bare id bare."""
        return self.new_key if "/" in target else self.new_id


def plan_move(corpus: Corpus, what: str, to: str) -> Move:
    index = corpus.index
    record, candidates, close = index.named(what)
    if record is None:
        raise AuthoringError(no_record(what, candidates, close))
    new_dir, _, new_id = to.rpartition("/")
    new_dir = new_dir or record.dir
    problem = id_problem(new_id)
    if problem:
        raise AuthoringError(f"'{new_id}' is not a valid id: {problem}")
    new_type = corpus.registry.by_dir(new_dir)
    if new_type is None:
        raise AuthoringError(f"no record type keeps its records in {new_dir}/ (x-kb-dir of a schema)")
    if (new_dir, new_id) == (record.dir, record.id):
        raise AuthoringError(f"{record.key} is already called that")
    taken = index.by_id.get(new_id, [])
    if any(r is not record for r in taken):
        raise AuthoringError(f"id '{new_id}' is taken by {taken[0].path}; ids are unique across the repository")
    check_inside(corpus.settings.root, corpus.settings.records_path / new_dir)  # not through a link out
    if (corpus.settings.records_path / new_dir / f"{new_id}.md").exists():
        raise AuthoringError(f"{corpus.settings.records_dir}/{new_dir}/{new_id}.md exists")
    unread = sorted({d.path for d in corpus.diagnostics if d.code.startswith("KB1") and d.path.endswith(".md")})
    if unread:
        raise AuthoringError(
            f"kb cannot read every record ({', '.join(unread[:3])}{' …' if len(unread) > 3 else ''}), so it cannot "
            "see every link to rewrite: fix them first (kb check)"
        )
    for schema in sorted(corpus.settings.schema_path.glob("*.json")):
        text = schema.read_text(encoding="utf-8")
        if re.search(rf"""["']{re.escape(record.id)}["']""", text):
            raise AuthoringError(
                f"{schema.relative_to(corpus.settings.root)} names '{record.id}'; a schema is not rewritten by kb mv: "
                "change it by hand first"
            )
    if new_type.name != record.type:
        errors = list(new_type.validator.iter_errors({**record.data, "type": new_type.name}))
        if errors:
            raise AuthoringError(
                f"{record.path} is not a valid {new_type.name} ({errors[0].message}); kb mv moves a record to another "
                "type only when its fields are that type's"
            )
    move = Move(record, new_dir, new_id, new_type.name)
    dirs = {t.dir for t in corpus.registry.types.values()}
    for other in corpus.records.values():
        _references(move, other, corpus, index, dirs)
        _body(move, other, index)
        _formulas(move, other, corpus)
    _own(move, corpus)
    return move


def _points_at(move: Move, index: CorpusIndex[Record], target: str) -> bool:
    found, candidates = index.resolve(target)
    if found is None and move.source in candidates:
        raise AuthoringError(
            f"the link '{target}' is ambiguous ({len(candidates)} records are called that); fix it first"
        )
    return found is move.source


def _references(move: Move, record: Record, corpus: Corpus, index: CorpusIndex[Record], dirs: set[str]) -> None:
    record_type = corpus.registry.types.get(record.type or "")
    if record_type is None:
        return
    for ref in iter_references(record, record_type.plan, dirs):
        if not _points_at(move, index, ref.value):
            continue
        if ref.types and move.new_type not in ref.types:
            line, _ = record.value_position(ref.path)
            raise AuthoringError(
                f"{record.path}:{line}: {ref.field} must name {' or '.join(ref.types)}, not {article(move.new_type)} "
                f"{move.new_type}; "
                "kb mv changes no record's meaning"
            )
        if "/" in ref.value and QUALIFIED.match(ref.value) is None:
            continue
        line, column = record.value_position(ref.path)
        move.edits[record.path].append(Edit(line, column, ref.value, move.named(ref.value), ref.field))


def _body(move: Move, record: Record, index: CorpusIndex[Record]) -> None:
    scan = scan_body(record.body)
    for link in scan.links:
        if _points_at(move, index, link.target):
            move.edits[record.path].append(
                Edit(record.body_line + link.line, link.column, link.target, move.named(link.target), "body")
            )
    for span in scan.values:
        for match in re.finditer(r"[a-z0-9][a-z0-9_/-]*", span.content):
            target = match.group(0)
            before = span.content[: match.start()]
            qualified = "/" in target and QUALIFIED.match(target) is not None
            row = before.rstrip().endswith("[")
            if not (qualified or row) or not _points_at(move, index, target):
                continue
            # the column of the name inside the {{ }}: the span's column is that of its opening braces
            move.edits[record.path].append(
                Edit(record.body_line + span.line, span.column + 2 + match.start(), target, move.named(target), "body")
            )


_PARAM = re.compile(r"""param\(\s*[^,()]+,\s*(['"])([a-z0-9-]+)\1\s*\)""")


def _formulas(move: Move, record: Record, corpus: Corpus) -> None:
    """`param(x, 'id')` names a parameter record by its bare id, inside a formula's text."""
    if not corpus.registry.has_role(move.source.type, "parameter"):
        return
    lines = _lines(corpus, record)
    for number, line in enumerate(lines[: record.body_line - 1], 1):
        for match in _PARAM.finditer(line):
            if match.group(2) == move.source.id:
                move.edits[record.path].append(Edit(number, match.start(2) + 1, match.group(2), move.new_id, "formula"))


def _own(move: Move, corpus: Corpus) -> None:
    record = move.source
    line, column = record.value_position(("id",))
    if "id" in record.data:
        move.edits[record.path].append(Edit(line, column, record.id, move.new_id, "id"))
    if move.new_type != record.type and "type" in record.data:
        line, column = record.value_position(("type",))
        move.edits[record.path].append(Edit(line, column, str(record.data["type"]), move.new_type, "type"))


def _lines(corpus: Corpus, record: Record) -> list[str]:
    return (corpus.settings.root / record.path).read_text(encoding="utf-8").split("\n")


def mentions(settings: Settings, move: Move) -> list[tuple[str, int, int]]:
    """Where the old id still stands after the move, as a word, in text that names no record (code, prose,
    notes): (file, line, column). kb leaves such text as written; the user should see it."""
    word = re.compile(rf"(?<![\w-]){re.escape(move.source.id)}(?![\w-])")
    out: list[tuple[str, int, int]] = []
    found = [
        entry.path
        for _inner, _subdirs, names in walk(str(settings.records_path))
        for entry in names
        if entry.name.endswith(".md")
    ]
    for path in sorted(map(Path, found)):
        try:  # a regular file only, as the check reads records: never a FIFO or a device
            text = read_regular_file(path, MAX_RECORD_BYTES)[0].decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        rel = path.relative_to(settings.root).as_posix()
        for number, line in enumerate(text.split("\n"), 1):
            out.extend((rel, number, m.start() + 1) for m in word.finditer(line))
    return out


def rewritten(text: str, edits: list[Edit], rel: str) -> str:
    """The file's text with every edit made, each checked to stand where it was found."""
    lines = text.split("\n")
    for edit in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        line = lines[edit.line - 1] if 0 < edit.line <= len(lines) else ""
        start = edit.column - 1
        # a quoted scalar's position is its quote; a wikilink's and a value's are their brackets
        for skip in ('"', "'", "[[", "{{"):
            if line.startswith(skip, start) and not line.startswith(edit.old, start):
                start += len(skip)
        while start < len(line) and line[start] == " " and not line.startswith(edit.old, start):
            start += 1
        if not line.startswith(edit.old, start):
            raise AuthoringError(
                f"{rel}:{edit.line}:{edit.column}: expected '{edit.old}' there; nothing was changed (report this)"
            )
        lines[edit.line - 1] = line[:start] + edit.new + line[start + len(edit.old) :]
    return "\n".join(lines)


def apply_move(settings: Settings, corpus: Corpus, move: Move) -> list[tuple[str, Edit]]:
    """Do the move, all or nothing (kbtools.authoring.journal); the edits made, by file."""
    root = settings.root
    rewrite = Rewrite(root, settings.records_dir, f"{move.source.key} -> {move.new_key}")
    with writers_lock(settings.root, settings.records_path):
        recover(root, settings.records_dir)
        remove_stale_temporaries(settings.records_path)  # a kb killed before its commit point left only these
        for rel, edits in sorted(move.edits.items()):
            record = corpus.records.get(rel[len(settings.records_dir) + 1 : -3])
            raw = (root / rel).read_bytes()
            if record is not None and record.digest and digest(raw) != record.digest:
                raise ChangedMeanwhile(f"{rel} changed while kb worked on it; nothing was changed (run kb mv again)")
            text = rewritten(raw.decode("utf-8"), edits, rel)
            if rel == move.source.path:
                rewrite.write(move.new_path, text, None)
            else:
                rewrite.write(rel, text, raw)
        source = (root / move.source.path).read_bytes()
        if move.source.path not in move.edits:  # a record with no id line and no self-reference: moved as it is
            rewrite.write(move.new_path, source.decode("utf-8"), None)
        rewrite.delete(move.source.path, source)
        try:
            rewrite.commit()
        except StateUnavailable as exc:  # the journal is what makes a move all or nothing: none, no move
            raise AuthoringError(
                f"kb mv needs its journal in kb's state directory, but {exc}; nothing was changed (kb cache says "
                "where kb keeps its state)"
            ) from exc
        except OSError as exc:
            where = exc.filename or settings.records_dir
            raise AuthoringError(f"cannot write {where}: {exc.strerror or exc}; nothing was changed") from exc
    return [
        (rel, e) for rel, edits in sorted(move.edits.items()) for e in sorted(edits, key=lambda e: (e.line, e.column))
    ]
