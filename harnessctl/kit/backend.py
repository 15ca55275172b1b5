"""The interface between the runtime and an adapter.

An adapter implements `Backend` for one harness.  The runtime creates one
backend per event file and calls it from ONE thread only (the runtime's event
loop), so an adapter never needs a lock: the harness's stdout lines, its exit
and any timers the adapter asked for arrive as method calls on that same
thread.  The adapter reports everything back through the `Host` it was given;
the runtime turns those reports into events, answers the waiting commands,
and owns the socket, the locks and the event file.

Life of a backend::

    backend = Backend(host, config)   # nothing started yet
    backend.start()                   # spawn/resume the harness -> host.ready() or host.start_failed()
    backend.send(item)                # -> host.accepted(...) or host.send_failed(...)
    backend.interrupt()               # -> eventually host.result(..., "cancelled", ...)
    backend.revoke(input_id)          # -> True: a held input taken back (the runtime records it)
    backend.answer(token, answer)
    backend.stop()                    # graceful: end the harness, return when it is gone

The runtime passes sends one at a time: the next `send` comes only after the
previous one was accepted or failed, so an adapter always knows the native
turn id of the run it steers into.

If the harness process exits while runs are open, the runtime itself writes a
`failed` result for every open input and expires pending requests after
calling `on_exit`, so an adapter cannot forget one.

Re-entrancy.  Three host calls may call back into the backend before they
return; every other host call takes effect at once and never calls the
backend:

* `ready()` may call `send()` (a send was waiting for the harness);
* `accepted()` and `send_failed()` may call `interrupt()` (a cancel arrived
  while the send was in flight, or its `accepted` line could not be written)
  and then `send()` (the next waiting input).

So make those calls last in a method, once the backend's own state says what
they report (the turn is running, the input is delivered).  The host an
adapter gets exposes the calls below and nothing of the runtime.
"""

from __future__ import annotations

import os

from .activity import Activity

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

    from .agentfiles import AgentFile

# The values an adapter may report; anything else is a broken contract.
DELIVERIES = ("start", "steer", "queued")  # Host.accepted(delivery=...)
RESULT_STATUSES = ("completed", "cancelled", "failed")  # Host.result(status=...)
REQUEST_KINDS = ("permission", "question", "mode")  # Host.request(kind=...); mode: the agent switches its own mode
STDERR_TAIL = 2000  # bytes of a child's stderr kept for Child.stderr_tail
STDERR_LINES = 3  # lines of a child's stderr tail quoted when none of them names an error
STDERR_QUOTED = 300  # characters of a child's stderr a message quotes at most
# What a line that says why reads like: codex's "Error: approval_policy = ... is no longer
# supported", claude-agent-acp's "API Error: Connection refused", fast-agent's "No model configured";
# an errno name (ECONNREFUSED) counts only in capitals.
TELLING = (r"\b(errors?|refused|refusing|failed|failure|denied|not set|no model|not configured|not found|"
           r"cannot|can't|unable|fatal|panic(ked)?|exception|invalid|unauthori[sz]ed|forbidden|(?-i:E[A-Z]{4,}))\b")


def stderr_words(tail: str) -> str:
    """What a message quotes of a child's stderr (`Child.stderr_tail`), as
    `; its stderr says: LINE`, `; its stderr ends: A | B | C` or `; it wrote
    nothing on stderr`.  The line quoted is the last that names an error, not
    merely the last: an agent goes on writing after its reason (codex a stack
    backtrace, claude-agent-acp its retries and phases, fast-agent advice), so
    the end alone hides the cause.  An error line ending in `:` takes its
    next line along (fast-agent's "Model Configuration Error:" / "No model
    configured").  Cleaned (visible.shown) and at most STDERR_QUOTED characters."""
    import re

    from ..visible import shown

    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    if not lines:
        return "; it wrote nothing on stderr"
    telling = [i for i, line in enumerate(lines) if re.search(TELLING, line, re.IGNORECASE)]
    if telling:
        i = telling[-1]
        if i > 0 and lines[i - 1].endswith(":") and i - 1 in telling:
            i -= 1
        said, what = lines[i] + (" " + lines[i + 1] if lines[i].endswith(":") and i + 1 < len(lines) else ""), "says"
    else:
        said, what = " | ".join(lines[-STDERR_LINES:]), "ends"
    said = shown(said)
    if len(said) > STDERR_QUOTED:
        said = said[:STDERR_QUOTED - 1] + "…"
    return "; its stderr %s: %s" % (what, said)


