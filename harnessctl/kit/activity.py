"""The activity vocabulary: what the agent did, as `log` lines with the same
fields whatever the harness (EVENT.md, "Activity"; schema/events.schema.json).

Every adapter writes its harness's activity through `Activity` (a backend has
one as `self.activity`), so each kind's fields are spelled in one place: an
adapter maps its wire to these calls and never builds a vocabulary line by
hand.  The names follow the Agent Client Protocol's `session/update` where it
has one (message and thought chunks, tool calls with a kind and a status,
plans, usage), so an ACP adapter maps one to one.

A backend lives for one harness start, and so does its `Activity`.
It remembers each open tool (its kind, name, title, start time and the tail
of its streamed output), so `tool.completed` repeats them, carries the
duration and falls back to the streamed output even where a harness says
only "tool X finished".
"""

from __future__ import annotations

import time

from ..vocabulary import SANDBOX_SOURCE, STALL_SOURCE, TOOL_KINDS

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Protocol, Tuple

    class Logs(Protocol):
        """What `Activity` writes through: the `log` of backend.Host.  Named here,
        not imported, so that the vocabulary knows nothing of the backend
        interface that holds it (backend.py imports this module)."""

        def log(self, kind: str, level: str = "info", run_id: Optional[str] = None, **fields: Any) -> None:
            ...

# The values each field may take; a value outside them is an adapter bug.
TOOL_STATUSES = ("completed", "failed", "declined")
CHANGES = ("add", "update", "delete", "move")
PLAN_STATUSES = ("pending", "in_progress", "completed")
REASONING_FORMS = ("summary", "raw", "redacted")
USAGE_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens", "context_window",
                "context_used")

OUTPUT_TAIL = 4000  # characters of a tool's output kept in tool.completed (its end: where errors are)
TITLE_LIMIT = 200  # characters of a title: one human line
DIFF_LIMIT = 65536  # characters of a file.changed diff; `added`/`removed` always count the whole
OPEN_TOOLS_LIMIT = 256  # tools remembered while open (an interrupted tool never completes)


class OpenTool:
    """A tool that started and has not completed."""

    __slots__ = ("tool", "name", "title", "started", "output")

    def __init__(self, tool: str, name: str, title: str) -> None:
        self.tool, self.name, self.title = tool, name, title
        self.started = time.monotonic()
        self.output = ""  # the tail of what tool_output streamed


