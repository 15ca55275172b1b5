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
* `session/cancel` is a notification; the client must itself answer every
  pending permission request `cancelled` (gemini waits for that), while
  codex-acp and claude-agent-acp withdraw theirs with `$/cancel_request`.

This module is the state machine of the agent process and its runs: start
and initialize, sends (three ways to take a busy one, each resting on the
same prompt state), the runs' ends, cancels, and the agent's messages routed
to the parts that serve them, each composed in per agent process:
session.py sets the session up (new, resumed, loaded or forked; its mode
and model), updates.py turns session/update into activity, asking.py serves
the agent's requests (a person's answers, the client's file system),
progress.py watches a run that shows no progress, and wire.py holds the pure
mappings.
"""

from __future__ import annotations

import json

from harnessctl.kit import Calls, ChildBackend, Config, HeldInputs, Host, Input

from . import asking, wire
from .asking import Asking
from .progress import Watch
from .session import SESSION_FILE, Opening
from .updates import Run, Updates

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

PROTOCOL_VERSION = 1
CLIENT_INFO = {"name": "harnessctl", "title": "harnessctl", "version": "0.1.0"}
CLIENT_CAPABILITIES = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": False,
                       "session": {"notices": {}, "compaction": {}},
                       "elicitation": asking.CAPABILITY}  # forms and URLs become questions


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
        self.steering = False
        self.run: Optional[Run] = None  # the run whose session/prompt is open
        self.held = HeldInputs(self.host, self._start_run)  # an agent without steering: they start the next run
        self.inflight: Optional[Input] = None  # the input whose _session/steering awaits its answer
        self.drop_inflight = False  # cancel asked while that steer was in flight
        self.updates = Updates(self.host, self.activity, self.config.cwd)  # session/update -> activity
        self.asking = Asking(self.host, self.calls, self.config, self.updates)  # the agent's requests
        self.opening = Opening(self)  # the session's set-up, once the agent is initialized
        self.watch = Watch(self)  # a run that shows no progress

    @property
    def name(self) -> str:
        return "ACP agent %s" % self.label

    # ------------------------------------------------------------------ start

    def start(self) -> None:
        self._reset()
        agent = self.config.agent
        if not agent:
            self.host.start_failed("no ACP agent: pass --agent NAME_OR_COMMAND (presets: %s) or set "
                                   "HARNESSCTL_ACP_AGENT" % ", ".join(sorted(self.config.agents)))
            return
        presets = self.config.agents
        env = self.config.env
        try:
            argv, self.label, variable = wire.agent_command(agent, presets, env)
            self.short = agent if agent in presets or not argv else argv[0].rsplit("/", 1)[-1]
            self.no_resume = wire.as_object(wire.as_object(presets.get(agent)).get("degraded")).get("resume")
            argv += wire.extra_args(env, self.config.harness.get("args_env"))
        except ValueError as exc:
            self.host.start_failed("the ACP agent command is not valid shell syntax: %s" % exc)
            return
        if not argv:
            self.host.start_failed("the ACP agent command is empty%s" % (" (%s)" % variable if variable else ""))
            return
        if not self.spawn(argv, variable, wire.install_hint(agent, presets)):
            return
        self.phase = "starting"  # the runtime's start timeout covers an agent that never gets ready
        params = {"protocolVersion": PROTOCOL_VERSION, "clientInfo": CLIENT_INFO,
                  "clientCapabilities": CLIENT_CAPABILITIES}
        self.calls.call("initialize", params, self._on_initialize)

    def _on_initialize(self, result: Optional[Dict[str, Any]], error: Any) -> None:
        if error is not None:
            self.fail_start("the ACP agent %s refused to initialize: %s" % (self.label, wire.rpc_error_text(error)))
            return
        init = wire.as_object(result)
        version = init.get("protocolVersion")
        if version != PROTOCOL_VERSION:
            self.fail_start("the ACP agent %s speaks protocol version %s; harnessctl speaks %d"
                            % (self.label, version, PROTOCOL_VERSION))
            return
        self.steering = wire.steering_supported(init)
        self.opening.open(init, self.fork_from, self.no_resume)

    def opened(self) -> None:
        """The session is set up (session.py): sends start runs."""
        self.phase = "ready"
        self.host.ready()

    def fail_start(self, message: str) -> None:
        """The start fails (once), and the agent process goes."""
        if self.phase == "down":
            return
        self.phase = "down"
        self.host.start_failed(message)
        self.kill_agent()

    def kill_agent(self) -> None:
        """Its exit (on_exit) then forgets the process."""
        if self.child is not None:
            self.child.kill()

    def on_exit(self, returncode: Optional[int]) -> None:
        """Forget the process.  Before it was ready: say why it could not start
        (codex-acp exits 0 without answering initialize when its codex is
        missing).  After: the runtime fails the open run and expires requests."""
        phase, busy = self.phase, self.run is not None or bool(self.held) or self.inflight is not None
        words = wire.agent_words(None, self.unreadable, self.stderr_words()) if phase == "starting" else ""
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
        self.watch.start(run)
        return run.run_id

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
            self.finish_if_done(run)
            return
        self.finish_if_done(run)
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
        self.finish_if_done(run)

    def finish_if_done(self, run: Run) -> None:
        """The run's result, once its prompt was answered and no steer towards
        it still waits for its answer (so the result lists that input)."""
        if run.response is None or run.steering or run is not self.run:
            return
        self.run = None
        self.asking.cancel(run)  # the runtime expires them with the result; an agent still waiting gets `cancelled`
        error = run.response.get("error")
        if error is not None and run.cancelled:  # qwen answers a cancelled prompt "Request was aborted."
            self.host.log("diagnostic", "info", run_id=run.run_id, message="the ACP agent %s answered the "
                          "cancelled prompt with an error: %s" % (self.label, wire.rpc_error_text(error)))
        status, text, error_class = run.outcome()
        if status == "cancelled" or run.stalled:
            self.updates.cut_message(run)
        usage: Optional[Dict[str, int]] = None
        cost: Optional[float] = None
        if error is None and not run.stalled:  # the agent's answer: what the turn used and cost
            usage, cost = wire.usage(run.response["result"]), run.spent()
            if usage or run.context:
                self.updates.log_usage(run, usage)
        self.updates.close_message(run)
        self.updates.end_tools(run)
        self.host.result(run.run_id, run.input_ids, status, run.output(), usage, cost, text, error_class)
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
        self.asking.cancel(run, closed=True)  # the spec's duty: gemini waits for it

    def answer(self, token: Any, answer: Any) -> None:
        self.asking.answer(token, answer, self.child is not None)

    # ------------------------------------------------------------------ the agent's messages

    def on_message(self, msg: Dict[str, Any]) -> None:
        """Responses by id, agent requests, then notifications."""
        method = msg.get("method")
        if method is None:
            if not self.calls.answered(msg):
                self.host.log("native", level="debug", data=msg)
        elif "id" in msg:  # the agent's request
            self.asking.on_request(self.run, str(method), msg.get("id"), wire.as_object(msg.get("params")), self.label)
        elif method == "session/update":
            if not self.opening.replaying:  # history of a session/load: already in the event file
                self.updates.on_update(self.run, wire.as_object(wire.as_object(msg.get("params")).get("update")), msg)
        elif method == "elicitation/complete":
            self.asking.completed(self._run_id(), wire.as_object(msg.get("params")))
        elif method == "$/cancel_request":
            self.asking.withdrawn(wire.as_object(msg.get("params")).get("requestId"))
        else:
            self.host.log("native", level="debug", run_id=self._run_id(), data=msg)

    def _run_id(self) -> Optional[str]:
        return self.run.run_id if self.run else None
