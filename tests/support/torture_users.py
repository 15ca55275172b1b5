"""The torture suite's "other local user" class (issue 9, Hardening): a throw-away
local user plants symlinks, files, directories, pid files and sockets wherever a
session of ours looks, and root's commands must refuse them (exit 2, one line
naming the path) or ignore them, never follow, write, trust or kill through them.

Shared by tests/torture/test_torture_users.py and bench/torture_report.py
(`other_user_report`).  Everything here needs root: the other user is created
with useradd and acted as with setgid/setuid; files in places they could not
reach themselves (our 0700 sidecar) are given to them with chown, which is what
"they created it" looks like to harnessctl.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import traceback
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple

from cliutil import ROOT, alive, cli_env, processes_under, run, runtime_pids, wait_for
from torture_support import Sends, check, of_kind, one_clear_line

sys.path.insert(0, ROOT)

from harnessctl import client
from harnessctl.eventfile import snapshot  # noqa: E402
from harnessctl.eventfile.eventlog import read_events  # noqa: E402
from harnessctl.eventfile.state import LOST, fold  # noqa: E402
from harnessctl.store import trusted  # noqa: E402
from harnessctl.store.address import Address, fallback_socket_dir  # noqa: E402
from harnessctl.store.bindingfile import read_binding  # noqa: E402

USERADD, USERDEL = "/usr/sbin/useradd", "/usr/sbin/userdel"
ENV = cli_env(HARNESSCTL_ADAPTER="mock", HARNESSCTL_IDLE_TIMEOUT="5", HARNESSCTL_TIMEOUT="10")
PROMPT = "a prompt for our eyes only"  # must never reach the other user
# their symlink to a file of ours, their 0666 file, their 0777 directory, their FIFO, our own file left 0666
ATTACKS = ("symlink", "file", "directory", "fifo", "writable")
COMMANDS = ("send", "status", "cancel", "reply")
STOPS = ("idle", "killed")  # how the session's runtime stopped
EXITS = {"send": (0, 2), "status": (0, 2), "cancel": (0, 2), "reply": (2, 3)}  # req-1 is replied or expired: 3
PLANTED = "planted"  # every bait carries it: a command that prints it trusted the bait
LONG = ("d" * 60, "e" * 60)  # directories that push the socket to the fallback dir


# -- the other user ---------------------------------------------------------------


class Unavailable(RuntimeError):
    """This machine cannot host the class: not root, or no useradd/userdel."""


class OtherUser(NamedTuple):
    name: str
    uid: int
    gid: int


def unavailable() -> Optional[str]:
    """Why the class cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root: a throw-away local user is created with useradd and acted as with setuid"
    for tool in (USERADD, USERDEL):
        if not os.access(tool, os.X_OK):
            return "%s is not available: cannot create a throw-away local user" % tool
    return None


