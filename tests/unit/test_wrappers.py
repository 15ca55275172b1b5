"""What runs under `env`, `sudo`, `su`, `runuser` and `doas`, however their
options are spelt (harnessctl/checks/wrappers.py, options.py; issue 46): a
deny sees the command they run, and a wrapper whose options harnessctl
cannot read makes the line unverifiable, never silently allowed."""

from __future__ import annotations

import pytest

from harnessctl.checks import commandline, policy, wrappers

FULL_NO_RM = {"cwd": "/repo", "mode": "full", "rules": [["deny", "command:rm *"]]}


def decide(command, binding=FULL_NO_RM):
    answer = policy.decide(binding, {"kind": "permission", "tool": "command", "command": command,
                                     "options": ["allow", "deny"]})
    return answer and answer[0]


@pytest.mark.parametrize("line", ["env -iS 'rm -rf x'", "env -vS 'rm -rf x'", "env - rm -rf x", "sudo -R / rm -rf x",
                                  "sudo --chroot / rm -rf x", "su root -c 'rm -rf x'", "su - root -c 'rm -rf x'"])
def test_the_issues_wrapper_spellings_are_denied_under_the_mode_full(line):
    assert decide(line) == "deny"


@pytest.mark.parametrize("line", ["env -S'rm -rf x'", "env --split-string='rm -rf x'", "env --split-string 'rm -rf x'",
                                  "env --split 'rm -rf x'", "env -iS'rm -rf x'", "env -S '-i rm -rf x'",
                                  "env -S 'A=1 rm -rf x'", "env -S 'env -S \"rm -rf x\"'"])
def test_env_split_string_is_seen_however_it_is_spelt(line):
    assert decide(line) == "deny"


@pytest.mark.parametrize("line", ["env -C /tmp rm -rf x", "env --chdir /tmp rm -rf x", "env --chdir=/tmp rm -rf x",
                                  "env -uHOME rm -rf x", "env -i0v -u HOME A=1 rm -rf x", "env --unset=HOME rm -rf x",
                                  "env --ignore-environment rm -rf x", "env -- rm -rf x"])
def test_env_options_with_values_are_skipped_with_their_values(line):
    assert decide(line) == "deny"


@pytest.mark.parametrize("line", ["sudo -D /tmp rm -rf x", "sudo --chdir=/tmp rm -rf x", "sudo -uroot rm -rf x",
                                  "sudo -Eu root rm -rf x", "sudo -R/ rm -rf x", "sudo --user root rm -rf x",
                                  "sudo -g wheel -- rm -rf x", "sudo --preserve-env rm -rf x", "sudo A=1 rm -rf x"])
def test_sudo_options_with_values_are_skipped_with_their_values(line):
    assert decide(line) == "deny"


@pytest.mark.parametrize("line", ["su -c 'rm -rf x' root", "su --command='rm -rf x' root", "su --command 'rm -rf x'",
                                  "su --session-command='rm -rf x'", "su -lc 'rm -rf x'", "su root -- -c 'rm -rf x'",
                                  "su -s /bin/bash root -c 'rm -rf x'", "su -crm\\ -rf\\ x"])
def test_su_runs_the_script_of_its_c_option_wherever_it_stands(line):
    assert decide(line) == "deny"


@pytest.mark.parametrize("line", ["runuser -u root rm -rf x", "runuser -u root -- rm -rf x",
                                  "runuser root -c 'rm -rf x'", "runuser -l root -c 'rm -rf x'",
                                  "runuser --user=root rm -rf x"])
def test_runuser_runs_its_command_or_the_script_of_its_c_option(line):
    assert decide(line) == "deny"


@pytest.mark.parametrize("line", ["doas rm -rf x", "doas -u root rm -rf x", "doas -nu root rm -rf x",
                                  "doas -C /etc/doas.conf rm -rf x"])
def test_doas_options_are_skipped_with_their_values(line):
    assert decide(line) == "deny"


@pytest.mark.parametrize("line", ["sudo --bogus rm -rf x", "sudo -Z x rm -rf x", "env --bogus x rm -rf x",
                                  "su --bogus root", "doas -Z x rm -rf x", "nice sudo -Z x rm -rf x", "sudo -u",
                                  "env -S 'rm${IFS}-rf x'", "env -S 'rm\\_-rf x'", "runuser --bogus -u root x"])
def test_a_wrapper_whose_options_cannot_be_read_makes_the_line_unverifiable(line):
    assert commandline.parse(line, "/repo").why is not None


def test_a_wrapper_whose_options_cannot_be_read_is_not_allowed_by_the_mode_full():
    assert decide("sudo -Z x rm -rf x") is None


def test_an_ambiguous_long_option_abbreviation_cannot_be_read():
    assert wrappers.unreadable(["sudo", "--re", "rm"]) is not None  # --remove-timestamp or --reset-timestamp


@pytest.mark.parametrize("line", ["env pytest -q", "sudo -u root pytest", "env -C sub pytest", "su", "sudo -l"])
def test_a_wrapper_read_for_certain_leaves_the_line_verifiable(line):
    assert commandline.parse(line, "/repo").why is None
