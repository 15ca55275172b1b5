"""What an adapter sees of its runtime: exactly the `Host` calls of backend.py,
and nothing else.  Its reports become events here (`accepted`, `message`,
`request`, `result`, `log`), checked against the backend contract; what they
mean for the waiting commands, the policy, the hooks and the budget is the
runtime's, told as the named moments of `Moments` (coordinator.py decides)."""

from __future__ import annotations

import os

from ..checks import budget, structured
from ..errors import HarnessctlError, UnavailableError
from ..eventfile.state import result_event, totals_after
from ..kit.activity import amount
from ..kit.backend import DELIVERIES, REQUEST_KINDS, RESULT_STATUSES, Host

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Set, Tuple

    from ..eventfile.state import Conversation
    from ..kit.backend import Input
    from .loop import Loop
    from .proc import Process
    from .writer import EventWriter

    Decision = Optional[Tuple[str, Dict[str, str]]]  # the policy's (option, why), or None: a reply answers

    class Harness(Protocol):
        """The harness's process and start (supervisor.py)."""

        def spawn(self, argv: Sequence[str], env: Dict[str, str], cwd: str) -> Process: ...

        def refused(self, error: HarnessctlError) -> None: ...

    class Moments(Protocol):
        """What the adapter's reports mean to the runtime, each told once, as it happens."""

        def harness_ready(self) -> None: ...

        def send_confirmed(self, input_id: str, error: Optional[HarnessctlError], interrupt: bool = False) -> None:
            ...

        def request_arrived(self, kind: str, request: Dict[str, Any]) -> Decision: ...

        def request_recorded(self, request: Dict[str, Any], decision: Decision) -> None: ...

        def run_ending(self, run_id: Optional[str]) -> Optional[str]: ...

        def run_ended(self) -> None: ...

        def usage_reported(self, run_id: Optional[str], usage: Dict[str, Any]) -> None: ...

        def debug(self, text: str) -> None: ...


