"""Near-duplicates: two records of one type named alike (KB309), two sources of one document (KB310)."""

from __future__ import annotations

import pytest

from kbtools.lang.normal import name_key, url_key


def engine(kb, id_, name, extra=""):
    return kb.record("engines", id_, "engine", f"kind: serving-engine\n{extra}", body="[[src-a]]\n").write_text(
        (kb.root / f"records/engines/{id_}.md").read_text().replace(f"name: {id_} name", f"name: {name}")
    )


def test_two_engines_named_alike_are_a_warning_naming_both(kb):
    kb.source()
    engine(kb, "vllm", "vLLM")
    engine(kb, "vllm-2", "VLLM ")
    found = kb.check().find("KB309")
    # reported once, on the record whose path sorts later, naming the other
    assert len(found) == 1 and found[0].startswith("records/engines/vllm.md:4:")
    assert "name 'vLLM' is the same as engines/vllm-2's 'VLLM'" in found[0]


def test_different_names_or_types_stay_quiet(kb):
    kb.source()
    engine(kb, "vllm", "vLLM")
    engine(kb, "sglang", "SGLang")
    kb.record("sources", "vllm-doc", "source", "kind: docs\npublisher: P\nurl: https://example.org/v\n").write_text(
        (kb.root / "records/sources/vllm-doc.md").read_text().replace("name: vllm-doc name", "name: vLLM")
    )
    assert not kb.check().find("KB309")  # a source named like an engine is another type


def test_distinct_from_says_two_alike_records_are_different(kb):
    kb.source()
    engine(kb, "vllm", "vLLM")
    engine(kb, "vllm-2", "VLLM", extra="distinct_from: [engines/vllm]\n")
    assert not kb.check().find("KB309")


def source(kb, id_, url):
    return kb.record("sources", id_, "source", f"kind: docs\npublisher: P\nurl: {url}\n")


def test_two_sources_of_one_document_are_a_warning(kb):
    source(kb, "src-a", "https://www.Example.org/guide/?utm_source=x#part")
    path = source(kb, "src-b", "http://example.org/guide")
    kb.record(
        "engines", "e", "engine", "kind: serving-engine\n", sources="[src-a, src-b]", body="[[src-a]] [[src-b]]\n"
    )
    found = kb.check().find("KB310")
    line = next(i for i, l in enumerate(path.read_text().splitlines(), 1) if l.startswith("url:"))
    assert len(found) == 1 and found[0].startswith(f"records/sources/src-b.md:{line}:6:")
    assert "same document as sources/src-a's" in found[0]


def test_different_pages_stay_quiet(kb):
    source(kb, "src-a", "https://example.org/guide?page=1")
    source(kb, "src-b", "https://example.org/guide?page=2")
    kb.record(
        "engines", "e", "engine", "kind: serving-engine\n", sources="[src-a, src-b]", body="[[src-a]] [[src-b]]\n"
    )
    assert not kb.check().find("KB310")


@pytest.mark.parametrize(
    "a, b",
    [
        ("https://doi.org/10.1145/3600006.3613165", "https://dl.acm.org/doi/10.1145/3600006.3613165"),
        ("https://EXAMPLE.org:443/x/", "https://example.org/x"),
        ("https://docs.example.org/p?authuser=3", "https://docs.example.org/p"),
    ],
)
def test_url_keys_of_one_document_agree(a, b):
    assert url_key(a) == url_key(b)


def test_name_key_sets_aside_case_spacing_and_punctuation():
    assert name_key("NVIDIA H100-SXM") == name_key("Nvidia H100 SXM") != name_key("NVIDIA H200 SXM")
