"""What each command does: find (or start) the runtime, ask it, and recover a
lost one.  Imports stay light: this module is on every command's path, and
a command that finds its runtime alive needs no more than a socket (locks,
json and the fold are imported only on the paths that use them)."""

from __future__ import annotations

import os
import sys
import time

from . import ipc
from .address import (Address, check_binding, check_event_file, make_sidecar, open_event_file, read_binding,
                      require_exists, resolve, write_binding)
from .errors import HarnessctlError, OutcomeUnknownError, StateError, UnavailableError, UsageError, from_code

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from harnessctl.runtime import main; sys.exit(main())"


class NoRuntime(Exception):
    """Nobody is listening on the session's socket."""


def timeout_seconds() -> float:
    if "HARNESSCTL_TIMEOUT" not in os.environ:
        return 30.0  # the default, without importing the parser: every command pays for its imports
    from . import knobs

    return knobs.seconds(os.environ, "HARNESSCTL_TIMEOUT", 30.0)


# -- the commands -----------------------------------------------------------
#
# Each command first asks a live runtime, which knows everything (binding,
# state) without reading a file.  Only when there is none does the command
# read the event file and the binding: that path imports json and the fold.


def send(file: str, text: str, cwd: Optional[str], model: Optional[str], adapter: Optional[str]) -> str:
    """The accepted input's id."""
    addr = resolve(file)
    wanted = {"adapter": adapter, "cwd": _real_dir(cwd) if cwd is not None else None, "model": model}
    fields = ["send", text, wanted["cwd"] or "", model or "", adapter or ""]
    deadline = time.monotonic() + timeout_seconds()
    while True:
        try:
            return _exchange(addr, fields, deadline, retry_on_eof=False)
        except NoRuntime:
            pass
        if _starting_or_exiting(addr, deadline):
            continue
        check_event_file(addr)
        bound = read_binding(addr)
        if bound is not None:
            check_binding(bound, wanted)
            binding = wanted
        else:
            binding = _new_binding(wanted)
        _ensure_runtime(addr, binding, deadline)


def status(file: str) -> str:
    """The status line (JSON, without the newline)."""
    addr = resolve(file)
    require_exists(addr)
    deadline = time.monotonic() + timeout_seconds()
    while True:
        try:
            return _exchange(addr, ["status"], deadline, retry_on_eof=True)
        except NoRuntime:
            pass
        report = _while_stopped(addr, deadline, _stopped_status, elsewhere=_status_written_elsewhere)
        if report is not None:
            return report


def cancel(file: str) -> None:
    addr = resolve(file)
    require_exists(addr)
    deadline = time.monotonic() + timeout_seconds()
    while True:
        try:
            _exchange(addr, ["cancel"], deadline, retry_on_eof=True)
            return
        except NoRuntime:
            pass
        if _while_stopped(addr, deadline, lambda addr, fd: _recovered(addr, fd) is not None):
            return  # recovery ended whatever was open: nothing is running


def reply(file: str, request_id: str, answer: str) -> None:
    addr = resolve(file)
    require_exists(addr)
    deadline = time.monotonic() + timeout_seconds()
    while True:
        try:
            _exchange(addr, ["reply", request_id, answer], deadline, retry_on_eof=False)
            return
        except NoRuntime:
            pass
        state = _while_stopped(addr, deadline,
                               lambda addr, fd: _recovered(addr, fd).closed_requests.get(request_id, "unknown"))
        if state is not None:
            if state == "unknown":
                raise StateError("unknown request id %s" % request_id)
            raise StateError("%s is already %s" % (request_id, state))


def wait(file: str, input_id: Optional[str], timeout: Optional[float]) -> Tuple[str, str]:
    """(what happened, the line to print): the outcome of `input_id` (its
    result's status and line, or `request` and the pending request line of its
    run), or without an id `status` and the status line once the conversation
    is neither running nor cancelling; `timeout` and no line if `timeout`
    seconds passed first.

    A live runtime answers when the line is written; without one the
    lost-runtime rule settles everything open, and the answer is in the file."""
    addr = resolve(file)
    require_exists(addr)
    until = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            kind, line = _watch(addr, input_id, until)
        except NoRuntime:
            deadline = time.monotonic() + timeout_seconds()
            if input_id is None:
                line = _while_stopped(addr, deadline, _stopped_status)
                if line is not None:
                    return "status", line
                continue
            if _while_stopped(addr, deadline, _recovered) is None:
                continue
            kind = "done"
        if kind != "done":
            return kind, line
        found = _result_in_file(addr, input_id or "")
        if found is not None:
            return found
        time.sleep(0.01)  # accepted, but its result is not in the file after all: ask again


