"""A small derived snapshot of the fold, kept in the sidecar so that status and
runtime start-up read only the tail of a long event file.

The snapshot is a cache, three lines of text:

    harnessctl-snapshot 6 INODE OFFSET SEAL TAIL
    the status line of a stopped runtime, exactly as `status` prints it
    the folded conversation, as JSON

(TAIL: hex of the 64 bytes before OFFSET.)  SEAL is a keyed hash
(trusted.seal, under the user's secret outside every workspace) of the
header's fields, both lines and the sidecar's binding.json: the sidecar may lie
inside a workspace an agent can edit, and a snapshot it forged (a fake pending
request, another agent in `status`) or a binding it rewrote must not be
believed.  The snapshot is ignored (the file is folded from the start, and the
binding checked) whenever the seal or the header does not match.  The header
is checked without a JSON parse, so the `status` of a stopped runtime whose
file has not grown since the snapshot prints line 2 without importing json.
"""

from __future__ import annotations

import os

from ..errors import UsageError
from ..store import private
from ..store.address import Address

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

    from .state import Conversation

MAGIC = "harnessctl-snapshot 6"


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
        except Exception:  # a cache that does not describe a conversation: fold the file instead
            conv, offset = Conversation(), 0
    start = offset
    for event, end in read_events(addr.path, offset, full_logs=False):
        conv.apply(event)
        offset = end
    return conv, offset, offset != start


def save(addr: Address, conv: Conversation, offset: int, binding: Optional[Dict[str, Any]]) -> None:
    """Best effort: a failed save only makes the next load slower."""
    import json

    from .state import status_line, status_report

    status = status_line(status_report(conv, binding, alive=False))
    conversation = json.dumps(conv.to_dict())
    try:
        ino, tail = os.stat(addr.path).st_ino, _tail(addr.path, offset)
        bound = json.dumps(binding) if binding is not None else ""  # as write_binding wrote it: not what is there now
        seal = _seal(ino, offset, tail, status, conversation, bound, create=True)
        if seal is not None:
            header = "%s %d %d %s %s" % (MAGIC, ino, offset, seal, tail)
            private.write_atomic(addr.snapshot, "%s\n%s\n%s\n" % (header, status, conversation))
    except (OSError, UsageError):
        pass


def _read(addr: Address) -> Optional[Tuple[int, str, str]]:
    """(offset, status line, conversation JSON) if the header matches the
    event file and the seal all of it."""
    try:
        text = private.read_text(addr.snapshot)
        if text is None:
            return None
        header, status, conversation = text.split("\n", 3)[:3]
        magic, _, tail = header.rpartition(" ")  # tail: may be empty
        *_, ino, offset_text, seal = magic.split(" ")
        offset = int(offset_text)
        st = os.stat(addr.path)
        if (
            magic.startswith(MAGIC + " ")
            and int(ino) == st.st_ino
            and 0 <= offset <= st.st_size
            and tail == _tail(addr.path, offset)
            and seal == _seal(st.st_ino, offset, tail, status, conversation, private.read_text(addr.binding) or "")
        ):
            return offset, status, conversation
    except (OSError, ValueError, UsageError):
        pass
    return None


def _seal(ino: int, offset: int, tail: str, status: str, conversation: str, binding: str,
          create: bool = False) -> Optional[str]:
    from ..store.trusted import seal

    return seal("%d %d %s\n%s\n%s\n%s" % (ino, offset, tail, status, conversation, binding), create)


def _tail(path: str, offset: int) -> str:
    """The bytes just before `offset`: proves the file was not rewritten under the cache."""
    with open(path, "rb") as f:
        f.seek(max(0, offset - 64))
        return f.read(min(offset, 64)).hex()
