"""What a forked file's first line says of its source (fork.py writes it):
read by the runtime before the harness forks the conversation, so that a
source that moved on since `fork` is never forked from as it is now."""

from __future__ import annotations

import os

from ..errors import HarnessctlError
from ..store.address import resolve

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Optional

    from ..store.address import Address


def moved_on(addr: Address, resume_file: Optional[str]) -> Optional[str]:
    """Why a forked file's harness must not fork now, or None.  The harness
    forks at its first start, from the source as it is then: a source that
    took inputs since `fork` would give the fork turns it was not forked
    with, so that start is refused instead.  Once the backend keeps its own
    handle (`resume_file`) the fork is made, and nothing is checked."""
    import json

    if resume_file is None or os.path.exists(os.path.join(addr.sidecar, resume_file)):
        return None
    try:
        with open(addr.path, "rb") as f:
            first = json.loads(f.readline(64 * 1024))
    except (OSError, ValueError):
        return None
    if not (isinstance(first, dict) and first.get("kind") == "forked" and isinstance(first.get("from"), str)
            and isinstance(first.get("inputs"), int)):
        return None
    from . import snapshot

    source = resolve(first["from"])
    try:
        taken = snapshot.load(source)[0].inputs_seen - first["inputs"]
    except (OSError, HarnessctlError):
        return None
    if taken <= 0:
        return None
    return ("%s took %d input(s) since %s was forked from it, and its harness forks the conversation only now: "
            "the fork would hold them; fork again (harnessctl fork), and send to a fork before its source"
            % (source.path, taken, addr.path))
