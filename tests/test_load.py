"""Loading records: every malformed file is one error at its file and line, exit 1, no traceback."""

import pytest

GOOD = "---\nid: src-a\ntype: source\nname: A\nstatus: draft\nconfidence: 0.5\nupdated: 2026-11-29\nurl: https://example.org/a\nkind: docs\npublisher: P\n---\nBody\n"


def only(result, code):
    found = result.find(code)
    assert result.exit_code == 1, result.out
    assert found, f"{code} not in:\n{result.out}"
    return found


def test_clean_record_checks_clean(kb):
    kb.write("records/sources/src-a.md", GOOD)
    result = kb.check()
    assert result.exit_code == 0
    # a lone source nobody cites is only a warning
    assert result.codes() == ["KB307"]


@pytest.mark.parametrize(
    "name, content, code, line, col",
    [
        ("non-utf8", b"---\nid: x\nname: caf\xe9\n---\n", "KB100", 3, 10),
        ("empty", b"", "KB101", 1, 1),
        ("whitespace only", b"  \n\n", "KB101", 1, 1),
        ("no fence", b"id: x\n", "KB102", 1, 1),
        ("unclosed fence", b"---\nid: x\ntype: source\n", "KB103", 1, 1),
        ("tab indentation", b"---\nid: x\n\ttype: source\n---\n", "KB104", 3, 1),
        ("unclosed quote", b'---\nid: x\nname: "abc\n---\n', "KB104", 4, 1),
        ("duplicate key", b"---\nid: x\nname: a\nname: b\n---\n", "KB105", 4, 1),
        ("nested duplicate key", b"---\nid: x\nm:\n  a: 1\n  a: 2\n---\n", "KB105", 5, 3),
        ("list frontmatter", b"---\n- a\n- b\n---\n", "KB106", 2, 1),
        ("scalar frontmatter", b"---\njust text\n---\n", "KB106", 2, 1),
        ("empty frontmatter", b"---\n---\nbody\n", "KB106", 2, 1),
    ],
)
def test_malformed_files(kb, name, content, code, line, col):
    kb.write("records/sources/x.md", content)
    result = kb.check()
    found = only(result, code)
    assert found[0].startswith(f"records/sources/x.md:{line}:{col}: error {code} "), found
    assert result.err == ""


def test_id_must_equal_file_stem(kb):
    kb.write("records/sources/src-a.md", GOOD.replace("id: src-a", "id: src-b"))
    found = only(kb.check(), "KB107")
    assert found == [
        "records/sources/src-a.md:2:1: error KB107 id 'src-b' does not match the file name 'src-a' "
        "(hint: rename the file to src-b.md or set id: src-a)"
    ]


def test_id_must_be_a_slug(kb):
    kb.write("records/sources/Src_A.md", GOOD.replace("id: src-a", "id: Src_A"))
    result = kb.check()
    assert only(result, "KB108")[0].startswith("records/sources/Src_A.md:1:1: error KB108 ")
    # the schema's pattern says it at the id's own line too
    assert any(l.startswith("records/sources/Src_A.md:2:1: error KB200 id:") for l in result.lines)


def test_type_must_match_directory(kb):
    kb.write("records/sources/src-a.md", GOOD.replace("type: source", "type: engine"))
    found = only(kb.check(), "KB109")
    assert found == [
        "records/sources/src-a.md:3:1: error KB109 type 'engine' does not match directory 'sources/' (type 'source')"
    ]


def test_markdown_in_unknown_directory(kb):
    kb.write("records/widgets/x.md", GOOD)
    found = only(kb.check(), "KB110")
    assert found[0].startswith("records/widgets/x.md:1:1: error KB110 'widgets/' is not a record directory")


def test_markdown_directly_under_records(kb):
    kb.write("records/x.md", GOOD)
    assert only(kb.check(), "KB110")


def test_alias_bomb_is_refused_quickly(kb):
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 9):
        bomb += f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 10) + "]\n"
    bomb += "---\n"
    kb.write("records/sources/x.md", bomb)
    assert only(kb.check(), "KB111")


def test_named_path_that_is_not_a_record(kb):
    kb.write("records/sources/src-a.md", GOOD)
    result = kb.check(str(kb.root / "nothing-here.md"))
    assert only(result, "KB112")


def test_windows_line_endings_and_bom_load(kb):
    kb.write("records/sources/src-a.md", ("\ufeff" + GOOD).replace("\n", "\r\n").encode("utf-8"))
    assert kb.check().exit_code == 0


def test_dates_are_real_dates(kb):
    kb.write("records/sources/src-a.md", GOOD.replace("2026-11-29", "2026-02-30"))
    found = only(kb.check(), "KB200")
    assert found == [
        "records/sources/src-a.md:7:1: error KB200 updated: '2026-02-30' is not a date: write a day that the calendar "
        "has (YYYY-MM-DD), a month (YYYY-MM) or a year (YYYY)"
    ]
