"""The runtime process's start-up, from exec to serving: `main` is what a
first send's spawn.Starter runs (`-c BOOT`, spawn.py).  It sheds what the
send handed down (descriptors, limits), waits for `go`, takes the locks and
the socket, and tells the send whether it serves the file (`Runtime` in
coordinator.py does the serving)."""

from __future__ import annotations

import os
import signal
import sys
import time

from .. import knobs
from ..errors import HarnessctlError, UnavailableError
from ..store import holder, ipc, locks, private
from ..store.address import Address, open_event_file
from ..store.bindingfile import read_binding
from . import proc
from .coordinator import Runtime
from .runtimelog import RuntimeLog

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the detached runtime: `... runtime EVENT_FILE READY_FD DEADLINE GO_FD`
    (DEADLINE: time.monotonic() by which the spawning send must hear from us).

    It starts only once its spawner says `go` on GO_FD (spawn.Starter: the
    spawner binds the file meanwhile); at end of file it exits untouched.  It
    tells its spawner on READY_FD: `ok`, `busy` (another runtime lives in this
    sidecar), or `CODE MESSAGE`, the exit code and line for the command."""
    argv = sys.argv[1:] if argv is None else argv
    addr, ready_fd, spawner_deadline = Address(argv[0]), int(argv[1]), float(argv[2])
    _close_inherited((0, 1, 2, ready_fd, int(argv[3])))
    _raise_fd_limit()
    if not _told_to_go(int(argv[3])):
        return 0
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())  # a caller's blocked SIGTERM must not make it deaf
    os.chdir("/")  # never pin the caller's directory (the harness gets the bound cwd)
    env = dict(os.environ)
    try:
        private.check_dir(addr.sidecar)  # before writing anything into it
        log = _open_log(addr)
    except HarnessctlError as e:
        return _ready(ready_fd, "%d %s" % (e.exit_code, e))
    log.capture_stderr()
    try:
        runtime = _start(addr, env, log, spawner_deadline)
    except HarnessctlError as e:
        sys.stderr.write("%s\n" % e)
        return _ready(ready_fd, "%d %s" % (e.exit_code, e))
    except Exception as e:
        import traceback

        sys.stderr.write(traceback.format_exc())
        return _ready(ready_fd, "5 the runtime failed to start: %s (see %s)" % (e, addr.runtime_log))
    if runtime is None:
        return _ready(ready_fd, "busy")
    signal.signal(signal.SIGTERM, lambda *_: runtime.loop.post(lambda: runtime.shutdown("SIGTERM")))
    runtime.loop.wake_on_signals()
    _ready(ready_fd, "ok")
    try:
        runtime.serve()
    finally:
        holder.forget(addr)  # before the lock goes with the process
    return 0


def _start(addr: Address, env: Dict[str, str], log: RuntimeLog, spawner_deadline: float) -> Optional[Runtime]:
    """Take the sidecar's lock, become the event file's one writer, listen
    (commands queue in the backlog from now on, even while a long file is
    folded), then recover and start the harness.  None if another runtime
    lives in this sidecar.  Waits for the locks end early enough that the
    spawning send still hears why."""
    timeout = knobs.seconds(env, "HARNESSCTL_TIMEOUT", 30.0)
    deadline = min(time.monotonic() + timeout * 0.8, spawner_deadline - min(0.2, timeout * 0.1))
    if locks.wait_lock(addr.runtime_lock, deadline) is None:
        return None
    holder.write(addr)  # beside the lock: another node that sees it held learns whose it is
    try:
        return _serve_file(addr, env, log, deadline)
    except BaseException:
        holder.forget(addr)
        raise


def _serve_file(addr: Address, env: Dict[str, str], log: RuntimeLog, deadline: float) -> Runtime:
    """The rest of _start, once the sidecar's lock is ours: apart, so that a
    start that fails takes back the record it wrote beside the lock."""
    event_fd = open_event_file(addr, os.O_RDWR | os.O_APPEND)
    if not locks.lock_fd(event_fd, deadline):
        raise UnavailableError("%s is being written by another runtime (was it renamed or hard-linked while in "
                               "use?); send to the name that runtime was started for, or retry once it has exited"
                               % addr.path)
    binding = read_binding(addr)
    if binding is None:
        raise UnavailableError("%s has no binding: send again" % addr.path)
    server = ipc.listen(addr.socket)
    try:
        runtime = Runtime(addr, binding, env, log, event_fd, server)
        runtime.server.start()  # every thread before `ok` (ulimit -u): after it, a failure has no one to tell
        runtime.begin()
    except BaseException:
        server.close()
        os.unlink(addr.socket)
        raise
    return runtime


def _close_inherited(keep: Tuple[int, ...]) -> None:
    """Close every descriptor but ours: posix_spawn hands us each non-CLOEXEC
    descriptor of the send that started us (a cron script's `flock` fd 9, a
    pipe whose reader waits for end of file), and we must not keep those for
    our whole life."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:  # no /proc: nothing to go by
        return
    for name in names:
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:  # the directory listing's own descriptor, gone already
                pass


def _raise_fd_limit() -> None:
    """Every `wait` held open is a descriptor: take all the hard limit allows
    (an agent team may run thousands of waiters; the common soft limit is
    1024).  The harness gets the caller's soft limit back (proc.py)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY or soft >= hard:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (OSError, ValueError):
        return
    proc.CHILD_NOFILE = (soft, hard)


def _told_to_go(fd: int) -> bool:
    """Block until the spawner says `go` (True) or closes the pipe (False)."""
    try:
        word = os.read(fd, 16)
        os.close(fd)
    except OSError:
        return False
    return word == b"go\n"


def _ready(fd: int, word: str) -> int:
    try:
        os.write(fd, (word + "\n").encode("utf-8", "replace"))
        os.close(fd)
    except OSError:
        pass
    return 0 if word == "ok" else 1


def _open_log(addr: Address) -> RuntimeLog:
    """The runtime log: our diagnostics and the harness's stderr, capped
    (runtimelog.py)."""
    try:
        return RuntimeLog(addr.runtime_log)
    except OSError as e:
        raise private.cannot("open the runtime log", addr.runtime_log, e) from None


if __name__ == "__main__":
    sys.exit(main())
