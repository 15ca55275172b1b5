"""The environment knobs that are numbers of seconds (docs/OPERATIONS.md: Knobs).

One parser for the command and the runtime, so that a value the command
accepted never crashes the runtime later (an infinite or huge timeout used to
overflow the runtime's wait the moment it was idle)."""

from __future__ import annotations

from .errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Mapping

MAX_SECONDS = 365 * 86400.0  # longer waits are clamped to a year


def seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """The knob's value: `default` when unset, zero or negative; clamped to a
    year; UsageError (exit 2) for anything that is not a finite number."""
    text = env.get(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value != value or value in (float("inf"), float("-inf")):
        raise UsageError("%s must be a finite number of seconds, not %r" % (name, text))
    if value <= 0:
        return default
    return min(value, MAX_SECONDS)