class Config:
    """What the runtime knows about the conversation when it creates a backend,
    and the session's own files as an adapter may use them."""

    __slots__ = ("cwd", "model", "sidecar", "env", "debug", "harness", "agent", "mode", "schema", "agents", "box")

    def __init__(self, cwd: str, model: Optional[str], sidecar: str, env: Dict[str, str], debug: bool,
                 harness: Optional[Dict[str, Any]] = None, agent: Optional[str] = None,
                 mode: Optional[str] = None, schema: Optional[Dict[str, Any]] = None,
                 agents: Optional[Dict[str, Any]] = None, box: Optional[str] = None) -> None:
        self.cwd = cwd  # bound working directory (absolute)
        self.model = model  # bound model, or None for the harness's default
        self.sidecar = sidecar  # FILE.d/: the adapter may keep small files here (resume ids)
        self.env = env  # environment of the send that started the runtime
        self.debug = debug
        self.harness = harness or {}  # the manifest's `harness` section: binary, binary_env, args_env, ...
        self.agent = agent  # bound --agent (adapters whose manifest has `agents`), else None
        # How much the agent may do without asking (vocabulary.MODES), mapped onto
        # the harness's own controls; None: the harness's own configuration.
        self.mode = mode
        # For a backend with SCHEMA_PER_PROCESS: the schema of the input this
        # harness process was started for (send --schema), else None.
        self.schema = schema
        self.agents = agents or {}  # the manifest's `agents` (presets), for an adapter that drives many
        # --sandbox: the session's box folder, where the files the harness opens
        # itself live (the boxed harness cannot open the sidecar); None: no box.
        self.box = box

    # -- the session's own files --------------------------------------------------

    @property
    def own_files(self) -> Tuple[str, str]:
        """(the event file, its sidecar): what no agent may change, whatever its
        mode (a harness's own deny rules name them).  The sidecar is the event
        file's name with `.d` (address.Address.sidecar)."""
        return self.sidecar[:-len(".d")], self.sidecar

    def sidecar_file(self, name: str) -> str:
        """FILE.d/NAME: a file the adapter keeps (a resume id, a transcript)."""
        return os.path.join(self.sidecar, name)

    def harness_file(self, name: str, what: str) -> str:
        """FILE.d/NAME for the harness itself to open (BOX/NAME in a box, which
        keeps the harness from the sidecar): an existing one that is not a
        regular file of ours is refused here (private.check_file: UsageError
        naming it as `what`), before the harness starts."""
        from ..store import private

        path = os.path.join(self.box, name) if self.box is not None else self.sidecar_file(name)
        private.check_file(path, what)
        return path

    # -- what the agent may do --------------------------------------------------------

    def edit_allows(self, details: Dict[str, Any]) -> bool:
        """Whether mode `edit` lets the file change a permission request's
        `details` describe (activity.permission_subject) through without
        asking: every path it touches lies inside the cwd, and none is one of
        `own_files` (policy.mode_allows, as the runtime judges it under rules).
        For a harness with no mode that applies edits and asks for commands."""
        from ..checks.policy import mode_allows

        return self.mode == "edit" and mode_allows("edit", details, self.cwd, self.own_files)

    def agent_file(self, path: Any) -> AgentFile:
        """A file the agent asks its client to read or write (ACP's fs methods),
        checked: inside the cwd and none of harnessctl's own, else
        PermissionError (ValueError for a path that is not absolute).  Its
        `open(flags, make_dirs)` opens it beneath the cwd (agentfiles.py)."""
        from .agentfiles import AgentFile

        return AgentFile(self.cwd, path)


