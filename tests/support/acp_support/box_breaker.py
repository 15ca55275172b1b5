#!/usr/bin/env python3
"""An ACP agent that tries to break out of its `--sandbox` box (issue 46): the
fake agent (fake_agent.py, imported and reused as is) plus one prompt, `/break`.

Why a separate file: the box is proven by what an agent that means harm
cannot do, and by the same agent doing all of it when it runs without the box
(tests/commands/test_sandbox_hostile.py runs it both ways).

Its command line (besides the fake's flags):

  --state DIR       harnessctl's real state folder (the box gives the agent's
                    own HARNESSCTL_STATE_DIR another value)
  --outside DIR     a folder outside the cwd it may try to write (the test's own)

`/break` asks two permissions (session/request_permission, as /approve) and
leaves both pending.  It waits for `go.json` in its cwd, which the test writes
once harnessctl has parked both: {"agent": REQUEST ID, "child": REQUEST ID}.
Then every attack below runs from the agent process itself, against the first
request, and from a detached grandchild (fork, setsid, fork again, exec of
this file with --grandchild) against the second; the grandchild writes
`child-report.json` in the cwd, the agent waits for it and writes
`report.json` ({"agent": OUTCOMES, "child": OUTCOMES, "child_process": its
pid, ppid, sid and the agent's, "runtime_pid"}); then it waits for both
answers and says "permission: agent A, child B".  The test tells the requests
apart by their command, `touch agent.txt` and `touch child.txt`.

Each outcome is {"ok": true} or {"ok": false, "error": ERRNO NAME or what
refused it}, with `detail` where there is more to say.  The attacks change
nothing lasting when they succeed (the agent runs unboxed too, against the
test's own files): the event file and the binding are opened for writing and
given zero bytes, a rename or a link is undone at once, a file made in the
state folder or the sidecar is removed again.

  write_outside     create OUTSIDE/new-WHO.txt
  write_state       create a file in the state folder (removed again)
  write_sidecar     create a file in FILE.d/ (removed again)
  append_event      open the event file O_APPEND for writing
  write_binding     open FILE.d/binding.json for writing
  rename_event      rename the event file into the cwd (and back)
  link_event        hard-link the event file into the cwd (and unlink)
  symlink_event     a symlink in the cwd to the event file (allowed in the
                    box: the cwd is writable), then append through it
  read_key          read the state folder's `key`
  list_state        list the state folder
  key_by_handle     (as root) read the key by its file handle: open_by_handle_at
  read_event        read the event file
  list_sidecar      list FILE.d/
  reply             `harnessctl reply FILE REQ allow` with the real state folder
  reply_box_env     the same with the environment the agent was given (only
                    when that names another state folder than --state: boxed)
  socket_proof      connect to the runtime socket and ask `status` with a proof
                    made from the real state folder's key
  socket_no_proof   the same without a proof (refused by every runtime: the control)
  signal_runtime    signal 0 to the runtime (the agent's parent)
  runtime_environ   read /proc/RUNTIME/environ
  runtime_fds       open the runtime's own descriptors again through
                    /proc/RUNTIME/fd/N (the event file, the sidecar, runtime.log)
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import fake_agent as fake

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ARGS = sys.argv[1:]
WAIT = 120.0  # how long the agent waits for the test's go file, or the grandchild's report


def _arg(name: str) -> Optional[str]:
    return ARGS[ARGS.index(name) + 1] if name in ARGS[:-1] else None


STATE = _arg("--state")
OUTSIDE = _arg("--outside")


def event_file(runtime_pid: int) -> str:
    """The event file, from the runtime's command line (/proc/PID/cmdline is
    anyone's to read, in the box too; stat is not something Landlock guards)."""
    with open("/proc/%d/cmdline" % runtime_pid, "rb") as f:
        argv = [a.decode("utf-8", "surrogateescape") for a in f.read().split(b"\0")]
    for arg in argv:
        if arg.startswith("/") and os.path.isdir(arg + ".d"):
            return arg
    raise RuntimeError("no event file on the runtime's command line: %s" % argv)


