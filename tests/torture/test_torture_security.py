"""Torture scenario 9: security (issue 5).

The event file is 0600 and the sidecar 0700 whatever the umask, nobody but
the owner reaches the runtime (file permissions stop a plain other user; the
peer-credential check stops one who gets through them), nothing listens on a
network port, and no shell ever sees user text."""

from __future__ import annotations

import os
import stat

import pytest
from cliutil import ROOT, cli_env, ok, run, runtime_pids, wait_for
from torture_support import as_nobody, check, of_kind, status_of, wait_results

pytestmark = pytest.mark.torture

MOCK = ("--adapter", "mock")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_files_stay_private_under_a_permissive_umask(efile):
    """Every file the sidecar holds, while the harness runs (harness.pid) and
    after the runtime has exited (state.json), whoever wrote it."""
    umask0 = dict(env=cli_env(HARNESSCTL_IDLE_TIMEOUT="0.5"), preexec_fn=lambda: os.umask(0))
    proc = run("send", efile, "/permission hold\nhello", *MOCK, **umask0)
    assert proc.returncode == 0, proc.stderr
    wait_for(lambda: of_kind(efile, "request"), what="request")
    sidecar = efile + ".d"
    seen = private_files(sidecar)
    proc = run("reply", efile, "req-1", "allow", **umask0)
    assert proc.returncode == 0, proc.stderr
    wait_results(efile, 1)
    wait_for(lambda: not runtime_pids(efile), what="idle exit")
    seen |= private_files(sidecar)
    assert {"binding.json", "runtime.lock", "spawn.lock", "runtime.log", "runtime.sock", "harness.pid",
            "mock-transcript.jsonl", "state.json"} <= seen
    assert mode(efile) == 0o600 and mode(sidecar) == 0o700
    check(efile)


def private_files(sidecar):
    """The names in `sidecar`, asserting each is private to its owner."""
    names = set(os.listdir(sidecar))
    for name in names:
        assert stat.S_IMODE(os.lstat(os.path.join(sidecar, name)).st_mode) & 0o077 == 0, name
    return names


def test_nothing_listens_on_a_network_port(efile):
    ok("send", efile, "/sleep 5\nhello", *MOCK)
    [pid] = runtime_pids(efile)
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    assert inodes, "the runtime has its unix socket"
    unix = {line.split()[6] for line in open("/proc/net/unix").read().splitlines()[1:]}
    assert inodes <= unix, "sockets that are not AF_UNIX: %s" % (inodes - unix)
    ok("cancel", efile)
    wait_results(efile, 1)
    check(efile)


@as_root
@pytest.mark.parametrize("command", ["send", "status", "cancel"])
def test_another_user_cannot_talk_to_the_runtime(command, efile):
    ok("send", efile, "/permission hold on\nmine", *MOCK)  # a busy session that writes nothing meanwhile
    wait_for(lambda: of_kind(efile, "request"), what="request")
    before = open(efile, "rb").read()
    code, err = as_nobody([command, efile] + (["not yours"] if command == "send" else []))
    assert code not in (0, 99) and err.startswith("harnessctl: "), (code, err)
    assert open(efile, "rb").read() == before
    assert status_of(efile)["state"] == "awaiting_reply"
    ok("cancel", efile)


@as_root
def test_the_runtime_refuses_a_peer_of_another_uid_that_reaches_its_socket(efile):
    """A process whose effective uid is nobody but whose filesystem uid is root
    gets through the 0700 sidecar and the 0600 socket: only the runtime's
    peer-credential check stands between it and the session."""
    ok("send", efile, "/permission hold on\nmine", *MOCK)  # a busy session that writes nothing meanwhile
    wait_for(lambda: of_kind(efile, "request"), what="request")
    before = open(efile, "rb").read()
    code, err = as_nobody(["send", efile, "/sleep 0\nsmuggled"], keep_root_fs=True)
    assert code not in (0, 99) and err.startswith("harnessctl: "), (code, err)
    assert "runtime" in err, err  # it got as far as the runtime, which did not answer
    assert open(efile, "rb").read() == before
    assert not any("smuggled" in e["text"] for e in of_kind(efile, "accepted"))
    assert status_of(efile)["state"] == "awaiting_reply"
    ok("cancel", efile)


SHELLY = ("$(touch {canary}) `touch {canary}` ${{HOME}} $HOME 'single' \"double\" \\\\ \\n ; | & && || > {canary}\n"
          "!! %s %n {{}} * ? [a-z] ~ # -- --cwd / \t tab\r\ncarriage \u00e9\u4e2d\U0001F600 \x7f end\n")


@pytest.mark.parametrize("via", ["argv", "stdin"])
def test_a_prompt_full_of_shell_syntax_arrives_byte_identical(via, efile, workdir):
    canary = str(workdir / "pwned")
    text = SHELLY.format(canary=canary)
    if via == "argv":
        ok("send", efile, "--adapter", "mock", "--", text)
    else:
        ok("send", efile, "--adapter", "mock", input=text.encode("utf-8"))
    [accepted] = of_kind(efile, "accepted")
    assert accepted["text"] == text
    [result] = wait_results(efile, 1)
    assert result["output"] == "echo: " + text.strip("\n")
    assert of_kind(efile, "message")[0]["text"] == result["output"]
    assert not os.path.exists(canary)
    check(efile)


def test_a_text_that_looks_like_an_option_is_sent_after_double_dash(efile):
    ok("send", efile, "--adapter", "mock", "--", "--cwd=/etc")
    assert of_kind(efile, "accepted")[0]["text"] == "--cwd=/etc"
    assert status_of(efile)["cwd"] == os.path.realpath(ROOT)
    assert wait_results(efile, 1)[0]["output"] == "echo: --cwd=/etc"