class Input:
    """One send, to be delivered."""

    __slots__ = ("input_id", "text", "schema")

    def __init__(self, input_id: str, text: str, schema: Optional[Dict[str, Any]] = None) -> None:
        self.input_id = input_id
        self.text = text
        # `send --schema`: the JSON Schema the run's final answer must fit.  Only
        # an adapter whose manifest claims `structured-output` gets one, and
        # only while nothing runs: such an input always starts its run.
        self.schema = schema


class Host:
    """What a backend may call.  Implemented by host.py for the runtime; all calls are cheap
    and must be made from the runtime thread (i.e. from inside a backend method)."""

    # -- process plumbing -------------------------------------------------
    def spawn(self, argv: Sequence[str], env: Dict[str, str], cwd: str) -> "Child":
        """Start the harness child with pipes.  Its stdout lines arrive as
        `Backend.on_line(text)`, its exit as `Backend.on_exit(returncode)`, and
        its stderr goes to the runtime log.  Raises OSError if it cannot start."""
        raise NotImplementedError

    def call_later(self, seconds: float, callback: Callable[[], None]) -> None:
        """Call `callback()` on the runtime thread after `seconds`."""
        raise NotImplementedError

    # -- start --------------------------------------------------------------
    def ready(self) -> None:
        """The harness is up and can take sends."""
        raise NotImplementedError

    def start_failed(self, message: str) -> None:
        """The harness could not be started; waiting sends exit 5 with `message`."""
        raise NotImplementedError

    # -- sends ----------------------------------------------------------------
    def new_run(self) -> str:
        """Allocate a run id (a UUID) for a run the adapter is starting."""
        raise NotImplementedError

    def accepted(self, input_id: str, delivery: str, run_id: Optional[str]) -> None:
        """The harness confirmed it has the input.  `delivery` is start, steer
        or queued; `run_id` may be None while the harness has not said which run
        consumes it.  Writes the critical `accepted` event; the send exits 0."""
        raise NotImplementedError

    def attributed(self, input_id: str, run_id: str) -> None:
        """The harness confirmed which run consumes an input accepted with
        run_id None.  Writes the `accepted` snapshot with the run id."""
        raise NotImplementedError

    def send_failed(self, input_id: str, message: str, unavailable: bool = False) -> None:
        """The input was NOT accepted.  The send exits 5 when `unavailable`
        (the harness refused or is gone), else 1."""
        raise NotImplementedError

    # -- what the agent does ------------------------------------------------
    def message(self, run_id: Optional[str], message_id: str, text: str, role: str = "assistant") -> None:
        """A complete message snapshot (a later call with the same id replaces it)."""
        raise NotImplementedError

    def request(
        self,
        run_id: Optional[str],
        kind: str,
        message: str,
        options: Optional[List[str]] = None,
        details: Optional[Dict[str, Any]] = None,
        token: Any = None,
    ) -> str:
        """The harness asks the user something; returns our request id (req-N).

        kind "permission": `options` are the allowed answers (e.g. allow, deny,
        allow-session); `details` may carry `tool`, `input`, ...
        kind "question": `details["questions"]` is a list of
        {"id", "question", "options": [labels] or absent}; `options`, if
        any, are answers besides the questions' (decline, cancel).
        kind "mode": the agent asks to switch its own mode; `options` as a
        permission's, answered only by a reply or a rule naming `mode`.
        `token` is the harness's own handle of the request (its id, or
        whatever the adapter needs to answer it): `Backend.answer` gets it
        back, so an adapter keeps no map of our request ids.  The runtime
        validates the reply against the options before `Backend.answer`."""
        raise NotImplementedError

    def request_closed(self, token: Any) -> None:
        """The harness withdrew the request it asked with `token`: its snapshot
        becomes `expired` unless it was already replied."""
        raise NotImplementedError

    def result(
        self,
        run_id: Optional[str],
        input_ids: Sequence[str],
        status: str,
        output: str = "",
        usage: Optional[Dict[str, Any]] = None,
        cost_usd: Optional[float] = None,
        error: Optional[str] = None,
        error_class: Optional[str] = None,
        output_json: Any = None,
    ) -> None:
        """The run ended: status completed, cancelled or failed.  Pending
        requests of the run expire.  `run_id` is None only for inputs no run
        ever consumed (e.g. a queued input dropped by a cancel).  `error_class`
        is the harness's own typed name of the error, when it has one.

        A run started by an input with a schema: `output_json` is the value
        the harness returned apart from the text (Claude's structured_output);
        without one the runtime parses `output`.  An adapter whose harness
        says the answer does not fit reports `failed` with error_class
        "schema"."""
        raise NotImplementedError

    def log(self, kind: str, level: str = "info", run_id: Optional[str] = None, **fields: Any) -> None:
        """A droppable `log` event.  The activity vocabulary (text.delta, tool.*,
        file.changed, plan, usage, session, warning ...) goes through the
        backend's `activity` (activity.py), which spells each kind's fields;
        call this directly only for `native` (level debug) and `diagnostic`."""
        raise NotImplementedError

    def debug(self, text: str) -> None:
        """A line in the runtime log (FILE.d/runtime.log), not in the event file."""
        raise NotImplementedError


