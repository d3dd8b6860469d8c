"""kb new model --from-config given a hostile or broken config: every one is refused with a message that
names the file and the key, at once, with nothing written and nothing raw reaching the terminal.
(Issue 30, item 5.) Cases that hung or ran for minutes run `kb` as a subprocess with a timeout, so a
regression fails instead of hanging the suite."""

from __future__ import annotations

import json
import os
import resource
import subprocess

import pytest
from conftest import KB_SCRIPT
from test_from_config import GQA, SLIDING

# kb new's exit code for a request it refuses: a usage error (kbtools.cli EXIT_USAGE, as README says)
REFUSED = 2


def written_records(kb) -> list[str]:
    return sorted(p.relative_to(kb.root).as_posix() for p in (kb.root / "records").rglob("*") if p.is_file())


def new_from(kb, config_path, name="Some Model", *extra):
    kb.source()
    return kb.run("new", "model", "--name", name, "--source", "src-a", "--from-config", str(config_path), *extra)


def new_from_text(kb, text: str, name="Some Model"):
    path = kb.root / "config.json"
    path.write_text(text, encoding="utf-8")
    return new_from(kb, path, name)


def refused(kb, result, *messages):
    assert result.exit_code == REFUSED, (result.out, result.err)
    assert "Traceback" not in result.err and "KB900" not in result.out + result.err, result.err
    for message in messages:
        assert message in result.err, result.err
    assert result.err.count("\n") == 1, result.err  # one line
    assert written_records(kb) == ["records/sources/src-a.md"]


