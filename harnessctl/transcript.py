"""Events -> transcript entries: what `harnessctl log` shows, as plain data.

A pure fold (docs/PROTOCOL.md section 16): `Transcript.add` takes one event
(or one unreadable line) at a time and keeps one entry per thing a person
reads — an input, a message, a tool call, a file change, a plan, a request, a
result — keyed by its id, so that a later snapshot (a `message` with the same
message_id, a `request` that was replied, a `tool.completed` after its
`tool.started`) updates the entry in place instead of adding a second one.
The entries are JSON-ready dicts: `log --json` prints them as they are, and
render.py turns them into text.  Nothing here reads a file or a terminal.

Every field is read defensively: the file may hold foreign or hand-written
lines, and a line of an unexpected shape becomes an `unreadable` entry, never
a traceback.
"""

from __future__ import annotations

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Set

    Entry = Dict[str, Any]

STREAM_KEEP = 4000  # characters kept from each end of a streamed text no message replaced
OUTPUT_KEEP = 4000  # characters kept from the end of a running tool's streamed output
LOG_TYPES = ("accepted", "message", "request", "result", "log")
HIDDEN_LOG_KINDS = ("native",)  # harness wire messages: for debugging, never for reading
SHOWN_LEVELS = ("info", "warning", "error")
FEW_FIELDS = 4  # fields of an unknown log kind shown next to its kind


