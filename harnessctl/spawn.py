"""Starting a file's runtime: the first send binds the file and spawns the
detached runtime, exactly one however many sends race (the spawn lock), and
takes back what it made when the runtime cannot be set up."""

from __future__ import annotations

import errno
import os
import sys
import time

from .binding import changed, check_binding
from .errors import HarnessctlError, OutcomeUnknownError, UnavailableError, from_code
from .store import ipc
from .store.address import Address, make_sidecar
from .store.bindingfile import never_sent, read_binding, require_unused, write_binding

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from harnessctl.runtime.main import main; sys.exit(main())"


def starting_or_exiting(addr: Address, deadline: float) -> bool:
    """True (after a short pause) while a runtime holds this sidecar's lock but
    does not listen: it is starting (it listens in a moment) or exiting (it
    lets go in a moment).  Then the command asks again instead of spawning."""
    from .store import locks, private

    if not os.path.isdir(addr.sidecar):
        return False
    private.check_dir(addr.sidecar)
    if not locks.is_held(addr.runtime_lock):
        return False
    from .store.holder import refuse_if_elsewhere

    refuse_if_elsewhere(addr)  # not starting nor exiting: alive on another machine
    if time.monotonic() >= deadline:
        raise UnavailableError("timed out waiting for the runtime of %s to start or exit (nothing was sent); see %s"
                               % (addr.path, addr.runtime_log))
    time.sleep(0.01)
    return True


class Starter:
    """A runtime interpreter started as soon as a send finds nobody listening,
    before the send binds the file: its interpreter starts and loads its
    modules (most of its start-up) while the send binds, then reads a pipe.  `go` on it: serve the file.  End
    of file (the send needed no new runtime, failed, or died): it exits having
    touched nothing.  A context manager: a runtime never told to go is killed
    and reaped on the way out.

    posix_spawn with setsid gives it its own session and no controlling
    terminal, with /dev/null for its std streams, so a shell or cron job that
    exits does not take it along.  (subprocess would cost every first send an import.)"""

    def __init__(self, addr: Address, deadline: float) -> None:
        self.addr, self.deadline = addr, deadline
        self.pid: Optional[int] = None
        self.error = ""  # why posix_spawn failed
        go_read, self.go_fd = os.pipe()
        self.ready_fd, ready_write = os.pipe()
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            os.set_inheritable(go_read, True)
            os.set_inheritable(ready_write, True)
            self.pid = os.posix_spawn(
                sys.executable,
                [sys.executable, "-I", "-S", "-c", BOOT, ROOT, addr.path, str(ready_write), repr(deadline),
                 str(go_read)],
                os.environ,
                file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                              (os.POSIX_SPAWN_DUP2, devnull, 2), (os.POSIX_SPAWN_CLOSE, devnull)],
                setsid=True,
            )
        except OSError as e:
            self.error = e.strerror or str(e)  # said by serve(): the send may not need a runtime at all
        finally:
            for fd in (go_read, ready_write, devnull):
                os.close(fd)

    def __enter__(self) -> "Starter":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        """Kill a runtime that was not told to go (it is still loading its
        modules or waiting on the pipe), and close the pipes."""
        if self.go_fd >= 0 and self.pid is not None:
            import signal

            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        for fd in (self.go_fd, self.ready_fd):
            if fd >= 0:
                os.close(fd)
        self.go_fd = self.ready_fd = -1

    def serve(self) -> Optional[HarnessctlError]:
        """Tell the runtime to go and wait for its "ok" on a pipe (no polling);
        the error it refused to start with, if it did."""
        if self.pid is None:
            raise UnavailableError("cannot start the runtime (%s): %s" % (sys.executable, self.error))
        try:
            os.write(self.go_fd, b"go\n")
        except OSError:
            pass  # it is gone already: its ready pipe says so
        os.close(self.go_fd)
        self.go_fd = -1
        word = _read_ready(self.ready_fd, self.deadline)
        if word == "ok":
            return None
        if word is not None:  # it said why it will not serve, and is exiting: gone before we report
            _reap(self.pid, self.deadline)
        if word == "busy":
            return None  # another runtime holds the lock: the next exchange finds it
        if word is None:
            raise UnavailableError("timed out waiting for the runtime to start (nothing was sent); see %s"
                                   % self.addr.runtime_log)
        code, _, message = word.partition(" ")
        if code.isdigit() and message:
            return from_code(int(code), message)
        raise UnavailableError("the runtime failed to start: %s (see %s)" % (word or "it exited",
                                                                             self.addr.runtime_log))


