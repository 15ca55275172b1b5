"""The ACP adapter: any Agent Client Protocol agent over its stdio (JSON-RPC
2.0, one JSON object a line, protocol version 1).

One agent process per runtime, one ACP session per event file (its id is kept
in FILE.d/acp-session.json, so a new runtime resumes it).  A `session/prompt`
is a harnessctl run.  What each decision rests on was recorded from
codex-acp 2.6.0, claude-agent-acp 0.101.0 and gemini-cli 0.61.0:

* ACP gives no receipt for `session/prompt`: the prompt written to a live
  agent is the input's `accepted` (delivery start); its response ends the run;
* a busy send is `_session/steering` when the agent advertises
  `_meta.steering.supported`: `injected` means the running turn took it
  (accepted steer, that run); we ask with idleBehavior `promptRequired`, so a
  turn that ended first is answered `promptRequired` and the input starts the
  next run with `session/prompt` instead (no turn ever runs without a
  response to end it);
* an agent without steering must never get a second `session/prompt` while
  one runs (gemini cancels the running one): the core holds the input
  (harnessctl/kit/holding.py: accepted queued, no run yet) and starts the next
  run with it;
* `--mode` is the preset's own mode id (manifest `agents.<preset>.modes`),
  set by `session/set_mode` at every start, a resumed session's included;
  it wins over HARNESSCTL_ACP_MODE.  An agent that does not
  offer that mode (claude-agent-acp's bypassPermissions as root, gemini's
  autoEdit/yolo in an untrusted folder) fails the start with its reason;
* a file `harnessctl fork` made opens its first session by `session/fork`
  of the copied session id, in its own cwd (a new session id, the history
  of the source; both agents answer like session/new, without `models`),
  when the agent's init offers sessionCapabilities.fork; else its start
  fails saying so;
* `session/cancel` is a notification; the client must itself answer every
  pending permission request `cancelled` (gemini waits for that), while
  codex-acp and claude-agent-acp withdraw theirs with `$/cancel_request`;
* an agent that cannot reach its model may say nothing over ACP for minutes
  (claude-agent-acp retries for about 3, codex-acp "waits for network" for
  longer): a run with no progress QUIET seconds after its prompt gets a
  `warning` with the agent's own words (a waiting send prints it), and one
  still without progress after HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT is
  cancelled and ends `failed` with the reason.

Why one module of this size: ACP has no receipts and three ways to take a
busy send (steering, promptRequired, held), each resting on the same session
and prompt state; the pure mappings live in wire.py, the session updates in
updates.py.
"""

from __future__ import annotations

import json

from harnessctl.kit import Calls, ChildBackend, Config, HeldInputs, Host, Input

from . import asking, wire
from .updates import Run, Tool, Updates

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

SESSION_FILE = "acp-session.json"
PROTOCOL_VERSION = 1
CLIENT_INFO = {"name": "harnessctl", "title": "harnessctl", "version": "0.1.0"}
MODE_ENV = "HARNESSCTL_ACP_MODE"
PERMISSION_CANCELLED = {"outcome": {"outcome": "cancelled"}}  # only when harnessctl cancels, or no reject option
QUIET = 10.0  # seconds after session/prompt with no progress: a `warning` says so (docs/ACP.md)
NO_PROGRESS_ENV = "HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT"
NO_PROGRESS = 300.0  # seconds with no progress after which a run is given up: cancelled, `failed`


