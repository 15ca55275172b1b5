"""What each command does: ask the file's runtime (one request, `exchange`,
and its answer), or start one (spawn.py), or settle what a lost one left
open (recovery.py); `wait` is waiting.py's.  Imports stay light: this module is on every command's
path, and a command that finds its runtime alive needs no more than a socket
(locks, json and the fold are imported only on the paths that use them)."""

from __future__ import annotations

import os
import time

from .errors import HarnessctlError, OutcomeUnknownError, StateError, UnavailableError, UsageError, from_code
from .store import ipc
from .store.address import check_event_file, require_exists, resolve

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    from .store.address import Address


class NoRuntime(Exception):
    """Nobody is listening on the session's socket."""


def timeout_seconds() -> float:
    if "HARNESSCTL_TIMEOUT" not in os.environ:
        return 30.0  # the default, without importing the parser: every command pays for its imports
    from . import knobs

    return knobs.seconds(os.environ, "HARNESSCTL_TIMEOUT", 30.0)


def status_once(addr: Address, deadline: float) -> Optional[str]:
    """The status line from the live runtime, or from the file without one;
    None when a runtime turned out to be starting or exiting (ask again)."""
    try:
        return exchange(addr, ["status"], deadline, retry_on_eof=True)
    except NoRuntime:
        pass
    from .recovery import status_written_elsewhere, stopped_status, while_stopped
    from .store.holder import HeldElsewhere

    try:
        return while_stopped(addr, deadline, stopped_status, elsewhere=status_written_elsewhere)
    except HeldElsewhere as held:  # its runtime lives on another machine: say where, at once
        return held.status()


def ask(addr: Address, fields: List[str], deadline: float, retry_on_eof: bool,
        without: Callable[[], Optional[str]]) -> str:
    """The live runtime's answer to `fields`.  When nobody listens, and no
    runtime is starting or exiting, without() answers instead, or starts a
    runtime and returns None: then that one is asked."""
    while True:
        try:
            return exchange(addr, fields, deadline, retry_on_eof)
        except NoRuntime:
            pass
        from .spawn import starting_or_exiting

        if starting_or_exiting(addr, deadline):
            continue
        answer = without()
        if answer is not None:
            return answer


def exchange(addr: Address, fields: List[str], deadline: float, retry_on_eof: bool,
             proof: Optional[str] = None) -> str:
    """One request, one response: the response text, or the error it carries
    raised.  NoRuntime if nobody listens (or the runtime is exiting).  `proof`:
    another machine's (ipc.encode_request), `addr` its forwarded socket."""
    request = b""  # made once a runtime answers the connect: no key is made for a file without one
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
            request = request or ipc.encode_request(fields, proof)
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
            raise _earlier(addr, fields[0], text) or from_code(code, text)
        return text


def _earlier(addr: Address, op: str, text: str) -> Optional[UnavailableError]:
    """The error for a request that a runtime of an earlier harnessctl calls
    malformed: one that reads no proof (ipc.encode_request) names the proof
    field; one that knows no versions, a versioned request (ipc.named)."""
    name, slash, version = op.partition("/")
    if text.startswith("malformed request '%s" % ipc.PROOF):
        return UnavailableError("the runtime serving %s is an earlier harnessctl, which reads no proof: nothing was "
                                "sent; it exits once the conversation is idle for HARNESSCTL_IDLE_TIMEOUT (60 s by "
                                "default): send again then" % addr.path)
    if not slash or text != "malformed request %r" % op:
        return None
    return UnavailableError(ipc.other_version(addr.path, name, "an earlier harnessctl", 1,
                                              "harnessctl %s" % ipc.own_version(), version))


WORKTREE = '"worktree":{'  # in the status line of a session with a worktree, and in no other (JSON escapes a quote)


# -- the commands -----------------------------------------------------------
#
# Each command first asks a live runtime, which knows everything (binding,
# state) without reading a file.  Only when there is none does the command
# read the event file and the binding: that path imports json and the fold.


def send(file: str, text: str, wish: Dict[str, Any], schema: Optional[Dict[str, Any]] = None,
         deliver: Optional[str] = None) -> str:
    """The accepted input's id.  `wish` (commands.Send): the bound fields
    the send gives, by binding key; one it omits keeps the bound value, and
    only the limits may differ from it (binding.py).  `schema` (send
    --schema) is this send's alone: the run it starts must answer with JSON
    that fits.  `deliver` (binding.DELIVERIES): queue or interrupt instead
    of steering a busy run."""
    from .binding import asked, send_request, with_worktree
    from .store.bindingfile import read_binding

    addr = resolve(file)
    wanted = asked(wish)
    schema_field = None
    if schema is not None:
        from .checks.structured import to_field

        schema_field = to_field(schema)
    request = send_request(text, schema_field, wanted, deliver)
    deadline = time.monotonic() + timeout_seconds()
    warnings: List[Optional[str]] = []  # said once the send is accepted: a refused send says only why

    def start() -> None:
        from .spawn import Starter, ensure_runtime

        with Starter(addr, deadline) as starter:  # it starts up while we bind the file
            check_event_file(addr)
            bound = read_binding(addr)
            binding, found = _binding_for(addr, bound, wanted)
            warnings[:] = found
            _check_claims(bound or binding, schema, wanted["max_cost_usd"])
            binding = with_worktree(binding, bound, addr.path)  # the last check passed: made only now
            ensure_runtime(addr, binding, deadline, starter)

    input_id = ask(addr, request, deadline, False, start)
    for warning in warnings:
        _warn(warning)
    return input_id


