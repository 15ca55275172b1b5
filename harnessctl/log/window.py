"""Which part of an event file `harnessctl log` shows: the byte offset of
its first line (docs/PROTOCOL-COMMANDS.md section 16).

A long file is never read whole unless asked (`--since 1`): `--since SEQ`
bisects on byte offsets (seq grows with the offset), `--runs N` and the
default read backwards from the end, the default at most WINDOW bytes.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Dict, Iterator, Optional, Tuple

DEFAULT_RUNS = 20  # without --since / --runs: the last 20 runs ...
WINDOW = 8 * 1024 * 1024  # ... found within the last 8 MiB (more runs than fit start mid-way)
CHUNK = 65536
BISECT_SCAN = 64 * 1024  # below this span, --since reads forward instead of bisecting further
ACCEPTED = b'"accepted"'  # in a line's raw bytes only as a value: inside a string its quotes are escaped


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
    for line in complete_lines(f):
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


def complete_lines(f: BinaryIO) -> Iterator[bytes]:
    """Complete lines from the current position (a line still being written is not one)."""
    for line in f:
        if not line.endswith(b"\n"):
            return
        yield line
