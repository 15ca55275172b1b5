"""The Codex adapter: drives `codex app-server` (JSON-RPC lines over stdio).

One app-server process per runtime, one codex thread per event file (its id is
kept in FILE.d/codex-thread.json so a new runtime resumes it; a file
`harnessctl fork` made starts with `thread/fork` of the thread it copied).  A
codex turn is a harnessctl run.  Every shape handled here was recorded from the real binary
(codex 0.171.0 against a loopback Responses API mock).

Attribution is only ever what codex confirmed: `turn/start`'s response names
the turn (run) an input starts, `turn/steer`'s response says the input joined
the active turn, and a `userMessage` item carrying our input id as `clientId`
says which turn consumed it when the two responses race a turn's end.

Why one module of this size: app-server's wire is big (threads, turns,
steering, items of a dozen kinds, three approval families, MCP elicitations)
and every handler here steers the same turn state; the pure shapes live in
wire.py and approvals.py.
"""

from __future__ import annotations

from harnessctl.kit import Calls, ChildBackend, Config, Host, Input

from . import approvals, wire

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Set

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
        self.error: Optional[Dict[str, Any]] = None  # the last `error` notification's TurnError
        self.steerable = True  # False once codex said its turn takes no steer (review / compact)
        self.final: Optional[Dict[str, Any]] = None  # turn/completed's turn, once seen
        self.steering = 0  # turn/steer requests in flight for this turn
        self.interrupting = False


