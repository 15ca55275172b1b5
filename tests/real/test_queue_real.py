"""`send --queue`, `send --interrupt` and `cancel FILE INPUT_ID` (docs/PROTOCOL-COMMANDS.md
sections 6 and 8) on the real codex 0.171.0 and Claude Code 2.1.332, each
against its loopback mock model, which records every request: the contract is
about which request of which run a text reaches, and the mock says so.

A run stays busy while its answer waits at a mock gate the test opens, so no
step races a timeout.  Skipped when a binary is missing, failed instead under
HARNESSCTL_REQUIRE_REAL=1.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest
from claudecode_support.mock_messages import (
    bash,
    conversation_texts,
    last_user_texts,
    reply,
    text,
    tool_results,
    user_texts,
)
from claudecode_support.session import real_session as claude_session
from cliutil import status, wait_for
from codex_support import mock_responses as mr
from codex_support.fixtures import real_session as codex_session

pytestmark = pytest.mark.real

BUSY = "Working on it, slowly."


# -- codex ------------------------------------------------------------------------------------


@pytest.fixture
def codex(workdir):
    with codex_session(workdir) as pair:
        yield pair


def codex_busy(s, mock, words: str = "FIRST: take your time") -> Dict[str, Any]:
    """A codex session whose run waits at the mock gate "busy"; its accepted line."""
    mock.add(mr.text(BUSY, chunks=2, gate="busy"))
    s.send(words, first=not s.events())
    mock.wait_gate("busy")
    return s.events("accepted")[-1]


def codex_send(s, text_: str, *flags: str) -> str:
    proc = s.cmd("send", s.path, text_, "--print-id", *flags)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode().strip()


def codex_texts(requests: List[Dict[str, Any]]) -> List[str]:
    return [t for r in requests for t in mr.user_texts(r)]


def test_codex_queued_text_reaches_the_model_in_the_next_run_only(codex):
    s, mock = codex
    first = codex_busy(s, mock)
    queued = codex_send(s, "QUEUED: then this", "--queue")
    line = s.events("accepted")[-1]
    assert (line["input_id"], line["delivery"], line["run_id"]) == (queued, "queued", None)
    mock.add(mr.text("Did the queued one."))
    mock.release("busy")
    one, two = s.wait("result", 2)
    assert one["input_ids"] == [first["input_id"]] and two["input_ids"] == [queued]
    assert (one["output"], two["output"]) == (BUSY, "Did the queued one.")
    running = [r for r in mock.requests if r["turn_id"] == mock.requests[0]["turn_id"]]
    following = [r for r in mock.requests if r["turn_id"] != mock.requests[0]["turn_id"]]
    assert not any("QUEUED: then this" in t for t in codex_texts(running))
    assert mr.user_texts(following[0])[-1] == "QUEUED: then this"


def test_codex_interrupt_cancels_once_and_the_next_request_holds_the_text_and_the_history(codex):
    s, mock = codex
    mock.add(mr.text("Noted: the word is PINEAPPLE."))
    s.send("Remember the word PINEAPPLE.", first=True)
    s.wait("result")
    busy = codex_busy(s, mock, "Write a long essay.")
    mock.add(mr.text("Short answer instead."))
    proc = s.cmd("send", s.path, "INSTEAD: be brief", "--interrupt", "--wait")
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)["output"] == "Short answer instead."
    results = s.events("result")
    assert [r["status"] for r in results] == ["completed", "cancelled", "completed"]
    assert results[1]["run_id"] == busy["run_id"]
    last = mock.requests[-1]
    assert mr.user_texts(last)[-1] == "INSTEAD: be brief"
    assert "Remember the word PINEAPPLE." in mr.user_texts(last)
    assert "Noted: the word is PINEAPPLE." in mr.assistant_texts(last)


def test_codex_revoked_input_never_reaches_the_model(codex):
    s, mock = codex
    first = codex_busy(s, mock)
    revoked = codex_send(s, "NEVER: take this back", "--queue")
    assert s.cmd("cancel", s.path, revoked).returncode == 0
    (result,) = s.events("result")
    assert (result["input_ids"], result["status"], result["error_class"]) == ([revoked], "cancelled", "revoked")
    mock.release("busy")
    ended = s.wait("result", 2)[1]
    assert (ended["input_ids"], ended["status"]) == ([first["input_id"]], "completed")
    s.send("AFTER: one more")  # any request the revoked input made would come before this one's
    s.wait("result", 3)
    assert mr.user_texts(mock.requests[-1])[-1] == "AFTER: one more"
    assert not any("NEVER: take this back" in t for t in codex_texts(mock.requests + mock.aux))


# -- Claude Code --------------------------------------------------------------------------------


@pytest.fixture
def cc(workdir):
    with claude_session(str(workdir)) as session:
        yield session


def claude_busy(cc, words: str = "FIRST: take your time", tool: bool = True) -> Dict[str, Any]:
    """A Claude session whose run waits at the mock gate "busy"; its accepted line.  With `tool` the
    run calls one once the gate opens, so it makes a second request: where Claude folds a steer."""
    cc.env["HARNESSCTL_CLAUDE_ARGS"] = "--allowedTools Bash"
    if tool:
        cc.mock.script(reply(text("Starting."), bash("echo step-done"), gate="busy", gate_after=1), reply(text(BUSY)))
    else:
        cc.mock.script(reply(text(BUSY), gate="busy", gate_after=1))
    accepted = cc.send(words)
    cc.mock.wait_gate("busy")
    return accepted


def claude_send(cc, text_: str, *flags: str) -> str:
    proc = cc.run("send", cc.path, text_, "--print-id", *flags)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode().strip()


def test_claude_queued_text_reaches_the_model_in_the_next_run_only(cc):
    first = claude_busy(cc)
    queued = claude_send(cc, "QUEUED: then this", "--queue")
    line = cc.accepted()[-1]
    assert (line["input_id"], line["delivery"], line["run_id"]) == (queued, "queued", None)
    cc.mock.script(reply(text("Did the queued one.")))
    cc.mock.release("busy")
    one, two = cc.wait_results(2)
    assert one["input_ids"] == [first["input_id"]] and two["input_ids"] == [queued]
    assert (one["output"], two["output"]) == (BUSY, "Did the queued one.")
    *running, following = cc.mock.bodies()
    assert len(running) == 2 and tool_results(running[1]) == ["step-done"]
    assert not any("QUEUED: then this" in t for body in running for t in user_texts(body))
    assert last_user_texts(following)[-1] == "QUEUED: then this"


def test_claude_interrupt_cancels_once_and_the_next_request_holds_the_text_and_the_history(cc):
    cc.mock.script(reply(text("Noted: the word is PINEAPPLE.")))
    cc.send("Remember the word PINEAPPLE.")
    cc.wait_results(1)
    busy = claude_busy(cc, "Write a long essay.", tool=False)
    cc.mock.script(reply(text("Short answer instead.")))
    proc = cc.run("send", cc.path, "INSTEAD: be brief", "--interrupt", "--wait")
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)["output"] == "Short answer instead."
    results = cc.results()
    assert [r["status"] for r in results] == ["completed", "cancelled", "completed"]
    assert results[1]["run_id"] == busy["run_id"]
    last = cc.mock.bodies()[-1]
    assert last_user_texts(last)[-1] == "INSTEAD: be brief"
    history = conversation_texts(last)
    assert "Remember the word PINEAPPLE." in history and "Noted: the word is PINEAPPLE." in history


def test_claude_revoked_input_never_reaches_the_model(cc):
    first = claude_busy(cc)
    revoked = claude_send(cc, "NEVER: take this back", "--queue")
    cc.ok("cancel", cc.path, revoked)
    (result,) = cc.results()
    assert (result["input_ids"], result["status"], result["error_class"]) == ([revoked], "cancelled", "revoked")
    cc.mock.release("busy")
    ended = cc.wait_results(2)[1]
    assert (ended["input_ids"], ended["status"]) == ([first["input_id"]], "completed")
    wait_for(lambda: status(cc.path, env=cc.env)["state"] == "idle", 60, "the run ended")
    cc.send("AFTER: one more")  # any request the revoked input made would come before this one's
    cc.wait_results(3)
    assert last_user_texts(cc.mock.bodies()[-1])[-1] == "AFTER: one more"
    seen = [t for b in cc.mock.bodies() + [a["body"] for a in cc.mock.aux] for t in conversation_texts(b)]
    assert not any("NEVER: take this back" in t for t in seen)
