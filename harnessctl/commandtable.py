"""The commands, one row each: the arguments a command takes (FILE and
NEWFILE name sessions: the addresses a command for another machine goes
to), its options that take a value, its flags, and the exit codes it may
give.  arguments.py parses by it, helptext.py shows it, cli.py runs each
command's handler."""

from __future__ import annotations

import sys

from .fields import send_flags

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple

ADDRESSES = ("FILE", "NEWFILE")  # the arguments that name a session
# What each exit code means, as `COMMAND --help` lists it; a row may word one its own way (a text, else None).
EXIT_CODES = {
    1: "internal error, or the event file could not be written (e.g. disk full)",
    2: "usage or input error",
    4: "FILE does not exist (no send created it)",
    5: "the harness is unavailable (not found, failed to start)",
    6: "timed out waiting for the runtime (HARNESSCTL_TIMEOUT)",
    7: "the result covering the input is `failed` (the line says why)",
    8: "it is `cancelled`",
    9: "a request of its run awaits a reply: the request line is printed; `reply`, then `wait FILE ID`",
    10: "--timeout passed first: still running, nothing printed",
    130: "interrupted (Ctrl-C): the wait ends, the run goes on",
}
WAITED = (7, 8, 9, 10, 130)


class Command:
    """One command: `names` of its arguments (from `low` on they may be
    omitted; up to `high`, the last name repeating), `options` that take a
    value, `flags`, and `codes`, the exit codes its help lists (None: what
    EXIT_CODES says; no codes: its help words them itself)."""

    __slots__ = ("name", "names", "low", "high", "options", "flags", "codes")

    def __init__(self, name: str, names: Tuple[str, ...], low: int, high: int, options: Tuple[str, ...] = (),
                 flags: Tuple[str, ...] = (), codes: Optional[Dict[int, Optional[str]]] = None) -> None:
        self.name, self.names, self.low, self.high = name, names, low, high
        self.options, self.flags, self.codes = options, flags, codes or {}

    def addresses(self, args: List[str], options: Dict[str, str]) -> List[str]:
        """The arguments that name sessions (`wait --any`: every one)."""
        if self.name == "wait" and "--any" in options:
            return args
        kinds = self.names + self.names[-1:] * max(0, len(args) - len(self.names))
        return [arg for arg, kind in zip(args, kinds) if kind in ADDRESSES]


BOUND_OPTIONS, BOUND_SWITCHES, BOUND_REPEATED = send_flags()  # the bound fields' flags (fields.py)
COMMANDS = (
    Command("send", ("FILE", "TEXT"), 1, 2, BOUND_OPTIONS + BOUND_REPEATED + ("--timeout", "--policy", "--schema"),
            BOUND_SWITCHES + ("--print-id", "--wait", "--queue", "--interrupt"), {
        0: "accepted (with --wait: the result is `completed`)", 1: None, 2: None, 5: None,
        6: "timed out waiting for the runtime (HARNESSCTL_TIMEOUT): the input MAY have been accepted; "
           "read FILE before retrying (with --wait: also accepted, but the wait failed)",
        **{code: "with --wait: " + EXIT_CODES[code] for code in WAITED}}),
    Command("wait", ("FILE", "INPUT_ID"), 1, 2, ("--timeout",), ("--any",), {  # --any: 1 FILE or more (parse)
        0: "the result is `completed` (without INPUT_ID: the status line is printed)", 1: None, 2: None,
        3: "FILE never accepted INPUT_ID", 4: None,
        6: "timed out waiting for the runtime (HARNESSCTL_TIMEOUT), or FILE was replaced or removed while waiting",
        **{code: None for code in WAITED}}),
    Command("status", ("FILE",), 1, sys.maxsize, codes={
        0: "the status line is printed (several files or a DIR: the highest code of theirs)", 1: None, 2: None,
        4: "FILE does not exist (no send created it), or DIR/ (named with its slash) does not", 6: None}),
    Command("cancel", ("FILE", "INPUT_ID"), 1, 2, codes={
        0: "done (or nothing was running)", 1: None, 2: None,
        3: "INPUT_ID is not queued: the harness has it already, or it is unknown or ended", 4: None, 6: None}),
    Command("reply", ("FILE", "REQUEST_ID", "ANSWER"), 2, 3, codes={
        0: "answered", 1: None, 2: "usage or input error, or an answer the request does not allow",
        3: "unknown, already answered or expired request id", 4: None, 6: None}),
    Command("log", ("FILE",), 1, 1, ("--since", "--runs"), ("--follow", "--json", "--diff")),
    Command("rebind", ("FILE",), 1, 1, ("--accept",)),
    Command("agents", (), 0, 0, flags=("--json",)),
    Command("mcp", (), 0, 0, ("--root", "--max-mode"), ("--allow-agent-commands", "--allow-rules", "--sandbox")),
    Command("fork", ("FILE", "NEWFILE"), 2, 2, ("--cwd",), ("--worktree",), codes={
        0: "NEWFILE made: its line is printed", 1: None,
        2: "usage or input error: NEWFILE exists, or FILE's harness cannot fork (nothing was written)",
        3: "FILE has a run going or a request waiting, or no conversation yet", 4: None, 6: None}),
    Command("diff", ("FILE",), 1, 1, codes={
        0: "the patch is printed (nothing: no change)", 1: None,
        2: "usage or input error: FILE has no worktree (its first send gave no --worktree), or git failed", 4: None}),
    Command("prune", ("FILE",), 1, sys.maxsize, ("--older-than",), ("--events", "--force", "--dry-run", "--json"), {
        0: "pruned: a line per session removed (or, with --dry-run, to remove) or kept", 1: None,
        2: "usage or input error", 3: "a session was kept for the work in its worktree (its line says what): "
                                      "--force removes it", 4: "DIR/ (named with its slash) does not exist"}),
    Command("serve", ("DIR",), 0, sys.maxsize, ("--port", "--host"), codes={
        0: "interrupted (Ctrl-C, SIGTERM, SIGHUP): it served until then", 1: None, 2: None,
        4: "DIR/ (named with its slash), or a FILE's folder, does not exist",
        5: "the port cannot be listened on (in use, refused)"}),
)
BY_NAME = {command.name: command for command in COMMANDS}
# repeatable, and their order matters: kept apart, in order, as (allow|deny|root|sandbox-write, VALUE) "rules"
RULES = BOUND_REPEATED + ("--root",)