class CodexBackend(ChildBackend):
    """harnessctl Backend over `$HARNESSCTL_CODEX_BIN app-server`."""

    RESUME_FILE = THREAD_FILE  # the conversation handle `fork` copies (kit/backend.py)
    KEY = "method"
    STOP_GRACE = 3.0  # app-server exits about 40 ms after EOF (measured)
    HANDLERS = {  # notifications, by method
        "turn/started": "_on_turn_started",
        "turn/completed": "_on_turn_completed",
        "item/started": "_on_item_started",
        "item/completed": "_on_item_completed",
        "item/agentMessage/delta": "_on_text_delta",
        "item/reasoning/summaryTextDelta": "_on_reasoning_summary",
        "item/reasoning/textDelta": "_on_reasoning_raw",
        "item/commandExecution/outputDelta": "_on_tool_output",
        "item/fileChange/outputDelta": "_on_tool_output",  # deprecated: codex 0.171.0 no longer sends it
        "item/fileChange/patchUpdated": "_on_patch_updated",
        "turn/plan/updated": "_on_plan",
        "thread/tokenUsage/updated": "_on_token_usage",
        "warning": "_on_warning",
        "configWarning": "_on_warning",
        "deprecationNotice": "_on_warning",
        "guardianWarning": "_on_warning",
        "error": "_on_error",
        "serverRequest/resolved": "_on_request_resolved",
    }
    # turn/diff/updated, item/plan/delta and everything else: `native` at debug
    # (file.changed already carries each file's diff; a plan item's text is the
    # model's proposal, its steps arrive as turn/plan/updated)

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
        self.runs: Dict[str, Run] = {}
        self.inflight: Optional[Input] = None  # the input whose turn/start or turn/steer awaits its response
        self.inflight_kind = ""
        self.buffered: List[Dict[str, Any]] = []  # notifications of a turn whose turn/start response is pending
        self.waiting: List[Input] = []  # sends held until the harness can take them
        self.cancel_pending = False  # cancel asked while the turn id was unknown
        self.drop_inflight = False  # cancel asked while a steer was in flight
        self.limbo: Set[str] = set()  # accepted steers codex has not yet shown in a turn
        self.file_changes: Dict[str, List[Dict[str, Any]]] = {}  # "turn:item" -> its latest changes
        self.requests: Dict[Any, Dict[str, Any]] = {}  # codex request id -> its kind, turn, replies
        self.version: Optional[str] = None  # codex's, from initialize's userAgent
        self.sandbox: Optional[str] = None  # the warning that codex cannot sandbox its commands, once said

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
            params = dict(wire.thread_mode(self.config.mode), threadId=self.thread_id, cwd=self.config.cwd,
                          excludeTurns=True)
            if self.config.model:
                params["model"] = self.config.model
            self.calls.call("thread/resume", params, self._on_thread_resume)
        elif self.fork_from:
            self._thread_fork(self.fork_from)
        else:
            self._thread_start()

    def _thread_start(self) -> None:
        params = dict(wire.thread_mode(self.config.mode), cwd=self.config.cwd)
        if self.config.model:
            params["model"] = self.config.model
        self.calls.call("thread/start", params, self._on_thread_open)

    def _thread_fork(self, source: str) -> None:
        """A new thread holding the source thread's history (codex reads its
        rollout, whichever process ran it), in this file's cwd and mode."""
        params = dict(wire.thread_mode(self.config.mode), threadId=source, cwd=self.config.cwd, excludeTurns=True)
        if self.config.model:
            params["model"] = self.config.model

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
        self._check_helpers(wire.policy_name((result or {}).get("sandbox")))
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
        """Deliver held sends one at a time, each once the previous one was
        confirmed; none while the open turn refuses steers (it ends first)."""
        while self.phase == "ready" and self.inflight is None and self.waiting:
            run = self._open_run()
            if run is None:
                self._turn_start(self.waiting.pop(0))
            elif run.steerable:
                self._turn_steer(run, self.waiting.pop(0))
            else:
                return

    def _open_run(self) -> Optional[Run]:
        for run in self.runs.values():
            if run.final is None:
                return run
        return None

    def _turn_start(self, item: Input) -> None:
        self.inflight, self.inflight_kind = item, "start"
        params = dict(wire.turn_mode(self.config.mode), threadId=self.thread_id,
                      input=wire.text_input(item.text), clientUserMessageId=item.input_id)
        if item.schema is not None:
            params["outputSchema"] = item.schema  # for this turn only: codex asks the model for json_schema output
        self.calls.call("turn/start", params, lambda r, e: self._on_turn_start(item, r, e))

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
        self.calls.call("turn/steer", params, lambda r, e: self._on_turn_steer(run, item, r, e))

    def _on_turn_steer(self, run: Run, item: Input, result: Optional[Dict[str, Any]], error: Any) -> None:
        self.inflight = None
        run.steering -= 1
        dropped, self.drop_inflight = self.drop_inflight, False
        if error is not None:
            refusal = wire.steer_refusal(error)
            self._finish_if_done(run)
            if refusal == "refused":
                self.host.send_failed(item.input_id, "codex refused the steer: %s" % wire.rpc_error_text(error),
                                      unavailable=True)
            elif dropped:
                self._drop(item)
            elif refusal == "not_steerable" and run.final is None:
                # a review or compact turn takes no steer: the input waits for its end, then starts a run
                run.steerable = False
                self.waiting.insert(0, item)
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

        self.calls.call("turn/interrupt", {"threadId": self.thread_id, "turnId": run.turn_id}, done)

    def answer(self, token: Any, answer: Any) -> None:
        entry = self.requests.pop(token, None)
        if entry is None:
            self.host.debug("codex: reply to request %s, which codex no longer waits for" % token)
            return
        if "fields" in entry:
            result = approvals.elicitation_answer(entry["fields"], answer)
        elif entry["kind"] == "question":
            result = approvals.question_answer(answer)
        else:  # the runtime let only the request's own options through
            result = entry["replies"].get(answer) or entry["replies"]["deny"]
        self.calls.respond(token, result)

    # ------------------------------------------------------------------ harness output

    def on_message(self, msg: Dict[str, Any]) -> None:
        """Responses by id, server requests, then notifications by method (HANDLERS)."""
        if "method" not in msg:
            if not self.calls.answered(msg):
                self._native(msg, None, "debug")
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

    def _native(self, msg: Dict[str, Any], run: Optional[Run], level: str = "debug", **fields: Any) -> None:
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
        error = error_class = None
        if status == "failed":
            failure = turn.get("error") if isinstance(turn.get("error"), dict) else run.error
            error = wire.error_text(failure) if failure else "codex ended the turn with status %s" % native
            error_class = wire.error_class((failure or {}).get("codexErrorInfo"))
            if error_class is None and run.error:
                error_class = wire.error_class(run.error.get("codexErrorInfo"))
        output = run.output
        if not output:
            for item in turn.get("items") or []:
                if isinstance(item, dict) and item.get("type") == "agentMessage":
                    output = item.get("text") or output
        for native_id in [k for k, v in self.requests.items() if v["turn_id"] == run.turn_id]:
            del self.requests[native_id]  # the runtime expires them with the result
        prefix = run.turn_id + ":"
        for key in [k for k in self.file_changes if k.startswith(prefix)]:
            del self.file_changes[key]  # items an interrupt cut never complete
        if error and self.sandbox:  # a failed run whose commands all failed says why
            error = "%s; %s" % (error, self.sandbox)
        self.host.result(run.run_id, run.input_ids, status, output or "", run.usage, None, error, error_class)

    def _on_item_started(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        item = _object(params.get("item"))
        if item.get("type") == "userMessage":
            client_id = item.get("clientId")
            if run is not None and client_id:
                run.client_ids.add(client_id)
                if client_id in self.limbo:
                    self.limbo.discard(client_id)
                    run.input_ids.append(client_id)
                    self.host.attributed(client_id, run.run_id)
            return
        tool_id = self._tool_id(params, item.get("id"))
        if item.get("type") == "fileChange":
            self.file_changes[tool_id] = [c for c in item.get("changes") or [] if isinstance(c, dict)]
        self._tool_started(run, tool_id, item)  # other items say all they have on completion

    def _tool_id(self, params: Dict[str, Any], item_id: Any) -> str:
        # codex item ids come from the model and are only unique within a turn
        return "%s:%s" % (params.get("turnId"), item_id)

    def _tool_started(self, run: Optional[Run], tool_id: str, item: Dict[str, Any]) -> bool:
        """tool.started for a tool-like item (once); False for any other item."""
        info = wire.tool_info(item)
        if info is None:
            return False
        if not self.activity.is_open(tool_id):
            self.activity.tool_started(run.run_id if run else None, tool_id, *info)
        return True

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
        tool_id = self._tool_id(params, item.get("id"))
        if not self._tool_started(run, tool_id, item):  # completion-only items get their start too
            self._native(msg, run)
            return
        run_id = run.run_id if run else None
        status = wire.tool_status(item)
        if kind == "fileChange":
            remembered = self.file_changes.pop(tool_id, [])
            changes = [c for c in item.get("changes") or [] if isinstance(c, dict)] or remembered
            if status == "completed":
                for change in changes:
                    mapped = wire.file_change(change)
                    if mapped is not None:
                        path, how, move_path, diff = mapped
                        self.activity.file_changed(run_id, tool_id, path, how, diff, move_path)
        self.activity.tool_completed(run_id, tool_id, status, _int(item.get("exitCode")),
                                     wire.tool_output(item), _int(item.get("durationMs")))
        failure = wire.sandbox_failure(item)
        if failure:
            self._sandbox_failed(run.run_id if run else None, failure)

    def _check_helpers(self, sandbox: Optional[str]) -> None:
        """Warn at once when codex said at start that it made no helpers, bubblewrap
        is on the harness's PATH and the thread sandboxes its commands: codex
        then runs each through `bwrap`, which cannot find codex-linux-sandbox, and
        codex sends a failed command only now and then (0.171.0 as recorded:
        often no item at all), so the failure cannot be waited for."""
        import os
        import shutil  # only here: it would cost every runtime start 1.5 ms

        if sandbox != "dangerFullAccess" and wire.helpers_refused(self._stderr()) \
                and shutil.which("bwrap", path=self.config.env.get("PATH", os.defpath)):
            self._sandbox_failed(None, None)

    def _sandbox_failed(self, run_id: Optional[str], failure: Optional[str]) -> None:
        """Say once per app-server, as a warning (a note of `send --wait`), that
        codex cannot sandbox its commands: codex itself hands bubblewrap's
        complaint only to the model, as each command's output, and its reason
        only to its stderr (issue 47)."""
        if self.sandbox is None:
            self.sandbox = wire.sandbox_warning(failure, wire.helpers_refused(self._stderr()))
            self.activity.cannot_sandbox(run_id, self.sandbox)

    def _stderr(self) -> str:
        """The end of the app-server's stderr, where codex says why it made no helpers."""
        return self.child.stderr_tail() if self.child is not None else ""

    def _message_id(self, run: Run, item: Dict[str, Any]) -> str:
        # codex item ids come from the model and are only unique within a turn
        return "%s:%s" % (run.turn_id, item.get("id"))

    def _on_text_delta(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        self.activity.text(run.run_id if run else None, "%s:%s" % (params.get("turnId"), params.get("itemId")),
                           str(params.get("delta") or ""))

    def _on_reasoning_summary(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        self.activity.reasoning(run.run_id if run else None, str(params.get("delta") or ""), "summary")

    def _on_reasoning_raw(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        self.activity.reasoning(run.run_id if run else None, str(params.get("delta") or ""), "raw")

    def _on_tool_output(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        tool_id, delta = self._tool_id(params, params.get("itemId")), str(params.get("delta") or "")
        self.activity.tool_output(run.run_id if run else None, tool_id, delta)

    def _on_patch_updated(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        """The patch of a file change as it now stands: what an approval shows and
        what file.changed reports if item/completed carries no changes."""
        changes = params.get("changes")
        if isinstance(changes, list):
            self.file_changes[self._tool_id(params, params.get("itemId"))] = \
                [c for c in changes if isinstance(c, dict)]
        self._native(msg, run)

    def _on_plan(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        explanation = params.get("explanation")
        self.activity.plan(run.run_id if run else None, wire.plan_entries(params.get("plan")),
                           str(explanation) if explanation else None)

    def _on_token_usage(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        usage = _object(params.get("tokenUsage"))
        last = usage.get("last")
        # after thread/resume codex repeats the previous turn's usage: only count our open turns
        if run is not None and run.final is None and isinstance(last, dict):
            run.usage = wire.add_usage(run.usage, last)
            self.activity.usage(run.run_id, **wire.usage_fields(run.usage, usage))
        else:
            self._native(msg, run)

    def _on_warning(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        method = str(msg.get("method"))
        self.activity.warning(run.run_id if run else None, wire.warning_text(method, params), method)

    def _on_error(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        """A retry is a warning; the final error is kept for the result (its
        turn/completed usually repeats it)."""
        error = params.get("error")
        if params.get("willRetry"):
            self.activity.warning(run.run_id if run else None, wire.error_text(error), "error")
            return
        if run is not None and isinstance(error, dict):
            run.error = error
        self._native(msg, run)

    def _on_request_resolved(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        native_id = params.get("requestId")
        if self.requests.pop(native_id, None) is not None:  # nobody answered: codex withdrew it
            self.host.request_closed(native_id)

    # -- server requests

    def _server_request(self, msg: Dict[str, Any], params: Dict[str, Any]) -> None:
        method, native_id = msg.get("method"), msg.get("id")
        turn_id = params.get("turnId")
        run_id = self._run_id(turn_id)
        entry: Dict[str, Any] = {"turn_id": turn_id}
        info: Optional[Dict[str, Any]]
        if method == "item/commandExecution/requestApproval":
            info = approvals.command_request(params)
        elif method == "item/fileChange/requestApproval":
            changes = self.file_changes.get(self._tool_id(params, params.get("itemId")))
            info = approvals.file_change_request(params, changes)
            if self._edit_allows(info["details"]):
                self.host.debug("codex: file changes inside the cwd accepted (mode edit): %s" % info["message"])
                self.calls.respond(native_id, {"decision": "accept"})
                return
        elif method == "item/permissions/requestApproval":
            info = approvals.permissions_request(params)
        elif method == "item/tool/requestUserInput":
            info = dict(approvals.question_request(params), kind="question", options=None)
        elif method == "mcpServer/elicitation/request":
            info = approvals.elicitation_request(params)
            if info is None:  # e.g. a device-signed user verification: nobody here can sign it
                self.host.log("diagnostic", "warning", run_id=run_id,
                              message="codex relayed an MCP %s request harnessctl cannot answer; declined"
                              % params.get("mode"))
                self.calls.respond(native_id, {"action": "decline", "content": None})
                return
        else:
            self.host.log("diagnostic", "warning", run_id=run_id,
                          message="codex asked %s, which harnessctl does not handle; refused" % method)
            self.calls.refuse(native_id, -32601, "harnessctl does not handle %s" % method)
            return
        kind = info.get("kind", "permission")
        entry.update(kind=kind, replies=info.get("replies") or {})
        if "fields" in info:
            entry["fields"] = info["fields"]
        self.host.request(run_id, kind, info["message"], info.get("options"), info["details"], token=native_id)
        self.requests[native_id] = entry

    def _edit_allows(self, details: Dict[str, Any]) -> bool:
        """Whether mode `edit` lets a file change through without asking: every
        path it touches lies inside the bound cwd, and none is the event file or
        its sidecar (harnessctl's record and binding still ask).  codex itself
        has no mode that applies edits and asks for commands, so `edit` runs as
        `untrusted` (wire.MODES), which asks for every patch; the rest is
        answered here (Config.edit_allows)."""
        return self.config.edit_allows(details)


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _object(value: Any) -> Dict[str, Any]:
    """A JSON object from the wire, or {} for anything else."""
    return value if isinstance(value, dict) else {}