def _watch(addr: Address, input_id: Optional[str], until: Optional[float]) -> Tuple[str, str]:
    """Ask the runtime to answer once there is something to say; NoRuntime if
    there is none or it went away meanwhile (the caller then recovers or asks again)."""
    try:
        conn = ipc.connect(addr.socket, timeout_seconds())
    except PermissionError as e:
        raise UsageError(str(e)) from None
    except OSError:
        raise NoRuntime() from None
    try:
        ipc.send_all(conn, ipc.encode_fields(["wait", input_id or ""]))
        conn.settimeout(None if until is None else max(0.001, until - time.monotonic()))
        data = ipc.read_all(conn)
    except ipc.Timeout:
        return "timeout", ""
    except OSError:
        raise NoRuntime() from None
    finally:
        conn.close()
    response = ipc.decode_response(data) if data else None
    if response is None:
        raise NoRuntime()
    code, text = response
    if code:
        raise from_code(code, text)
    kind, _, line = text.partition(" ")
    return kind, line


def _result_in_file(addr: Address, input_id: str) -> Optional[Tuple[str, str]]:
    """The outcome of an input whose result is in the file already; None if
    the file accepted it but holds no result for it yet."""
    import json

    from .eventlog import find_result

    with os.fdopen(open_event_file(addr, os.O_RDONLY), "rb") as f:
        line, accepted = find_result(f, input_id)
    if not accepted:
        raise StateError("unknown input id %s: %s never accepted it" % (input_id, addr.path))
    if line is None:
        return None
    return json.loads(line)["status"], line.decode("utf-8")


# -- binding -----------------------------------------------------------------


def _new_binding(wanted: Dict[str, Any]) -> Dict[str, Any]:
    from . import registry

    adapter = wanted["adapter"] or os.environ.get("HARNESSCTL_ADAPTER")
    if not adapter:
        raise UsageError("no adapter for this new event file: pass --adapter NAME or set HARNESSCTL_ADAPTER")
    registry.manifest(adapter)
    return {"adapter": adapter, "cwd": wanted["cwd"] or _real_dir("."), "model": wanted["model"]}


def _real_dir(path: str) -> str:
    try:
        real = os.path.realpath(path)
    except OSError as e:  # the current directory was removed
        raise UsageError("cannot resolve the working directory %s: %s" % (path, e.strerror)) from None
    if not os.path.isdir(real):
        raise UsageError("cwd is not a directory: %s" % real)
    try:
        real.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("the working directory %r is not valid UTF-8: pass --cwd with a UTF-8 path" % real) from None
    return real


# -- talking to the runtime -------------------------------------------------


def _exchange(addr: Address, fields: List[str], deadline: float, retry_on_eof: bool) -> str:
    """One request, one response: the response text, or the error it carries
    raised.  NoRuntime if nobody listens (or the runtime is exiting)."""
    request = ipc.encode_fields(fields)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise OutcomeUnknownError("timed out waiting for the runtime of %s" % addr.path)
        try:
            conn = ipc.connect(addr.socket, remaining)
        except PermissionError as e:
            raise UsageError(str(e)) from None
        except OSError:
            raise NoRuntime() from None
        try:
            ipc.send_all(conn, request)
            conn.settimeout(max(0.001, deadline - time.monotonic()))
            data = ipc.read_all(conn)
        except ipc.Timeout:
            raise OutcomeUnknownError(
                "timed out after %g s waiting for the runtime; the input may have been accepted: "
                "read %s before retrying" % (timeout_seconds(), addr.path)) from None
        except (ConnectionResetError, BrokenPipeError):
            # Closed before it read our whole request (an exiting runtime does not
            # accept what is still queued): nothing was applied, a new runtime may take it.
            raise NoRuntime() from None
        except OSError:
            data = b""
        finally:
            conn.close()
        if not data:
            if retry_on_eof:
                continue
            raise OutcomeUnknownError("the runtime went away before answering; the request may have been "
                                      "applied: read %s before retrying" % addr.path)
        response = ipc.decode_response(data)
        if response is None:
            raise NoRuntime()
        code, text = response
        if code:
            raise from_code(code, text)
        return text


