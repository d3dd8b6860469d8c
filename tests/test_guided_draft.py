"""Issue 46: `kb new TYPE --set FIELD=VALUE` drafts a record that works at once (a workload plans right after it),
the inference-cost starter checks quietly and its example workload plans, and the newcomer's smaller frictions
(F15): kb init's README link, a knowledge base started inside another, `kb fmt`'s last line, and a float32 config's
KV bytes. Each is driven as a user drives it, and what it prints is checked against figures worked out by hand
from the values the records state."""

from __future__ import annotations

import json
import re
import shutil
import statistics
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_kb
from test_cost_model import explain
from test_from_config import GQA, from_config, written


@pytest.fixture(scope="module")
def starter_template(tmp_path_factory):
    """A knowledge base of the inference-cost starter, as `kb init --types inference-cost` writes it."""
    target = tmp_path_factory.mktemp("starter") / "ic-kb"
    made = run_kb("init", str(target), "--types", "inference-cost")
    assert made.returncode == 0, made.stderr
    return target


@pytest.fixture
def starter(starter_template, tmp_path):
    target = tmp_path / "ic-kb"
    shutil.copytree(starter_template, target)
    return target


def in_kb(root, *args):
    """kb run in the knowledge base's directory, as its user runs it (a PATH is relative to it)."""
    return run_kb(*args, cwd=root)


def frontmatter(path):
    return yaml.safe_load(path.read_text().split("---\n")[1])


def number(text) -> float:
    """A stated figure's number: 50 of '50 GB/s', 1000 of '1000 TFLOP/s'."""
    return float(str(text).split()[0])


def ttft_by_hand(root, workload: dict) -> float:
    """TTFT's prefix part in ms for a workload over one offload tier, from the figures its records state: a hit reads
    the prefix's KV (2 x layers x KV heads x head width x bytes per element, per token) at the tier's bandwidth; a
    miss recomputes it, 2 FLOP per active parameter per token at the BF16 peak (a BF16 model), plus causal attention
    (layers x heads x 2 x head width per token squared) at the same peak, on `gpus` accelerators; the mean is weighted
    by the hit rate."""
    records = root / "records"
    model = frontmatter(records / "models" / f"{workload['model']}.md")
    accelerator = frontmatter(records / "accelerators" / f"{workload['accelerator']}.md")
    (tier_id,) = workload["tiers"]
    tier = frontmatter(records / "storage-tiers" / f"{tier_id}.md")
    tokens, gpus, hit = number(workload["prefix_tokens"]), number(workload["gpus"]), float(workload["hit_rate"])
    kv_bytes = 2 * model["num_layers"] * model["num_kv_heads"] * model["head_dim"] * number(model["kv_dtype_size"])
    hit_ms = kv_bytes * tokens / (number(tier["bandwidth"]) * 1e9) * 1e3
    assert model["weight_dtype"] == "bf16" and str(accelerator["peak_bf16_dense"]).endswith("TFLOP/s")
    linear = 2 * number(model["params_active"]) * 1e9 * tokens
    attention = model["num_layers"] * model["num_attention_heads"] * 2 * model["head_dim"] * tokens**2
    recompute_ms = (linear + attention) / (number(accelerator["peak_bf16_dense"]) * 1e12) / gpus * 1e3
    return hit * hit_ms + (1 - hit) * recompute_ms


def ranked_ttft(plan_text: str) -> dict[str, float]:
    """tier key -> its ttft in ms, as `kb plan` prints them under 'tiers, best first'."""
    found, tier = {}, None
    for line in plan_text.split("tiers, best first", 1)[1].splitlines():
        words = line.split()
        if line[:1].isdigit() and len(words) > 1:
            tier = words[1]
        elif words[:1] == ["ttft"] and tier:
            assert words[2] == "ms", line
            found[tier] = float(words[1].replace(",", ""))
    return found


def test_the_starter_checks_quietly_and_its_example_workload_plans_at_once(starter):
    """kb init's inference-cost starter: no placeholder to report (the examples' figures are made up, as the
    minimal starter's are), and a workload among the examples that kb plan ranks at once, its TTFT as worked out by
    hand from the example records' figures."""
    # that it checks with no finding at all, --strict and formatted, is test_init's
    path = starter / "records" / "workloads" / "example-workload.md"
    plan = in_kb(starter, "plan", str(path.relative_to(starter)))
    assert plan.returncode == 0, plan.stderr
    ttft = ranked_ttft(plan.stdout)
    assert list(ttft) == ["storage-tiers/example-storage-tier"]
    assert ttft["storage-tiers/example-storage-tier"] == pytest.approx(ttft_by_hand(starter, frontmatter(path)), 1e-3)


