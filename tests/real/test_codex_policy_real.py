"""`--mode` and `--allow`/`--deny` rules through the CLI against the real
`codex app-server` (pinned 0.171.0) and the loopback Responses mock: the model
scripts an apply_patch edit and shell commands, and the event file shows what
asked and what did not.

The session's CODEX_HOME/config.toml says `approval_policy = "never"` (and
HARNESSCTL_CODEX_ARGS repeats it with `-c`): `--mode` must win over both.
Skipped when codex is not installed, failed instead under
HARNESSCTL_REQUIRE_REAL=1."""

from __future__ import annotations

import json
import os

import pytest
from cliutil import status
from codex_support import mock_responses as mr
from codex_support.fixtures import real_session

pytestmark = pytest.mark.real

PATCH = "*** Begin Patch\n*** Add File: patched.txt\n+hello\n*** End Patch\n"
NEVER = '-c approval_policy="never" -c sandbox_mode="danger-full-access"'


@pytest.fixture
def real_codex(workdir):
    with real_session(workdir) as (session, mock):
        session.env["HARNESSCTL_CODEX_ARGS"] = NEVER
        yield session, mock


def first_send(s, *flags, wait=False):
    """The first send of the session (apply_patch needs a bundled model slug)."""
    return s.cmd("send", s.path, "edit, then run commands", "--adapter", "codex", "--cwd", s.cwd,
                 "--model", "gpt-5.5", *flags, *(["--wait"] if wait else []))


def reply(s, request, answer):
    proc = s.cmd("reply", s.path, request["request_id"], answer)
    assert proc.returncode == 0, proc.stderr.decode()


def exists(s, name):
    return os.path.exists(os.path.join(s.cwd, name))


def test_ask_asks_for_the_patch_and_the_command_though_codexs_config_says_never(real_codex):
    s, mock = real_codex
    mock.add(mr.apply_patch(PATCH), mr.exec_command("touch ok.txt"), mr.text("Done."))
    assert first_send(s, "--mode", "ask").returncode == 0
    (patch,) = s.wait("request", state="pending")
    assert (patch["tool"], patch["paths"]) == ("file_change", [os.path.join(s.cwd, "patched.txt")])
    assert status(s.path, env=s.env)["mode"] == "ask" and not exists(s, "patched.txt")
    reply(s, patch, "allow")
    command = s.wait("request", 2, state="pending")[-1]
    assert (command["tool"], command["command"]) == ("command", "touch ok.txt")
    assert not exists(s, "ok.txt")
    reply(s, command, "allow")
    assert s.wait("result")[0]["status"] == "completed"
    assert exists(s, "patched.txt") and exists(s, "ok.txt")


def test_edit_applies_the_patch_inside_the_cwd_without_asking_and_asks_for_the_command(real_codex):
    s, mock = real_codex
    mock.add(mr.apply_patch(PATCH), mr.exec_command("touch ok.txt"), mr.text("Done."))
    assert first_send(s, "--mode", "edit").returncode == 0
    (command,) = s.wait("request", state="pending")
    assert (command["tool"], command["command"]) == ("command", "touch ok.txt")
    assert exists(s, "patched.txt")
    reply(s, command, "deny")
    assert s.wait("result")[0]["status"] == "completed"
    assert not exists(s, "ok.txt") and len(s.events("request")) == 2  # the command's pending and replied


def test_full_asks_for_nothing_though_codexs_config_says_on_request_read_only(real_codex):
    s, mock = real_codex
    s.configure(approval_policy="on-request", sandbox_mode="read-only")  # would ask for the patch
    s.env.pop("HARNESSCTL_CODEX_ARGS")
    outside = os.path.join(s.workdir, "outside.txt")
    mock.add(mr.apply_patch(PATCH), mr.exec_command("touch %s" % outside), mr.text("Done."))
    proc = first_send(s, "--mode", "full", wait=True)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    assert s.events("request") == []
    assert exists(s, "patched.txt") and os.path.exists(outside)  # the read-only sandbox lost too


def test_rules_run_touch_ok_and_refuse_touch_bad_with_no_person(real_codex):
    s, mock = real_codex
    mock.add(mr.exec_command("touch ok.txt", "call_ok"), mr.exec_command("touch bad.txt", "call_bad"),
             mr.text("Done."))
    proc = first_send(s, "--mode", "ask", "--allow", "command:touch ok*", "--deny", "*", wait=True)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()  # 9 would be a parked request
    assert json.loads(proc.stdout)["status"] == "completed"
    assert exists(s, "ok.txt") and not exists(s, "bad.txt")
    assert "rejected by user" in mr.tool_outputs(mock.requests[2])["call_bad"]  # the model is told
    replied = [r for r in s.events("request") if r["state"] == "replied"]
    assert [(r["command"], r["answer"], r["by"], r["rule"]) for r in replied] == [
        ("touch ok.txt", "allow", "rule", "command:touch ok*"), ("touch bad.txt", "deny", "rule", "*")]
    assert status(s.path, env=s.env)["requests"] == []


def test_a_deny_rule_alone_parks_the_rest_for_a_later_reply(real_codex):
    s, mock = real_codex
    mock.add(mr.exec_command("touch x"), mr.text("Done."))
    proc = first_send(s, "--mode", "ask", "--deny", "command:rm *", wait=True)
    assert proc.returncode == 9, proc.stderr.decode()
    parked = json.loads(proc.stdout)
    assert (parked["state"], parked["command"]) == ("pending", "touch x")
    assert status(s.path, env=s.env)["state"] == "awaiting_reply"
    reply(s, parked, "allow")
    assert s.wait("result")[0]["status"] == "completed" and exists(s, "x")
    assert s.events("request")[-1]["by"] == "reply"


def test_rules_judge_each_command_codex_runs_inside_its_bash_lc_line(real_codex):
    """codex runs the model's line as `bash -lc LINE`: every simple command of
    it must be allowed, and a deny on any one of them refuses the line."""
    s, mock = real_codex
    mock.add(mr.exec_command("touch ok1.txt && touch ok2.txt", "call_both"),
             mr.exec_command("touch ok3.txt; rm -rf victim", "call_rm"),
             mr.exec_command("touch ok4.txt #rm\ntouch bad.txt", "call_bad"),
             mr.exec_command("touch ok5.txt > ../escaped.txt", "call_out"), mr.text("Done."))
    os.mkdir(os.path.join(s.cwd, "victim"))
    proc = first_send(s, "--mode", "ask", "--allow", "command:touch ok*", "--deny", "command:rm *", "--deny", "*",
                      wait=True)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    replied = [r for r in s.events("request") if r["state"] == "replied"]
    assert [(r["answer"], r["rule"]) for r in replied] == [
        ("allow", "command:touch ok*"), ("deny", "command:rm *"), ("deny", "*"), ("deny", "*")]
    assert exists(s, "ok1.txt") and exists(s, "ok2.txt") and exists(s, "victim")
    assert not any(exists(s, name) for name in ("ok3.txt", "ok4.txt", "bad.txt", "ok5.txt"))
    assert not os.path.exists(os.path.join(os.path.dirname(s.cwd), "escaped.txt"))
