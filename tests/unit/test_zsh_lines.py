"""A command line zsh runs (codex and Claude Code run commands in the user's
login shell, zsh on macOS): what zsh reads otherwise than bash is read the
safe way, so the policy never allows a write or code it did not see
(harnessctl/checks/shellwords.py, commandline.py; issue 46)."""

from __future__ import annotations

import os

import pytest

from harnessctl.checks import commandline, policy

BOT = [["allow", "command:pytest *"], ["deny", "*"]]
FULL_NO_RM = [["deny", "command:rm *"]]
CLOBBERS = [">!", ">>!", "&>!", "&>>!", ">|", ">>|", "&>|", "&>>|", ">&!", ">&|", ">>&", ">>&!", "2>!", "1>>|"]


@pytest.fixture
def cwd(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "out.txt").write_text("")
    return os.path.realpath(str(root))


def decide(rules, command, cwd="/repo", mode=None):
    answer = policy.decide({"cwd": cwd, "mode": mode, "rules": rules},
                           {"kind": "permission", "tool": "command", "command": command, "options": ["allow", "deny"]})
    return answer and answer[0]


def why(line, cwd="/repo"):
    return commandline.parse(line, cwd).why


@pytest.mark.parametrize("line", ["zsh -c 'pytest -q >! ~/.bashrc'", "zsh -lc 'pytest -q >>! ~/.bashrc'",
                                  "pytest -q &>! ~/.bashrc", "pytest -q >!~/.bashrc"])
def test_a_zsh_clobber_out_of_the_cwd_is_not_allowed_by_the_readmes_rules(cwd, line):
    assert decide(BOT, line, cwd) == "deny"


@pytest.mark.parametrize("op", CLOBBERS)
def test_a_zsh_redirection_is_a_redirection_onto_the_word_after_it(cwd, op):
    (command,) = commandline.parse("pytest -q %s out.txt" % op, cwd).commands
    assert command.words == ("pytest", "-q") and command.redirects[0][2] == "out.txt"


@pytest.mark.parametrize("op", CLOBBERS)
def test_a_zsh_redirection_out_of_the_cwd_is_not_verifiable(cwd, op):
    assert why("pytest -q %s ../victim.txt" % op, cwd) is not None


@pytest.mark.parametrize("op", [">!", ">>|", "&>!"])
def test_a_zsh_redirection_onto_a_file_inside_the_cwd_is_verifiable(cwd, op):
    assert why("pytest -q %s out.txt" % op, cwd) is None


def test_a_bang_clobber_is_judged_as_bash_reads_it_too(cwd, tmp_path):
    os.symlink(str(tmp_path / "victim"), os.path.join(cwd, "!"))  # bash's `>! x` writes the file `!`
    assert why("pytest -q >! out.txt", cwd) is not None


@pytest.mark.parametrize("line", ["=rm -rf x", "pytest =rm"])
def test_a_word_zsh_expands_to_a_commands_path_is_not_verifiable(line):
    assert why(line) is not None


def test_a_deny_sees_the_command_an_equals_word_names():
    assert decide(FULL_NO_RM, "=rm -rf x", mode="full") == "deny"


@pytest.mark.parametrize("line", ["pytest $=x", "pytest $~x", "pytest $^x", "pytest $+x", 'pytest "$=x"',
                                  'pytest "$x[1]"'])
def test_a_zsh_expansion_is_not_verifiable(line):
    assert why(line) is not None


@pytest.mark.parametrize("line", ["pytest =(rm -rf x)", "ls *(e:'rm -rf x':)", "ls x(e:'rm -rf x':)",
                                  "pytest &| ls", "pytest &!", "pytest <<< x", "emulate sh -c 'rm -rf x'",
                                  "sched +1 'rm -rf x'", "zpty z 'rm -rf x'"])
def test_zsh_code_a_line_would_run_makes_it_unverifiable(line):
    assert why(line) is not None


@pytest.mark.parametrize("line", ["pytest =(rm -rf x)", "ls *(e:'rm -rf x':)", "emulate sh -c 'rm -rf x'"])
def test_the_mode_full_never_allows_zsh_code(line):
    assert decide(FULL_NO_RM, line, mode="full") != "allow"


@pytest.mark.parametrize("line", ["noglob rm -rf x", "nocorrect rm -rf x", "- rm -rf x", "repeat 2 rm -rf x"])
def test_a_deny_sees_through_zshs_precommand_modifiers(line):
    assert decide(FULL_NO_RM, line, mode="full") == "deny"
