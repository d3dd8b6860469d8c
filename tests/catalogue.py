"""The catalogue of bad input: what each case is, what kb must say, and where.

tests/test_bad_input.py runs every case here; docs/bad-input.md is rendered from this
list (`python tests/catalogue.py > docs/bad-input.md`, kept equal by a test), so the
document and the tests cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HEAD = "---\nid: {id}\ntype: {type}\nname: N\nstatus: draft\nconfidence: 0.5\nupdated: 2026-11-29\n"
CITED = "sources: [src-a]\n"


def record(
    id_: str = "x",
    type_: str = "engine",
    extra: str = "kind: serving-engine\n",
    body: str = "Uses [[src-a]].\n",
    cited: bool = True,
) -> str:
    return HEAD.format(id=id_, type=type_) + (CITED if cited else "") + extra + "---\n" + body


def flop(costs: str, inputs: str = "inputs:\n  n: 4 GB\n  bw: 2 GB/s\n", body: str = "[[src-a]]\n") -> str:
    return record("x", "flop", "class: kv_transfer\nbound_by: memory\n" + inputs + "costs:\n" + costs, body)


@dataclass
class Case:
    name: str
    files: dict[str, str | bytes]  # path under the KB root -> content
    code: str | None  # the code kb must report; None: the input is accepted
    path: str = "records/engines/x.md"
    line: int | None = None
    area: str = "file"
    note: str = ""
    seconds: float | None = None  # must finish within this (resource bounds)
    exit_code: int | None = None
    extra: dict = field(default_factory=dict)


def E(name, content, code, line=None, path="records/engines/x.md", area="file", **kw) -> Case:
    files = content if isinstance(content, dict) else {path: content}
    return Case(name, files, code, path, line, area, **kw)


def chain(length: int, cycle: bool = False) -> dict[str, str]:
    """flops/c0 ... flops/c{length-1}, each cost one more than the one before it; with cycle, c0 reads the last."""
    files = {}
    for i in range(length):
        prev = f"flops/c{i - 1}" if i else (f"flops/c{length - 1}" if cycle else None)
        inputs = f"inputs:\n  prev: {prev}\n" if prev else "inputs:\n  base: 1 GB\n"
        formula = "prev.c + '1 GB'" if prev else "base"
        stated = f"    stated: {length} GB\n" if i == length - 1 and not cycle else ""
        body = f"[[src-a]] [[c{i + 1}]]\n" if i + 1 < length else "[[src-a]] [[c0]]\n"
        files[f"records/flops/c{i}.md"] = record(
            f"c{i}",
            "flop",
            "class: kv_transfer\nbound_by: memory\n"
            + inputs
            + f"costs:\n  c:\n    formula: {formula}\n    unit: GB\n"
            + stated,
            body,
        )
    return files


def schema_with(replace_from: str, replace_to: str) -> dict[str, str]:
    """The engine schema with one edit (read from this repository's schema/)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "schema" / "engine.schema.json").read_text()
    assert replace_from in text
    return {
        "schema/engine.schema.json": text.replace(replace_from, replace_to, 1),
        "records/engines/x.md": record(body="[[src-a]]\n"),
    }


nested_block = "---\nid: x\n" + "".join("  " * i + f"k{i}:\n" for i in range(300)) + "---\n"

CASES: list[Case] = [
    # files and frontmatter
    E("bytes that are not UTF-8", b"---\nid: x\nname: caf\xe9\n---\n", "KB100", 3),
    E("an empty file", b"", "KB101", 1),
    E("a file of blank lines", b"\n\n  \n", "KB101", 1),
    E("no opening --- fence", "id: x\n", "KB102", 1),
    E("an opening fence never closed", "---\nid: x\ntype: engine\n", "KB103", 1),
    E("a tab used for indentation", "---\nid: x\n\ttype: engine\n---\n", "KB104", 3),
    E("an unclosed quoted string", '---\nid: x\nname: "abc\n---\n', "KB104", 4),
    E("an unclosed flow list", "---\nid: x\nsources: [a, b\n---\n", "KB104", 4),
    E("a duplicate key", "---\nid: x\nname: a\nname: b\n---\n", "KB105", 4),
    E("a duplicate key inside a nested mapping", "---\nid: x\nm:\n  a: 1\n  a: 2\n---\n", "KB105", 5),
    E("frontmatter that is a list", "---\n- a\n- b\n---\n", "KB106", 2),
    E("frontmatter that is a single value", "---\njust text\n---\n", "KB106", 2),
    E("an empty frontmatter block", "---\n---\nbody\n", "KB106", 2),
    E(
        "a YAML alias bomb (billion laughs)",
        "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(8))
        + "---\n",
        "KB111",
        None,
        seconds=5,
    ),
    E(
        "a flow list nested 10,000 deep",
        "---\nid: x\nk: " + "[" * 10_000 + "]" * 10_000 + "\n---\n",
        "KB104",
        None,
        seconds=5,
    ),
    E("a mapping nested 300 deep", nested_block, "KB111", None, seconds=5),
    E("a 50 MB record", "---\nid: x\n---\n" + "word " * 10_500_000, "KB113", 1, seconds=5),
    E(
        "a Python object tag (!!python/object)",
        "---\nid: x\nk: !!python/object/apply:os.system [echo pwned]\n---\n",
        "KB104",
        3,
    ),
    E("a binary value", "---\nid: x\nk: !!binary aGVsbG8=\n---\n", "KB104", 3),
    E("a NaN figure", "---\nid: x\nk: .nan\n---\n", "KB104", 3),
    E("a YAML merge of a scalar", "---\nid: x\na: &a 1\n<<: *a\n---\n", "KB104", 2),
    E("a mapping used as a key", "---\n? {a: 1}\n: 2\n---\n", "KB104", 2),
    E("an id that is not the file name", record("y"), "KB107", 2),
    E(
        "an id that is not a kebab-case slug",
        {"records/engines/My_Engine.md": record("My_Engine")},
        "KB108",
        1,
        path="records/engines/My_Engine.md",
    ),
    E("an id that is a number", record("42"), "KB108", 2),
    E("an id with a path in it (../)", {"records/engines/x.md": record("../../etc/passwd")}, "KB107", 2),
    E("a type that is not its directory's", record(type_="model"), "KB109", 3),
    E(
        "a record in a directory that is no type",
        {"records/widgets/x.md": record()},
        "KB110",
        1,
        path="records/widgets/x.md",
    ),
    E("a record directly under records/", {"records/x.md": record()}, "KB110", 1, path="records/x.md"),
    E(
        "a record that is a symlink to a file outside records/",
        {"records/engines/x.md": "SYMLINK:/etc/hostname"},
        "KB112",
        1,
    ),
    E("a record that is a FIFO", {"records/engines/x.md": "FIFO:"}, "KB112", 1, seconds=10),
    E(
        "a type directory that is a symlink",
        {"records/real-engines/x.md": record(), "records/engines": "SYMLINK:real-engines"},
        "KB112",
        1,
        path="records/engines",
    ),
    E(
        "a newline in a file name",
        {"records/engines/a\nb.md": record("a")},
        "KB108",
        1,
        path="records/engines/a\\nb.md",
        note="the name is shown escaped, so it cannot forge a second diagnostic line",
    ),
    E("an impossible date", record().replace("2026-11-29", "2026-02-30"), "KB200", 7, area="schema"),
    # schema
    E("a misspelt field", record(extra="kind: serving-engine\nlicence: MIT\n"), "KB201", 10, area="schema"),
    E("a missing required field", record(extra=""), "KB202", 1, area="schema"),
    E("a status outside the enum", record().replace("status: draft", "status: done"), "KB200", 5, area="schema"),
    E("a confidence above 1", record().replace("confidence: 0.5", "confidence: 1.5"), "KB200", 6, area="schema"),
    E(
        "a field of the wrong type",
        record(extra="kind: serving-engine\nlanguages: Python\n"),
        "KB200",
        10,
        area="schema",
    ),
    E("a record that cites no source", record().replace("sources: [src-a]", "sources: []"), "KB200", 8, area="schema"),
    E(
        "a bad value in a nested row",
        record(
            "x",
            "flop",
            "class: kv_transfer\nbound_by: memory\nhardware_parameters:\n"
            "  - parameter: src-a\n    effect: e\n    basis: maybe\n",
        ),
        "KB200",
        14,
        path="records/flops/x.md",
        area="schema",
    ),
    E(
        "a schema file that is not JSON",
        {"schema/engine.schema.json": '{"title": "x",\n  oops\n}\n'},
        "KB210",
        2,
        path="schema/engine.schema.json",
        area="schema",
    ),
    E(
        "a schema without $schema",
        {"schema/engine.schema.json": '{"x-kb-dir": "engines",\n"type": "object"\n}\n'},
        "KB210",
        1,
        path="schema/engine.schema.json",
        area="schema",
    ),
    E(
        "a schema whose x-kb-dir climbs out (../..)",
        schema_with('"x-kb-dir": "engines"', '"x-kb-dir": "../.."'),
        "KB210",
        None,
        path="schema/engine.schema.json",
        area="schema",
    ),
    E(
        "a schema whose x-kb-dir is absolute",
        schema_with('"x-kb-dir": "engines"', '"x-kb-dir": "/tmp/x"'),
        "KB210",
        None,
        path="schema/engine.schema.json",
        area="schema",
    ),
    E(
        "a schema that is a directory",
        {"schema/gadget.schema.json/x": "{}"},
        "KB210",
        1,
        path="schema/gadget.schema.json",
        area="schema",
    ),
    E(
        "a schema that is not a valid JSON Schema",
        {"schema/engine.schema.json": '{"x-kb-dir": "engines",\n"type": "strin"\n}\n'},
        "KB210",
        2,
        path="schema/engine.schema.json",
        area="schema",
    ),
    # links
    E(
        "a reference to a record that does not exist",
        record(extra="kind: serving-engine\nintegrates_with: [nope]\n"),
        "KB300",
        10,
        area="links",
    ),
    E(
        "a reference to a record of the wrong type",
        record(extra="kind: serving-engine\nintegrates_with: [src-a]\n"),
        "KB301",
        10,
        area="links",
    ),
    E("a dangling [[wikilink]]", record(body="[[src-a]] and [[nowhere]]\n"), "KB302", 11, area="links"),
    E("a wikilink climbing out with ../", record(body="[[src-a]] [[../../etc/passwd]]\n"), "KB302", 11, area="links"),
    E("a wikilink with an absolute path", record(body="[[src-a]] [[/etc/passwd]]\n"), "KB302", 11, area="links"),
    E(
        "an ambiguous bare [[id]]",
        {
            "records/engines/x.md": record(body="[[src-a]] [[dup]]\n"),
            "records/engines/dup.md": record("dup", body="[[x]]\n"),
            "records/models/dup.md": record("dup", "model", "architecture: dense\nattention: gqa\n"),
        },
        "KB303",
        11,
        area="links",
    ),
    E(
        "the same id in two directories",
        {
            "records/engines/x.md": record(),
            "records/models/x.md": record("x", "model", "architecture: dense\nattention: gqa\n"),
        },
        "KB304",
        2,
        area="links",
    ),
    E("a link to a heading that does not exist", record(body="[[src-a#nothing-here]]\n"), "KB305", 11, area="links"),
    E("a record nothing links to", record(), "KB306", 2, area="links"),
    E(
        "a source nobody cites",
        {"records/sources/src-b.md": record("src-b", "source", "kind: docs\npublisher: P\n", "", cited=False)},
        "KB307",
        2,
        path="records/sources/src-b.md",
        area="links",
    ),
    E("a body with 100,000 links", record(body="[[src-a]] " * 100_000 + "\n"), "KB114", 11, area="links", seconds=10),
    E(
        "9,000 unclosed [[ in one long paragraph",
        record(body="[[src-a]] " + "[[a " * 9_000 + "word " * 30_000 + "\n"),
        None,
        area="links",
        seconds=10,
        note="accepted in linear time: a [[ looks for its ]] on its own line only",
    ),
    E(
        "9,000 unclosed {{ in one long paragraph",
        record(body="[[src-a]] " + "{{a " * 9_000 + "word " * 30_000 + "\n"),
        None,
        area="links",
        seconds=10,
        note="accepted in linear time",
    ),
    E(
        "9,000 unclosed [[ and 4.5 MB of prose",
        record(body="[[src-a]] " + "[[a " * 9_000 + "word " * 900_000 + "\n"),
        "KB115",
        11,
        area="links",
        seconds=10,
    ),
    E(
        "4.9 MB of '![a' (a slow path of the Markdown parser)",
        record(body="![a" * 1_630_000 + "\n"),
        "KB115",
        11,
        area="links",
        seconds=10,
    ),
    E(
        "the same dangling link twice on one line: each at its own column",
        record(body="[[src-a]] [[nope]] and [[nope]]\n"),
        "KB302",
        11,
        area="links",
        extra={"columns": [11, 24]},
    ),
    E(
        "a dangling link inside a list item and a quote: at its column",
        record(body="[[src-a]]\n\n- item [[nope]]\n\n> quoted [[nope]]\n"),
        "KB302",
        13,
        area="links",
        extra={"columns": [8]},
    ),
    E(
        "a link inside a code span or block",
        record(body="[[src-a]] `[[nowhere]]`\n\n```\n[[nowhere]]\n```\n"),
        None,
        area="links",
        note="accepted: code is never a link",
    ),
    # units and quantities
    E(
        "a quantity that is not a number",
        record("x", "accelerator", "vendor: V\nmemory_capacity: lots\n"),
        "KB400",
        10,
        path="records/accelerators/x.md",
        area="units",
    ),
    E(
        "a number with thousands separators",
        record("x", "accelerator", "vendor: V\nmemory_capacity: 1,000 GB\n"),
        "KB400",
        10,
        path="records/accelerators/x.md",
        area="units",
    ),
    E(
        "an unknown unit",
        record("x", "accelerator", "vendor: V\nmemory_bandwidth: 4.8 TBps\n"),
        "KB401",
        10,
        path="records/accelerators/x.md",
        area="units",
    ),
    E(
        "a bandwidth written as 4.8 TB",
        record("x", "accelerator", "vendor: V\nmemory_bandwidth: 4.8 TB\n"),
        "KB402",
        10,
        path="records/accelerators/x.md",
        area="units",
    ),
    E(
        "a figure of 1e308",
        record("x", "accelerator", "vendor: V\ntdp: 1e308 W\n"),
        "KB403",
        10,
        path="records/accelerators/x.md",
        area="units",
    ),
    E(
        "a boolean where a quantity goes",
        record("x", "accelerator", "vendor: V\ntdp: true\n"),
        "KB400",
        10,
        path="records/accelerators/x.md",
        area="units",
    ),
    E(
        "a unit expression pint cannot parse",
        record("x", "accelerator", "vendor: V\ntdp: 4 )W(\n"),
        "KB401",
        10,
        path="records/accelerators/x.md",
        area="units",
    ),
    E(
        "a unit bomb in a quantity (GB/s^(9^9^9))",
        record("x", "accelerator", "vendor: V\nmemory_bandwidth: 4800 GB/s^(9^9^9)\n"),
        "KB401",
        10,
        path="records/accelerators/x.md",
        area="units",
        seconds=5,
    ),
    E(
        "a unit bomb in a cost input",
        flop("  c:\n    formula: n / bw\n    unit: s\n", "inputs:\n  n: 4 GB\n  bw: 2 GB/s^(9^9^9)\n"),
        "KB401",
        13,
        path="records/flops/x.md",
        area="units",
        seconds=5,
    ),
    E(
        "a unit bomb in a cost's unit",
        flop("  c:\n    formula: n / bw\n    unit: s^(9^9^9)\n"),
        "KB401",
        17,
        path="records/flops/x.md",
        area="units",
        seconds=5,
    ),
    E(
        "a unit bomb in a formula's quantity literal",
        flop("  c:\n    formula: \"n / '1 GB/s^(9^9^9)'\"\n    unit: s\n"),
        "KB401",
        16,
        path="records/flops/x.md",
        area="units",
        seconds=5,
    ),
    E(
        "a unit power out of range (s^99)",
        record("x", "accelerator", "vendor: V\ntdp: 4 W*s^99\n"),
        "KB401",
        10,
        path="records/accelerators/x.md",
        area="units",
    ),
    E(
        "a long-form quantity with an unknown unit: reported at its value",
        record("x", "accelerator", "vendor: V\ntdp:\n  basis: measured\n  value: 700 Watts\n"),
        "KB401",
        12,
        path="records/accelerators/x.md",
        area="units",
    ),
    # formulas and recomputation
    E(
        "a stated figure 2x its recomputation",
        flop("  c:\n    formula: n / bw\n    unit: s\n    stated: 4 s\n"),
        "KB500",
        18,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a derived field that disagrees with its inputs",
        record(
            "x",
            "accelerator",
            "vendor: V\nmemory_bus_width: 6144\nmemory_pin_rate: 5 Gb/s\nmemory_bandwidth: 4.8 TB/s\n",
        ),
        "KB500",
        12,
        path="records/accelerators/x.md",
        area="compute",
    ),
    E(
        "__import__('os') in a formula",
        flop("  c:\n    formula: \"__import__('os').system('true')\"\n    unit: s\n"),
        "KB501",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a dunder attribute in a formula",
        flop("  c:\n    formula: n.__class__\n    unit: s\n"),
        "KB501",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a lambda in a formula",
        flop("  c:\n    formula: '(lambda: 1)()'\n    unit: s\n"),
        "KB501",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a comprehension in a formula",
        flop("  c:\n    formula: '[x for x in n]'\n    unit: s\n"),
        "KB501",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "an f-string in a formula",
        flop("  c:\n    formula: f'{n}'\n    unit: s\n"),
        "KB501",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a walrus in a formula",
        flop("  c:\n    formula: (y := n)\n    unit: s\n"),
        "KB501",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a formula 5,000 characters long",
        flop("  c:\n    formula: " + "n + " * 1250 + "n\n    unit: GB\n"),
        "KB501",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "9 ** 9 ** 9 in a formula",
        flop("  c:\n    formula: 9 ** 9 ** 9\n    unit: s\n"),
        "KB507",
        16,
        path="records/flops/x.md",
        area="compute",
        seconds=5,
    ),
    E(
        "a name that is no input, cost or field",
        flop("  c:\n    formula: n / bandwidth\n    unit: s\n"),
        "KB502",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "GB added to GB/s",
        flop("  c:\n    formula: n + bw\n    unit: GB\n"),
        "KB503",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a result in the wrong unit",
        flop("  c:\n    formula: n / bw\n    unit: GB\n"),
        "KB504",
        17,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a division by zero",
        flop("  c:\n    formula: n / bw\n    unit: s\n", "inputs:\n  n: 4 GB\n  bw: 0 GB/s\n"),
        "KB505",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a field read from a quantity input (n.value where n: 4 GB)",
        flop("  c:\n    formula: n.value / bw\n    unit: s\n    stated: 2 s\n"),
        "KB502",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a formula nested 60 levels deep",
        flop("  c:\n    formula: " + "(" * 60 + "n" + ")" * 60 + " / bw\n    unit: s\n"),
        None,
        path="records/flops/x.md",
        area="compute",
        note="accepted: parentheses alone add no level",
    ),
    E(
        "a formula 100 operations deep",
        flop("  c:\n    formula: " + "n" + " + n" * 100 + "\n    unit: GB\n"),
        "KB501",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a chain of 400 records, each cost reading the one before",
        chain(400),
        None,
        path="records/flops/c399.md",
        area="compute",
        seconds=30,
        note="accepted, and the last figure is checked: no recursion limit",
    ),
    E(
        "a chain of 400 records whose last stated figure is wrong",
        {
            **chain(400),
            "records/flops/c399.md": chain(400)["records/flops/c399.md"].replace("stated: 400 GB", "stated: 800 GB"),
        },
        "KB500",
        None,
        path="records/flops/c399.md",
        area="compute",
        seconds=30,
    ),
    E(
        "a cycle through 400 records",
        chain(400, cycle=True),
        "KB506",
        None,
        path="records/flops/c0.md",
        area="compute",
        seconds=30,
    ),
    E(
        "two costs that depend on each other",
        flop("  a:\n    formula: b * 2\n    unit: GB\n  b:\n    formula: a / 2\n    unit: GB\n"),
        "KB506",
        None,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "for_each over something that is not a list",
        flop("  c:\n    for_each: {t: n}\n    formula: n / bw\n    unit: s\n"),
        "KB508",
        16,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a stated figure on a for_each table",
        flop("  c:\n    for_each: {t: n}\n    formula: n / bw\n    unit: s\n    stated: 2 s\n"),
        "KB508",
        19,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "an inline value in the wrong unit",
        flop("  c:\n    formula: n / bw\n    unit: s\n", body="[[src-a]] {{ c | GB }}\n"),
        "KB509",
        19,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "an inline value that names nothing",
        flop("  c:\n    formula: n / bw\n    unit: s\n", body="[[src-a]] {{ nothing }}\n"),
        "KB509",
        19,
        path="records/flops/x.md",
        area="compute",
    ),
    E(
        "a hardware parameter carried by a non-quantity field",
        {
            "records/hardware-parameters/x.md": record(
                "x", "hardware_parameter", "dimension: GB/s\ncarried_by: {engine: license}\n", cited=False
            )
        },
        "KB510",
        9,
        path="records/hardware-parameters/x.md",
        area="compute",
    ),
    # command line
    E(
        "a named path that does not exist",
        {"records/engines/x.md": record(body="[[src-a]]\n")},
        "KB112",
        1,
        path="nowhere.md",
        area="cli",
        extra={"args": ["nowhere.md"]},
    ),
]

SITE_CASES = [  # covered by tests/test_site_hostile.py in a real browser
    "<script> in a body",
    "an event attribute (onerror=) in raw HTML",
    "<svg onload> and <svg><script>",
    "a MathML/style mutation-XSS payload",
    "a javascript: link (also mixed case and with an entity-encoded tab)",
    "a data: link and a javascript: image",
    "</script><script> inside a frontmatter string (name, license, list item, cost label)",
    "a Unicode right-to-left override in a name",
    "a javascript: URL in a source record's url",
    "raw <a href=javascript:> and <iframe>",
]


# Beyond kb check's input: where kb writes, concurrent writers, the cache. (area, input, what kb does, the test that shows it)
OTHER_CASES = [
    (
        "build",
        "`kb build --out` naming the repository, records/, schema/, site/, the theme, .git, an ancestor or /",
        "refuses (exit 2), changes nothing; git status and history unchanged",
        "test_build_refuses_to_replace_the_repository_or_its_parts",
    ),
    (
        "build",
        "`--out` naming a symlink, a file, or a directory holding the user's files",
        "refuses (exit 2), changes nothing",
        "test_build_refuses_a_symlink_a_file_and_a_directory_of_the_users",
    ),
    (
        "build",
        "a site kb built, to which the user then added a file",
        "replaced while it holds only what kb's manifest lists; refused once it holds more",
        "test_a_site_kb_built_is_replaced_and_the_users_siblings_are_kept",
    ),
    (
        "build",
        "a sibling named like build debris (`.site.kb-staging-mine`)",
        "kept: only directories carrying kb's staging mark are removed",
        "test_debris_of_a_killed_build_is_removed_but_only_kbs_own",
    ),
    (
        "build",
        "two builds into the same directory at once, 20 times",
        "they take turns under a lock; each publishes a whole site",
        "test_twenty_pairs_of_concurrent_builds_each_publish_a_whole_site",
    ),
    (
        "build",
        "a schema whose x-kb-dir is ../.. or absolute",
        "KB210; no page is ever written outside the site",
        "test_out_of_tree_pages_are_never_written",
    ),
    (
        "build",
        'a record file named `x"><meta http-equiv=refresh ...>.md` under --force',
        "no page, never a link target; nothing breaks out of an href",
        "test_a_file_name_cannot_break_out_of_an_href",
    ),
    ("build", "`--out /`", "a usage error (exit 2), not an internal error", "test_out_slash_is_a_usage_error"),
    (
        "export",
        "`kb export` onto a record, into schema/, or onto a user's JSON file",
        "refuses; replaces only its own earlier exports, those bearing its mark",
        "test_export_never_overwrites_a_users_file_or_a_record",
    ),
    (
        "fmt",
        "a record saved while `kb fmt` works on it",
        "left as saved, with a message; 20 of 20 real races keep the save",
        "test_fmt_never_loses_a_concurrent_save_in_twenty_trials",
    ),
    ("fmt", "a record with mode 0640 and another owner", "mode and owner kept", "test_fmt_keeps_mode_and_owner"),
    (
        "fmt",
        "a directory named x.md, a symlink loop, a FIFO among the paths",
        "each its own error; the other files are formatted",
        "test_fmt_goes_on_past_bad_paths",
    ),
    (
        "new",
        "`kb new --force` over a record saved meanwhile",
        "refuses, record kept",
        "test_new_force_skips_a_record_saved_meanwhile",
    ),
    (
        "cache",
        "a pickle planted as .kb-cache/check.pickle or check.sqlite",
        "never loaded; no code runs",
        "test_a_planted_pickle_is_never_loaded",
    ),
    (
        "cache",
        "a forged cache that hides an error, committed to the repository as .kb-cache/check.sqlite",
        "never read: the cache lives in the user's state directory; the error is reported",
        "test_a_forged_cache_cannot_hide_a_diagnostic",
    ),
    ("cache", "a FIFO as the cache file", "ignored, no hang", "test_a_fifo_as_the_cache_file_does_not_hang"),
    (
        "cache",
        "a same-size edit with the mtime kept (touch -r, cp -p, tar -x)",
        "seen: ctime and inode are compared, as git does",
        "test_a_same_size_edit_with_the_mtime_kept_is_seen",
    ),
    (
        "cache",
        "an edit saved while kb reads the file",
        "seen next run: the stat is taken before the read",
        "test_an_edit_during_the_read_is_seen_next_time",
    ),
    (
        "file",
        "an unreadable record directory and an unreadable schema",
        "KB112 and KB210, not silence or KB900",
        "test_an_unreadable_record_directory_and_schema_are_reported",
    ),
    (
        "query",
        "a unit bomb in a `kb query` filter (GB/s^(9^9^9))",
        "refused at once (exit 2)",
        "test_a_unit_bomb_in_a_query_filter_is_refused_at_once",
    ),
    (
        "cache",
        "runs killed or repeated",
        "no temporaries pile up: SQLite writes in place",
        "test_the_cache_leaves_no_temporaries",
    ),
    ("report", "a file name with a space and a #", "SARIF URIs percent-encoded", "test_sarif_uris_are_percent_encoded"),
    # issue 30: planted and stale state, kills, and every command as hard to break as kb check
    (
        "mv",
        "a journal committed in the repository (.kb-cache/move-journal.json) that deletes an absolute path, renames"
        " over ../, renames a record to .git/hooks/pre-commit, deletes a record, or names a directory",
        "never read, by check, build, query or fmt: kb's journal lives in the user's cache directory; nothing changes",
        "test_move_journal.py::test_a_journal_committed_in_the_repository_is_never_replayed",
    ),
    (
        "mv",
        "a journal in kb's own place naming .git/hooks/pre-commit, records/../, or an absolute path",
        "ignored with a message and removed; nothing changes",
        "test_move_journal.py::test_a_journal_in_kbs_own_place_naming_paths_outside_the_records_is_refused",
    ),
    (
        "mv",
        "`kb mv` killed at each of its steps in turn",
        "after the next kb command, the old corpus or the new one, byte for byte, and no temporary",
        "test_move_journal.py::test_a_kill_at_every_step_leaves_the_old_corpus_or_the_new_after_the_next_command",
    ),
    (
        "mv",
        "an editor's save to a file `kb mv` rewrites, landing at each step of its staging",
        "the move is refused, the save kept, nothing changed",
        "test_move_journal.py::test_an_edit_saved_while_kb_mv_stages_is_never_lost",
    ),
    (
        "mv",
        "`kb mv` killed at each step, then a record it rewrites saved by an editor",
        "the next command finishes or undoes the move around the save; the save is kept",
        "test_move_journal.py::test_an_edit_saved_at_any_step_is_kept",
    ),
    (
        "mv",
        "a move killed after its commit point, then `git stash -u; git checkout .`",
        "not replayed blindly: the digests differ, the move is undone, the corpus is as before",
        "test_move_journal.py::test_after_a_working_tree_reset_a_killed_moves_journal_is_not_replayed_blindly",
    ),
    (
        "mv",
        "a new id with a trailing newline, of 150 characters, or ../x",
        "refused (exit 2) by the one id rule kb applies everywhere; nothing changes",
        "test_move_journal.py::test_an_id_kb_mv_cannot_use_is_refused_and_nothing_changes",
    ),
    (
        "mv",
        "a full disk or a read-only file system under `kb mv`",
        "refused (exit 2) with the system's reason; nothing changes",
        "test_move_journal.py::test_a_full_disk_or_a_read_only_records_directory_is_a_refusal_not_an_internal_error",
    ),
    (
        "fmt",
        "`kb fmt` on a record that is a symlink to a record",
        "the link kept, its target formatted",
        "test_hostile_files.py::test_kb_fmt_on_a_record_that_is_a_symlink_keeps_the_link_and_formats_its_target",
    ),
    (
        "fmt",
        "`kb fmt` on a record that is a symlink to a file outside records/",
        "KB112; the outside file is never written",
        "test_hostile_files.py::test_kb_fmt_never_writes_through_a_link_that_leaves_the_records",
    ),
    (
        "fmt",
        "a type directory that is a symlink within the repository",
        "KB112 under check and fmt; nothing through it is read or written",
        "test_hostile_files.py::test_kb_fmt_does_not_follow_a_type_directory_that_is_a_symlink_within_the_repository",
    ),
    (
        "fmt",
        "a 4.9 MB frontmatter string",
        "formatted on one line, not folded",
        "test_hostile_files.py::test_a_frontmatter_string_of_4_9_mb_is_formatted_on_one_line",
    ),
    (
        "cache",
        "a full disk under `kb check` (the cache cannot be written)",
        "checked all the same; no KB900",
        "test_hostile_files.py::test_a_full_disk_under_kb_check_still_checks",
    ),
    (
        "build",
        "a full disk under `kb build`",
        "refused (exit 2) with the system's reason; the published site is unchanged",
        "test_hostile_files.py::test_a_full_disk_under_kb_build_is_a_clear_refusal",
    ),
    (
        "build",
        "a build killed between making its staging directory and marking it",
        "the empty directory is kb's and the next build removes it",
        "test_hostile_files.py::test_a_build_killed_before_it_marked_its_staging_leaves_nothing_behind",
    ),
    (
        "build",
        "a build killed while the new site takes the old one's place",
        "the old site or the new one, never none: the names are exchanged in one system call (Linux)",
        "test_hostile_files.py::test_a_new_site_takes_the_old_ones_place_in_one_step",
    ),
    (
        "file",
        "a records path that does not exist (a typo in kb.toml)",
        "KB112 naming the path (exit 1); kb build refuses to publish an empty site",
        "test_hostile_files.py::test_a_records_path_that_does_not_exist_is_an_error_naming_it",
    ),
    (
        "file",
        "a repository without records/",
        "KB112 naming the path (exit 1)",
        "test_hostile_files.py::test_a_repository_without_records_is_an_error",
    ),
    (
        "export",
        "`--sqlite` naming a user's SQLite database (accounts.sqlite with a users table)",
        "refused (exit 2): only a database bearing kb's application id is replaced; the file is byte-identical",
        "test_hostile_export.py::test_a_users_sqlite_database_is_refused_and_left_byte_identical",
    ),
    (
        "export",
        "a user's JSON that begins like an export, or a metadata file that begins like kb's",
        "refused (exit 2); every file kept",
        "test_hostile_export.py::test_a_users_json_that_begins_like_an_export_is_refused_and_kept",
    ),
    (
        "export",
        "kb's own earlier SQLite and JSON export",
        "replaced: each carries kb's mark; no temporary left",
        "test_hostile_export.py::test_kbs_own_earlier_export_is_replaced_and_carries_kbs_mark",
    ),
    (
        "export",
        "an export written by a kb before the mark",
        "refused, saying to delete it by hand or choose another path",
        "test_hostile_export.py::test_an_export_by_the_kb_before_the_mark_is_refused_with_what_to_do",
    ),
    (
        "export",
        "`--sqlite X --json X` (also ./X and X, through a symlinked directory, or --json onto the metadata file)",
        "refused (exit 2) before anything is written",
        "test_hostile_export.py::test_one_file_named_for_two_outputs_is_refused_before_anything_is_written",
    ),
    (
        "export",
        "an export killed mid-transaction or at the rename",
        "no -journal file; only kb-marked temporaries, removed by the next export; a user's file named like one kept",
        "test_hostile_export.py::test_a_killed_export_leaves_no_journal_and_the_next_export_removes_its_debris",
    ),
    (
        "new",
        "`--from-config` JSON nested 10,000 deep",
        "refused: nested more than 32 levels deep; nothing written",
        "test_hostile_config.py::test_a_config_nested_ten_thousand_deep_is_refused",
    ),
    (
        "new",
        "`--from-config` layer_types of 120,000 unknown kinds",
        "refused at once: kb reads at most 10,000 layers",
        "test_hostile_config.py::test_layer_types_with_120000_unknown_kinds_answers_at_once",
    ),
    (
        "new",
        "`--from-config` naming a FIFO",
        "refused without blocking: not a regular file but a FIFO",
        "test_hostile_config.py::test_a_fifo_as_config_is_refused_without_blocking",
    ),
    (
        "new",
        "`--from-config` naming a link to /dev/zero",
        "refused unread: not a regular file but a device",
        "test_hostile_config.py::test_a_link_to_dev_zero_as_config_is_refused_without_reading_it",
    ),
    (
        "new",
        "config keys carrying terminal escapes and newlines",
        "listed escaped, one line; at most 50 named",
        "test_hostile_config.py::test_keys_with_escapes_and_newlines_never_reach_the_terminal_raw",
    ),
    (
        "new",
        "a 5,000-character --name or --id",
        "refused before any path is made: an id is at most 100 characters",
        "test_hostile_config.py::test_a_5000_character_name_or_id_is_refused_before_any_path_is_made",
    ),
    (
        "new",
        "a 4,000-digit (or out-of-range) num_hidden_layers",
        "refused naming the key and the allowed range; nothing written",
        "test_hostile_config.py::test_out_of_range_numbers_are_refused_naming_the_key",
    ),
    (
        "new",
        "`--force` over a FIFO planted at the record's path",
        "refused unread; the FIFO left as it is",
        "test_hostile_config.py::test_force_never_reads_a_fifo_planted_as_the_record",
    ),
    (
        "units",
        "a quantity whose number has 4,000 to 5,000 digits",
        "KB403 at the value, the number cut short in the message",
        "test_hostile_numbers.py::test_a_quantity_with_thousands_of_digits_is_out_of_range_at_its_text",
    ),
    (
        "file",
        "a frontmatter number of 4,000+ digits, beyond 1e30, or infinite (.inf, 1.0e+999), also inside a list",
        "KB403 at its line and column naming the field",
        "test_hostile_numbers.py::test_a_yaml_number_without_bounds_is_out_of_range_where_it_is_written",
    ),
    (
        "units",
        "a quantity with 200,000 spaces inside it",
        "read in one pass; KB401 at its text",
        "test_hostile_numbers.py::test_a_quantity_with_a_long_run_of_spaces_is_read_in_one_pass",
    ),
    (
        "compute",
        "`{{ memory_bandwidth ** 64 }}` in a record body",
        "KB509 at the inline value (too large in base units), never a silent infinity",
        "test_hostile_numbers.py::test_an_inline_power_that_overflows_is_reported_where_it_is_asked_for",
    ),
    (
        "compute",
        "the same inline value padded past 300 characters",
        "still found and checked (KB509): a value is sought as far as a formula may run",
        "test_hostile_numbers.py::test_an_inline_value_longer_than_a_link_is_still_checked",
    ),
    (
        "compute",
        "`** 64` nested 2 to 39 deep, in a cost or an inline value",
        "KB507 (a unit power or magnitude past its bound) / KB509",
        "test_hostile_numbers.py::test_powers_nested_within_the_depth_limit_are_bounded",
    ),
    (
        "compute",
        "`** 64` nested 60 to 90 deep",
        "KB501 (nests more than 40 levels), before evaluation",
        "test_hostile_numbers.py::test_powers_nested_past_the_depth_limit_are_refused_before_evaluation",
    ),
    (
        "compute",
        "`n.to('s')`: a call on a quantity",
        "KB501: 'n' is a quantity, not a record, so it has no functions",
        "test_hostile_numbers.py::test_a_call_on_a_quantity_is_refused_as_a_construct",
    ),
    (
        "compute",
        "a cost finite as computed but past a float in its unit (unit: ns^6)",
        "KB507 at the formula, never inf",
        "test_hostile_numbers.py::test_a_figure_that_overflows_in_its_stated_unit_is_a_diagnostic",
    ),
    (
        "compute",
        "a field with 10,000 competing values",
        "each value costs what a plain value does (linear, not quadratic); every value carried into the range",
        "test_hostile_numbers.py::test_ten_thousand_competing_values_are_checked_and_carried",
    ),
    (
        "schema",
        "an x-kb-constraints condition whose argument is a list or an object, a non-boolean present, a null or an empty list",
        "KB210 at the rule's line naming the rule and the argument; the rule is not applied",
        "test_hostile_rules.py::test_a_condition_whose_argument_has_the_wrong_type_is_a_schema_error_at_the_rule",
    ),
    (
        "schema",
        "an x-kb-constraints rule using one of kb's own codes (KB900, KB120, KB540)",
        "KB210: a rule takes two capital letters and three digits kb does not define",
        "test_hostile_rules.py::test_a_rule_may_not_take_one_of_kbs_own_codes",
    ),
    (
        "schema",
        "a schema nested hundreds of levels deep, or 100,000 nested brackets",
        "KB210: the schema nests too deeply to check",
        "test_hostile_rules.py::test_a_schema_nested_too_deeply_to_check_is_a_schema_error",
    ),
    (
        "schema",
        "an x-kb-plausible bound of 1e999 GB, nan GB, a unit of another kind, a bare number, or min above max",
        "KB210 naming the schema, the field and the bound; the range checks nothing",
        "test_hostile_rules.py::test_a_plausible_bound_that_is_no_finite_quantity_of_the_field_is_a_schema_error",
    ),
    (
        "schema",
        "a FIFO or a link to /dev/zero named like a schema, or as kb.toml",
        "KB210 / KB120: not a regular file; never waited on, never skipped",
        "test_hostile_files.py::test_a_schema_or_configuration_that_is_no_regular_file_is_reported_not_waited_on",
    ),
    (
        "init",
        "`kb init --existing` where the settings are [tool.kb] in pyproject.toml",
        "writes no kb.toml and no starter type; kb check counts the same records",
        "test_hostile_rules.py::test_init_existing_keeps_the_settings_of_pyproject_and_checks_the_same_records",
    ),
    (
        "init",
        "`kb init --existing` where .github or schema is a symlink to a directory outside",
        "exit 2 naming the link; nothing written anywhere",
        "test_hostile_rules.py::test_init_never_writes_through_a_symbolic_link",
    ),
    (
        "serve",
        "a NUL (%00) in a request path",
        "400 with a short text, no traceback",
        "test_hostile_site.py::test_serve_answers_a_nul_in_the_path_with_400",
    ),
    (
        "serve",
        "a Host header naming another site (DNS rebinding)",
        "403: kb serve answers only its own name and addresses",
        "test_hostile_site.py::test_serve_answers_only_requests_addressed_to_it",
    ),
    (
        "serve",
        "a client resetting mid-answer, then Ctrl-C",
        "the dropped client ignored; Ctrl-C exits quietly, no traceback",
        "test_hostile_site.py::test_ctrl_c_stops_serve_quietly_after_a_client_dropped_its_connection",
    ),
    (
        "serve",
        "a committed `site/static -> /`",
        "not a theme directory: never published and never watched",
        "test_hostile_site.py::test_serve_does_not_watch_a_theme_directory_that_is_a_link",
    ),
    (
        "theme",
        "a template override reaching for Python (`{{ self.__init__.__globals__… }}`)",
        "Jinja's sandbox on plain data: exit 2 with 'site/templates/home.html:LINE: …'; no command runs",
        "test_hostile_site.py::test_a_template_reaching_for_python_runs_no_command_and_is_a_clear_error",
    ),
    (
        "theme",
        "`{% include %}`, `{% extends %}` or `{% import %}` of a file outside the theme",
        "not found, with the reason; nothing outside the theme is read",
        "test_hostile_site.py::test_a_template_cannot_load_a_file_outside_the_theme",
    ),
    (
        "theme",
        "site/static/env.txt -> /proc/self/environ",
        "never read or published; a warning names the file",
        "test_hostile_site.py::test_a_static_link_to_the_environment_is_not_published",
    ),
    (
        "theme",
        "site/static as a link to a directory holding a private key",
        "not a theme directory: nothing from it published; a warning",
        "test_hostile_site.py::test_a_static_directory_linked_to_a_private_key_is_not_published",
    ),
    (
        "theme",
        "a FIFO in the theme",
        "refused with a warning, never waited on",
        "test_hostile_site.py::test_a_fifo_in_the_theme_is_refused_not_waited_on",
    ),
    (
        "measure",
        "`--max-bytes` of 1 EB (memory figures)",
        "lowered to a quarter of the memory available, said on stderr and in each record",
        "test_hostile_measure.py::test_a_max_bytes_past_the_memory_available_is_lowered_with_a_note",
    ),
    (
        "measure",
        "`--max-bytes` past the free space of --path",
        "the file is at most half the free space, said on stderr and in the record",
        "test_hostile_measure.py::test_a_max_bytes_past_the_free_space_is_lowered_to_half_of_it",
    ),
    (
        "measure",
        "`--max-bytes` 2^64 on this machine",
        "bounded by what the machine has; nothing larger allocated",
        "test_hostile_measure.py::test_the_memory_this_machine_has_bounds_a_2_64_request",
    ),
    (
        "measure",
        "a KV block larger than --max-bytes",
        "exit 2 naming both figures, before anything is allocated",
        "test_hostile_measure.py::test_a_block_larger_than_max_bytes_is_refused_before_anything_is_measured",
    ),
    (
        "measure",
        "SIGTERM or SIGHUP while kb's file exists in --path",
        "the file removed, no record written, kb dies of the signal",
        "test_hostile_measure.py::test_a_stop_signal_while_the_file_exists_removes_it",
    ),
    (
        "measure",
        "a stop while the run's records are written",
        "the records this run created are removed",
        "test_hostile_measure.py::test_an_interrupt_while_the_records_are_written_leaves_none_of_the_run",
    ),
    (
        "measure",
        "a --path with a newline, DEL, a C1 control or non-UTF-8 bytes",
        "written escaped; the records pass kb check --strict",
        "test_hostile_measure.py::test_a_path_with_control_or_undecodable_bytes_is_recorded_escaped",
    ),
    (
        "measure",
        "two runs writing records at the same moment",
        "distinct ids by exclusive create (-2, -3 …); kb check passes",
        "test_hostile_measure.py::test_a_run_writing_while_another_writes_takes_the_next_ids",
    ),
    (
        "measure",
        "two `kb measure` runs started together",
        "both exit 0 with distinct records and names; kb check --strict passes",
        "test_hostile_measure.py::test_two_runs_started_together_both_write_records_that_check",
    ),
    (
        "state",
        "XDG_CACHE_HOME=.cache (relative), then a pulled commit adding .cache/kb/repos/<digest>/move-journal.json that removes a record",
        "the relative value is ignored, as the XDG spec says: state goes to ~/.cache, nothing appears in the checkout, the pulled journal is never read and the record stays",
        "test_state.py::test_a_relative_xdg_cache_home_leaves_nothing_in_the_repository_and_a_pulled_journal_is_never_replayed",
    ),
    (
        "state",
        "XDG_CACHE_HOME inside a git work tree (a home kept in git) or inside the repository",
        "refused: checked without state, nothing written there; kb cache says why",
        "test_state.py::test_a_state_directory_inside_a_git_work_tree_or_the_repository_is_refused_and_kb_cache_says_why",
    ),
    (
        "state",
        "a relative XDG_CACHE_HOME and HOME=''",
        "kb works without state, nothing in the repository; kb cache says why",
        "test_state.py::test_a_relative_xdg_cache_home_with_no_absolute_home_works_without_state",
    ),
    (
        "cache",
        "check-runs.sqlite a symlink to a user's SQLite database (runs table, 100 rows), a dangling link, or a link to a database holding a forged clean answer",
        "never written, created or read through: the database is byte-identical, nothing is created, the forged answer is not believed (KB302 reported)",
        "test_state.py::test_a_link_as_the_memo_is_never_written_created_or_read_through",
    ),
    (
        "mv",
        "`[` x 1,000,000 as the move journal",
        "one line on stderr, said once, set aside as move-journal.json.set-aside, exit 0, no KB900; kb mv then works",
        "test_state.py::test_a_journal_of_a_million_brackets_is_one_clear_message_and_kb_mv_then_works",
    ),
    (
        "mv",
        "a FIFO, a directory or a link to /dev/zero as the move journal",
        "kb check and kb mv alike: one message, set aside unopened (no hang), kb mv goes on",
        "test_state.py::test_a_journal_that_is_no_regular_file_is_treated_alike_by_check_and_mv",
    ),
    (
        "mv",
        "a journal temporary left by a kb mv killed while writing its journal (.move-journal.json.kb-tmp-*)",
        "removed by the next kb mv",
        "test_state.py::test_a_temporary_of_a_kb_mv_killed_while_writing_its_journal_is_removed",
    ),
    (
        "state",
        "12 repositories checked, then deleted",
        "kb cache lists them as gone; the daily sweep or kb cache prune removes their state (and an older kb's directory unused 30 days); prune --all removes every one",
        "test_state.py::test_the_state_of_deleted_repositories_is_shown_and_pruned_and_swept",
    ),
    (
        "cache",
        "a full disk (24 KiB free) holding the cache under kb check",
        "checked as with --no-cache; check.sqlite and its -wal, -shm and -journal are removed, not left holding the space",
        "test_state.py::test_a_cache_that_cannot_be_written_on_a_full_disk_is_removed_not_left_holding_the_space",
    ),
    (
        "plan",
        "`kb plan … gpus=-8` (also gpus=0.5, gpus=0, hit_rate=2, hit_rate=-5, hit_rate=1.5, prefix_tokens=-8192, hit_rate=0.8:0.9:1.2, prefill_efficiency=1.5)",
        "refused (exit 2) before anything is printed, naming the field, the figure and its range",
        "test_physical_ranges.py::test_an_impossible_setting_is_refused_before_anything_is_printed",
    ),
    (
        "plan",
        "`kb plan WORKLOAD hit_rate=1.5` (the newcomer's -241 ms TTFT)",
        "refused (exit 2), nothing printed",
        "test_physical_ranges.py::test_an_impossible_setting_over_a_workload_record_is_refused_too",
    ),
    (
        "plan",
        "`kb plan … prefix_tokens=16k` (a unit kb does not know)",
        "refused (exit 2) before anything is printed, not the plan with empty figures and exit 1",
        "test_physical_ranges.py::test_a_setting_in_an_unknown_unit_is_refused_before_anything_is_printed",
    ),
    (
        "plan",
        "`kb plan` with no arguments",
        "its usage line and the workload records it could plan, exit 2; not KB900",
        "test_physical_ranges.py::test_kb_plan_alone_prints_its_usage",
    ),
    (
        "plan",
        "a tier named `=HYPERLINK(…)`, `+…`, `-…`, `@…` under `kb plan --format csv`",
        "the cell is text (a leading '), never a live formula",
        "test_physical_ranges.py::test_a_tier_name_that_is_a_formula_is_text_in_kb_plans_csv",
    ),
    (
        "plan",
        "an OSC title, clear screen, hidden text and CSI U+009B in a tier's name, text output and --explain",
        "shown as escapes; no control character reaches the terminal",
        "test_physical_ranges.py::test_escape_sequences_in_a_tier_name_do_not_reach_the_terminal",
    ),
    (
        "check",
        "a workload with `gpus: -8` and `hit_rate: 7`",
        "KB405 at each value's line and column, exit 1",
        "test_physical_ranges.py::test_an_impossible_figure_in_a_workload_is_an_error_at_its_value",
    ),
    (
        "plan",
        "`kb plan WORKLOAD` of a workload whose record says `gpus: -8`",
        "the error on stderr, exit 1; no figure is computed from the impossible value",
        "test_physical_ranges.py::test_nothing_is_computed_from_an_impossible_figure",
    ),
    (
        "check",
        "a band whose ends leave the field's range (hit_rate low -0.1, high 1.1)",
        "KB405 at each end",
        "test_physical_ranges.py::test_each_end_of_a_band_is_judged",
    ),
    (
        "check",
        "a competing value of -3.35 TB/s beside a preferred 3.35 TB/s",
        "KB405 at the competing value",
        "test_physical_ranges.py::test_every_competing_value_is_judged",
    ),
    (
        "check",
        "an input named as a field (`inputs: {prefix_tokens: -512}`)",
        "KB405 at the input, read in the field's unit",
        "test_physical_ranges.py::test_an_input_that_sets_a_field_is_held_to_the_fields_range",
    ),
    (
        "check",
        "a derived figure outside its range (90 windowed layers of a 32-layer model)",
        "KB405 for full_attention_layers at the record's num_layers line",
        "test_physical_ranges.py::test_a_derived_figure_outside_its_range_is_an_error",
    ),
    (
        "check",
        "a measurement value of -120 ms (a field of any unit)",
        "KB405 at the value",
        "test_physical_ranges.py::test_a_field_of_any_unit_is_bounded_by_zero_in_every_unit",
    ),
    (
        "schema",
        "an x-kb-range that is no object, has unknown keys, both min and above, an empty range, a bound of another dimension, nan or 1e999, whole not true, no end, or a non-zero bound or whole on a field of any unit",
        "KB210 at the schema line naming the field; the range checks nothing",
        "test_physical_ranges.py::test_a_range_kb_cannot_read_is_a_schema_error_and_checks_nothing",
    ),
    (
        "schema",
        "an x-kb-range on a field without x-kb-quantity",
        "KB210 at its line",
        "test_physical_ranges.py::test_a_range_needs_the_quantity_it_bounds",
    ),
    (
        "schema",
        "an x-kb-require rule with a code no rule defines and no severity (XY123), kb's own code (KB900, KB120), a malformed code, a severity on KB308, an any_of naming no field or not a list, a rule that is no object",
        "KB210 at the schema's x-kb-require; the rule judges no record; not KB900",
        "test_physical_ranges.py::test_an_ill_formed_require_rule_is_a_schema_error_not_a_crash",
    ),
    (
        "schema",
        "an x-kb-require rule with the project's own code and severity (XY123, warning)",
        "reported with that code and severity",
        "test_physical_ranges.py::test_a_require_rule_with_the_projects_code_reports_it_at_its_severity",
    ),
    (
        "query",
        "a record's name or field starting with =, +, -, @ (`=HYPERLINK(...)`, `+cmd|calc`) under `kb query --format csv`",
        "written as text with a leading ', never a live formula",
        "test_hostile_outputs.py::test_query_csv_neutralises_a_cell_a_spreadsheet_would_run_as_a_formula",
    ),
    (
        "query",
        "escape sequences (ESC[2J, an OSC title, BEL) in a record's field under `kb query`",
        "shown as \\x1b… escapes, columns aligned",
        "test_hostile_outputs.py::test_query_text_table_shows_a_records_escape_sequences_as_text",
    ),
    (
        "serve",
        "`/%ff%fe`, `/..%c0%af..`, an encoded surrogate, a name over NAME_MAX, a path over PATH_MAX",
        "400 (not UTF-8) or 404 with a short answer; nothing printed; still serving",
        "test_hostile_outputs.py::test_serve_answers_a_path_no_file_can_have_with_an_http_error_and_prints_nothing",
    ),
    (
        "serve",
        "`kb serve --host 0.0.0.0`",
        "serves, with one stderr warning that the site and its drafts are open to the network; none on loopback",
        "test_hostile_outputs.py::test_serve_warns_when_it_listens_beyond_this_machine_and_only_then",
    ),
    (
        "serve",
        "a record saved under a file name holding escape sequences while kb serve runs",
        "the terminal shows the name escaped, never the raw sequence",
        "test_hostile_outputs.py::test_serve_shows_an_escape_sequence_in_a_saved_files_name_as_text",
    ),
    (
        "export",
        "`kb export --frontmatter DIR` or `kb build --out DIR`, DIR holding the user's files and a hand-written `.kb-site.json` listing them",
        "refuses (exit 2), DIR byte-identical; only a manifest bearing kb's mark makes a directory kb's, and kb's own is still replaced",
        "test_hostile_outputs.py::test_export_frontmatter_keeps_a_directory_whose_manifest_kb_did_not_write",
    ),
    (
        "export",
        "`kb export --json/--sqlite/--frontmatter no/such/dir/...`",
        "refuses (exit 2) naming the missing directory; nothing created",
        "test_hostile_outputs.py::test_export_makes_no_directory_it_was_not_named",
    ),
    (
        "export",
        "`kb export --json notes/x.json` where notes is a file",
        "refuses (exit 2): notes is not a directory; the file unchanged",
        "test_hostile_outputs.py::test_export_refuses_a_path_below_a_file",
    ),
    (
        "init",
        "`kb init --title $'caf\\xe9'`, or a title holding DEL, a newline or an escape sequence",
        "refuses (exit 2) before writing anything, the byte shown as \\xe9",
        "test_hostile_outputs.py::test_init_refuses_a_title_that_is_no_line_of_utf8_text_before_writing_anything",
    ),
    (
        "init",
        "`kb init --title '  '`",
        "refuses (exit 2), nothing written",
        "test_hostile_outputs.py::test_init_refuses_a_blank_title",
    ),
    (
        "init",
        "`kb init $'caf\\xe9'` (with or without --title)",
        "refuses (exit 2), nothing written",
        "test_hostile_outputs.py::test_init_refuses_a_directory_name_that_is_not_utf8_before_writing_anything",
    ),
    (
        "init",
        "`kb init $'kb\\e[2J'`",
        "refuses (exit 2), the name shown escaped, nothing written",
        "test_hostile_outputs.py::test_init_refuses_a_directory_named_with_escape_sequences",
    ),
    (
        "init",
        "`kb init` inside a directory whose name is not UTF-8, no --title",
        "refuses (exit 2), nothing written; with --title it works",
        "test_hostile_outputs.py::test_init_refuses_a_default_title_from_a_parent_named_in_another_encoding",
    ),
    (
        "config",
        '`site = "records"`/`"schema"`, `records = "schema"`/`"site"`, `schema = "records"` in kb.toml',
        "KB120 at the key's line under kb check and kb build (exit 1); no site built",
        "test_hostile_outputs.py::test_a_directory_given_to_two_of_records_schema_and_site_is_kb120_at_its_line",
    ),
    (
        "config",
        '`records = "notes"` and `site = "notes"`; swapped `records = "site"`, `site = "records"`',
        "KB120 at the later key; the swapped names are accepted",
        "test_hostile_outputs.py::test_one_name_given_to_records_and_site_is_kb120_at_the_later_and_swapped_names_are_fine",
    ),
    (
        "new",
        "records/ or records/<dir>/ a symlink out of the repository",
        "kb new refuses (exit 2) naming the link and where it leads; nothing written there; a link inside the repository is fine",
        "test_hostile_outputs.py::test_new_writes_no_record_through_a_directory_that_leads_out_of_the_repository",
    ),
    (
        "fmt",
        "kb fmt, kb mv or kb measure with records/ a symlink out of the repository",
        "refused (exit 2) by the writers' lock every writer of records holds, before anything is changed or measured",
        "test_hostile_outputs.py::test_no_writer_of_records_writes_through_a_records_directory_that_leads_out",
    ),
    (
        "measure",
        "`--max-seconds` nan, inf, 1e300, 0 or negative",
        "exit 2 before anything is measured: a number of seconds above 0 and at most 86,400",
        "test_measure.py::test_refusals_write_nothing",
    ),
    (
        "measure",
        "`--max-bytes`, `--repetitions`, `--blocks` or `--block-tokens` below 1",
        "exit 2 naming the flag and its value",
        "test_measure.py::test_refusals_write_nothing",
    ),
    (
        "measure",
        "a stop signal that comes as kb blocks the stop signals",
        "the stop goes through, nothing left under --path, no signal left blocked",
        "test_hostile_measure.py::test_a_stop_that_comes_as_the_signals_are_held_leaves_none_of_them_blocked",
    ),
    (
        "measure",
        "a stop signal taken by another thread while kb creates its file or a record",
        "kb notes what it made, then stops and removes it",
        "test_hostile_measure.py::test_a_stop_that_another_thread_receives_waits_for_the_end_of_the_held_block",
    ),
    (
        "tests",
        "the suite started in the background (`cmd &` ignores SIGINT) or under nohup (SIGHUP ignored)",
        "every test that signals a child starts it with those signals at their default action, as a shell starts a foreground job; the Ctrl-C and SIGHUP tests run once with the suite's own signal ignored",
        "test_measure.py::test_ctrl_c_while_the_file_is_written_leaves_nothing_behind",
    ),
]


def test_path(test: str) -> str:
    """`file.py::name` for a test in another file; a bare name is one of tests/test_reliability.py."""
    return test if "::" in test else f"test_reliability.py::{test}"


def render() -> str:
    lines = [
        "# Bad input: what kb does with it",
        "",
        "Records are edited by hand and arrive in pull requests from strangers. Every case below is a test:",
        "`tests/test_bad_input.py` runs each one through `kb check` and asserts the code, file and line (and,",
        "for resource bounds, the time), with no traceback. Generated from `tests/catalogue.py`.",
        "",
        "| # | area | input | kb says | where |",
        "|---:|---|---|---|---|",
    ]
    for number, case in enumerate(CASES, 1):
        said = f"`{case.code}`" if case.code else "accepted"
        where = f"{case.path}:{case.line}" if case.line else case.path
        if case.seconds:
            where += f" (under {case.seconds:g} s)"
        note = f" — {case.note}" if case.note else ""
        lines.append(f"| {number} | {case.area} | {case.name}{note} | {said} | `{where}` |")
    start = len(CASES)
    for number, name in enumerate(SITE_CASES, start + 1):
        lines.append(
            f"| {number} | site | {name} | rendered as text, nothing runs | tests/test_site_hostile.py (Chromium) |"
        )
    start += len(SITE_CASES)
    for number, (area, name, does, test) in enumerate(OTHER_CASES, start + 1):
        lines.append(f"| {number} | {area} | {name} | {does} | tests/{test_path(test)} |")
    total = len(CASES) + len(SITE_CASES) + len(OTHER_CASES)
    lines += [
        "",
        f"Total: {total} cases ({len(CASES)} through `kb check`, {len(SITE_CASES)} on the site, "
        f"{len(OTHER_CASES)} on what kb writes, caches, serves and replays).",
        "",
        "Also: the formula sandbox catalogue (tests/test_formula.py, 41 escape attempts plus bounded powers), and",
        "Hypothesis fuzzing of the loader, the formula parser and evaluator, the link finder and quantity",
        "parsing (tests/test_fuzz.py; `KB_FUZZ_EXAMPLES=20000` for a long local run).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
