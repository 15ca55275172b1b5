"""Transcript entries made from one event line alone, and the defensive
readers of its fields: a line of the file may be foreign or hand-written, so
every field is read as the type it should have or as nothing, never trusted.
transcript.py folds these entries together; nothing here keeps state."""

from __future__ import annotations

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

    Entry = Dict[str, Any]

FEW_FIELDS = 4  # fields of an unknown log kind shown next to its kind

def input_entry(e: Dict[str, Any], input_id: Optional[str]) -> Entry:
    fields = {"entry": "input", "seq": as_int(e.get("seq")), "ts": as_str(e.get("ts")), "input_id": input_id,
              "run_id": as_str(e.get("run_id")), "delivery": as_str(e.get("delivery")), "text": as_text(e.get("text"))}
    if isinstance(e.get("schema"), dict):
        fields["schema"] = e["schema"]
    return fields


def result_entry(e: Dict[str, Any], run_id: Optional[str], input_ids: List[str],
                  usage: Optional[Dict[str, Any]]) -> Entry:
    fields = {"entry": "result", "seq": as_int(e.get("seq")), "ts": as_str(e.get("ts")),
              "run_id": run_id, "input_ids": input_ids, "status": as_str(e.get("status")),
              "output": as_text(e.get("output")), "usage": usage, "cost_usd": as_cost(e.get("cost_usd")),
              "error": as_str(e.get("error")), "error_class": as_str(e.get("error_class"))}
    if "output_json" in e:
        fields["output_json"] = e["output_json"]
    totals = e.get("totals")
    if isinstance(totals, dict) and type(totals.get("tokens")) is int:
        fields["totals"] = {"tokens": totals["tokens"], "cost_usd": as_cost(totals.get("cost_usd"))}
    return fields


def complete_tool(entry: Entry, e: Dict[str, Any]) -> None:
    """A tool's entry once its `tool.completed` line came."""
    status = as_str(e.get("status"))
    if status is None and "is_error" in e:  # claude's, before the vocabulary
        status = "failed" if e.get("is_error") else "completed"
    entry.update(status=status or "completed", exit_code=as_int(e.get("exit_code")),
                 duration_ms=as_int(e.get("duration_ms")))
    if isinstance(e.get("output"), str):
        entry["output"] = e["output"]


def log_entry(e: Dict[str, Any], kind: str, level: str) -> Entry:
    """A log line of a kind without an entry of its own: its kind, message and first few fields."""
    skip = ("type", "ts", "seq", "level", "kind", "run_id")
    fields = {k: v for k, v in e.items() if k not in skip}
    few = dict(list(fields.items())[:FEW_FIELDS])
    return {"entry": "log", "seq": as_int(e.get("seq")), "ts": as_str(e.get("ts")),
            "run_id": as_str(e.get("run_id")), "kind": kind, "level": level,
            "message": as_str(fields.pop("message", None)) if "message" in fields else None,
            "fields": {k: v for k, v in few.items() if k != "message"}}


def file_entry(e: Dict[str, Any]) -> Entry:
    return {"entry": "file", "seq": as_int(e.get("seq")), "ts": as_str(e.get("ts")),
            "run_id": as_str(e.get("run_id")), "tool_id": as_str(e.get("tool_id")),
            "path": as_text(e.get("path")), "change": as_str(e.get("change")),
            "move_path": as_str(e.get("move_path")), "added": as_int(e.get("added")),
            "removed": as_int(e.get("removed")), "diff": as_str(e.get("diff"))}


def session_entry(e: Dict[str, Any]) -> Entry:
    fields = {f: as_str(e.get(f)) for f in ("harness", "version", "model", "approval_policy", "sandbox", "session_id")}
    return dict(entry="session", seq=as_int(e.get("seq")), ts=as_str(e.get("ts")), **fields)


def request_entry(e: Dict[str, Any], request_id: str, seq: Optional[int]) -> Entry:
    questions = e.get("questions")
    fields = {"entry": "request", "seq": seq, "ts": as_str(e.get("ts")), "run_id": as_str(e.get("run_id")),
              "request_id": request_id, "kind": as_str(e.get("kind")), "state": as_str(e.get("state")),
              "message": as_text(e.get("message")),
              "options": [as_text(o) for o in e.get("options") or () if isinstance(o, str)],
              "questions": [q for q in questions if isinstance(q, dict)] if isinstance(questions, list) else [],
              "answer": e.get("answer")}
    if e.get("by") in ("rule", "mode"):  # answered by the bound policy, not by a reply
        fields["by"] = "rule %s" % as_text(e.get("rule")) if e["by"] == "rule" else "--mode %s" % as_text(e.get("mode"))
    return fields


def new_tool_entry(e: Dict[str, Any], tool_id: str) -> Entry:
    return {"entry": "tool", "seq": as_int(e.get("seq")), "ts": as_str(e.get("ts")),
            "run_id": as_str(e.get("run_id")), "tool_id": tool_id, "tool": "other", "name": None,
            "title": None, "status": "running", "exit_code": None, "duration_ms": None, "output": ""}


def plan_entry(e: Dict[str, Any], seq: Optional[int]) -> Entry:
    steps = [{"text": as_text(s.get("text")), "status": as_str(s.get("status")) or "pending"}
             for s in e.get("entries") or () if isinstance(s, dict)]
    return {"entry": "plan", "seq": seq, "ts": as_str(e.get("ts")), "run_id": as_str(e.get("run_id")),
            "steps": steps, "explanation": as_str(e.get("explanation"))}


def warning_entry(e: Dict[str, Any]) -> Entry:
    return {"entry": "warning", "seq": as_int(e.get("seq")), "ts": as_str(e.get("ts")),
            "run_id": as_str(e.get("run_id")), "message": as_text(e.get("message")), "source": as_str(e.get("source"))}


def tool_id_of(e: Dict[str, Any]) -> str:
    """`tool_id`, or what an adapter called it before the vocabulary."""
    return as_str(e.get("tool_id")) or as_str(e.get("item_id")) or as_str(e.get("tool_use_id")) or "?"


def keep_ends(text: str, keep: int) -> Any:
    """(text, characters cut): at most `keep` characters of each end."""
    if len(text) <= 2 * keep + 64:
        return text, 0
    return text[:keep] + text[-keep:], len(text) - 2 * keep


def as_str(value: Any) -> Optional[str]:
    """A string field, or None (numbers are spelled; objects are not strings)."""
    if value is None or isinstance(value, (dict, list, bool)):
        return None
    return value if isinstance(value, str) else str(value)


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_cost(value: Any) -> Optional[float]:
    """A cost as a finite float, or None: a JSON number may be a 400-digit
    integer or Infinity, neither of which `$%.4f` (nor a strict JSON reader
    of `log --json`) takes."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        cost = float(value)
    except OverflowError:
        return None
    return cost if cost - cost == 0 else None  # inf - inf and nan - nan are nan


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"
