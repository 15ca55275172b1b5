"""Typos do not bind (issue 35, item 3): an unknown `--agent` or `--adapter`
is exit 2 before anything is created, with the name it was probably meant to
be; a file whose first send failed before its agent ever started takes a
corrected flag on the next send."""

from __future__ import annotations

import json
import os
import shlex

from cliutil import ROOT, cli_env, of_type, ok, run, runtime_pids, wait_for

FAKE = os.path.join(ROOT, "tests", "support", "acp_support", "fake_agent.py")


def test_an_unknown_agent_is_exit_2_with_did_you_mean_and_nothing_is_created(workdir):
    path = str(workdir / "s.jsonl")
    proc = run("send", path, "hi", "--adapter", "acp", "--agent", "claud")
    assert proc.returncode == 2
    assert "did you mean claude?" in proc.stderr.decode()
    assert proc.stderr.decode().count("\n") == 1
    assert not os.path.exists(path) and not os.path.exists(path + ".d")


def test_an_agent_command_line_whose_program_is_not_on_path_is_exit_2(workdir):
    proc = run("send", str(workdir / "s.jsonl"), "hi", "--adapter", "acp", "--agent", "no-such-agent --acp")
    assert proc.returncode == 2
    assert "'no-such-agent' is no command on PATH" in proc.stderr.decode()
    assert not os.path.exists(workdir / "s.jsonl")


def test_an_unknown_agent_from_the_variable_is_named_by_the_variable(workdir):
    proc = run("send", str(workdir / "s.jsonl"), "hi", "--adapter", "acp", env=cli_env(HARNESSCTL_ACP_AGENT="gemnii"))
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("harnessctl: HARNESSCTL_ACP_AGENT gemnii: no such preset")
    assert "did you mean gemini?" in proc.stderr.decode()


def test_an_unknown_adapter_is_exit_2_with_did_you_mean_and_nothing_is_created(workdir):
    path = str(workdir / "s.jsonl")
    proc = run("send", path, "hi", "--adapter", "codx")
    assert proc.returncode == 2
    assert "unknown adapter 'codx'; did you mean codex?" in proc.stderr.decode()
    assert not os.path.exists(path)


def test_a_name_close_to_nothing_gets_no_suggestion(workdir):
    proc = run("send", str(workdir / "s.jsonl"), "hi", "--adapter", "zzzzzz")
    assert proc.returncode == 2 and "did you mean" not in proc.stderr.decode()


def test_a_file_whose_agent_never_started_takes_a_corrected_agent(workdir):
    path, project = str(workdir / "s.jsonl"), workdir  # the file inside the cwd: its first line warns of that
    failing = workdir / "failing-agent"
    failing.write_text("#!/bin/sh\nexit 3\n")
    failing.chmod(0o755)
    env = cli_env(FAKE_ACP_HOME=str(workdir / "sessions"))
    first = run("send", path, "hi", "--adapter", "acp", "--agent", str(failing), "--cwd", str(project), "--wait",
                env=env)
    assert first.returncode == 5
    wait_for(lambda: of_type(path, "log"), what="the runtime's note that the file lies in the cwd")
    assert not of_type(path, "accepted")  # the file holds notes, and no send
    result = json.loads(ok("send", path, "hi", "--agent", shlex.quote(FAKE), "--wait", env=env).stdout)
    assert result["status"] == "completed"
    with open(path + ".d/binding.json") as f:
        binding = json.load(f)
    assert binding["agent"] == shlex.quote(FAKE) and binding["cwd"] == str(project)  # the rest kept


def test_a_file_whose_agent_never_started_takes_another_adapter(workdir):
    path = str(workdir / "s.jsonl")
    assert run("send", path, "hi", "--adapter", "acp", "--agent", "false", "--wait").returncode == 5
    ok("send", path, "hi", "--adapter", "mock", "--wait")
    with open(path + ".d/binding.json") as f:
        assert "agent" not in json.load(f)


def test_a_file_that_was_sent_to_keeps_its_agent_after_its_runtime_is_gone(workdir):
    path = str(workdir / "s.jsonl")
    env = cli_env(FAKE_ACP_HOME=str(workdir / "sessions"), HARNESSCTL_IDLE_TIMEOUT="0.3")
    ok("send", path, "hi", "--adapter", "acp", "--agent", shlex.quote(FAKE), "--wait", env=env)
    wait_for(lambda: not runtime_pids(path), what="idle exit")
    proc = run("send", path, "hi", "--agent", "claude", env=env)
    assert proc.returncode == 2 and "agent is bound to this event path" in proc.stderr.decode()
