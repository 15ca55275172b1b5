"""The plumbing every adapter shares: a harness that is one child process
speaking JSON lines on stdio.

`ChildBackend` finds the harness binary the manifest names (its `binary_env`
variable, else its default `binary` on PATH) with the extra arguments of its
`args_env` variable, spawns it through the host, parses each stdout line and
dispatches it by one key through the adapter's `HANDLERS` table, writes JSON
lines, stops the child with a grace period, and keeps small resume ids in the
sidecar (written atomically, private).  An adapter keeps only what is its
harness's own: the wire shapes and what they mean.
"""

from __future__ import annotations

import json
import os

from ..errors import UsageError
from ..store import private
from .backend import Backend, stderr_words

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

    from .backend import Child


STDOUT_KEPT = 400  # characters of the last unreadable stdout line kept (ChildBackend.unreadable)


def on_handlers(*values: str) -> Dict[str, str]:
    """A HANDLERS table where the handler of each value is the method `_on_<value>`."""
    return {value: "_on_" + value for value in values}


class ChildBackend(Backend):
    """Subclasses set KEY (the field whose value picks the handler) and
    HANDLERS ({value: method name}, or `on_handlers(value, ...)` where each
    is `_on_<value>`; each method takes the message), and call
    `spawn_harness(argv)` from `start()`.  A message with no handler goes to
    `on_unhandled`; `on_message` may be overridden to route by more than one key."""

    KEY = "type"
    HANDLERS: Dict[str, str] = {}
    STOP_GRACE = 5.0  # seconds the harness gets to exit after its stdin closes
    child: Optional[Child] = None
    # The child's last stdout line that was no JSON message: an agent that cannot
    # start may say why there (kimi-cli 1.52.0 does), not on stderr.
    unreadable = ""

    # -- the child --------------------------------------------------------------

    @property
    def name(self) -> str:
        """The harness's name for messages (the manifest's `harness.binary`, else its `name`)."""
        return str(self.config.harness.get("binary") or self.config.harness.get("name") or "harness")

    def harness_argv(self, args: List[str]) -> Optional[List[str]]:
        """[binary] + args + the extra arguments of the manifest's `args_env`
        variable; None (the start reported failed, naming the variable) when
        they cannot be split."""
        import shlex  # here, not at start-up: a harness with its own argv (the mock's) never needs it

        harness, env = self.config.harness, self.config.env
        variable = harness.get("binary_env")
        binary = (env.get(variable) if variable else None) or self.name
        extra = harness.get("args_env")
        try:
            return [binary] + args + shlex.split(env.get(extra, "") if extra else "")
        except ValueError as exc:
            self.host.start_failed("%s is not valid shell syntax: %s" % (extra, exc))
            return None

    def spawn_harness(self, argv: List[str]) -> bool:
        """Start the harness the manifest names (`spawn` with its `binary_env`
        variable and the hint to install it)."""
        harness = self.config.harness
        variable = harness.get("binary_env")
        hint = "install %s%s" % (harness.get("name") or self.name, " or set %s" % variable if variable else "")
        return self.spawn(argv, variable, hint)

    def spawn(self, argv: List[str], variable: Optional[str] = None, hint: str = "") -> bool:
        """Start `argv` as this backend's child (one child per backend: its exit
        ends the backend); False (the start reported failed) if it cannot.
        `variable` is the one that overrides the command, `hint` how to get
        the binary: any adapter, whatever its command, gets the same messages."""
        if self.config.debug:
            from shlex import quote

            self.host.debug("%s: spawn %s" % (self.name, " ".join(quote(a) for a in argv)))
        env = dict(self.config.env)
        self.unreadable = ""
        try:
            self.child = self.host.spawn(argv, env, self.config.cwd)
        except OSError as exc:
            self.host.start_failed(self.spawn_error(argv, exc, variable, hint))
            return False
        return True

    def spawn_error(self, argv: List[str], exc: OSError, variable: Optional[str], hint: str) -> str:
        """Why `argv` did not start, in one line: a variable that points at
        nothing executable is named as the culprit; a binary missing from
        PATH comes with the hint; anything else with the system's reason."""
        import shutil  # only here: it would cost every runtime start 1.5 ms

        env = self.config.env
        if shutil.which(argv[0], path=env.get("PATH", os.defpath)) is not None:
            return "cannot start %s (%s): %s" % (self.name, argv[0], exc.strerror or exc)
        if variable and env.get(variable):
            return "%s points at nothing executable (%s)" % (variable, argv[0])
        return "%s not found (%s)%s" % (self.name, argv[0], ": " + hint if hint else "")

    def stop(self) -> None:
        """Close the child's stdin and give it STOP_GRACE seconds to exit; then kill it."""
        child = self.child
        if child is None:
            return
        self.before_stop()
        child.close_stdin()
        if child.wait(self.STOP_GRACE) is None:
            child.kill()
            child.wait(self.STOP_GRACE)

    def before_stop(self) -> None:
        """What to tell the harness before its stdin closes (e.g. interrupt a turn)."""

    def stderr_words(self) -> str:
        """What a message quotes of the child's stderr (kit.backend.stderr_words):
        its line that says why, else its end; `; it wrote nothing on stderr`."""
        return stderr_words(self.child.stderr_tail() if self.child is not None else "")

    # -- lines --------------------------------------------------------------------

    def write_json(self, msg: Dict[str, Any]) -> None:
        """One compact JSON line to the child (dropped if it is gone)."""
        if self.child is None:
            return
        line = json.dumps(msg, separators=(",", ":"))
        if self.config.debug:  # HARNESSCTL_DEBUG=1: the whole wire in the runtime log
            self.host.debug("%s< %s" % (self.name, line[:4000]))
        self.child.write_line(line)

    def on_line(self, line: str) -> None:
        if self.config.debug:
            self.host.debug("%s> %s" % (self.name, line[:4000]))
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
            msg = None
        if not isinstance(msg, dict):
            if line.strip():
                self.unreadable = line.strip()[:STDOUT_KEPT]
                self.host.log("diagnostic", "warning", message="unreadable line from %s" % self.name,
                              line=line[:2000])
            return
        try:
            self.on_message(msg)
        except Exception as exc:  # one odd message must never take the runtime down
            import traceback

            self.host.debug("%s: error handling %s\n%s" % (self.name, line[:2000], traceback.format_exc()))
            self.host.log("diagnostic", "warning", message="could not handle a %s message: %r" % (self.name, exc),
                          line=line[:2000])

    def on_message(self, msg: Dict[str, Any]) -> None:
        """Dispatch by KEY through HANDLERS."""
        handler = self.HANDLERS.get(str(msg.get(self.KEY)))
        if handler is None:
            self.on_unhandled(msg)
        else:
            getattr(self, handler)(msg)

    def on_unhandled(self, msg: Dict[str, Any]) -> None:
        self.host.log("native", level="debug", message=msg)

    # -- resume ids in the sidecar -------------------------------------------------------

    def load_resume(self, name: str, key: Optional[str] = None) -> Optional[str]:
        """The resume id kept in FILE.d/NAME, if it is there and trusted; with
        `key`, the file is a JSON object and the id its `key` field.  One that
        starts with `-` is not trusted (whoever wrote it, the harness or an
        agent editing the sidecar): passed as an argument it would be an option."""
        try:
            value: object = (private.read_text(self.config.sidecar_file(name)) or "").strip()
        except (OSError, UsageError):
            return None
        if key is not None:
            try:
                value = json.loads(str(value) or "{}").get(key)
            except (ValueError, AttributeError):
                return None
        return value if isinstance(value, str) and value and not value.startswith("-") else None

    def load_fork(self, name: str, key: Optional[str] = None) -> Optional[str]:
        """The handle `harnessctl fork` left to fork from (FILE.d/fork-NAME, a
        copy of the source's RESUME_FILE), with the same trust rules as
        load_resume; None when this file is no fork.  Use it only while there
        is no resume id of this file's own: once one is saved, the fork is done."""
        return self.load_resume("fork-" + name, key)

    def save_resume(self, name: str, value: str, key: Optional[str] = None) -> None:
        """Keep a resume id in FILE.d/NAME (atomic, fsynced, 0600), with `key`
        as the JSON object {key: value}; raises OSError."""
        if value != self.load_resume(name, key):
            text = value if key is None else json.dumps({key: value})
            private.write_atomic(self.config.sidecar_file(name), text + "\n", sync=True)
