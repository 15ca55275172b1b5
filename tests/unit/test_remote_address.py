"""ssh:// session addresses (harnessctl/remote/address.py) and the ssh
command line they become (remote/ssh.py): what reaches the remote shell is
the command's words, each quoted, and nothing ssh could take as an option."""

from __future__ import annotations

import shlex

import pytest

from harnessctl.errors import UsageError
from harnessctl.remote import ssh
from harnessctl.remote.address import parse


def test_an_address_names_user_host_port_and_absolute_path():
    remote = parse("ssh://ann@build-1:2222/srv/runs/a b.jsonl")
    assert (remote.user, remote.host, remote.port, remote.path) == ("ann", "build-1", "2222", "/srv/runs/a b.jsonl")


def test_an_address_without_user_or_port_leaves_them_to_ssh():
    remote = parse("ssh://box/x.jsonl")
    assert (remote.user, remote.host, remote.port) == (None, "box", None)


def test_an_ipv6_host_is_written_in_brackets():
    remote = parse("ssh://[::1]:22/x.jsonl")
    assert (remote.host, remote.port) == ("::1", "22")


def test_the_path_is_taken_as_written_without_percent_decoding():
    assert parse("ssh://box/a%20b.jsonl").path == "/a%20b.jsonl"


def test_another_file_of_the_same_machine_keeps_its_authority():
    assert parse("ssh://ann@box:2/a.jsonl").with_path("/b/c.jsonl") == "ssh://ann@box:2/b/c.jsonl"


@pytest.mark.parametrize("address", ["ssh://box", "ssh://box/", "ssh:///x.jsonl", "ssh://-oProxyCommand=x/a.jsonl",
                                     "ssh://-l@box/a.jsonl", "ssh://box:0/a.jsonl", "ssh://box:http/a.jsonl",
                                     "ssh://bo x/a.jsonl", "ssh://[::1/a.jsonl", "ssh://box;id/a.jsonl"])
def test_a_malformed_address_is_a_usage_error(address):
    with pytest.raises(UsageError):
        parse(address)


@pytest.fixture
def plain_ssh(monkeypatch):
    monkeypatch.setenv("HARNESSCTL_SSH", "ssh -F /dev/null")
    monkeypatch.delenv("HARNESSCTL_REMOTE_COMMAND", raising=False)


def test_every_word_reaches_the_remote_shell_quoted(plain_ssh):
    words = ["send", "--cwd", "/a b/$(id)", "--", "/x/`id`;rm -rf ~\n'q'\".jsonl", "-n"]
    argv = ssh.command_line((None, "box", None), words)
    assert shlex.split(argv[-1]) == ["harnessctl"] + words


def test_host_comes_after_a_double_dash_with_port_and_user_as_options(plain_ssh):
    argv = ssh.command_line(("ann", "box", "2222"), ["status"])
    assert argv[:-1] == ["ssh", "-F", "/dev/null", "-p", "2222", "-l", "ann", "--", "box"]


def test_the_remote_command_is_the_users_setting(plain_ssh, monkeypatch):
    monkeypatch.setenv("HARNESSCTL_REMOTE_COMMAND", "env A=1 python3 -m harnessctl")
    assert ssh.command_line((None, "box", None), ["status", "--", "/x"])[-1] == \
        "env A=1 python3 -m harnessctl status -- /x"


def test_settings_are_quoted_assignments_before_the_command(plain_ssh):
    argv = ssh.command_line((None, "box", None), ["status"], {"HARNESSCTL_ROOT": "/a b\n/c"})
    assert shlex.split(argv[-1]) == ["HARNESSCTL_ROOT=/a b\n/c", "harnessctl", "status"]


def test_connection_sharing_is_added_when_no_ssh_config_speaks_of_it(monkeypatch, tmp_path):
    monkeypatch.delenv("HARNESSCTL_SSH", raising=False)
    monkeypatch.setattr(ssh, "CONFIGS", (str(tmp_path / "config"),))
    argv = ssh.command_line((None, "box", None), ["status"])
    assert "ControlMaster=auto" in argv and "ControlPersist=" + ssh.PERSIST in argv


def test_connection_sharing_is_the_users_when_their_config_speaks_of_it(monkeypatch, tmp_path):
    monkeypatch.delenv("HARNESSCTL_SSH", raising=False)
    (tmp_path / "config").write_text("Host *\n  ControlMaster auto\n  ControlPath ~/.ssh/cm-%C\n")
    monkeypatch.setattr(ssh, "CONFIGS", (str(tmp_path / "config"),))
    assert not any(word.startswith("Control") for word in ssh.command_line((None, "box", None), ["status"]))


def test_a_connect_timeout_of_harnessctl_timeout_is_added_unless_the_config_has_one(monkeypatch, tmp_path):
    monkeypatch.delenv("HARNESSCTL_SSH", raising=False)
    monkeypatch.setenv("HARNESSCTL_TIMEOUT", "7")
    monkeypatch.setattr(ssh, "CONFIGS", (str(tmp_path / "config"),))
    assert "ConnectTimeout=7" in ssh.command_line((None, "box", None), ["status"])
    (tmp_path / "config").write_text("Host *\n  ConnectTimeout=3\n")
    assert not any(word.startswith("ConnectTimeout") for word in ssh.command_line((None, "box", None), ["status"]))


def test_a_commented_control_master_is_no_setting(monkeypatch, tmp_path):
    monkeypatch.delenv("HARNESSCTL_SSH", raising=False)
    (tmp_path / "config").write_text("#   ControlMaster auto\n")
    monkeypatch.setattr(ssh, "CONFIGS", (str(tmp_path / "config"),))
    assert "ControlMaster=auto" in ssh.command_line((None, "box", None), ["status"])


def test_a_set_harnessctl_ssh_adds_no_option(plain_ssh):
    assert "ControlMaster=auto" not in ssh.command_line((None, "box", None), ["status"])


@pytest.mark.parametrize("value", ["ssh 'unbalanced", "   "])
def test_a_harnessctl_ssh_that_is_no_command_line_is_a_usage_error(monkeypatch, value):
    monkeypatch.setenv("HARNESSCTL_SSH", value)
    with pytest.raises(UsageError):
        ssh.command_line((None, "box", None), ["status"])


def test_ssh_exit_255_is_an_unreachable_machine_naming_ssh_s_reason():
    error = ssh.failure((None, "box", "2"), 255, "harnessctl: x\nssh: connect to host box port 2: Connection refused")
    assert error is not None and error.exit_code == 5
    assert str(error) == "cannot reach box:2 over ssh: ssh: connect to host box port 2: Connection refused"


@pytest.mark.parametrize("code", [126, 127])
def test_a_remote_command_not_found_is_exit_5(code):
    error = ssh.failure((None, "box", None), code, "sh: 1: harnessctl: not found")
    assert error is not None and error.exit_code == 5 and "HARNESSCTL_REMOTE_COMMAND" in str(error)


@pytest.mark.parametrize("code", [0, 2, 3, 4, 7, 10])
def test_the_remote_harnessctl_s_own_codes_are_no_failure(code):
    assert ssh.failure((None, "box", None), code, "") is None