class AcpBackend(ChildBackend):
    """harnessctl Backend over one ACP agent process."""

    RESUME_FILE = SESSION_FILE  # the conversation handle `fork` copies (kit/backend.py)
    KEY = "method"
    STOP_GRACE = 5.0  # codex-acp exits 2.0 s after its stdin closes (its app-server supervisor)

    def __init__(self, host: Host, config: Config) -> None:
        super().__init__(host, config)
        self.session_id: Optional[str] = self.load_resume(SESSION_FILE, "session_id")
        # a file `harnessctl fork` made, before its first session: the session to fork
        self.fork_from = None if self.session_id else self.load_fork(SESSION_FILE, "session_id")
        self.label = config.agent or "agent"
        self.short = self.label  # the preset's name, else the command's: where a message must be short
        self.no_resume: Optional[str] = None  # why the agent's preset does not try to resume
        self._reset()

    def _reset(self) -> None:
        """Forget everything about the current agent process."""
        self.child: Any = None
        self.phase = "down"  # down | starting | ready
        self.calls = Calls(self.write_json, "2.0")
        self.init: Dict[str, Any] = {}  # the initialize result
        self.steering = False
        self.run: Optional[Run] = None  # the run whose session/prompt is open
        self.held = HeldInputs(self.host, self._start_run)  # an agent without steering: they start the next run
        self.inflight: Optional[Input] = None  # the input whose _session/steering awaits its answer
        self.drop_inflight = False  # cancel asked while that steer was in flight
        self.requests: Dict[Any, Dict[str, Any]] = {}  # agent request id -> what answering it needs
        self.updates = Updates(self.host, self.activity, self.config.cwd)  # session/update -> activity
        self.replaying = False  # session/load replays history as session/update: not new activity
        self.start_error: Optional[str] = None

    @property
    def name(self) -> str:
        return "ACP agent %s" % self.label

    # ------------------------------------------------------------------ start

    def start(self) -> None:
        self._reset()
        agent = self.config.agent
        if not agent:
            self.host.start_failed("no ACP agent: pass --agent NAME_OR_COMMAND (presets: %s) or set "
                                   "HARNESSCTL_ACP_AGENT" % ", ".join(sorted(self._presets())))
            return
        presets = self._presets()
        env = self.config.env
        try:
            argv, self.label, variable = wire.agent_command(agent, presets, env)
            self.short = agent if agent in presets or not argv else argv[0].rsplit("/", 1)[-1]
            self.no_resume = wire.as_object(wire.as_object(presets.get(agent)).get("degraded")).get("resume")
            extra = self.config.harness.get("args_env")
            import shlex

            argv += shlex.split(env.get(extra, "")) if extra else []
        except ValueError as exc:
            self.host.start_failed("the ACP agent command is not valid shell syntax: %s" % exc)
            return
        if not argv:
            self.host.start_failed("the ACP agent command is empty%s" % (" (%s)" % variable if variable else ""))
            return
        if not self.spawn(argv, variable, wire.install_hint(agent, presets)):
            return
        self.phase = "starting"  # the runtime's start timeout covers an agent that never gets ready
        capabilities: Dict[str, Any] = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": False,
                                        "session": {"notices": {}, "compaction": {}}}
        capabilities["elicitation"] = asking.CAPABILITY  # forms and URLs become questions
        params = {"protocolVersion": PROTOCOL_VERSION, "clientInfo": CLIENT_INFO, "clientCapabilities": capabilities}
        self.calls.call("initialize", params, self._on_initialize)

    def _presets(self) -> Dict[str, Any]:
        return self.config.agents

    def _on_initialize(self, result: Optional[Dict[str, Any]], error: Any) -> None:
        if error is not None:
            self._start_failed("the ACP agent %s refused to initialize: %s" % (self.label, wire.rpc_error_text(error)))
            return
        self.init = wire.as_object(result)
        version = self.init.get("protocolVersion")
        if version != PROTOCOL_VERSION:
            self._start_failed("the ACP agent %s speaks protocol version %s; harnessctl speaks %d"
                               % (self.label, version, PROTOCOL_VERSION))
            return
        self.steering = wire.steering_supported(self.init)
        if self.fork_from and not self.session_id:
            self._fork_session(self.fork_from)
        elif self.session_id and self.no_resume:  # the same every time, even when the agent's load works by chance
            self._open_session([], ["not tried: %s" % self.no_resume])
        else:
            self._open_session(wire.resume_method(self.init) if self.session_id else [])

    def _open_session(self, methods: List[str], failures: Optional[List[str]] = None) -> None:
        """Reopen the stored session by the first method left, else a new one."""
        failures = failures or []
        params: Dict[str, Any] = {"cwd": self.config.cwd, "mcpServers": []}
        if methods:
            method = methods[0]
            self.replaying = method == "session/load"
            self.calls.call(method, dict(params, sessionId=self.session_id),
                            lambda r, e: self._on_reopened(methods, failures, r, e))
            return
        if self.session_id:
            reason = "; ".join(failures) or "the agent offers neither session/resume nor session/load"
            self.host.log("diagnostic", "warning", message="the ACP agent %s cannot resume session %s (%s): "
                          "a new session starts, without the earlier conversation" % (self.label, self.session_id,
                                                                                      reason))
            self.session_id = None
        self.calls.call("session/new", params, self._on_session_new)

    def _fork_session(self, source: str) -> None:
        """A new session holding the source session's history, in this file's cwd."""
        if not wire.can_fork(self.init):
            self._start_failed("the ACP agent %s cannot fork session %s: it does not offer session/fork "
                               "(no sessionCapabilities.fork in its initialize answer)" % (self.label, source))
            return

        def forked(result: Optional[Dict[str, Any]], error: Any) -> None:
            if error is not None:
                self._start_failed("the ACP agent %s cannot fork session %s: %s" % (self.label, source,
                                                                                 wire.rpc_error_text(error)))
            else:
                self._on_session_new(result, None)

        self.calls.call("session/fork", {"sessionId": source, "cwd": self.config.cwd, "mcpServers": []}, forked)

    def _on_reopened(self, methods: List[str], failures: List[str], result: Optional[Dict[str, Any]],
                     error: Any) -> None:
        self.replaying = False
        if error is not None:
            failures = failures + ["%s: %s" % (methods[0], wire.rpc_error_text(error))]
            self._open_session(methods[1:], failures)
            return
        self._configure(wire.as_object(result))

    def _on_session_new(self, result: Optional[Dict[str, Any]], error: Any) -> None:
        session_id = wire.text_or_none(wire.as_object(result).get("sessionId"))
        if error is not None or session_id is None:
            text = wire.rpc_error_text(error) if error is not None else "no sessionId in the answer"
            self._start_failed("the ACP agent %s refused a new session: %s" % (self.label, text))
            return
        self.session_id = session_id
        self._configure(wire.as_object(result))  # first: the fsync below then overlaps the agent's work
        try:
            self.save_resume(SESSION_FILE, session_id, "session_id")
        except OSError as exc:  # the run can go on; only a later resume would miss it
            self.host.log("diagnostic", "warning", message="cannot keep the ACP session id: %s" % exc)

    def _configure(self, session: Dict[str, Any]) -> None:
        """The mode by session/set_mode, or the mode config option where the
        agent has no `modes` (--mode through the preset's table, else
        HARNESSCTL_ACP_MODE), then --model, then ready.  The mode is set at every
        start, a resumed session's included: what mode an agent restores with
        a session is its own business."""
        try:
            mode, why = self._mode_id()
        except ValueError as exc:
            self._start_failed(str(exc))
            return
        config_id, offered, current = wire.mode_selector(session)
        if not mode:
            self._select_model(session, current)
            return
        chosen = wire.offered_mode(mode, offered)
        if chosen is None:
            self._start_failed("%s: the ACP agent %s does not offer mode %s (it offers %s)" % (
                why, self.label, mode, ", ".join(offered) if offered else "no modes"))
            return
        mode = chosen

        def moded(result: Optional[Dict[str, Any]], error: Any) -> None:
            if error is not None:
                self._start_failed("%s: the ACP agent %s refused mode %s: %s" % (why, self.label, mode,
                                                                               wire.rpc_error_text(error)))
            else:
                self._select_model(session, mode)

        if config_id is None:
            self.calls.call("session/set_mode", {"sessionId": self.session_id, "modeId": mode}, moded)
        else:
            self.calls.call("session/set_config_option", {"sessionId": self.session_id, "configId": config_id,
                                                          "value": mode}, moded)

    def _mode_id(self) -> Tuple[str, str]:
        """(the agent's mode id to set, or "" for none; what asked for it).
        --mode wins over HARNESSCTL_ACP_MODE, which says so in a diagnostic;
        ValueError for a --mode the agent's table lacks (the core refuses
        that before it starts one: this keeps a mode from being lost)."""
        raw = self.config.env.get(MODE_ENV, "").strip()
        if self.config.mode is None:
            return raw, "%s=%s" % (MODE_ENV, raw)
        modes = wire.as_object(wire.as_object(self._presets().get(self.config.agent or "")).get("modes"))
        mode = wire.text_or_none(modes.get(self.config.mode)) or ""
        if not mode:
            raise ValueError("--mode %s: the ACP agent %s has no mode for it; set %s to one of its own mode ids"
                             % (self.config.mode, self.label, MODE_ENV))
        if raw and raw != mode:
            self.host.log("diagnostic", "info", message="%s=%s is not applied: --mode %s sets the ACP agent's mode %s"
                          % (MODE_ENV, raw, self.config.mode, mode))
        return mode, "--mode %s" % self.config.mode

    def _select_model(self, session: Dict[str, Any], mode: Optional[str]) -> None:
        model = self.config.model
        selector = wire.model_selector(session)
        if not model:
            self._ready(session, mode, wire.current_model(session))
            return
        if selector is None:
            self.host.log("diagnostic", "warning", message="the ACP agent %s offers no model selection: --model %s "
                          "is not applied" % (self.label, model))
            self._ready(session, mode, wire.current_model(session))
            return
        method, config_id = selector
        params: Dict[str, Any] = {"sessionId": self.session_id}
        params.update({"modelId": model} if config_id is None else {"configId": config_id, "value": model})

        def selected(result: Optional[Dict[str, Any]], error: Any) -> None:
            if error is not None:
                self._start_failed("the ACP agent %s refused model %s: %s" % (self.label, model,
                                                                            wire.rpc_error_text(error)))
            else:
                self._ready(session, mode, model)

        self.calls.call(method, params, selected)

    def _ready(self, session: Dict[str, Any], mode: Optional[str], model: Optional[str]) -> None:
        info = wire.as_object(self.init.get("agentInfo"))
        approval = mode if wire.modes_are_permissions(session) else None
        self.activity.session(self.session_id, str(info.get("name") or self.label),
                              wire.text_or_none(info.get("version")), model, approval, None,
                              capabilities=wire.session_capabilities(self.init))
        self.phase = "ready"
        self.host.ready()

    def _start_failed(self, message: str) -> None:
        if self.phase == "down":
            return
        self.phase = "down"
        self.start_error = message
        self.host.start_failed(message)
        if self.child is not None:
            self.child.kill()

    def on_exit(self, returncode: Optional[int]) -> None:
        """Forget the process.  Before it was ready: say why it could not start
        (codex-acp exits 0 without answering initialize when its codex is
        missing).  After: the runtime fails the open run and expires requests."""
        phase, busy = self.phase, self.run is not None or bool(self.held) or self.inflight is not None
        words = self._agent_words(None) if phase == "starting" else ""
        self._reset()
        if phase == "starting":
            self.host.start_failed("the ACP agent %s exited (code %s) before it was ready%s (all of its stderr is "
                                   "in %s)" % (self.label, returncode, words, self.config.sidecar_file("runtime.log")))
        self.host.log("diagnostic", "error" if busy or phase == "starting" else "info",
                      message="the ACP agent %s exited (code %s)" % (self.label, returncode))

    def before_stop(self) -> None:
        """A turn goes on after stdin closes: cancel it first."""
        if self.run is not None and self.session_id:
            self.calls.notify("session/cancel", {"sessionId": self.session_id})

    # ------------------------------------------------------------------ sends

    def send(self, item: Input) -> None:
        if self.phase != "ready" or self.child is None:
            self.host.send_failed(item.input_id, "the ACP agent is not running", unavailable=True)
        elif self.run is None:
            self.host.accepted(item.input_id, "start", self._start_run([item]))
        elif self.steering:
            self._steer(self.run, item)
        else:
            self.held.hold(item)

    def _start_run(self, items: List[Input]) -> str:
        """A new run: one session/prompt with the inputs' texts, in order; its run id."""
        run = Run(self.host.new_run(), [i.input_id for i in items], self.updates.cost)
        self.run = run
        prompt = [{"type": "text", "text": i.text} for i in items]
        run.prompt_id = self.calls.call("session/prompt", {"sessionId": self.session_id, "prompt": prompt},
                                        lambda r, e: self._on_prompt_done(run, r, e))
        limit = self._no_progress_limit()
        quiet = min(QUIET, limit / 2)  # a short limit: still warned of first
        self.host.call_later(quiet, lambda: self._quiet(run, quiet))
        self.host.call_later(limit, lambda: self._stalled(run, limit))
        return run.run_id

    # ------------------------------------------------------------------ a run that makes no progress

    def _waiting(self, run: Run) -> bool:
        """The run is still open and the agent has shown nothing of it."""
        return run is self.run and run.response is None and not run.progressed and not run.stalled

    def _quiet(self, run: Run, seconds: float) -> None:
        if self._waiting(run):
            self.activity.stalled(run.run_id, "the ACP agent %s has shown no progress %g s after the prompt%s"
                                  % (self.short, seconds, self._agent_words(run)))

    def _stalled(self, run: Run, seconds: float) -> None:
        """No progress for the whole limit: cancel the turn; it ends `failed`
        when the agent answers, or after STOP_GRACE without that answer (the
        agent is then stopped: the next send starts it again)."""
        if not self._waiting(run):
            return
        run.stalled = "the ACP agent %s showed no progress in %g s (%s)%s" % (
            self.short, seconds, NO_PROGRESS_ENV, self._agent_words(run))
        self.calls.notify("session/cancel", {"sessionId": self.session_id})
        self.host.call_later(self.STOP_GRACE, lambda: self._abandon(run))

    def _abandon(self, run: Run) -> None:
        if run is not self.run or run.response is not None:
            return
        run.response, run.steering = {"result": {}}, 0
        self._finish_if_done(run)
        if self.child is not None:
            self.child.kill()

    def _no_progress_limit(self) -> float:
        return wire.seconds(self.config.env.get(NO_PROGRESS_ENV), NO_PROGRESS)

    def _agent_words(self, run: Optional[Run]) -> str:
        """What the agent said (of the run): its last reported error, the last
        line it wrote on stdout that was no message, and its stderr's line that
        names an error (else its last lines): an agent's reason is often followed
        by more output (claude-agent-acp's "Connection refused", fast-agent's
        "No model configured")."""
        words = "; it reports: %s" % run.said if run is not None and run.said else ""
        if self.unreadable:
            words += "; its stdout said: %s" % wire.cut(self.unreadable, 300)
        return words + self.stderr_words()

    def _steer(self, run: Run, item: Input) -> None:
        self.inflight = item
        run.steering += 1
        params = {"sessionId": self.session_id, "prompt": [{"type": "text", "text": item.text}],
                  "_meta": {"steering": {"idleBehavior": "promptRequired"}}}
        self.calls.call("_session/steering", params, lambda r, e: self._on_steered(run, item, r, e))

    def _on_steered(self, run: Run, item: Input, result: Optional[Dict[str, Any]], error: Any) -> None:
        self.inflight = None
        run.steering -= 1
        dropped, self.drop_inflight = self.drop_inflight, False
        outcome = wire.as_object(result).get("outcome") if error is None else None
        if outcome == "injected":
            run.input_ids.append(item.input_id)
            self.updates.cut_message(run)
            self.host.accepted(item.input_id, "steer", run.run_id)
            self._finish_if_done(run)
            return
        self._finish_if_done(run)
        if outcome == "promptRequired":  # the turn ended first: the input starts the next run
            if dropped:
                self.host.accepted(item.input_id, "queued", None)
                self.host.result(None, [item.input_id], "cancelled")
            elif self.run is None:
                self.host.accepted(item.input_id, "start", self._start_run([item]))
            else:  # its turn has ended but its response is still on the way
                self.held.hold(item)
        elif outcome == "startedNewTurn":
            # an agent that ignored idleBehavior started a turn no session/prompt response will end
            untracked = self.host.new_run()
            self.host.accepted(item.input_id, "start", untracked)
            self.host.result(untracked, [item.input_id], "failed",
                             error="the agent started a turn of its own for this input (startedNewTurn), which "
                                   "harnessctl cannot follow to its end", error_class="startedNewTurn")
        else:
            text = wire.rpc_error_text(error) if error is not None else "outcome %s" % json.dumps(result)
            self.host.send_failed(item.input_id, "the ACP agent refused the steer: %s" % text, unavailable=True)

    # ------------------------------------------------------------------ run end

    def _on_prompt_done(self, run: Run, result: Optional[Dict[str, Any]], error: Any) -> None:
        run.response = {"error": error} if error is not None else {"result": wire.as_object(result)}
        self._finish_if_done(run)

    def _finish_if_done(self, run: Run) -> None:
        """The run's result, once its prompt was answered and no steer towards
        it still waits for its answer (so the result lists that input)."""
        if run.response is None or run.steering or run is not self.run:
            return
        self.run = None
        for agent_id in [k for k, v in self.requests.items() if v["run"] is run]:
            # the runtime expires them with the result; an agent still waiting gets `cancelled`
            self._answer_cancelled(agent_id)
        error = run.response.get("error")
        usage: Optional[Dict[str, int]] = None
        cost: Optional[float] = None
        text: Optional[str]
        if error is not None and run.cancelled:  # qwen answers a cancelled prompt "Request was aborted."
            self.host.log("diagnostic", "info", run_id=run.run_id, message="the ACP agent %s answered the "
                          "cancelled prompt with an error: %s" % (self.label, wire.rpc_error_text(error)))
            status, text, error_class = "cancelled", None, None
            self.updates.cut_message(run)
        elif run.stalled:
            status, text, error_class = "failed", run.stalled, "no_progress"
            self.updates.cut_message(run)
        elif error is not None:
            status, text, error_class = "failed", wire.rpc_error_text(error), wire.rpc_error_class(error)
        else:
            result = run.response["result"]
            status, text, error_class = wire.outcome(result.get("stopReason"))
            if status == "cancelled":
                self.updates.cut_message(run)
            usage = wire.usage(result)
            if run.cost is not None:
                cost = round(max(0.0, run.cost - (run.cost_base or 0.0)), 8)
            if usage or run.context:
                self.updates.log_usage(run, usage)
        self.updates.close_message(run)
        self.updates.end_tools(run)
        output = "".join(run.messages[list(run.messages)[-1]]) if run.messages else ""
        self.host.result(run.run_id, run.input_ids, status, output, usage, cost, text, error_class)
        if self.phase == "ready":  # the held inputs start the next run together
            self.held.start_next()

    # ------------------------------------------------------------------ cancel and replies

    def revoke(self, input_id: str) -> bool:
        return self.held.revoke(input_id)

    def interrupt(self) -> None:
        self.held.cancel()
        if self.inflight is not None:
            self.drop_inflight = True
        run = self.run
        if run is None or self.child is None:
            return
        self.calls.notify("session/cancel", {"sessionId": self.session_id})
        run.cancelled = True
        for agent_id in [k for k, v in self.requests.items() if v["run"] is run]:
            self._answer_cancelled(agent_id)  # the spec's duty: gemini waits for it
            self.host.request_closed(agent_id)

    def answer(self, token: Any, answer: Any) -> None:
        """A reply or a rule: an elicitation's action or values, else the
        permission option our name maps to (the request's `option_kinds` say
        which kind that is)."""
        entry = self.requests.pop(token, None)
        if entry is None or self.child is None:
            return
        if "fields" in entry:
            self.calls.respond(token, asking.elicitation_response(entry["fields"], answer))
            return
        option_id = entry["mapping"].get(answer)
        if not option_id:  # `deny` where the agent offers no reject option
            self.calls.respond(token, PERMISSION_CANCELLED)
            return
        if str(answer).startswith("deny"):
            self.updates.declined(entry["tool_id"])
        self.calls.respond(token, {"outcome": {"outcome": "selected", "optionId": option_id}})

    def _answer_cancelled(self, agent_id: Any) -> None:
        """harnessctl cancels a request the agent still waits for (a cancel, the run's end)."""
        entry = self.requests.pop(agent_id, None)
        if entry is not None:
            self.calls.respond(agent_id, asking.CANCELLED if "fields" in entry else PERMISSION_CANCELLED)

    # ------------------------------------------------------------------ the agent's messages

    def on_message(self, msg: Dict[str, Any]) -> None:
        """Responses by id, agent requests, then notifications."""
        method = msg.get("method")
        if method is None:
            if not self.calls.answered(msg):
                self.host.log("native", level="debug", data=msg)
        elif "id" in msg:
            if self.run is not None:  # a request is progress: it may wait for a person, however long
                self.run.progressed = True
            self._agent_request(str(method), msg.get("id"), wire.as_object(msg.get("params")))
        elif method == "session/update":
            self._on_update(wire.as_object(msg.get("params")), msg)
        elif method == "elicitation/complete":
            self._on_elicitation_complete(wire.as_object(msg.get("params")))
        elif method == "$/cancel_request":
            agent_id = wire.as_object(msg.get("params")).get("requestId")
            if self.requests.pop(agent_id, None) is not None:
                self.host.request_closed(agent_id)
        else:
            self.host.log("native", level="debug", run_id=self._run_id(), data=msg)

    def _run_id(self) -> Optional[str]:
        return self.run.run_id if self.run else None

    def _on_update(self, params: Dict[str, Any], msg: Dict[str, Any]) -> None:
        if self.replaying:  # history of a session/load: already in the event file
            return
        self.updates.on_update(self.run, wire.as_object(params.get("update")), msg)

    # -- the agent's requests

    def _agent_request(self, method: str, agent_id: Any, params: Dict[str, Any]) -> None:
        if method == "session/request_permission":
            self._on_permission(agent_id, params)
            return
        if method == "elicitation/create":
            self._on_elicitation(agent_id, params)
            return
        try:
            if method == "fs/read_text_file":
                self.calls.respond(agent_id, wire.read_text(self.config, params))
            elif method == "fs/write_text_file":
                self.calls.respond(agent_id, wire.write_text(self.config, params))
            else:
                self.host.log("diagnostic", "warning", run_id=self._run_id(),
                              message="the ACP agent asked %s, which harnessctl does not offer; refused" % method)
                self.calls.refuse(agent_id, -32601, "Method not found: %s" % method)
        except PermissionError as exc:
            self.calls.refuse(agent_id, -32602, str(exc))
        except ValueError as exc:
            self.calls.refuse(agent_id, -32602, "Invalid params: %s" % exc)
        except OSError as exc:
            self.calls.refuse(agent_id, -32603, "Internal error: %s" % (exc.strerror or exc))

    def _on_permission(self, agent_id: Any, params: Dict[str, Any]) -> None:
        run = self.run
        tool_call = wire.as_object(params.get("toolCall"))
        tool_id = wire.text_or_none(tool_call.get("toolCallId"))
        # the request completes what the agent said of the tool (gemini said nothing before it)
        tool = self.updates.tool(run, tool_id, tool_call) if run is not None and tool_id else Tool("", tool_call)
        names, texts, mapping = wire.permission_options(params.get("options"))
        details = wire.permission_subject(tool.kind, tool.own_name, tool.title, tool.input, tool.content,
                                          tool_call.get("locations"))
        details.update(input=tool.input, option_descriptions=texts, tool_id=tool_id,
                       option_kinds=wire.option_kinds(params.get("options"), mapping))
        kind = "mode" if asking.is_mode_switch(tool_call) else "permission"
        if asking.is_consent(tool_call):
            details["consent"] = True  # a login URL to open: no rule and no mode answers it
        self.requests[agent_id] = {"run": run, "mapping": mapping, "tool_id": tool_id}
        self.host.request(self._run_id(), kind, wire.permission_message(tool_call), options=names,
                          details=details, token=agent_id)

    def _on_elicitation(self, agent_id: Any, params: Dict[str, Any]) -> None:
        """A form or a URL for a person: a question, parked until a reply."""
        asked = asking.elicitation_request(params)
        if asked is None:
            self.host.log("diagnostic", "warning", run_id=self._run_id(), message="the ACP agent %s asked an "
                          "elicitation of mode %r, which harnessctl cannot show; cancelled" % (self.label,
                                                                                            params.get("mode")))
            self.calls.respond(agent_id, asking.CANCELLED)
            return
        self.requests[agent_id] = {"run": self.run, "fields": asked["fields"],
                                   "elicitation_id": asked["details"].get("elicitation_id")}
        self.host.request(self._run_id(), "question", asked["message"], options=asked["options"],
                          details=asked["details"], token=agent_id)

    def _on_elicitation_complete(self, params: Dict[str, Any]) -> None:
        """The agent says a URL elicitation is over (the login went through):
        one still pending is no longer asked, and is answered `cancel`."""
        wanted = params.get("elicitationId")
        for agent_id in [k for k, v in self.requests.items() if wanted and v.get("elicitation_id") == wanted]:
            self._answer_cancelled(agent_id)
            self.host.request_closed(agent_id)
        self.host.log("native", level="debug", run_id=self._run_id(), data={"method": "elicitation/complete",
                                                                             "params": params})
