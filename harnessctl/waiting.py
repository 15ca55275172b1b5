"""What `wait` does (`wait`, `wait --any`, and send --wait): a watch on each live
runtime, answered when there is something to say, nothing polled; without a
runtime, the lost-runtime rule settles what is open and the answer is in the
file.  Imports stay light, as client.py's."""

from __future__ import annotations

import os
import time

from .client import NoRuntime, status_once, timeout_seconds
from .errors import OutcomeUnknownError, StateError, UnavailableError, UsageError, from_code
from .store import ipc
from .store.address import Address, check_event_file, open_event_file, require_exists, resolve

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, List, Optional, Tuple

    from .notes import Notes


def wait(file: str, input_id: Optional[str], timeout: Optional[float],
         notes: Optional[Notes] = None) -> Tuple[str, str]:
    """(what happened, the line to print): the outcome of `input_id` (its
    result's status and line, or `request` and the pending request line of its
    run), or without an id `status` and the status line once the conversation
    is neither running nor cancelling; `timeout` and no line if `timeout`
    seconds passed first.

    A live runtime answers when the line is written; without one the
    lost-runtime rule settles everything open, and the answer is in the file.
    With `notes`, the harness's warnings and retries written meanwhile are
    said as they come (notes.py), and once more when the answer is there."""
    if input_id == "":
        raise UsageError("an empty INPUT_ID names no input: leave it out to wait for the conversation")
    addr = resolve(file)
    require_exists(addr)
    waited_on = _identity(addr.path)
    until = None if timeout is None else time.monotonic() + timeout
    pause = 0.01
    while True:
        try:
            kind, line = _watch(addr, input_id, until, notes, now=timeout == 0)
        except NoRuntime:
            kind, line = _wait_stopped(addr, input_id, until)
        if kind != "timeout" and _identity(addr.path) != waited_on:
            raise OutcomeUnknownError("%s was replaced or removed while waiting: the session waited on is no "
                                      "longer at that path, and what became of it is unknown" % addr.path)
        if notes is not None:
            notes.look()  # what came while the answer was on its way: said before it is printed
        if kind == "done":
            found = _result_in_file(addr, input_id or "")
            if found is not None:
                return found
            pause = min(pause * 2, 0.5)  # accepted, but its result is not in the file after all: ask again
        elif kind != "again":
            return kind, line
        if until is not None and time.monotonic() >= until:
            return "timeout", ""
        time.sleep(pause)


