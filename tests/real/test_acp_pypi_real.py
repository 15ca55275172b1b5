"""The ACP adapter end to end through the CLI against the ACP agents people
install with pip (issue 35): vibe (mistral-vibe), hermes (hermes-agent),
fast-agent (fast-agent-mcp) and openhands, each started by its PRESET command
from its pinned venv (HARNESSCTL_TEST_ACP_PYPI), offline against the Chat
Completions mock on 127.0.0.1 as its recipe says (tests/support/acp_support/recipes/).

The scenarios are those of test_acp_reach_real.py, but a Python agent takes 2
to 8 s to start: so that the whole module stays near a minute, each agent
gets ONE event file for the module (one runtime, one agent process, one mock),
and each test below is one scenario on it, finding its own run by the input
id its send printed (the fork test adds the fork's file, with a second agent
process).  The file is bound with `--mode ask` where the preset's
table has that entry; the other entries get files of their own.  The
crash test restarts the agent, and the restarted agent must have loaded the
conversation (that is the resume proof); the 401 test comes after it, as vibe
takes no turn after a 401 until it is restarted.  Skipped when an
agent's venv is missing, failed instead under HARNESSCTL_REQUIRE_REAL=1 (as
.ci/run sets).  No test sleeps: a held reply waits at a gate of the mock, each
gate named for its test (a gate once opened stays open).
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Callable, Dict, Iterator, List

import pytest
from acp_support import mock_chat as mc
from acp_support.agents import PERMISSION_FILE, Session, kill_tree, real_agent, sessions
from acp_support.recipes import PYPI, trait, written
from cliutil import runtime_pids, wait_for, wait_matching

from harnessctl.store import registry

pytestmark = pytest.mark.real

LONG = "PART1 This is the first part of a deliberately slow answer that streams in many small pieces. " * 3
GRACE = {False: {"HARNESSCTL_CANCEL_GRACE": "1"}}  # an agent that ignores session/cancel is stopped after 1 s


def agents(**want: Any) -> List[str]:
    """The PyPI agents with a recipe whose TRAITS have these values."""
    return [name for name in written(PYPI) if all(trait(name, key) == value for key, value in want.items())]


def manifest_modes(agent: str) -> Dict[str, str]:
    return registry.manifest("acp")["agents"].get(agent, {}).get("modes") or {}


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Iterator[Callable[[str], Session]]:
    """shared(agent) -> the module's one Session over that agent, made on first use."""
    made: Dict[str, Session] = {}
    with contextlib.ExitStack() as stack:
        def get(agent: str) -> Session:
            if agent not in made:
                folder = tmp_path_factory.mktemp(agent.replace("-", "_"))
                made[agent] = stack.enter_context(real_agent(folder, agent, **GRACE.get(trait(agent, "cancels"), {})))
            return made[agent]
        yield get


@pytest.fixture
def start(workdir):
    """start(agent, **env) -> a Session of its own (the mode table's other entries)."""
    with sessions(workdir) as start:
        yield start


def flags(s: Session) -> List[str]:
    """The send flags; the first send binds the file, with `--mode ask` where the preset's table has it."""
    bind = not os.path.exists(s.path) and "ask" in manifest_modes(s.agent)
    return s.flags() + (["--mode", "ask"] if bind else [])


def send(s: Session, text: str) -> str:
    """A send that must be accepted; its input id."""
    proc = s.cmd("send", s.path, text, *flags(s), "--print-id")
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode(), s.runtime_log()[-3000:])
    return proc.stdout.decode().split()[-1]


def accepted(s: Session, input_id: str) -> Dict[str, Any]:
    return next(e for e in s.events("accepted") if e["input_id"] == input_id)


def result(s: Session, input_id: str) -> Dict[str, Any]:
    """The result of the run that took `input_id`, once it is written."""
    return wait_for(lambda: next((e for e in s.events("result") if input_id in e["input_ids"]), None), 90,
                    "the result of %s" % input_id)


def held(s: Session, gate: str, value: str, shown: bool = True) -> None:
    """A reply held at `gate`: after its first chunk when `shown`, else before a byte."""
    s.model.mock.script(mc.reply(mc.text(value), gate=gate, gate_after=1 if shown else 0))


def mid_turn(s: Session, agent: str, run_id: str, gate: str) -> None:
    """The held reply is being shown (its first text.delta), or for an agent
    that sends text only once a reply is complete, waits at the gate."""
    if trait(agent, "streams"):
        wait_matching(s.path, "log", 1, 90, kind="text.delta", run_id=run_id)
    else:
        s.model.mock.wait_gate(gate)