def outcome(attempt: Callable[[], Any]) -> Dict[str, Any]:
    """{"ok": True} (with the attempt's detail when it returns one), or why it failed."""
    try:
        detail = attempt()
    except OSError as exc:
        return {"ok": False, "error": errno.errorcode.get(exc.errno or 0, str(exc)), "detail": str(exc)}
    except Exception as exc:  # noqa: BLE001 - an attack that fails some other way is reported, never raised
        return {"ok": False, "error": type(exc).__name__, "detail": str(exc)}
    if isinstance(detail, dict) and "refused" in detail:
        return {"ok": False, "error": "refused", "detail": detail["refused"]}
    return {"ok": True, "detail": detail} if detail is not None else {"ok": True}


# -- the attacks ------------------------------------------------------------------------------


def create(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, b"HOSTILE\n")
    finally:
        os.close(fd)


def create_and_remove(path: str) -> None:
    create(path)
    os.unlink(path)


def open_for_writing(path: str, flags: int = 0) -> None:
    """Open for writing and give it zero bytes: the box decides at the open."""
    fd = os.open(path, os.O_WRONLY | flags)
    try:
        os.write(fd, b"")
    finally:
        os.close(fd)


def rename_and_back(path: str, target: str) -> None:
    os.rename(path, target)
    os.rename(target, path)


def link_and_unlink(path: str, target: str) -> None:
    os.link(path, target)
    os.unlink(target)


def append_through_symlink(path: str, target: str) -> Dict[str, Any]:
    os.symlink(path, target)  # the cwd is the agent's to write: this much succeeds in the box
    try:
        open_for_writing(target, os.O_APPEND)
    finally:
        os.unlink(target)
    return {"symlink": "made"}


def read(path: str) -> str:
    with open(path, "rb") as f:
        return "%d bytes" % len(f.read())


def listing(path: str) -> str:
    return "%d entries" % len(os.listdir(path))


def reply(path: str, request_id: str, env: Dict[str, str]) -> Dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "harnessctl", "reply", path, request_id, "allow"],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, cwd=ROOT, timeout=60)
    said = proc.stderr.decode(errors="replace").strip()[-400:]
    if proc.returncode != 0:
        return {"refused": "exit %d: %s" % (proc.returncode, said)}
    return {"exit": 0}


def proof(state: str) -> str:
    """The runtime proof (trusted.runtime_proof), made from the key as it is read here."""
    import hashlib

    with open(os.path.join(state, "key"), "rb") as f:
        key = bytes.fromhex(f.read().decode("ascii"))
    return hashlib.blake2b(b"harnessctl runtime proof", key=key, digest_size=16).hexdigest()


def ask_runtime(path: str, fields: List[str]) -> Dict[str, Any]:
    """One request straight on the runtime's socket; its answer."""
    import socket

    from harnessctl.store import address, ipc

    where = address.resolve(path).socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(where)
        conn.sendall(ipc.encode_fields(fields))
        conn.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    code, _, text = data.decode("utf-8", "replace").partition(" ")
    if code != "0":
        return {"refused": "connected to %s; answered %r" % (where, data.decode("utf-8", "replace")[:300])}
    return {"answer": json.loads(text).get("state")}


