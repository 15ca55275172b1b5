"""How the Codex backend puts codex in a `--mode` (Config.mode) and what each
permission request tells the rules (activity.permission_subject), against the
scripted app-server: the params of thread/start, thread/resume and turn/start
per mode (those of the app-server JSON schema codex 0.171.0 generates), and
the subject fields of every kind of approval."""

from __future__ import annotations

import json
import os

import pytest
from codex_support.fake_host import FakeHost, Wire, make_config

from adapters.codex.backend import CodexBackend
from harnessctl.kit.backend import Input

T1 = "turn-1"
POLICY_PARAMS = ("approvalPolicy", "sandbox", "sandboxPolicy", "approvalsReviewer")
THREAD_MODES = {
    "ask": {"approvalPolicy": "untrusted", "sandbox": "workspace-write", "approvalsReviewer": "user"},
    "edit": {"approvalPolicy": "untrusted", "sandbox": "workspace-write", "approvalsReviewer": "user"},
    "full": {"approvalPolicy": "never", "sandbox": "danger-full-access", "approvalsReviewer": "user"},
}
TURN_MODES = {
    "ask": {"approvalPolicy": "untrusted", "sandboxPolicy": {"type": "workspaceWrite"}, "approvalsReviewer": "user"},
    "edit": {"approvalPolicy": "untrusted", "sandboxPolicy": {"type": "workspaceWrite"}, "approvalsReviewer": "user"},
    "full": {"approvalPolicy": "never", "sandboxPolicy": {"type": "dangerFullAccess"}, "approvalsReviewer": "user"},
}


@pytest.fixture
def host():
    fake = FakeHost()
    yield fake
    assert fake.vocabulary_problems() == []


def started(tmp_path, host, mode=None, resume=False, sidecar=None):
    """A backend in `mode` whose handshake is done and whose first send started turn-1."""
    if resume:
        (tmp_path / "events.jsonl.d").mkdir(exist_ok=True)
        (tmp_path / "events.jsonl.d" / "codex-thread.json").write_text(json.dumps({"thread_id": Wire.THREAD}))
    config = make_config(tmp_path, mode=mode)
    config.sidecar = sidecar or config.sidecar
    backend = CodexBackend(host, config)
    wire = Wire(backend, host)
    backend.start()
    wire.handshake(resume=resume)
    backend.send(Input("in-1", "hi"))
    wire.start_turn(T1)
    return backend, wire


def policy_of(params):
    return {k: v for k, v in params.items() if k in POLICY_PARAMS}


# -- the mode on the wire ----------------------------------------------------------------


@pytest.mark.parametrize("mode", sorted(THREAD_MODES))
def test_thread_start_puts_codex_in_the_mode(tmp_path, host, mode):
    _, wire = started(tmp_path, host, mode)
    assert policy_of(wire.last("thread/start")["params"]) == THREAD_MODES[mode]


@pytest.mark.parametrize("mode", sorted(THREAD_MODES))
def test_thread_resume_puts_codex_in_the_mode(tmp_path, host, mode):
    _, wire = started(tmp_path, host, mode, resume=True)
    assert policy_of(wire.last("thread/resume")["params"]) == THREAD_MODES[mode]


@pytest.mark.parametrize("mode", sorted(TURN_MODES))
def test_each_turn_start_puts_codex_in_the_mode(tmp_path, host, mode):
    _, wire = started(tmp_path, host, mode)
    params = wire.last("turn/start")["params"]
    assert policy_of(params) == TURN_MODES[mode]
    assert params["threadId"] == Wire.THREAD and params["clientUserMessageId"] == "in-1"


def test_without_a_mode_no_message_overrides_codexs_own_configuration(tmp_path, host):
    _, wire = started(tmp_path, host)
    for method in ("thread/start", "turn/start"):
        assert policy_of(wire.last(method)["params"]) == {}


