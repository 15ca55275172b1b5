"""The pure fold: critical events in, conversation state out.

Status, recovery of a lost runtime and the runtime's own start-up all read the
conversation through `Conversation.apply`, so there is one definition of what
the event file means.  `log` lines only move `seq` and `last_activity`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Iterable, List, Optional


LOST = "runtime lost; input outcome is uncertain"
# The largest `seq` counted: every JSON reader (JavaScript's too) holds it exactly.
MAX_SEQ = 2 ** 53 - 1
# Skipped lines and other anomalies remembered (the newest): a file full of
# foreign lines must not grow the snapshot without bound.
MAX_ANOMALIES = 100


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
        if counted and event.get("type") == "log" and _is_ts(event.get("ts")):
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


# -- what a well-formed line is ---------------------------------------------------
#
# One definition, used by the fold (status, recovery, the runtime's start-up),
# the snapshot's conversation and `wait`'s search of the file: a line that
# breaks it is skipped by all of them alike (EVENT.md, "Rules for readers").
# Plain isinstance checks: the fold runs this on every line of a long file.


def _is_seq(value: Any) -> bool:
    return type(value) is int and 1 <= value <= MAX_SEQ


def _is_ts(value: Any) -> bool:
    """`2026-12-02T10:40:33.794Z`: the separators in place, ASCII digits elsewhere
    (checked without importing re, on bytes: the fastest way in the fold)."""
    if type(value) is not str:
        return False
    data = value.encode("utf-8", "replace")
    return len(data) == 24 and data[4:20:3] == b"--T::." and data[23] == 90 and data.translate(None, b"0123456789") \
        == b"--T::.Z"


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_id(value: Any) -> bool:
    return type(value) is str and value != ""


def _is_id_or_null(value: Any) -> bool:
    return value is None or _is_id(value)


def _is_str_or_null(value: Any) -> bool:
    return value is None or type(value) is str


def _is_ids(value: Any) -> bool:
    return type(value) is list and all(_is_id(item) for item in value)


def _is_strs(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _is_object(value: Any) -> bool:
    return type(value) is dict


def _is_any(value: Any) -> bool:
    return True


def _is_object_or_null(value: Any) -> bool:
    return value is None or type(value) is dict


def _is_cost(value: Any) -> bool:
    """A finite number or null (`Infinity` and `NaN` are not JSON)."""
    return value is None or type(value) is int or (type(value) is float and value - value == 0)


def _is_request_id(value: Any) -> bool:
    """`req-N`, N from 1, short enough to read as a number."""
    return (type(value) is str and 5 <= len(value) <= 24 and value[:4] == "req-" and value[4] != "0"
            and value[4:].isdigit() and value.isascii())


def _is_questions(value: Any) -> bool:
    return type(value) is list and all(type(q) is dict and _is_str(q.get("id")) and _is_str(q.get("question"))
                                       for q in value)


def _is_answer(value: Any) -> bool:
    return type(value) in (str, dict)


def _one_of(*values: str) -> Callable[[Any], bool]:
    return lambda value: type(value) is str and value in values


# Per critical type: (field, check, required).  `log` lines need only the common fields.
FIELDS = {
    "accepted": (("input_id", _is_id, True), ("text", _is_str, True),
                 ("delivery", _one_of("start", "steer", "queued"), True), ("run_id", _is_id_or_null, True),
                 ("schema", _is_object, False)),
    "message": (("run_id", _is_id_or_null, True), ("message_id", _is_id, True), ("role", _is_str, True),
                ("text", _is_str, True)),
    "request": (("run_id", _is_id_or_null, True), ("request_id", _is_request_id, True),
                ("state", _one_of("pending", "replied", "expired"), True),
                ("kind", _one_of("permission", "question"), True), ("message", _is_str, True),
                ("options", _is_strs, True), ("tool", _is_str_or_null, False), ("questions", _is_questions, False),
                ("answer", _is_answer, False)),
    "result": (("run_id", _is_id_or_null, True), ("input_ids", _is_ids, True),
               ("status", _one_of("completed", "cancelled", "failed"), True), ("output", _is_str, True),
               ("usage", _is_object_or_null, True), ("cost_usd", _is_cost, True), ("error", _is_str_or_null, True),
               ("error_class", _is_str_or_null, False), ("output_json", _is_any, False), ("totals", _is_object, False)),
    "log": (),
}


def problem(event: Any, unwritten: bool = False) -> Optional[str]:
    """Why `event` (a parsed line) is not a well-formed event, or None: every
    field EVENT.md gives is there (optional ones may be left out) with its
    type.  `unwritten`: our own event before it is written may lack `ts` and `seq`."""
    if type(event) is not dict:
        return "not a JSON object"
    kind = event.get("type")
    fields = FIELDS.get(kind) if type(kind) is str else None
    if fields is None:
        return "type %s" % _short(kind)
    if ("seq" in event or not unwritten) and not _is_seq(event.get("seq")):
        return "%s with seq %s" % (kind, _short(event.get("seq")))
    if ("ts" in event or not unwritten) and not _is_ts(event.get("ts")):
        return "%s with ts %s" % (kind, _short(event.get("ts")))
    for name, check, required in fields:
        if name in event:
            if not check(event[name]):
                return "%s with %s %s" % (kind, name, _short(event[name]))
        elif required:
            return "%s without %s" % (kind, name)
    return None


def _short(value: Any) -> str:
    """A value for a message: short, whatever it is."""
    if type(value) in (dict, list):
        return "a JSON %s" % ("object" if type(value) is dict else "array")
    if type(value) is int and value.bit_length() > 64:
        return "a %d-bit integer" % value.bit_length()
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_SEQ


def _is_pending(value: Any) -> bool:
    return type(value) is dict and all(type(r) is dict and problem(r) is None and r.get("type") == "request"
                                       and r.get("state") == "pending" and r.get("request_id") == key
                                       for key, r in value.items())


def _is_last_result(value: Any) -> bool:
    return value is None or (type(value) is dict and _is_id_or_null(value.get("run_id"))
                             and _is_str_or_null(value.get("status")) and _is_str_or_null(value.get("error"))
                             and (value.get("seq") is None or _is_seq(value.get("seq"))))


# What Conversation.from_dict accepts for each field (the types __init__ declares).
SAVED_FIELDS: Dict[str, Callable[[Any], bool]] = {
    "seq": _is_count,
    "open_inputs": lambda v: type(v) is dict and all(_is_id(k) and _is_id_or_null(r) for k, r in v.items()),
    "open_runs": lambda v: type(v) is dict and all(_is_id(k) and _is_ids(i) for k, i in v.items()),
    "pending": _is_pending,
    "closed_requests": lambda v: type(v) is dict and all(_is_request_id(k) and _is_str(c) for k, c in v.items()),
    "request_count": _is_count,
    "last_result": _is_last_result,
    "last_activity": lambda v: v is None or _is_ts(v),
    "inputs_seen": _is_count,
    "results_seen": _is_count,
    "spent_tokens": _is_count,
    "spent_cost": lambda v: v is None or _is_cost(v),
    "anomalies": lambda v: _is_strs(v) and len(v) <= MAX_ANOMALIES,
}


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
    spent so far (a live runtime's count of their `usage` lines)."""
    binding = binding or {}
    report = conv.status(cancelling)
    report.update({
        "cwd": binding.get("cwd"),
        "model": binding.get("model"),
        "adapter": binding.get("adapter"),
        "mode": binding.get("mode"),
        "runtime": "alive" if alive else "stopped",
        "last_activity": last_activity or conv.last_activity,
    })
    if binding.get("agent") is not None:
        report["agent"] = binding["agent"]
    if binding.get("rules") is not None:
        report["rules"] = binding["rules"]
    totals = totals_after(conv, None, None)
    report["totals"] = dict(totals, tokens=totals["tokens"] + running_tokens)
    for key in ("max_tokens", "max_cost_usd"):
        if binding.get(key) is not None:
            report[key] = binding[key]
    for key in ("on_request", "on_result"):
        if binding.get(key) is not None:
            report[key] = True  # that a hook is bound, never its command line: it may hold a secret (a token)
    return report
