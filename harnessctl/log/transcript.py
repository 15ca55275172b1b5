"""Events -> transcript entries: what `harnessctl log` shows, as plain data.

A pure fold (docs/PROTOCOL-COMMANDS.md section 16): `Transcript.add` takes one event
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

from .entries import (
    as_int,
    as_str,
    as_text,
    complete_tool,
    file_entry,
    input_entry,
    keep_ends,
    log_entry,
    new_tool_entry,
    plan_entry,
    request_entry,
    result_entry,
    session_entry,
    short,
    tool_id_of,
    warning_entry,
)

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Set

    Entry = Dict[str, Any]

STREAM_KEEP = 4000  # characters kept from each end of a streamed text no message replaced
OUTPUT_KEEP = 4000  # characters kept from the end of a running tool's streamed output
HIDDEN_LOG_KINDS = ("native",)  # harness wire messages: for debugging, never for reading
SHOWN_LEVELS = ("info", "warning", "error")
ENDED_WITH_RUN = "ended"  # a tool's status once its run ended and it never completed


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
            fold = TYPES.get(kind) if isinstance(kind, str) else None
            if fold is None:
                return self.unreadable(as_int(event.get("seq")), offset, size, "unknown type %s" % short(kind))
            keys = fold(self, event)
        except (TypeError, ValueError, AttributeError, KeyError) as e:  # a line of a shape nobody writes
            return self.unreadable(as_int(event.get("seq")), offset, size, "%s line of an unexpected shape (%s)"
                                   % (short(kind), type(e).__name__))
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
        input_id = as_str(e.get("input_id"))
        fields = input_entry(e, input_id)
        key = "input:%s" % input_id
        old = self.entries.get(key)
        if old is not None:
            fields["seq"] = old["seq"]  # a snapshot fills in the run; the input stays where it was said
            fields["run_id"] = fields["run_id"] or old.get("run_id")
        return self._put(key, fields)

    def _message(self, e: Dict[str, Any]) -> List[str]:
        message_id = as_str(e.get("message_id")) or "seq-%s" % e.get("seq")
        run_id = as_str(e.get("run_id"))
        key = "message:%s" % message_id
        if key not in self.entries:
            self.messages_of_run[run_id] = self.messages_of_run.get(run_id, 0) + 1
        self.message_ids[message_id] = run_id or ""
        seq = self.entries[key]["seq"] if key in self.entries else as_int(e.get("seq"))
        return self._put(key, {"entry": "message", "seq": seq, "ts": as_str(e.get("ts")), "run_id": run_id,
                               "message_id": message_id, "role": as_str(e.get("role")) or "assistant",
                               "text": as_text(e.get("text"))})

    def _request(self, e: Dict[str, Any]) -> List[str]:
        request_id = as_str(e.get("request_id")) or "?"
        key = "request:%s" % request_id
        if key not in self.entries and e.get("kind") in ("permission", "mode"):
            tool = self._approved_tool(e)
            if tool is not None:
                self.approves[key] = tool
                self.approved.add(tool)
        seq = self.entries[key]["seq"] if key in self.entries else as_int(e.get("seq"))
        return self._put(key, request_entry(e, request_id, seq))

    def _approved_tool(self, e: Dict[str, Any]) -> Optional[str]:
        """The running tool a permission request asks about: codex and Claude
        start the tool before they ask, so its line comes first in the file,
        but a reader wants the approval above what it let run.  By the id the
        request names (ACP `tool_id`, Claude `tool_use_id`), else the latest
        running tool of its run and kind that no other request claimed."""
        run_id = as_str(e.get("run_id"))
        running = self.running.get(run_id, [])
        named = as_str(e.get("tool_id")) or as_str(e.get("tool_use_id"))
        if named is not None:
            key = "tool:%s:%s" % (run_id, named)
            return key if key in running else None
        for key in reversed(running):
            if self.entries[key]["tool"] == as_str(e.get("tool")) and key not in self.approved:
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
        run_id = as_str(e.get("run_id"))
        input_ids = [str(i) for i in e.get("input_ids") or () if isinstance(i, str)]
        key = "result:%s" % (run_id or ",".join(input_ids) or e.get("seq"))
        usage = e.get("usage") if isinstance(e.get("usage"), dict) else None
        if usage is None and run_id in self.usage:
            usage = self.usage[run_id]
        self.ended_runs[run_id] = True
        keys = self._put(key, result_entry(e, run_id, input_ids, usage))
        # The run's cut-off streams are final now: a follower prints them before the result.
        streams = self.streams.get(run_id, [])
        for stream in streams:
            self.entries[stream]["cut_off"] = True
        return streams + self._end_tools(run_id) + keys

    def _end_tools(self, run_id: Optional[str]) -> List[str]:
        """The tools of a run that ended without their `tool.completed` (an
        agent that never closed one): ended with the run, how is unknown."""
        ended = self.running.pop(run_id, [])
        for key in ended:
            self.entries[key]["status"] = ENDED_WITH_RUN
        return ended

    # -- log lines ---------------------------------------------------------------

    def _log(self, e: Dict[str, Any]) -> List[str]:
        kind = as_str(e.get("kind")) or ""
        level = as_str(e.get("level")) or "info"
        handler = LOG_KINDS.get(kind)
        if handler is not None:
            return handler(self, e)
        if kind in HIDDEN_LOG_KINDS or level not in SHOWN_LEVELS:
            return []
        if kind == "diagnostic" and level == "info":
            return []
        return self._put("log:%s" % e.get("seq"), log_entry(e, kind, level))

    def _text_delta(self, e: Dict[str, Any]) -> List[str]:
        run_id, message_id = as_str(e.get("run_id")), as_str(e.get("message_id"))
        text = as_text(e.get("text") if "text" in e else e.get("delta"))  # `delta`: files from before the vocabulary
        if not text or e.get("parent_tool_id"):
            return []  # a sub-agent's text belongs to its tool
        key = "stream:%s:%s" % (run_id, message_id)
        entry = self.entries.get(key)
        if entry is None:
            self.entries[key] = {"entry": "stream", "seq": as_int(e.get("seq")), "ts": as_str(e.get("ts")),
                                 "run_id": run_id, "message_id": message_id, "text": text, "omitted": 0,
                                 "cut_off": bool(self.ended_runs.get(run_id))}
            self.streams.setdefault(run_id, []).append(key)
        else:
            entry["text"], cut = keep_ends(entry["text"] + text, STREAM_KEEP)
            entry["omitted"] += cut
        return [key]

    def _reasoning(self, e: Dict[str, Any]) -> List[str]:
        run_id, form = as_str(e.get("run_id")), as_str(e.get("form")) or "raw"
        text = as_text(e.get("text") if "text" in e else e.get("delta"))
        last = self.entries.get(self._last_key or "")
        if last is not None and last["entry"] == "reasoning" and last.get("run_id") == run_id \
                and last.get("form") == form:
            last["text"], _ = keep_ends(last["text"] + text, STREAM_KEEP)  # one thought, merged
            return [self._last_key or ""]
        key = "reasoning:%s" % e.get("seq")
        return self._put(key, {"entry": "reasoning", "seq": as_int(e.get("seq")), "ts": as_str(e.get("ts")),
                               "run_id": run_id, "form": form, "text": text})

    def _tool(self, e: Dict[str, Any], done: bool) -> List[str]:
        tool_id = tool_id_of(e)
        key = "tool:%s:%s" % (as_str(e.get("run_id")), tool_id)  # a harness's tool ids may repeat across runs
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = new_tool_entry(e, tool_id)
            if not done:
                self.running.setdefault(entry["run_id"], []).append(key)
        for field in ("tool", "name", "title"):
            value = as_str(e.get(field))
            if value:
                entry[field] = value
        if not entry["title"]:
            entry["title"] = as_str(e.get("command")) or entry["name"] or entry["tool"]
        if done:
            complete_tool(entry, e)
            running = self.running.get(entry["run_id"], [])
            if key in running:
                running.remove(key)
        return [key]

    def _tool_output(self, e: Dict[str, Any]) -> List[str]:
        entry = self.entries.get("tool:%s:%s" % (as_str(e.get("run_id")), tool_id_of(e)))
        if entry is None or entry["status"] != "running":
            return []
        text = as_text(e.get("text") if "text" in e else e.get("delta"))
        entry["output"] = (entry["output"] + text)[-OUTPUT_KEEP:]
        return []  # streamed output is shown with the tool line, once it completes

    def _plan(self, e: Dict[str, Any]) -> List[str]:
        """One checklist per run: each `plan` line is the whole plan as it stands."""
        key = "plan:%s" % as_str(e.get("run_id"))
        seq = self.entries[key]["seq"] if key in self.entries else as_int(e.get("seq"))
        return self._put(key, plan_entry(e, seq))

    def _usage(self, e: Dict[str, Any]) -> List[str]:
        """Not an entry: the latest counts of a run, for its result when that has none."""
        counts = {k: v for k, v in e.items() if k.endswith(("_tokens", "_window", "_used")) and v is not None}
        self.usage[as_str(e.get("run_id"))] = counts
        return []



# How each line folds in: by its type, and a log line by its kind.
TYPES: Dict[str, Callable[[Transcript, Dict[str, Any]], List[str]]] = {
    "accepted": Transcript._accepted,
    "message": Transcript._message,
    "request": Transcript._request,
    "result": Transcript._result,
    "log": Transcript._log,
}
LOG_KINDS: Dict[str, Callable[[Transcript, Dict[str, Any]], List[str]]] = {
    "text.delta": Transcript._text_delta,
    "reasoning.delta": Transcript._reasoning,
    "tool.started": lambda transcript, e: transcript._tool(e, False),
    "tool.output": Transcript._tool_output,
    "tool.completed": lambda transcript, e: transcript._tool(e, True),
    "file.changed": lambda transcript, e: transcript._put("file:%s" % e.get("seq"), file_entry(e)),
    "plan": Transcript._plan,
    "usage": Transcript._usage,
    "session": lambda transcript, e: transcript._put("session:%s" % e.get("seq"), session_entry(e)),
    "warning": lambda transcript, e: transcript._put("warning:%s" % e.get("seq"), warning_entry(e)),
}
