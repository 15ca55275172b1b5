"""How an ssh:// address reaches its machine: `user@host:port` spelled out, `fork` on one machine,
and the connection sharing harnessctl adds when HARNESSCTL_SSH is unset and the user's ssh config
has none (an `ssh` first on PATH records its argv and runs the real one with the test bed's config)."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess

import pytest
from cliutil import events, of_type, run, wait_results
from ssh_support import address

from harnessctl.store.address import fallback_socket_dir

M = ("--adapter", "mock")


def ok(*args, env, **kwargs):
    proc = run(*args, env=env, **kwargs)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr.decode())
    return proc


def test_an_address_with_user_and_port_reaches_that_port_as_that_user(efile, ssh_bed, ssh_env):
    addr = "ssh://root@127.0.0.1:%d%s" % (ssh_bed.servers["h2"].port, efile)
    ok("send", addr, "hello", "--wait", *M, env=ssh_env)
    (line,) = ok("status", addr, env=ssh_env).stdout.decode().splitlines()
    assert (json.loads(line)["file"], json.loads(line)["state"]) == (addr, "idle")


def test_fork_over_ssh_makes_the_new_file_on_the_same_machine_and_names_both_addresses(workdir, ssh_env):
    source, new = str(workdir / "a.jsonl"), str(workdir / "b.jsonl")
    ok("send", address("h1", source), "first words", "--wait", *M, env=ssh_env)
    proc = ok("fork", address("h1", source), address("h1", new), env=ssh_env)
    assert events(new)[0]["kind"] == "forked" and events(new)[0]["from"] == os.path.realpath(source)
    assert json.loads(proc.stdout) == {"file": address("h1", new), "forked_from": address("h1", source),
                                       "seq": events(source)[-1]["seq"]}


def test_fork_from_one_machine_to_another_exits_2_and_writes_nothing(workdir, ssh_env):
    source, new = str(workdir / "a.jsonl"), str(workdir / "b.jsonl")
    ok("send", address("h1", source), "first words", "--wait", *M, env=ssh_env)
    for target in (address("h2", new), new):
        proc = run("fork", address("h1", source), target, env=ssh_env)
        assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1, proc.stderr
    assert not os.path.exists(new)


@pytest.fixture
def recorded_ssh(workdir, ssh_bed, ssh_env):
    """(env, calls): HARNESSCTL_SSH unset, HOME a folder of its own, and an `ssh` first on PATH that
    appends each argv to `calls` (one word a line, a blank line after) and runs the bed's ssh."""
    folder = workdir / "bin"
    folder.mkdir()
    calls = str(workdir / "calls")
    with open(str(folder / "ssh"), "w") as f:
        f.write('#!/bin/sh\nprintf "%%s\\n" "$@" "" >> %s\nexec %s "$@"\n' % (shlex.quote(calls),
                                                                         shlex.join(ssh_bed.ssh())))
    os.chmod(str(folder / "ssh"), stat.S_IRWXU)
    home = workdir / "home"
    home.mkdir()
    env = dict(ssh_env, PATH="%s:%s" % (folder, os.environ["PATH"]), HOME=str(home))
    del env["HARNESSCTL_SSH"]
    yield env, calls
    with open(calls) as f:  # the masters harnessctl's options started: asked to exit
        for argv in f.read().split("\n\n"):
            words = argv.split("\n")
            if "--" in words:
                subprocess.run([*ssh_bed.ssh(), *words[:words.index("--")], "-O", "exit", words[words.index("--") + 1]],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def recorded(calls):
    """Every recorded ssh command line, as its words."""
    with open(calls) as f:
        return [argv.split("\n") for argv in f.read().split("\n\n") if argv]


def options(calls):
    """The -o options of the first recorded ssh command."""
    with open(calls) as f:
        words = f.read().split("\n\n")[0].split("\n")
    return [words[i + 1] for i, word in enumerate(words) if word == "-o"]


def test_without_harnessctl_ssh_and_without_sharing_in_the_ssh_config_harnessctl_shares_connections(
        efile, recorded_ssh):
    env, calls = recorded_ssh
    ok("send", address("h1", efile), "hello", "--wait", *M, env=env)
    given = options(calls)
    assert "ControlMaster=auto" in given, given
    assert any(o.startswith("ControlPath=%s/" % fallback_socket_dir()) for o in given), given
    assert any(o.startswith("ControlPersist=") for o in given), given


def test_a_user_ssh_config_that_speaks_of_sharing_is_left_to_decide(efile, recorded_ssh):
    env, calls = recorded_ssh
    os.mkdir(os.path.join(env["HOME"], ".ssh"), 0o700)
    with open(os.path.join(env["HOME"], ".ssh", "config"), "w") as f:
        f.write("Host *\n  ControlMaster no\n")
    ok("send", address("h1", efile), "hello", "--wait", *M, env=env)
    assert not [o for o in options(calls) if o.startswith(("ControlMaster", "ControlPath", "ControlPersist"))]


def test_text_and_schema_of_a_send_never_appear_on_the_ssh_command_line(workdir, efile, recorded_ssh):
    env, calls = recorded_ssh
    schema = str(workdir / "schema.json")
    with open(schema, "w") as f:
        f.write('{"type": "object", "description": "schema-words-7f3a"}')
    ok("send", address("h1", efile), "text-words-9c1e", "--schema", schema, "--wait", *M, env=env)
    assert of_type(efile, "accepted")[0]["text"] == "text-words-9c1e"
    for argv in recorded(calls):
        assert not [w for w in argv if "text-words" in w or "schema-words" in w], argv


def test_an_answer_never_appears_on_the_ssh_command_line(efile, recorded_ssh):
    env, calls = recorded_ssh
    assert run("send", address("h1", efile), "/question which?", "--wait", *M, env=env).returncode == 9
    ok("reply", address("h1", efile), "req-1", "answer-words-4b2d", env=env)
    assert wait_results(efile, 1)[0]["output"].endswith("answer: answer-words-4b2d")
    for argv in recorded(calls):
        assert not [w for w in argv if "answer-words" in w], argv
