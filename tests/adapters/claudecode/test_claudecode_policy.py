"""The claudecode backend and the permission policy (docs/PROTOCOL.md,
"Permission policy"), with a fake Host: the bound mode as Claude's
--permission-mode, the user's own flags it overrules, and the fields of each
permission request that rules match."""

from __future__ import annotations

import json
import os

import pytest
from claudecode_support.replay import feed, initialize, make_backend, replay

from adapters.claudecode.wire import without_mode_flags

USER_ARGS = ("--permission-mode acceptEdits --dangerously-skip-permissions --allowedTools Bash 'Edit(*)' "
             "--append-system-prompt 'be brief' --allowed-tools=Write Read --permission-prompts none --verbose")


def argv_of(tmp_path, mode, user_args=""):
    backend, host = make_backend(tmp_path, env={"HARNESSCTL_CLAUDE_ARGS": user_args}, mode=mode)
    backend.start()
    return host.children[0].argv


def prompt(backend, tool_name, tool_input, request_id="claude-req-1"):
    """Claude's can_use_tool for one tool call; the details of the request it became."""
    feed(backend, {"type": "control_request", "request_id": request_id, "request": {
        "subtype": "can_use_tool", "tool_name": tool_name, "input": tool_input, "tool_use_id": "toolu_1"}})
    return backend.host.named("request")[-1][6]


@pytest.mark.parametrize("mode, native", [("ask", "default"), ("edit", "acceptEdits"), ("full", "bypassPermissions")])
def test_each_mode_is_claudes_permission_mode(tmp_path, mode, native):
    argv = argv_of(tmp_path, mode)
    assert argv[argv.index("--permission-mode") + 1] == native and argv.count("--permission-mode") == 1


def test_without_a_mode_no_permission_mode_is_added_and_the_users_flags_stay(tmp_path):
    argv = argv_of(tmp_path, None, USER_ARGS)
    assert argv[argv.index("--settings") + 2:] == [
        "--permission-mode", "acceptEdits", "--dangerously-skip-permissions", "--allowedTools", "Bash", "Edit(*)",
        "--append-system-prompt", "be brief", "--allowed-tools=Write", "Read", "--permission-prompts", "none",
        "--verbose"]


def test_under_a_mode_the_users_flags_that_would_overrule_it_are_left_out(tmp_path):
    argv = argv_of(tmp_path, "ask", USER_ARGS)
    assert argv[argv.index("--settings") + 2:] == [
        "--permission-mode", "default", "--append-system-prompt", "be brief", "--verbose"]


def test_a_flag_that_takes_no_value_does_not_swallow_the_next_argument():
    assert without_mode_flags(["--dangerously-skip-permissions", "--model", "m", "--permission-mode=plan", "x"]) == [
        "--model", "m", "x"]


@pytest.mark.parametrize("mode", ["ask", "edit", "full"])
def test_the_deny_rules_of_harnessctls_own_files_stay_under_every_mode(tmp_path, mode):
    argv = argv_of(tmp_path, mode, "--permission-mode bypassPermissions")
    sidecar = os.path.join(str(tmp_path), "events.jsonl.d")
    rules = json.loads(argv[argv.index("--settings") + 1])["permissions"]["deny"]
    assert rules == ["Edit(/%s)" % sidecar[:-2], "Edit(/%s/**)" % sidecar] and argv.count("--settings") == 1


@pytest.mark.parametrize("mode, ask", [("ask", None), ("edit", ["Bash"]), ("full", None), (None, None)])
def test_only_mode_edit_adds_an_ask_rule_for_every_command(tmp_path, mode, ask):
    argv = argv_of(tmp_path, mode, "")
    assert json.loads(argv[argv.index("--settings") + 1])["permissions"].get("ask") == ask


def test_a_bash_prompt_carries_its_kind_claudes_tool_name_and_the_command(tmp_path):
    backend, host = make_backend(tmp_path)
    initialize(backend)
    replay(backend, "permission__allow")
    details = host.named("request")[0][6]
    assert (details["tool"], details["name"], details["command"]) == ("command", "Bash", "touch approved.txt")
    assert "paths" not in details and "mcp_tool" not in details


@pytest.mark.parametrize("tool_name, tool_input", [
    ("Write", {"file_path": "/w/new.txt", "content": "hi"}),
    ("Edit", {"file_path": "/w/new.txt", "old_string": "a", "new_string": "b"}),
    ("MultiEdit", {"file_path": "/w/new.txt", "edits": []}),
    ("NotebookEdit", {"notebook_path": "/w/new.txt", "new_source": "x"}),
])
def test_a_file_edit_prompt_carries_the_path_it_changes(tmp_path, tool_name, tool_input):
    backend, _ = make_backend(tmp_path)
    initialize(backend)
    details = prompt(backend, tool_name, tool_input)
    assert (details["tool"], details["name"], details["paths"]) == ("file_change", tool_name, ["/w/new.txt"])
    assert "command" not in details


def test_an_mcp_prompt_carries_server_dot_tool(tmp_path):
    backend, _ = make_backend(tmp_path)
    initialize(backend)
    details = prompt(backend, "mcp__github__create_issue", {"title": "x"})
    assert (details["tool"], details["name"], details["mcp_tool"]) == ("mcp", "mcp__github__create_issue",
                                                                       "github.create_issue")


def test_a_read_prompt_has_its_kind_and_no_subject(tmp_path):
    backend, _ = make_backend(tmp_path)
    initialize(backend)
    details = prompt(backend, "Read", {"file_path": "/etc/hostname"})
    assert (details["tool"], details["name"]) == ("read", "Read")
    assert not {"command", "paths", "mcp_tool"} & set(details)


def test_a_question_names_its_tool_the_same_way(tmp_path):
    backend, host = make_backend(tmp_path)
    initialize(backend)
    replay(backend, "askuser__answers", answers=[{"q1": "Blue"}])
    request = host.named("request")[0]
    assert request[3] == "question" and (request[6]["tool"], request[6]["name"]) == ("other", "AskUserQuestion")


def test_a_start_claude_refuses_on_stderr_fails_with_its_last_line(tmp_path):
    backend, host = make_backend(tmp_path, mode="full")
    backend.start()
    host.children[0].stderr = "a warning\n--dangerously-skip-permissions cannot be used with root/sudo privileges\n"
    backend.on_exit(1)
    assert host.calls == [("start_failed", "claude exited (code 1) before it was ready: "
                                           "--dangerously-skip-permissions cannot be used with root/sudo privileges"
                                           " (--mode full is --permission-mode bypassPermissions)")]
