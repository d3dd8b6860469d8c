"""kb query and kb export on the repository's own records."""

import csv
import io
import json
import sqlite3
import subprocess

import pytest
from conftest import REPO, run_kb, signals_at_default


def kb(*args):
    return run_kb(*args, cwd=REPO)


def test_query_quantities_with_units():
    result = kb("query", "type:accelerator", "memory_bandwidth>=4 TB/s", "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    keys = {r["key"] for r in rows}
    assert "accelerators/nvidia-h200-sxm" in keys and "accelerators/nvidia-h100-sxm" not in keys
    assert all(r["memory_bandwidth"] >= 4000 and r["memory_bandwidth_unit"] == "GB/s" for r in rows)


def test_query_kv_bytes_below_a_threshold_as_csv():
    result = kb("query", "kv_bytes_per_token<100 KB/token", "--format", "csv")
    rows = {r["key"]: r for r in csv.DictReader(io.StringIO(result.stdout))}
    assert float(rows["models/deepseek-v3"]["kv_bytes_per_token"]) == 70272  # MLA's latent is well under the bar
    assert "models/llama-3-1-70b" not in rows  # 327,680 B/token of GQA KV is over it
    assert rows and all(float(r["kv_bytes_per_token"]) < 100_000 for r in rows.values())


def test_query_links_to_and_status():
    rows = json.loads(kb("query", "links-to:engines/lmcache", "status:draft", "--format", "json").stdout)
    assert "flops/eng-profile-kv-tiering-moves-flops-to-bytes" in {r["key"] for r in rows}


def test_query_errors_exit_2():
    assert "unknown field 'nope'" in kb("query", "nope:1").stderr
    wrong = kb("query", "memory_bandwidth>=4 TB")
    assert wrong.returncode == 2 and "cannot compare" in wrong.stderr


def test_export_sqlite_and_json(tmp_path):
    result = kb("export", "--sqlite", str(tmp_path / "kb.sqlite"), "--json", str(tmp_path / "kb.json"))
    assert result.returncode == 0, result.stderr
    db = sqlite3.connect(tmp_path / "kb.sqlite")
    assert db.execute(
        "select memory_bandwidth, memory_bandwidth_unit from accelerator where key = 'accelerators/nvidia-h200-sxm'"
    ).fetchone() == (4800.0, "GB/s")
    assert db.execute("select kv_bytes_per_token from model where key = 'models/deepseek-v3'").fetchone() == (70272.0,)
    assert db.execute("select count(*) from links").fetchone()[0] > 1000
    assert db.execute("select count(*) from diagnostics where severity = 'error'").fetchone()[0] == 0
    exported = json.loads((tmp_path / "kb.json").read_text())
    seed = next(r for r in exported["records"] if r["key"].endswith("eng-profile-kv-tiering-moves-flops-to-bytes"))
    assert seed["values"]["hit_path_bytes"]["computed"] is True
    assert abs(seed["values"]["hit_path_bytes"]["value"] - 2.24870) < 1e-4


@pytest.mark.slow
def test_the_real_datasette_serves_the_export_with_its_metadata(tmp_path):
    """`datasette kb.sqlite --metadata kb.metadata.json`, as the export's message says: the type's table is
    titled and described from its schema, a column's description says its unit, a record's page is
    labelled by its name, and for_each rows are rows of `costs`."""
    import signal
    import socket
    import sys
    import time
    import urllib.request
    from pathlib import Path

    db, metadata = tmp_path / "kb.sqlite", tmp_path / "kb.metadata.json"
    result = kb("export", "--sqlite", str(db))
    assert result.returncode == 0 and metadata.is_file(), result.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    datasette = Path(sys.executable).parent / "datasette"
    proc = subprocess.Popen(
        [str(datasette), "serve", str(db), "--metadata", str(metadata), "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=signals_at_default(signal.SIGTERM),  # what terminate() sends below, unblocked whatever the suite has
    )

    def get(path: str) -> str:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
                    return response.read().decode()
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.3)

    try:
        table = get("/kb/accelerator")
        assert "One accelerator package (GPU or NPU) as sold" in table
        assert "Peak memory bandwidth. In GB/s." in table
        row = get("/kb/accelerator/accelerators~2Fnvidia-h200-sxm")
        assert "NVIDIA H200 SXM" in row
        rows = json.loads(get("/kb/costs.json?_shape=array&key=flops/decode-attention&cost=kv_read_time"))
        assert {r["row"] for r in rows} >= {"accelerators/nvidia-h100-sxm", "accelerators/nvidia-h200-sxm"}
        assert all(r["unit"] == "ms" and isinstance(r["value"], float) for r in rows)
        typed = json.loads(
            get(
                "/kb.json?sql=select+typeof(memory_bandwidth)+as+t,+typeof(memory_stacks)+as+s+from+accelerator+where+key='accelerators/nvidia-h200-sxm'&_shape=array"
            )
        )
        assert typed == [{"t": "real", "s": "integer"}]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
