"""What a well-formed event line is, and a well-formed saved conversation.

One definition, used by the fold (status, recovery, the runtime's start-up,
state.py), the snapshot's conversation and `wait`'s search of the file: a
line that breaks it is skipped by all of them alike (EVENT.md, "Rules for
readers").  Plain isinstance checks: the fold runs this on every line of a
long file."""

from __future__ import annotations

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional

# The largest `seq` counted: every JSON reader (JavaScript's too) holds it exactly.
MAX_SEQ = 2 ** 53 - 1
# Skipped lines and other anomalies remembered (the newest): a file full of
# foreign lines must not grow the snapshot without bound.
MAX_ANOMALIES = 100


def _is_seq(value: Any) -> bool:
    return type(value) is int and 1 <= value <= MAX_SEQ


def is_ts(value: Any) -> bool:
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
                ("kind", _one_of("permission", "question", "mode"), True), ("message", _is_str, True),
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
    if ("ts" in event or not unwritten) and not is_ts(event.get("ts")):
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
    "last_activity": lambda v: v is None or is_ts(v),
    "inputs_seen": _is_count,
    "results_seen": _is_count,
    "spent_tokens": _is_count,
    "spent_cost": lambda v: v is None or _is_cost(v),
    "anomalies": lambda v: _is_strs(v) and len(v) <= MAX_ANOMALIES,
}
