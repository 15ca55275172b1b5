"""What each command does: find (or start) the runtime, ask it, and recover a
lost one.  Imports stay light: this module is on every command's path."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from typing import Any, Dict, Optional

from . import ipc, locks, snapshot
from .address import (Address, check_event_file, make_sidecar, read_binding, require_existing, resolve,
                      write_binding)
from .errors import (HarnessctlError, OutcomeUnknownError, StateError, UnavailableError, UsageError,
                     from_code)
from .state import LOST, close_open_work, status_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from harnessctl.runtime import main; sys.exit(main())"


class NoRuntime(Exception):
    """Nobody is listening on the session's socket."""


def timeout_seconds() -> float:
    try:
        value = float(os.environ.get("HARNESSCTL_TIMEOUT", "30"))
    except ValueError:
        raise UsageError("HARNESSCTL_TIMEOUT must be a number of seconds") from None
    return value if value > 0 else 30.0


# -- the four commands --------------------------------------------------------


def send(file: str, text: str, cwd: Optional[str], model: Optional[str], adapter: Optional[str]) -> None:
    addr = resolve(file)
    check_event_file(addr)
    wanted = {"adapter": adapter, "cwd": _real_dir(cwd) if cwd is not None else None, "model": model}
    bound = read_binding(addr)
    if bound is not None:
        check_binding(addr, bound, wanted)
    else:
        wanted = _new_binding(wanted)
    deadline = time.monotonic() + timeout_seconds()
    request = {"op": "send", "text": text}
    while True:
        try:
            _expect_ok(_exchange(addr, request, deadline, retry_on_eof=False))
            return
        except NoRuntime:
            pass
        _ensure_runtime(addr, wanted, deadline)


def status(file: str) -> Dict[str, Any]:
    addr = resolve(file)
    require_existing(addr)
    deadline = time.monotonic() + timeout_seconds()
    while True:
        try:
            return _expect_ok(_exchange(addr, {"op": "status"}, deadline, retry_on_eof=True))["status"]
        except NoRuntime:
            pass
        report = _while_stopped(addr, deadline, lambda conv: status_report(conv, read_binding(addr), alive=False))
        if report is not None:
            return report


def cancel(file: str) -> None:
    addr = resolve(file)
    require_existing(addr)
    deadline = time.monotonic() + timeout_seconds()
    while True:
        try:
            _expect_ok(_exchange(addr, {"op": "cancel"}, deadline, retry_on_eof=True))
            return
        except NoRuntime:
            pass
        if _while_stopped(addr, deadline, lambda conv: True):
            return  # recovery ended whatever was open: nothing is running


def reply(file: str, request_id: str, answer: str) -> None:
    addr = resolve(file)
    require_existing(addr)
    deadline = time.monotonic() + timeout_seconds()
    request = {"op": "reply", "request_id": request_id, "answer": answer}
    while True:
        try:
            _expect_ok(_exchange(addr, request, deadline, retry_on_eof=False))
            return
        except NoRuntime:
            pass
        state = _while_stopped(addr, deadline, lambda conv: conv.closed_requests.get(request_id, "unknown"))
        if state is not None:
            if state == "unknown":
                raise StateError("unknown request id %s" % request_id)
            raise StateError("%s is already %s" % (request_id, state))


# -- binding -----------------------------------------------------------------


def check_binding(addr: Address, bound: Dict[str, Any], wanted: Dict[str, Any]) -> None:
    """A later command may omit adapter/cwd/model; a different value is a conflict."""
    for key in ("adapter", "cwd", "model"):
        if wanted.get(key) is not None and wanted[key] != bound.get(key):
            raise UsageError("%s is bound to this event path: %s (new workspace = new file)"
                             % (key, bound.get(key) if bound.get(key) is not None else "the harness default"))


def _new_binding(wanted: Dict[str, Any]) -> Dict[str, Any]:
    from . import registry

    adapter = wanted["adapter"] or os.environ.get("HARNESSCTL_ADAPTER")
    if not adapter:
        raise UsageError("no adapter for this new event file: pass --adapter NAME or set HARNESSCTL_ADAPTER")
    registry.manifest(adapter)
    return {"adapter": adapter, "cwd": wanted["cwd"] or _real_dir("."), "model": wanted["model"]}


def _real_dir(path: str) -> str:
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        raise UsageError("cwd is not a directory: %s" % real)
    return real


# -- talking to the runtime -------------------------------------------------