class Activity:
    """Writes the vocabulary's `log` lines through a Host."""

    def __init__(self, host: Logs) -> None:
        self.host = host
        self._open: Dict[str, OpenTool] = {}

    def is_open(self, tool_id: str) -> bool:
        """Whether tool_started was written for `tool_id` and tool_completed not yet."""
        return tool_id in self._open

    # -- text ---------------------------------------------------------------------

    def text(self, run_id: Optional[str], message_id: Optional[str], text: str,
             parent_tool_id: Optional[str] = None) -> None:
        """A fragment of an assistant message (`message_id`), or of a sub-agent's
        (`parent_tool_id`: the tool that runs it)."""
        if text:
            self.host.log("text.delta", run_id=run_id, message_id=message_id, text=text,
                          **_present(parent_tool_id=parent_tool_id))

    def reasoning(self, run_id: Optional[str], text: str, form: str = "raw") -> None:
        """The agent's thinking: `summary` (a summary the model wrote), `raw` (its
        reasoning text) or `redacted` (the harness withholds it: `text` is empty)."""
        _check("reasoning form", form, REASONING_FORMS)
        if text or form == "redacted":
            self.host.log("reasoning.delta", run_id=run_id, text=text, form=form)

    # -- tools ----------------------------------------------------------------------

    def tool_started(self, run_id: Optional[str], tool_id: str, tool: str, name: str, title: str,
                     input: Any = None, parent_tool_id: Optional[str] = None) -> None:
        """A tool call began.  `tool` is its kind (TOOL_KINDS: every shell command
        is `command`), `name` the harness's own tool name, `title` one line a
        person reads (the command, the path, server.tool), `input` its arguments."""
        _check("tool kind", tool, TOOL_KINDS)
        title = one_line(title)
        if len(self._open) >= OPEN_TOOLS_LIMIT:
            self._open.pop(next(iter(self._open)))
        self._open[tool_id] = OpenTool(tool, name, title)
        self.host.log("tool.started", run_id=run_id, tool_id=tool_id, tool=tool, name=name, title=title,
                      input=input, **_present(parent_tool_id=parent_tool_id))

    def tool_output(self, run_id: Optional[str], tool_id: str, text: str) -> None:
        """Output of a running tool, as it streams (its tail is the completed
        tool's output when the harness gives none then)."""
        if text:
            known = self._open.get(tool_id)
            if known is not None:
                known.output = (known.output + text)[-OUTPUT_TAIL:]
            self.host.log("tool.output", run_id=run_id, tool_id=tool_id, text=text)

    def tool_completed(self, run_id: Optional[str], tool_id: str, status: str, exit_code: Optional[int] = None,
                       output: str = "", duration_ms: Optional[int] = None, tool: Optional[str] = None,
                       name: Optional[str] = None, title: Optional[str] = None) -> None:
        """A tool call ended: `completed`, `failed` or `declined` (a person or a
        policy refused it).  `exit_code` only for commands, None where the
        harness does not say.  Kind, name, title and output default to what its
        start and its streamed output said."""
        _check("tool status", status, TOOL_STATUSES)
        known = self._open.pop(tool_id, None)
        if known is not None:
            tool, name, title = tool or known.tool, name or known.name, title or known.title
            output = output or known.output
            if duration_ms is None:
                duration_ms = int((time.monotonic() - known.started) * 1000)
        tool = tool or "other"
        _check("tool kind", tool, TOOL_KINDS)
        self.host.log("tool.completed", run_id=run_id, tool_id=tool_id, tool=tool, name=name or tool,
                      title=one_line(title or name or tool), status=status,
                      exit_code=exit_code if tool == "command" else None,
                      output=(output or "")[-OUTPUT_TAIL:], duration_ms=duration_ms)

    def file_changed(self, run_id: Optional[str], tool_id: Optional[str], path: str, change: str,
                     diff: Optional[str] = None, move_path: Optional[str] = None) -> None:
        """One file a tool changed, with its unified diff when the harness gives one."""
        _check("file change", change, CHANGES)
        added, removed = count_diff(diff or "")
        if diff is not None and len(diff) > DIFF_LIMIT:
            diff = diff[:DIFF_LIMIT] + "\n[diff cut at %d characters]\n" % DIFF_LIMIT
        self.host.log("file.changed", run_id=run_id, tool_id=tool_id, path=path, change=change,
                      move_path=move_path, diff=diff, added=added, removed=removed)

    # -- plan, usage, session, warnings ----------------------------------------------

    def plan(self, run_id: Optional[str], entries: List[Tuple[str, str]], explanation: Optional[str] = None) -> None:
        """The agent's whole plan as it stands: (text, status) pairs."""
        for _, status in entries:
            _check("plan status", status, PLAN_STATUSES)
        self.host.log("plan", run_id=run_id, entries=[{"text": t, "status": s} for t, s in entries],
                      **_present(explanation=explanation))

    def usage(self, run_id: Optional[str], **counts: Optional[int]) -> None:
        """Tokens of the run so far (USAGE_FIELDS; None where the harness does not say)."""
        unknown = set(counts) - set(USAGE_FIELDS)
        if unknown:
            raise ValueError("unknown usage fields: %s" % ", ".join(sorted(unknown)))
        fields: Dict[str, Any] = {k: counts.get(k) for k in USAGE_FIELDS}
        self.host.log("usage", "info", run_id, **fields)

    def session(self, session_id: Optional[str], harness: str, version: Optional[str] = None,
                model: Optional[str] = None, approval_policy: Optional[str] = None, sandbox: Optional[str] = None,
                capabilities: Optional[Dict[str, Any]] = None) -> None:
        """Once per harness start: what is running, as the harness reports it."""
        self.host.log("session", session_id=session_id, harness=harness, version=version, model=model,
                      approval_policy=approval_policy, sandbox=sandbox, **_present(capabilities=capabilities))

    def warning(self, run_id: Optional[str], message: str, source: Optional[str] = None) -> None:
        """A warning of the harness (its configuration, a retry, a model notice)."""
        self.host.log("warning", level="warning", run_id=run_id, message=message, source=source)

    def stalled(self, run_id: Optional[str], message: str) -> None:
        """A warning that the agent has shown nothing of the run for a while: a waiter says it at once."""
        self.warning(run_id, message, STALL_SOURCE)

    def cannot_sandbox(self, run_id: Optional[str], message: str) -> None:
        """A warning that the harness cannot sandbox its commands, so each one fails: a waiter says it at once."""
        self.warning(run_id, message, SANDBOX_SOURCE)


