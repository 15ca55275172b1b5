"""A small JSON document the user names on the command line (`--policy FILE`,
`--schema FILE`): read whole but bounded, strict JSON, one-line errors (exit 2)."""

from __future__ import annotations

from .errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any

# How deep a JSON value harnessctl writes may nest: a value that could not be
# written is kept to this depth when written again (eventlog.encodable), and a
# final answer deeper than this is refused (structured.py).
MAX_DEPTH = 100


def read(path: str, what: str, limit: int) -> Any:
    """The JSON value in `path`, `what` naming it in errors ("the policy file")."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise UsageError("cannot read %s %s: %s" % (what, path, e.strerror)) from None
    if len(data) > limit:
        raise UsageError("%s %s is larger than %d KiB" % (what, path, limit // 1024))
    try:
        return loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError("%s %s is not valid UTF-8" % (what, path)) from None
    except ValueError as e:
        raise UsageError("%s %s is not JSON: %s" % (what, path, e)) from None


def loads(text: str) -> Any:
    """Strict JSON: no NaN or Infinity, and nesting too deep to handle is an error, not a crash."""
    import json

    try:
        return json.loads(text, parse_constant=_refuse)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _refuse(name: str) -> Any:
    raise ValueError("%s is not JSON" % name)


def deeper_than(value: Any, levels: int) -> bool:
    """Whether `value` nests lists and objects more than `levels` deep; walked
    without recursion, so any depth a parser produced can be asked about."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if type(item) is dict:
            item = list(item.values())
        if type(item) in (list, tuple):
            if depth > levels:
                return True
            stack.extend((v, depth + 1) for v in item)
    return False