def test_a_steer_carries_no_policy_codex_would_refuse(tmp_path, host):
    backend, wire = started(tmp_path, host, "ask")
    backend.send(Input("in-2", "steer"))
    assert set(wire.last("turn/steer")["params"]) == {"threadId", "expectedTurnId", "input", "clientUserMessageId"}


# -- what each request tells the rules ------------------------------------------------------


def only_request(host):
    (request,) = host.named("request")
    return request[6]


def file_change(wire, changes, native_id=0):
    wire.notify("item/started", {"item": {"type": "fileChange", "id": "call_patch", "changes": changes,
                                          "status": "inProgress"}, "threadId": Wire.THREAD, "turnId": T1})
    wire.ask(native_id, "item/fileChange/requestApproval", {"threadId": Wire.THREAD, "turnId": T1,
                                                            "itemId": "call_patch", "reason": None,
                                                            "grantRoot": None})


@pytest.mark.parametrize("native,command", [
    ("/bin/bash -c 'touch x'", "touch x"),
    ("/bin/bash -lc 'rm '\"'\"'a b'\"'\"''", "rm 'a b'"),  # a quote inside hides nothing from a rule
    ("touch x", "touch x"),
])
def test_command_approval_names_the_command_as_log_shows_it(tmp_path, host, native, command):
    _, wire = started(tmp_path, host)
    wire.ask(0, "item/commandExecution/requestApproval", {"threadId": Wire.THREAD, "turnId": T1,
                                                          "itemId": "call_1", "command": native, "cwd": "/w"})
    details = only_request(host)
    assert (details["tool"], details["name"], details["command"]) == ("command", "commandExecution", command)
    assert details["input"]["command"] == native


def test_network_approval_without_a_command_is_a_command_request_without_one(tmp_path, host):
    _, wire = started(tmp_path, host)
    wire.ask(0, "item/commandExecution/requestApproval", {
        "threadId": Wire.THREAD, "turnId": T1, "itemId": "call_1",
        "networkApprovalContext": {"host": "example.com", "protocol": "https"}})
    details = only_request(host)
    assert details["tool"] == "command" and "command" not in details


def test_file_change_approval_lists_every_path_it_touches(tmp_path, host):
    _, wire = started(tmp_path, host)
    file_change(wire, [{"path": "/w/a.txt", "kind": {"type": "add"}, "diff": "a\n"},
                       {"path": "/w/b.txt", "kind": {"type": "update", "move_path": "/w/c.txt"}, "diff": ""}])
    details = only_request(host)
    assert (details["tool"], details["name"]) == ("file_change", "fileChange")
    assert details["paths"] == ["/w/a.txt", "/w/b.txt", "/w/c.txt"]


def test_permissions_request_is_of_kind_other(tmp_path, host):
    _, wire = started(tmp_path, host)
    wire.ask(0, "item/permissions/requestApproval", {"threadId": Wire.THREAD, "turnId": T1, "itemId": "call_1",
                                                     "permissions": {"network": {"enabled": True}}})
    details = only_request(host)
    assert (details["tool"], details["name"]) == ("other", "request_permissions")