def _starting_or_exiting(addr: Address, deadline: float) -> bool:
    """True (after a short pause) while a runtime holds this sidecar's lock but
    does not listen: it is starting (it listens in a moment) or exiting (it
    lets go in a moment).  Then the command asks again instead of spawning."""
    from . import locks, private

    if not os.path.isdir(addr.sidecar):
        return False
    private.check_dir(addr.sidecar)
    if not locks.is_held(addr.runtime_lock):
        return False
    if time.monotonic() >= deadline:
        raise UnavailableError("timed out waiting for the runtime of %s to start or exit (nothing was sent); see %s"
                               % (addr.path, addr.runtime_log))
    time.sleep(0.01)
    return True


def _ensure_runtime(addr: Address, binding: Dict[str, Any], deadline: float) -> None:
    """Start the runtime unless someone else did meanwhile.  Serialized by the
    spawn lock so that concurrent first sends start exactly one runtime.  What
    a first send created is taken back when it cannot be set up (disk full),
    still under the spawn lock, so no other first send is setting up then."""
    from . import knobs, locks, private

    knobs.seconds(os.environ, "HARNESSCTL_IDLE_TIMEOUT", 60.0)  # refused here, not by the runtime it would start
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
        refusal = _spawn_runtime(addr, deadline) if needed else None
        if refusal is not None:  # the runtime said why (also in its log, kept in the sidecar) and exited
            _take_back(addr, False, created[1])
            raise refusal
    finally:
        locks.unlock(spawn)


def _prepare_spawn(addr: Address, binding: Dict[str, Any]) -> bool:
    """Bind the file if it is new; True if a runtime must be spawned (none
    listens, none is starting or exiting)."""
    from . import locks

    if _listening(addr):
        return False
    current = read_binding(addr)
    if current is None or os.path.getsize(addr.path) == 0:
        # A file with no event yet may still be re-bound (its first send failed).
        write_binding(addr, _merge(current, binding))
    else:
        check_binding(current, binding)
    return not locks.is_held(addr.runtime_lock)  # held: a runtime is starting or exiting; ask it again


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


def _merge(current: Optional[Dict[str, Any]], binding: Dict[str, Any]) -> Dict[str, Any]:
    merged = dict(current or {})
    merged.update({k: v for k, v in binding.items() if v is not None})
    merged.setdefault("model", None)
    return merged


def _listening(addr: Address) -> bool:
    try:
        ipc.connect(addr.socket, 1.0).close()
    except OSError:
        return False
    return True


def _spawn_runtime(addr: Address, deadline: float) -> Optional[HarnessctlError]:
    """Start the detached runtime and wait for its "ok" on a pipe (no polling);
    the error it refused to start with, if it did.

    posix_spawn with setsid gives it its own session and no controlling
    terminal, with /dev/null for its std streams, so a shell or cron job that
    exits does not take it along.  (subprocess would cost every first send an import.)"""
    read_fd, write_fd = os.pipe()
    os.set_inheritable(write_fd, True)
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        os.posix_spawn(
            sys.executable,
            [sys.executable, "-I", "-S", "-c", BOOT, ROOT, addr.path, str(write_fd), repr(deadline)],
            os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                          (os.POSIX_SPAWN_DUP2, devnull, 2), (os.POSIX_SPAWN_CLOSE, devnull)],
            setsid=True,
        )
    except OSError as e:
        raise UnavailableError("cannot start the runtime (%s): %s" % (sys.executable, e.strerror)) from None
    finally:
        os.close(write_fd)
        os.close(devnull)
    try:
        word = _read_ready(read_fd, deadline)
    finally:
        os.close(read_fd)
    if word == "ok":
        return None
    if word == "busy":
        return None  # another runtime holds the lock: the next exchange finds it
    if word is None:
        raise UnavailableError("timed out waiting for the runtime to start (nothing was sent); see %s"
                               % addr.runtime_log)
    code, _, message = word.partition(" ")
    if code.isdigit() and message:
        return from_code(int(code), message)
    raise UnavailableError("the runtime failed to start: %s (see %s)" % (word or "it exited", addr.runtime_log))


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