def _exchange(addr: Address, request: Dict[str, Any], deadline: float, retry_on_eof: bool) -> Dict[str, Any]:
    """One request, one response.  NoRuntime if nobody listens."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise OutcomeUnknownError("timed out waiting for the runtime of %s" % addr.path)
        try:
            conn = ipc.connect(addr.socket, remaining)
        except PermissionError as e:
            raise HarnessctlError(str(e)) from None
        except OSError:
            raise NoRuntime() from None
        try:
            with conn:
                ipc.send_message(conn, request)
                conn.settimeout(max(0.001, deadline - time.monotonic()))
                response = ipc.read_message(conn)
        except OSError as e:
            if "timed out" in str(e) or isinstance(e, TimeoutError):
                raise OutcomeUnknownError(
                    "timed out after %g s waiting for the runtime; the input may have been accepted: "
                    "read %s before retrying" % (timeout_seconds(), addr.path)) from None
            response = None
        if response is None:
            if retry_on_eof:
                continue
            raise OutcomeUnknownError("the runtime went away before answering; the request may have been "
                                      "applied: read %s before retrying" % addr.path)
        if response.get("retry"):
            raise NoRuntime()
        return response


def _expect_ok(response: Dict[str, Any]) -> Dict[str, Any]:
    if response.get("ok"):
        return response
    raise from_code(int(response.get("code", 1)), str(response.get("error", "the runtime refused")))


def _ensure_runtime(addr: Address, binding: Dict[str, Any], deadline: float) -> None:
    """Start the runtime unless someone else did meanwhile.  Serialized by the
    spawn lock so that concurrent first sends start exactly one runtime."""
    make_sidecar(addr)
    spawn = locks.wait_lock(addr.spawn_lock, deadline)
    if spawn is None:
        raise OutcomeUnknownError("timed out waiting for another command to start the runtime")
    try:
        if _listening(addr):
            return
        current = read_binding(addr)
        if current is None or (os.path.getsize(addr.path) == 0 and not _listening(addr)):
            # A file with no event yet may still be re-bound (its first send failed).
            write_binding(addr, _merge(current, binding))
        else:
            check_binding(addr, current, binding)
        lock = locks.wait_lock(addr.runtime_lock, deadline)  # an exiting runtime lets go soon
        if lock is None:
            raise OutcomeUnknownError("timed out waiting for the previous runtime of %s to exit" % addr.path)
        locks.unlock(lock)
        _spawn_runtime(addr, deadline)
    finally:
        locks.unlock(spawn)


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


def _spawn_runtime(addr: Address, deadline: float) -> None:
    """Start the detached runtime and wait for its "ok" on a pipe (no polling)."""
    read_fd, write_fd = os.pipe()
    try:
        subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", BOOT, ROOT, addr.path, str(write_fd)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            pass_fds=(write_fd,),
            start_new_session=True,
        )
    finally:
        os.close(write_fd)
    try:
        word = _read_ready(read_fd, deadline)
    finally:
        os.close(read_fd)
    if word == "ok":
        return
    if word == "busy":
        return  # another runtime holds the lock: the next exchange finds it
    if word is None:
        raise OutcomeUnknownError("timed out waiting for the runtime to start; see %s" % addr.runtime_log)
    raise UnavailableError("the runtime failed to start: %s (see %s)" % (word or "it exited", addr.runtime_log))


def _read_ready(fd: int, deadline: float) -> Optional[str]:
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


def _while_stopped(addr: Address, deadline: float, fn: Any) -> Any:
    """Run fn(conversation) while holding the runtime lock, after applying the
    lost-runtime rule.  None if a runtime is alive after all (ask it instead)."""
    lock = locks.try_lock(addr.runtime_lock) if os.path.isdir(addr.sidecar) else None
    if lock is None:
        if not os.path.isdir(addr.sidecar):
            conv, _ = snapshot.load(addr)
            return fn(conv)
        if time.monotonic() >= deadline:
            raise OutcomeUnknownError("timed out waiting for the runtime of %s" % addr.path)
        time.sleep(0.01)  # a runtime is starting or exiting: ask again shortly
        return None
    try:
        conv, offset = snapshot.load(addr)
        lost = close_open_work(conv, LOST)
        if lost:
            from .eventlog import EventLog

            log = EventLog(addr.path, conv.seq)
            try:
                for event in lost:
                    conv.apply(log.append(event))
            finally:
                log.close()
            offset = os.path.getsize(addr.path)
        snapshot.save(addr, conv, offset)
        return fn(conv)
    finally:
        locks.unlock(lock)
