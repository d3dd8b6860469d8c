"""The link graph: typed references and [[wikilinks]], each problem at its line."""

from kbtools.check.links import backlinks
from kbtools.check.pipeline import check_corpus
from kbtools.corpus import Settings


def small(kb):
    kb.source()
    kb.record("engines", "lmcache", "engine", "kind: kv-cache-layer\n")
    kb.record("accelerators", "gpu-a", "accelerator", "vendor: V\nmemory_bandwidth: 3.35 TB/s\n")
    kb.record(
        "hardware-parameters",
        "memory-bandwidth",
        "hardware_parameter",
        "dimension: GB/s\ncarried_by: {accelerator: memory_bandwidth}\n",
    )


def test_clean_graph_and_backlinks_grouped_by_field(kb):
    small(kb)
    kb.record(
        "flops",
        "f",
        "flop",
        """
        class: kv_transfer
        bound_by: memory
        affected_by_hardware: [gpu-a]
        hardware_parameters:
          - parameter: memory-bandwidth
            effect: hit path time
            values_for: [gpu-a]
            basis: recorded
    """,
        body="Uses [[engines/lmcache|LMCache]] and [[lmcache]].\n",
    )
    result = kb.check()
    assert result.exit_code == 0, result.out
    assert result.lines == [
        "records/flops/f.md:2:1: warning KB306 orphan: no record links to flops/f (hint: link it from a related record, or delete it)"
    ]
    corpus = check_corpus(Settings(root=kb.root))
    assert backlinks(corpus, "accelerators/gpu-a") == {
        "affected_by_hardware[]": ["flops/f"],
        "hardware_parameters[].values_for[]": ["flops/f"],
    }
    assert backlinks(corpus, "engines/lmcache") == {"body": ["flops/f"]}
    assert backlinks(corpus, "sources/src-a")["sources[]"] == ["accelerators/gpu-a", "engines/lmcache", "flops/f"]


def test_dangling_reference(kb):
    small(kb)
    kb.record(
        "flops",
        "f",
        "flop",
        "class: kv_transfer\nbound_by: memory\naffected_by_hardware: [gpu-a, gpu-z]\n",
        body="[[lmcache]] [[memory-bandwidth]]\n",
    )
    result = kb.check()
    assert result.exit_code == 1
    assert result.find("KB300") == [
        "records/flops/f.md:11:31: error KB300 affected_by_hardware[]: no record 'gpu-z' (did you mean gpu-a?)"
    ]


def test_reference_of_wrong_type(kb):
    small(kb)
    kb.record(
        "flops",
        "f",
        "flop",
        "class: kv_transfer\nbound_by: memory\naffected_by_hardware:\n  - memory-bandwidth\n",
        body="[[lmcache]] [[gpu-a]]\n",
    )
    assert kb.check().find("KB301") == [
        "records/flops/f.md:12:5: error KB301 affected_by_hardware[]: 'memory-bandwidth' is a hardware_parameter, expected accelerator"
    ]


def test_dangling_wikilink_at_its_body_line(kb):
    small(kb)
    kb.record(
        "flops",
        "f",
        "flop",
        "class: kv_transfer\nbound_by: memory\n",
        body="First [[lmcache]] line.\n\nThird line links [[engines/lmcach]] here.\n",
    )
    assert kb.check().find("KB302") == [
        "records/flops/f.md:14:18: error KB302 dangling link [[engines/lmcach]]: no record 'engines/lmcach' (did you mean engines/lmcache?)"
    ]


def test_wikilink_in_continued_paragraph_line(kb):
    small(kb)
    kb.record(
        "flops",
        "f",
        "flop",
        "class: kv_transfer\nbound_by: memory\n",
        body="A paragraph [[lmcache]]\nthat continues [[nowhere]]\n",
    )
    assert kb.check().find("KB302")[0].startswith("records/flops/f.md:13:16: error KB302")


def test_code_is_never_a_link(kb):
    small(kb)
    kb.record(
        "flops",
        "f",
        "flop",
        "class: kv_transfer\nbound_by: memory\n",
        body="[[lmcache]] `[[nope]]`\n\n```\n[[nope]]\n```\n\n    [[indented-code]]\n",
    )
    assert kb.check().find("KB302") == []


def test_ambiguous_bare_link_lists_candidates(kb):
    small(kb)
    kb.record("sources", "lmcache", "source", "kind: repo\npublisher: P\n")
    kb.record(
        "flops",
        "f",
        "flop",
        "class: kv_transfer\nbound_by: memory\n",
        sources="[src-a, lmcache]",
        body="See [[lmcache]] and [[engines/lmcache]].\n",
    )
    result = kb.check()
    assert (
        "records/flops/f.md:12:5: error KB303 ambiguous link [[lmcache]]: engines/lmcache, sources/lmcache; qualify it as [[dir/id]]"
        in result.lines
    )


def test_same_id_in_two_directories_is_an_error_on_both(kb):
    small(kb)
    kb.record("sources", "lmcache", "source", "kind: repo\npublisher: P\n")
    found = kb.check().find("KB304")
    assert found == [
        "records/engines/lmcache.md:2:1: error KB304 id 'lmcache' is also used by records/sources/lmcache.md; ids must be unique across the repository",
        "records/sources/lmcache.md:2:1: error KB304 id 'lmcache' is also used by records/engines/lmcache.md; ids must be unique across the repository",
    ]


def test_missing_heading_is_a_warning(kb):
    small(kb)
    kb.record("engines", "lmcache", "engine", "kind: kv-cache-layer\n", body="## Offload tiers\n")
    kb.record(
        "flops",
        "f",
        "flop",
        "class: kv_transfer\nbound_by: memory\n",
        body="[[engines/lmcache#offload-tiers]] [[engines/lmcache#setup]] [[gpu-a]] [[memory-bandwidth]]\n",
    )
    result = kb.check()
    assert result.exit_code == 0
    assert result.find("KB305") == ["records/flops/f.md:12:35: warning KB305 no heading 'setup' in engines/lmcache"]


def test_orphans_and_uncited_sources_warn(kb):
    kb.source()
    kb.source("src-b")
    kb.record("engines", "e", "engine", "kind: serving-engine\n")
    result = kb.check()
    assert result.exit_code == 0
    assert result.find("KB306") == [
        "records/engines/e.md:2:1: warning KB306 orphan: no record links to engines/e (hint: link it from a related record, or delete it)"
    ]
    assert [l.split(":")[0] for l in result.find("KB307")] == ["records/sources/src-b.md"]
    assert kb.check("--strict").exit_code == 1
