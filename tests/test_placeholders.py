"""What kb new makes up for a draft is a placeholder until replaced (KB117): the draft passes kb check, fails
kb check --strict, and a verified record cannot hold one, wherever it sits."""

from conftest import REPO


def test_a_drafted_source_fails_strict_until_each_placeholder_is_replaced(kb):
    kb.source()
    made = kb.run("new", "source", "--name", "Acme X1 datasheet")
    assert made.exit_code == 0, made.err
    path = kb.root / "records/sources/acme-x1-datasheet.md"
    text = path.read_text()
    assert "origin: first-party" in text  # drafted, so the rules its citers meet are not failed unseen
    assert kb.check().exit_code == 0  # a draft passes
    strict = kb.check("--strict")
    found = strict.find("KB117")
    lines = text.splitlines()
    at = {
        next(i for i, line in enumerate(lines, 1) if line.startswith(field))
        for field in ("kind:", "origin:", "publisher:")
    }
    assert {int(f.split(":")[1]) for f in found} == at | {lines.index("---", 1) + 2}, found  # and the body
    assert strict.exit_code == 1
    assert any('publisher: "TODO": a placeholder' in f for f in found)
    front, body = text.split("\n---\n", 1)
    front = (
        front.replace('publisher: "TODO"  # fill in', "publisher: Acme")
        .replace("kind: datasheet  #", "kind: datasheet\n#")
        .replace("origin: first-party  #", "origin: first-party\n#")
    )
    front = "\n".join(line for line in front.splitlines() if not line.startswith("# one of"))
    path.write_text(front + "\nurl: https://example.org/x1\n---\nAcme's datasheet for the X1.\n")
    assert kb.check("--strict").find("KB117") == []


def test_a_placeholder_anywhere_in_the_frontmatter_is_found(kb):
    kb.source()
    kb.record(
        "accelerators",
        "gpu-x",
        "accelerator",
        'vendor: V\nmemory_bandwidth:\n  value: 3 TB/s\n  note: "TBD"\ntdp: "700 W"  # a quantity in W: fill in\n',
        body="[[src-a]]\n",
    )
    found = kb.check().find("KB117")
    assert any("memory_bandwidth.note: 'TBD' is a placeholder" in f for f in found), found
    assert any('tdp: "700 W": a placeholder' in f for f in found), found
    assert all(" warning " in f for f in found)


def test_a_verified_record_cannot_hold_one(kb):
    kb.source()
    path = kb.record("accelerators", "gpu-x", "accelerator", 'vendor: "TODO"\n', body="[[src-a]]\n")
    path.write_text(path.read_text().replace("status: draft", "status: verified"))
    result = kb.check()
    found = result.find("KB117")
    assert found and " error KB117 " in found[0] and "a verified record cannot hold one" in found[0], found
    assert result.exit_code == 1


def test_this_repository_has_none():
    from conftest import run_kb

    done = run_kb("--root", str(REPO), "check", "--strict", "--format", "json")
    assert '"KB117"' not in done.stdout
