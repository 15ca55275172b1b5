"""A request judged in its own working directory (harnessctl/checks/policy.py;
issue 46): the cwd a codex approval or an ACP call's rawInput carries is
where the command's redirections and relative paths land, and a request
that runs outside the bound cwd is never allowed by a pattern nor a mode."""

from __future__ import annotations

import os

import pytest

from harnessctl.checks import policy
from harnessctl.kit import permission_subject

ECHO = [["allow", "command:echo *"], ["allow", "command:./run-tests.sh"], ["deny", "command:rm *"]]


@pytest.fixture
def tree(tmp_path):
    """The bound cwd `repo` (with `sub` and its script) and a `victim` folder beside it."""
    for folder in ("repo/sub", "victim"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "repo" / "run-tests.sh").write_text("")
    (tmp_path / "victim" / ".bashrc").write_text("")
    return os.path.realpath(str(tmp_path))


def decide(tree, command, cwd=None, rules=ECHO, mode=None):
    request = {"kind": "permission", "options": ["allow", "deny"], "tool": "command", "command": command,
               **({"cwd": cwd} if cwd is not None else {})}
    answer = policy.decide({"cwd": os.path.join(tree, "repo"), "mode": mode, "rules": rules}, request)
    return answer and answer[0]


def test_the_kit_carries_the_cwd_a_harness_gives():
    assert permission_subject("command", command="ls", cwd="/w")["cwd"] == "/w"


def test_a_redirection_is_judged_in_the_requests_own_cwd(tree):
    assert decide(tree, "echo x > .bashrc") == "allow"
    assert decide(tree, "echo x > .bashrc", cwd="../victim") is None


def test_a_request_outside_the_bound_cwd_is_not_verifiable(tree):
    assert decide(tree, "echo hi", cwd=os.path.join(tree, "victim")) is None


def test_a_request_outside_the_bound_cwd_is_not_allowed_by_the_mode_full(tree):
    assert decide(tree, "echo hi", cwd=os.path.join(tree, "victim"), rules=[["deny", "command:rm *"]],
                  mode="full") is None


def test_a_deny_still_sees_a_request_outside_the_bound_cwd(tree):
    assert decide(tree, "rm -rf x", cwd=os.path.join(tree, "victim")) == "deny"


def test_a_script_of_another_folder_is_not_the_one_a_rule_names(tree):
    assert decide(tree, "./run-tests.sh") == "allow"
    assert decide(tree, "./run-tests.sh", cwd=os.path.join(tree, "victim")) is None
    assert decide(tree, "./run-tests.sh", cwd="sub") is None


def test_a_symlink_into_another_folder_is_outside_the_bound_cwd(tree):
    os.symlink(os.path.join(tree, "victim"), os.path.join(tree, "repo", "link"))
    assert decide(tree, "echo x > .bashrc", cwd="link") is None


def test_a_subfolder_of_the_bound_cwd_is_judged_there(tree):
    assert decide(tree, "echo x > out.txt", cwd="sub") == "allow"
    assert decide(tree, "echo x > ../../victim/.bashrc", cwd="sub") is None


def test_the_bound_cwd_spelt_otherwise_is_the_bound_cwd(tree):
    assert decide(tree, "./run-tests.sh", cwd=os.path.join(tree, "repo", "sub", "..")) == "allow"


def test_a_cwd_holding_a_nul_parks(tree):
    assert decide(tree, "rm -rf x", cwd="sub\0x") is None


def test_a_relative_path_of_a_change_resolves_in_the_requests_cwd(tree):
    request = {"kind": "permission", "options": ["allow", "deny"], "tool": "file_change", "paths": ["x.txt"],
               "cwd": "../victim"}
    binding = {"cwd": os.path.join(tree, "repo"), "rules": [["allow", "file_change:*"]]}
    assert policy.decide(binding, request) is None
    assert policy.decide(binding, dict(request, cwd="sub")) == ("allow", {"by": "rule", "rule": "file_change:*"})