def test_a_guided_workload_plans_at_once_and_marks_what_it_assumed(starter):
    """`kb new workload --set ...` naming only the records: the draft fills the rest, kb check has no error for it
    (a KB117 on each figure it assumed, saying what to put there), and kb plan ranks its tiers at once."""
    made = in_kb(
        starter,
        "new",
        "workload",
        "--name",
        "my chat",
        "--set",
        "model=example-model",
        "--set",
        "accelerator=example-accelerator",
        "--set",
        "engine=example-engine",
    )
    assert made.returncode == 0, made.stderr
    path = starter / "records" / "workloads" / "my-chat.md"
    assert "wrote records/workloads/my-chat.md" in made.stdout and "kb plan workloads/my-chat" in made.stdout
    draft = frontmatter(path)
    assert (draft["model"], draft["accelerator"], draft["engine"]) == (
        "example-model",
        "example-accelerator",
        "example-engine",
    )
    # the figures it assumed are the example workload's, the one workload here naming the same model
    example = frontmatter(starter / "records" / "workloads" / "example-workload.md")
    assert (draft["gpus"], draft["prefix_tokens"], draft["hit_rate"]) == (
        example["gpus"],
        example["prefix_tokens"],
        example["hit_rate"],
    )
    assert draft["tiers"] == ["example-storage-tier"]  # the storage tiers here that agree with what it names
    text = path.read_text()
    for field in ("gpus", "prefix_tokens", "hit_rate"):
        assert "an assumption (as 1 workload record here naming the same model states it), replace it" in next(
            line for line in text.splitlines() if line.startswith(f"{field}:")
        )
        assert f"  an assumption to replace: {field}: " in made.stdout
    check = in_kb(starter, "check", str(path.relative_to(starter)))
    assert check.returncode == 0 and " error " not in check.stdout, check.stdout
    placeholders = {line.split()[3] for line in check.stdout.splitlines() if " KB117 " in line}
    assert placeholders == {"gpus:", "prefix_tokens:", "hit_rate:"}, check.stdout
    # each says what to put: the figure's meaning, from its schema's description
    meant = json.loads((REPO / "schema" / "workload.schema.json").read_text())["properties"]["prefix_tokens"]
    said = re.split(r"[;,.]", meant["description"])[0].lower()  # its first clause, as the draft's comment gives it
    assert f"prefix_tokens: {example['prefix_tokens']}: a placeholder ('# {said}" in check.stdout, check.stdout
    assert in_kb(starter, "fmt", "--check", str(path.relative_to(starter))).returncode == 0
    plan = in_kb(starter, "plan", str(path.relative_to(starter)))
    assert plan.returncode == 0, plan.stderr
    assert ranked_ttft(plan.stdout)["storage-tiers/example-storage-tier"] == pytest.approx(
        ttft_by_hand(starter, draft), 1e-3
    )


def test_a_guided_value_kb_check_refuses_is_refused_and_nothing_is_written(starter):
    def new(*sets):
        args = [x for s in sets for x in ("--set", s)]
        return in_kb(starter, "new", "workload", "--name", "w", *args)

    records = "model=example-model", "accelerator=example-accelerator"
    cases = [
        (new(*records, "hit_rate=1.5"), "hit_rate: 1.5 is impossible"),
        (new(*records, "gpus=0"), "gpus: 0 is impossible"),
        (new("model=example-accelerator"), "accelerators/example-accelerator is an accelerator record"),
        (new("model=example-modle"), "no record 'example-modle' (did you mean example-model"),
        (new("modle=example-model"), "(did you mean model?)"),
    ]
    for done, message in cases:
        assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (starter / "records" / "workloads" / "w.md").exists()


def test_without_set_kb_new_workload_writes_the_skeleton_it_always_did(starter):
    """The guided draft is asked for: without --set, kb new drafts as before (and still wants a source)."""
    from kbtools.authoring.new import skeleton
    from kbtools.registry import load_registry

    refused = in_kb(starter, "new", "workload", "--name", "Plain")
    assert refused.returncode == 2 and "must cite at least one source" in refused.stderr
    made = in_kb(starter, "new", "workload", "--name", "Plain", "--source", "example-datasheet")
    assert made.returncode == 0, made.stderr
    registry = load_registry(starter / "schema", starter)
    expected = skeleton(registry.types["workload"], "plain", "Plain", ["example-datasheet"])
    assert (starter / "records" / "workloads" / "plain.md").read_text() == expected


