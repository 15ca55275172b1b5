"""How `harnessctl log` prints: lines folded into the transcript
(transcript.py), each entry written (render.py, or JSON with --json) when
it is new or changed since it was printed, as a follower sees it change.
"""

from __future__ import annotations

import json
import sys

from ..errors import UsageError
from ..eventfile.eventlog import encodable
from ..visible import json_shown, shown
from .render import Style, render, reply_commands
from .transcript import Transcript
from .window import complete_lines

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Callable, Dict, List, Optional


class Printer:
    """Folds lines into the transcript and prints each entry when it is new or
    changed (a follower sees a tool line again once it completed)."""

    def __init__(self, transcript: Transcript, style: Style, as_json: bool,
                 out: Optional[Callable[[str], None]] = None) -> None:
        self.transcript = transcript
        self.style = style
        self.as_json = as_json
        self.write = out or write
        self.printed: Dict[str, str] = {}
        self.last_seq: Optional[int] = None

    def feed(self, f: BinaryIO, offset: int, keys: Optional[List[str]] = None) -> int:
        """Fold the complete lines from `offset`; returns the offset after them.
        The keys of the entries that changed are added to `keys`."""
        f.seek(offset)
        for line in complete_lines(f):
            changed = self.line(line, offset)
            if keys is not None:
                keys.extend(changed)
            offset += len(line)
        return offset

    def line(self, line: bytes, offset: int) -> List[str]:
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
            return self.transcript.unreadable(self.last_seq, offset, len(line), "not JSON")
        if not isinstance(event, dict):
            return self.transcript.unreadable(self.last_seq, offset, len(line), "not an event (not an object)")
        seq = event.get("seq")
        if isinstance(seq, int):
            self.last_seq = seq
        return self.transcript.add(event, offset, len(line))

    def flush(self, keys: List[str]) -> None:
        """Print the entries among `keys` that are shown and changed since printed."""
        seen = set()
        for key in self.grouped(keys):
            entry = self.transcript.entries.get(key)
            if key in seen or entry is None or not self.transcript.shown(entry):
                continue
            seen.add(key)
            if self.as_json:
                whole = dict(entry, id=key)
                if entry["entry"] == "request" and entry.get("state") == "pending":
                    whole["reply"] = reply_commands(entry, self.style.file)
                text = json_shown(_compact(whole))
            else:
                text = "\n".join(render(entry, self.style))
            if self.printed.get(key) != text:
                self.printed[key] = text
                self.write(text)

    def grouped(self, keys: List[str]) -> List[str]:
        """`keys` with each file change moved right after its tool's line, and
        each permission request right before the tool it approved."""
        present = set(keys)
        above: Dict[str, List[str]] = {}
        below: Dict[str, List[str]] = {}
        rest = []
        for key in keys:
            tool = self.transcript.tool_of(key) if key in self.transcript.entries else None
            if tool is not None and tool in present:
                side = above if self.transcript.entries[key]["entry"] == "request" else below
                side.setdefault(tool, []).append(key)
                continue
            rest.append(key)
        return [k for key in rest for k in above.pop(key, []) + [key] + below.pop(key, [])]

    def note(self, text: str) -> None:
        """A line about the reading itself (where it started, a replaced file)."""
        if self.as_json:
            self.write(json_shown(json.dumps({"entry": "note", "text": text}, ensure_ascii=False,
                                             separators=(",", ":"))))
        else:
            self.write(self.style.paint("--- " + shown(text), "dim"))


def write(text: str) -> None:
    """One piece of output, UTF-8 whatever the locale (the file is UTF-8)."""
    if sys.stdout is None:
        raise UsageError("cannot write to stdout: stdout is closed")
    try:
        sys.stdout.buffer.write(text.encode("utf-8", "replace") + b"\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as e:
        raise UsageError("cannot write to stdout: %s" % (getattr(e, "strerror", None) or e)) from None


def _compact(entry: Dict[str, Any]) -> str:
    """An entry as one JSON line; what nests too deep for the encoder (a
    foreign line's value, parsed by a parser that recursed less) is cut
    (eventlog.encodable)."""
    try:
        return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        return json.dumps(encodable(entry, "entry", []), ensure_ascii=False, separators=(",", ":"))