# -- helpers adapters share -------------------------------------------------------------


def amount(value: Any) -> Optional[float]:
    """A number from the harness (a cost) as a finite float, or None.  A bool, a
    string, `Infinity` or an integer too large for a float is no amount: the
    file never holds a number a strict JSON reader rejects."""
    if type(value) not in (int, float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if number - number == 0 else None


def one_line(text: str) -> str:
    """The first line of `text`, at most TITLE_LIMIT characters."""
    line = (text or "").strip().split("\n", 1)[0]
    return line if len(line) <= TITLE_LIMIT else line[:TITLE_LIMIT - 1] + "…"


def count_diff(diff: str) -> Tuple[int, int]:
    """Lines added and removed by a unified diff (its headers excluded)."""
    added = removed = 0
    for line in diff.split("\n"):
        if line.startswith("+") and not line.startswith("+++ "):
            added += 1
        elif line.startswith("-") and not line.startswith("--- "):
            removed += 1
    return added, removed


def unified_diff(path: str, old: Optional[str], new: Optional[str]) -> str:
    """A unified diff of one file from its old and new text (None: absent)."""
    import difflib  # only when an adapter has whole texts to compare

    lines = difflib.unified_diff((old or "").splitlines(True), (new or "").splitlines(True),
                                 "/dev/null" if old is None else "a/" + path.lstrip("/"),
                                 "/dev/null" if new is None else "b/" + path.lstrip("/"))
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


SHELLS = ("sh", "bash", "zsh", "dash")  # an argv [SHELL, -c/-lc, LINE] runs LINE


def permission_subject(tool: str, name: Optional[str] = None, command: Optional[str] = None,
                       paths: Optional[List[str]] = None, mcp_tool: Optional[str] = None,
                       cwd: Optional[str] = None) -> Dict[str, Any]:
    """The fields of a permission request that `--allow`/`--deny` rules match
    (policy.py), to merge into `Host.request(details=...)`: `tool` its kind
    (TOOL_KINDS), `name` the harness's own tool name, `command` the command
    line as `log` shows it (a shell wrapper such as `bash -lc` removed),
    `paths` every path a file change touches (as the harness gives them,
    absolute or relative to the bound cwd), `mcp_tool` `server.tool`, `cwd`
    the directory the harness says the tool runs in (absolute or relative to
    the bound cwd): the rules judge the command's redirections and relative
    paths there, since that is where they land.  Leave out what the harness
    does not say: such a request matches only rules without a pattern."""
    _check("tool kind", tool, TOOL_KINDS)
    return _present(tool=tool, name=name, command=command,
                    paths=[str(p) for p in paths] if paths else None, mcp_tool=mcp_tool, cwd=cwd or None)


def argv_line(argv: List[str]) -> str:
    """The command line an argv runs, for `permission_subject(command=...)`:
    `[SHELL, -c|-lc, LINE]` is LINE (the policy parses it), anything else the
    words quoted so that the policy's parser reads back exactly these words."""
    import shlex  # only when an adapter has an argv

    if len(argv) == 3 and argv[0].rpartition("/")[2] in SHELLS and argv[1] in ("-c", "-lc"):
        return argv[2]
    return shlex.join(argv)


def _check(what: str, value: str, allowed: Tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError("%s %r is not one of %s" % (what, value, ", ".join(allowed)))


def _present(**fields: Any) -> Dict[str, Any]:
    """The optional fields that have a value (absent beats a column of nulls)."""
    return {k: v for k, v in fields.items() if v is not None}
