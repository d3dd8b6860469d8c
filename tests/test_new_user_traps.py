"""Traps a new user met trying kb from scratch (issue 29): typos that answered nothing, names kb would not
take, exit codes that disagreed with README, help that did not say what an option does, an export table
without its labels."""

import sqlite3

import pytest
from conftest import REPO, run_kb


def kb(*args, cwd=None):
    return run_kb("--root", str(REPO), *args, cwd=cwd)


@pytest.mark.parametrize(
    "query, words",
    [
        ("type:modle", "type is never 'modle' (did you mean model?)"),
        ("status:verifed", "status is never 'verifed' (did you mean verified?); it is one of: contested, deprecated"),
        (
            "memory_bandwith>1 TB/s",
            "unknown field 'memory_bandwith' in 'memory_bandwith>1 TB/s' (did you mean memory_bandwidth",
        ),
        ("kind:serving-engin", "no record has kind 'serving-engin' (did you mean serving-engine?)"),
    ],
)
def test_a_query_that_no_record_could_answer_is_a_usage_error_with_a_suggestion(query, words):
    done = kb("query", query)
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert done.stdout == ""


@pytest.mark.slow
def test_an_alias_or_a_name_names_a_record_wherever_an_id_is_accepted():
    """nvidia-h200-sxm lists H200 among its aliases: kb explain h200 finds it, in any case; a misspelt id is
    answered with the ids it is close to."""
    explained = kb("explain", "h200")
    assert explained.returncode == 0, explained.stderr
    assert explained.stdout.startswith("accelerators/nvidia-h200-sxm (records/accelerators/nvidia-h200-sxm.md)")
    assert kb("explain", "H200.memory_bandwidth").stdout.startswith("accelerators/nvidia-h200-sxm.memory_bandwidth =")
    planned = kb("plan", "workloads/mooncake-fast25-llama3-70b-8k-a800", "accelerator=h200", "--format", "json")
    assert planned.returncode == 0 and '"accelerator": "accelerators/nvidia-h200-sxm"' in planned.stdout
    missing = kb("explain", "nvidia-h2000")
    assert missing.returncode == 2  # a usage error, as README says of them all
    assert "no record 'nvidia-h2000' (did you mean" in missing.stderr and "nvidia-h20" in missing.stderr


def test_kb_new_refusals_are_usage_errors(tmp_path):
    done = kb("new", "acelerator", "--name", "X")
    assert done.returncode == 2, done.stderr


def test_help_says_what_each_export_and_query_option_does():
    export = " ".join(kb("export", "--help").stdout.split())  # argparse wraps where it likes
    assert "--sqlite FILE an SQLite database" in export and "--json FILE one JSON document" in export
    assert "--frontmatter DIR one YAML file per record" in export
    query = " ".join(kb("query", "--help").stdout.split())
    for operator in ("'!='", "'<='", "'>='", "to:DIR/ID keeps the records", "FIELD.low"):
        assert operator in query, operator


def test_the_costs_table_has_labels_and_one_spelling_of_a_plain_number(tmp_path):
    out = tmp_path / "kb.sqlite"
    assert kb("export", "--sqlite", str(out)).returncode == 0
    db = sqlite3.connect(out)
    label = db.execute(
        "SELECT label FROM costs WHERE key = 'flops/eng-profile-kv-tiering-moves-flops-to-bytes' AND cost = 'hit_path_bytes'"
    ).fetchone()
    assert label == ("KV bytes a prefix hit reads",)
    units = {u for (u,) in db.execute("SELECT DISTINCT unit FROM costs WHERE unit IN ('', '1')")}
    assert units == {"1"}


