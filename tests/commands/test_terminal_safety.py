"""Nothing an agent writes drives the reader's terminal (docs/PROTOCOL-COMMANDS.md section 16).

Every string harnessctl prints goes through one cleaner (harnessctl/visible.py):
control characters, bidi overrides, line separators and zero-width characters
are shown escaped in `log`'s text and written as JSON escapes in JSON output;
a newline in a one-line field cannot start a transcript line of its own; an
option id that is not a plain token is renamed before it reaches the file."""

from __future__ import annotations

import json
import shlex

import pytest
from acp_support.fakeagent import Agent
from cliutil import cli_env, of_type, ok, run, wait_for
from logutil import RUN, accepted, log, result, write_events

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # sets the clipboard to `rm -rf ~`
# C0, DEL, C1, bidi embedding/override/isolate, line and paragraph separators, zero-width characters
UNSAFE = ["\x1b", "\x07", "\r", "\x7f", "\x85", "\x9b", "\u202a", "\u202e", "\u2066", "\u2069", "\u2028",
          "\u2029", "\u200b", "\u200d", "\u2060", "\ufeff"]
HOSTILE = "x" + "".join(UNSAFE) + "y"


def raw_unsafe(text):
    """The unsafe characters found unescaped in `text`."""
    return [c for c in UNSAFE if c in text]


def pending_request(**fields):
    event = {"type": "request", "run_id": RUN, "request_id": "req-1", "state": "pending", "kind": "permission",
             "message": "may I?", "options": ["allow", "deny"]}
    event.update(fields)
    return event


@pytest.mark.parametrize("field", ["request_id", "kind", "state"])
def test_a_requests_own_fields_are_shown_escaped(efile, field):
    write_events(efile, pending_request(**{field: HOSTILE}))
    assert raw_unsafe(log(efile)) == []


def test_a_pending_requests_options_and_reply_commands_are_shown_escaped(efile):
    write_events(efile, pending_request(options=["allow", OSC52]))
    text = log(efile)
    assert raw_unsafe(text) == [] and "\\x1b]52;c;cm0gLXJmIH4=\\x07" in text


@pytest.mark.parametrize("event", [
    accepted("go", delivery=HOSTILE),
    {"type": "message", "run_id": RUN, "message_id": "m", "role": HOSTILE, "text": "hi"},
    {"kind": "tool.completed", "tool_id": "t", "tool": "command", "name": "sh", "title": "make",
     "status": HOSTILE, "exit_code": 1, "output": "", "duration_ms": 1},
    result(HOSTILE),
    result(run_id=HOSTILE),
], ids=["delivery", "role", "tool-status", "result-status", "run-id"])
def test_one_word_fields_are_shown_escaped(efile, event):
    write_events(efile, event)
    assert raw_unsafe(log(efile)) == []


def test_bidi_overrides_line_separators_zero_width_and_c1_in_a_message_are_shown_escaped(efile):
    write_events(efile, {"type": "message", "run_id": RUN, "message_id": "m", "text": HOSTILE})
    text = log(efile)
    assert raw_unsafe(text) == [] and "\\u202e" in text and "\\x85" in text and "\\u200b" in text


def test_a_messages_own_newlines_and_tabs_are_kept(efile):
    write_events(efile, {"type": "message", "run_id": RUN, "message_id": "m", "text": "one\n\ttwo"})
    assert log(efile).splitlines() == ["<<< assistant", "    one", "    \ttwo"]


FORGED = "\n=== result completed (run 0b9e1111)"


@pytest.mark.parametrize("event", [
    {"kind": "file.changed", "tool_id": "t", "path": "a.py" + FORGED, "change": "update", "move_path": None,
     "diff": "", "added": 1, "removed": 0},
    {"kind": "file.changed", "tool_id": "t", "path": "a.py", "change": "move", "move_path": "b.py" + FORGED,
     "diff": "", "added": 1, "removed": 0},
    {"kind": "warning", "level": "warning", "message": "careful" + FORGED, "source": None},
    {"kind": "warning", "level": "warning", "message": "careful", "source": "cfg" + FORGED},
    {"kind": "session", "session_id": "s", "harness": "codex", "version": "1" + FORGED, "model": None,
     "approval_policy": None, "sandbox": None},
    {"kind": "tool.completed", "tool_id": "t", "tool": "command", "name": "sh", "title": "make" + FORGED,
     "status": "completed", "exit_code": 0, "output": "", "duration_ms": 1},
    {"kind": "api.retry", "level": "warning", "error": "overloaded" + FORGED},
], ids=["path", "move-path", "warning", "warning-source", "session", "tool-title", "log-field"])
def test_a_newline_in_a_one_line_field_cannot_forge_a_transcript_line(efile, event):
    write_events(efile, event)
    lines = log(efile).splitlines()
    assert len(lines) == 1 and not any(line.startswith("===") for line in lines)


def test_json_output_carries_no_unsafe_character_unescaped_and_parses_to_the_same_text(efile):
    write_events(efile, {"type": "message", "run_id": RUN, "message_id": "m", "text": HOSTILE + "\U000e0041"},
                 pending_request(options=["allow", OSC52]))
    out = log(efile, "--json")
    assert raw_unsafe(out) == [] and "\U000e0041" not in out
    entries = [json.loads(line) for line in out.splitlines()]
    assert entries[0]["text"] == HOSTILE + "\U000e0041" and entries[1]["options"] == ["allow", OSC52]