# -- a stopped runtime -----------------------------------------------------------


# A recovering command holds the event file's lock for milliseconds (seconds
# for a long file without a snapshot); held longer, a runtime serving another
# name of the same file (a hard link) writes it.
WRITER_GRACE = 2.0


def _while_stopped(addr: Address, deadline: float, fn: Any, elsewhere: Any = None) -> Any:
    """Run fn(addr, fd) as the event file's one writer (fd: the file, locked)
    and, when it has a sidecar, holding the sidecar's lock (no runtime can
    start meanwhile); None if a runtime is alive after all (ask it instead).
    If another process keeps writing the file, elsewhere(addr) answers, or the
    command exits 5 having done nothing."""
    from . import locks, private
    from .pidfile import kill_leftover

    sidecar = os.path.lexists(addr.sidecar)  # none: a file made by hand, or a copy
    lock = None
    if sidecar:
        private.check_dir(addr.sidecar)
        lock = locks.try_lock(addr.runtime_lock)
        if lock is None:
            if time.monotonic() >= deadline:
                raise OutcomeUnknownError("timed out waiting for the runtime of %s" % addr.path)
            time.sleep(0.01)  # a runtime is starting or exiting: ask again shortly
            return None
    try:
        fd = _open_writer(addr)
        try:
            if not locks.lock_fd(fd, min(deadline, time.monotonic() + WRITER_GRACE)):
                if elsewhere is not None:
                    return elsewhere(addr)
                raise UnavailableError("%s is being written by a runtime serving another name of it (a hard link?): "
                                       "nothing was done; use the name that runtime was started for" % addr.path)
            if sidecar:
                kill_leftover(addr.harness_pid)
            return fn(addr, fd)
        finally:
            os.close(fd)
    finally:
        locks.unlock(lock)


def _open_writer(addr: Address) -> int:
    """The event file for writing, or for reading only where it cannot be
    written (a status still works; a recovery that must write says why)."""
    from . import private

    try:
        return private.open_file(addr.path, os.O_RDWR | os.O_APPEND, "event file")
    except FileNotFoundError:
        raise UsageError("event file %s disappeared" % addr.path) from None
    except OSError:
        return open_event_file(addr, os.O_RDONLY)  # EACCES, EROFS: read only; anything else: its error


def _status_written_elsewhere(addr: Address) -> str:
    """The status line of a file that a runtime serving another of its names
    writes: what the file says, and that runtime alive."""
    from . import snapshot
    from .state import status_line, status_report

    return status_line(status_report(snapshot.load(addr)[0], read_binding(addr), alive=True))


def _stopped_status(addr: Address, fd: int) -> str:
    """The status line without a runtime: from the snapshot when the file has
    not changed since it was taken (no JSON parse), else from the fold."""
    from . import snapshot

    line = snapshot.current_status(addr)
    if line is None:
        from .state import status_line, status_report

        line = status_line(status_report(_recovered(addr, fd), read_binding(addr), alive=False))
    return line


def _recovered(addr: Address, fd: int) -> Any:
    """The conversation after the lost-runtime rule: every accepted input
    without a result gets a failed one, pending requests expire, nothing is
    replayed.  Only this path reads the event file, so only it imports the fold."""
    from . import snapshot
    from .state import LOST, close_open_work

    check_event_file(addr)
    binding = read_binding(addr)  # refused (untrusted) before anything is written, never after
    conv, offset, stale = snapshot.load(addr)
    lost = close_open_work(conv, LOST)
    if lost:
        from .eventlog import EventLog

        log = EventLog(os.dup(fd), addr.path, conv.seq)  # the dup shares the lock; closing it keeps the lock
        try:
            for event in lost:
                conv.apply(log.append(event))
        except OSError as e:  # e.g. the disk is full: say so (not "internal error"); the next command retries
            raise HarnessctlError("cannot write %s: %s (recording what the lost runtime left open); retry "
                                  "once it can be written" % (addr.path, e.strerror)) from None
        finally:
            log.close()
        offset = os.path.getsize(addr.path)
    if (stale or lost) and os.path.isdir(addr.sidecar):
        snapshot.save(addr, conv, offset, binding)
    return conv
