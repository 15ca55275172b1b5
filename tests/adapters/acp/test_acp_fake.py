"""The ACP adapter black-box through the CLI and the runtime, over the fake ACP
agent (acp_support/fake_agent.py): the races a real agent cannot be made to
hit on demand, resume, and the ways an agent fails to start."""

from __future__ import annotations

import json
import os
from typing import Optional

import pytest
from acp_support.fakeagent import Agent
from cliutil import cli_env, of_type, ok, run, runtime_pids, status, wait_for, wait_results


def test_a_steer_that_races_the_end_of_the_turn_starts_the_next_run(workdir):
    agent = Agent(workdir)
    first = agent.start("/slow 1 endonsteer=promptRequired")
    wait_for(agent.streaming, what="the first run to stream")
    second = agent.start("after the end")
    code, result = agent.wait(second)
    assert code == 0 and result["input_ids"] == [second] and "echo: after the end" in result["output"]
    assert agent.wait(first)[1]["status"] == "completed"
    assert agent.accepted(second)[0]["delivery"] in ("start", "queued")
    assert result["run_id"] != agent.wait(first)[1]["run_id"]


def test_a_steer_injected_after_the_turns_response_is_in_that_runs_result(workdir):
    agent = Agent(workdir)
    first = agent.start("/slow 1 endonsteer=injected")
    wait_for(agent.streaming, what="the first run to stream")
    second = agent.start("late steer")
    code, result = agent.wait(second)
    assert code == 0 and result["input_ids"] == [first, second]
    assert [a["delivery"] for a in agent.accepted(second)] == ["steer"]
    assert len(of_type(agent.path, "result")) == 1


def test_a_steer_joins_the_running_run_of_a_steering_agent(workdir):
    agent = Agent(workdir)
    first = agent.start("/slow 1")
    wait_for(agent.streaming, what="the first run to stream")
    second = agent.start("bananas")
    code, result = agent.wait(second)
    assert code == 0 and result["input_ids"] == [first, second] and "echo: bananas" in result["output"]
    assert [s["params"]["_meta"] for s in agent.received("_session/steering")] == [
        {"steering": {"idleBehavior": "promptRequired"}}]


def test_a_busy_send_to_an_agent_without_steering_is_held_never_sent_as_a_second_prompt(workdir):
    agent = Agent(workdir, "--no-steering")
    first = agent.start("/slow 1 endonsteer=never")
    wait_for(agent.streaming, what="the first run to stream")
    second = agent.start("next please")
    assert [(a["delivery"], a["run_id"]) for a in agent.accepted(second)][:1] == [("queued", None)]
    assert len(agent.received("session/prompt")) == 1
    ok("cancel", agent.path, env=agent.env)  # ends the first run; the held input is dropped with it
    assert agent.wait(first)[1]["status"] == "cancelled"
    code, dropped = agent.wait(second)
    assert (code, dropped["status"], dropped["run_id"]) == (8, "cancelled", None)
    assert len(agent.received("session/prompt")) == 1


def test_a_held_input_starts_the_next_run_when_the_first_completes(workdir):
    agent = Agent(workdir, "--no-steering")
    first = agent.start("/tool sleep 1")
    wait_for(lambda: of_type(agent.path, "log") and any(
        e["kind"] == "tool.started" for e in of_type(agent.path, "log")), what="the tool to start")
    second = agent.start("next please")
    code, result = agent.wait(second)
    assert code == 0 and result["input_ids"] == [second] and "echo: next please" in result["output"]
    first_result = agent.wait(first)[1]
    assert first_result["status"] == "completed" and first_result["run_id"] != result["run_id"]
    accepted = agent.accepted(second)
    assert [(a["delivery"], a["run_id"]) for a in accepted] == [("queued", None), ("queued", result["run_id"])]
    assert [p["params"]["prompt"] for p in agent.received("session/prompt")][1] == [
        {"type": "text", "text": "next please"}]


