"""The Codex adapter: drives `codex app-server` (JSON-RPC lines over stdio).

One app-server process per runtime, one codex thread per event file (its id is
kept in FILE.d/codex-thread.json so a new runtime resumes it; a file
`harnessctl fork` made starts with `thread/fork` of the thread it copied).  A
codex turn is a harnessctl run.  Every shape handled here was recorded from the real binary
(codex 0.171.0 against a loopback Responses API mock).

The modules: this one holds the app-server process and its thread (start,
initialize, thread open, resume and fork) and routes what codex sends;
turns.py the turns (sends as turn/start or turn/steer, interrupts, what
codex confirmed of each input, a turn's result); items.py what a turn's
items say, as activity; asking.py codex's server requests and their answers;
approvals.py (the requests) and wire.py (everything else) are the pure
mappings of the wire shapes.
"""

from __future__ import annotations

from harnessctl.kit import Calls, ChildBackend, Config, Host, Input

from . import wire
from .asking import Asking
from .items import Items
from .turns import Turns, turn_of

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional

    from .run import Run

    Handler = Callable[[Dict[str, Any], Optional[Run], Dict[str, Any]], None]

THREAD_FILE = "codex-thread.json"
CLIENT_VERSION = "0.1.0"


class CodexBackend(ChildBackend):
    """harnessctl Backend over `$HARNESSCTL_CODEX_BIN app-server`."""

    RESUME_FILE = THREAD_FILE  # the conversation handle `fork` copies (kit/backend.py)
    KEY = "method"
    STOP_GRACE = 3.0  # app-server exits about 40 ms after EOF (measured)

    def __init__(self, host: Host, config: Config) -> None:
        super().__init__(host, config)
        self.thread_id: Optional[str] = self.load_resume(THREAD_FILE, "thread_id")
        # a file `harnessctl fork` made, before its first thread: the thread to fork
        self.fork_from = None if self.thread_id else self.load_fork(THREAD_FILE, "thread_id")
        self._reset()

    def _reset(self) -> None:
        """Forget everything about the current app-server process."""
        self.child: Any = None
        self.phase = "down"  # down | starting | ready
        self.calls = Calls(self.write_json)  # codex app-server leaves out the "jsonrpc" field
        self.version: Optional[str] = None  # codex's, from initialize's userAgent
        self.items = Items(self.host, self.activity, self.config, self._stderr)  # item notifications -> activity
        self.asking = Asking(self.host, self.calls, self.config, self.items.changes)  # server requests
        self.turns = Turns(self.host, self.calls, self.config, self.items, self.asking, self.on_message)
        self.handlers = self._handlers()

    def _handlers(self) -> Dict[str, Handler]:
        """Notifications, by method.  turn/diff/updated, item/plan/delta and
        everything else: `native` at debug (file.changed already carries each
        file's diff; a plan item's text is the model's proposal, its steps
        arrive as turn/plan/updated)."""
        items = self.items
        return {
            "turn/started": self.turns.on_turn_started,
            "turn/completed": self.turns.on_turn_completed,
            "item/started": self.turns.on_item_started,
            "item/completed": items.on_completed,
            "item/agentMessage/delta": items.on_text_delta,
            "item/reasoning/summaryTextDelta": items.on_reasoning_summary,
            "item/reasoning/textDelta": items.on_reasoning_raw,
            "item/commandExecution/outputDelta": items.on_tool_output,
            "item/fileChange/outputDelta": items.on_tool_output,  # deprecated: codex 0.171.0 no longer sends it
            "item/fileChange/patchUpdated": items.on_patch_updated,
            "turn/plan/updated": items.on_plan,
            "thread/tokenUsage/updated": items.on_token_usage,
            "warning": items.on_warning,
            "configWarning": items.on_warning,
            "deprecationNotice": items.on_warning,
            "guardianWarning": items.on_warning,
            "error": items.on_error,
            "serverRequest/resolved": self.asking.on_resolved,
        }

    # ------------------------------------------------------------------ start / stop

    def start(self) -> None:
        self._reset()
        argv = self.harness_argv(["app-server"])
        if argv is None or not self.spawn_harness(argv):
            return
        self.phase = "starting"
        params: Dict[str, Any] = {
            "clientInfo": {"name": "harnessctl", "title": "harnessctl", "version": CLIENT_VERSION},
        }
        self.calls.call("initialize", params, self._on_initialize)

    def _on_initialize(self, result: Optional[Dict[str, Any]], error: Any) -> None:
        if error is not None:
            self._start_failed("codex app-server refused to initialize: %s" % wire.rpc_error_text(error))
            return
        self.version = wire.version_of((result or {}).get("userAgent"))
        self.calls.notify("initialized")
        if self.thread_id:
            params = self._thread_params(threadId=self.thread_id, cwd=self.config.cwd, excludeTurns=True)
            self.calls.call("thread/resume", params, self._on_thread_resume)
        elif self.fork_from:
            self._thread_fork(self.fork_from)
        else:
            self._thread_start()

    def _thread_start(self) -> None:
        self.calls.call("thread/start", self._thread_params(cwd=self.config.cwd), self._on_thread_open)

    def _thread_params(self, **fields: Any) -> Dict[str, Any]:
        """thread/start, thread/resume and thread/fork params: the mode, `fields`,
        and the model when one was chosen."""
        params = dict(wire.thread_mode(self.config.mode), **fields)
        if self.config.model:
            params["model"] = self.config.model
        return params

    def _thread_fork(self, source: str) -> None:
        """A new thread holding the source thread's history (codex reads its
        rollout, whichever process ran it), in this file's cwd and mode."""
        params = self._thread_params(threadId=source, cwd=self.config.cwd, excludeTurns=True)

        def forked(result: Optional[Dict[str, Any]], error: Any) -> None:
            if error is not None:
                self._start_failed("codex cannot fork thread %s: %s" % (source, wire.rpc_error_text(error)))
            else:
                self._on_thread_open(result, None)

        self.calls.call("thread/fork", params, forked)

    def _on_thread_resume(self, result: Optional[Dict[str, Any]], error: Any) -> None:
        if error is not None and "no rollout found" in wire.rpc_error_text(error):
            # codex writes a thread's rollout only with its first turn: a thread that
            # never ran a turn (or a CODEX_HOME that lost it) cannot be resumed.
            self.host.log("diagnostic", "warning", message="codex has no history for thread %s; "
                          "starting a new thread" % self.thread_id)
            self.thread_id = None
            self._thread_start()
            return
        self._on_thread_open(result, error)

    def _on_thread_open(self, result: Optional[Dict[str, Any]], error: Any) -> None:
        if error is not None:
            self._start_failed("codex refused the session: %s" % wire.rpc_error_text(error))
            return
        thread_id = ((result or {}).get("thread") or {}).get("id")
        if not thread_id:
            self._start_failed("codex app-server answered without a thread id")
            return
        if thread_id != self.thread_id:
            self.thread_id = thread_id
            try:
                self.save_resume(THREAD_FILE, thread_id, "thread_id")
            except OSError as exc:  # the run can go on; only a later resume would miss it
                self.host.log("diagnostic", "warning", message="cannot keep the codex thread id: %s" % exc)
        thread = (result or {}).get("thread") or {}
        self.activity.session(thread_id, "codex", thread.get("cliVersion") or self.version,
                              (result or {}).get("model"), wire.policy_name((result or {}).get("approvalPolicy")),
                              wire.policy_name((result or {}).get("sandbox")))
        self.items.check_helpers(wire.policy_name((result or {}).get("sandbox")))
        self.phase = "ready"
        self.turns.open(thread_id)
        self.host.ready()
        self.turns.pump()

    def _start_failed(self, message: str) -> None:
        self.phase = "down"
        self.host.start_failed(message)  # the runtime fails the sends waiting for us
        if self.child is not None:
            self.child.kill()

    def on_exit(self, returncode: Optional[int]) -> None:
        """Forget the process.  The runtime itself fails the open runs, the send
        in flight and a start in progress, so nothing is reported twice."""
        busy = self.phase == "starting" or self.turns.busy()
        self._reset()
        self.host.log("diagnostic", "error" if busy else "info",
                      message="codex app-server exited (code %s)" % returncode)

    # ------------------------------------------------------------------ sends, cancel and replies

    def send(self, item: Input) -> None:
        self.turns.send(item)

    def interrupt(self) -> None:
        self.turns.interrupt()

    def answer(self, token: Any, answer: Any) -> None:
        self.asking.answer(token, answer)

    # ------------------------------------------------------------------ harness output

    def on_message(self, msg: Dict[str, Any]) -> None:
        """Responses by id, server requests, then notifications by method (_handlers)."""
        if "method" not in msg:
            if not self.calls.answered(msg):
                self.items.native(msg, None)
            return
        params = wire.as_object(msg.get("params"))
        turn_id = turn_of(params)
        if self.turns.hold(msg, turn_id):
            return
        if "id" in msg:
            run = self.turns.run(params.get("turnId"))
            self.asking.request(msg, params, run.run_id if run else None)
            return
        handler = self.handlers.get(str(msg.get("method")))
        if handler is None:
            self.items.native(msg, self.turns.run(turn_id))
        else:
            handler(params, self.turns.run(turn_id), msg)

    def _stderr(self) -> str:
        """The end of the app-server's stderr, where codex says why it made no helpers."""
        return self.child.stderr_tail() if self.child is not None else ""