class Transcript:
    """The entries of one event file (or of the part of it read), in the order
    they first appeared.  `add` returns the keys of the entries it changed, so
    that `log --follow` prints only what is new."""

    def __init__(self) -> None:
        self.entries: Dict[str, Entry] = {}
        self.messages_of_run: Dict[Optional[str], int] = {}  # run_id -> messages seen
        self.message_ids: Dict[str, str] = {}  # message_id -> run_id
        self.ended_runs: Dict[Optional[str], bool] = {}
        self.usage: Dict[Optional[str], Dict[str, Any]] = {}  # run_id -> the latest `usage` counts
        self.streams: Dict[Optional[str], List[str]] = {}  # run_id -> its stream entries' keys
        self._last_key: Optional[str] = None  # the entry the previous line touched (reasoning merges)
        self.run_seen = False  # whether any line belongs to a run (or is an input or a result)
        self.running: Dict[Optional[str], List[str]] = {}  # run_id -> its tools started and not completed
        self.approves: Dict[str, str] = {}  # request key -> the key of the (running) tool it is about
        self.approved: Set[str] = set()  # the values of `approves`

    # -- reading -----------------------------------------------------------------

    def visible(self) -> List[Entry]:
        """The entries a reader sees now, in order (streams a message replaced,
        hidden ones, are left out)."""
        return [e for e in self.entries.values() if self.shown(e)]

    def shown(self, entry: Entry) -> bool:
        if entry["entry"] != "stream":
            return True
        message_id = entry.get("message_id")
        if message_id is not None:
            return message_id not in self.message_ids
        return not self.messages_of_run.get(entry.get("run_id"))

    def settled(self, entry: Entry) -> bool:
        """Whether a follower may print the entry now: a stream only once its
        run ended without a message for it (then it is the cut-off text)."""
        if entry["entry"] == "stream":
            return bool(self.ended_runs.get(entry.get("run_id"))) and self.shown(entry)
        return True

    # -- folding -----------------------------------------------------------------

    def unreadable(self, seq_before: Optional[int], offset: int, size: int, reason: str) -> List[str]:
        """A line that is not an event (torn, foreign, of an unknown type)."""
        key = "unreadable:%d" % offset
        self.entries[key] = {"entry": "unreadable", "seq": None, "ts": None, "offset": offset, "bytes": size,
                             "reason": reason, "after_seq": seq_before}
        self._last_key = key
        return [key]

    def add(self, event: Dict[str, Any], offset: int = 0, size: int = 0) -> List[str]:
        """Fold one parsed line; returns the keys of the entries it changed."""
        kind = event.get("type")
        if kind in ("accepted", "result") or isinstance(event.get("run_id"), str):
            self.run_seen = True
        try:
            if kind == "log":
                keys = self._log(event)
            elif kind in LOG_TYPES:
                keys = getattr(self, "_" + str(kind))(event)
            else:
                return self.unreadable(_int(event.get("seq")), offset, size, "unknown type %s" % _short(kind))
        except (TypeError, ValueError, AttributeError, KeyError) as e:  # a line of a shape nobody writes
            return self.unreadable(_int(event.get("seq")), offset, size, "%s line of an unexpected shape (%s)"
                                   % (_short(kind), type(e).__name__))
        if keys:
            self._last_key = keys[-1]
        return keys

    def _put(self, key: str, fields: Entry) -> List[str]:
        entry = self.entries.get(key)
        if entry is None:
            self.entries[key] = fields
        else:
            entry.update(fields)
        return [key]

    def _accepted(self, e: Dict[str, Any]) -> List[str]:
        input_id = _str(e.get("input_id"))
        fields = {"entry": "input", "seq": _int(e.get("seq")), "ts": _str(e.get("ts")), "input_id": input_id,
                  "run_id": _str(e.get("run_id")), "delivery": _str(e.get("delivery")), "text": _text(e.get("text"))}
        if isinstance(e.get("schema"), dict):
            fields["schema"] = e["schema"]
        key = "input:%s" % input_id
        old = self.entries.get(key)
        if old is not None:
            fields["seq"] = old["seq"]  # a snapshot fills in the run; the input stays where it was said
            fields["run_id"] = fields["run_id"] or old.get("run_id")
        return self._put(key, fields)

    def _message(self, e: Dict[str, Any]) -> List[str]:
        message_id = _str(e.get("message_id")) or "seq-%s" % e.get("seq")
        run_id = _str(e.get("run_id"))
        key = "message:%s" % message_id
        if key not in self.entries:
            self.messages_of_run[run_id] = self.messages_of_run.get(run_id, 0) + 1
        self.message_ids[message_id] = run_id or ""
        seq = self.entries[key]["seq"] if key in self.entries else _int(e.get("seq"))
        return self._put(key, {"entry": "message", "seq": seq, "ts": _str(e.get("ts")), "run_id": run_id,
                               "message_id": message_id, "role": _str(e.get("role")) or "assistant",
                               "text": _text(e.get("text"))})

    def _request(self, e: Dict[str, Any]) -> List[str]:
        request_id = _str(e.get("request_id")) or "?"
        key = "request:%s" % request_id
        if key not in self.entries and e.get("kind") == "permission":
            tool = self._approved_tool(e)
            if tool is not None:
                self.approves[key] = tool
                self.approved.add(tool)
        seq = self.entries[key]["seq"] if key in self.entries else _int(e.get("seq"))
        questions = e.get("questions")
        fields = {"entry": "request", "seq": seq, "ts": _str(e.get("ts")), "run_id": _str(e.get("run_id")),
                  "request_id": request_id, "kind": _str(e.get("kind")), "state": _str(e.get("state")),
                  "message": _text(e.get("message")),
                  "options": [_text(o) for o in e.get("options") or () if isinstance(o, str)],
                  "questions": [q for q in questions if isinstance(q, dict)] if isinstance(questions, list) else [],
                  "answer": e.get("answer")}
        if e.get("by") in ("rule", "mode"):  # answered by the bound policy, not by a reply
            fields["by"] = "rule %s" % _text(e.get("rule")) if e["by"] == "rule" else "--mode %s" % _text(e.get("mode"))
        return self._put(key, fields)

    def _approved_tool(self, e: Dict[str, Any]) -> Optional[str]:
        """The running tool a permission request asks about: codex and Claude
        start the tool before they ask, so its line comes first in the file,
        but a reader wants the approval above what it let run.  By the id the
        request names (ACP `tool_id`, Claude `tool_use_id`), else the latest
        running tool of its run and kind that no other request claimed."""
        run_id = _str(e.get("run_id"))
        running = self.running.get(run_id, [])
        named = _str(e.get("tool_id")) or _str(e.get("tool_use_id"))
        if named is not None:
            key = "tool:%s:%s" % (run_id, named)
            return key if key in running else None
        for key in reversed(running):
            if self.entries[key]["tool"] == _str(e.get("tool")) and key not in self.approved:
                return key
        return None

    def tool_of(self, key: str) -> Optional[str]:
        """The tool an entry belongs beside: a file change under the tool that
        made it, a permission request above the tool it approved."""
        entry = self.entries[key]
        if entry["entry"] == "file" and entry.get("tool_id") is not None:
            return "tool:%s:%s" % (entry.get("run_id"), entry["tool_id"])
        return self.approves.get(key)

    def _result(self, e: Dict[str, Any]) -> List[str]:
        run_id = _str(e.get("run_id"))
        input_ids = [str(i) for i in e.get("input_ids") or () if isinstance(i, str)]
        key = "result:%s" % (run_id or ",".join(input_ids) or e.get("seq"))
        usage = e.get("usage") if isinstance(e.get("usage"), dict) else None
        if usage is None and run_id in self.usage:
            usage = self.usage[run_id]
        self.ended_runs[run_id] = True
        fields = {"entry": "result", "seq": _int(e.get("seq")), "ts": _str(e.get("ts")),
                  "run_id": run_id, "input_ids": input_ids, "status": _str(e.get("status")),
                  "output": _text(e.get("output")), "usage": usage, "cost_usd": _cost(e.get("cost_usd")),
                  "error": _str(e.get("error")), "error_class": _str(e.get("error_class"))}
        if "output_json" in e:
            fields["output_json"] = e["output_json"]
        totals = e.get("totals")
        if isinstance(totals, dict) and type(totals.get("tokens")) is int:
            fields["totals"] = {"tokens": totals["tokens"], "cost_usd": _cost(totals.get("cost_usd"))}
        keys = self._put(key, fields)
        # The run's cut-off streams are final now: a follower prints them before the result.
        streams = self.streams.get(run_id, [])
        for stream in streams:
            self.entries[stream]["cut_off"] = True
        return streams + keys

    # -- log lines ---------------------------------------------------------------

    def _log(self, e: Dict[str, Any]) -> List[str]:
        kind = _str(e.get("kind")) or ""
        level = _str(e.get("level")) or "info"
        handler = LOG_KINDS.get(kind)
        if handler is not None:
            return handler(self, e)
        if kind in HIDDEN_LOG_KINDS or level not in SHOWN_LEVELS:
            return []
        if kind == "diagnostic" and level == "info":
            return []
        skip = ("type", "ts", "seq", "level", "kind", "run_id")
        fields = {k: v for k, v in e.items() if k not in skip}
        few = dict(list(fields.items())[:FEW_FIELDS])
        key = "log:%s" % e.get("seq")
        return self._put(key, {"entry": "log", "seq": _int(e.get("seq")), "ts": _str(e.get("ts")),
                               "run_id": _str(e.get("run_id")), "kind": kind, "level": level,
                               "message": _str(fields.pop("message", None)) if "message" in fields else None,
                               "fields": {k: v for k, v in few.items() if k != "message"}})

    def _text_delta(self, e: Dict[str, Any]) -> List[str]:
        run_id, message_id = _str(e.get("run_id")), _str(e.get("message_id"))
        text = _text(e.get("text") if "text" in e else e.get("delta"))  # `delta`: files from before the vocabulary
        if not text or e.get("parent_tool_id"):
            return []  # a sub-agent's text belongs to its tool
        key = "stream:%s:%s" % (run_id, message_id)
        entry = self.entries.get(key)
        if entry is None:
            self.entries[key] = {"entry": "stream", "seq": _int(e.get("seq")), "ts": _str(e.get("ts")),
                                 "run_id": run_id, "message_id": message_id, "text": text, "omitted": 0,
                                 "cut_off": bool(self.ended_runs.get(run_id))}
            self.streams.setdefault(run_id, []).append(key)
        else:
            entry["text"], cut = _keep_ends(entry["text"] + text, STREAM_KEEP)
            entry["omitted"] += cut
        return [key]

    def _reasoning(self, e: Dict[str, Any]) -> List[str]:
        run_id, form = _str(e.get("run_id")), _str(e.get("form")) or "raw"
        text = _text(e.get("text") if "text" in e else e.get("delta"))
        last = self.entries.get(self._last_key or "")
        if last is not None and last["entry"] == "reasoning" and last.get("run_id") == run_id \
                and last.get("form") == form:
            last["text"], _ = _keep_ends(last["text"] + text, STREAM_KEEP)  # one thought, merged
            return [self._last_key or ""]
        key = "reasoning:%s" % e.get("seq")
        return self._put(key, {"entry": "reasoning", "seq": _int(e.get("seq")), "ts": _str(e.get("ts")),
                               "run_id": run_id, "form": form, "text": text})

    def _tool(self, e: Dict[str, Any], done: bool) -> List[str]:
        tool_id = _tool_id(e)
        key = "tool:%s:%s" % (_str(e.get("run_id")), tool_id)  # a harness's tool ids may repeat across runs
        entry = self.entries.get(key)
        if entry is None:
            entry = {"entry": "tool", "seq": _int(e.get("seq")), "ts": _str(e.get("ts")),
                     "run_id": _str(e.get("run_id")), "tool_id": tool_id, "tool": "other", "name": None,
                     "title": None, "status": "running", "exit_code": None, "duration_ms": None, "output": ""}
            self.entries[key] = entry
            if not done:
                self.running.setdefault(entry["run_id"], []).append(key)
        for field in ("tool", "name", "title"):
            value = _str(e.get(field))
            if value:
                entry[field] = value
        if not entry["title"]:
            entry["title"] = _str(e.get("command")) or entry["name"] or entry["tool"]
        if done:
            status = _str(e.get("status"))
            if status is None and "is_error" in e:  # claude's, before the vocabulary
                status = "failed" if e.get("is_error") else "completed"
            entry.update(status=status or "completed", exit_code=_int(e.get("exit_code")),
                         duration_ms=_int(e.get("duration_ms")))
            running = self.running.get(entry["run_id"], [])
            if key in running:
                running.remove(key)
            if isinstance(e.get("output"), str):
                entry["output"] = e["output"]
        return [key]

    def _tool_started(self, e: Dict[str, Any]) -> List[str]:
        return self._tool(e, False)

    def _tool_output(self, e: Dict[str, Any]) -> List[str]:
        entry = self.entries.get("tool:%s:%s" % (_str(e.get("run_id")), _tool_id(e)))
        if entry is None or entry["status"] != "running":
            return []
        text = _text(e.get("text") if "text" in e else e.get("delta"))
        entry["output"] = (entry["output"] + text)[-OUTPUT_KEEP:]
        return []  # streamed output is shown with the tool line, once it completes

    def _tool_completed(self, e: Dict[str, Any]) -> List[str]:
        return self._tool(e, True)

    def _file_changed(self, e: Dict[str, Any]) -> List[str]:
        key = "file:%s" % e.get("seq")
        return self._put(key, {"entry": "file", "seq": _int(e.get("seq")), "ts": _str(e.get("ts")),
                               "run_id": _str(e.get("run_id")), "tool_id": _str(e.get("tool_id")),
                               "path": _text(e.get("path")), "change": _str(e.get("change")),
                               "move_path": _str(e.get("move_path")), "added": _int(e.get("added")),
                               "removed": _int(e.get("removed")), "diff": _str(e.get("diff"))})

    def _plan(self, e: Dict[str, Any]) -> List[str]:
        """One checklist per run: each `plan` line is the whole plan as it stands."""
        run_id = _str(e.get("run_id"))
        key = "plan:%s" % run_id
        steps = [{"text": _text(s.get("text")), "status": _str(s.get("status")) or "pending"}
                 for s in e.get("entries") or () if isinstance(s, dict)]
        seq = self.entries[key]["seq"] if key in self.entries else _int(e.get("seq"))
        return self._put(key, {"entry": "plan", "seq": seq, "ts": _str(e.get("ts")), "run_id": run_id,
                               "steps": steps, "explanation": _str(e.get("explanation"))})

    def _usage(self, e: Dict[str, Any]) -> List[str]:
        """Not an entry: the latest counts of a run, for its result when that has none."""
        counts = {k: v for k, v in e.items() if k.endswith(("_tokens", "_window", "_used")) and v is not None}
        self.usage[_str(e.get("run_id"))] = counts
        return []

    def _session(self, e: Dict[str, Any]) -> List[str]:
        fields = {f: _str(e.get(f)) for f in ("harness", "version", "model", "approval_policy", "sandbox",
                                              "session_id")}
        return self._put("session:%s" % e.get("seq"), dict(entry="session", seq=_int(e.get("seq")),
                                                            ts=_str(e.get("ts")), **fields))

    def _warning(self, e: Dict[str, Any]) -> List[str]:
        return self._put("warning:%s" % e.get("seq"), {
            "entry": "warning", "seq": _int(e.get("seq")), "ts": _str(e.get("ts")), "run_id": _str(e.get("run_id")),
            "message": _text(e.get("message")), "source": _str(e.get("source"))})


LOG_KINDS = {
    "text.delta": Transcript._text_delta,
    "reasoning.delta": Transcript._reasoning,
    "tool.started": Transcript._tool_started,
    "tool.output": Transcript._tool_output,
    "tool.completed": Transcript._tool_completed,
    "file.changed": Transcript._file_changed,
    "plan": Transcript._plan,
    "usage": Transcript._usage,
    "session": Transcript._session,
    "warning": Transcript._warning,
}


def _tool_id(e: Dict[str, Any]) -> str:
    """`tool_id`, or what an adapter called it before the vocabulary."""
    return _str(e.get("tool_id")) or _str(e.get("item_id")) or _str(e.get("tool_use_id")) or "?"


def _keep_ends(text: str, keep: int) -> Any:
    """(text, characters cut): at most `keep` characters of each end."""
    if len(text) <= 2 * keep + 64:
        return text, 0
    return text[:keep] + text[-keep:], len(text) - 2 * keep


def _str(value: Any) -> Optional[str]:
    """A string field, or None (numbers are spelled; objects are not strings)."""
    if value is None or isinstance(value, (dict, list, bool)):
        return None
    return value if isinstance(value, str) else str(value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _cost(value: Any) -> Optional[float]:
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


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"