@pytest.mark.parametrize("meta,message", [
    ({"codex_approval_kind": "mcp_tool_call", "tool_name": "create_issue"}, "Allow?"),
    ({"codex_approval_kind": "mcp_tool_call"}, 'Allow the github MCP server to run tool "create_issue"?'),
])
def test_mcp_tool_approval_names_server_and_tool(tmp_path, host, meta, message):
    _, wire = started(tmp_path, host)
    wire.ask(0, "mcpServer/elicitation/request", {
        "threadId": Wire.THREAD, "turnId": T1, "serverName": "github", "mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {}}, "_meta": meta})
    details = only_request(host)
    assert (details["tool"], details["name"], details["mcp_tool"]) == ("mcp", "github.create_issue",
                                                                       "github.create_issue")


def test_other_mcp_elicitation_permission_names_no_tool(tmp_path, host):
    _, wire = started(tmp_path, host)
    wire.ask(0, "mcpServer/elicitation/request", {
        "threadId": Wire.THREAD, "turnId": T1, "serverName": "docs", "mode": "url", "message": "Sign in",
        "url": "https://example.com/login", "elicitationId": "e1"})
    details = only_request(host)
    assert details["tool"] == "mcp" and "mcp_tool" not in details


# -- edit: codex asks for every patch, the backend lets those inside the cwd through ----------


def test_edit_accepts_a_file_change_inside_the_cwd_without_a_request(tmp_path, host):
    backend, wire = started(tmp_path, host, "edit")
    cwd = backend.config.cwd
    file_change(wire, [{"path": cwd + "/a.txt", "kind": {"type": "add"}, "diff": "a\n"},
                       {"path": cwd + "/sub/b.txt", "kind": {"type": "update", "move_path": cwd + "/c.txt"},
                        "diff": ""}])
    assert not host.named("request")
    assert wire.replies() == [{"id": 0, "result": {"decision": "accept"}}]
    wire.notify("serverRequest/resolved", {"threadId": Wire.THREAD, "requestId": 0})
    assert not host.named("request_closed")


@pytest.mark.parametrize("paths", [
    ["/etc/passwd"],
    ["{cwd}/a.txt", "{cwd}/../outside.txt"],  # one path outside is enough
    [],  # codex showed no changes: nothing says they stay inside
])
def test_edit_asks_for_a_file_change_not_inside_the_cwd(tmp_path, host, paths):
    backend, wire = started(tmp_path, host, "edit")
    file_change(wire, [{"path": p.format(cwd=backend.config.cwd), "kind": {"type": "add"}, "diff": "x\n"}
                       for p in paths])
    assert only_request(host)["tool"] == "file_change"
    assert wire.replies() == []


def test_ask_asks_for_a_file_change_inside_the_cwd(tmp_path, host):
    backend, wire = started(tmp_path, host, "ask")
    file_change(wire, [{"path": backend.config.cwd + "/a.txt", "kind": {"type": "add"}, "diff": "a\n"}])
    assert only_request(host)["paths"] == [backend.config.cwd + "/a.txt"]


def test_edit_asks_for_commands(tmp_path, host):
    _, wire = started(tmp_path, host, "edit")
    wire.ask(0, "item/commandExecution/requestApproval", {"threadId": Wire.THREAD, "turnId": T1,
                                                          "itemId": "call_1", "command": "touch x", "cwd": "/w"})
    assert only_request(host)["command"] == "touch x"


@pytest.mark.parametrize("name", ["events.jsonl", "events.jsonl.d/binding.json"])
def test_edit_asks_for_a_change_to_the_event_file_or_its_sidecar_inside_the_cwd(tmp_path, host, name):
    (tmp_path / "work" / "events.jsonl.d").mkdir(parents=True)
    _, wire = started(tmp_path, host, "edit", sidecar=str(tmp_path / "work" / "events.jsonl.d"))  # inside the cwd
    file_change(wire, [{"path": str(tmp_path / "work" / name), "kind": {"type": "add"}, "diff": "x\n"}])
    assert only_request(host)["tool"] == "file_change"
    assert wire.replies() == []


def test_edit_asks_for_a_file_change_through_a_symlink_that_leaves_the_cwd(tmp_path, host):
    backend, wire = started(tmp_path, host, "edit")
    (tmp_path / "outside" / "deep").mkdir(parents=True)
    os.makedirs(backend.config.cwd + "/src", exist_ok=True)
    os.symlink(str(tmp_path / "outside" / "deep"), backend.config.cwd + "/src/link")
    file_change(wire, [{"path": backend.config.cwd + "/src/link/../x.py", "kind": {"type": "add"}, "diff": "x\n"}])
    assert only_request(host)["tool"] == "file_change"
    assert wire.replies() == []
