"""A session's binding.json: read and each field checked, trusted only when
it is the one last recorded for the file (trusted.py), written after it is
recorded; and whether the file was ever sent to, which decides whether a
send may bind it anew.  The table it is checked against is fields.py's."""

from __future__ import annotations

import os

from ..errors import UsageError
from ..fields import FIELDS, Field

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional

    from .address import Address


def read_binding(addr: Address) -> Optional[Dict[str, Any]]:
    """The binding of this file, or None before the first send.  A binding
    that is not the latest recorded for this file is refused (exit 2,
    trusted.check): it decides what runs."""
    binding = parse_binding(addr)
    if binding is not None:
        from . import trusted

        trusted.check(addr.path, binding, addr.binding)
    return binding


def parse_binding(addr: Address) -> Optional[Dict[str, Any]]:
    """binding.json as written, each field checked (not trusted yet); None
    when there is none."""
    import json

    from . import private

    try:
        text = private.read_text(addr.binding)
    except OSError as e:
        raise UsageError("unreadable binding %s: %s" % (addr.binding, e.strerror)) from None
    if text is None:
        return None
    try:
        binding = json.loads(text)
    except ValueError:
        binding = None
    if not isinstance(binding, dict) or _refused(binding) is not None:
        raise UsageError("unreadable binding %s (not JSON with adapter, cwd and model): `harnessctl rebind %s` "
                         "restores the recorded one" % (addr.binding, addr.path))
    return binding


def write_binding(addr: Address, binding: Dict[str, Any]) -> None:
    """Record the binding outside the workspace first (trusted.py), then
    write it into the sidecar, where a runtime finds it."""
    import json

    from . import private, trusted

    refused = _refused(binding)  # what read_binding would refuse is never written
    if refused is not None:
        raise UsageError("%s %s: not a value it can bind" % (refused.flag, binding.get(refused.name)))
    trusted.record(addr.path, binding)
    private.write_atomic(addr.binding, json.dumps(binding))


def _refused(binding: Dict[str, Any]) -> Optional[Field]:
    """The first row whose check refuses its value in `binding`: a row's check is its whole check."""
    return next((field for field in FIELDS if not field.check(binding.get(field.name))), None)


HEAD = 64 * 1024  # bytes of a file never_sent() reads: failed first sends leave a few notes each
SENT = b'"type":"accepted"'  # in every accepted line we write (compact JSON); never inside a JSON string
FORKED = b'"kind":"forked"'  # in the first line of a file `harnessctl fork` made (fork.py)


def never_sent(addr: Address) -> bool:
    """Whether no send to the file was ever accepted: it holds no `accepted`
    line.  A first send that failed before its agent started (a typo in
    `--agent`, an agent not installed) leaves only harnessctl's notes, and
    the next send may bind the file anew.  A forked file counts as sent: its
    binding is its source's, and its first line says so.  Only the head is
    read; a longer file counts as used."""
    try:
        with open(addr.path, "rb") as f:
            head = f.read(HEAD + 1)
    except FileNotFoundError:
        return True
    except OSError as e:
        raise UsageError("cannot read event file %s: %s" % (addr.path, e.strerror)) from None
    return len(head) <= HEAD and SENT not in head and FORKED not in head.split(b"\n", 1)[0]


def require_unused(addr: Address) -> None:
    """A file without a binding is bound only while it has no event: one
    whose binding.json was removed keeps its policy (`harnessctl rebind`)."""
    try:
        used = os.stat(addr.path).st_size > 0
    except FileNotFoundError:
        return
    except OSError as e:
        raise UsageError("cannot access event file %s: %s" % (addr.path, e.strerror)) from None
    if used:
        from . import trusted

        raise trusted.missing(addr.path, addr.binding)
