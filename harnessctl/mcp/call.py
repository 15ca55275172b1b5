"""What a tool handler may ask of `harnessctl mcp` for one tools/call: a
path held to the allowed roots, the operator's caps on what a call may bind
(`Grants`), and a wait that sends progress and ends when the client cancels.

Kept apart from server.py (the JSON-RPC server) so that a handler (tools.py)
sees only these few things, and the server only hands them over: a `Call`
gets the server's root check and its way to send a line as plain callables.
"""

from __future__ import annotations

import os
import time

from ..errors import UsageError
from ..sessions import Session, Sessions
from ..vocabulary import MODES

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    import threading
    from typing import Any, Callable, Dict, List, Optional, Tuple

    Found = Tuple[str, str]  # what a wait found: (outcome, line)
    Result = Tuple[Dict[str, Any], str]  # a tool's (structured result, text)

PROGRESS_EVERY = 2.0  # seconds between progress notifications of a waiting call
SLICE = 0.5  # a wait asks the runtime in slices this long, so a cancelled call ends within one
YEAR = 365 * 86400.0


class Grants:
    """What the operator let this server's calls bind: a per-adapter
    package's adapter and agent (`fixed`), agent commands
    (--allow-agent-commands), the most a new file's mode may be (--max-mode)
    and allow rules (--allow-rules; deny rules always), and whether every
    file a call binds is boxed (--sandbox)."""

    def __init__(self, fixed: Tuple[Optional[str], Optional[str]], allow_agent_commands: bool, max_mode: str,
                 allow_rules: bool, sandbox: bool = False) -> None:
        self.fixed = fixed
        self.sandbox = sandbox
        self.allow_agent_commands = allow_agent_commands
        self.max_mode = max_mode
        self.allow_rules = allow_rules

    def check_agent(self, adapter: Optional[str], agent: str) -> None:
        """Without --allow-agent-commands only a preset name of the adapter
        may be the agent: anything else would be a command the caller chose."""
        if self.allow_agent_commands:
            return
        name = adapter or os.environ.get("HARNESSCTL_ADAPTER")
        presets: Any = {}
        if name:
            from ..store.registry import manifest

            presets = manifest(name).get("agents") or {}
        if agent not in presets:
            raise UsageError("agent %r is not a preset%s; this server runs no agent command of the caller's choosing "
                             "(start it with --allow-agent-commands to allow that)"
                             % (agent, " of the %s adapter (%s)" % (name, ", ".join(sorted(presets)))
                                if presets else ""))

    def boxed(self, asked: Optional[bool]) -> bool:
        """Whether a call's send is boxed: as it asks, or always on a server
        started with --sandbox, which a call cannot turn off."""
        if self.sandbox and asked is False:
            raise UsageError("this server boxes every session it binds (harnessctl mcp --sandbox): "
                             "\"sandbox\": false is not available")
        return self.sandbox or bool(asked)

    def check_grant(self, bound: Optional[Dict[str, Any]], mode: Optional[str], rules: List[Tuple[str, str]]) -> None:
        """A call that binds a new file may grant its agent no more than the
        operator let this server grant: a mode up to --max-mode, allow rules
        only with --allow-rules.  A bound file keeps its policy (a different
        one is refused as from the command line), so a call on one is not
        held to the cap.  `bound`: the file's binding (Session.binding), None for a new file."""
        allows = any(verb == "allow" for verb, _ in rules)
        if mode is None and not allows or bound is not None:
            return
        if mode is not None and MODES.index(mode) > MODES.index(self.max_mode):
            raise UsageError("mode %s is more than this server may grant (--max-mode %s): its operator starts it "
                             "with --max-mode %s to allow that" % (mode, self.max_mode, mode))
        if allows and not self.allow_rules:
            raise UsageError("allow rules are refused: this server was started without --allow-rules "
                             "(deny rules are always accepted)")


class Cancelled(Exception):
    """The client cancelled the call while it waited: it gets no answer."""


