"""Hooks (`send --on-request CMD`, `--on-result CMD`): a command of the user's
that the runtime runs when a request is parked for a reply or a run ends.

A hook is bound to the event file like --model, so it is part of the binding
an agent cannot change (trusted.py).  Its command line is split like a shell
would (shlex) and run without one.  How the runtime runs it: hookrunner.py
(kept apart: a send needs only this, and threading costs ~6 ms to import)."""

from __future__ import annotations

from .errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import List

# binding key -> (the send flag, the variable that gives it for a new file)
KEYS = {"on_request": ("--on-request", "HARNESSCTL_ON_REQUEST"), "on_result": ("--on-result", "HARNESSCTL_ON_RESULT")}


def argv(command: str, name: str) -> List[str]:
    """The words of a hook's command line; exit 2 when it has none or cannot be split."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError as e:
        raise UsageError("%s: cannot split %r into words (%s)" % (name, command, e)) from None
    if not words:
        raise UsageError("%s names no command" % name)
    return words
