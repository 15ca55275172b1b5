"""A small derived snapshot of the fold, kept in the sidecar so that status and
runtime start-up read only the tail of a long event file.

The snapshot is a cache: it remembers the byte offset and inode it covers and
is ignored (the file is folded from the start) whenever it does not match.
"""

from __future__ import annotations

import json
import os

from .address import Address, write_json_atomic
from .eventlog import read_events
from .state import Conversation

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from typing import Tuple

VERSION = 1


def load(addr: Address) -> Tuple[Conversation, int, bool]:
    """The conversation as of the end of the event file, that end offset, and
    whether the cached snapshot was behind (worth saving again)."""
    conv, cached = _cached(addr)
    offset = cached
    for event, end in read_events(addr.path, offset, full_logs=False):
        conv.apply(event)
        offset = end
    return conv, offset, offset != cached


def save(addr: Address, conv: Conversation, offset: int) -> None:
    """Best effort: a failed save only makes the next load slower."""
    try:
        st = os.stat(addr.path)
        write_json_atomic(addr.snapshot, {"version": VERSION, "ino": st.st_ino, "offset": offset,
                                          "tail": _tail(addr.path, offset), "conversation": conv.to_dict()})
    except OSError:
        pass


def _cached(addr: Address) -> Tuple[Conversation, int]:
    try:
        with open(addr.snapshot, encoding="utf-8") as f:
            data = json.load(f)
        st = os.stat(addr.path)
        if (
            data.get("version") == VERSION
            and data["ino"] == st.st_ino
            and 0 <= data["offset"] <= st.st_size
            and data["tail"] == _tail(addr.path, data["offset"])
        ):
            return Conversation.from_dict(data["conversation"]), data["offset"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return Conversation(), 0


def _tail(path: str, offset: int) -> str:
    """The bytes just before `offset`: proves the file was not rewritten under the cache."""
    with open(path, "rb") as f:
        f.seek(max(0, offset - 64))
        return f.read(min(offset, 64)).hex()