def test_an_input_held_for_an_agent_without_steering_can_be_revoked_and_never_reaches_it(workdir):
    agent = Agent(workdir, "--no-steering")
    first = agent.start("/slow 1 endonsteer=never")
    wait_for(agent.streaming, what="the first run to stream")
    second = agent.start("never sent")
    ok("cancel", agent.path, second, env=agent.env)
    code, revoked = agent.wait(second)
    assert (code, revoked["run_id"], revoked["error_class"]) == (8, None, "revoked")
    assert status(agent.path)["state"] == "running"  # the first run goes on
    ok("cancel", agent.path, env=agent.env)  # the end of the run is when a held input would be sent
    assert agent.wait(first)[1]["status"] == "cancelled"
    assert len(agent.received("session/prompt")) == 1


@pytest.mark.parametrize("flags", [(), ("--no-steering",)], ids=["withdrawn", "waiting-for-our-reply"])
def test_cancel_while_a_permission_is_pending_cancels_the_run_and_expires_the_request(workdir, flags):
    """codex-acp withdraws the request with $/cancel_request; gemini waits for our `cancelled` reply."""
    agent = Agent(workdir, *flags)
    input_id = agent.start("/approve 1")
    request = wait_for(lambda: of_type(agent.path, "request"), what="the permission request")[0]
    ok("cancel", agent.path, env=agent.env)
    code, result = agent.wait(input_id)
    assert (code, result["status"]) == (8, "cancelled")
    assert [r["state"] for r in of_type(agent.path, "request")][-1] == "expired"
    assert run("reply", agent.path, request["request_id"], "allow", env=agent.env).returncode != 0


def test_a_permission_denied_by_reply_reaches_the_agent_as_its_reject_option(workdir):
    agent = Agent(workdir)
    input_id = agent.start("/approve 1")
    request = wait_for(lambda: of_type(agent.path, "request"), what="the permission request")[0]
    assert request["options"] == ["allow", "allow-session", "deny"]
    ok("reply", agent.path, request["request_id"], "deny", env=agent.env)
    code, result = agent.wait(input_id)
    assert code == 0 and "permission: cancel" in result["output"]
    done = [e for e in of_type(agent.path, "log") if e["kind"] == "tool.completed"]
    assert [e["status"] for e in done] == ["declined"]


def test_an_agent_crash_fails_the_run_and_the_next_send_resumes_the_session(workdir):
    agent = Agent(workdir)
    assert agent.send("remember this", "--wait").returncode == 0
    crashed = agent.send("/crash 1", "--wait")
    assert crashed.returncode == 7 and json.loads(crashed.stdout)["status"] == "failed"
    proc = agent.send("/history", "--wait")
    assert proc.returncode == 0 and "remember this" in json.loads(proc.stdout)["output"]
    assert len(agent.received("session/resume")) == 1


def test_after_an_idle_exit_the_conversation_goes_on_by_session_resume(workdir):
    agent = Agent(workdir)
    env = dict(agent.env, HARNESSCTL_IDLE_TIMEOUT="0.5")
    assert agent.send("the secret is PINEAPPLE", "--wait", env=env).returncode == 0
    wait_for(lambda: not runtime_pids(agent.path), what="the runtime to idle out")
    proc = agent.send("/history", "--wait", env=env)
    assert proc.returncode == 0 and "PINEAPPLE" in json.loads(proc.stdout)["output"]
    assert len(agent.received("session/new")) == 1 and len(agent.received("session/resume")) == 1


def test_after_an_idle_exit_an_agent_with_load_only_replays_nothing_into_the_file(workdir):
    agent = Agent(workdir, "--load-only")
    env = dict(agent.env, HARNESSCTL_IDLE_TIMEOUT="0.5")
    assert agent.send("the secret is PINEAPPLE", "--wait", env=env).returncode == 0
    wait_for(lambda: not runtime_pids(agent.path), what="the runtime to idle out")
    proc = agent.send("/history", "--wait", env=env)
    assert proc.returncode == 0 and "PINEAPPLE" in json.loads(proc.stdout)["output"]
    assert len(agent.received("session/load")) == 1
    texts = [e["text"] for e in of_type(agent.path, "log") if e["kind"] == "text.delta"]
    assert texts.count("echo: the secret is PINEAPPLE") == 1  # the first run's echo, not the replay


