"""The Codex adapter: drives `codex app-server` (JSON-RPC lines over stdio).

One app-server process per runtime, one codex thread per event file (its id is
kept in FILE.d/codex-thread.json so a new runtime resumes it).  A codex turn is
a harnessctl run.  Every shape handled here was recorded from the real binary
(codex 0.171.0 against a loopback Responses API mock).

Attribution is only ever what codex confirmed: `turn/start`'s response names
the turn (run) an input starts, `turn/steer`'s response says the input joined
the active turn, and a `userMessage` item carrying our input id as `clientId`
says which turn consumed it when the two responses race a turn's end.
"""

from __future__ import annotations

import json

from harnessctl.backend import Config, Host, Input
from harnessctl.childbackend import ChildBackend

from . import wire

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Set

    Callback = Callable[[Optional[Dict[str, Any]], Optional[Any]], None]

THREAD_FILE = "codex-thread.json"
CLIENT_VERSION = "0.1.0"


class Run:
    """One codex turn = one harnessctl run."""

    def __init__(self, run_id: str, turn_id: str, input_ids: List[str]) -> None:
        self.run_id = run_id
        self.turn_id = turn_id
        self.input_ids = list(input_ids)
        self.usage: Optional[Dict[str, int]] = None
        self.output = ""
        self.client_ids: Set[str] = set()  # our input ids codex showed as userMessage items
        self.final: Optional[Dict[str, Any]] = None  # turn/completed's turn, once seen
        self.steering = 0  # turn/steer requests in flight for this turn
        self.interrupting = False


