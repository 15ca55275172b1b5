"""Structured answers: `send --schema FILE` and the result's `output_json`,
black-box through the CLI with the mock adapter (docs/PROTOCOL-COMMANDS.md section 18).
The real codex and Claude are in test_codex_real.py and test_claudecode_real.py."""

from __future__ import annotations

import json
import os

import pytest
from cliutil import ROOT, events, ok, only, run, status, wait_for, wait_results

from harnessctl.store import registry

FILES = {"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}}},
         "required": ["files"]}


@pytest.fixture
def schema_file(workdir):
    """Writes a schema (or any text) to a file and returns its path."""
    def write(value, name="schema.json"):
        path = str(workdir / name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(value if isinstance(value, str) else json.dumps(value))
        return path
    return write


def send_wait(path, text, schema_path, *flags):
    return run("send", path, text, "--adapter", "mock", "--schema", schema_path, "--wait", *flags)


def test_result_carries_a_value_built_from_the_schema(efile, schema_file):
    proc = send_wait(efile, "which files?", schema_file(FILES))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "completed" and result["output_json"] == {"files": []}


def test_output_json_is_the_answer_parsed(efile, schema_file):
    proc = send_wait(efile, '/json {"files": ["a.py", "b.py"]}', schema_file(FILES))
    result = json.loads(proc.stdout)
    assert result["output_json"] == {"files": ["a.py", "b.py"]} and result["output"] == '{"files": ["a.py", "b.py"]}'


def test_mock_placeholders_follow_required_types_enums_and_min_items(efile, schema_file):
    schema = {"type": "object", "required": ["verdict", "count", "score", "ok", "tags", "nested"],
              "properties": {"verdict": {"enum": ["pass", "fail"]}, "count": {"type": "integer"},
                             "score": {"type": "number"}, "ok": {"type": "boolean"},
                             "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                             "nested": {"type": "object", "properties": {"a": {"type": ["null", "string"]}}},
                             "optional": {"type": "string"}}}
    result = json.loads(send_wait(efile, "judge", schema_file(schema)).stdout)
    assert result["output_json"] == {"verdict": "pass", "count": 0, "score": 0, "ok": False,
                                     "tags": ["string", "string"], "nested": {"a": "string"}}


def test_an_answer_that_is_not_json_fails_the_run_with_error_class_schema_and_exit_7(efile, schema_file):
    proc = send_wait(efile, "/json the files are a.py and b.py", schema_file(FILES))
    assert proc.returncode == 7
    result = json.loads(proc.stdout)
    assert (result["status"], result["error_class"]) == ("failed", "schema")
    assert result["output"] == "the files are a.py and b.py" and "output_json" not in result
    assert status(efile)["state"] == "failed"


def test_nan_is_not_json(efile, schema_file):
    proc = send_wait(efile, '/json {"files": NaN}', schema_file(FILES))
    assert proc.returncode == 7 and json.loads(proc.stdout)["error_class"] == "schema"


def test_the_schema_is_recorded_in_the_accepted_line_of_its_send(efile, schema_file):
    ok("send", efile, "which files?", "--adapter", "mock", "--schema", schema_file(FILES))
    wait_results(efile, 1)
    accepted = [e for e in events(efile) if e["type"] == "accepted"]
    assert [a["schema"] for a in accepted] == [FILES]


def test_a_send_without_schema_has_no_schema_and_no_output_json(efile, schema_file):
    assert send_wait(efile, "first", schema_file(FILES)).returncode == 0
    proc = run("send", efile, "second", "--wait")
    result = json.loads(proc.stdout)
    assert result["output"] == "echo: second" and "output_json" not in result
    assert "schema" not in [e for e in events(efile) if e["type"] == "accepted"][-1]


def test_a_schema_send_into_a_busy_run_exits_2_and_the_run_goes_on(efile, schema_file):
    ok("send", efile, "/sleep 30\nslow", "--adapter", "mock")
    wait_for(lambda: status(efile)["state"] == "running", what="the run")
    proc = run("send", efile, "now with a schema", "--schema", schema_file(FILES))
    assert proc.returncode == 2
    assert b"a run is going on" in proc.stderr and b"send with --queue" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert status(efile)["state"] == "running"
    assert [e["text"] for e in events(efile) if e["type"] == "accepted"] == ["/sleep 30\nslow"]


def test_a_plain_steer_into_a_schema_run_joins_it_and_the_run_still_answers_json(efile, schema_file):
    """The run waits on a question while the steer comes: it cannot end first."""
    ok("send", efile, "/question which files?\nlist", "--adapter", "mock", "--schema", schema_file(FILES))
    wait_for(lambda: status(efile)["state"] == "awaiting_reply", what="the run's question")
    ok("send", efile, "also this")
    ok("reply", efile, status(efile)["requests"][0]["request_id"], "none")
    result = only(wait_results(efile, 1))
    assert len(result["input_ids"]) == 2 and result["output_json"] == {"files": []}


@pytest.mark.parametrize("content, says", [
    ("not json", b"is not JSON"),
    ("[1, 2]", b"a schema document is a JSON object"),
    (b"\xff\xfe{}", b"not valid UTF-8"),
    ("x" * (256 * 1024 + 1), b"larger than 256 KiB"),
], ids=["not-json", "not-an-object", "not-utf8", "too-large"])
def test_a_schema_file_that_is_not_a_schema_exits_2_and_nothing_is_sent(efile, workdir, content, says):
    path = str(workdir / "bad.json")
    with open(path, "wb") as f:
        f.write(content if isinstance(content, bytes) else content.encode())
    proc = run("send", efile, "hello", "--adapter", "mock", "--schema", path)
    assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not os.path.exists(efile)


def test_a_missing_schema_file_exits_2(efile, workdir):
    proc = run("send", efile, "hello", "--adapter", "mock", "--schema", str(workdir / "none.json"))
    assert proc.returncode == 2 and b"No such file or directory" in proc.stderr


@pytest.mark.parametrize("agent", sorted(registry.manifest("acp")["agents"]))
def test_an_acp_preset_refuses_a_schema_with_exit_2_naming_it_before_anything_is_bound(efile, schema_file, agent):
    proc = run("send", efile, "hello", "--adapter", "acp", "--agent", agent, "--schema", schema_file(FILES))
    assert proc.returncode == 2
    message = proc.stderr.decode()
    assert "the acp agent %s cannot promise an answer that fits a schema" % agent in message
    assert "ACP v1" in message and len(message.splitlines()) == 1
    assert not os.path.exists(efile) and not os.path.exists(efile + ".d")


def test_an_acp_agent_bound_already_refuses_a_schema_with_exit_2(efile, workdir, schema_file):
    fake = os.path.join(ROOT, "tests", "support", "acp_support", "fake_agent.py")
    agent = "%s %s" % (os.environ.get("PYTHON", "python3"), fake)
    ok("send", efile, "hello", "--adapter", "acp", "--agent", agent, "--wait")
    proc = run("send", efile, "again", "--schema", schema_file(FILES))
    assert proc.returncode == 2 and b"cannot promise an answer that fits a schema" in proc.stderr
    assert len([e for e in events(efile) if e["type"] == "accepted"]) == 1


def test_log_shows_output_json_pretty_printed_under_the_result(efile, schema_file):
    assert send_wait(efile, '/json {"files": ["a.py"]}', schema_file(FILES)).returncode == 0
    text = ok("log", efile).stdout.decode()
    assert '=== result completed' in text
    after = text.split("=== result completed", 1)[1].splitlines()[1:]
    assert after == ['    {', '      "files": [', '        "a.py"', '      ]', '    }']
    assert "(start, run " in text and ", --schema)" in text


def test_log_json_carries_schema_and_output_json(efile, schema_file):
    assert send_wait(efile, "which?", schema_file(FILES)).returncode == 0
    entries = [json.loads(line) for line in ok("log", efile, "--json").stdout.splitlines()]
    assert only([e for e in entries if e["entry"] == "input"])["schema"] == FILES
    assert only([e for e in entries if e["entry"] == "result"])["output_json"] == {"files": []}
