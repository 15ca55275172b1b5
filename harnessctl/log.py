"""`harnessctl log`: find the part of the event file to show, fold it, print
it, and with --follow keep printing what is appended (docs/PROTOCOL.md section 16).

Read-only: only the event file is read, never the sidecar or the runtime, so
it works on any adapter's file and after the runtime is gone.  A long file is
never read whole unless asked (`--since 1`): `--since SEQ` bisects on byte
offsets (seq grows with the offset), `--runs N` and the default read
backwards from the end, the default at most WINDOW bytes.
"""

from __future__ import annotations

import json
import os
import sys
import time

from .address import EVENT_TYPES, HEAD, Address, is_event_line, open_event_file, require_exists, resolve
from .errors import UsageError
from .eventlog import encodable
from .render import Style, render, reply_commands
from .transcript import Transcript
from .visible import json_shown, shown

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Callable, Dict, Iterator, List, Optional, Tuple

DEFAULT_RUNS = 20  # without --since / --runs: the last 20 runs ...
WINDOW = 8 * 1024 * 1024  # ... found within the last 8 MiB (more runs than fit start mid-way)
POLL = 0.2  # seconds between looks at a followed file
CHUNK = 65536
BISECT_SCAN = 64 * 1024  # below this span, --since reads forward instead of bisecting further
ACCEPTED = b'"accepted"'  # in a line's raw bytes only as a value: inside a string its quotes are escaped


def show(file: str, follow: bool, since: Optional[int], runs: Optional[int], as_json: bool, diff: bool) -> int:
    """The `log` command: print FILE's transcript, then follow it if asked."""
    addr = resolve(file)
    require_exists(addr)
    f = _open(addr)
    colour = not as_json and _terminal() and not os.environ.get("NO_COLOR")
    out = Printer(Transcript(), Style(colour, file, diff), as_json)
    try:
        offset = _print_window(f, since, runs, out, addr)
        if follow:
            tail(addr.path, f, offset, out)
    finally:
        f.close()
    return 0


def pieces(file: str, since: Optional[int], runs: Optional[int], as_json: bool) -> List[str]:
    """What `log FILE` (with --json: `log FILE --json`) prints, without colour,
    one piece per entry: the MCP log tool's text and entries."""
    addr = resolve(file)
    require_exists(addr)
    f = _open(addr)
    found: List[str] = []
    try:
        _print_window(f, since, runs, Printer(Transcript(), Style(False, file, False), as_json, found.append), addr)
    finally:
        f.close()
    return found


def _print_window(f: BinaryIO, since: Optional[int], runs: Optional[int], out: Printer, addr: Address) -> int:
    """Print the part of the file to show; returns the offset after it."""
    size = os.fstat(f.fileno()).st_size
    start = window(f, size, since, runs)
    if start > 0:
        out.note("earlier lines not shown (from byte %d; --since 1 shows everything)" % start)
    offset = out.feed(f, start)
    out.flush(list(out.transcript.entries))
    if start == 0 and offset == size and not out.transcript.run_seen:  # (a line still being written may be one)
        out.note(no_run(addr))
    return offset


def no_run(addr: Address) -> str:
    """What a file without any run says: a first send that failed before the
    harness took its input leaves nothing else, and its reason went to the
    send's stderr and to the runtime log, which `log` names but never reads."""
    return ("no run started: no input was accepted (a send that failed said why on its stderr; "
            "the runtime's log, if one started: %s)" % addr.runtime_log)


def _terminal() -> bool:
    try:
        return sys.stdout is not None and sys.stdout.isatty()
    except (OSError, ValueError):
        return False


class NotEventFile(UsageError):
    """FILE holds something else than events (exit 2)."""


def _open(addr: Address) -> BinaryIO:
    """The event file for reading; refused (exit 2) when it is not one."""
    try:
        f = os.fdopen(open_event_file(addr, os.O_RDONLY), "rb")
    except FileNotFoundError:
        require_exists(addr)  # gone since: exit 4
        raise
    _check_head(f, addr.path)
    return f


def _check_head(f: BinaryIO, path: str) -> None:
    """Refuse (and close) a file whose first line is not one of our events; a
    first line still being written is taken when it begins as ours do."""
    head = f.readline(HEAD)
    if head and not is_event_line(head) and not _begins_as_ours(head):
        f.close()
        raise NotEventFile("not a harnessctl event file: %s" % path)