class Child:
    """A running harness process, as returned by `Host.spawn`."""

    pid: int

    def write_line(self, text: str) -> None:
        """Write one line (a newline is added) to the child's stdin.  A broken
        pipe is ignored: the exit arrives as `Backend.on_exit`."""
        raise NotImplementedError

    def close_stdin(self) -> None:
        raise NotImplementedError

    def kill(self) -> None:
        raise NotImplementedError

    def wait(self, timeout: float) -> Optional[int]:
        """Wait for the exit; None if still running after `timeout`."""
        raise NotImplementedError

    def stderr_tail(self) -> str:
        """The end of what the child wrote on its stderr (STDERR_TAIL bytes at
        most): the harness's own reason when it exits before it is ready.
        Complete once `Backend.on_exit` is called."""
        raise NotImplementedError


class Backend:
    """Base class of an adapter's backend.  See the module docstring."""

    # True for a harness that takes the answer's schema only on its command
    # line (Claude's --json-schema): the runtime starts it with Config.schema
    # set to the first input's, and before an input whose schema differs from
    # the running process's (none counts) it stops the harness, while no run
    # is open, and starts a new one for it, resuming the conversation as after
    # an idle exit.  False: each input's schema comes with it (Input.schema).
    SCHEMA_PER_PROCESS = False
    # The sidecar file (FILE.d/NAME) that holds the harness's handle of the
    # conversation (its resume id), or None.  `harnessctl fork FILE NEWFILE`
    # copies FILE.d/NAME, as it is, to NEWFILE.d/fork-NAME: at its first
    # start a backend that finds no NAME of its own but a fork-NAME forks the
    # conversation natively from it (ChildBackend.load_fork), then saves its
    # own NAME as usual.  Required for an adapter whose manifest claims `fork`.
    RESUME_FILE: Optional[str] = None

    def __init__(self, host: Host, config: Config) -> None:
        self.host = host
        self.config = config
        self.activity = Activity(host)  # the log vocabulary (activity.py): what the agent did

    def start(self) -> None:
        """Spawn (or resume) the harness; report host.ready() or host.start_failed()."""
        raise NotImplementedError

    def send(self, item: Input) -> None:
        """Deliver one input, starting a run when idle and steering when busy."""
        raise NotImplementedError

    def interrupt(self) -> None:
        """Cancel the active run and drop queued inputs (cancelled results)."""
        raise NotImplementedError

    def revoke(self, input_id: str) -> bool:
        """Take back an input accepted `queued` that the harness has not seen
        (held for the next run: holding.py): True if it was, and then it never
        reaches the harness; the runtime records its end.  False: the harness
        has it (the default: an adapter that holds nothing)."""
        return False

    def answer(self, token: Any, answer: Any) -> None:
        """Forward a validated reply to the request asked with `token` (see
        Host.request): a permission option string, or for a question a dict
        {question id: answer text}."""
        raise NotImplementedError

    def stop(self) -> None:
        """End the harness gracefully (idle exit, SIGTERM); block until it is gone."""
        raise NotImplementedError

    def on_line(self, line: str) -> None:
        """One line the harness wrote on stdout (without the newline)."""
        raise NotImplementedError

    def on_exit(self, returncode: Optional[int]) -> None:
        """The harness exited.  Called once; the runtime then fails open runs."""