def test_the_issue_s_workload_in_this_repository_plans_at_once():
    """The issue's own example over this repository's records: Llama 3.1 70B on H100 SXM under vLLM. The draft lists
    the storage tiers that agree with the accelerator (the H100's HBM, not the H200's), assumes its figures from the
    workloads that name the same model, passes kb check's reading, and kb plan ranks every tier by TTFT."""
    from plan_support import _repository_corpus

    from kbtools.authoring.new import guided_draft
    from kbtools.check.load import load_record_bytes
    from kbtools.outputs.plan import make_plan

    corpus = _repository_corpus()
    workload = corpus.registry.types["workload"]
    sets = ["model=llama-3-1-70b", "accelerator=nvidia-h100-sxm", "engine=vllm"]
    text, said = guided_draft(corpus, workload, "my-chat", "my chat", [], sets)
    draft = yaml.safe_load(text.split("---\n")[1])
    assert "gpu-hbm-h100" in draft["tiers"] and "gpu-hbm-h200" not in draft["tiers"]
    same_model = [
        r.data for r in corpus.records.values() if r.type == "workload" and r.data.get("model") == "llama-3-1-70b"
    ]
    assert same_model
    gpus = [g["value"] if isinstance(g, dict) else g for g in (r["gpus"] for r in same_model)]
    assert draft["gpus"] == statistics.median_low(gpus)
    origin = (
        f"the median of {len(same_model)} workload records here naming the same model"
        if len(same_model) > 1
        else "as 1 workload record here naming the same model states it"
    )
    assert f"  an assumption to replace: gpus: {draft['gpus']} ({origin})" in said
    assert "  plan it now: kb plan workloads/my-chat" in said
    rel = "records/workloads/my-chat.md"
    record, problems = load_record_bytes(text.encode(), rel, Path(rel), corpus.registry, "a draft")
    assert record is not None, problems
    plan = make_plan(corpus, record)
    assert not plan.diagnostics, [d.message for d in plan.diagnostics]
    assert {o.key.split("/")[1] for o in plan.options} == set(draft["tiers"])
    # ranked: every tier with a TTFT before any without, and by TTFT among those breaking as many limits
    priced = [o for o in plan.options if any(f.name == "ttft" for f in o.figures)]
    assert len(priced) > 10 and plan.options[: len(priced)] == tuple(priced)
    for breaches in {len(o.breaches) for o in priced}:
        times = [
            next(f.value.quantity.to("ms").magnitude for f in o.figures if f.name == "ttft")
            for o in priced
            if len(o.breaches) == breaches
        ]
        assert times == sorted(times)


def test_kb_init_s_readme_links_kb_s_repository_not_a_package_index(tmp_path):
    """kb is on no package index: the README links the repository kb came from, or says the set-up installs it."""
    from kbtools.authoring.init import KbSource, plan_files

    remote = KbSource(
        "kbtools @ git+https://github.com/example/kb.git@abc123", "https://github.com/example/kb.git", "abc123"
    )
    readme = plan_files("minimal", "T", remote).files["README.md"]
    assert "pypi.org" not in readme and "[kb](https://github.com/example/kb)" in readme
    index = KbSource("kbtools==0.1.0", None, None, note="kb's repository is unknown")
    readme = plan_files("minimal", "T", index).files["README.md"]
    assert "pypi.org" not in readme and "kb (the first set-up command below installs it)" in readme


def test_kb_init_inside_another_knowledge_base_warns_and_names_it(tmp_path):
    outer = tmp_path / "kb-clone"
    assert run_kb("init", str(outer)).returncode == 0
    nested = run_kb("init", "facilities-kb", cwd=outer)
    assert nested.returncode == 0, nested.stderr
    assert f"warning: facilities-kb is inside the knowledge base at {outer} (its kb.toml)" in nested.stderr
    alone = run_kb("init", "elsewhere", cwd=tmp_path)
    assert alone.returncode == 0 and "warning" not in alone.stderr


def test_kb_fmt_says_only_what_happened(kb):
    """The last line counts what kb fmt did; "not formatted" only when some file could not be."""
    kb.source("src-a")
    kb.source("src-b")
    assert kb.run("fmt").exit_code == 0  # both canonical
    path = kb.root / "records/sources/src-a.md"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join([*lines[:7], lines[-3], *lines[7:-3], *lines[-2:]]))  # a field moved up: not canonical
    check = kb.run("fmt", "--check")
    assert check.exit_code == 1 and check.out.splitlines()[-1] == "2 records: 1 would change", check.out
    done = kb.run("fmt")
    assert done.exit_code == 0 and done.out.splitlines()[-1] == "2 records: 1 changed", done.out


def test_a_float32_config_drafts_the_16_bit_kv_a_server_keeps(kb):
    """Gemma 2 9B's config names float32; vLLM serves such a checkpoint, and caches its KV, in bfloat16 on today's
    GPUs, so the draft holds 2 B an element and says why, citing vLLM's code at a commit."""
    path = written(kb, from_config(kb, {**GQA, "torch_dtype": "float32"}, "Llama 3.1 70B"))
    line = next(line for line in path.read_text().splitlines() if line.startswith("kv_dtype_size:"))
    assert line.startswith("kv_dtype_size: 2 B  # bfloat16, not the config's float32")
    assert "vllm/config/model.py _resolve_auto_dtype at 18ec6629" in line
    assert kb.check().exit_code == 0
    # 2 x 80 layers x 8 KV heads x 128 x 2 B
    assert explain(kb, "models/llama-3-1-70b.kv_bytes_per_token").startswith(
        "models/llama-3-1-70b.kv_bytes_per_token = 327,680 B/token"
    )