def ask(s: Session) -> Dict[str, Any]:
    """Send a prompt whose model answer runs PERMISSION_FILE's command; the
    pending permission request `send --wait` stops at (exit 9)."""
    proc = s.cmd("send", s.path, "Create the file.", *flags(s), "--wait")
    assert proc.returncode == 9, (proc.returncode, proc.stderr.decode(), s.runtime_log()[-2000:])
    request = json.loads(proc.stdout.decode().splitlines()[-1])
    assert (request["type"], request["kind"], request["state"]) == ("request", "permission", "pending")
    started = [e for e in s.events("log", "tool.started") if e["run_id"] == request["run_id"]]
    if trait(s.agent, "request_names_tool"):
        assert PERMISSION_FILE in json.dumps(request) and [e["tool_id"] for e in started] == [request["tool_id"]]
    else:  # openhands: the command's tool call, then the request's own ("Confirm Agent Actions", no command)
        assert PERMISSION_FILE in json.dumps(started[0]) and started[-1]["tool_id"] == request["tool_id"]
        assert PERMISSION_FILE not in json.dumps(request)
    return request


@contextlib.contextmanager
def reaped(path: str) -> Iterator[None]:
    """The runtime of a second file of the module (and its agent) is killed
    when the block ends: only the shared files' are killed at the module's end."""
    try:
        yield
    finally:
        for pid in runtime_pids(path):
            kill_tree(pid)


def no_permission_file(s: Session) -> str:
    path = os.path.join(s.cwd, PERMISSION_FILE)
    if os.path.exists(path):
        os.remove(path)
    return path


@pytest.mark.parametrize("agent", agents())
def test_plain_run_completes_with_the_agents_answer(shared, agent):
    s = shared(agent)
    s.model.answer("Hello from the mock.")
    before = s.model.count()
    input_id = send(s, "Say hello.")
    done = result(s, input_id)
    assert (done["status"], done["error"], done["output"]) == ("completed", None, "Hello from the mock.")
    assert accepted(s, input_id)["run_id"] == done["run_id"]
    assert "Say hello." in s.model.user_texts(s.model.wait_requests(before + 1)[-1])[-1]


@pytest.mark.parametrize("agent", agents(forks=True))
def test_a_fork_continues_the_session_and_the_original_never_sees_the_forks_turns(shared, agent):
    """`harnessctl fork FILE NEW --cwd OTHER`; NEW's first send opens its
    session by session/fork of FILE's (in a second agent process): its
    request holds FILE's turn and names OTHER, and FILE's next request holds
    nothing of NEW's."""
    s = shared(agent)
    s.model.answer("Noted: the secret word is PINEAPPLE.", "It was PINEAPPLE.", "Still here.")
    result(s, send(s, "Remember the secret word PINEAPPLE."))
    before = s.model.count()
    new, other = os.path.join(s.root, "forked.jsonl"), os.path.join(s.root, "other")
    os.makedirs(other)
    proc = s.cmd("fork", s.path, new, "--cwd", other)
    assert proc.returncode == 0, proc.stderr.decode()
    with reaped(new):
        proc = s.cmd("send", new, "FORKTEXT: what was the secret word?")
        assert proc.returncode == 0, proc.stderr.decode()
        assert wait_matching(new, "result", 1, 90)[0]["output"] == "It was PINEAPPLE."
    forked = s.model.wait_requests(before + 1)[-1]
    assert "FORKTEXT: what was the secret word?" in s.model.user_texts(forked)[-1]
    history = "\n".join(s.model.history(forked))
    assert "Remember the secret word PINEAPPLE." in history and "Noted: the secret word is PINEAPPLE." in history
    assert os.path.realpath(other) in json.dumps(forked)  # the model is told the fork's own cwd
    done = result(s, send(s, "ORIGTEXT: and now?"))
    assert done["output"] == "Still here."
    original = s.model.wait_requests(before + 2)[-1]
    assert "ORIGTEXT: and now?" in s.model.user_texts(original)[-1]
    assert "Remember the secret word PINEAPPLE." in "\n".join(s.model.history(original))
    assert not any("FORKTEXT" in t or "It was PINEAPPLE." in t for t in s.model.history(original))


@pytest.mark.parametrize("agent", agents(forks=False))
def test_fork_refuses_the_file_of_an_agent_that_cannot_fork_and_says_why(shared, agent):
    """The preset does not claim fork, and `harnessctl fork` quotes its
    degraded.fork: the agent's initialize offers no sessionCapabilities.fork,
    or (vibe) its session/fork finds no session its own process did not open,
    and a fork's first send starts a new process."""
    s = shared(agent)
    if not os.path.exists(s.path):
        s.model.answer("Bound.")
        result(s, send(s, "Bind."))
    why = registry.manifest("acp")["agents"][agent]["degraded"]["fork"]
    offered = "fork" in (s.events("log", "session")[0]["capabilities"].get("sessionCapabilities") or {})
    assert offered == ("does not offer session/fork" not in why), why
    new = os.path.join(s.root, "refused.jsonl")
    proc = s.cmd("fork", s.path, new)
    assert (proc.returncode, proc.stderr.decode()) == (
        2, "harnessctl: the acp agent %s cannot fork: %s\n" % (agent, why))
    assert not os.path.lexists(new) and not os.path.lexists(new + ".d")


