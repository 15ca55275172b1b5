"""Torture: a runtime that stays reachable, bad input that used to crash or
hang, and the promises `reply` and a broken adapter make to the caller
(issue 9, items 3 to 5).  Every case: the documented exit code with ONE clear
stderr line, nothing in the event file lost, doubled or torn, and nothing left
running that should have exited."""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import socket
import subprocess
import time

import pytest
from cliutil import ROOT, bind, cli_env, ok, run, runtime_pids, start, wait_for, wait_results
from torture_support import check, of_kind, one_clear_line, status_of, tmpfs

pytestmark = pytest.mark.torture

MOCK_ENV = {"HARNESSCTL_ADAPTER": "mock"}


def limited(resource_id: int, value: int):
    """preexec_fn: the command (and the runtime it spawns) under a resource limit."""
    return lambda: resource.setrlimit(resource_id, (value, value))


def cli(*args: str, env=None, preexec_fn=None, stdout=subprocess.PIPE, stdin=None, timeout: float = 60):
    return run(*args, env=env or cli_env(**MOCK_ENV), stdin=stdin if stdin is not None else subprocess.DEVNULL,
               stdout=stdout, preexec_fn=preexec_fn, timeout=timeout)


def assert_refused(proc, code: int, *fragments: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert one_clear_line(proc.stderr, *fragments), proc.stderr


# -- 2. one writer per file -----------------------------------------------------------------


def test_status_of_a_hard_link_whose_file_a_runtime_serves_under_its_other_name(efile, workdir):
    """The link's own sidecar has no runtime, but the file's writer lock is
    held: status must not apply the lost-runtime rule, nor wait its timeout."""
    ok("send", efile, "/permission hold\nfirst", "--adapter", "mock")
    wait_for(lambda: of_kind(efile, "request"), what="request")
    link = str(workdir / "link.jsonl")
    os.link(efile, link)
    report = status_of(link, cli_env(HARNESSCTL_TIMEOUT="20"))
    assert report["state"] == "awaiting_reply" and report["runtime"] == "alive"
    assert not of_kind(efile, "result")
    ok("cancel", efile)
    wait_for(lambda: of_kind(efile, "result"), what="the cancelled result")
    check(efile)


# -- 3. a runtime that stays reachable ---------------------------------------------------


def test_a_runtime_out_of_file_descriptors_keeps_accepting_once_they_free_up(efile):
    """45 connections against a runtime limited to 40 descriptors: accept()
    fails with EMFILE meanwhile, and must not lose the accept thread for good."""
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="1", **MOCK_ENV)
    first = cli("send", efile, "/permission hold\nfirst", env=env,
                preexec_fn=limited(resource.RLIMIT_NOFILE, 40))
    assert first.returncode == 0, first.stderr
    wait_for(lambda: of_kind(efile, "request"), what="pending request")
    conns = []
    for _ in range(45):
        conn = socket.socket(socket.AF_UNIX)
        conn.connect(efile + ".d/runtime.sock")
        conns.append(conn)
    wait_for(lambda: b"accept failed" in open(efile + ".d/runtime.log", "rb").read(), what="accept hit EMFILE")
    for conn in conns:
        conn.close()
    assert status_of(efile, env)["state"] == "awaiting_reply"
    ok("reply", efile, "req-1", "allow", env=env)
    wait_results(efile, 1)
    wait_for(lambda: not runtime_pids(efile), 30, "the runtime idles out")
    check(efile)


def test_a_send_while_the_runtime_is_still_starting_reaches_it(efile):
    """The spawner is killed while its runtime starts (here: folds a long file
    with no snapshot); the next send must find that runtime, which listens
    before it folds, and never wait the whole timeout for it to "exit"."""
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="60", HARNESSCTL_TIMEOUT="8", **MOCK_ENV)  # it must not idle out first
    rng = random.Random()
    for trial in range(4):
        path = efile.replace(".jsonl", "-%d.jsonl" % trial)
        long_history(path)
        bind(path, {"adapter": "mock", "cwd": ROOT, "model": None})
        send_while_starting(path, env, rng.uniform(0, 0.04))


def long_history(path: str, lines: int = 200000) -> None:
    """A file of complete answers, each parsed in full by the first fold."""
    with open(path, "w") as f:
        for seq in range(1, lines + 1):
            f.write('{"type":"message","ts":"2026-12-02T10:00:00.000Z","seq":%d,"run_id":"r","message_id":"m%d",'
                    '"role":"assistant","text":"old answer"}\n' % (seq, seq))


