"""The event file: locked, fsynced appends of critical events; cheap merged logs.

Durability split (docs/PROTOCOL-SESSION.md section 5): `accepted`, `message`, `request` and
`result` are written with one write() under an exclusive flock and fsynced
before the caller goes on; `log` lines are buffered, merged and written without
fsync, and a failed log write never fails the work.
"""

from __future__ import annotations

import json
import os
import re
import time

from ..jsonfile import MAX_DEPTH

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Dict, Iterator, List, Match, Optional, Tuple

# Consecutive deltas of one run are merged into one line up to this size.
MAX_MERGED_TEXT = 16384
# Log lines held back before the oldest are dropped (the harness must never block on us).
MAX_BUFFERED_LOGS = 512
MERGEABLE_KINDS = ("text.delta", "reasoning.delta", "tool.output")
# Fragments merge only when they belong to the same stream: one message, one tool, one form.
MERGE_KEYS = ("run_id", "message_id", "tool_id", "form", "parent_tool_id")


def timestamp(now: Optional[float] = None) -> str:
    """UTC, ISO 8601 with milliseconds and Z."""
    now = time.time() if now is None else now
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % (int(now * 1000) % 1000)


# Characters JSON lets a string hold raw that a terminal acts on: C1 controls,
# bidi marks, embeddings, overrides and isolates, and the Unicode line and
# paragraph separators.  The file holds them escaped (`\\u0085`): the same JSON
# value, but `tail -F FILE` shows six harmless characters (docs/PROTOCOL-SESSION.md section 4).
UNSAFE = re.compile("[\x80-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
# What a value the encoder cannot take raises: an integer of more than 4300
# digits (ValueError), nesting too deep (RecursionError), a non-JSON type.
ENCODE_ERRORS = (ValueError, RecursionError, OverflowError, TypeError)
TOO_DEEP = "[nested too deep]"


def encode(event: Dict[str, Any]) -> bytes:
    """One line of the file: strict JSON in UTF-8, whatever an adapter or a
    foreign line put into the event.  A non-finite number (an agent's cost of
    1e999) becomes null, as `Infinity` is not JSON and strict readers reject
    the line; a lone surrogate (a foreign line's `"\\ud800"`) stays escaped.
    Raises ENCODE_ERRORS for a value no JSON line can hold (EventLog.encoded
    writes the event with it replaced)."""
    try:
        text = json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(finite(event), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if not text.isascii() and UNSAFE.search(text):  # isascii: most lines, at no cost
        text = UNSAFE.sub(_escaped, text)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(finite(event), separators=(",", ":"), allow_nan=False) + "\n").encode("ascii")


def _escaped(match: Match[str]) -> str:
    return "\\u%04x" % ord(match.group())


def finite(value: Any) -> Any:
    """`value` with every non-finite float replaced by None."""
    if type(value) is float:
        return value if value - value == 0 else None
    if type(value) is dict:
        return {k: finite(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return [finite(v) for v in value]
    return value


def encodable(value: Any, where: str, replaced: List[str], depth: int = 0) -> Any:
    """`value` with what no JSON line can hold replaced, each replacement
    said in `replaced` (`where` is the value's path): an integer too long to
    spell (null), a container nested deeper than MAX_DEPTH (TOO_DEEP), a key
    or value of a type JSON does not have (its type's name)."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, float):
        return value if value - value == 0 else None
    if isinstance(value, int):
        try:
            str(value)
        except ValueError:
            replaced.append("%s: an integer of %d bits (null)" % (where, value.bit_length()))
            return None
        return value
    if isinstance(value, (dict, list, tuple)) and depth >= MAX_DEPTH:
        replaced.append("%s: nested more than %d levels deep (%s)" % (where, MAX_DEPTH, json.dumps(TOO_DEEP)))
        return TOO_DEEP
    if isinstance(value, dict):
        return {_key(k): encodable(v, "%s.%s" % (where, _key(k)), replaced, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encodable(v, "%s[%d]" % (where, i), replaced, depth + 1) for i, v in enumerate(value)]
    replaced.append("%s: a %s, not a JSON value (its type's name)" % (where, type(value).__name__))
    return "<%s>" % type(value).__name__


def _key(key: Any) -> str:
    return key if type(key) is str else "<%s>" % type(key).__name__


class EventLog:
    """Appends events to one event file through `fd`, whose lock (locks.lock_fd)
    makes this process its only writer: the runtime, or a command recovering
    a lost runtime.  Every write is therefore under the exclusive lock."""

    def __init__(self, fd: int, path: str, last_seq: int) -> None:
        self.path = path
        self.fd = fd
        st = os.fstat(fd)
        self.identity = (st.st_dev, st.st_ino)
        self.end = st.st_size  # where our last write ended: any other size is another process's doing
        self.seq = last_seq
        self._logs: List[Dict[str, Any]] = []
        self.dropped_logs = 0
        self.warned = False  # a harness's `warning` log line was written since take_warned()

    def close(self) -> None:
        self.flush_logs()
        os.close(self.fd)

    def replaced(self) -> bool:
        """True once the path no longer names the file we append to (someone
        removed, renamed or replaced it): our lines would reach nobody there."""
        try:
            st = os.stat(self.path)
        except OSError:
            return True
        return (st.st_dev, st.st_ino) != self.identity

    def append(self, event: Dict[str, Any], sync: bool = True) -> Dict[str, Any]:
        """Write one critical event durably; return it with type/ts/seq filled.
        Without `sync` the next critical event's fsync makes it durable (one
        that is written at once after it, as a policy's answer after its request).

        Raises OSError (disk full, ...) after truncating the file back, so no
        torn critical line is ever visible once we let go of the lock."""
        self.flush_logs()
        full = {"type": event["type"], "ts": timestamp(), "seq": self.seq + 1}
        full.update((k, v) for k, v in event.items() if k not in ("ts", "seq"))  # a re-written snapshot is new
        full, line = self.encoded(full)
        self._write(line, sync)
        self.seq += 1
        if self._logs:
            self.flush_logs()  # the diagnostic of a value `encoded` replaced, next to its line
        return full

    def encoded(self, event: Dict[str, Any]) -> Tuple[Dict[str, Any], bytes]:
        """(the event as written, its line).  A value no JSON line can hold (an
        agent's 4301-digit token count, an answer nested 1000 deep) is
        replaced (encodable) and a `diagnostic` says so: the event is still
        written, so the run it ends still ends, and no half line is."""
        try:
            return event, encode(event)
        except ENCODE_ERRORS as e:
            replaced: List[str] = []
            written = encodable(event, event.get("type") or "event", replaced)
            self._logs.append({"level": "warning", "kind": "diagnostic", "ts": timestamp(), "message": (
                "a %s event held values harnessctl cannot write (%s); written with them replaced: %s"
                % (event.get("type"), type(e).__name__, "; ".join(replaced[:10])))})
            return written, encode(written)

    def log(self, event: Dict[str, Any]) -> None:
        """Buffer a `log` event; consecutive deltas of one stream merge into one line."""
        last = self._logs[-1] if self._logs else None
        if (
            last is not None
            and event.get("kind") in MERGEABLE_KINDS
            and last.get("kind") == event.get("kind")
            and all(last.get(k) == event.get(k) for k in MERGE_KEYS)
            and isinstance(last.get("text"), str)
            and isinstance(event.get("text"), str)
            and len(last["text"]) < MAX_MERGED_TEXT
        ):
            last["text"] += event["text"]
            return
        if len(self._logs) >= MAX_BUFFERED_LOGS:
            self._logs.pop(0)
            self.dropped_logs += 1
        self._logs.append(dict(event, ts=timestamp()))

    def flush_logs(self) -> None:
        """Write buffered log lines in one write, without fsync; failures drop them."""
        self._notice_foreign_writes()
        if not self._logs and not self.dropped_logs:
            return
        logs, self._logs = self._logs, []
        if self.dropped_logs:
            logs.append({"type": "log", "ts": timestamp(), "level": "warning", "kind": "diagnostic",
                         "message": "%d log events dropped" % self.dropped_logs})
            self.dropped_logs = 0
        data = bytearray()
        seq = self.seq
        for event in logs:
            seq += 1
            full = {"type": "log", "ts": event.pop("ts"), "seq": seq}
            full.update(event)
            data += self.encoded(full)[1]
            logs.extend(self._logs)  # its diagnostic, when `encoded` replaced a value
            self._logs.clear()
        try:
            self._write(bytes(data), sync=False)
        except OSError:
            self.dropped_logs += len(logs)
            return
        self.seq = seq
        self.warned = self.warned or any(event.get("kind") == "warning" for event in logs)

    def take_warned(self) -> bool:
        """Whether a `warning` log line was written since the last call (a waiter's note, notes.py)."""
        warned, self.warned = self.warned, False
        return warned

    def _notice_foreign_writes(self) -> None:
        """Record, once, that another process appended to or cut the file we
        hold: its lines are not ours and nothing acts on them (the runtime
        folds only what it wrote), but whoever reads the file should know."""
        size = os.fstat(self.fd).st_size
        if size == self.end:
            return
        if size > self.end:
            what = "appended %d bytes (offsets %d to %d)" % (size - self.end, self.end, size)
        else:
            what = "cut it from %d to %d bytes" % (self.end, size)
        self._logs.append({"level": "warning", "kind": "diagnostic", "ts": timestamp(), "message": (
            "another process %s while harnessctl held the event file: not harnessctl's lines, "
            "not acted on" % what)})
        self.end = size

    def _write(self, data: bytes, sync: bool) -> None:
        size = os.fstat(self.fd).st_size
        if size and os.pread(self.fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # terminate a torn tail left by a crash or a foreign writer
        try:
            written = 0
            while written < len(data):
                written += os.write(self.fd, data[written:])
            if sync:
                os.fdatasync(self.fd)
            self.end = size + len(data)
        except OSError:
            try:
                os.ftruncate(self.fd, size)
            except OSError:
                pass  # a read-only descriptor wrote nothing
            raise


LOG_PREFIX = b'{"type":"log","ts":"'


def read_events(path: str, offset: int = 0, full_logs: bool = True) -> Iterator[Tuple[Dict[str, Any], int]]:
    """Yield (event, offset after its line) for every complete, valid line from
    `offset`.  A line that is not valid JSON can only be a torn fragment: skipped.

    With full_logs=False, a `log` line this module wrote yields only its type,
    ts and seq, read without a JSON parse: folding a file that is mostly
    streaming logs then costs little more than reading it."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return
    with f:
        f.seek(offset)
        pos = offset
        for line in f:
            if not line.endswith(b"\n"):
                return  # incomplete tail: a reader advances by complete lines only
            pos += len(line)
            if not full_logs and line.startswith(LOG_PREFIX):
                stub = _log_stub(line)
                if stub is not None:
                    yield stub, pos
                    continue
            try:
                event = json.loads(line)
            except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
                continue
            if isinstance(event, dict) and "type" in event:
                yield event, pos


def _log_stub(line: bytes) -> Optional[Dict[str, Any]]:
    """type/ts/seq of a log line in our own key order, or None to parse it fully."""
    ts_end = len(LOG_PREFIX) + 24
    if line[ts_end:ts_end + 8] != b'","seq":':
        return None
    seq_start = ts_end + 8
    seq_end = line.find(b",", seq_start)
    digits = line[seq_start:seq_end]
    if seq_end < 0 or not digits.isdigit():
        return None
    return {"type": "log", "ts": line[len(LOG_PREFIX):ts_end].decode("ascii", "replace"), "seq": int(digits)}


def find_result(f: BinaryIO, input_id: str) -> Tuple[Optional[bytes], bool]:
    """The line of the `result` that covers `input_id` (without its newline),
    and whether the file accepted that input at all.  Read backwards from the
    end: a script usually waits for an input it sent recently.

    Lines are read as the fold reads them (wellformed.problem skips the same ones)
    and ids compared parsed: a line that may spell the id another way (a JSON
    escape) is parsed too, so wait never misses a result the fold has seen."""
    from .wellformed import problem

    needle = json.dumps(input_id, ensure_ascii=False).encode("utf-8")
    for line in _lines_backwards(f):
        if needle not in line and b"\\u" not in line and b"\\/" not in line:
            continue  # the id is in no spelling of ours, and there is no other
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
            continue
        if problem(event) is not None:
            continue
        if event["type"] == "result" and input_id in event["input_ids"]:
            return line, True
        if event["type"] == "accepted" and event["input_id"] == input_id:
            return None, True  # accepted, and no result after it (yet)
    return None, False


def _lines_backwards(f: BinaryIO, chunk: int = 65536) -> Iterator[bytes]:
    """The file's complete lines, last first (an unterminated tail is skipped)."""
    end = f.seek(0, os.SEEK_END)
    head = b""  # the earliest bytes read: a line whose start is still before them
    tail_dropped = False
    while end > 0:
        start = max(0, end - chunk)
        f.seek(start)
        lines = (f.read(end - start) + head).split(b"\n")
        end = start
        head = lines.pop(0)
        if lines and not tail_dropped:
            lines.pop()  # after the last newline: nothing, or a torn tail
            tail_dropped = True
        yield from reversed(lines)
    if tail_dropped:
        yield head
