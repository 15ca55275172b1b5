"""The pure fold: critical events in, conversation state out.

Status, recovery of a lost runtime and the runtime's own start-up all read the
conversation through `Conversation.apply`, so there is one definition of what
the event file means (a line it skips: wellformed.py).  `log` lines only
move `seq` and `last_activity`.  The status line is the conversation's state
with the binding shown as fields.FIELDS says.
"""

from __future__ import annotations

from ..fields import ALWAYS, FIELDS, THAT_BOUND, WHEN_BOUND
from .wellformed import MAX_ANOMALIES, MAX_SEQ, SAVED_FIELDS, is_ts, problem

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Collection, Dict, Iterable, List, Optional


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
        # What the finished runs spent, from their results (budget.py): tokens,
        # and the cost in US dollars (None until a result reports one).
        self.spent_tokens = 0
        self.spent_cost: Optional[float] = None
        self.anomalies: List[str] = []  # things a correct writer never produces

    def apply(self, event: Dict[str, Any], unwritten: bool = False) -> None:
        """Fold one line in.  A line that is not a well-formed event (problem())
        is skipped and recorded as an anomaly; its `seq` still counts when it is
        one, so that no number in the file is ever used again.  `unwritten`:
        an event of our own that is not in the file yet (a full disk held it
        back), without the `ts` and `seq` writing gives it."""
        seq: Any = event.get("seq")
        counted = type(seq) is int and 0 < seq <= MAX_SEQ
        if counted and seq > self.seq:
            self.seq = seq  # the highest: a foreign line with a low seq never makes us reuse one
        if counted and event.get("type") == "log" and is_ts(event.get("ts")):
            self.last_activity = event["ts"]  # most lines: only their seq and ts matter
            return
        reason = problem(event, unwritten)
        if reason is not None:
            self._anomaly("a line was skipped: %s" % reason)
            return
        if "ts" in event:
            self.last_activity = event["ts"]
        handler = getattr(self, "_apply_" + event["type"], None)
        if handler is not None:
            handler(event)

    def _anomaly(self, text: str) -> None:
        self.anomalies.append(text if len(text) <= 300 else text[:297] + "...")  # a foreign id may be megabytes
        if len(self.anomalies) > MAX_ANOMALIES:
            del self.anomalies[0]

    def _apply_accepted(self, event: Dict[str, Any]) -> None:
        input_id, run_id = event["input_id"], event["run_id"]
        if input_id not in self.open_inputs:
            self.inputs_seen += 1
            self.open_inputs[input_id] = None
        current = self.open_inputs[input_id]
        if current is not None and run_id != current:
            if run_id is not None:
                self._anomaly("input %s moved from run %s to %s" % (input_id, current, run_id))
            return
        if run_id is not None and current is None:
            self.open_inputs[input_id] = run_id
            self.open_runs.setdefault(run_id, []).append(input_id)

    def _apply_result(self, event: Dict[str, Any]) -> None:
        self.results_seen += 1
        self.spent_tokens += spent(event["usage"])
        if event["cost_usd"] is not None:
            self.spent_cost = (self.spent_cost or 0.0) + event["cost_usd"]
        for input_id in event["input_ids"]:
            if self.open_inputs.pop(input_id, "missing") == "missing":
                self._anomaly("result seq %s covers input %s that is not open" % (event.get("seq"), input_id))
        run_id = event["run_id"]
        for input_id in self.open_runs.pop(run_id, []) if run_id is not None else []:
            if input_id in self.open_inputs:
                self._anomaly("run %s ended without covering input %s" % (run_id, input_id))
        self.last_result = {k: event.get(k) for k in ("run_id", "status", "error", "seq")}

    def _apply_request(self, event: Dict[str, Any]) -> None:
        request_id = event["request_id"]
        self.request_count = max(self.request_count, int(request_id[4:]))
        if event["state"] == "pending":
            self.pending[request_id] = dict(event)
        else:
            self.pending.pop(request_id, None)
            self.closed_requests[request_id] = event["state"]

    # -- derived views ---------------------------------------------------------

    def active_run(self) -> Optional[str]:
        """The most recently started run that has no result yet."""
        return next(reversed(self.open_runs), None) if self.open_runs else None

    def is_busy(self) -> bool:
        return bool(self.open_inputs or self.open_runs or self.pending)

    def status(self, cancelling: bool = False) -> Dict[str, Any]:
        """The conversation part of `status` (docs/PROTOCOL-COMMANDS.md section 7)."""
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
    def from_dict(cls, data: Any) -> "Conversation":
        """The conversation a snapshot saved (to_dict).  ValueError unless every
        field has the shape the fold gives it: the snapshot is a file in the
        sidecar, and what it says is used as if folded (then the caller folds
        the event file instead)."""
        conv = cls()
        if type(data) is not dict:
            raise ValueError("not a JSON object")
        for key, value in data.items():
            check = SAVED_FIELDS.get(key)
            if check is None:
                continue  # a field of another version: the fold's own default stays
            if not check(value):
                raise ValueError("%s is not what the fold keeps there" % key)
            setattr(conv, key, value)
        return conv