@pytest.mark.browser
def test_the_graph_and_the_search_box_work_or_say_why_from_file(kb):
    """Opened from file:// (a double-click on site/_build/index.html), the graph page draws: its data is in
    the page, since such a page may not fetch a file. Search cannot load its index there, and says to run
    kb serve."""
    from site_support import browser

    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n")
    assert kb.run("build").exit_code == 0
    site = kb.root / "site/_build"
    with browser() as chromium:
        page = chromium.new_context().new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((site / "graph.html").as_uri())
        page.wait_for_selector(".graph-legend span")  # drawn: one legend entry per type
        assert errors == []
        page.goto((site / "index.html").as_uri())
        page.fill("form.search input", "engine")
        page.wait_for_selector("form.search .search-results p")
        assert "run kb serve" in page.inner_text("form.search .search-results")


def test_one_of_a_thing_is_counted_in_the_singular(kb, tmp_path):
    """With one record, every summary kb prints says "1 record", "1 error", "1 record page", never "1 records"."""
    kb.source()
    check = kb.check()
    assert check.out.splitlines()[-1] == "checked 1 record: 0 errors, 1 warning", check.out  # KB307: cited by none
    build = kb.run("build", "--no-search", "--out", str(tmp_path / "site"))
    assert build.exit_code == 0 and build.out == f"built 1 record page into {tmp_path / 'site'}\n", build.out
    assert "<h2>1 record</h2>" in (tmp_path / "site" / "index.html").read_text()
    fmt = kb.run("fmt", "--check")
    assert fmt.out.splitlines()[-1].startswith("1 record: 1 would change"), fmt.out
    assert kb.run("query", "type:source").out.splitlines()[-1] == "1 record"
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]] [[nowhere]]\n")  # one dangling link
    one = kb.check()
    errors = [line for line in one.lines if " error " in line]
    assert len(errors) == 1 and " KB302 " in errors[0], one.out
    assert one.out.splitlines()[-1].startswith("checked 2 records: 1 error, "), one.out


def test_kb_export_frontmatter_gives_a_validator_one_yaml_file_per_record(kb, tmp_path):
    """check-jsonschema cannot read a record's Markdown; kb export --frontmatter DIR writes each record's
    frontmatter as DIR/<dir>/<id>.yaml, which it validates against the record's schema as it is (a misspelt
    field fails). A second export replaces the first whole; a directory holding the user's files is refused
    and left as it was."""
    import subprocess
    import sys
    from pathlib import Path

    check_jsonschema = Path(sys.executable).parent / "check-jsonschema"
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[src-a]]\n")
    out = tmp_path / "frontmatter"
    done = kb.run("export", "--frontmatter", str(out))
    assert done.exit_code == 0 and "wrote the frontmatter of 2 records into" in done.out, done.out + done.err
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml"))
    assert written == ["engines/e.yaml", "sources/src-a.yaml"]
    assert (out / "engines/e.yaml").read_text().startswith("# records/engines/e.md: its frontmatter as kb checked it")

    def validate(schema, *files):
        return subprocess.run(
            [str(check_jsonschema), "--schemafile", str(kb.root / "schema" / schema), *map(str, files)],
            capture_output=True,
            text=True,
        )

    assert validate("engine.schema.json", out / "engines/e.yaml").returncode == 0
    assert validate("source.schema.json", out / "sources/src-a.yaml").returncode == 0

    kb.record("engines", "e", "engine", "kind: serving-engine\nvendr: x\n", body="[[src-a]]\n")
    (kb.root / "records/sources/src-a.md").unlink()  # gone from the corpus: gone from the next export
    assert kb.run("export", "--frontmatter", str(out)).exit_code == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml")) == ["engines/e.yaml"]
    misspelt = validate("engine.schema.json", out / "engines/e.yaml")
    assert misspelt.returncode == 1 and "vendr" in misspelt.stdout + misspelt.stderr, misspelt.stdout

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes\n")
    refused = kb.run("export", "--frontmatter", str(mine))
    assert refused.exit_code == 2 and refused.err.startswith("kb export: --frontmatter "), refused.err
    assert "holds files kb did not write (notes.txt)" in refused.err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"] and (mine / "notes.txt").read_text() == "my notes\n"
