"""The permission policy with the REAL `claude` (2.1.332) on the loopback
Messages mock, through the CLI: `send --mode` as Claude's --permission-mode,
winning over the user's own HARNESSCTL_CLAUDE_ARGS, and `--allow`/`--deny`
rules answering Claude's prompts (docs/PROTOCOL-POLICY.md section 17).

The mock scripts the model's tool calls.
"""

from __future__ import annotations

import json
import os

import pytest
from claudecode_support.fixtures import wait_for
from claudecode_support.mock_messages import bash, reply, text, tool_results, tool_use
from claudecode_support.session import real_session

pytestmark = pytest.mark.real

# The user's own arguments that would let everything through without asking: the mode wins over them.
LOOSE_ARGS = "--permission-mode acceptEdits --allowedTools Bash Write"
ASKS_UNDER_EDIT = "python3 -c 'open(\"made-by-python.txt\", \"w\")'"


@pytest.fixture
def cc(workdir):
    with real_session(str(workdir)) as session:
        yield session


def write(name, content="hi"):
    return tool_use("Write", {"file_path": name, "content": content})


def pending(cc, count):
    """The first `count` pending request snapshots, once there are that many."""
    def found():
        snapshots = [r for r in cc.events("request") if r["state"] == "pending"]
        return snapshots[:count] if len(snapshots) >= count else None
    return wait_for(found, 60, "%d requests" % count)


def exists(cc, name):
    return os.path.exists(os.path.join(cc.work, name))


def test_under_mode_ask_a_write_and_a_command_each_ask_although_the_users_args_allow_them(cc):
    cc.env["HARNESSCTL_CLAUDE_ARGS"] = LOOSE_ARGS
    cc.mock.script(reply(write("w.txt")), reply(bash("touch b.txt", "Create b.txt")), reply(text("Done.")))
    cc.send("write w.txt, then create b.txt", "--mode", "ask")
    [edit] = pending(cc, 1)
    assert (edit["tool"], edit["name"], edit["paths"]) == ("file_change", "Write", [os.path.join(cc.work, "w.txt")])
    assert not exists(cc, "w.txt")
    cc.reply(edit["request_id"], "allow")
    command = pending(cc, 2)[1]
    assert (command["tool"], command["name"], command["command"]) == ("command", "Bash", "touch b.txt")
    cc.reply(command["request_id"], "deny")
    [result] = cc.wait_results(1)
    assert result["status"] == "completed" and exists(cc, "w.txt") and not exists(cc, "b.txt")


def test_under_mode_edit_a_write_runs_without_asking_and_a_command_asks(cc):
    cc.env["HARNESSCTL_CLAUDE_ARGS"] = LOOSE_ARGS
    cc.mock.script(reply(write("w.txt")), reply(bash(ASKS_UNDER_EDIT, "Make a file")), reply(text("Done.")))
    cc.send("write w.txt, then run python", "--mode", "edit")
    [command] = pending(cc, 1)
    assert exists(cc, "w.txt") and (command["tool"], command["command"]) == ("command", ASKS_UNDER_EDIT)
    cc.reply(command["request_id"], "allow")
    [result] = cc.wait_results(1)
    assert result["status"] == "completed" and exists(cc, "made-by-python.txt")
    assert len(cc.events("request")) == 2  # that one request: pending, replied


def test_under_mode_edit_a_command_claude_counts_as_an_edit_asks_too(cc):
    """acceptEdits alone would run `touch` in the cwd without asking: the
    adapter's ask rule for Bash keeps every command asking under `edit`."""
    cc.mock.script(reply(bash("touch t.txt", "Create t.txt")), reply(text("Done.")))
    cc.send("create t.txt", "--mode", "edit")
    [command] = pending(cc, 1)
    assert command["command"] == "touch t.txt" and not exists(cc, "t.txt")


@pytest.mark.skipif(os.geteuid() != 0, reason="Claude refuses bypassPermissions only as root")
def test_mode_full_as_root_outside_a_sandbox_exits_5_with_claudes_reason(cc):
    proc = cc.run("send", cc.path, "hello", "--adapter", "claudecode", "--cwd", cc.work, "--mode", "full")
    assert proc.returncode == 5, proc.stderr
    assert b"cannot be used with root/sudo privileges" in proc.stderr
    assert cc.mock.requests == []


def test_mode_full_in_a_sandbox_runs_a_write_and_a_command_without_asking(cc):
    cc.env["IS_SANDBOX"] = "1"  # Claude's own word that this is a sandbox (as root it refuses otherwise)
    cc.mock.script(reply(write("w.txt")), reply(bash(ASKS_UNDER_EDIT, "Make a file")), reply(text("Done.")))
    cc.send("write w.txt, then run python", "--mode", "full")
    [result] = cc.wait_results(1)
    assert result["status"] == "completed" and cc.events("request") == []
    assert exists(cc, "w.txt") and exists(cc, "made-by-python.txt")


def test_rules_allow_one_command_and_refuse_another_with_no_human(cc):
    cc.env["HARNESSCTL_CLAUDE_ARGS"] = LOOSE_ARGS  # under --mode ask every command reaches the rules anyway
    cc.mock.script(reply(bash("touch ok.txt", "Create ok.txt")), reply(bash("touch bad.txt", "Create bad.txt")),
                   reply(text("Done.")))
    proc = cc.run("send", cc.path, "create ok.txt and bad.txt", "--adapter", "claudecode", "--cwd", cc.work,
                  "--mode", "ask", "--allow", "command:touch ok*", "--deny", "*", "--wait")
    assert proc.returncode == 0, proc.stderr  # 9 would mean a request was parked for a reply
    assert json.loads(proc.stdout)["status"] == "completed"
    assert exists(cc, "ok.txt") and not exists(cc, "bad.txt")
    assert "denied" in tool_results(cc.mock.bodies()[2])[0]  # the model was told
    replied = [r for r in cc.events("request") if r["state"] == "replied"]
    assert [(r["command"], r["answer"], r["by"], r["rule"]) for r in replied] == [
        ("touch ok.txt", "allow", "rule", "command:touch ok*"), ("touch bad.txt", "deny", "rule", "*")]
    assert cc.status()["state"] == "idle"


def test_a_request_no_rule_decides_parks_until_a_reply(cc):
    cc.mock.script(reply(bash("touch x", "Create x")), reply(text("Done.")))
    cc.send("create x", "--deny", "command:rm *")
    [request] = pending(cc, 1)
    assert cc.status()["state"] == "awaiting_reply" and not exists(cc, "x")
    cc.reply(request["request_id"], "allow")
    [result] = cc.wait_results(1)
    assert result["status"] == "completed" and exists(cc, "x")
    assert [r["by"] for r in cc.events("request") if r["state"] == "replied"] == ["reply"]