def create_user() -> OtherUser:
    reason = unavailable()
    if reason:
        raise Unavailable(reason)
    name = "htctl-" + secrets.token_hex(4)
    proc = subprocess.run([USERADD, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group",
                           name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise Unavailable("useradd %s failed: %s" % (name, proc.stdout.decode(errors="replace").strip()))
    entry = pwd.getpwnam(name)
    return OtherUser(name, entry.pw_uid, entry.pw_gid)


def remove_user(user: OtherUser) -> None:
    proc = subprocess.run([USERDEL, user.name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError("userdel %s failed: %s" % (user.name, proc.stdout.decode(errors="replace").strip()))


@contextlib.contextmanager
def other_user() -> Iterator[OtherUser]:
    """A throw-away local user for the block, removed afterwards whatever happened."""
    user = create_user()
    try:
        yield user
    finally:
        remove_user(user)


def as_user(user: OtherUser, directory: str, fn: Callable[..., Any], *args: Any) -> None:
    """Run fn(*args) in a forked child acting as `user` (their uid and gid, no
    supplementary groups, umask 0) in `directory`.  The child enters the
    directory as root first: a test's directory lies under a 0700 one of ours
    that the other user could not traverse, and the attack is about what they
    can do in this directory, not how they found it."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - reports through the pipe and its exit status
        code = 1
        try:
            become(user, directory, write_end)
            fn(*args)
            code = 0
        except BaseException:
            os.write(write_end, traceback.format_exc().encode("utf-8", "replace"))
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        err = f.read().decode("utf-8", "replace")
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise AssertionError("acting as %s failed: %s" % (user.name, err))


def become(user: OtherUser, directory: str, keep: int) -> None:
    """In a forked child: drop every descriptor of ours but `keep` and the std
    streams, enter `directory` as root, then be `user` (no supplementary groups, umask 0)."""
    os.closerange(3, keep)
    os.closerange(keep + 1, 65536)
    os.chdir(directory)
    os.setgroups([])
    os.setgid(user.gid)
    os.setuid(user.uid)
    os.umask(0)


def give(path: str, user: OtherUser) -> None:
    """Make `path` (a symlink itself, not its target) the other user's."""
    os.lchown(path, user.uid, user.gid)


def shared_dir(parent: str) -> str:
    """A directory like /tmp (1777) where the other user creates things themselves."""
    path = os.path.join(parent, "shared")
    os.mkdir(path)
    os.chmod(path, 0o1777)
    return path


def their_dir(parent: str, user: OtherUser, name: str = "theirs", mode: int = 0o700) -> str:
    path = os.path.join(parent, name)
    os.mkdir(path)
    os.chmod(path, mode)
    give(path, user)
    return path


# -- victims ------------------------------------------------------------------------


def start_time(pid: int) -> str:
    """Field 22 of /proc/PID/stat (the process's start time), read as the pid file records it."""
    with open("/proc/%d/stat" % pid, "rb") as f:
        data = f.read()
    return data[data.rindex(b")") + 2:].split()[22 - 3].decode()


class VictimProcess:
    """A `sleep 600` of ours, in its own process group: planted pid files name it,
    and it must outlive every command."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
        self.started = start_time(self.proc.pid)

    @property
    def line(self) -> bytes:
        """What a harness.pid naming this process holds."""
        return b"%d %s\n" % (self.proc.pid, self.started.encode())

    def intact(self) -> bool:
        try:
            return alive(self.proc.pid) and start_time(self.proc.pid) == self.started
        except OSError:  # gone between the two reads
            return False

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def fingerprint(path: str) -> Optional[Tuple[Any, ...]]:
    """What a path is (inode, mode, owner, content / link target / listing), or None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    body: Any = None
    if stat.S_ISREG(st.st_mode):
        with open(path, "rb") as f:
            body = f.read()
    elif stat.S_ISLNK(st.st_mode):
        body = os.readlink(path)
    elif stat.S_ISDIR(st.st_mode):
        body = tuple(sorted(os.listdir(path)))
    return st.st_ino, st.st_mode, st.st_uid, st.st_gid, body


def tree(top: str, skip: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """Fingerprints of `top` and everything under it but `skip` (never through a symlink)."""
    out = {top: fingerprint(top)}
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in skip]
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if path not in skip:
                out[path] = fingerprint(path)
    return out


def same_object(path: str, fd: int) -> bool:
    """`path` still names the inode `fd` holds."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)


def changed(before: Dict[str, Any], after: Dict[str, Any]) -> List[str]:
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def write_file(path: str, data: bytes, mode: int) -> None:
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


# -- the files a sidecar holds ---------------------------------------------------------


def core_files() -> List[str]:
    """Every sidecar file harnessctl.store.address.Address names (its properties that
    are paths inside the sidecar, the socket included when the path is short)."""
    probe = Address("/probe/events.jsonl")
    names = []
    for attr, value in vars(Address).items():
        if isinstance(value, property) and attr != "sidecar":
            path = getattr(probe, attr)
            if os.path.dirname(path) == probe.sidecar:
                names.append(os.path.basename(path))
    return names


def adapter_files() -> List[str]:
    """Every sidecar file the modules of adapters/*/ name: `os.path.join(self.config.sidecar,
    NAME)`, a resume id `self.load_resume(NAME)` / `self.save_resume(NAME, ...)` or a
    fork's `self.load_fork(NAME)` (FILE.d/fork-NAME), NAME a string literal, a
    module-level constant of the adapter's package or `"fork-" + ` one."""
    names = []
    adapters = os.path.join(ROOT, "adapters")
    for adapter in sorted(os.listdir(adapters)):
        folder = os.path.join(adapters, adapter)
        if not os.path.isfile(os.path.join(folder, "backend.py")):
            continue
        modules = []
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    modules.append(ast.parse(f.read()))
        constants = {target.id: node.value.value for module in modules for node in module.body
                     if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                     and isinstance(node.value.value, str) for target in node.targets if isinstance(target, ast.Name)}
        for module in modules:
            names += _sidecar_joins(module, constants)
    return names


def _sidecar_joins(module: ast.Module, constants: Dict[str, str]) -> List[str]:
    names = []
    for node in ast.walk(module):
        if not isinstance(node, ast.Call):
            continue
        function = ast.unparse(node.func)
        if function == "os.path.join" and len(node.args) == 2 and ast.unparse(node.args[0]) == "self.config.sidecar":
            arg = node.args[1]
        elif function in ("self.load_resume", "self.save_resume", "self.config.sidecar_file",
                          "self.config.harness_file", "self.load_fork") and node.args:
            arg = node.args[0]
        else:
            continue
        prefix = "fork-" if function == "self.load_fork" else ""
        if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add) and isinstance(arg.left, ast.Constant):
            prefix, arg = prefix + str(arg.left.value), arg.right
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            names.append(prefix + arg.value)
        elif isinstance(arg, ast.Name) and arg.id in constants:
            names.append(prefix + constants[arg.id])
        else:
            raise AssertionError("cannot tell which sidecar file %s names" % ast.unparse(arg))
    return names


SIDECAR_FILES = sorted(set(core_files() + adapter_files()))


def hunt_cases() -> List[Tuple[str, str, str, str]]:
    """(sidecar file, attack, command, how the runtime stopped): every combination."""
    return [(name, attack, command, stopped) for name in SIDECAR_FILES for attack in ATTACKS for command in COMMANDS
            for stopped in STOPS]


# Cases where harnessctl breaks an invariant today (see the report of issue 9);
# the tests mark them xfail(strict=True), the report counts them.
def only_the_lost_runtime_rule(before: bytes, after: bytes) -> bool:
    """A refused command left the file as it was, but for what every command
    that finds a runtime gone records first: `failed` results of the lost
    runtime's inputs and its expired requests."""
    if not after.startswith(before):
        return False
    for line in after[len(before):].splitlines():
        event = json.loads(line)
        lost = event.get("type") == "result" and event.get("error") == LOST
        expired = event.get("type") == "request" and event.get("state") == "expired"
        if not (lost or expired or event.get("type") == "log"):
            return False
    return True


def command_argv(command: str, path: str, text: str = PROMPT) -> List[str]:
    return {"send": ["send", path, text], "status": ["status", path], "cancel": ["cancel", path],
            "reply": ["reply", path, "req-1", "allow"]}[command]


# -- sessions ----------------------------------------------------------------------------


def ok(*args: str, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    proc = run(*args, env=env or ENV)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr.decode())
    return proc


def busy(path: str) -> bool:
    return fold(e for e, _ in read_events(path)).is_busy()


def stop_runtimes(path: str, directory: str) -> None:
    """kill -9 the runtime(s) of `path` and wait until they and their harnesses are gone."""
    for pid in runtime_pids(path):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    wait_for(lambda: not runtime_pids(path) and not processes_under(directory), 20, "runtime of %s gone" % path)


def make_template(directory: str, stopped: str) -> str:
    """A session whose runtime is stopped: `idle` (it idled out after a replied
    request and its run's result) or `killed` (kill -9 while a request was
    pending: open work, a stale socket and harness.pid left behind)."""
    os.makedirs(directory)
    path = os.path.join(directory, "events.jsonl")
    if stopped == "idle":
        env = dict(ENV, HARNESSCTL_IDLE_TIMEOUT="0.3")
        ok("send", path, "/permission may I?\nfirst", env=env)
        wait_for(lambda: of_kind(path, "request"), 20, "request")
        ok("reply", path, "req-1", "allow", env=env)
        wait_for(lambda: of_kind(path, "result"), 20, "result")
        wait_for(lambda: not runtime_pids(path) and os.path.exists(Address(path).snapshot), 20, "idle exit")
    else:
        ok("send", path, "first")
        wait_for(lambda: of_kind(path, "result"), 20, "result")
        ok("send", path, "/permission may I?\nsecond")
        wait_for(lambda: of_kind(path, "request"), 20, "request")
        stop_runtimes(path, directory)
        assert os.path.exists(Address(path).harness_pid), "a killed runtime leaves its harness's pid behind"
    return path


def stale_socket(path: str) -> None:
    """A socket file nobody listens on, as a killed runtime leaves it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(path)


def copy_session(template: str, path: str) -> None:
    """The template's event file and sidecar at `path` (sockets as stale ones),
    its binding recorded as this file's, as `rebind --accept` would: a copy of
    a session is a session of ours only once we say so."""
    shutil.copy2(template, path)
    os.mkdir(path + ".d", 0o700)
    for name in os.listdir(template + ".d"):
        src, dst = os.path.join(template + ".d", name), os.path.join(path + ".d", name)
        if stat.S_ISSOCK(os.lstat(src).st_mode):
            if Address(path).socket == dst:  # a path too long for one has its socket in the fallback folder
                stale_socket(dst)
        else:
            shutil.copy2(src, dst)
    with open(os.path.join(path + ".d", "binding.json"), encoding="utf-8") as f:
        trusted.record(os.path.realpath(path), json.load(f))


def refresh_snapshot(path: str) -> None:
    """A status of ours, so that the copy's state.json describes this very file
    (its header names the event file's inode) and `status` takes its fast path."""
    client.status(path)


def forged_snapshot(path: str) -> bytes:
    """A state.json valid for this very event file whose status line says
    `"last_activity":"planted"`: a status that trusts it prints the bait.  Written by
    harnessctl's own snapshot.save (so it follows the cache's format and is sealed
    with our key), then read back."""
    addr = Address(path)
    conv, offset, _ = snapshot.load(addr)
    conv.last_activity = PLANTED
    snapshot.save(addr, conv, offset, read_binding(addr))
    return read(addr.snapshot)


class Templates:
    """Both kinds of stopped session, made once and copied for every case."""

    def __init__(self, directory: str) -> None:
        self.paths = {stopped: make_template(os.path.join(directory, stopped), stopped) for stopped in STOPS}

    def copy(self, stopped: str, path: str) -> None:
        copy_session(self.paths[stopped], path)
        if stopped == "idle":
            refresh_snapshot(path)

    def leftovers(self) -> List[str]:
        """Files a session left in its sidecar that the hunt does not cover."""
        found = set()
        for path in self.paths.values():
            found.update(n for n in os.listdir(path + ".d") if not n.endswith(".tmp"))
        return sorted(found - set(SIDECAR_FILES))


# -- one attack on one sidecar file ------------------------------------------------------


class Outcome(NamedTuple):
    verdict: str  # "refused" (exit 2 naming the path) or "ignored" (the command went on without it)
    code: int
    stderr: str


def bait(name: str, path: str, victim: VictimProcess) -> bytes:
    """What a planted `name` holds: the most dangerous plausible content."""
    if name == os.path.basename(Address(path).harness_pid):
        return victim.line  # trusted, it would make us kill our own process
    if name == os.path.basename(Address(path).snapshot):
        return forged_snapshot(path)
    if name == os.path.basename(Address(path).binding):
        return json.dumps({"adapter": "mock", "cwd": "/", "model": PLANTED}).encode()
    return ('{"%s": "by another user"}\n' % PLANTED).encode()


def plant(target: str, attack: str, victim_file: str, content: bytes, user: OtherUser) -> None:
    """Put the other user's symlink (to our `victim_file`), 0666 file, 0777
    directory or FIFO, or a 0666 file of ours, at `target`, in place of whatever was there."""
    if os.path.isdir(target) and not os.path.islink(target):
        shutil.rmtree(target)
    elif os.path.lexists(target):
        os.unlink(target)
    if attack == "symlink":
        os.symlink(victim_file, target)
    elif attack == "file":
        write_file(target, content, 0o666)
    elif attack == "directory":
        os.mkdir(target)
        os.chmod(target, 0o777)
    elif attack == "fifo":
        os.mkfifo(target)
        os.chmod(target, 0o666)
    else:
        write_file(target, content, 0o666)
        return  # ours, but anyone may have rewritten it
    give(target, user)


class Hunt:
    """The sidecar hunt: templates, a victim process, the other user."""

    def __init__(self, directory: str, user: OtherUser) -> None:
        self.user = user
        self.templates = Templates(directory)
        self.victim = VictimProcess()

    def close(self) -> None:
        self.victim.stop()

    def sidecar_case(self, directory: str, name: str, attack: str, command: str, stopped: str) -> Outcome:
        """Plant `attack` at FILE.d/`name` of a session stopped by `stopped` and run
        `command`; raises AssertionError for every broken invariant."""
        path = os.path.join(directory, "events.jsonl")
        self.templates.copy(stopped, path)
        target = os.path.join(Address(path).sidecar, name)
        content = bait(name, path, self.victim)
        victim_file = os.path.join(directory, "victim-" + name)
        write_file(victim_file, content, 0o644)
        plant(target, attack, victim_file, content, self.user)
        return self.run_case(directory, path, target, victim_file, command, ENV)

    def run_case(self, directory: str, path: str, target: str, victim_file: str, command: str,
                 env: Dict[str, str]) -> Outcome:
        pin = os.open(target, os.O_PATH | os.O_NOFOLLOW)  # holds the planted inode: its number is not reused
        try:
            return self._run_case(directory, path, target, pin, victim_file, command, env)
        finally:
            os.close(pin)

    def _run_case(self, directory: str, path: str, target: str, pin: int, victim_file: str, command: str,
                  env: Dict[str, str]) -> Outcome:
        planted, victim = fingerprint(target), fingerprint(victim_file)
        outside = tree(directory, skip=(path, Address(path).sidecar))
        events_before = read(path)
        text = "%s: %s" % (PROMPT, os.path.basename(target))
        proc = run(*command_argv(command, path, text), env=env)
        err = proc.stderr.decode("utf-8", "replace")
        problems = []
        if proc.returncode not in EXITS[command]:
            problems.append("exit %d, expected one of %s" % (proc.returncode, EXITS[command]))
        if proc.returncode == 2:
            if not one_clear_line(proc.stderr, target):
                problems.append("exit 2 without one clear line naming %s" % target)
            if not only_the_lost_runtime_rule(events_before, read(path)):
                problems.append("a refused command changed the event file beyond the lost-runtime rule")
            wait_for(lambda: not runtime_pids(path), 10, "no runtime after a refusal")
        elif proc.returncode == 0:
            problems += self._accepted(path, command, proc)
        elif not one_clear_line(proc.stderr):
            problems.append("exit %d without one clear line" % proc.returncode)
        stop_runtimes(path, directory)
        if same_object(target, pin) and fingerprint(target) != planted:
            problems.append("the planted %s was written to or changed" % target)
        problems += self._intact(directory, path, victim_file, victim, outside)
        sends = Sends()
        if command == "send":
            sends.add(text, proc.returncode, proc.stderr)
        try:
            sends.verify(check(path, quiescent=proc.returncode in (0, 3)))
        except AssertionError as e:
            problems.append("event file: %s" % e)
        assert not problems, "%s %s with %s planted (%s): %s" % (
            command, path, target, err.strip(), "; ".join(problems))
        return Outcome("refused" if proc.returncode == 2 else "ignored", proc.returncode, err)

    def _accepted(self, path: str, command: str, proc: subprocess.CompletedProcess) -> List[str]:
        """An exit 0: quiet (status: one JSON line), and nothing planted shows."""
        problems = []
        out = proc.stdout.decode("utf-8", "replace")
        if proc.stderr:
            problems.append("exit 0 with stderr %r" % proc.stderr[:200])
        if command == "status" and (out.count("\n") != 1 or not isinstance(json.loads(out), dict)):
            problems.append("status printed %r" % out[:200])
        if command == "send":
            wait_for(lambda: not busy(path), 20, "the sent run ends")
            out = client.status(path)  # the live runtime's own view
        if command in ("status", "send"):  # its `file` is the path as given: the test's own name holds the word
            out = json.dumps({k: v for k, v in json.loads(out).items() if k != "file"})
        if PLANTED in out:
            problems.append("the planted bait was trusted: %s" % out[:300])
        return problems

    def _intact(self, directory: str, path: str, victim_file: str, victim: Any, outside: Dict[str, Any]) -> List[str]:
        problems = []
        if fingerprint(victim_file) != victim:
            problems.append("the victim file %s changed" % victim_file)
        if not self.victim.intact():
            problems.append("our process %d named by a planted pid was killed" % self.victim.proc.pid)
        written = changed(outside, tree(directory, skip=(path, Address(path).sidecar)))
        if written:
            problems.append("written outside the sidecar: %s" % written)
        return problems


# -- sockets the other user serves ----------------------------------------------------------

SENTINEL = b"sentinel of the test"
ANSWER = b'0 {"state":"idle","model":"planted"}'  # what a runtime would answer


def serve(server: socket.socket, report: Any) -> None:
    """The other user's listener loop: answer every connection like a runtime and
    report (as a JSON line) every byte it sent."""
    while True:
        conn, _ = server.accept()
        conn.settimeout(5)
        data = b""
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            conn.sendall(ANSWER)
        except OSError:
            pass
        conn.close()
        report.write(json.dumps({"received": data.hex()}) + "\n")
        report.flush()


class Listener:
    """A unix socket at `directory`/`name` served by a forked process running as
    the other user, answering like a runtime and recording every byte it receives."""

    def __init__(self, user: OtherUser, directory: str, name: str) -> None:
        self.path = os.path.join(directory, name)
        self.records: List[Dict[str, Any]] = []
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child reports through the pipe
            try:
                become(user, directory, write_end)
                report = os.fdopen(write_end, "w")
                server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                server.bind(name)
                server.listen(64)
                report.write(json.dumps({"ready": os.getuid()}) + "\n")
                report.flush()
                serve(server, report)
            finally:
                os._exit(1)
        os.close(write_end)
        self.pipe = os.fdopen(read_end, "r")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        wait_for(lambda: self.records or not self.reader.is_alive(), 20, "the other user's listener")
        if self.records != [{"ready": user.uid}]:
            self.stop()
            raise AssertionError("the other user's listener did not start: %s" % self.records)

    def _read(self) -> None:
        for line in self.pipe:
            self.records.append(json.loads(line))

    def received(self, via: str) -> List[bytes]:
        """What every connection so far sent.  Our own sentinel connection, served
        after them, proves the listener has recorded all of them."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(10)
            conn.connect(via)
            conn.sendall(SENTINEL)
            conn.shutdown(socket.SHUT_WR)
            assert conn.recv(1024) == ANSWER
        wait_for(lambda: {"received": SENTINEL.hex()} in self.records, 10, "the sentinel recorded")
        return [bytes.fromhex(r["received"]) for r in self.records if "received" in r
                and r["received"] != SENTINEL.hex()]

    def stop(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.reader.join(5)
        self.pipe.close()


@contextlib.contextmanager
def their_fallback_dir(user: OtherUser, kind: str) -> Iterator[str]:
    """For the block, our fallback socket folder (HARNESSCTL_SOCKET_DIR) is the other user's: the 0700
    directory they made there (`dir`), or their symlink there to a directory
    of theirs (`symlink`).  Yields the directory their socket goes into.  What
    was there before (our own, maybe with live sockets) is put back at once."""
    fallback = fallback_socket_dir()
    parent, base = os.path.split(fallback)
    saved = None
    if os.path.lexists(fallback):
        saved = "%s.saved-%s" % (fallback, secrets.token_hex(4))
        os.rename(fallback, saved)
    elsewhere = None
    try:
        if kind == "dir":
            as_user(user, parent, os.mkdir, base, 0o700)
            served = fallback
        else:
            elsewhere = tempfile.mkdtemp(prefix="htctl-theirs-", dir=parent)
            give(elsewhere, user)
            as_user(user, parent, os.symlink, elsewhere, base)
            served = elsewhere
        assert os.lstat(fallback).st_uid == user.uid
        yield served
    finally:
        if os.path.lexists(fallback) and os.lstat(fallback).st_uid == user.uid:
            if os.path.islink(fallback):
                os.unlink(fallback)
            else:
                shutil.rmtree(fallback)
        if elsewhere is not None:
            shutil.rmtree(elsewhere)
        if saved is not None:
            os.rename(saved, fallback)


def long_session(templates: Templates, directory: str) -> str:
    """A copy of the idle session at a path so long that its socket falls back to /tmp."""
    deep = os.path.join(directory, *LONG)
    os.makedirs(deep)
    path = os.path.join(deep, "events.jsonl")
    templates.copy("idle", path)
    assert os.path.dirname(Address(path).socket) == fallback_socket_dir(), Address(path).socket
    return path


SOCKET_PLACES = ("sidecar-socket", "sidecar-symlink", "fallback-dir", "fallback-symlink")


@contextlib.contextmanager
def their_listener(place: str, user: OtherUser, templates: Templates, directory: str) -> Iterator[
        Tuple[str, Listener]]:
    """A stopped session of ours whose socket path leads to the other user's
    listener: their socket (or their symlink to it) in our sidecar, or in the
    fallback directory they made (or symlinked) before us.  Yields (event path, listener)."""
    if place.startswith("fallback"):
        path = long_session(templates, directory)
        with their_fallback_dir(user, place.split("-")[1]) as served:
            listener = Listener(user, served, os.path.basename(Address(path).socket))
            try:
                yield path, listener
            finally:
                listener.stop()
        return
    path = os.path.join(directory, "events.jsonl")
    templates.copy("idle", path)
    theirs = their_dir(directory, user)
    listener = Listener(user, theirs, "runtime.sock")
    try:
        if place == "sidecar-socket":
            os.rename(listener.path, Address(path).socket)  # their socket file, now in our sidecar
        else:
            os.symlink(listener.path, Address(path).socket)
            give(Address(path).socket, user)
        yield path, listener
    finally:
        listener.stop()


def listener_case(user: OtherUser, templates: Templates, directory: str, place: str, command: str) -> Outcome:
    """Root's `command` on a session whose socket leads to the other user's
    listener: exit 2 naming the socket and its owner, and not one byte to them."""
    with their_listener(place, user, templates, directory) as (path, listener):
        before = read(path)
        proc = run(*command_argv(command, path), env=ENV)
        received = listener.received(Address(path).socket)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert one_clear_line(proc.stderr, Address(path).socket, user.name), proc.stderr
    assert received, "the command never connected to the listener: the test proves nothing"
    assert not any(received), "the other user received %r" % received
    assert read(path) == before
    assert not runtime_pids(path)
    check(path)
    return Outcome("refused", proc.returncode, proc.stderr.decode())


def other_user_report(directory: str) -> Dict[str, Any]:
    """Run the hunt outside pytest (bench/torture_report.py): every sidecar file x
    attack x command x way the runtime stopped, and every place x command of a
    socket served by the other user, in fresh directories under `directory`.
    Creates and removes its own throw-away user; raises Unavailable when not root.
    A broken invariant raises AssertionError.  Returns: attacks (sidecar cases run), sidecar_files,
    attack_kinds, commands, refused (exit 2 naming the entry), ignored (the command
    went on without trusting it), victims_intact (cases whose victim file and
    process were checked intact), socket_attacks, socket_refused."""
    reason = unavailable()
    if reason:
        raise Unavailable(reason)
    counts = {"attacks": 0, "sidecar_files": len(SIDECAR_FILES), "attack_kinds": len(ATTACKS),
              "commands": len(COMMANDS), "refused": 0, "ignored": 0, "victims_intact": 0,
              "socket_attacks": 0, "socket_refused": 0}
    with other_user() as user:
        hunt = Hunt(os.path.join(directory, "templates"), user)
        try:
            leftovers = hunt.templates.leftovers()
            assert not leftovers, "sidecar files the hunt does not cover: %s" % leftovers
            for number, case in enumerate(hunt_cases()):
                counts["attacks"] += 1
                outcome = _in_case_dir(directory, "case-%03d" % number, hunt.sidecar_case, *case)
                counts[outcome.verdict] += 1
                counts["victims_intact"] += 1  # sidecar_case raises otherwise
            for number, (place, command) in enumerate((p, c) for p in SOCKET_PLACES for c in COMMANDS):
                outcome = _in_case_dir(directory, "socket-%02d" % number, functools.partial(listener_case, user,
                                       hunt.templates), place, command)
                counts["socket_attacks"] += 1
                counts["socket_" + outcome.verdict] += 1
        finally:
            hunt.close()
    return counts


def _in_case_dir(directory: str, name: str, fn: Callable[..., Outcome], *args: str) -> Outcome:
    """fn(a fresh directory, *args); the processes under that directory are killed afterwards."""
    case = os.path.join(directory, name)
    os.mkdir(case)
    try:
        return fn(case, *args)
    finally:
        for pid in processes_under(case):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
