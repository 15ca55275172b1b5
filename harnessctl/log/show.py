"""`harnessctl log`: open the event file, print the part to show
(window.py finds it, printer.py folds and prints it), and with
--follow keep printing what is appended, like `tail -F` (docs/PROTOCOL-COMMANDS.md section 16).

Read-only: only the event file is read, never the sidecar or the runtime, so
it works on any adapter's file and after the runtime is gone.
"""

from __future__ import annotations

import os
import sys
import time

from ..errors import UsageError
from ..store.address import EVENT_TYPES, HEAD, Address, is_event_line, open_event_file, require_exists, resolve
from .printer import Printer
from .render import Style
from .transcript import Transcript
from .window import window

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import BinaryIO, List, Optional, Tuple

POLL = 0.2  # seconds between looks at a followed file


def show(file: str, follow: bool, since: Optional[int], runs: Optional[int], as_json: bool, diff: bool) -> int:
    """The `log` command: print FILE's transcript, then follow it if asked."""
    addr = resolve(file)
    require_exists(addr)
    f = open_log(addr)
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
    f = open_log(addr)
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


def open_log(addr: Address) -> BinaryIO:
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