class CodexBackend(ChildBackend):
    """harnessctl Backend over `$HARNESSCTL_CODEX_BIN app-server`."""

    KEY = "method"
    STOP_GRACE = 3.0  # app-server exits about 40 ms after EOF (measured)
    HANDLERS = {  # notifications, by method
        "turn/started": "_on_turn_started",
        "turn/completed": "_on_turn_completed",
        "item/started": "_on_item_started",
        "item/completed": "_on_item_completed",
        "item/agentMessage/delta": "_on_text_delta",
        "item/reasoning/summaryTextDelta": "_on_reasoning_delta",
        "item/reasoning/textDelta": "_on_reasoning_delta",
        "item/commandExecution/outputDelta": "_on_tool_output",
        "item/fileChange/outputDelta": "_on_tool_output",
        "thread/tokenUsage/updated": "_on_token_usage",
        "error": "_on_error",
        "serverRequest/resolved": "_on_request_resolved",
    }

    def __init__(self, host: Host, config: Config) -> None:
        super().__init__(host, config)
        self.thread_id: Optional[str] = self._load_thread_id()
        self._reset()

    def _reset(self) -> None:
        """Forget everything about the current app-server process."""
        self.child: Any = None
        self.phase = "down"  # down | starting | ready
        self.next_id = 1
        self.pending: Dict[Any, Callback] = {}
        self.runs: Dict[str, Run] = {}
        self.inflight: Optional[Input] = None  # the input whose turn/start or turn/steer awaits its response
        self.inflight_kind = ""
        self.buffered: List[Dict[str, Any]] = []  # notifications of a turn whose turn/start response is pending
        self.waiting: List[Input] = []  # sends held until the harness can take them
        self.cancel_pending = False  # cancel asked while the turn id was unknown
        self.drop_inflight = False  # cancel asked while a steer was in flight
        self.limbo: Set[str] = set()  # accepted steers codex has not yet shown in a turn
        self.file_changes: Dict[str, List[Dict[str, Any]]] = {}
        self.requests: Dict[Any, Dict[str, Any]] = {}  # codex request id -> its kind and turn

    # ------------------------------------------------------------------ start / stop

    def start(self) -> None:
        self._reset()
        argv = self.harness_argv(["app-server"])
        if argv is None or not self.spawn_harness(argv):
            return
        self.phase = "starting"
        params = {
            "clientInfo": {"name": "harnessctl", "title": "harnessctl", "version": CLIENT_VERSION},
        }
        self._call("initialize", params, self._on_initialize)

    def _on_initialize(self, result: Optional[Dict[str, Any]], error: Any) -> None:
        if error is not None:
            self._start_failed("codex app-server refused to initialize: %s" % wire.rpc_error_text(error))
            return
        self._notify("initialized")
        if self.thread_id:
            params = {"threadId": self.thread_id, "cwd": self.config.cwd, "excludeTurns": True}
            if self.config.model:
                params["model"] = self.config.model
            self._call("thread/resume", params, self._on_thread_resume)
        else:
            self._thread_start()

    def _thread_start(self) -> None:
        params: Dict[str, Any] = {"cwd": self.config.cwd}
        if self.config.model:
            params["model"] = self.config.model
        self._call("thread/start", params, self._on_thread_open)

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
                self._save_thread_id(thread_id)
            except OSError as exc:  # the run can go on; only a later resume would miss it
                self.host.log("diagnostic", "warning", message="cannot keep the codex thread id: %s" % exc)
        self.phase = "ready"
        self.host.ready()
        self._pump()

    def _start_failed(self, message: str) -> None:
        self.phase = "down"
        self.host.start_failed(message)  # the runtime fails the sends waiting for us
        if self.child is not None:
            self.child.kill()

    def on_exit(self, returncode: Optional[int]) -> None:
        """Forget the process.  The runtime itself fails the open runs, the send
        in flight and a start in progress, so nothing is reported twice."""
        busy = self.phase == "starting" or self.inflight is not None or self._open_run() is not None
        self._reset()
        self.host.log("diagnostic", "error" if busy else "info",
                      message="codex app-server exited (code %s)" % returncode)

    # ------------------------------------------------------------------ sends

    def send(self, item: Input) -> None:
        self.waiting.append(item)
        self._pump()

    def _pump(self) -> None:
        """Deliver held sends one at a time, each once the previous one was confirmed."""
        while self.phase == "ready" and self.inflight is None and self.waiting:
            self._deliver(self.waiting.pop(0))

    def _deliver(self, item: Input) -> None:
        run = self._open_run()
        if run is None:
            self._turn_start(item)
        else:
            self._turn_steer(run, item)

    def _open_run(self) -> Optional[Run]:
        for run in self.runs.values():
            if run.final is None:
                return run
        return None

    def _turn_start(self, item: Input) -> None:
        self.inflight, self.inflight_kind = item, "start"
        params = {"threadId": self.thread_id, "input": wire.text_input(item.text),
                  "clientUserMessageId": item.input_id}
        self._call("turn/start", params, lambda r, e: self._on_turn_start(item, r, e))

    def _on_turn_start(self, item: Input, result: Optional[Dict[str, Any]], error: Any) -> None:
        self.inflight = None
        turn_id = ((result or {}).get("turn") or {}).get("id") if error is None else None
        if not turn_id:
            text = wire.rpc_error_text(error) if error is not None else "no turn id in the answer"
            self.cancel_pending = False
            self.host.send_failed(item.input_id, "codex refused the input: %s" % text, unavailable=True)
        else:
            run = self.runs.get(turn_id)
            if run is not None and run.final is None:
                # codex folds a turn/start into the active turn (as recorded)
                run.input_ids.append(item.input_id)
                self.host.accepted(item.input_id, "steer", run.run_id)
            else:
                run = Run(self.host.new_run(), turn_id, [item.input_id])
                self.runs[turn_id] = run
                self.host.accepted(item.input_id, "start", run.run_id)
            if self.cancel_pending:
                self.cancel_pending = False
                self._interrupt_run(run)
        self._replay_buffered()
        self._pump()

    def _turn_steer(self, run: Run, item: Input) -> None:
        self.inflight, self.inflight_kind = item, "steer"
        run.steering += 1
        params = {"threadId": self.thread_id, "expectedTurnId": run.turn_id,
                  "input": wire.text_input(item.text), "clientUserMessageId": item.input_id}
        self._call("turn/steer", params, lambda r, e: self._on_turn_steer(run, item, r, e))

    def _on_turn_steer(self, run: Run, item: Input, result: Optional[Dict[str, Any]], error: Any) -> None:
        self.inflight = None
        run.steering -= 1
        dropped, self.drop_inflight = self.drop_inflight, False
        if error is not None:
            text = wire.rpc_error_text(error)
            self._finish_if_done(run)
            if not any(marker in text for marker in wire.STEER_RACE_ERRORS):
                self.host.send_failed(item.input_id, "codex refused the steer: %s" % text, unavailable=True)
            elif dropped:
                self._drop(item)
            else:
                self._turn_start(item)  # the turn ended first: the input starts a new run
                return
        elif run.final is None or item.input_id in run.client_ids:
            run.input_ids.append(item.input_id)
            self.host.accepted(item.input_id, "steer", run.run_id)
            self._finish_if_done(run)
        else:
            # codex took it but the turn ended without it: it will show up in a later turn
            self.limbo.add(item.input_id)
            self.host.accepted(item.input_id, "steer", None)
            self._finish_if_done(run)
        self._pump()

    def _drop(self, item: Input) -> None:
        """A cancel dropped an input the harness never ran: its own cancelled
        result, with no run (the core's convention for inputs no run consumed)."""
        self.host.accepted(item.input_id, "queued", None)
        self.host.result(None, [item.input_id], "cancelled")

    # ------------------------------------------------------------------ cancel and replies

    def interrupt(self) -> None:
        for item in self.waiting:
            self._drop(item)
        self.waiting = []
        if self.inflight is not None:
            if self.inflight_kind == "start":
                self.cancel_pending = True  # interrupt as soon as turn/start names the turn
            else:
                self.drop_inflight = True
        run = self._open_run()
        if run is not None:
            self._interrupt_run(run)
        elif self.limbo:
            # steers codex took but has not run: nothing to interrupt, so they end here
            held = sorted(self.limbo)
            self.limbo.clear()
            self.host.result(None, held, "cancelled")

    def _interrupt_run(self, run: Run) -> None:
        if run.interrupting or run.final is not None:
            return
        run.interrupting = True

        def done(result: Optional[Dict[str, Any]], error: Any) -> None:
            run.interrupting = False
            if error is not None:  # e.g. "no active turn to interrupt": turn/completed follows
                self.host.log("diagnostic", "info", run_id=run.run_id,
                              message="turn/interrupt: %s" % wire.rpc_error_text(error))

        self._call("turn/interrupt", {"threadId": self.thread_id, "turnId": run.turn_id}, done)

    def answer(self, token: Any, answer: Any) -> None:
        entry = self.requests.pop(token, None)
        if entry is None:
            self.host.debug("codex: reply to request %s, which codex no longer waits for" % token)
            return
        if entry["kind"] == "question":
            result = wire.question_answer(answer)
        else:
            result = {"decision": wire.DECISIONS.get(answer, "decline")}
        self.write_json({"id": token, "result": result})

    # ------------------------------------------------------------------ harness output

    def on_message(self, msg: Dict[str, Any]) -> None:
        """Responses by id, server requests, then notifications by method (HANDLERS)."""
        if "method" not in msg:
            callback = self.pending.pop(msg.get("id"), None)
            if callback is None:
                self._native(msg, None, "debug")
            else:
                callback(msg.get("result"), msg.get("error") if "error" in msg else None)
            return
        params = _object(msg.get("params"))
        turn_id = self._turn_of(params)
        if turn_id and turn_id not in self.runs and self.inflight is not None and self.inflight_kind == "start":
            self.buffered.append(msg)  # its turn/start response (naming the run) comes first
        elif "id" in msg:
            self._server_request(msg, params)
        else:
            handler = self.HANDLERS.get(str(msg.get("method")))
            run = self.runs.get(turn_id) if turn_id else None
            if handler is None:
                self._native(msg, run)
            else:
                getattr(self, handler)(params, run, msg)

    def _turn_of(self, params: Dict[str, Any]) -> Optional[str]:
        turn = params.get("turn")
        return params.get("turnId") or (turn.get("id") if isinstance(turn, dict) else None)

    def _native(self, msg: Dict[str, Any], run: Optional[Run], level: str = "info", **fields: Any) -> None:
        """The wire message itself, as a droppable `native` log line."""
        self.host.log("native", level, run_id=run.run_id if run else None,
                      method=msg.get("method"), data=msg, **fields)

    def _replay_buffered(self) -> None:
        buffered, self.buffered = self.buffered, []
        for msg in buffered:
            self.on_message(msg)

    def _run_id(self, turn_id: Optional[str]) -> Optional[str]:
        run = self.runs.get(turn_id) if turn_id else None
        return run.run_id if run else None

    # -- notifications (each gets params, the run of its turn or None, the raw message)

    def _on_turn_started(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        turn_id = self._turn_of(params)
        if run is None and turn_id:
            # a turn codex started on its own (e.g. with a steer that missed its turn)
            run = Run(self.host.new_run(), turn_id, [])
            self.runs[turn_id] = run
        self._native(msg, run)

    def _on_turn_completed(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        if run is None:
            self._native(msg, None)
            return
        turn = params.get("turn")
        run.final = turn if isinstance(turn, dict) else {}
        self._finish_if_done(run)
        self._pump()

    def _finish_if_done(self, run: Run) -> None:
        """Write the run's result once codex completed the turn and no steer
        towards it still waits for its answer (so the result lists that input)."""
        if run.final is None or run.steering or run.turn_id not in self.runs:
            return
        del self.runs[run.turn_id]
        turn = run.final
        native: Any = turn.get("status")  # any JSON value: one we do not know means failed
        status = {"completed": "completed", "interrupted": "cancelled"}.get(native, "failed")
        error = None
        if status == "failed":
            error = wire.error_text(turn.get("error")) if turn.get("error") else \
                "codex ended the turn with status %s" % native
        output = run.output
        if not output:
            for item in turn.get("items") or []:
                if isinstance(item, dict) and item.get("type") == "agentMessage":
                    output = item.get("text") or output
        for native_id in [k for k, v in self.requests.items() if v["turn_id"] == run.turn_id]:
            del self.requests[native_id]  # the runtime expires them with the result
        if not self.runs:
            self.file_changes.clear()  # items an interrupt cut never complete
        self.host.result(run.run_id, run.input_ids, status, output or "", run.usage, None, error)

    def _on_item_started(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        item = _object(params.get("item"))
        run_id = run.run_id if run else None
        if item.get("type") == "userMessage":
            client_id = item.get("clientId")
            if run is not None and client_id:
                run.client_ids.add(client_id)
                if client_id in self.limbo:
                    self.limbo.discard(client_id)
                    run.input_ids.append(client_id)
                    self.host.attributed(client_id, run.run_id)
            return
        if item.get("type") == "fileChange":
            self.file_changes[str(item.get("id"))] = item.get("changes") or []
        fields = wire.tool_started(item)
        if fields is not None:
            self.host.log("tool.started", "info", run_id=run_id, **fields)

    def _on_item_completed(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        item = _object(params.get("item"))
        kind = item.get("type")
        if kind == "agentMessage":
            text = item.get("text") or ""
            if run is None:
                self._native(msg, None)
                return
            run.output = text
            self.host.message(run.run_id, self._message_id(run, item), text)
            return
        if kind == "fileChange":
            self.file_changes.pop(str(item.get("id")), None)
        fields = wire.tool_completed(item)
        if fields is not None:
            self.host.log("tool.completed", "info", run_id=run.run_id if run else None, **fields)

    def _message_id(self, run: Run, item: Dict[str, Any]) -> str:
        # codex item ids come from the model and are only unique within a turn
        return "%s:%s" % (run.turn_id, item.get("id"))

    def _on_text_delta(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        self.host.log("text.delta", "info", run_id=run.run_id if run else None,
                      message_id="%s:%s" % (params.get("turnId"), params.get("itemId")),
                      delta=params.get("delta", ""))

    def _on_reasoning_delta(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        self.host.log("reasoning.delta", "info", run_id=run.run_id if run else None,
                      item_id=params.get("itemId"), delta=params.get("delta", ""))

    def _on_tool_output(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        self.host.log("tool.output", "info", run_id=run.run_id if run else None,
                      item_id=params.get("itemId"), delta=params.get("delta", ""))

    def _on_token_usage(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        usage = _object(params.get("tokenUsage"))
        last = usage.get("last")
        # after thread/resume codex repeats the previous turn's usage: only count our open turns
        if run is not None and run.final is None and isinstance(last, dict):
            run.usage = wire.add_usage(run.usage, last)

    def _on_error(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        retry = bool(params.get("willRetry"))
        self._native(msg, run, "warning" if retry else "error",
                     error=wire.error_text(params.get("error")), will_retry=retry)

    def _on_request_resolved(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        native_id = params.get("requestId")
        if self.requests.pop(native_id, None) is not None:  # nobody answered: codex withdrew it
            self.host.request_closed(native_id)

    # -- server requests

    def _server_request(self, msg: Dict[str, Any], params: Dict[str, Any]) -> None:
        method, native_id = msg.get("method"), msg.get("id")
        turn_id = params.get("turnId")
        run_id = self._run_id(turn_id)
        if method == "item/commandExecution/requestApproval":
            info, kind, options = wire.command_request(params), "permission", wire.PERMISSION_OPTIONS
        elif method == "item/fileChange/requestApproval":
            changes = self.file_changes.get(str(params.get("itemId")))
            info, kind, options = wire.file_change_request(params, changes), "permission", wire.PERMISSION_OPTIONS
        elif method == "item/tool/requestUserInput":
            info, kind, options = wire.question_request(params), "question", None
        else:
            self.host.log("diagnostic", "warning", run_id=run_id,
                          message="codex asked %s, which harnessctl does not handle; refused" % method)
            self.write_json({"id": native_id, "error": {"code": -32601,
                                                    "message": "harnessctl does not handle %s" % method}})
            return
        self.host.request(run_id, kind, info["message"], options, info["details"], token=native_id)
        self.requests[native_id] = {"kind": kind, "turn_id": turn_id}

    # ------------------------------------------------------------------ JSON-RPC plumbing

    def _call(self, method: str, params: Dict[str, Any], callback: Callback) -> None:
        request_id, self.next_id = self.next_id, self.next_id + 1
        self.pending[request_id] = callback
        self.write_json({"id": request_id, "method": method, "params": params})

    def _notify(self, method: str) -> None:
        self.write_json({"method": method})

    # ------------------------------------------------------------------ sidecar

    def _load_thread_id(self) -> Optional[str]:
        try:
            value = json.loads(self.load_resume(THREAD_FILE) or "{}").get("thread_id")
        except (ValueError, AttributeError):
            return None
        return value if isinstance(value, str) and value else None

    def _save_thread_id(self, thread_id: str) -> None:
        self.save_resume(THREAD_FILE, json.dumps({"thread_id": thread_id}))


def _object(value: Any) -> Dict[str, Any]:
    """A JSON object from the wire, or {} for anything else."""
    return value if isinstance(value, dict) else {}
