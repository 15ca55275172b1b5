"""Values an agent supplies that the runtime cannot encode or check (issue 32,
"The rest"): a run still ends with its `result`, the value dropped or
replaced and a `diagnostic` saying so; readers of the file never crash on
one; and characters a terminal acts on are stored escaped."""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess

import pytest
from cliutil import ROOT, cli_env, events, matching, ok, only, results, run, runtime_pids, start, wait_for

from harnessctl.eventfile.eventlog import EventLog

FAKE_ACP = os.path.join(ROOT, "tests", "support", "acp_support", "fake_agent.py")
HUGE = "9" * 4300  # a count the stand-in reads and writes; two of them add up to 4301 digits


def nested(depth: int) -> str:
    return "[" * depth + "0" + "]" * depth


def schema_file(workdir) -> str:
    path = os.path.join(str(workdir), "schema.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"type": "array"}')
    return path


def lines_of(path: str) -> list:
    with open(path, "rb") as f:
        return f.read().split(b"\n")


def test_a_token_count_of_4300_digits_is_ignored_and_the_run_ends(efile):
    proc = run("send", efile, "/usage %s %s" % (HUGE, HUGE), "--adapter", "mock", "--wait")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "completed"
    assert result["usage"] == {"input_tokens": None, "output_tokens": None}
    assert result["totals"]["tokens"] == 0
    assert any("too large" in e["message"] for e in matching(efile, "log", "diagnostic"))


def test_send_wait_without_timeout_returns_after_a_token_count_it_cannot_write(efile):
    proc = run("send", efile, "/usage %s %s" % (HUGE, HUGE), "--adapter", "mock", "--wait")
    assert proc.returncode == 0 and only(results(efile))["status"] == "completed", proc.stderr


def test_an_answer_nested_980_deep_fails_its_schema_check_with_a_reason(efile, workdir):
    proc = run("send", efile, "/json " + nested(980), "--adapter", "mock", "--schema", schema_file(workdir), "--wait")
    assert proc.returncode == 7, proc.stderr
    result = json.loads(proc.stdout)
    assert result["error_class"] == "schema" and "levels deep" in result["error"]
    assert "output_json" not in result


def test_a_permission_path_with_a_nul_parks_the_request_while_rules_are_bound(efile, workdir):
    tool = {"toolCallId": "call_edit", "kind": "edit", "title": "edit", "rawInput": {},  # a call of its own:
            "locations": [{"path": "src/a\u0000b.py"}]}  # no command of the fake's /approve rides along
    env = cli_env(FAKE_ACP_HOME=os.path.join(str(workdir), "sessions"), FAKE_ACP_APPROVE_TOOL=json.dumps(tool))
    proc = run("send", efile, "/approve", "--adapter", "acp", "--agent", FAKE_ACP, "--allow", "file_change:*",
               "--wait", env=env)
    assert proc.returncode == 9, proc.stderr
    request = json.loads(proc.stdout)
    assert request["state"] == "pending" and request["paths"] == ["src/a\u0000b.py"]
    ok("reply", efile, request["request_id"], "deny", env=env)
    assert ok("wait", efile, env=env).returncode == 0


def appended(path: str, event: dict) -> dict:
    """`event` appended to the event file at `path` by an EventLog, as the runtime would."""
    last_seq = max([e["seq"] for e in events(path)] or [0])
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    log = EventLog(fd, path, last_seq)
    try:
        return log.append(event)
    finally:
        log.close()


def test_an_event_that_cannot_be_encoded_is_written_with_the_values_replaced_and_a_diagnostic(efile):
    ok("send", efile, "hello", "--adapter", "mock", "--wait", env=cli_env(HARNESSCTL_IDLE_TIMEOUT="0.3"))
    wait_for(lambda: not runtime_pids(efile), what="the runtime's idle exit")  # else its next line may come between
    before = open(efile, "rb").read()
    deep: list = []
    for _ in range(3000):
        deep = [deep]
    written = appended(efile, {"type": "log", "level": "info", "kind": "x", "count": 10 ** 5000, "deep": deep})
    after = open(efile, "rb").read()
    assert after.startswith(before) and after.endswith(b"\n")
    added = [json.loads(line) for line in after[len(before):].splitlines()]
    assert added[0] == written and written["count"] is None
    assert "count" in added[1]["message"] and "deep" in added[1]["message"]
    assert added[1]["kind"] == "diagnostic" and added[1]["seq"] == written["seq"] + 1


def test_a_result_that_cannot_be_encoded_is_still_written(efile):
    ok("send", efile, "hello", "--adapter", "mock", "--wait")
    ok("cancel", efile)
    written = appended(efile, {"type": "result", "run_id": None, "input_ids": [], "status": "completed",
                               "output": "", "usage": {"input_tokens": 10 ** 4400}})
    assert results(efile)[-1] == written and written["usage"] == {"input_tokens": None}


@pytest.mark.parametrize("depth", [500, 900])
def test_log_shows_an_output_json_nested_hundreds_deep_without_crashing(efile, depth):
    ok("send", efile, "hello", "--adapter", "mock", "--wait")
    ok("cancel", efile)
    with open(efile, "a", encoding="utf-8") as f:  # a file another version or another tool wrote
        last = events(efile)[-1]["seq"]
        f.write('{"type":"result","ts":"2026-01-01T00:00:00.000Z","seq":%d,"run_id":null,"input_ids":[],'
                '"status":"completed","output":"","usage":null,"cost_usd":null,"error":null,"output_json":%s}\n'
                % (last + 1, nested(depth)))
    text = run("log", efile, "--since", "1")
    assert text.returncode == 0 and b"=== result completed" in text.stdout, text.stderr
    as_json = run("log", efile, "--since", "1", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert all(isinstance(json.loads(line), dict) for line in as_json.stdout.splitlines())


@pytest.mark.parametrize("command", [["status"], ["log"], ["log", "--json"], ["wait"]])
def test_a_line_nested_too_deep_to_parse_is_skipped_not_a_crash(efile, workdir, command):
    ok("send", efile, "hello", "--adapter", "mock", "--wait")
    copy = os.path.join(str(workdir), "copy.jsonl")  # no runtime: every command reads the file itself
    shutil.copyfile(efile, copy)
    with open(copy, "a", encoding="utf-8") as f:
        f.write('{"type":"log","deep":%s}\n' % nested(100000))
    proc = run(command[0], copy, *command[1:])
    assert proc.returncode == 0, proc.stderr


# What a terminal acts on that JSON may hold raw: C1 controls, bidi marks,
# embeddings, overrides and isolates, the Unicode line and paragraph separators.
TERMINAL_CHARS = "\u0085\u009b\u0080\u009f\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069" \
                 "\u2028\u2029"
RAW = re.compile("[\u0080-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def test_c1_and_bidi_characters_from_the_agent_are_stored_escaped(efile):
    text = "say " + "x".join(TERMINAL_CHARS) + " é ü 日本 ✓"
    ok("send", efile, text, "--adapter", "mock", "--wait")
    for line in lines_of(efile):
        assert not RAW.search(line.decode("utf-8")), line
    message = only(matching(efile, "message"))
    assert message["text"] == "echo: " + text
    assert "é ü 日本 ✓".encode("utf-8") in open(efile, "rb").read()  # the rest stays UTF-8
    shown = [json.loads(line) for line in ok("log", efile, "--json").stdout.splitlines()]
    assert any(entry.get("text") == "echo: " + text for entry in shown)


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_jq_reads_the_escaped_characters_back_as_the_same_value(efile):
    text = "say " + TERMINAL_CHARS
    ok("send", efile, text, "--adapter", "mock", "--wait")
    out = subprocess.run(["jq", "-c", 'select(.type == "message") | .text'], stdin=open(efile, "rb"),
                         stdout=subprocess.PIPE, check=True).stdout
    assert json.loads(out) == "echo: " + text


# -- waits that cannot end as they began ------------------------------------------------------


def sockets_of(pid: int) -> bool:
    """Whether process `pid` holds a socket (a wait connected to its runtime)."""
    try:
        return any(os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:")
                   for fd in os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return False


def test_a_wait_whose_file_is_replaced_meanwhile_exits_6_with_one_line(efile, workdir):
    ok("send", efile, "/sleep 600", "--adapter", "mock")
    waiting = start("wait", efile)
    wait_for(lambda: sockets_of(waiting.pid), what="the wait to reach the runtime")
    copy = os.path.join(str(workdir), "copy.jsonl")
    shutil.copyfile(efile, copy)
    os.replace(copy, efile)  # another file at the same name
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 6, (out, err)
    assert out == b"" and len(err.splitlines()) == 1 and b"replaced" in err


def test_send_wait_exits_6_when_its_input_was_accepted_but_the_runtime_holds_no_more_waits(efile):
    def few_descriptors() -> None:  # the runtime this send starts holds no wait at all (server.RESERVE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))

    first = run("send", efile, "hello", "--adapter", "mock", stdin=subprocess.DEVNULL, preexec_fn=few_descriptors)
    assert first.returncode == 0, first.stderr
    proc = run("send", efile, "again", "--wait")
    assert proc.returncode == 6, proc.stderr
    accepted = [e for e in events(efile) if e["type"] == "accepted" and e["text"] == "again"]
    assert len(accepted) == 1 and accepted[0]["input_id"].encode() in proc.stderr