# The counts a run's tokens are: every prompt token and every output token.
# Codex and the vocabulary's `usage` line count cached prompt tokens inside
# input_tokens; the Messages API (Claude's results) counts cache reads and
# writes apart, under these names, so they are added.
SPENT_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def spent(usage: Any) -> int:
    """The tokens a `usage` object (of a result or a `usage` line) says were spent."""
    if type(usage) is not dict:
        return 0
    return sum(usage[k] for k in SPENT_KEYS if type(usage.get(k)) is int and usage[k] > 0)


def fold(events: Iterable[Dict[str, Any]]) -> Conversation:
    """Fold a whole stream of events (e.g. from eventlog.read_events)."""
    conv = Conversation()
    for event in events:
        conv.apply(event)
    return conv


def close_open_work(conv: Conversation, error: str, keep: Collection[str] = ()) -> List[Dict[str, Any]]:
    """The events that end all open work with `failed` results and expire every
    pending request: used for a lost runtime, a crashed harness and SIGTERM.
    Inputs are never replayed; an input no run claimed gets a result with a
    null run_id.  Requests expire first, so whoever sees a result sees its run
    settled.  `keep`: inputs the runtime still holds for a run of their own."""
    events: List[Dict[str, Any]] = [dict(request, state="expired") for request in conv.pending.values()]
    by_run: Dict[Optional[str], List[str]] = {}
    for input_id, run_id in conv.open_inputs.items():
        if input_id not in keep:
            by_run.setdefault(run_id, []).append(input_id)
    for run_id in conv.open_runs:
        by_run.setdefault(run_id, [])
    for run_id, input_ids in by_run.items():
        groups = [[i] for i in input_ids] if run_id is None else [input_ids]
        for group in groups:
            events.append(result_event(run_id, group, "failed", error=error, totals=totals_after(conv, None, None)))
    return events


def totals_after(conv: Conversation, usage: Any, cost: Optional[float]) -> Dict[str, Any]:
    """The conversation's totals (the result's `totals`, status's `totals`)
    once a result with `usage` and `cost` is counted."""
    spent_cost = conv.spent_cost if cost is None else (conv.spent_cost or 0.0) + cost
    return {"tokens": conv.spent_tokens + spent(usage),
            "cost_usd": None if spent_cost is None else round(spent_cost, 6)}


def result_event(
    run_id: Optional[str],
    input_ids: List[str],
    status: str,
    output: str = "",
    usage: Optional[Dict[str, Any]] = None,
    cost_usd: Optional[float] = None,
    error: Optional[str] = None,
    totals: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """A result line; `totals` (totals_after) is left out only by tests that build one by hand."""
    event = {
        "type": "result",
        "run_id": run_id,
        "input_ids": list(input_ids),
        "status": status,
        "output": output,
        "usage": usage,
        "cost_usd": cost_usd,
        "error": error,
    }
    if totals is not None:
        event["totals"] = totals
    return event


def status_line(report: Dict[str, Any]) -> str:
    """A status report as the one compact JSON line `status` prints (escaped
    where a foreign line's lone surrogate would make it invalid UTF-8)."""
    import json

    line = json.dumps(report, ensure_ascii=False, separators=(",", ":"))
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(report, separators=(",", ":"))
    return line


def status_report(
    conv: Conversation,
    binding: Optional[Dict[str, Any]],
    alive: bool,
    cancelling: bool = False,
    last_activity: Optional[str] = None,
    running_tokens: int = 0,
) -> Dict[str, Any]:
    """The one JSON line `status` prints.  `running_tokens`: what the open runs
    spent so far (a live runtime's count of their `usage` lines).  The
    fields always shown come first; the totals stand before the limits on
    them; a hook shows only that it is bound."""
    binding = binding or {}
    report = conv.status(cancelling)
    report.update(shown(binding, ALWAYS))
    report.update({"runtime": "alive" if alive else "stopped", "last_activity": last_activity or conv.last_activity})
    report.update(shown(binding, WHEN_BOUND, change=False))
    totals = totals_after(conv, None, None)
    report["totals"] = dict(totals, tokens=totals["tokens"] + running_tokens)
    report.update(shown(binding, WHEN_BOUND, change=True))
    report.update(shown(binding, THAT_BOUND))
    return report


def shown(binding: Dict[str, Any], status: str, change: Optional[bool] = None) -> Dict[str, Any]:
    """What `status` shows of the bound fields whose status is `status` (and,
    unless None, that a later send may `change` or not), in table order."""
    found: Dict[str, Any] = {}
    for field in FIELDS:
        value = binding.get(field.name)
        if field.status != status or change not in (None, field.change) or (status != ALWAYS and value is None):
            continue
        found[field.name] = True if status == THAT_BOUND else value  # a hook's command line may hold a secret
    return found