def send_while_starting(path: str, env, pause: float) -> None:
    spawner = start("send", path, "first", "--adapter", "mock", env=env, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL)
    wait_for(lambda: runtime_pids(path) or spawner.poll() is not None, 30, "runtime spawned", 0.002)
    time.sleep(pause)  # a random moment of the runtime's start-up
    spawner.kill()
    spawner.wait()
    proc = run("send", path, "second", env=env, timeout=60)
    assert proc.returncode == 0, (pause, proc.stderr)
    wait_for(lambda: "echo: second" in json.dumps(of_kind(path, "result")), 30, "second answered")
    check(path)


def test_dev_null_as_the_event_path_is_refused_and_leaves_nothing(workdir):
    assert_refused(run("send", "/dev/null", "hi", "--adapter", "mock"), 2, "/dev/null", "not a regular file")
    assert not os.path.exists("/dev/null.d")
    assert_refused(run("status", "/dev/null"), 2, "not a regular file")


def test_a_first_send_under_a_file_size_limit_fails_cleanly_and_its_runtime_exits(efile):
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="0.5", **MOCK_ENV)
    proc = cli("send", efile, "y" * 3000, env=env, preexec_fn=limited(resource.RLIMIT_FSIZE, 1024))
    assert_refused(proc, 1, "File too large")
    wait_for(lambda: not runtime_pids(efile), 30, "the runtime that cannot write its file exits")
    with open(efile, "rb") as f:  # at most a droppable log line of the harness's start: no input, no result
        assert [json.loads(line)["type"] for line in f] in ([], ["log"])


# -- 4. bad input that used to crash or hang ---------------------------------------------


def test_a_first_prompt_longer_than_64_kib_keeps_the_file_recognized(efile):
    ok("send", efile, "z" * 70000, "--adapter", "mock", env=cli_env(HARNESSCTL_IDLE_TIMEOUT="0.3"))
    wait_results(efile, 1)
    wait_for(lambda: not runtime_pids(efile), what="idle exit")  # the next commands read the file themselves
    assert status_of(efile)["state"] == "idle"
    ok("send", efile, "again")
    assert wait_results(efile, 2)[-1]["output"] == "echo: again"
    check(efile)


@pytest.mark.parametrize("command", ["send", "status", "cancel"])
def test_a_fifo_as_the_event_file_is_refused_without_blocking(command, workdir):
    path = str(workdir / "fifo.jsonl")
    os.mkfifo(path)
    proc = run(command, path, *(["hi", "--adapter", "mock"] if command == "send" else []), timeout=20)
    assert_refused(proc, 2, path, "not a regular file")
    assert not os.path.exists(path + ".d")


@pytest.mark.parametrize("flag", ["--cwd", "--model"])
def test_a_non_utf8_flag_value_exits_2(flag, efile):
    proc = run(b"send", os.fsencode(efile), b"hi", b"--adapter", b"mock", flag.encode(), b"/tmp/caf\xe9")
    assert_refused(proc, 2, flag, "not valid UTF-8")
    assert not os.path.exists(efile)


@pytest.mark.parametrize("position", ["REQUEST_ID", "ANSWER"])
def test_a_non_utf8_reply_argument_exits_2(position, efile):
    ok("send", efile, "/permission may I?\nhi", "--adapter", "mock")
    wait_for(lambda: of_kind(efile, "request"), what="request")
    args = [b"req-1", b"allow"]
    args[0 if position == "REQUEST_ID" else 1] += b"\xff"
    proc = run(b"reply", os.fsencode(efile), *args)
    assert_refused(proc, 2, position, "not valid UTF-8")
    assert status_of(efile)["state"] == "awaiting_reply"
    ok("cancel", efile)


def test_a_non_utf8_current_directory_exits_2_and_status_keeps_working(workdir):
    odd = os.path.join(os.fsencode(str(workdir)), b"caf\xe9")
    os.mkdir(odd)
    path = str(workdir / "e.jsonl")
    proc = run("send", path, "hi", "--adapter", "mock", cwd=odd)
    assert_refused(proc, 2, "working directory", "not valid UTF-8")
    ok("send", path, "hi", "--adapter", "mock", "--cwd", str(workdir))
    assert status_of(path)["cwd"] == str(workdir)


