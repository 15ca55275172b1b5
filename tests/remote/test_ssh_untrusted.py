"""A compromised remote harnessctl, reached through the real ssh test bed: what it prints reaches the local
user only as something it was asked about, and cleaned.  A line whose "file" is not the address asked (a
local path, /etc/passwd, another machine) is refused, however it spells the key; its log output and its
stderr reach the terminal with their escapes shown (an OSC 52 clipboard write is inert), and `log --json`
stays the same JSON."""

from __future__ import annotations

import json
import shlex
import sys

import pytest
from cliutil import run
from ssh_support import address

# The fake remote harnessctl: for its command (its first word), what answers.json says: stdout, stderr and
# exit code; "{asked}" in them is the last path it was given.
FAKE = """\
import json, os, sys
answers = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "answers.json")))
out, err, code = answers[sys.argv[1]]
sys.stdout.write(out.replace("{asked}", sys.argv[-1]))
sys.stderr.write(err.replace("{asked}", sys.argv[-1]))
sys.exit(code)
"""
OSC52 = "\x1b]52;c;cm0gLXJmIH4K\x07"  # sets the clipboard to `rm -rf ~`
RUNNING = ('{"file":"{asked}","state":"running"}\n', "", 0)

FOREIGN = {  # a status line that names a file not asked, each spelling of it
    "system file": '{"file":"/etc/passwd","state":"idle"}',
    "file not the first key": '{"state":"idle","file":"/etc/passwd"}',
    "second file key": '{"file":"{asked}","state":"idle","file":"/etc/passwd"}',
    "escaped key": '{"\\u0066ile":"/etc/passwd","state":"idle"}',
    "space before the colon": '{"file" :"/etc/passwd","state":"idle"}',
    "relative local path": '{"file":"local.jsonl","state":"idle"}',
    "another machine": '{"file":"ssh://h2/tmp/x.jsonl","state":"idle"}',
    "dotdot out of the file": '{"file":"{asked}/../../etc/passwd","state":"idle"}',
}


@pytest.fixture
def fake(workdir, ssh_env):
    """fake(answers) -> the environment whose ssh:// commands run the fake remote harnessctl."""
    script = workdir / "fake_harnessctl.py"
    script.write_text(FAKE)

    def arrange(answers):
        (workdir / "answers.json").write_text(json.dumps(answers))
        return dict(ssh_env, HARNESSCTL_REMOTE_COMMAND=shlex.join([sys.executable, str(script)]))

    return arrange


def files_printed(proc):
    return [json.loads(line).get("file") for line in proc.stdout.decode().splitlines()]


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_status_refuses_a_line_about_a_file_not_asked(fake, efile, kind):
    env = fake({"status": (FOREIGN[kind] + "\n", "", 0)})
    proc = run("status", address("h1", efile), env=env)
    assert proc.returncode == 1 and b"not asked" in proc.stderr, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == b""


@pytest.mark.parametrize("kind", ["system file", "file not the first key", "second file key"])
def test_status_of_two_files_on_a_host_gives_each_an_error_line_instead(fake, workdir, kind):
    env = fake({"status": (FOREIGN[kind] + "\n", "", 0)})
    asked = [address("h1", str(workdir / name)) for name in ("a.jsonl", "b.jsonl")]
    proc = run("status", *asked, env=env)
    assert files_printed(proc) == asked, proc.stdout
    assert all("not asked" in json.loads(line)["error"] for line in proc.stdout.decode().splitlines())


@pytest.mark.parametrize("kind", ["system file", "file not the first key", "relative local path"])
def test_wait_refuses_a_line_about_a_file_not_asked(fake, efile, kind):
    env = fake({"wait": (FOREIGN[kind] + "\n", "", 0)})
    proc = run("wait", address("h1", efile), env=env)
    assert (proc.returncode, proc.stdout) == (1, b""), proc.stderr
    assert b"not asked" in proc.stderr


def test_wait_any_over_two_hosts_refuses_a_line_about_a_file_not_asked(fake, workdir):
    env = fake({"status": RUNNING, "wait": (FOREIGN["file not the first key"] + "\n", "", 0)})
    asked = [address(host, str(workdir / "a.jsonl")) for host in ("h1", "h2")]
    proc = run("wait", "--any", *asked, "--timeout", "30", env=env)
    assert (proc.returncode, proc.stdout) == (1, b""), proc.stderr
    assert b"not asked" in proc.stderr


def test_a_line_about_the_file_asked_is_passed_with_its_address(fake, workdir):
    """The control: an honest line, and a folder's lines, pass with their addresses."""
    folder = str(workdir)
    env = fake({"status": ('{"file":"{asked}","state":"idle"}\n', "", 0)})
    assert files_printed(run("status", address("h1", folder + "/a.jsonl"), env=env)) == [
        address("h1", folder + "/a.jsonl")]
    env = fake({"status": ('{"file":"%s/a.jsonl","state":"idle"}\n{"file":"%s/b.jsonl","state":"idle"}\n'
                           % (folder, folder), "", 0)})
    assert files_printed(run("status", address("h1", folder), env=env)) == [
        address("h1", folder + "/a.jsonl"), address("h1", folder + "/b.jsonl")]


def test_the_remote_log_reaches_the_terminal_with_its_escapes_shown(fake, efile):
    env = fake({"log": ("user: hi\tthere %s\n\x9b31m red\n" % OSC52, "", 0)})
    proc = run("log", address("h1", efile), env=env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert out == "user: hi\tthere \\x1b]52;c;cm0gLXJmIH4K\\x07\n\\x9b31m red\n"


def test_the_remote_log_json_stays_the_same_json_without_a_raw_escape(fake, efile):
    lines = ['{"id":"e1","text":"%s"}' % OSC52.replace("\x1b", "\\u001b").replace("\x07", "\\u0007"),
             '{"id":"e2","text":"\x9b31m \u202eevil"}']
    env = fake({"log": ("\n".join(lines) + "\n", "", 0)})
    proc = run("log", address("h1", efile), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode().splitlines()
    assert [json.loads(line) for line in out] == [json.loads(line) for line in lines]
    assert not any(c in "".join(out) for c in "\x1b\x07\x9b\u202e"), out


def test_the_remote_stderr_reaches_the_terminal_with_its_escapes_shown(fake, efile):
    env = fake({"log": ("", "harnessctl: warning: %s\nsomething else %s\n" % (OSC52, OSC52), 0)})
    proc = run("log", address("h1", efile), env=env)
    assert proc.returncode == 0, proc.stderr
    assert b"\x1b" not in proc.stderr and b"\x07" not in proc.stderr, proc.stderr
    assert proc.stderr.decode().splitlines() == ["harnessctl: %s: warning: \\x1b]52;c;cm0gLXJmIH4K\\x07"
                                                 % address("h1", efile),
                                                 "something else \\x1b]52;c;cm0gLXJmIH4K\\x07"]