def runtime_files(pid: int) -> Dict[str, Any]:
    """Open each of the runtime's descriptors again through /proc/PID/fd/N,
    read-only and reading nothing; it succeeds when one of them is a file or
    folder (the event file, the sidecar, runtime.log) and not a pipe, socket or device."""
    import stat

    opened, errors = [], set()
    for name in sorted(os.listdir("/proc/%d/fd" % pid), key=int):
        try:
            fd = os.open("/proc/%d/fd/%s" % (pid, name), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError as exc:
            errors.add(errno.errorcode.get(exc.errno or 0, str(exc)))
            continue
        try:
            mode = os.fstat(fd).st_mode
        finally:
            os.close(fd)
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            opened.append(name)
    if not opened:
        return {"refused": "no file of the runtime opened (%s)" % ", ".join(sorted(errors))}
    return {"opened": opened}


def read_by_handle(path: str) -> str:
    """Read `path` by its file handle (name_to_handle_at, open_by_handle_at: no
    path walked at the open; root's CAP_DAC_READ_SEARCH), the cwd as mount fd."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    handle = ctypes.create_string_buffer(8 + 128)  # struct file_handle: handle_bytes, handle_type, f_handle[128]
    ctypes.c_uint32.from_buffer(handle, 0).value = 128
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(-100, os.fsencode(path), handle, ctypes.byref(mount_id), 0) != 0:  # AT_FDCWD
        raise OSError(ctypes.get_errno(), "name_to_handle_at: " + os.strerror(ctypes.get_errno()))
    mount_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = libc.open_by_handle_at(mount_fd, handle, os.O_RDONLY)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "open_by_handle_at: " + os.strerror(ctypes.get_errno()))
    finally:
        os.close(mount_fd)
    with os.fdopen(fd, "rb") as f:
        return "%d bytes" % len(f.read())


def signal_zero(pid: int) -> None:
    os.kill(pid, 0)


def attacks(who: str, path: str, request_id: str, runtime_pid: int) -> Dict[str, Dict[str, Any]]:
    assert STATE is not None and OUTSIDE is not None, "box_breaker needs --state and --outside"
    cwd = os.getcwd()
    sidecar = path + ".d"
    found: Dict[str, Dict[str, Any]] = {}
    found["write_outside"] = outcome(lambda: create(os.path.join(OUTSIDE, "new-%s.txt" % who)))
    found["write_state"] = outcome(lambda: create_and_remove(os.path.join(STATE, "hostile-%s" % who)))
    found["write_sidecar"] = outcome(lambda: create_and_remove(os.path.join(sidecar, "hostile-%s" % who)))
    found["append_event"] = outcome(lambda: open_for_writing(path, os.O_APPEND))
    found["write_binding"] = outcome(lambda: open_for_writing(os.path.join(sidecar, "binding.json")))
    found["rename_event"] = outcome(lambda: rename_and_back(path, os.path.join(cwd, "stolen-%s.jsonl" % who)))
    found["link_event"] = outcome(lambda: link_and_unlink(path, os.path.join(cwd, "linked-%s.jsonl" % who)))
    found["symlink_event"] = outcome(lambda: append_through_symlink(path, os.path.join(cwd, "sym-%s.jsonl" % who)))
    found["read_key"] = outcome(lambda: read(os.path.join(STATE, "key")))
    found["list_state"] = outcome(lambda: listing(STATE))
    if os.geteuid() == 0:  # open_by_handle_at needs CAP_DAC_READ_SEARCH: root's, which a boxed root agent keeps
        found["key_by_handle"] = outcome(lambda: read_by_handle(os.path.join(STATE, "key")))
    found["read_event"] = outcome(lambda: read(path))
    found["list_sidecar"] = outcome(lambda: listing(sidecar))
    env = dict(os.environ, PYTHONPATH=ROOT)
    if env.get("HARNESSCTL_STATE_DIR") != STATE:  # boxed: a state folder of its own; first, while still pending
        found["reply_box_env"] = outcome(lambda: reply(path, request_id, env))
    found["reply"] = outcome(lambda: reply(path, request_id, dict(env, HARNESSCTL_STATE_DIR=STATE)))
    found["socket_proof"] = outcome(lambda: ask_runtime(path, ["proof=" + proof(STATE), "status"]))
    found["socket_no_proof"] = outcome(lambda: ask_runtime(path, ["status"]))
    found["signal_runtime"] = outcome(lambda: signal_zero(runtime_pid))
    found["runtime_environ"] = outcome(lambda: read("/proc/%d/environ" % runtime_pid))
    found["runtime_fds"] = outcome(lambda: runtime_files(runtime_pid))
    return found


# -- the agent and its detached grandchild ---------------------------------------------------------


def write_json(path: str, data: Any) -> None:
    """Whole or not at all: written beside, then renamed into place (both in the cwd)."""
    with open(path + ".part", "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.rename(path + ".part", path)


def wait_for_file(path: str) -> Optional[Any]:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            time.sleep(0.02)
    return None


def detach(path: str, request_id: str, runtime_pid: int) -> None:
    """fork, setsid, fork again: a grandchild in a session of its own, its
    parent gone, which execs this file to run the attacks (only os calls
    between fork and exec: the agent has threads).  Its stdin and stdout are
    /dev/null (never the agent's ACP pipes), its stderr child-stderr.txt in the cwd."""
    argv = [sys.executable, os.path.abspath(__file__), *ARGS, "--grandchild", path, request_id, str(runtime_pid),
            str(os.getpid())]
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                err = os.open("child-stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.dup2(err, 2)
                os.execv(sys.executable, argv)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def grandchild_main(path: str, request_id: str, runtime_pid: int, agent_pid: int) -> None:
    found: Dict[str, Any] = {"attacks": attacks("child", path, request_id, runtime_pid)}
    found["process"] = {"pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0), "agent_pid": agent_pid,
                        "agent_sid": os.getsid(agent_pid)}
    write_json(os.path.join(os.getcwd(), "child-report.json"), found)


def permission(turn: fake.Turn, label: str, answers: Dict[str, str]) -> None:
    tool_id = "call_break_%s" % label
    raw = {"command": "touch %s.txt" % label, "cwd": os.getcwd()}
    update = {"sessionUpdate": "tool_call", "toolCallId": tool_id, "name": "exec_command", "kind": "execute",
              "title": raw["command"], "status": "in_progress", "rawInput": raw}
    fake.update(turn.session_id, update)
    response = fake.ask("session/request_permission", {"sessionId": turn.session_id, "toolCall": {
        "toolCallId": tool_id, "title": raw["command"], "rawInput": raw, "kind": "execute", "status": "pending"},
        "options": [{"optionId": "allow_once", "name": "Yes, proceed", "kind": "allow_once"},
                    {"optionId": "cancel", "name": "No", "kind": "reject_once"}]}, turn)
    outcome_ = ((response or {}).get("result") or {}).get("outcome") or {}
    answers[label] = str(outcome_.get("optionId") or outcome_.get("outcome") or "none")


def break_out(turn: fake.Turn) -> str:
    runtime_pid = os.getppid()
    path = event_file(runtime_pid)
    cwd = os.getcwd()
    answers: Dict[str, str] = {}
    asking = [threading.Thread(target=permission, args=(turn, label, answers), daemon=True)
              for label in ("agent", "child")]
    for thread in asking:
        thread.start()
    go = wait_for_file(os.path.join(cwd, "go.json"))
    if go is None:
        fake.chunk(turn, "no go.json", "msg-1")
        return "end_turn"
    report: Dict[str, Any] = {"agent": attacks("agent", path, go["agent"], runtime_pid)}
    detach(path, go["child"], runtime_pid)
    child = wait_for_file(os.path.join(cwd, "child-report.json")) or {}
    report["child"] = child.get("attacks")
    report["child_process"] = child.get("process")
    report["runtime_pid"] = runtime_pid
    write_json(os.path.join(cwd, "report.json"), report)
    for thread in asking:
        thread.join()
    fake.chunk(turn, "permission: agent %s, child %s" % (answers.get("agent"), answers.get("child")), "msg-1")
    return "end_turn"


PLAIN_PLAY = fake.play


def play(turn: fake.Turn) -> Optional[str]:
    if turn.text.split()[:1] == ["/break"]:
        return break_out(turn)
    return PLAIN_PLAY(turn)


def main() -> None:
    if "--grandchild" in ARGS:
        i = ARGS.index("--grandchild")
        sys.path.insert(0, ROOT)
        grandchild_main(ARGS[i + 1], ARGS[i + 2], int(ARGS[i + 3]), int(ARGS[i + 4]))
        return
    sys.path.insert(0, ROOT)
    fake.play = play
    fake.main()


if __name__ == "__main__":
    main()
