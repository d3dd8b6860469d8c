"""The link graph in networkx: kbtools.to_networkx and kb export --graphml."""

from __future__ import annotations

import json
from collections import Counter

import networkx as nx
from conftest import REPO, run_kb

import kbtools


def edges_of(graph) -> Counter:
    return Counter((s, t, d["field"], int(d["line"])) for s, t, d in graph.edges(data=True))


def test_the_repository_graph_has_a_node_per_record_and_an_edge_per_link(tmp_path):
    with kbtools.open(REPO) as opened:
        graph = kbtools.to_networkx(opened)
        records = {key: (r.type, r.id, r.path) for key, r in opened.records.items()}
        links = Counter(opened.links)
    assert len(records) > 100 and len(links) > 1000
    assert isinstance(graph, nx.MultiDiGraph)
    assert set(graph.nodes) == set(records) and graph.number_of_edges() == sum(links.values())
    assert edges_of(graph) == links
    for key, node in graph.nodes(data=True):
        assert (node["type"], node["id"], node["path"]) == records[key]
    # the file Gephi and yEd open reads back as the same graph
    graphml = tmp_path / "kb.graphml"
    done = run_kb("export", "--graphml", str(graphml), cwd=REPO)
    assert done.returncode == 0, done.stderr
    read = nx.read_graphml(graphml, force_multigraph=True)
    assert read.is_directed() and set(read.nodes) == set(records) and edges_of(read) == links
    assert dict(read.nodes["accelerators/nvidia-h200-sxm"]) == graph.nodes["accelerators/nvidia-h200-sxm"]
    assert f"{graph.number_of_nodes()} records, {graph.number_of_edges()} links" in done.stdout


def test_the_links_are_those_kb_export_json_lists(kb, tmp_path):
    kb.source()
    kb.record("accelerators", "gpu-a", "accelerator", "vendor: V\n", body="See [[gpu-b]].\n")
    kb.record("accelerators", "gpu-b", "accelerator", "vendor: V\n", body="Beside [[gpu-a]].\n")
    exported = tmp_path / "kb.json"
    assert kb.run("export", "--json", str(exported)).exit_code == 0
    said = json.loads(exported.read_text(encoding="utf-8"))
    with kbtools.open(kb.root) as opened:
        graph = kbtools.to_networkx(opened)
    assert set(graph.nodes) == {r["key"] for r in said["records"]}
    assert edges_of(graph) == Counter((x["source"], x["target"], x["field"], x["line"]) for x in said["links"])


def test_a_small_graph_by_hand(kb):
    kb.source()
    # lines: 1 fence, 7 envelope lines, 1 vendor line, 1 fence, then the body: [[gpu-b]] twice, on lines 11 and 12
    kb.record("accelerators", "gpu-a", "accelerator", "vendor: V\n", body="See [[gpu-b]].\nAgain [[gpu-b]].\n")
    kb.record("accelerators", "gpu-b", "accelerator", "vendor: V\n", body="Beside [[gpu-a]].\n")
    with kbtools.open(kb.root) as opened:
        graph = kbtools.to_networkx(opened.corpus)
    assert graph.nodes["accelerators/gpu-a"] == {
        "type": "accelerator",
        "id": "gpu-a",
        "path": "records/accelerators/gpu-a.md",
    }
    assert graph.number_of_nodes() == 3
    between = [(d["field"], d["line"]) for _, _, d in graph.edges("accelerators/gpu-a", data=True)]
    assert [b for b in between if b[0] == "body"] == [("body", 11), ("body", 12)]
    assert graph.number_of_edges("accelerators/gpu-a", "accelerators/gpu-b") == 2
    assert graph.number_of_edges("accelerators/gpu-b", "accelerators/gpu-a") == 1
    # each accelerator cites the source once, in sources[] on line 8
    assert graph.number_of_edges("accelerators/gpu-a", "sources/src-a") == 1
    assert graph.get_edge_data("accelerators/gpu-a", "sources/src-a")[0] == {"field": "sources[]", "line": 8}


def test_graphml_replaces_only_its_own_file(kb, tmp_path):
    kb.source()
    target = tmp_path / "kb.graphml"
    first = kb.run("export", "--graphml", str(target))
    assert first.exit_code == 0, first.err
    assert "1 record, 0 links" in first.out
    assert kb.run("export", "--graphml", str(target)).exit_code == 0  # its own: replaced
    mine = tmp_path / "mine.graphml"
    mine.write_text("<?xml version='1.0'?>\n<graphml/>\n", encoding="utf-8")
    refused = kb.run("export", "--graphml", str(mine))
    assert refused.exit_code == 2 and "not an earlier kb graphml export" in refused.err
    assert mine.read_text(encoding="utf-8") == "<?xml version='1.0'?>\n<graphml/>\n"
