"""A required field can say it is unknown, with a reason: the record is incomplete, not refused."""

from __future__ import annotations


def engine(kb, fields, body="[[src-a]] [[e]]\n"):
    kb.source()
    kb.record("engines", "e", "engine", "kind: serving-engine\n", body="[[x]]\n")
    return kb.record("engines", "x", "engine", fields, body=body)


def test_a_required_field_said_to_be_unknown_is_not_an_error(kb):
    engine(kb, "unknown:\n  kind: the project's README does not say whether it serves or only caches\n")
    result = kb.check("--strict")
    assert result.exit_code == 0 and not result.lines, result.lines


def test_without_the_reason_it_is_still_missing(kb):
    engine(kb, "repo: https://github.com/org/x\n")
    assert [l for l in kb.check().find("KB202") if "records/engines/x.md" in l and "'kind'" in l]


def test_an_empty_reason_is_no_reason(kb):
    engine(kb, "unknown:\n  kind: ''\n")
    codes = kb.check().codes()
    assert "KB202" in codes and "KB200" in codes  # kind still missing; the empty reason breaks the schema


def test_a_field_both_given_and_unknown_is_an_error(kb):
    path = engine(kb, "kind: serving-engine\nunknown:\n  kind: not sure\n")
    found = kb.check().find("KB203")
    lines = path.read_text().splitlines()
    line, given = lines.index("  kind: not sure") + 1, lines.index("kind: serving-engine") + 1
    assert found == [
        f"records/engines/x.md:{line}:3: error KB203 unknown.kind: kind is given (line {given}) and also said "
        "to be unknown; keep one"
    ]


def test_an_unknown_entry_must_name_a_field_of_the_type(kb):
    engine(kb, "kind: serving-engine\nunknown:\n  licence: not stated\n")
    found = kb.check().find("KB201")
    assert (
        len(found) == 1
        and "unknown.licence: 'licence' is not a field of type 'engine' (did you mean 'license'?)" in found[0]
    )


def test_the_site_shows_the_record_as_incomplete_with_the_reason(kb):
    engine(kb, "unknown:\n  kind: the project's README does not say whether it serves or only caches\n")
    result = kb.run("build", "--no-search")
    assert result.exit_code == 0, result.err
    page = (kb.root / "site" / "_build" / "engines" / "x.html").read_text()
    assert "Incomplete." in page and "<code>kind</code>: the project&#39;s README does not say" in page