@pytest.mark.parametrize("agent", [a for a in agents() if "ask" in trait(a, "modes")])
def test_the_file_bound_with_mode_ask_runs_the_agent_in_the_tables_ask_mode(shared, agent):
    s = shared(agent)
    if not os.path.exists(s.path):
        s.model.answer("Bound.")
        result(s, send(s, "Bind."))
    assert s.events("log", "session")[0]["approval_policy"] == trait(agent, "modes")["ask"] == \
        manifest_modes(agent)["ask"]


@pytest.mark.parametrize("agent", agents())
def test_a_send_mid_turn_is_queued_for_its_own_next_run(shared, agent):
    s = shared(agent)
    held(s, "queued", "First answer, held open.")
    s.model.answer("Second answer.")
    first = send(s, "Write a long answer.")
    mid_turn(s, agent, accepted(s, first)["run_id"], "queued")
    before = s.model.count()
    second = send(s, "SECOND prompt: what about apples?")
    assert accepted(s, second)["delivery"] == "queued"
    assert s.model.count() == before  # held by harnessctl, not sent into the running turn
    s.model.mock.release("queued")
    one, two = result(s, first), result(s, second)
    assert (one["status"], one["input_ids"], one["output"]) == ("completed", [first], "First answer, held open.")
    assert (two["status"], two["input_ids"], two["output"]) == ("completed", [second], "Second answer.")
    body = s.model.wait_requests(before + 1)[-1]
    assert "SECOND prompt: what about apples?" in s.model.user_texts(body)[-1]
    assert "First answer, held open." in s.model.history(body)


@pytest.mark.parametrize("agent", agents(asks=True))
def test_permission_denied_by_a_later_reply_does_not_run_the_command(shared, agent):
    s = shared(agent)
    path = no_permission_file(s)
    s.model.asks_permission()
    s.model.answer("I did not create it.")
    before = s.model.count()
    request = ask(s)
    assert "deny" in request["options"]
    assert s.cmd("reply", s.path, request["request_id"], "deny").returncode == 0
    done = result(s, s.events("accepted")[-1]["input_id"])
    assert done["status"] == "completed"
    if trait(agent, "deny_ends_turn"):
        assert s.model.count() == before + 1
    else:  # the model is told the command was refused, and answers
        assert done["output"] == "I did not create it." and s.model.count() == before + 2
    assert not os.path.exists(path)
    final = s.events("request")[-1]
    assert (final["request_id"], final["state"], final["answer"]) == (request["request_id"], "replied", "deny")


@pytest.mark.parametrize("agent", agents(asks=True))
def test_permission_allowed_by_a_later_reply_runs_the_command(shared, agent):
    s = shared(agent)
    path = no_permission_file(s)
    s.model.asks_permission()
    s.model.answer("Created it.")
    request = ask(s)
    # openhands names its options by its own ids (allow-yes-proceed, allow-session, ...): no option is `allow`
    allow = next(option for option in request["options"] if option.startswith("allow"))
    assert s.cmd("reply", s.path, request["request_id"], allow).returncode == 0
    done = result(s, s.events("accepted")[-1]["input_id"])
    assert (done["status"], done["output"]) == ("completed", "Created it.")
    assert os.path.exists(path)


@pytest.mark.parametrize("agent", agents(asks=False))
def test_a_command_runs_without_asking(shared, agent):
    s = shared(agent)
    path = no_permission_file(s)
    s.model.asks_permission()
    s.model.answer("Created it.")
    requests = len(s.events("request"))
    done = result(s, send(s, "Create the file."))
    # hermes starts the text it writes after a tool with a blank line: "\n\nCreated it."
    assert (done["status"], done["output"].strip()) == ("completed", "Created it.")
    assert len(s.events("request")) == requests and os.path.exists(path)


@pytest.mark.parametrize("agent", agents())
def test_cancel_ends_the_running_run_cancelled(shared, agent):
    s = shared(agent)
    held(s, "cancel", LONG)
    input_id = send(s, "Write a long answer.")
    mid_turn(s, agent, accepted(s, input_id)["run_id"], "cancel")
    assert s.cmd("cancel", s.path).returncode == 0
    done = result(s, input_id)
    s.model.mock.release("cancel")
    assert (done["status"], done["input_ids"]) == ("cancelled", [input_id])
    if not trait(agent, "cancels"):  # openhands: its turn goes on until the model call returns, so it is stopped
        assert "did not end the run within 1 s of the cancel" in done["error"], done