def _binding_for(addr: Address, bound: Optional[Dict[str, Any]],
                 wanted: Dict[str, Any]) -> Tuple[Dict[str, Any], List[Optional[str]]]:
    """What a send starts the runtime with: what it asks, checked against the
    file's binding; for a file never sent to a new binding, with the warnings
    a new session gets (said once the send is accepted)."""
    from .binding import check_binding, new_binding, retried
    from .store.bindingfile import never_sent, require_unused

    if bound is not None and not never_sent(addr):
        check_binding(bound, wanted)
        return wanted, []
    if bound is None:
        require_unused(addr)  # a used file whose binding.json is gone is never bound anew
    binding = new_binding(retried(bound, wanted))
    from .box import check_binding as check_box
    from .store.address import unlisted
    from .store.trusted import inside_workspace

    return binding, [check_box(addr.path, binding) or inside_workspace(addr.path, binding["cwd"]), unlisted(addr.path)]


def status(file: str, count: bool = True) -> str:
    """The status line (JSON, without the newline); with the changes of its
    worktree unless not `count` (commands.file_statuses counts them)."""
    addr = resolve(file)
    require_exists(addr)
    deadline = time.monotonic() + timeout_seconds()
    while True:
        report = status_once(addr, deadline)
        if report is not None:
            report = with_changes(report) if count else report
            return with_forward(report, addr, file) if os.environ.get("HARNESSCTL_FORWARD") == "1" else report


def with_forward(line: str, addr: Address, file: str) -> str:
    """A status line with where this runtime's socket is and the proof its
    requests show, for a command on another machine that forwards the
    socket over ssh (remote/tunnel.py).  Only for FILE given as its real
    path: a symlink may name another session by the time the socket is used."""
    if file != addr.path:
        return line
    import json

    from .store.trusted import runtime_proof

    found = {"socket": addr.socket, "proof": runtime_proof(create=True)}
    return line[:-1] + ',"forward":' + json.dumps(found, separators=(",", ":")) + "}"


def with_changes(line: str) -> str:
    """A status line with what the session changed in its worktree
    (worktree.changes), asked of git by the command: the runtime answers
    from memory and never waits for git."""
    if WORKTREE not in line:  # not a session with a worktree: nothing to parse
        return line
    import json

    from .eventfile.state import status_line
    from .worktree import Worktree, changes

    report = json.loads(line)
    if not isinstance(report.get("worktree"), dict):
        return line
    try:
        found: Dict[str, Any] = changes(Worktree.from_dict(report["worktree"]))
    except HarnessctlError as e:
        found = {"error": str(e)}
    report["worktree"] = dict(report["worktree"], changes=found)
    return status_line(report)


def cancel(file: str, input_id: Optional[str] = None) -> None:
    """Cancel what runs, or with `input_id` take back that queued input."""
    addr = resolve(file)
    require_exists(addr)
    deadline = time.monotonic() + timeout_seconds()
    while True:
        try:
            exchange(addr, ["cancel"] + ([input_id] if input_id is not None else []), deadline,
                     retry_on_eof=input_id is None)
            return
        except NoRuntime:
            pass
        from .recovery import recovered, while_stopped

        if while_stopped(addr, deadline, lambda addr, fd: recovered(addr, fd) is not None):
            if input_id is not None:  # only a live runtime holds an input back
                raise StateError("input %s is not queued on %s: no runtime serves it (unknown or ended)"
                                 % (input_id, file))
            return  # recovery ended whatever was open: nothing is running


def reply(file: str, request_id: str, answer: str) -> None:
    addr = resolve(file)
    require_exists(addr)
    deadline = time.monotonic() + timeout_seconds()
    while True:
        try:
            exchange(addr, ["reply", request_id, answer], deadline, retry_on_eof=False)
            return
        except NoRuntime:
            pass
        from .recovery import recovered, while_stopped

        state = while_stopped(addr, deadline,
                              lambda addr, fd: recovered(addr, fd).closed_requests.get(request_id, "unknown"))
        if state is not None:
            if state == "unknown":
                raise StateError("unknown request id %s" % request_id)
            raise StateError("%s is already %s" % (request_id, state))


def _check_claims(binding: Dict[str, Any], schema: Optional[Dict[str, Any]], max_cost: Optional[float]) -> None:
    """Refuse, before the file is bound or a harness started, what the bound
    harness cannot do: a schema it cannot promise, a cost limit it cannot see."""
    if schema is None and max_cost is None:
        return
    from .store.registry import manifest

    found = manifest(str(binding["adapter"]))
    if schema is not None:
        from .checks.structured import check_claimed

        check_claimed(found, binding.get("agent"))
    if max_cost is not None:
        from .checks.budget import check_cost_reported

        check_cost_reported(found, binding.get("agent"))


def _warn(warning: Optional[str]) -> None:
    """One warning line on stderr, cleaned like every line harnessctl prints
    (a path may hold anything); nothing when stderr is closed."""
    import sys

    from .visible import shown

    try:
        if warning is not None and sys.stderr is not None:
            sys.stderr.write("harnessctl: warning: %s\n" % shown(warning))
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