class Deferred(Exception):
    """A wait the caller takes as a task (tasks.py): what to follow, and
    `finish`, which turns what the wait found into the call's result."""

    def __init__(self, session: Session, input_id: Optional[str], timeout: Optional[float],
                 finish: Callable[[Found], Result]) -> None:
        super().__init__(session.file)
        self.session = session
        self.input_id = input_id
        self.timeout = timeout
        self.finish = finish


class Call:
    """What a tool handler may ask of the server for one tools/call: `inside`
    resolves a path under the allowed roots (Server.inside), `notify` sends
    the client one message (Server.send); `closing` is set when stdin ends,
    `cancelled` when the client cancels this call; `as_task` when the call
    declared the Tasks extension, so that a wait becomes a task; `sessions`
    reaches a session on this machine or another."""

    def __init__(self, grants: Grants, inside: Callable[[str, str], str], notify: Callable[[Dict[str, Any]], None],
                 closing: threading.Event, cancelled: threading.Event, token: Any, as_task: bool = False,
                 sessions: Optional[Sessions] = None) -> None:
        self.sessions = sessions or Sessions([])
        self.grants = grants
        self.inside = inside
        self.notify = notify
        self.closing = closing
        self.cancelled = cancelled
        self.token = token
        self.as_task = as_task

    def wait(self, file: str, input_id: Optional[str], timeout: Optional[float],
             finish: Callable[[Found], Result]) -> Result:
        """What the wait found, made the call's result by `finish`; raises
        Deferred for a task call (nothing waits: the task is looked at when
        asked), Cancelled when the client cancelled the call."""
        if self.as_task:
            raise Deferred(self.sessions.at(file), input_id, timeout, finish)
        found = self._wait(file, input_id, timeout)
        if found is None:
            raise Cancelled()
        return finish(found)

    def _wait(self, file: str, input_id: Optional[str], timeout: Optional[float]) -> Optional[Found]:
        """waiting.wait, asked in slices: between them a progress notification
        every PROGRESS_EVERY seconds (when the call has a progress token), and
        None once the client cancelled the call (the run goes on).  The CLI's
        notes of harness warnings and retries (notes.py) ride in the progress
        messages: the server's stdout is the protocol, and has no stderr line."""
        started = time.monotonic()
        until = None if timeout is None else started + min(timeout, YEAR)
        next_progress = started + PROGRESS_EVERY
        said: List[str] = []
        session = self.sessions.at(file)
        notes = session.notes(said.append) if self.token is not None else None
        try:
            while not (self.cancelled.is_set() or self.closing.is_set()):
                step = SLICE if until is None else max(0.0, min(SLICE, until - time.monotonic()))
                kind, line = session.wait(input_id, step, notes)
                if kind != "timeout" or (until is not None and time.monotonic() >= until):
                    return kind, line
                if self.token is not None and time.monotonic() >= next_progress:
                    self._progress(input_id, time.monotonic() - started, said)
                    next_progress += PROGRESS_EVERY
        finally:
            session.close()
        return None

    def _progress(self, input_id: Optional[str], waited: float, said: List[str]) -> None:
        """A progress notification of a wait, with the oldest note not said yet."""
        message = "waiting for %s: %d s" % (input_id or "the conversation", waited)
        if said:
            message += "; " + said.pop(0)[len("harnessctl: "):]
        self.notify({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
            "progressToken": self.token, "progress": round(waited, 1), "message": message}})


def check_path(path: str, what: str) -> None:
    """A path names bytes: a NUL, or a lone surrogate that is not one of the
    bytes a path that is not UTF-8 is written with (\\udc80-\\udcff, as a
    status line writes it), names none.  Exit 2 for this path alone."""
    if "\0" in path:
        raise UsageError("%s %s is not a path: it holds a NUL character" % (what, path))
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise UsageError("%s %s is not a path: it holds a lone surrogate that names no byte" % (what, path)) from None