def _begins_as_ours(head: bytes) -> bool:
    """Whether a first line without its newline yet (shorter than HEAD: a
    longer one is is_event_line's) may become one of our events: it is, so
    far, `{"type":"` and a type of ours."""
    if head.endswith(b"\n") or len(head) >= HEAD:
        return False
    start = b'{"type":"'
    if len(head) <= len(start):
        return start.startswith(head)
    kind, quote, _ = head[len(start):].partition(b'"')
    names = [name.encode() for name in EVENT_TYPES]
    return kind in names if quote else any(name.startswith(kind) for name in names)


# -- which part to read ---------------------------------------------------------------


def window(f: BinaryIO, size: int, since: Optional[int], runs: Optional[int]) -> int:
    """The byte offset of the first line to show."""
    if since is not None:
        return since_offset(f, size, since)
    if runs is not None:
        return runs_offset(f, size, runs, None)
    return runs_offset(f, size, DEFAULT_RUNS, WINDOW)


def since_offset(f: BinaryIO, size: int, target: int) -> int:
    """The offset of the first line whose seq is >= target.

    Found by bisecting on offsets, which holds while seq rises by one a line
    as the runtime writes it.  Foreign lines may say any seq, and one with a
    lower seq where the bisection looks would send it past the lines asked
    for; so its landing is checked: the lines read last must go on, one by
    one, from the seq of the line the bisection stepped past.  A landing that
    does not (foreign lines, a gap) is found again by reading from the start:
    slower, never wrong."""
    low, high = 0, size
    low_seq: Optional[int] = None  # the seq of the line that ends at `low`
    while high - low > BISECT_SCAN:
        middle = (low + high) // 2
        found = _next_seq(f, middle, high)
        if found is None:
            high = middle  # nothing readable there: look before it (the scan below walks on past)
            continue
        start, end, seq = found
        if seq < target:
            low, low_seq = end, seq
        else:
            high = start
    offset, chained = _scan(f, low, target, low_seq)
    if low > 0 and not chained:
        offset, _ = _scan(f, 0, target, None)
    return offset


def _scan(f: BinaryIO, pos: int, target: int, seq: Optional[int]) -> Tuple[int, bool]:
    """(the offset of the first complete line from `pos` whose seq is >=
    target, else the end of the complete lines; whether the seqs read rose by
    exactly one a line from `seq`, the one before `pos`)."""
    f.seek(pos)
    chained = True
    for line in _complete(f):
        at = _seq(line)
        if at is not None:
            chained = chained and (seq is None or at == seq + 1)
            if at >= target:
                return pos, chained
            seq = at
        pos += len(line)
    return pos, chained


def _next_seq(f: BinaryIO, offset: int, limit: int) -> Optional[Tuple[int, int, int]]:
    """(start, end, seq) of the first line starting after `offset` (and before
    `limit`) that has a seq; torn lines are stepped over."""
    f.seek(offset)
    pos = offset
    if offset > 0:
        pos += len(f.readline())  # the rest of the line `offset` fell into
    while pos < limit:
        line = f.readline()
        if not line.endswith(b"\n"):
            return None
        seq = _seq(line)
        if seq is not None:
            return pos, pos + len(line), seq
        pos += len(line)
    return None


def _compact(entry: Dict[str, Any]) -> str:
    """An entry as one JSON line; what nests too deep for the encoder (a
    foreign line's value, parsed by a parser that recursed less) is cut
    (eventlog.encodable)."""
    try:
        return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        return json.dumps(encodable(entry, "entry", []), ensure_ascii=False, separators=(",", ":"))


def _seq(line: bytes) -> Optional[int]:
    """A line's seq: read from our own encoding's start, else by parsing it."""
    at = line.find(b'"seq":', 0, 200)
    if line.startswith(b'{"type":"') and at > 0:
        end = at + 6
        while end < len(line) and 48 <= line[end] <= 57:
            end += 1
        if end > at + 6:
            return int(line[at + 6:end])
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
        return None
    seq = event.get("seq") if isinstance(event, dict) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


def runs_offset(f: BinaryIO, size: int, count: int, limit: Optional[int]) -> int:
    """The offset of the `accepted` line that started the count-th run from
    the end, read backwards; 0 when the file has fewer runs.  With `limit`,
    at most that many bytes are read: the first line after them then."""
    runs: Dict[Any, int] = {}
    for offset, line in _backwards(f, size):
        if limit is not None and size - offset > limit:
            return _line_start(f, size - limit)
        if not line:
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
            continue
        if not (isinstance(event, dict) and event.get("type") == "accepted" and event.get("delivery") == "start"):
            continue
        run_id = event.get("run_id")
        runs[run_id if isinstance(run_id, str) else offset] = offset
        if len(runs) >= count:
            return min(runs.values())
    return 0


