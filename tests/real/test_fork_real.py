"""`harnessctl fork` against the real harnesses, each pointed at the mock of
its model API: codex 0.171.0 (`thread/fork`), Claude Code 2.1.332 (`--resume
SRC --fork-session`), and the ACP presets codex (codex-acp 2.6.0) and claude
(claude-agent-acp 0.101.0), which offer `session/fork`.

Each test: FILE's run tells the model a secret word; FILE is forked into
NEWFILE with another cwd; NEWFILE's first send reaches the model with FILE's
conversation; then FILE's next request holds nothing of NEWFILE's.  gemini
(gemini-cli 0.61.0) offers no `session/fork`: fork refuses its file.  The
other ACP presets' fork (kilocode, hermes) and refusals are tested in
test_acp_reach_real.py and test_acp_pypi_real.py.

Skipped when the binaries are missing, failed instead under
HARNESSCTL_REQUIRE_REAL=1 (as .ci/run sets).
"""

from __future__ import annotations

import os
from typing import Dict, Tuple

import pytest
from acp_support.agents import sessions
from claudecode_support.mock_messages import conversation_texts, last_user_texts, reply, text
from claudecode_support.session import real_session as claude_session
from cliutil import events, only, run, wait_matching
from codex_support import mock_responses as mr
from codex_support.fixtures import real_session as codex_session
from codex_support.fixtures import schema_errors

pytestmark = pytest.mark.real

SECRET = "Remember the secret word PINEAPPLE."
NOTED = "Noted: the secret word is PINEAPPLE."
ASK = "FORKTEXT: what was the secret word?"
ORIGINAL = "ORIGTEXT: and now?"


def fork_into(env: Dict[str, str], path: str, root: str) -> Tuple[str, str]:
    """`harnessctl fork FILE NEWFILE --cwd OTHER`: (NEWFILE, OTHER)."""
    other, new = os.path.join(root, "other"), os.path.join(root, "forked.jsonl")
    os.makedirs(other)
    proc = run("fork", path, new, "--cwd", other, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    return new, os.path.realpath(other)


def send(env: Dict[str, str], path: str, words: str) -> None:
    """A send to a file already bound (the fork binds NEWFILE: no flags)."""
    proc = run("send", path, words, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()


def test_a_codex_fork_continues_the_thread_and_the_original_never_sees_the_forks_turns(workdir):
    with codex_session(workdir) as (s, mock):
        mock.add(mr.text(NOTED), mr.text("It was PINEAPPLE."), mr.text("Still here."))
        s.send(SECRET, first=True)
        s.wait("result")
        new, other = fork_into(s.env, s.path, str(workdir))
        send(s.env, new, ASK)
        assert only(wait_matching(new, "result"))["output"] == "It was PINEAPPLE."
        forked = mock.requests[1]
        assert mr.user_texts(forked)[-1] == ASK and SECRET in mr.user_texts(forked)
        assert NOTED in mr.assistant_texts(forked)
        assert any("<cwd>%s</cwd>" % other in t for t in mr.user_texts(forked))  # the fork runs in its own cwd
        assert forked["headers"]["thread-id"] != mock.requests[0]["headers"]["thread-id"]
        s.send(ORIGINAL)
        s.wait("result", 2)
        original = mock.requests[2]
        assert mr.user_texts(original)[-1] == ORIGINAL and SECRET in mr.user_texts(original)
        assert not any("FORKTEXT" in t for t in mr.user_texts(original) + mr.assistant_texts(original))
        assert "It was PINEAPPLE." not in mr.assistant_texts(original)
        assert schema_errors(new) == []


def test_a_claude_code_fork_continues_the_session_and_the_original_never_sees_the_forks_turns(workdir):
    with claude_session(str(workdir)) as s:
        s.mock.script(reply(text(NOTED)), reply(text("It was PINEAPPLE.")), reply(text("Still here.")))
        s.send(SECRET)
        s.wait_results(1)
        source = open(s.path + ".d/claude-session-id").read().strip()
        new, other = fork_into(s.env, s.path, s.root)
        send(s.env, new, ASK)
        assert only(wait_matching(new, "result"))["output"] == "It was PINEAPPLE."
        forked = s.mock.bodies()[1]
        assert last_user_texts(forked)[0] == ASK and SECRET in conversation_texts(forked)
        assert NOTED in conversation_texts(forked)
        assert any(other in t for t in conversation_texts(forked))  # Claude names the fork's own cwd
        assert open(new + ".d/claude-session-id").read().strip() not in ("", source)  # a session of its own
        send(s.env, s.path, ORIGINAL)
        s.wait_results(2)
        original = s.mock.bodies()[2]
        assert last_user_texts(original)[0] == ORIGINAL and SECRET in conversation_texts(original)
        assert not any("FORKTEXT" in t or "It was PINEAPPLE." in t for t in conversation_texts(original))
        assert schema_errors(new) == []


@pytest.fixture
def start(workdir):
    """start(agent, **env) -> a Session over that real ACP agent."""
    with sessions(workdir) as start:
        yield start


@pytest.mark.parametrize("agent", ("codex", "claude"))
def test_an_acp_fork_continues_the_session_and_the_original_never_sees_the_forks_turns(start, agent):
    s = start(agent)
    s.model.answer(NOTED, "It was PINEAPPLE.", "Still here.")
    s.send(SECRET)
    s.wait("result")
    new, other = fork_into(s.env, s.path, s.root)
    send(s.env, new, ASK)
    assert only(wait_matching(new, "result", timeout=90))["output"] == "It was PINEAPPLE."
    forked = s.model.wait_requests(2)[1]
    assert s.model.user_texts(forked)[-1] == ASK
    assert SECRET in s.model.history(forked) and NOTED in s.model.history(forked)
    assert any(other in t for t in s.model.history(forked))  # the agent was told the fork's own cwd
    (session,) = [e for e in events(new) if e.get("kind") == "session"]
    assert session["session_id"] != only(s.events("log", "session"))["session_id"]  # a session of its own
    send(s.env, s.path, ORIGINAL)
    s.wait("result", 2)
    original = s.model.wait_requests(3)[2]
    assert s.model.user_texts(original)[-1] == ORIGINAL and SECRET in s.model.history(original)
    assert not any("FORKTEXT" in t or "It was PINEAPPLE." in t for t in s.model.history(original))
    assert schema_errors(new) == []


def test_a_gemini_file_cannot_be_forked_and_fork_says_why(start):
    s = start("gemini")
    s.model.answer(NOTED)
    s.send(SECRET)
    s.wait("result")
    offered = only(s.events("log", "session"))["capabilities"]
    assert "fork" not in (offered.get("sessionCapabilities") or {})  # what the preset's refusal says
    new = os.path.join(s.root, "forked.jsonl")
    proc = run("fork", s.path, new, env=s.env)
    assert proc.returncode == 2
    assert proc.stderr.decode() == ("harnessctl: the acp agent gemini cannot fork: gemini-cli 0.61.0 does not "
                                    "offer session/fork\n")
    assert not os.path.lexists(new) and not os.path.lexists(new + ".d")