class AdapterHost(Host):
    def __init__(self, conv: Conversation, writer: EventWriter, loop: Loop, harness: Harness, adapter: str,
                 moments: Moments) -> None:
        """`conv` is read (what is open), `writer` takes the events; `adapter`
        names the adapter in what its broken contract says."""
        self._conv = conv
        self._harness = harness
        self._writer = writer
        self._loop = loop
        self._adapter = adapter
        self._moments = moments
        self._texts: Dict[str, Tuple[str, str]] = {}  # input_id -> (text, delivery) until attributed
        self._tokens: Dict[str, Any] = {}  # request id -> the harness's token, while the request is open
        self._schemas: Dict[str, Dict[str, Any]] = {}  # input_id -> its send's schema, until its result
        # Inputs whose `accepted` could not be written (their send failed), and
        # the runs they started: the file never hears of those runs (_unknown).
        self._unrecorded_inputs: Set[str] = set()  # while their run is not known
        self._unrecorded_runs: Set[str] = set()

    def expect(self, item: Input, held: bool = False) -> None:
        """A send is being handed to the backend: its text (and schema) go into
        `accepted`; one the runtime `held` stays `queued` there, with the run it starts."""
        self._texts[item.input_id] = (item.text, "queued" if held else "")
        open_inputs = self._conv.open_inputs  # the runtime itself ended the others (a harness that died)
        self._schemas = {i: schema for i, schema in self._schemas.items() if i in open_inputs}
        if item.schema is not None:
            self._schemas[item.input_id] = item.schema

    def take_token(self, request_id: str) -> Any:
        """The token `request_id` was asked with, forgotten (it is answered)."""
        return self._tokens.pop(request_id, request_id)

    def is_asking(self, request_id: str) -> bool:
        """Whether the harness still waits for an answer to `request_id`."""
        return request_id in self._tokens

    def forget_requests(self) -> None:
        """The harness is gone: none of its tokens will be answered."""
        self._tokens.clear()

    # -- process plumbing -------------------------------------------------

    def spawn(self, argv: Sequence[str], env: Dict[str, str], cwd: str) -> Process:
        return self._harness.spawn(argv, env, cwd)

    def call_later(self, seconds: float, callback: Callable[[], None]) -> None:
        self._loop.call_later(seconds, callback)

    # -- start --------------------------------------------------------------

    def ready(self) -> None:
        self._moments.harness_ready()

    def start_failed(self, message: str) -> None:
        self._harness.refused(UnavailableError(message))

    # -- sends ----------------------------------------------------------------

    def new_run(self) -> str:
        return new_id()

    def accepted(self, input_id: str, delivery: str, run_id: Optional[str]) -> None:
        if delivery not in DELIVERIES:
            self._broken_contract("accepted() with delivery %r (allowed: %s)" % (delivery, ", ".join(DELIVERIES)),
                                  input_id)
            return
        text, held = self._texts.pop(input_id, ("", ""))
        delivery = held or delivery
        event = self._accepted_event(input_id, text, delivery, run_id)
        try:
            self._writer.write(event, now=True)
        except OSError as e:
            if run_id is None:
                self._unrecorded_inputs.add(input_id)  # a run it starts later is found when attributed
            elif delivery == "start":
                self._unrecorded_runs.add(run_id)
            self._moments.send_confirmed(input_id, HarnessctlError(
                "could not record the input in the event file (%s); the harness may have seen it" % e.strerror),
                interrupt=True)
            return
        if run_id is None:
            self._texts[input_id] = (text, delivery)
        self._moments.send_confirmed(input_id, None)

    def attributed(self, input_id: str, run_id: str) -> None:
        conv = self._conv
        if input_id in self._unrecorded_inputs:
            self._unrecorded_inputs.discard(input_id)
            self._unrecorded_runs.add(run_id)
        if input_id in conv.open_inputs and conv.open_inputs[input_id] is None:
            text, delivery = self._texts.pop(input_id, ("", "steer"))
            self._writer.write(self._accepted_event(input_id, text, delivery, run_id))

    def _accepted_event(self, input_id: str, text: str, delivery: str, run_id: Optional[str]) -> Dict[str, Any]:
        event: Dict[str, Any] = {"type": "accepted", "input_id": input_id, "text": text, "delivery": delivery,
                                 "run_id": run_id}
        if input_id in self._schemas:
            event["schema"] = self._schemas[input_id]
        return event

    def held(self, item: Input) -> None:
        """The runtime holds a send for the next run (sends.py): accepted `queued`, in no run yet."""
        self._writer.write(self._accepted_event(item.input_id, item.text, "queued", None), now=True)

    def dropped(self, input_ids: List[str], status: str, error: Optional[str] = None,
                error_class: Optional[str] = None) -> None:
        """Inputs the runtime held end in no run (a cancel, a revoke, a harness
        that cannot start): their result, and nothing else touched."""
        event = result_event(None, list(input_ids), status, error=error, totals=totals_after(self._conv, None, None))
        if error_class is not None:
            event["error_class"] = error_class
        self._writer.write(event)
        self._moments.run_ended()

    def send_failed(self, input_id: str, message: str, unavailable: bool = False) -> None:
        self._texts.pop(input_id, None)
        self._schemas.pop(input_id, None)
        self._moments.send_confirmed(input_id, UnavailableError(message) if unavailable else HarnessctlError(message))

    # -- what the agent does ------------------------------------------------

    def _unknown(self, run_id: Optional[str]) -> bool:
        """`run_id` is a run the file must not hear of: the harness started it
        with an input whose send failed (exit 1), and no recorded input joined
        it.  Its activity, requests and result are left out, so the file never
        holds a run without its `accepted` (the failed send was interrupted)."""
        return run_id in self._unrecorded_runs and run_id not in self._conv.open_runs

    def message(self, run_id: Optional[str], message_id: str, text: str, role: str = "assistant") -> None:
        if self._unknown(run_id):
            return
        self._writer.write({"type": "message", "run_id": run_id, "message_id": message_id, "role": role,
                            "text": text})

    def request(self, run_id: Optional[str], kind: str, message: str, options: Optional[List[str]] = None,
                details: Optional[Dict[str, Any]] = None, token: Any = None) -> str:
        if kind not in REQUEST_KINDS:
            self._broken_contract("request() with kind %r (allowed: %s)" % (kind, ", ".join(REQUEST_KINDS)))
        request_id = "req-%d" % (self._conv.request_count + 1)
        if self._unknown(run_id):
            return request_id  # not asked in the file: the interrupt sent with the failed send ends it
        names, renamed = plain_options(options or [])
        event: Dict[str, Any] = {"type": "request", "run_id": run_id, "request_id": request_id,
                                 "state": "pending", "kind": kind, "message": message, "options": names}
        event.update(details or {})
        if renamed:
            event["agent_options"] = renamed
        decision = self._moments.request_arrived(kind, event)
        self._writer.write(event, sync=decision is None)  # a decided one is fsynced with its answer
        self._tokens[request_id] = request_id if token is None else token
        self._moments.request_recorded(self._conv.pending.get(request_id, event), decision)
        return request_id

    def request_closed(self, token: Any) -> None:
        request_id = next((r for r, t in self._tokens.items() if t == token), None)
        if request_id is None:
            return
        del self._tokens[request_id]
        request = self._conv.pending.get(request_id)
        if request is not None:
            self._writer.write(dict(request, state="expired"))

    def result(self, run_id: Optional[str], input_ids: Sequence[str], status: str, output: str = "",
               usage: Optional[Dict[str, Any]] = None, cost_usd: Optional[float] = None,
               error: Optional[str] = None, error_class: Optional[str] = None, output_json: Any = None) -> None:
        conv, writer = self._conv, self._writer
        covered = [i for i in input_ids if i in conv.open_inputs]
        if self._unknown(run_id) or (run_id is None and input_ids and not covered):
            # a run the file never heard of, or inputs that no run consumed and none of them open
            if run_id is not None:
                self._unrecorded_runs.discard(run_id)
            self._unrecorded_inputs.difference_update(input_ids)
            self.debug("result %s of run %s left out of the file: none of its inputs %s is recorded and open"
                       % (status, run_id, list(input_ids)))
            self._moments.run_ended()
            return
        if status not in RESULT_STATUSES:
            self._broken_contract("result() with status %r (allowed: %s)" % (status, ", ".join(RESULT_STATUSES)))
            status, error = "failed", "the %s adapter reported an invalid result status %r" % (
                self._adapter, status)
        if len(covered) != len(input_ids):
            self.debug("result for run %s: ignoring inputs that are not open: %s"
                       % (run_id, [i for i in input_ids if i not in covered]))
        schemas = [self._schemas.pop(i) for i in input_ids if i in self._schemas]
        for input_id in covered:
            self._texts.pop(input_id, None)
        # Requests expire before the result is written: a reader that sees the
        # result sees everything about the run settled.
        for request in [r for r in conv.pending.values() if r.get("run_id") in (run_id, None)]:
            self._tokens.pop(request["request_id"], None)
            writer.write(dict(request, state="expired"))
        status, error, error_class, output_json = verdict(status, error, error_class, self._moments.run_ending(run_id),
                                                          bool(schemas), output, output_json)
        usage = self._counted(run_id, usage)
        event = result_event(run_id, covered, status, output, usage, cost_usd, error,
                             totals_after(conv, usage, amount(cost_usd)))
        if error_class is not None:
            event["error_class"] = error_class
        if schemas and status == "completed":
            event["output_json"] = output_json
        writer.write(event)
        self._moments.run_ended()

    def log(self, kind: str, level: str = "info", run_id: Optional[str] = None, **fields: Any) -> None:
        if self._unknown(run_id):
            return
        event: Dict[str, Any] = {"type": "log", "level": level, "kind": kind}
        if run_id is not None:
            event["run_id"] = run_id
        if kind == "usage":
            fields = self._counted(run_id, fields) or {}
        event.update(fields)
        self._writer.log(event)
        if kind == "usage":
            self._moments.usage_reported(run_id, fields)

    def _counted(self, run_id: Optional[str], usage: Any) -> Any:
        """`usage` (a result's, or a `usage` line's fields) without the token
        counts no harness can mean: an integer beyond MAX_COUNT (a 4300-digit
        one cannot even be written as JSON) is ignored, with a diagnostic."""
        if type(usage) is not dict:
            return usage
        absurd = [k for k, v in usage.items() if type(v) is int and not -MAX_COUNT <= v <= MAX_COUNT]
        if not absurd:
            return usage
        self.log("diagnostic", level="warning", run_id=run_id, message=(
            "the harness reported token counts too large to be true (%s beyond 10^18); ignored"
            % ", ".join(sorted(map(str, absurd)))))
        return {k: None if k in absurd else v for k, v in usage.items()}

    def debug(self, text: str) -> None:
        self._moments.debug(text)

    def _broken_contract(self, what: str, input_id: Optional[str] = None) -> None:
        """An adapter bug: said in runtime.log and the event file, and the send
        it concerns fails at once (exit 1) instead of waiting for a receipt."""
        message = "the %s adapter broke the backend contract: %s" % (self._adapter, what)
        self.debug(message)
        self.log("diagnostic", level="error", message=message)
        if input_id is not None:
            self._texts.pop(input_id, None)
            self._moments.send_confirmed(input_id, HarnessctlError(message))