def _identity(path: str) -> Optional[Tuple[int, int]]:
    """The file at `path` (device, inode), or None when there is none: a wait
    notices the session's file being replaced by another of the same name."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def wait_any(files: List[str], timeout: Optional[float]) -> Tuple[str, int, str]:
    """`wait --any`: (`status`, the index in `files`, its status line) of the
    first session that is neither running nor cancelling: the first in the
    order given among those that are already, else the first to get there;
    (`timeout`, -1, "") once `timeout` seconds passed first.  A file that is
    not a session (missing, not an event file) raises its error before any
    wait begins: waiting on a typo would sleep for ever.

    Nothing polls.  Each session is looked at once, in order (client.status's
    own way: its live runtime, else the file with the lost-runtime rule
    applied); each busy one gets a watch (the `wait` without an input id that
    its runtime answers when the conversation goes quiet), and the command
    sleeps on all those sockets at once with `selectors`.  A runtime that goes
    away while watched (EOF, `retry`) means: look at that file again (it may
    be stopped now, or a new runtime took it); so does an answer once the
    path names another file (a watch answers for the file at the path now).

    Descriptors: one socket per busy session, held at once.  The soft
    RLIMIT_NOFILE is raised towards the hard one when the files need it (a
    few hundred fit any default); with thousands of files beyond the hard
    limit the command exits 5 at once, before waiting, saying so (wait on
    fewer files per command, or raise ulimit -Hn)."""
    until = None if timeout is None else time.monotonic() + timeout
    addrs = []
    for file in files:
        addr = resolve(file)
        require_exists(addr)
        check_event_file(addr)
        addrs.append(addr)
    _reserve_descriptors(len(addrs))
    import selectors

    selector = selectors.DefaultSelector()
    try:
        for index, addr in enumerate(addrs):
            kind, line = _look_or_watch(addr, index, until, selector)
            if kind != "watching":
                return kind, index if line else -1, line
        while True:
            remaining = None if until is None else until - time.monotonic()
            if remaining is not None and remaining <= 0:
                return "timeout", -1, ""
            for key, _ in sorted(selector.select(remaining), key=lambda ready: ready[0].data[0]):
                index, conn, seen = key.data
                selector.unregister(conn)
                try:
                    kind, line = _answer_for(conn, addrs[index].path, seen)
                except NoRuntime:  # it went away, or the path names another file: look at the file again
                    kind, line = _look_or_watch(addrs[index], index, until, selector)
                if kind != "watching":
                    return kind, index if line else -1, line
    finally:
        for key in list(selector.get_map().values()):
            key.data[1].close()
        selector.close()


def _answer_for(conn: Any, path: str, seen: Optional[Tuple[int, int]]) -> Tuple[str, str]:
    """A watch's answer, when `path` still names the file `seen` (its
    _identity when the watch was taken).  NoRuntime when the runtime went
    away, or the path names another file now: a runtime whose file was
    replaced stops and answers about the old one (its run `failed`), which
    says nothing of the file at the path.  A path that names no file is
    exit 6, as for `wait`."""
    try:
        conn.settimeout(timeout_seconds())  # the answer is on its way: it ends at once
        data = ipc.read_all(conn)
    except OSError:
        raise NoRuntime() from None
    finally:
        conn.close()
    now = _identity(path)
    if now is None:
        raise OutcomeUnknownError("%s was removed while waiting: what became of the session waited on is "
                                  "unknown" % path)
    if now != seen:
        raise NoRuntime()
    return _watch_answer(data)


BUSY = ("running", "cancelling")
LOOK = 0.1  # seconds a look at one session may take past `--timeout`


def _busy(line: str) -> bool:
    """Whether a status line says running or cancelling (it starts with its
    state, state.status_report: read without a parse when it does)."""
    if line.startswith('{"state":"'):
        return line[10:line.find('"', 10)] in BUSY
    import json

    return json.loads(line).get("state") in BUSY


def _look_or_watch(addr: Address, index: int, until: Optional[float], selector: Any) -> Tuple[str, str]:
    """Look at one session for wait_any: (`status`, its line) when it is
    neither running nor cancelling, (`timeout`, "") once `until` passed, else
    (`watching`, "") with a watch on its runtime registered in `selector`."""
    import selectors

    pause = 0.01
    while True:
        seen = _identity(addr.path)  # the file this look and its watch answer for
        now = time.monotonic()
        deadline = now + timeout_seconds()
        if until is not None:  # a session is looked at even when --timeout 0 passed already: LOOK seconds at most
            deadline = min(deadline, max(until, now + LOOK))
        try:
            line = status_once(addr, deadline)
        except (OutcomeUnknownError, UnavailableError):
            if until is not None and time.monotonic() >= until:
                return "timeout", ""
            raise
        if line is not None:
            if not _busy(line):
                return "status", line
            try:
                conn = _open_watch(addr, None, until)
                selector.register(conn, selectors.EVENT_READ, (index, conn, seen))
                return "watching", ""
            except (NoRuntime, ipc.Timeout):
                pass  # it went away between the two: look again
            if until is not None and time.monotonic() >= until:
                return "timeout", ""
            time.sleep(pause)  # only when a busy runtime keeps vanishing (another name of a hard link serves it)
            pause = min(pause * 2, 0.5)


def _reserve_descriptors(count: int) -> None:
    """Make room for `count` sockets at once (wait_any's docstring)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        in_use = len(os.listdir("/proc/self/fd"))
    except OSError:
        in_use = 64
    needed = count + in_use + 32  # and a few for the files a look at a stopped session opens
    if soft == resource.RLIM_INFINITY or needed <= soft:
        return
    if hard != resource.RLIM_INFINITY and needed > hard:
        raise UnavailableError("wait --any on %d files needs about %d file descriptors, more than the hard limit "
                               "(ulimit -Hn: %d): wait on fewer files per command, or raise it" % (count, needed, hard))
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed if hard == resource.RLIM_INFINITY else hard, hard))


