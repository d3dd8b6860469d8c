"""docs/tutorial.md, followed literally: every command block is run and every file block written, in order,
in a fresh `kb init` knowledge base of each starter. A `kb` command must succeed; one whose comment names
codes (`kb check  # KB307`) must also report them. A ```json merge=PATH``` block is merged into that JSON
file, as the text asks the reader to add its entries."""

import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import REPO, run_kb

TUTORIAL = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(?P<lang>\w+)(?P<info>[^\n]*)\n(?P<text>.*?)^```$", re.M | re.S)
INIT = "kb init facilities-kb"
STARTERS = {
    "minimal": INIT,
    # the tutorial names the other starter's command in its prose; it is the one run for that starter
    "inference-cost": re.search(r"`(kb init facilities-kb --types inference-cost)`", TUTORIAL).group(1),
}


def steps():
    for match in BLOCK.finditer(TUTORIAL):
        info = dict(part.split("=", 1) for part in match["info"].split() if "=" in part)
        yield match["lang"], info, match["text"]


def merge(into: dict, extra: dict) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value


def run_commands(text: str, cwd: Path, starter: str) -> Path:
    for line in text.splitlines():
        command, _, comment = line.partition("  #")
        words = shlex.split(command)
        if not words:
            continue
        if words == shlex.split(INIT):
            words = shlex.split(STARTERS[starter])
        if words[0] == "cd":
            cwd = cwd / words[1]
        elif words[0] == "mkdir":
            (cwd / words[1]).mkdir(parents=True)
        elif words[0] == "kb":
            done = run_kb(*words[1:], cwd=cwd)
            shown = done.stdout + done.stderr
            assert done.returncode == 0, f"{line}\n{shown}"
            assert "Traceback" not in shown, shown
            for code in re.findall(r"KB\d{3}", comment):
                assert f" {code} " in shown, f"{line}: expected {code}\n{shown}"
        else:
            raise AssertionError(f"the tutorial runs '{words[0]}', which this test does not know how to run")
    return cwd


@pytest.mark.parametrize("starter", STARTERS)
def test_the_tutorial_runs_as_written(tmp_path, starter):
    cwd = tmp_path
    ran = {"sh": 0, "file": 0, "merge": 0}
    for lang, info, text in steps():
        if lang == "sh":
            cwd = run_commands(text, cwd, starter)
            ran["sh"] += 1
        elif "file" in info:
            (cwd / info["file"]).write_text(text, encoding="utf-8")
            ran["file"] += 1
        elif "merge" in info:
            path = cwd / info["merge"]
            data = json.loads(path.read_text(encoding="utf-8"))
            merge(data, json.loads(text))
            path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            ran["merge"] += 1
    assert ran == {"sh": 6, "file": 3, "merge": 1}, ran  # the test followed every block
    # what the tutorial says the reader ends with
    explained = run_kb("explain", "gpus/acme-x1.ridge_point_fp8", cwd=cwd).stdout
    assert explained.splitlines()[0] == "gpus/acme-x1.ridge_point_fp8 = 468.8 FLOP/B"
    read_time = run_kb("explain", "gpus/acme-x1.memory_read_time", cwd=cwd).stdout
    assert read_time.splitlines()[0] == "gpus/acme-x1.memory_read_time = 30 ms"
    found = json.loads(run_kb("query", "memory_bandwidth>3 TB/s", "--format", "json", cwd=cwd).stdout)
    assert [row["key"] for row in found] == ["gpus/acme-x1"]
    check = run_kb("check", cwd=cwd)
    assert check.returncode == 0 and " error " not in check.stdout, check.stdout
    # every file the tutorial has the reader write is as kb fmt writes it: its kb-fmt hook passes on them
    fmt = run_kb("fmt", "--check", cwd=cwd)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    assert " KB500 " not in check.stdout and " KB561 " not in check.stdout