def test_an_agent_that_cannot_resume_starts_a_new_session_with_a_diagnostic(workdir):
    agent = Agent(workdir, "--no-resume")
    env = dict(agent.env, HARNESSCTL_IDLE_TIMEOUT="0.5")
    assert agent.send("the secret is PINEAPPLE", "--wait", env=env).returncode == 0
    wait_for(lambda: not runtime_pids(agent.path), what="the runtime to idle out")
    proc = agent.send("/history", "--wait", env=env)
    assert proc.returncode == 0 and "PINEAPPLE" not in json.loads(proc.stdout)["output"]
    notes = [e["message"] for e in of_type(agent.path, "log") if e["kind"] == "diagnostic"]
    assert any("cannot resume session" in n for n in notes), notes
    assert len(agent.received("session/new")) == 2


def fork_and_send(agent: Agent, new: str, *texts: str, cwd: Optional[str] = None):
    """`harnessctl fork` of the agent's file into `new` (with `cwd`: --cwd),
    then each text sent to `new` with --wait; the last send."""
    ok("fork", agent.path, new, *(["--cwd", cwd] if cwd else []), env=agent.env)
    proc = None
    for text in texts:
        proc = run("send", new, text, "--wait", env=agent.env)
    return proc


def test_a_fork_continues_the_session_by_session_fork_and_the_source_goes_on_alone(workdir):
    agent = Agent(workdir, preset="codex")
    assert agent.send("remember PINEAPPLE", "--wait").returncode == 0
    new, other = os.path.join(str(workdir), "forked.jsonl"), workdir / "other"
    other.mkdir()
    proc = fork_and_send(agent, new, "FORKTEXT", "/history", cwd=str(other))
    assert proc.returncode == 0 and json.loads(proc.stdout)["output"] == "history: remember PINEAPPLE | FORKTEXT"
    (forked,) = agent.received("session/fork")
    assert forked["params"]["cwd"] == os.path.realpath(str(other))
    proc = agent.send("/history", "--wait")
    assert proc.returncode == 0 and json.loads(proc.stdout)["output"] == "history: remember PINEAPPLE"


def test_a_fork_whose_agent_offers_no_session_fork_fails_its_first_send_saying_why(workdir):
    agent = Agent(workdir, "--no-fork", preset="codex")  # the preset claims fork; this agent does not offer it
    assert agent.send("hello", "--wait").returncode == 0
    proc = fork_and_send(agent, os.path.join(str(workdir), "forked.jsonl"), "hello again")
    assert proc.returncode == 5
    assert "cannot fork session" in proc.stderr.decode() and "does not offer session/fork" in proc.stderr.decode()
    assert agent.received("session/fork") == []


def test_a_missing_agent_binary_exits_5_with_a_clear_message(workdir):
    agent = Agent(workdir)
    proc = run("send", agent.path, "hi", "--adapter", "acp", "--agent", "codex", "--wait",
               env=dict(agent.env, HARNESSCTL_ACP_CODEX_CMD="/nonexistent/codex-acp"))
    assert proc.returncode == 5
    assert b"/nonexistent/codex-acp" in proc.stderr and b"HARNESSCTL_ACP_CODEX_CMD" in proc.stderr


def test_an_agent_that_exits_without_answering_initialize_exits_5(workdir):
    agent = Agent(workdir, "--silent-exit")
    proc = agent.send("hi", "--wait")
    assert proc.returncode == 5 and b"before it was ready" in proc.stderr


def test_a_mode_the_agent_does_not_offer_exits_5_naming_the_offered_modes(workdir):
    agent = Agent(workdir, HARNESSCTL_ACP_MODE="yolo")
    proc = agent.send("hi", "--wait")
    assert proc.returncode == 5 and b"read-only, workspace-write, agent, agent-full-access" in proc.stderr


def test_a_send_after_a_refused_start_runs_with_its_own_environment(workdir):
    agent = Agent(workdir, HARNESSCTL_ACP_MODE="yolo")  # the reach lab saw the refused runtime live on with it
    assert agent.send("hi").returncode == 5
    fixed = {k: v for k, v in agent.env.items() if k != "HARNESSCTL_ACP_MODE"}
    proc = agent.send("again", "--wait", env=fixed)
    assert proc.returncode == 0, proc.stderr
    assert agent.received("session/set_mode") == []