def _limited_memory() -> None:
    # a regression that reads a device without end fails on this instead of filling the machine
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def kb_subprocess(kb, config_path) -> subprocess.CompletedProcess:
    kb.source()
    return subprocess.run(
        [KB_SCRIPT, "--root", str(kb.root), "new", "model", "--name", "Some Model", "--source", "src-a"]
        + ["--from-config", str(config_path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        preexec_fn=_limited_memory,
    )


def refused_subprocess(kb, proc, *messages):
    assert proc.returncode == REFUSED, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "KB900" not in proc.stdout + proc.stderr, proc.stderr
    for message in messages:
        assert message in proc.stderr, proc.stderr
    assert written_records(kb) == ["records/sources/src-a.md"]


def test_a_config_nested_ten_thousand_deep_is_refused(kb):
    result = new_from_text(kb, '{"num_hidden_layers": 2, "x": ' + "[" * 10_000 + "]" * 10_000 + "}")
    refused(kb, result, "config.json: nested more than 32 levels deep", "nothing written")


def test_a_config_nested_a_little_too_deep_is_refused_the_same_way(kb):
    deep = {**GQA, "rope_scaling": json.loads("[" * 40 + "]" * 40)}
    refused(kb, new_from_text(kb, json.dumps(deep)), "config.json: nested more than 32 levels deep")


def test_real_nesting_still_reads(kb):
    ok = {**GQA, "quantization_config": {"config_groups": {"group_0": {"weights": {"num_bits": 8}}}}}
    assert new_from_text(kb, json.dumps(ok)).exit_code == 0


def test_layer_types_with_120000_unknown_kinds_answers_at_once(kb):
    config = {**SLIDING, "layer_types": [f"kind_{i}" for i in range(120_000)]}
    del config["num_hidden_layers"]
    path = kb.root / "config.json"
    path.write_text(json.dumps(config))
    proc = kb_subprocess(kb, path)
    refused_subprocess(kb, proc, "config.json: 'layer_types' lists 120000 layers; kb reads at most 10000")


def test_many_unknown_layer_kinds_are_named_a_few_at_a_time(kb):
    kinds = [f"kind_{i}" for i in range(9_000)]
    config = {**SLIDING, "num_hidden_layers": 9_000, "layer_types": kinds}
    result = new_from_text(kb, json.dumps(config))
    refused(kb, result, "layer_types has kinds kb does not know: 'kind_0', 'kind_1', 'kind_2'", "and 8,995 more")
    assert len(result.err) < 500


def test_a_fifo_as_config_is_refused_without_blocking(kb):
    fifo = kb.root / "config.json"
    os.mkfifo(fifo)
    proc = kb_subprocess(kb, fifo)
    refused_subprocess(kb, proc, "config.json: not a regular file but a FIFO", "nothing written")


def test_a_link_to_dev_zero_as_config_is_refused_without_reading_it(kb):
    link = kb.root / "config.json"
    link.symlink_to("/dev/zero")
    proc = kb_subprocess(kb, link)
    refused_subprocess(kb, proc, "config.json: not a regular file but a device", "nothing written")


def test_a_directory_as_config_is_refused(kb):
    (kb.root / "config.json").mkdir()
    refused(kb, new_from(kb, kb.root / "config.json"), "not a regular file but a directory")


def test_a_missing_config_is_refused(kb):
    refused(kb, new_from(kb, kb.root / "nowhere.json"), "nowhere.json: cannot read file: No such file or directory")


def test_an_oversized_config_is_refused_unread(kb):
    path = kb.root / "config.json"
    with open(path, "wb") as handle:
        handle.truncate(6 << 20)  # sparse: no 6 MiB written
    refused(kb, new_from(kb, path), "config.json: file is 6.0 MiB; kb reads at most 5 MiB here (it was not read)")


def test_a_config_that_is_not_utf8_is_refused(kb):
    path = kb.root / "config.json"
    path.write_bytes(b'{"model_type": "\xff"}')
    refused(kb, new_from(kb, path), "config.json: not UTF-8 (at byte 17)")


def test_keys_with_escapes_and_newlines_never_reach_the_terminal_raw(kb):
    config = {**GQA, "\x1b[2J\x1b]0;owned\x07": 1, "evil\nkb new: forged line": 2}
    result = new_from_text(kb, json.dumps(config))
    assert result.exit_code == 0, result.err
    printed = result.out + result.err
    assert "\x1b" not in printed and "\x07" not in printed
    assert not any(line.startswith("kb new: forged") for line in printed.splitlines())
    assert "\\x1b[2J\\x1b]0;owned\\x07" in result.out and "evil\\nkb new: forged line" in result.out


def test_a_key_with_an_8_bit_control_sequence_is_shown_escaped(kb):
    # U+009B is CSI to a terminal that takes C1 controls, as ESC [ is to every terminal
    result = new_from_text(kb, json.dumps({**GQA, "\x9b2J": 1}))
    assert result.exit_code == 0, result.err
    assert "\x9b" not in result.out and "\\x9b2J" in result.out


def test_many_unknown_keys_are_listed_a_bounded_number_at_a_time(kb):
    config = {**GQA, **{f"knob_{i:05}": i for i in range(10_000)}, "x" * 5_000: 1}
    result = new_from_text(kb, json.dumps(config))
    assert result.exit_code == 0, result.err
    (line,) = [line for line in result.out.splitlines() if "config keys kb does not map" in line]
    assert "knob_00000, knob_00001" in line and "(and 9,951 more)" in line and len(line) < 2_000


def test_an_escape_in_a_bad_value_is_shown_escaped(kb):
    result = new_from_text(kb, json.dumps({**GQA, "num_hidden_layers": "\x1b[31mred\n"}))
    refused(kb, result, "'num_hidden_layers' is '\\x1b[31mred\\n'")
    assert "\x1b" not in result.err


@pytest.mark.parametrize("name_at", ["--name", "--id"])
def test_a_5000_character_name_or_id_is_refused_before_any_path_is_made(kb, name_at):
    long = "a" * 5_000
    path = kb.root / "config.json"
    path.write_text(json.dumps(GQA))
    if name_at == "--name":
        result = new_from(kb, path, long)
        message = "cannot make an id from 'aaaa"
    else:
        result = new_from(kb, path, "Some Model", "--id", long)
        message = "--id 'aaaa"
    refused(kb, result, message, "is at most 100 characters (this one has 5000)); pass ", "--id")
    assert long not in result.err


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("num_hidden_layers", "4" * 4_000, "'num_hidden_layers' is a 4000-digit number"),
        ("num_hidden_layers", "9" * 5_000, "'num_hidden_layers' is a 5000-digit number"),
        ("num_hidden_layers", "10001", "'num_hidden_layers' is 10001; it must be a whole number from 1 to 10,000"),
        ("num_attention_heads", "1000001", "'num_attention_heads' is 1000001; it must be a whole number from 1 to"),
        ("hidden_size", "100000000", "'hidden_size' is 100000000; it must be a whole number from 1 to 10,000,000"),
        ("max_position_embeddings", "-5", "'max_position_embeddings' is -5; it must be a whole number from 1 to"),
        (
            "sliding_window",
            "1" + "0" * 40,
            "'sliding_window' is a 41-digit number; it must be a whole number from 1 to",
        ),
        (
            "sliding_window",
            "1" + "0" * 19,
            "'sliding_window' is 10000000000000000000; it must be a whole number from 1 to 1,000,000,000",
        ),
    ],
)
def test_out_of_range_numbers_are_refused_naming_the_key(kb, key, value, message):
    base = {**GQA, "model_type": "mistral"} if key == "sliding_window" else GQA  # Mistral's code reads a window
    text = json.dumps({k: v for k, v in base.items() if k != key})[:-1] + f', "{key}": {value}}}'
    result = new_from_text(kb, text)
    refused(kb, result, "config.json: " + message, "nothing written")
    assert len(result.err) < 300


def test_a_big_number_under_a_key_kb_does_not_read_is_only_listed(kb):
    text = json.dumps(GQA)[:-1] + ', "mystery": ' + "7" * 5_000 + "}"
    result = new_from_text(kb, text)
    assert result.exit_code == 0, result.err
    assert "config keys kb does not map: mystery" in result.out


def test_force_never_reads_a_fifo_planted_as_the_record(kb):
    kb.source()
    (kb.root / "records/models").mkdir()
    os.mkfifo(kb.root / "records/models/some-model.md")
    (kb.root / "config.json").write_text(json.dumps(GQA))
    proc = subprocess.run(
        [KB_SCRIPT, "--root", str(kb.root), "new", "model", "--name", "Some Model", "--source", "src-a"]
        + ["--from-config", str(kb.root / "config.json"), "--force"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        preexec_fn=_limited_memory,
    )
    assert proc.returncode == REFUSED, (proc.stdout, proc.stderr)
    assert "cannot replace records/models/some-model.md: not a regular file but a FIFO" in proc.stderr
    assert (kb.root / "records/models/some-model.md").is_fifo()