def test_an_event_path_that_is_not_utf8_is_a_session_like_any_other(workdir):
    path = os.path.join(os.fsencode(str(workdir)), b"caf\xe9.jsonl")
    assert run(b"send", path, b"hi", b"--adapter", b"mock").returncode == 0
    wait_results(os.fsdecode(path), 1)
    proc = run(b"status", path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["state"] == "idle", proc.stderr


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400", "soon"])
def test_a_timeout_that_is_not_a_finite_number_exits_2(value, efile):
    for name in ("HARNESSCTL_TIMEOUT", "HARNESSCTL_IDLE_TIMEOUT"):
        proc = run("send", efile, "hi", "--adapter", "mock", env=cli_env(**{name: value}))
        assert_refused(proc, 2, name)
        assert not os.path.exists(efile)


def test_a_huge_timeout_is_clamped_and_the_idle_runtime_keeps_serving(efile):
    env = cli_env(HARNESSCTL_TIMEOUT="1e308", HARNESSCTL_IDLE_TIMEOUT="1e10", **MOCK_ENV)
    ok("send", efile, "hi", env=env)
    wait_results(efile, 1)
    [pid] = runtime_pids(efile)
    for _ in range(2):  # the loop went idle after the result: it used to crash computing its sleep
        assert status_of(efile, env)["runtime"] == "alive"
    assert runtime_pids(efile) == [pid]
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not runtime_pids(efile), what="runtime stopped")
    check(efile)


@pytest.mark.parametrize("stdout", ["closed", "broken pipe", "full"])
def test_status_into_an_unusable_stdout_exits_2_without_internal_error(stdout, efile):
    ok("send", efile, "hi", "--adapter", "mock")
    wait_results(efile, 1)
    if stdout == "closed":
        proc = run("status", efile, stdout=None, preexec_fn=lambda: os.close(1))
        assert_refused(proc, 2, "cannot write to stdout")
    elif stdout == "full":
        with open("/dev/full", "w") as full:
            proc = run("status", efile, stdout=full)
        assert_refused(proc, 2, "cannot write to stdout", "No space left")
    else:
        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader is gone before the line is written: EPIPE
        proc = run("status", efile, stdout=write_end)
        os.close(write_end)
        assert proc.returncode == 2 and proc.stderr == b"", proc.stderr  # quiet, as a reader that left expects


def stopped_session(efile: str) -> str:
    ok("send", efile, "hi", "--adapter", "mock", env=cli_env(HARNESSCTL_IDLE_TIMEOUT="0.3"))
    wait_results(efile, 1)
    wait_for(lambda: not runtime_pids(efile), what="idle exit")
    return efile + ".d"


@pytest.mark.parametrize("content", ["[]", "{}", '{"adapter": 1, "cwd": "/", "model": null}', "null"])
def test_a_binding_that_is_not_one_exits_2_on_send(content, efile):
    with open(os.path.join(stopped_session(efile), "binding.json"), "w") as f:
        f.write(content)
    before = open(efile, "rb").read()
    assert_refused(run("send", efile, "hi"), 2, "binding.json", "unreadable binding")
    assert open(efile, "rb").read() == before


@pytest.mark.parametrize("name", ["runtime.lock", "runtime.log", "spawn.lock"])
def test_a_sidecar_file_that_is_a_directory_exits_2(name, efile):
    sidecar = stopped_session(efile)
    os.unlink(os.path.join(sidecar, name))
    os.mkdir(os.path.join(sidecar, name))
    before = open(efile, "rb").read()
    assert_refused(run("send", efile, "hi"), 2, name)
    assert open(efile, "rb").read() == before
    assert not runtime_pids(efile)


@pytest.mark.parametrize("damage", ["status line", "conversation", "both"])
def test_a_corrupt_snapshot_body_is_rebuilt_from_the_event_file(damage, efile):
    sidecar = stopped_session(efile)
    expected = status_of(efile)
    path = os.path.join(sidecar, "state.json")
    header, status, conversation = open(path).read().split("\n")[:3]
    if damage in ("status line", "both"):
        status = '{"state":"garbage"}'
    if damage in ("conversation", "both"):
        conversation = '{"open_inputs": 5, "pending": [1], "seq": "x"}'
    with open(path, "w") as f:
        f.write("%s\n%s\n%s\n" % (header, status, conversation))
    assert status_of(efile) == expected
    ok("send", efile, "after")
    assert wait_results(efile, 2)[-1]["output"] == "echo: after"
    check(efile)