def test_mode_and_model_reach_the_agent(workdir):
    agent = Agent(workdir, HARNESSCTL_ACP_MODE="read-only")
    proc = agent.send("hi", "--wait", "--model", "fake-large")
    assert proc.returncode == 0, proc.stderr
    assert [m["params"]["modeId"] for m in agent.received("session/set_mode")] == ["read-only"]
    assert [m["params"]["modelId"] for m in agent.received("session/set_model")] == ["fake-large"]
    session = [e for e in of_type(agent.path, "log") if e["kind"] == "session"][0]
    assert (session["approval_policy"], session["model"]) == ("read-only", "fake-large")


@pytest.mark.parametrize("mode,native", [("ask", "read-only"), ("edit", "workspace-write"),
                                         ("full", "agent-full-access")])
def test_mode_sets_the_presets_mode_id_over_the_mode_variable(workdir, mode, native):
    agent = Agent(workdir, preset="codex", HARNESSCTL_ACP_MODE="agent")
    proc = agent.send("hi", "--wait", "--mode", mode)
    assert proc.returncode == 0, proc.stderr
    assert [m["params"]["modeId"] for m in agent.received("session/set_mode")] == [native]
    assert status(agent.path, env=agent.env)["mode"] == mode


def test_mode_for_an_agent_command_exits_2_naming_the_mode_variable(workdir):
    agent = Agent(workdir)
    proc = agent.send("hi", "--mode", "ask")
    assert proc.returncode == 2 and b"HARNESSCTL_ACP_MODE" in proc.stderr
    assert not os.path.exists(agent.log)  # refused before any agent started


def test_a_rule_answers_the_agents_request_by_its_command_line(workdir):
    agent = Agent(workdir, preset="codex")
    proc = agent.send("/approve", "--wait", "--allow", "command:touch approved*", "--deny", "*")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output"] == "permission: allow_once"
    pending, replied = of_type(agent.path, "request")
    assert (pending["state"], pending["tool"], pending["name"], pending["command"]) == (
        "pending", "command", "exec_command", "touch approved.txt")
    assert (replied["state"], replied["answer"], replied["by"], replied["rule"]) == (
        "replied", "allow", "rule", "command:touch approved*")


def test_the_agent_writes_files_through_the_client_inside_the_cwd_only(workdir):
    project = workdir / "project"
    project.mkdir()
    agent = Agent(workdir)
    proc = agent.send("/write notes/a.txt hello", "--wait", "--cwd", str(project))
    assert proc.returncode == 0 and "wrote notes/a.txt" in json.loads(proc.stdout)["output"]
    assert (project / "notes" / "a.txt").read_text() == "hello"
    change = [e for e in of_type(agent.path, "log") if e["kind"] == "file.changed"][0]
    assert (change["change"], change["added"]) == ("add", 1)
    proc = agent.send("/write ../escape.txt nope", "--wait")
    assert "write refused" in json.loads(proc.stdout)["output"] or "read refused" in json.loads(proc.stdout)["output"]
    assert not (workdir / "escape.txt").exists()


def test_usage_and_cost_reach_the_result(workdir):
    agent = Agent(workdir)
    result = json.loads(agent.send("hi", "--wait").stdout)
    assert result["usage"]["input_tokens"] == 12 and result["usage"]["cached_input_tokens"] == 2
    assert result["cost_usd"] == 0.001
    wait_results(agent.path, 1)


def test_the_agent_is_bound_to_the_file_and_another_agent_exits_2(workdir):
    agent = Agent(workdir)
    assert agent.send("hello", "--wait").returncode == 0
    other = run("send", agent.path, "again", "--agent", "gemini", env=agent.env)
    assert other.returncode == 2 and b"agent is bound to this event path: " + agent.agent.encode() in other.stderr
    assert json.loads(ok("status", agent.path, env=agent.env).stdout)["agent"] == agent.agent
    assert run("send", agent.path, "again", "--wait", env=agent.env).returncode == 0  # omitted: the bound one


def test_a_first_send_without_an_agent_exits_2_naming_the_presets(workdir):
    env = cli_env()
    env.pop("HARNESSCTL_ACP_AGENT", None)
    proc = run("send", str(workdir / "e.jsonl"), "hi", "--adapter", "acp", env=env)
    assert proc.returncode == 2 and b"the acp adapter needs --agent NAME_OR_COMMAND (presets: " in proc.stderr
    assert not (workdir / "e.jsonl").exists()
