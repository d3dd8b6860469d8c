"""The command line: argument parsing and output only; the work is in the stages."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kbtools.corpus import Corpus, Settings
from kbtools.diagnostics import Diagnostic, UsageError
from kbtools.outputs.report import counted
from kbtools.version import __version__

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kb", description="Check and publish the LLM-inference cost knowledge base.")
    parser.add_argument("--version", action="version", version=f"kb {__version__}")
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="no progress bars (they only show on a terminal anyway)"
    )
    parser.add_argument(
        "--root", type=Path, help="repository root (default: nearest directory with records/ and schema/)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # -q is accepted after the command too (kb check -q); SUPPRESS keeps a -q given before it
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no progress bars (they only show on a terminal anyway)",
    )

    init = sub.add_parser(
        "init", parents=[common], help="start a new knowledge base that passes kb check and kb build at once"
    )
    init.add_argument("directory", nargs="?", type=Path, default=Path("."), metavar="DIR", help="(default: .)")
    init.add_argument(
        "--types",
        choices=["minimal", "inference-cost"],
        default="minimal",
        help="the starter schemas: minimal (envelope, source, one example type) or this repository's inference-cost types",
    )
    init.add_argument("--title", help="the site's name (default: from the directory's name)")
    init.add_argument(
        "--existing",
        action="store_true",
        help="write into a non-empty directory: only the files it lacks, never replacing one",
    )
    init.set_defaults(handler=run_init, needs_repository=False)

    check = sub.add_parser("check", parents=[common], help="validate records, resolve links, recompute derived figures")
    check.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="report on these files only (the whole corpus is still resolved)",
    )
    check.add_argument("--format", choices=["text", "json", "github", "sarif"], default="text")
    check.add_argument("--strict", action="store_true", help="warnings fail the check too")
    check.add_argument(
        "--no-cache",
        action="store_true",
        help="ignore and do not write the cache in kb's state directory (a full, cold check)",
    )
    check.add_argument(
        "--since", metavar="REV", help="also report prose still quoting a figure changed since this git revision"
    )
    check.set_defaults(handler=run_check)

    build = sub.add_parser("build", parents=[common], help="build the static site from the checked records")
    build.add_argument("--out", type=Path, help="output directory (default: site/_build)")
    build.add_argument(
        "--force", action="store_true", help="build even when kb check finds errors (they are shown on their pages)"
    )
    build.add_argument("--no-search", action="store_true", help="skip the Pagefind search index")
    build.set_defaults(handler=run_build)

    new = sub.add_parser(
        "new", parents=[common], help="write a draft record skeleton that passes kb check (never overwrites)"
    )
    new.add_argument("type", help="record type, e.g. accelerator")
    new.add_argument("--name", required=True, help="the record's name; the id is made from it")
    new.add_argument(
        "--source", action="append", default=[], metavar="SOURCE-ID", help="a source it cites (repeatable)"
    )
    new.add_argument("--id", help="the id, when the one made from the name will not do")
    new.add_argument(
        "--force",
        action="store_true",
        help="replace an existing record (atomically); without it kb new never overwrites",
    )
    new.add_argument(
        "--from-config",
        type=Path,
        metavar="PATH",
        help="read the fields from a Hugging Face config.json on disk (types whose schema declares x-kb-from-config)",
    )
    new.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a guided draft: this field's value (a record's id for a reference, comma-separated for a list; "
        "repeatable); kb fills what else the draft needs, marking each value it assumed, so a workload plans at once",
    )
    new.set_defaults(handler=run_new)

    query = sub.add_parser(
        "query",
        parents=[common],
        help="filter records by type, status, fields with units and links",
        description="List the records every FILTER holds for. A filter is FIELD OP VALUE: OP is ':' or '=' "
        "(equal; for a list field, among its items), '!=', '<', '<=', '>' or '>=' (numbers, and quantities in "
        "any unit of the field's dimension: 'memory_bandwidth>=4 TB/s'); FIELD.low or FIELD.high compares one "
        "end of a figure's range over the conditions it rests on ('hit_time.high<1 s'); links-to:DIR/ID "
        "keeps the records that link to that record. An unknown field, type or enum value is an error that "
        "suggests the spelling meant.",
    )
    query.add_argument(
        "filters",
        nargs="*",
        metavar="FILTER",
        help="type:model, status:verified, memory_bandwidth>=4 TB/s, links-to:engines/lmcache ...",
    )
    query.add_argument("--fields", default="", help="extra columns, comma-separated")
    query.add_argument("--format", choices=["text", "json", "csv"], default="text")
    query.set_defaults(handler=run_query)

    export = sub.add_parser(
        "export",
        parents=[common],
        help="write the checked corpus as SQLite, JSON, GraphML or YAML files",
        description="Write the checked corpus for other tools. kb replaces a file only if kb export wrote it.",
    )
    export.add_argument(
        "--sqlite",
        type=Path,
        metavar="FILE",
        help="an SQLite database: a table per record type (typed columns, units in Datasette's metadata written "
        "beside it), `costs` (every cost and for_each row, with its low and high end), `ranges`, `links` and "
        "`diagnostics`; Datasette's metadata goes beside it (kb.sqlite: kb.metadata.json): datasette kb.sqlite "
        "--metadata kb.metadata.json",
    )
    export.add_argument(
        "--json",
        type=Path,
        metavar="FILE",
        help="one JSON document: every record's frontmatter, body and computed values (with their ranges)",
    )
    export.add_argument(
        "--graphml",
        type=Path,
        metavar="FILE",
        help="the link graph as GraphML, for Gephi or yEd: a node per record (type, id, path), an edge per link "
        "(field, line); needs networkx (pip install 'kbtools[graph]')",
    )
    export.add_argument(
        "--frontmatter",
        type=Path,
        metavar="DIR",
        help="one YAML file per record, DIR/<dir>/<id>.yaml: its frontmatter as kb checked it, for a validator "
        "that reads YAML (check-jsonschema --schemafile schema/model.schema.json DIR/models/*.yaml); DIR is "
        "replaced whole, and only when it is empty or kb wrote it",
    )
    export.set_defaults(handler=run_export)

    fmt = sub.add_parser(
        "fmt", parents=[common], help="canonical frontmatter (schema key order), comments and body kept"
    )
    fmt.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="records to format (default: all)")
    fmt.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    fmt.set_defaults(handler=run_fmt)

    serve = sub.add_parser(
        "serve", parents=[common], help="serve the site on 127.0.0.1, rebuilt and reloaded as records change"
    )
    serve.add_argument("--port", type=int, default=8000, help="(default: 8000; 0 picks a free one)")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    serve.add_argument("--out", type=Path, help="output directory (default: site/_build)")
    serve.add_argument("--no-search", action="store_true", help="skip the Pagefind search index")
    serve.set_defaults(handler=run_serve)

    measure = sub.add_parser(
        "measure", parents=[common], help="measure this machine's tier bandwidths and write them as measurement records"
    )
    measure.add_argument(
        "tiers",
        nargs="*",
        metavar="TIER",
        help="memory, file (needs --path), kv (KV-shaped reads, needs --kv-model), gpu (default: all that apply)",
    )
    measure.add_argument(
        "--path", type=Path, help="a directory on the file tier to measure (kb writes one file there, then removes it)"
    )
    measure.add_argument("--kv-model", metavar="DIR/ID", help="the model whose KV bytes per token size the blocks")
    measure.add_argument("--block-tokens", type=int, default=16, help="tokens per KV block (default: 16, vLLM's block)")
    measure.add_argument("--blocks", type=int, default=64, help="blocks in the prefix read (default: 64)")
    measure.add_argument(
        "--max-bytes",
        type=_byte_count,
        default=256 << 20,
        help="the largest buffer or file one measurement uses, in bytes or with a unit like '64 MiB' (default: 256 MiB)",
    )
    measure.add_argument(
        "--max-seconds", type=float, default=20.0, help="the longest one measurement runs (default: 20)"
    )
    measure.add_argument("--repetitions", type=int, default=5, help="repetitions per figure (default: 5)")
    measure.add_argument("--tier", metavar="DIR/ID", help="the storage tier --path is on: the file figures link to it")
    measure.add_argument(
        "--memory-tier", metavar="DIR/ID", help="the storage tier host memory is: its records link to it"
    )
    measure.add_argument("--out", type=Path, help="where the measurement records go (default: records/measurements)")
    measure.set_defaults(handler=run_measure)

    mv = sub.add_parser(
        "mv", parents=[common], help="rename a record and rewrite every reference, link and value naming it"
    )
    mv.add_argument("record", metavar="DIR/ID", help="the record to rename (a bare id when it is unique)")
    mv.add_argument("to", metavar="[NEWDIR/]NEWID", help="its new id, or a new type's directory and id")
    mv.set_defaults(handler=run_mv)

    plan = sub.add_parser(
        "plan",
        parents=[common],
        help="which tier should hold a workload's KV: per tier, fit, TTFT on a hit against recompute, load, "
        "$/Mtoken and J/token, each with its range",
        description="Plan a workload record, or one given as FIELD=VALUE settings (over a record, they change it). "
        "A quantity may be a band LOW:VALUE:HIGH; a reference given several records (engine=lmcache,sglang) is "
        "a choice among them, so every figure is computed for each. Nothing is written.",
    )
    plan.add_argument("asked", nargs="*", metavar="[DIR/ID] [FIELD=VALUE ...]", help="a workload record, and settings")
    plan.add_argument("--format", choices=("text", "json", "csv"), default="text")
    plan.add_argument(
        "--ledger",
        action="store_true",
        help="instead of a plan: every published run the knowledge base holds as a case, kb's prediction for it "
        "and the signed error, (predicted - measured) / measured, with the median |error| and the verdicts",
    )
    plan.add_argument(
        "--explain", action="store_true", help="each figure's formula, the records it rests on and their sources"
    )
    plan.set_defaults(handler=run_plan)

    explain = sub.add_parser(
        "explain", parents=[common], help="show how a value was computed, from which records and sources"
    )
    explain.add_argument(
        "target", metavar="DIR/ID[.FIELD]", help="a record (all its values) or one field or cost of it"
    )
    explain.set_defaults(handler=run_explain)

    cache = sub.add_parser(
        "cache",
        parents=[common],
        help="show kb's own state for each knowledge base (cache, memo, move journal), or prune it",
        description="kb keeps its state for each knowledge base in the user's cache directory "
        "($XDG_CACHE_HOME/kb/repos when $XDG_CACHE_HOME is absolute, else ~/.cache/kb/repos), never in a repository "
        "or a git work tree. `kb cache` lists each state directory: the repository it belongs to, its size, when it "
        "was last used, and whether the repository is gone; when kb keeps no state, it says why. `kb cache prune` "
        "removes the state of the repositories that are gone. kb also does that by itself, a few directories at a "
        "time, at most once a day.",
    )
    cache.add_argument("action", nargs="?", choices=["show", "prune"], default="show", help="(default: show)")
    cache.add_argument(
        "--all",
        action="store_true",
        help="with prune: remove the state of every repository, not only the gone ones (the next kb check in each "
        "is a cold one); a state holding an unfinished kb mv is kept until kb check in its repository finishes it",
    )
    cache.set_defaults(handler=run_cache, needs_repository=False)
    return parser


def _byte_count(text: str) -> int:
    """--max-bytes: a number of bytes, or a size with its unit ('64 MiB', '1GB'), read as kb reads quantities."""
    from kbtools.lang.units import QuantityError, check_dimension, parse_quantity_text

    try:
        size = parse_quantity_text(text, "B")
        check_dimension(size, "B")
    except QuantityError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return int(size.to("B").magnitude)


def run_check(args: argparse.Namespace, settings: Settings) -> int:
    from kbtools.check.run import memo
    from kbtools.outputs.report import summarize

    whole = not (args.no_cache or args.paths or args.since)  # a run whose answer depends on the tree alone
    seen = memo.fingerprint(settings) if whole else None
    known = memo.recall(settings, seen) if seen else None
    if known is not None:  # nothing under records/, no schema, setting or kb changed since that run
        diagnostics, records = known
        return _report(args, diagnostics, summarize(diagnostics, records))

    from kbtools.check.pipeline import checked, select, start_run
    from kbtools.check.stale import changed_since, stale_figures

    run = start_run(settings, use_cache=not args.no_cache, complete=False, scoped=True)
    corpus = checked(run)
    linking_to = lambda key: run.sources_linking_to(corpus, key)  # noqa: E731
    stale = []
    if args.since:
        changed = changed_since(settings, args.since)
        if changed is None:
            print(f"kb check: --since {args.since}: not a git repository, or no such revision", file=sys.stderr)
            return EXIT_USAGE
        stale = stale_figures(corpus, args.since, changed, linking_to)
    elif args.paths and changed_since(settings, "HEAD") is not None:
        # the pre-commit path: the named files against the last commit
        named = [_relative(p, settings) for p in args.paths]
        stale = stale_figures(corpus, "HEAD", [n for n in named if n], linking_to)
    corpus = corpus.with_diagnostics(stale)
    run.close()  # a scoped run reads stored records until here
    diagnostics = select(corpus, args.paths) + _unknown_paths(args.paths, settings)
    if seen is not None:
        memo.keep(settings, seen, diagnostics, len(corpus.records), corpus.dated)
    return _report(args, diagnostics, summarize(diagnostics, len(corpus.records)))


def _report(args: argparse.Namespace, diagnostics: list[Diagnostic], summary: dict[str, int]) -> int:
    from kbtools.outputs.report import FORMATTERS

    sys.stdout.write(FORMATTERS[args.format](diagnostics, summary))
    failing = summary["errors"] or (args.strict and summary["warnings"])
    return EXIT_ERRORS if failing else EXIT_OK


def run_build(args: argparse.Namespace, settings: Settings) -> int:
    from kbtools.check.pipeline import checked_corpus
    from kbtools.outputs.publish import check_output

    out = args.out or settings.build_path
    check_output(out, settings)  # before any work: a refusal costs nothing and changes nothing
    with checked_corpus(settings, use_cache=True, complete=True) as corpus:
        return _build(args, corpus, out)


def _build(args: argparse.Namespace, corpus: Corpus, out: Path) -> int:
    from kbtools.outputs.report import format_text, summarize
    from kbtools.site.build import build_site

    errors = corpus.errors
    if errors and not args.force:
        sys.stdout.write(format_text(sorted(errors, key=Diagnostic.sort_key), summarize(errors, len(corpus.records))))
        print(
            "kb build: refusing to build a corpus with errors (fix them, or pass --force to show them on the pages)",
            file=sys.stderr,
        )
        return EXIT_ERRORS
    try:
        pages, warning = build_site(corpus, out, search=not args.no_search)
    except OSError as exc:  # a full disk, a read-only file system: the site is staged apart, so the old one stands
        _say("build", f"cannot write {exc.filename or out}: {exc.strerror or exc}; the site at {out} is unchanged")
        return EXIT_USAGE
    if warning:
        print(f"kb build: warning: {warning}", file=sys.stderr)
    print(f"built {counted(pages, 'record page')} into {out}")
    return EXIT_OK


def run_init(args: argparse.Namespace) -> int:
    from kbtools.authoring.init import enclosing_base, init

    nested = enclosing_base(args.directory)
    try:
        written, kept = init(args.directory, args.types, args.title, existing=args.existing)
    except OSError as exc:
        print(f"kb init: cannot write {exc.filename or args.directory}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    for rel in written:
        print(f"wrote {rel}")
    for rel in kept:
        print(f"kept {rel} (it exists; kb init never replaces a file)")
    print(
        f"a new knowledge base in {args.directory}: next, kb --root {args.directory} check && kb --root {args.directory} build"
    )
    if nested:  # said last, where it is seen after the list of files
        print(f"kb init: warning: {nested}", file=sys.stderr)
    return EXIT_OK


def run_serve(args: argparse.Namespace, settings: Settings) -> int:
    from kbtools.outputs.publish import check_output
    from kbtools.site.serve import serve

    out = (args.out or settings.build_path).absolute()
    check_output(out, settings)
    try:
        serve(settings, out, args.host, args.port, search=not args.no_search)
    except OSError as exc:  # the port is taken, or the address is not this machine's
        print(f"kb serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def run_measure(args: argparse.Namespace, settings: Settings) -> int:
    from kbtools.authoring.measure import Bounds, Request, measure

    def say(text: str) -> None:
        _say("measure", text)

    request = Request(
        tiers=set(args.tiers),
        path=args.path,
        kv_model=args.kv_model,
        block_tokens=args.block_tokens,
        blocks=args.blocks,
        bounds=Bounds(args.max_bytes, args.max_seconds, args.repetitions),
        out=args.out.absolute() if args.out else None,
        file_tier=args.tier,
        memory_tier=args.memory_tier,
    )
    try:
        run = measure(settings, request, say)
    except OSError as exc:  # the scratch file or the record could not be written: said as measure's own
        say(str(exc))
        return EXIT_USAGE
    for path in run.written:
        print(f"wrote {path.relative_to(settings.root)}")
    for line in run.citations:
        print(line)
    return EXIT_OK


def run_mv(args: argparse.Namespace, settings: Settings) -> int:
    from kbtools.authoring.move import apply_move, mentions, plan_move
    from kbtools.check.pipeline import checked_corpus

    with checked_corpus(settings, use_cache=True, complete=False) as corpus:
        move = plan_move(corpus, args.record, args.to)
        edits = apply_move(settings, corpus, move)
    print(f"moved {move.source.path} -> {move.new_path}")
    for rel, edit in edits:
        shown = move.new_path if rel == move.source.path else rel
        print(f"{shown}:{edit.line}:{edit.column}: {edit.what}: {edit.old} -> {edit.new}")
    files = {rel for rel, _ in edits} - {move.source.path}
    print(f"rewrote {sum(rel != move.source.path for rel, _ in edits)} references in {len(files)} other files")
    for rel, line, column in mentions(settings, move):
        print(f"{rel}:{line}:{column}: note: '{move.source.id}' left as written (it names no record there)")
    return EXIT_OK


def run_new(args: argparse.Namespace, settings: Settings) -> int:
    from kbtools.authoring.new import check_sources, new_record
    from kbtools.check.pipeline import checked_corpus

    with checked_corpus(settings, use_cache=True, complete=False) as corpus:
        check_sources(corpus, args.source)  # an unknown type, a file that exists, a source that is not there: usage
        path, said = new_record(
            settings, corpus, args.type, args.name, args.source, args.id, args.force, args.from_config, args.set
        )
    print(f"wrote {path.relative_to(settings.root).as_posix()} (a draft: fill it in, then kb check)", *said, sep="\n")
    return EXIT_OK


def run_query(args: argparse.Namespace, settings: Settings) -> int:
    from kbtools.check.pipeline import checked_corpus
    from kbtools.outputs.query import format_rows
    from kbtools.outputs.query import run_query as query

    with checked_corpus(settings, use_cache=True, complete=True) as corpus:
        columns, rows = query(corpus, args.filters, [f for f in args.fields.split(",") if f])
    sys.stdout.write(format_rows(columns, rows, args.format))
    return EXIT_OK


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    from kbtools.check.pipeline import checked_corpus
    from kbtools.outputs.export import export

    if not args.sqlite and not args.json and not args.frontmatter and not args.graphml:
        print(
            "kb export: say where: --sqlite FILE, --json FILE, --graphml FILE and/or --frontmatter DIR", file=sys.stderr
        )
        return EXIT_USAGE
    checked = lambda: checked_corpus(settings, use_cache=True, complete=True)  # noqa: E731
    print(export(settings, args.sqlite, args.json, checked, args.frontmatter, args.graphml))
    return EXIT_OK


def run_fmt(args: argparse.Namespace, settings: Settings) -> int:
    from kbtools.atomic import remove_stale_temporaries, writers_lock
    from kbtools.authoring.fmt import files_to_format, format_file
    from kbtools.diagnostics import one_line
    from kbtools.registry import load_registry

    registry = load_registry(settings.schema_path, settings.root)
    with writers_lock(settings.root, settings.records_path):
        if not args.check and settings.records_path.is_dir():
            remove_stale_temporaries(settings.records_path)
        files = files_to_format(args.paths, settings, registry)
        changed = errors = 0
        for path in files:
            result = format_file(path, registry, args.check, settings.records_path)
            shown = one_line(_relative(path, settings) or str(path))
            if result.error:
                errors += 1
                print(f"{shown}:{result.error} (not formatted)", file=sys.stderr)
            elif result.changed:
                changed += 1
                print(f"{shown}: {'would reformat' if args.check else 'reformatted'}")
    unformatted = f", {errors} not formatted" if errors else ""  # said only when some were
    print(f"{counted(len(files), 'record')}: {changed} {'would change' if args.check else 'changed'}{unformatted}")
    return EXIT_ERRORS if errors or (args.check and changed) else EXIT_OK


def run_explain(args: argparse.Namespace, settings: Settings) -> int:
    from kbtools.check.pipeline import checked_corpus
    from kbtools.outputs.explain import explain_target

    with checked_corpus(settings, use_cache=True, complete=True, on_demand=True) as corpus:
        print("\n".join(explain_target(corpus, args.target)))
    return EXIT_OK


def run_plan(args: argparse.Namespace, settings: Settings) -> int:
    from kbtools.check.pipeline import checked_corpus
    from kbtools.outputs.plan import as_csv, as_json, as_text, make_plan, workload

    if args.ledger:
        return _ledger(args, settings)
    base = [a for a in args.asked if "=" not in a]
    if len(base) > 1:
        _say("plan", f"one workload record at most, not {', '.join(base)}")
        return EXIT_USAGE
    with checked_corpus(settings, use_cache=True, complete=True, on_demand=True) as corpus:
        record = workload(corpus, base[0] if base else None, [a for a in args.asked if "=" in a])
        plan = make_plan(corpus, record)
    render = {"json": as_json, "csv": as_csv}.get(args.format)
    print(render(plan) if render else as_text(plan, args.explain), end="")
    for diagnostic in plan.diagnostics:
        _say("plan", diagnostic.message)
    return EXIT_ERRORS if plan.diagnostics else EXIT_OK


def _ledger(args: argparse.Namespace, settings: Settings) -> int:
    from kbtools.check.pipeline import checked_corpus
    from kbtools.outputs.ledger import as_csv, as_json, as_text, ledger

    if args.asked or args.explain:
        raise UsageError("--ledger goes alone: it prints every case, not a plan of one workload")
    with checked_corpus(settings, use_cache=True, complete=True, on_demand=True) as corpus:
        book = ledger(corpus)
    sys.stdout.write({"json": as_json, "csv": as_csv}.get(args.format, as_text)(book))
    return EXIT_OK


def _relative(path: Path, settings: Settings) -> str | None:
    try:
        return path.resolve().relative_to(settings.root).as_posix()
    except (ValueError, OSError, RuntimeError):  # outside the root, or a symlink loop
        try:
            return Path(os.path.abspath(path)).relative_to(settings.root).as_posix()
        except ValueError:
            return None


def _unknown_paths(paths: list[Path], settings: Settings) -> list[Diagnostic]:
    out = []
    for path in paths:
        shown = path.as_posix()
        if not path.exists():
            out.append(Diagnostic.make("KB112", shown, 1, 1, "no such file"))
        elif path.is_file() and path.suffix == ".md":
            try:
                path.resolve().relative_to(settings.records_path.resolve())
            except ValueError:
                out.append(Diagnostic.make("KB112", shown, 1, 1, "not a record: records live at records/<dir>/<id>.md"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from kbtools.progress import configure

    configure(args.quiet)
    if not getattr(args, "needs_repository", True):  # kb init: there is no knowledge base yet
        return _guarded(lambda: args.handler(args), args.command)
    settings = Settings.configured(args.root.resolve()) if args.root else Settings.discover()
    if not settings.schema_path.is_dir():
        print(
            f"kb: no {settings.schema_dir}/ directory at {settings.root} "
            "(run kb inside the knowledge-base repository, pass --root, or start one with kb init)",
            file=sys.stderr,
        )
        from kbtools.outputs.report import format_line

        for problem in settings.config_problems:  # a misspelt `schema =` key may be why
            print(format_line(problem), file=sys.stderr)
        return EXIT_USAGE

    def handle() -> int:
        _finish_moves(settings)
        code = args.handler(args, settings)
        from kbtools.state import sweep

        sweep(settings.root)  # the state of repositories that are gone: now and then, a few at a time
        return code

    return _guarded(handle, args.command)


def _finish_moves(settings: Settings) -> None:
    """A kb mv killed part way is finished, or undone, before anything reads the records (under the
    writers' lock, so never beside a kb mv still at work). Its journal is kb's own state, outside the
    repository: a file a commit carries is never replayed. A journal kb cannot read or will not act on
    is reported here, once, and set aside; kb mv asks the same question (journal.unfinished) before it begins."""
    from kbtools.atomic import LeadsOutside, writers_lock
    from kbtools.authoring.journal import recover, unfinished

    if unfinished(settings.root) is not None:
        try:
            with writers_lock(settings.root, settings.records_path):
                _, message = recover(settings.root, settings.records_dir)
        except LeadsOutside as exc:  # the move's files would be written through the link: left as they are
            message = f"an unfinished kb mv is left as it is: {exc}"
        if message:
            _say("", message)


def run_cache(args: argparse.Namespace) -> int:
    """kb cache [show|prune] [--all]: every state directory of this user's kb, and removing them."""
    from kbtools.outputs.state_report import state_report

    if args.all and args.action != "prune":
        _say("cache", "--all goes with prune: kb cache prune --all")
        return EXIT_USAGE
    root = args.root.resolve() if args.root else Settings.discover().root
    here = root if (root / "schema").is_dir() or args.root else None  # a knowledge base: its own line is marked
    for line in state_report(here, prune=args.action == "prune", every=args.all):
        print(line)
    return EXIT_OK


def _say(command: str, message: object) -> None:
    """A refusal or failure, one line on stderr; control characters from the input shown as escapes, so a
    name or key the user passed (or a config carried) can neither forge a line nor drive the terminal."""
    from kbtools.diagnostics import one_line

    prefix = f"kb {command}: " if command else "kb: "
    print(prefix + one_line(str(message)), file=sys.stderr, flush=True)


def _guarded(handler, command: str) -> int:
    try:
        return handler()
    except KeyboardInterrupt:
        return 130
    except UsageError as exc:  # a refusal no command worded itself: one line, exit 2
        _say(command, exc)
        return EXIT_USAGE
    except BrokenPipeError:  # `kb explain ... | head`: the reader has what it wanted
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except Exception as exc:  # the last line of defence: one diagnostic, never a traceback
        if os.environ.get("KB_DEBUG"):
            raise
        from kbtools.outputs.report import format_line

        print(
            format_line(Diagnostic.make("KB900", "kb", 1, 1, f"internal error: {type(exc).__name__}: {exc}")),
            file=sys.stderr,
        )
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