def _line_start(f: BinaryIO, offset: int) -> int:
    """The first line start at or after `offset` (the end of the file if none),
    looked for a chunk at a time: the line may be long."""
    pos = offset - 1
    f.seek(pos)
    while True:
        data = f.read(CHUNK)
        if not data:
            return pos
        newline = data.find(b"\n")
        if newline >= 0:
            return pos + newline + 1
        pos += len(data)


EDGE = len(ACCEPTED) - 1  # bytes of the next chunk kept, for a hit across two chunks


def _backwards(f: BinaryIO, size: int) -> Iterator[Tuple[int, bytes]]:
    """(offset, line) of the complete lines that may be an `accepted`, last
    first, and (offset, b"") as it goes back (progress, for the byte limit).

    Each chunk is read and searched once: only the lines around a hit are
    cut out, the rest is skipped unsplit, and of a line that began in an
    earlier chunk only where it ends and whether it holds a hit are carried
    (a line longer than a chunk is never copied again and again)."""
    end = size
    line_end: Optional[int] = None  # where the line that began in an earlier chunk ends (None: no newline yet)
    hit = False  # whether its part read so far holds ACCEPTED
    edge = b""  # the first bytes of the chunk read before (later in the file)
    while end > 0:
        start = max(0, end - CHUNK)
        f.seek(start)
        data = f.read(end - start)
        last = data.rfind(b"\n")
        if last < 0 and start > 0:  # all of it inside one line
            hit = hit or (line_end is not None and ACCEPTED in data + edge)
            edge, end = data[:EDGE], start
            yield start, b""
            continue
        if line_end is not None and (hit or ACCEPTED in data[last + 1:] + edge):
            yield start + last + 1, _read(f, start + last + 1, line_end)
        first = data.find(b"\n") + 1 if start > 0 else 0  # lines before `first` began in an earlier chunk
        yield from _hits(data, start, first, last + 1)
        yield start + first, b""
        line_end, hit = start + first, ACCEPTED in data[:first]
        edge, end = data[:EDGE], start


def _hits(data: bytes, start: int, first: int, stop: int) -> Iterator[Tuple[int, bytes]]:
    """(offset, line) of the lines within data[first:stop] (whole lines) that
    hold ACCEPTED, last first; `start` is the offset of data."""
    at = stop
    while True:
        hit = data.rfind(ACCEPTED, first, at)
        if hit < 0:
            return
        line_start = data.rfind(b"\n", 0, hit) + 1
        yield start + line_start, data[line_start:data.find(b"\n", hit) + 1]
        at = line_start


def _read(f: BinaryIO, start: int, end: int) -> bytes:
    f.seek(start)
    return f.read(end - start)


def _complete(f: BinaryIO) -> Iterator[bytes]:
    """Complete lines from the current position (a line still being written is not one)."""
    for line in f:
        if not line.endswith(b"\n"):
            return
        yield line


# -- printing -------------------------------------------------------------------------


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
        for line in _complete(f):
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


# -- following ------------------------------------------------------------------------


def tail(path: str, f: BinaryIO, offset: int, out: Printer) -> None:
    """Print what is appended, like `tail -F`: a path that names a new file or
    a file that shrank is read again from its start.  Ends with Ctrl-C."""
    identity = _identity(f)
    while True:
        time.sleep(POLL)
        try:
            st = os.stat(path)
        except OSError:
            continue  # gone for now (being replaced): look again
        if (st.st_dev, st.st_ino) != identity or st.st_size < offset:
            try:
                fresh = os.fdopen(open_event_file(resolve(path), os.O_RDONLY), "rb")
            except (OSError, UsageError):
                continue
            _check_head(fresh, path)  # a path that now names something else than events: exit 2
            f.close()
            f, identity, offset = fresh, _identity(fresh), 0
            out.transcript, out.printed = Transcript(), {}
            out.note("%s was replaced or truncated: reading it from the start" % path)
        if st.st_size > offset:
            keys: List[str] = []
            offset = out.feed(f, offset, keys)
            out.flush([k for k in keys if out.transcript.settled(out.transcript.entries[k])])


def _identity(f: BinaryIO) -> Tuple[int, int]:
    st = os.fstat(f.fileno())
    return st.st_dev, st.st_ino
