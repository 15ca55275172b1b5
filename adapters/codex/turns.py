"""The turns of one app-server's thread: a codex turn is a harnessctl run.

Sends go out one at a time, each once the previous one was confirmed: as
`turn/start` when no turn runs, else as `turn/steer` into the running one.
Attribution is only ever what codex confirmed: `turn/start`'s response names
the turn (run) an input starts, `turn/steer`'s response says the input joined
the active turn, and a `userMessage` item carrying our input id as `clientId`
says which turn consumed it when the two responses race a turn's end.  An
interrupt drops the sends codex has not taken and interrupts the running
turn; a turn's result is written once codex completed it and no steer
towards it still waits for its answer.  The backend (backend.py) owns the
process and the thread; items.py what a turn's items say."""

from __future__ import annotations

from harnessctl.kit import Calls, Config, Host, Input

from . import wire
from .run import Run

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Set

    from .asking import Asking
    from .items import Items


class Turns:
    """The runs of one app-server, and the sends that start or join them.
    Each on_* handler gets the params, the run of its turn or None, the raw message."""

    def __init__(self, host: Host, calls: Calls, config: Config, items: Items, asking: Asking,
                 replay: Callable[[Dict[str, Any]], None]) -> None:
        self.host = host
        self.calls = calls
        self.config = config
        self.items = items
        self.asking = asking
        self.replay = replay  # the backend's on_message, for the messages held for a turn/start
        self.thread_id: Optional[str] = None  # the open thread's: no send goes out before it is open
        self.runs: Dict[str, Run] = {}
        self.inflight: Optional[Input] = None  # the input whose turn/start or turn/steer awaits its response
        self.inflight_kind = ""
        self.buffered: List[Dict[str, Any]] = []  # notifications of a turn whose turn/start response is pending
        self.waiting: List[Input] = []  # sends held until the harness can take them
        self.cancel_pending = False  # cancel asked while the turn id was unknown
        self.drop_inflight = False  # cancel asked while a steer was in flight
        self.limbo: Set[str] = set()  # accepted steers codex has not yet shown in a turn

    def open(self, thread_id: str) -> None:
        """The thread is open: sends may go out (pump)."""
        self.thread_id = thread_id

    def busy(self) -> bool:
        """Whether a send awaits codex's answer or a turn runs."""
        return self.inflight is not None or self._open_run() is not None

    def run(self, turn_id: Optional[str]) -> Optional[Run]:
        return self.runs.get(turn_id) if turn_id else None

    def hold(self, msg: Dict[str, Any], turn_id: Optional[str]) -> bool:
        """Keep a message of a turn not known yet while a turn/start awaits its
        response (that response, naming the run, comes first); True if kept."""
        if turn_id and turn_id not in self.runs and self.inflight is not None and self.inflight_kind == "start":
            self.buffered.append(msg)
            return True
        return False

    # -- sends

    def send(self, item: Input) -> None:
        self.waiting.append(item)
        self.pump()

    def pump(self) -> None:
        """Deliver held sends one at a time, each once the previous one was
        confirmed; none while the open turn refuses steers (it ends first)."""
        while self.thread_id is not None and self.inflight is None and self.waiting:
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
        buffered, self.buffered = self.buffered, []
        for msg in buffered:
            self.replay(msg)
        self.pump()

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
        self.pump()

    def _drop(self, item: Input) -> None:
        """A cancel dropped an input the harness never ran: its own cancelled
        result, with no run (the core's convention for inputs no run consumed)."""
        self.host.accepted(item.input_id, "queued", None)
        self.host.result(None, [item.input_id], "cancelled")

    # -- cancel

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

    # -- notifications

    def on_turn_started(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        turn_id = turn_of(params)
        if run is None and turn_id:
            # a turn codex started on its own (e.g. with a steer that missed its turn)
            run = Run(self.host.new_run(), turn_id, [])
            self.runs[turn_id] = run
        self.items.native(msg, run)

    def on_item_started(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        """A userMessage item carrying our input id says which turn consumed
        that input (a steer in limbo is attributed to it); any other item is
        the Items'."""
        item = wire.as_object(params.get("item"))
        if item.get("type") != "userMessage":
            self.items.started(run, params, item)
            return
        client_id = item.get("clientId")
        if run is not None and client_id:
            run.client_ids.add(client_id)
            if client_id in self.limbo:
                self.limbo.discard(client_id)
                run.input_ids.append(client_id)
                self.host.attributed(client_id, run.run_id)

    def on_turn_completed(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        if run is None:
            self.items.native(msg, None)
            return
        turn = params.get("turn")
        run.final = turn if isinstance(turn, dict) else {}
        self._finish_if_done(run)
        self.pump()

    def _finish_if_done(self, run: Run) -> None:
        """Write the run's result once codex completed the turn and no steer
        towards it still waits for its answer (so the result lists that input)."""
        if run.final is None or run.steering or run.turn_id not in self.runs:
            return
        del self.runs[run.turn_id]
        status, output, error, error_class = wire.turn_result(run.final, run.error, run.output)
        self.asking.forget(run.turn_id)
        self.items.forget(run.turn_id)
        if error and self.items.sandbox:  # a failed run whose commands all failed says why
            error = "%s; %s" % (error, self.items.sandbox)
        self.host.result(run.run_id, run.input_ids, status, output, run.usage, None, error, error_class)


def turn_of(params: Dict[str, Any]) -> Optional[str]:
    """The turn a notification or request is about."""
    turn = params.get("turn")
    return params.get("turnId") or (turn.get("id") if isinstance(turn, dict) else None)