def test_an_error_message_reaches_stderr_escaped(workdir):
    path = str(workdir / ("events" + OSC52 + "\u202e.jsonl"))
    proc = run("status", path)
    assert proc.returncode == 4 and raw_unsafe(proc.stderr.decode()) == [] and b"\\x1b]52" in proc.stderr


def test_the_status_line_carries_no_unsafe_character_unescaped(efile):
    assert run("send", efile, "/permission may I\u202e\x85 go?", "--adapter", "mock", "--wait").returncode == 9
    line = ok("status", efile).stdout.decode()
    assert raw_unsafe(line) == [] and json.loads(line)["requests"][0]["message"] == "may I\u202e\x85 go?"


def test_the_line_wait_prints_carries_no_unsafe_character_unescaped(efile):
    proc = run("send", efile, "/fail broken\u202e\x85 disk", "--adapter", "mock", "--wait")
    assert proc.returncode == 7 and raw_unsafe(proc.stdout.decode()) == []
    assert json.loads(proc.stdout)["error"] == "broken\u202e\x85 disk"


EVERY_KIND = [
    accepted("go"),
    {"type": "message", "run_id": RUN, "message_id": "m", "role": "assistant", "text": "hi"},
    {"type": "request", "run_id": RUN, "request_id": "req-1", "state": "pending", "kind": "question", "message": "m",
     "options": ["allow"], "questions": [{"id": "q1", "question": "?", "options": ["a"]}]},
    {"type": "request", "run_id": RUN, "request_id": "req-2", "state": "replied", "kind": "permission",
     "message": "m", "options": ["allow"], "answer": {"q1": "a"}},
    {"kind": "text.delta", "message_id": "x", "text": "t"},
    {"kind": "reasoning.delta", "text": "t", "form": "raw"},
    {"kind": "tool.started", "tool_id": "t", "tool": "command", "name": "n", "title": "t", "input": {}},
    {"kind": "tool.completed", "tool_id": "t", "tool": "command", "name": "n", "title": "t", "status": "failed",
     "exit_code": 1, "output": "o", "duration_ms": 5},
    {"kind": "file.changed", "tool_id": "t", "path": "p", "change": "move", "move_path": "q", "diff": "d",
     "added": 1, "removed": 2},
    {"kind": "plan", "entries": [{"text": "a", "status": "pending"}], "explanation": "e"},
    {"kind": "session", "session_id": "s", "harness": "h", "version": "v", "model": "m", "approval_policy": "a",
     "sandbox": "s"},
    {"kind": "warning", "level": "warning", "message": "w", "source": "s"},
    {"kind": "other", "level": "warning", "message": "w", "detail": {"a": "b"}},
    result(error="e", error_class="c"),
]


def hostile(value):
    """`value` with every string in it (but the type and kind that route it) made hostile."""
    if isinstance(value, str):
        return HOSTILE + value + FORGED
    if isinstance(value, list):
        return [hostile(v) for v in value]
    if isinstance(value, dict):
        return {k: v if k in ("type", "kind", "level") else hostile(v) for k, v in value.items()}
    return value


def test_every_string_field_of_every_kind_is_shown_escaped_and_forges_no_line(efile):
    write_events(efile, *[hostile(event) for event in EVERY_KIND])
    text, out = log(efile, "--diff"), log(efile, "--json")
    assert raw_unsafe(text) == [] and raw_unsafe(out) == []
    assert sum(line.startswith("===") for line in text.splitlines()) == 1  # the result's own line


# -- option ids ----------------------------------------------------------------------------


def hostile_option_agent(workdir):
    """The fake ACP agent offering, besides its own, an option whose id is an OSC 52 sequence."""
    extra = [{"optionId": OSC52 + "harnessctl reply", "name": "Clipboard", "kind": "custom"}]
    return Agent(workdir, FAKE_ACP_EXTRA_OPTIONS=json.dumps(extra))


def test_an_option_id_that_is_not_a_plain_token_is_renamed_and_kept_in_the_event(workdir):
    agent = hostile_option_agent(workdir)
    agent.start("/approve 1")
    request = wait_for(lambda: of_type(agent.path, "request"), what="the permission request")[0]
    assert request["options"] == ["allow", "allow-session", "deny", "option-4"]
    assert request["agent_options"] == {"option-4": OSC52 + "harnessctl reply"}


def test_reply_with_a_renamed_option_reaches_the_agent_as_its_own_id(workdir):
    agent = hostile_option_agent(workdir)
    input_id = agent.start("/approve 1")
    wait_for(lambda: of_type(agent.path, "request"), what="the permission request")
    commands = [line.strip() for line in log(agent.path).splitlines() if "option-4" in line]
    assert commands == ["harnessctl reply %s req-1 option-4" % shlex.quote(agent.path)]
    ok("reply", agent.path, "req-1", "option-4", env=agent.env)
    code, outcome = agent.wait(input_id)
    assert code == 0 and outcome["output"] == "permission: %sharnessctl reply" % OSC52
    assert of_type(agent.path, "request")[-1]["answer"] == "option-4"


def test_no_unsafe_character_of_a_hostile_option_reaches_the_terminal(workdir):
    agent = hostile_option_agent(workdir)
    agent.start("/approve 1")
    wait_for(lambda: of_type(agent.path, "request"), what="the permission request")
    assert raw_unsafe(log(agent.path)) == [] and raw_unsafe(log(agent.path, "--json")) == []
    assert raw_unsafe(ok("status", agent.path, env=cli_env()).stdout.decode()) == []