MAX_COUNT = 10 ** 18  # a token count beyond it is no count (AdapterHost._counted)
OPTION_LIMIT = 64  # characters of an option id kept as it is


def verdict(status: str, error: Optional[str], error_class: Optional[str], over: Optional[str], schema: bool,
            output: str, output_json: Any) -> Tuple[str, Optional[str], Optional[str], Any]:
    """(status, error, error_class, output_json) of a result once harnessctl
    had its say, whatever the harness made of the run: one the budget
    interrupted (`over`: why) failed; a completed one whose answer does not
    fit the send's schema failed too."""
    if over is not None:
        return "failed", "%s: the run was interrupted" % over, budget.CLASS, output_json
    if schema and status == "completed":
        output_json, why = structured.checked(output_json) if output_json is not None else structured.answer(output)
        if why is not None:
            return "failed", why, structured.CLASS, output_json
    return status, error, error_class, output_json


def plain_options(options: Sequence[Any]) -> Tuple[List[str], Dict[str, str]]:
    """(the options as recorded, {our name: the agent's id} of those renamed).

    An option is what a person types after `harnessctl reply FILE req-N` and
    reads in the commands `log` suggests, and the agent chose it: one that is
    not a plain token (letters, digits, `.`, `_`, `-`, at most 64) is recorded
    as `option-N`, N its place, whatever the adapter, and `reply` hands the
    agent its own id back (answers.for_agent)."""
    names = [str(o) for o in options]
    taken = {name for name in names if _plain(name)}
    renamed: Dict[str, str] = {}
    for place, name in enumerate(names):
        if _plain(name):
            continue
        n = place + 1
        while "option-%d" % n in taken:
            n += 1
        names[place] = "option-%d" % n
        taken.add(names[place])
        renamed[names[place]] = name
    return names, renamed


def _plain(name: str) -> bool:
    return 0 < len(name) <= OPTION_LIMIT and name.isascii() and name[0].isalnum() and all(
        c.isalnum() or c in "._-" for c in name)


def new_id() -> str:
    """A random (version 4) UUID string; the uuid module would cost the
    long-lived runtime a megabyte of RSS for this one line."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])