def ensure_runtime(addr: Address, binding: Dict[str, Any], deadline: float, starter: Starter) -> None:
    """Start the runtime (tell `starter` to go) unless someone else did
    meanwhile.  Serialized by the spawn lock so that concurrent first sends
    start exactly one runtime.  What a first send created is taken back when it
    cannot be set up (disk full), still under the spawn lock, so no other first
    send is setting up then."""
    from . import knobs
    from .store import locks, private

    for knob in ("HARNESSCTL_IDLE_TIMEOUT", "HARNESSCTL_CANCEL_GRACE", "HARNESSCTL_HOOK_TIMEOUT"):
        knobs.seconds(os.environ, knob, 60.0)  # refused here, not by the runtime it would start
    created = make_sidecar(addr)
    spawn = None
    try:
        try:
            spawn = locks.wait_lock(addr.spawn_lock, deadline)
            if spawn is None:
                raise OutcomeUnknownError("timed out waiting for another command to start the runtime")
            needed = _prepare_spawn(addr, binding)
        except OSError as e:
            _take_back(addr, *created)
            raise private.cannot("set up the session for", addr.path, e) from None
        except BaseException:
            _take_back(addr, *created)
            raise
        refusal = starter.serve() if needed else None
        if refusal is not None:  # the runtime said why (also in its log, kept in the sidecar) and exited
            _take_back(addr, False, created[1])
            raise refusal
    finally:
        locks.unlock(spawn)


def _prepare_spawn(addr: Address, binding: Dict[str, Any]) -> bool:
    """Bind the file if it is new; True if a runtime must be spawned (none
    listens, none is starting or exiting)."""
    from .store import locks

    if _listening(addr):
        return False
    current = read_binding(addr)
    if current is None:
        require_unused(addr)
    if current is None or never_sent(addr):  # its first send failed: it may be bound anew
        if not locks.is_held(addr.runtime_lock):
            clear_foreign(addr)
        write_binding(addr, binding)  # the client built it whole
    else:
        check_binding(current, binding)
        raised = changed(current, binding)
        if raised:  # a new limit replaces the bound one
            write_binding(addr, dict(current, **raised))
    return not locks.is_held(addr.runtime_lock)  # held: a runtime is starting or exiting; ask it again


# What harnessctl keeps in a sidecar when it binds a file that has no event yet.
OWN_FILES = ("binding.json", "spawn.lock", "runtime.lock", "runtime.log", "runtime.host")


def clear_foreign(addr: Address) -> None:
    """Remove from the sidecar of a file that has no event yet what its
    binding will not have written: an adapter's resume ids, a cache, a pid
    planted there before (or left by a first send that failed) would
    otherwise be used by its first run.  Never through a symlink: the sidecar
    is opened O_NOFOLLOW and checked to be ours, names are removed relative to
    it; anything but a file or a symlink in it is refused, not removed."""
    from .errors import UsageError
    from .store import private

    try:
        fd = os.open(addr.sidecar, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:  # a symlink (ELOOP, or ENOTDIR with O_DIRECTORY) of ours: make_sidecar checked it
        if e.errno not in (errno.ELOOP, errno.ENOTDIR) or not os.path.islink(addr.sidecar):
            raise
        if set(os.listdir(addr.sidecar)) - set(OWN_FILES):
            raise UsageError("refusing to bind %s: its sidecar %s is a symlink to a folder holding files "
                             "harnessctl did not write; remove them" % (addr.path, addr.sidecar)) from None
        return
    try:
        private.check(addr.sidecar, os.fstat(fd), "directory")
        for name in os.listdir(fd):
            if name in OWN_FILES:
                continue
            st = os.lstat(name, dir_fd=fd)
            if st.st_mode & private.S_IFMT == private.S_IFDIR:
                raise UsageError("refusing to bind %s: its sidecar holds a directory %s that harnessctl did not "
                                 "write; remove it" % (addr.path, name))
            os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


# What a first send itself puts into a new sidecar before a runtime starts.
FIRST_SEND_FILES = ("binding.json", "spawn.lock", "runtime.lock")


def _take_back(addr: Address, made_sidecar: bool, made_file: Optional[Tuple[int, int]]) -> None:
    """Remove what a failed first send made: the event file it created, if it
    is still that file and empty, and the sidecar it created, if it holds
    nothing but what the send put there."""
    try:
        st = os.stat(addr.path)
        if made_file == (st.st_dev, st.st_ino) and st.st_size == 0:
            os.unlink(addr.path)
        if made_sidecar:
            for name in os.listdir(addr.sidecar):
                if name in FIRST_SEND_FILES or name.endswith(".tmp"):
                    os.unlink(os.path.join(addr.sidecar, name))
            os.rmdir(addr.sidecar)  # fails, as it should, if anything else is there
    except OSError:
        pass


def _listening(addr: Address) -> bool:
    try:
        ipc.connect(addr.socket, 1.0).close()
    except OSError:
        return False
    return True


def _reap(pid: int, deadline: float) -> None:
    """Wait (until `deadline`) for a runtime that refused to exit, so that no
    process of a refused send outlives the command."""
    while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.001)


def _read_ready(fd: int, deadline: float) -> Optional[str]:
    import select

    data = b""
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace").strip()
