"""The pure fold: critical events in, conversation state out.

Status, recovery of a lost runtime and the runtime's own start-up all read the
conversation through `Conversation.apply`, so there is one definition of what
the event file means.  `log` lines only move `seq` and `last_activity`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, List, Optional


LOST = "runtime lost; input outcome is uncertain"


class Conversation:
    """What the critical events say, kept compact: only open work is remembered
    in full, finished work only as counts and the latest result."""

    def __init__(self) -> None:
        self.seq = 0
        self.open_inputs: Dict[str, Optional[str]] = {}  # input_id -> run_id (None: not attributed yet)
        self.open_runs: Dict[str, List[str]] = {}  # run_id -> inputs attributed to it, in order
        self.pending: Dict[str, Dict[str, Any]] = {}  # request_id -> pending request, as written
        self.closed_requests: Dict[str, str] = {}  # request_id -> replied / expired
        self.request_count = 0
        self.last_result: Optional[Dict[str, Any]] = None
        self.last_activity: Optional[str] = None
        self.inputs_seen = 0
        self.results_seen = 0
        self.anomalies: List[str] = []  # things a correct writer never produces

    def apply(self, event: Dict[str, Any]) -> None:
        if isinstance(event.get("seq"), int) and event["seq"] > self.seq:
            self.seq = event["seq"]  # the highest: a foreign line with a low seq never makes us reuse one
        if isinstance(event.get("ts"), str):
            self.last_activity = event["ts"]
        handler = getattr(self, "_apply_" + str(event.get("type")), None)
        if handler is not None:
            handler(event)

    def _apply_accepted(self, event: Dict[str, Any]) -> None:
        input_id, run_id = str(event.get("input_id")), event.get("run_id")
        if input_id not in self.open_inputs:
            self.inputs_seen += 1
            self.open_inputs[input_id] = None
        current = self.open_inputs[input_id]
        if current is not None and run_id != current:
            if run_id is not None:
                self.anomalies.append("input %s moved from run %s to %s" % (input_id, current, run_id))
            return
        if run_id is not None and current is None:
            self.open_inputs[input_id] = run_id
            self.open_runs.setdefault(run_id, []).append(input_id)

    def _apply_result(self, event: Dict[str, Any]) -> None:
        self.results_seen += 1
        for input_id in event.get("input_ids") or []:
            if self.open_inputs.pop(input_id, "missing") == "missing":
                self.anomalies.append("result seq %s covers input %s that is not open" % (event.get("seq"), input_id))
        run_id = event.get("run_id")
        for input_id in self.open_runs.pop(run_id, []) if run_id is not None else []:
            if input_id in self.open_inputs:
                self.anomalies.append("run %s ended without covering input %s" % (run_id, input_id))
        self.last_result = {k: event.get(k) for k in ("run_id", "status", "error", "seq")}

    def _apply_request(self, event: Dict[str, Any]) -> None:
        request_id = str(event.get("request_id"))
        number = request_id[4:] if request_id.startswith("req-") else ""
        if number.isdigit():
            self.request_count = max(self.request_count, int(number))
        if event.get("state") == "pending":
            self.pending[request_id] = dict(event)
        else:
            self.pending.pop(request_id, None)
            self.closed_requests[request_id] = str(event.get("state"))

    # -- derived views ---------------------------------------------------------

    def active_run(self) -> Optional[str]:
        """The most recently started run that has no result yet."""
        return next(reversed(self.open_runs), None) if self.open_runs else None

    def is_busy(self) -> bool:
        return bool(self.open_inputs or self.open_runs or self.pending)

    def status(self, cancelling: bool = False) -> Dict[str, Any]:
        """The conversation part of `status` (docs/PROTOCOL.md section 7)."""
        if cancelling and self.is_busy():
            state = "cancelling"
        elif self.pending:
            state = "awaiting_reply"
        elif self.open_inputs or self.open_runs:
            state = "running"
        elif self.last_result and self.last_result.get("status") == "failed":
            state = "failed"
        else:
            state = "idle"
        return {
            "state": state,
            "run_id": self.active_run(),
            "queued": sum(1 for run_id in self.open_inputs.values() if run_id is None),
            "requests": [
                {"request_id": r["request_id"], "kind": r.get("kind"), "message": r.get("message")}
                for r in self.pending.values()
            ],
        }

    def to_dict(self) -> Dict[str, Any]:
        return {k: v for k, v in vars(self).items()}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Conversation":
        conv = cls()
        for key, value in data.items():
            if hasattr(conv, key):
                setattr(conv, key, value)
        return conv


def fold(events: Iterable[Dict[str, Any]]) -> Conversation:
    """Fold a whole stream of events (e.g. from eventlog.read_events)."""
    conv = Conversation()
    for event in events:
        conv.apply(event)
    return conv


def close_open_work(conv: Conversation, error: str) -> List[Dict[str, Any]]:
    """The events that end all open work with `failed` results and expire every
    pending request: used for a lost runtime, a crashed harness and SIGTERM.
    Inputs are never replayed; an input no run claimed gets a result with a
    null run_id.  Requests expire first, so whoever sees a result sees its run
    settled."""
    events: List[Dict[str, Any]] = [dict(request, state="expired") for request in conv.pending.values()]
    by_run: Dict[Optional[str], List[str]] = {}
    for input_id, run_id in conv.open_inputs.items():
        by_run.setdefault(run_id, []).append(input_id)
    for run_id in conv.open_runs:
        by_run.setdefault(run_id, [])
    for run_id, input_ids in by_run.items():
        groups = [[i] for i in input_ids] if run_id is None else [input_ids]
        for group in groups:
            events.append(result_event(run_id, group, "failed", error=error))
    return events


def result_event(
    run_id: Optional[str],
    input_ids: List[str],
    status: str,
    output: str = "",
    usage: Optional[Dict[str, Any]] = None,
    cost_usd: Optional[float] = None,
    error: Optional[str] = None,
) -> Dict[str, Any]:
    return {
        "type": "result",
        "run_id": run_id,
        "input_ids": list(input_ids),
        "status": status,
        "output": output,
        "usage": usage,
        "cost_usd": cost_usd,
        "error": error,
    }


def status_line(report: Dict[str, Any]) -> str:
    """A status report as the one compact JSON line `status` prints."""
    import json

    return json.dumps(report, ensure_ascii=False, separators=(",", ":"))


def status_report(
    conv: Conversation,
    binding: Optional[Dict[str, Any]],
    alive: bool,
    cancelling: bool = False,
    last_activity: Optional[str] = None,
) -> Dict[str, Any]:
    """The one JSON line `status` prints."""
    binding = binding or {}
    report = conv.status(cancelling)
    report.update({
        "cwd": binding.get("cwd"),
        "model": binding.get("model"),
        "adapter": binding.get("adapter"),
        "runtime": "alive" if alive else "stopped",
        "last_activity": last_activity or conv.last_activity,
    })
    if binding.get("agent") is not None:
        report["agent"] = binding["agent"]
    return report
