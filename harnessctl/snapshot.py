"""A small derived snapshot of the fold, kept in the sidecar so that status and
runtime start-up read only the tail of a long event file.

The snapshot is a cache, three lines of text:

    harnessctl-snapshot 2 INODE OFFSET TAIL     (TAIL: hex of the 64 bytes before OFFSET)
    the status line of a stopped runtime, exactly as `status` prints it
    the folded conversation, as JSON

It is ignored (the file is folded from the start) whenever the header does
not match the event file.  The header is checked without a JSON parse, so the
`status` of a stopped runtime whose file has not grown since the snapshot
prints line 2 without importing json at all.
"""

from __future__ import annotations

import os

from .address import Address, write_atomic

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

    from .state import Conversation

MAGIC = "harnessctl-snapshot 2"


def current_status(addr: Address) -> Optional[str]:
    """The cached status line, if the event file is exactly as the snapshot saw it."""
    cached = _read(addr)
    if cached is None or cached[0] != os.path.getsize(addr.path):
        return None
    return cached[1]


def load(addr: Address) -> Tuple[Conversation, int, bool]:
    """The conversation as of the end of the event file, that end offset, and
    whether the cached snapshot was behind (worth saving again)."""
    import json

    from .eventlog import read_events
    from .state import Conversation

    cached = _read(addr)
    conv, offset = Conversation(), 0
    if cached is not None:
        try:
            conv, offset = Conversation.from_dict(json.loads(cached[2])), cached[0]
        except (ValueError, TypeError, AttributeError):
            pass
    start = offset
    for event, end in read_events(addr.path, offset, full_logs=False):
        conv.apply(event)
        offset = end
    return conv, offset, offset != start


def save(addr: Address, conv: Conversation, offset: int, binding: Optional[Dict[str, Any]]) -> None:
    """Best effort: a failed save only makes the next load slower."""
    import json

    from .state import status_report

    status = json.dumps(status_report(conv, binding, alive=False), ensure_ascii=False, separators=(",", ":"))
    try:
        header = "%s %d %d %s" % (MAGIC, os.stat(addr.path).st_ino, offset, _tail(addr.path, offset))
        write_atomic(addr.snapshot, "%s\n%s\n%s\n" % (header, status, json.dumps(conv.to_dict())))
    except OSError:
        pass


def _read(addr: Address) -> Optional[Tuple[int, str, str]]:
    """(offset, status line, conversation JSON) if the header matches the event file."""
    try:
        with open(addr.snapshot, encoding="utf-8") as f:
            header, status, conversation = f.read().split("\n", 3)[:3]
        magic, _, rest = header.rpartition(" ")  # rest: the tail (may be empty)
        *_, ino, offset_text = magic.split(" ")
        offset = int(offset_text)
        st = os.stat(addr.path)
        if (
            magic.startswith(MAGIC + " ")
            and int(ino) == st.st_ino
            and 0 <= offset <= st.st_size
            and rest == _tail(addr.path, offset)
        ):
            return offset, status, conversation
    except (OSError, ValueError):
        pass
    return None


def _tail(path: str, offset: int) -> str:
    """The bytes just before `offset`: proves the file was not rewritten under the cache."""
    with open(path, "rb") as f:
        f.seek(max(0, offset - 64))
        return f.read(min(offset, 64)).hex()