def _wait_stopped(addr: Address, input_id: Optional[str], until: Optional[float]) -> Tuple[str, str]:
    """Without a runtime: the lost-runtime rule settles everything open, and the
    answer is in the file (`done`), or the status line; `again` when a runtime
    turned out to be starting or exiting; `timeout` once `until` passed while
    the file's writer was busy.  A runtime on another machine is slept on
    (store.holder.released), not asked again and again."""
    from .recovery import recovered, stopped_status, while_stopped
    from .store.holder import HeldElsewhere, released

    deadline = time.monotonic() + timeout_seconds()
    if until is not None:
        deadline = min(deadline, until)
    try:
        if input_id is None:
            line = while_stopped(addr, deadline, stopped_status)
            return ("again", "") if line is None else ("status", line)
        return ("again", "") if while_stopped(addr, deadline, recovered) is None else ("done", "")
    except HeldElsewhere:  # its runtime lives on another machine: sleep until it lets go
        return ("again", "") if released(addr, until) else ("timeout", "")
    except (OutcomeUnknownError, UnavailableError):
        if until is not None and time.monotonic() >= until:
            return "timeout", ""
        raise


def _watch(addr: Address, input_id: Optional[str], until: Optional[float],
           notes: Optional[Notes] = None, now: bool = False) -> Tuple[str, str]:
    """Ask the runtime to answer once there is something to say; NoRuntime if
    there is none or it went away meanwhile (the caller then recovers or asks again).
    With `notes`, the runtime nudges the watch when it writes a harness warning (_read_with_notes).
    With `now` (a wait of no time), it answers at once, and is given the usual
    time to: a busy runtime's answer is not taken for `timeout`."""
    if now:
        until = time.monotonic() + timeout_seconds()
    try:
        conn = _open_watch(addr, input_id, until, notes is not None, now)
    except ipc.Timeout:
        return "timeout", ""
    try:
        data = b"" if notes is None else _read_with_notes(conn, until, notes)
        conn.settimeout(None if until is None else max(0.001, until - time.monotonic()))
        if notes is None or data:
            data += ipc.read_all(conn)
    except ipc.Timeout:
        return "timeout", ""
    except OSError:
        raise NoRuntime() from None
    finally:
        conn.close()
    return _watch_answer(data)


def _read_with_notes(conn: Any, until: Optional[float], notes: Notes) -> bytes:
    """The first bytes of the runtime's answer (b"": it hung up).  Before it,
    each NUDGE (the runtime wrote a harness warning) makes `notes` read the
    file's new lines and say what they bring; nothing is read while nothing
    is written.  ipc.Timeout once `until` passed."""
    import select

    notes.look()
    while True:
        left = None if until is None else until - time.monotonic()
        if left is not None and left <= 0:
            raise ipc.Timeout()
        if not select.select([conn], [], [], left)[0]:
            continue
        chunk = conn.recv(65536)
        start = chunk.lstrip(ipc.NUDGE)
        if start or not chunk:
            return start
        notes.look()


# EMFILE, ENFILE: out of descriptors, which is not "no runtime"
OUT_OF_DESCRIPTORS = (24, 23)


def _open_watch(addr: Address, input_id: Optional[str], until: Optional[float], nudged: bool = False,
                now: bool = False) -> Any:
    """A connection to the runtime with the `wait` request sent: its answer
    comes once there is something to say (_watch_answer reads it), after a
    NUDGE byte per harness warning if `nudged`.  NoRuntime if nobody listens;
    ipc.Timeout if the request could not be sent in time."""
    patience = timeout_seconds() if until is None else max(0.001, min(timeout_seconds(), until - time.monotonic()))
    try:
        conn = ipc.connect(addr.socket, patience)
    except PermissionError as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        if e.errno in OUT_OF_DESCRIPTORS:
            raise UnavailableError("cannot reach the runtime of %s: %s (raise ulimit -n)"
                                   % (addr.path, e.strerror)) from None
        raise NoRuntime() from None
    try:
        ipc.send_all(conn, ipc.encode_request(["wait", input_id or ""] + (["notes"] if nudged else [])
                                             + (["now"] if now else [])))
    except ipc.Timeout:
        conn.close()
        raise
    except OSError:
        conn.close()
        raise NoRuntime() from None
    return conn


def _watch_answer(data: bytes) -> Tuple[str, str]:
    """(kind, line) of a watch's answer; NoRuntime if the runtime went away
    or is exiting without one (ask again), its error raised."""
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

    from .eventfile.eventlog import find_result

    with os.fdopen(open_event_file(addr, os.O_RDONLY), "rb") as f:
        line, accepted = find_result(f, input_id)
    if not accepted:
        raise StateError("unknown input id %s: %s never accepted it" % (input_id, addr.path))
    if line is None:
        return None
    return json.loads(line)["status"], line.decode("utf-8")