def test_a_first_send_on_a_full_disk_says_so_and_leaves_no_empty_session(workdir):
    from torture_support import fill

    with tmpfs(str(workdir / "fs"), "size=256k,mode=0755") as mountpoint:
        filler = fill(mountpoint)
        path = os.path.join(mountpoint, "events.jsonl")
        proc = run("send", path, "hi", "--adapter", "mock")
        assert proc.returncode in (1, 2), proc.stderr
        assert one_clear_line(proc.stderr, "No space left"), proc.stderr
        assert sorted(os.listdir(mountpoint)) == ["filler"]
        import shutil

        shutil.rmtree(filler)
        ok("send", path, "hi", "--adapter", "mock")
        assert wait_results(path, 1)[0]["output"] == "echo: hi"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_an_unreadable_directory_on_the_way_exits_2_not_4(workdir):
    """As user nobody, behind a directory nobody may not search."""
    from torture_support import as_nobody

    os.chmod(str(workdir), 0o755)
    closed = workdir / "closed"
    closed.mkdir(mode=0o700)
    for command in ("status", "cancel"):
        code, err = as_nobody([command, str(closed / "e.jsonl")])
        assert code == 2 and err.count("\n") == 1 and "Permission denied" in err, (code, err)


# -- 5. promises to the caller -----------------------------------------------------------


def test_reply_on_a_full_disk_exits_1_and_does_not_answer_the_harness(efile):
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="30", **MOCK_ENV)
    first = cli("send", efile, "/permission " + "p" * 150 + "\nhold", env=env,
                preexec_fn=limited(resource.RLIMIT_FSIZE, 1024))
    assert first.returncode == 0, first.stderr
    wait_for(lambda: of_kind(efile, "request"), what="request")
    proc = run("reply", efile, "req-1", "allow", env=env)
    assert_refused(proc, 1, "could not record the answer", "not answered")
    assert status_of(efile, env)["state"] == "awaiting_reply"
    assert not of_kind(efile, "message"), "the harness was answered although the reply failed"
    for pid in runtime_pids(efile):
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not runtime_pids(efile), what="runtime stopped")
    status_of(efile, env)
    check(efile)


BROKEN_BACKEND = '''
from adapters.mock.backend import MockBackend


class BrokenBackend(MockBackend):
    """Reports a delivery value the backend contract does not have."""

    def _on_received(self, event):
        self.host.accepted(event["id"], "teleported", None)
'''


@pytest.fixture
def broken_adapter_root(workdir):
    """A copy of the project layout whose adapters/ also holds an adapter that
    breaks the contract (the core is the real one, through a symlink)."""
    root = workdir / "root"
    (root / "adapters" / "broken").mkdir(parents=True)
    os.symlink(os.path.join(ROOT, "harnessctl"), str(root / "harnessctl"))
    os.symlink(os.path.join(ROOT, "adapters", "mock"), str(root / "adapters" / "mock"))
    (root / "adapters" / "__init__.py").write_text("")
    (root / "adapters" / "broken" / "__init__.py").write_text("")
    (root / "adapters" / "broken" / "backend.py").write_text(BROKEN_BACKEND)
    manifest = {"name": "broken", "version": "0", "backend": "adapters.broken.backend:BrokenBackend",
                "capabilities": []}
    (root / "adapters" / "broken" / "manifest.json").write_text(json.dumps(manifest))
    return str(root)


def test_an_adapter_that_breaks_the_contract_fails_the_send_at_once(broken_adapter_root, efile):
    env = cli_env(HARNESSCTL_TIMEOUT="30", PYTHONPATH=broken_adapter_root)
    proc = run("send", efile, "hi", "--adapter", "broken", env=env, cwd=broken_adapter_root, timeout=25)
    assert_refused(proc, 1, "broken adapter", "contract", "teleported")
    assert not of_kind(efile, "accepted")
    wait_for(lambda: [e for e in of_kind(efile, "log") if e.get("kind") == "diagnostic"
                      and "broke the backend contract" in str(e.get("message"))], what="a diagnostic line")
    assert b"broke the backend contract" in open(efile + ".d/runtime.log", "rb").read()