@pytest.mark.parametrize("agent", agents(cancels=True))
def test_cancel_before_the_first_token_ends_the_run_cancelled_and_the_next_send_goes_on(shared, agent):
    s = shared(agent)
    held(s, "stall", "Late answer.", shown=False)
    s.model.answer("After the cancel.")
    before = s.model.count()
    input_id = send(s, "Write a long answer.")
    s.model.wait_requests(before + 1)  # the model request is in flight, nothing answered yet
    assert s.cmd("cancel", s.path).returncode == 0
    done = result(s, input_id)
    s.model.mock.release("stall")
    assert done["status"] == "cancelled", done
    after = result(s, send(s, "Say something."))
    assert (after["status"], after["output"]) == ("completed", "After the cancel.")


@pytest.mark.parametrize("agent", agents())
def test_an_agent_killed_mid_run_fails_the_run_and_the_restarted_agent_has_the_conversation(shared, agent):
    """The agent that answers the next send is a new process, which loaded
    the conversation (session/load or session/resume): the resume proof."""
    s = shared(agent)
    s.model.answer("Noted: the secret word is PINEAPPLE.")
    result(s, send(s, "Remember the secret word PINEAPPLE."))
    held(s, "crash", LONG)
    s.model.answer("It was PINEAPPLE.")
    input_id = send(s, "Write a long answer.")
    mid_turn(s, agent, accepted(s, input_id)["run_id"], "crash")
    s.kill_agent()
    crashed = result(s, input_id)
    s.model.mock.release("crash")
    assert crashed["status"] == "failed" and crashed["error"]
    before = s.model.count()
    last = result(s, send(s, "What was the secret word?"))
    assert (last["status"], last["output"]) == ("completed", "It was PINEAPPLE.")
    history = "\n".join(s.model.history(s.model.wait_requests(before + 1)[-1]))
    assert ("Remember the secret word PINEAPPLE." in history) == trait(agent, "resumes")


@pytest.mark.parametrize("agent", agents())
def test_a_401_from_the_model_endpoint_ends_the_run_with_the_agents_words_for_it(shared, agent):
    """After the crash test: vibe refuses every later turn of its process
    once its key was rejected ("The mock credential was rejected...").  vibe
    and openhands fail the run with the error; fast-agent writes the error as
    its text and stops the turn `refusal` (a failed run); hermes writes it as
    its text and ends the turn normally (completed)."""
    s = shared(agent)
    s.model.fail(401, "mock says 401", sticky=True)
    try:
        done = result(s, send(s, "This will fail."))
    finally:
        s.model.mock.set_default(mc.reply(mc.text("ok")))
    if trait(agent, "error_as_text"):
        assert (done["status"], done["error"]) == ("completed", None), done
        assert trait(agent, "error_401") in done["output"], done
    else:
        assert done["status"] == "failed" and trait(agent, "error_401") in done["error"], done


MODE_CASES = [(agent, level) for agent in agents() for level in sorted(trait(agent, "modes")) if level != "ask"]


@pytest.mark.parametrize("agent,level", MODE_CASES)
def test_the_mode_table_entry_asks_what_its_level_says(start, agent, level):
    """edit: a file write runs unasked and a command asks; full: both run
    unasked (ask: the shared file above).  Through `--mode LEVEL`."""
    s = start(agent)
    s.model.writes(s.cwd, "edited.txt", "written unasked\n")
    s.model.answer("Wrote it.")
    proc = s.cmd("send", s.path, "Write the file.", *s.flags(), "--wait", "--mode", level)
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode(), s.events("request"))
    with open(os.path.join(s.cwd, "edited.txt"), encoding="utf-8") as f:
        assert f.read() == "written unasked\n"
    s.model.asks_permission()
    s.model.answer("Created it.")
    proc = s.cmd("send", s.path, "Create the file.", *s.flags(), "--wait")
    if level == "full":
        assert proc.returncode == 0, (proc.returncode, proc.stderr.decode(), s.events("request"))
        assert os.path.exists(os.path.join(s.cwd, PERMISSION_FILE)) and s.events("request") == []
    else:
        assert proc.returncode == 9, (proc.returncode, proc.stderr.decode())
        assert not os.path.exists(os.path.join(s.cwd, PERMISSION_FILE))
    assert s.events("log", "session")[0]["approval_policy"] == trait(agent, "modes")[level]


@pytest.mark.parametrize("agent", written(PYPI))
def test_the_manifest_maps_only_modes_a_test_proved(agent):
    """Every --mode entry of a PyPI preset is one the tests above ran (no agent needed)."""
    proven = trait(agent, "modes")
    assert {level: proven.get(level) for level in manifest_modes(agent)} == manifest_modes(agent)


# capability -> the tests here that prove it for the agents they run for (as test_acp_claims.PROOFS)
