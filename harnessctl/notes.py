"""The notes a waiting `send --wait` / `wait` prints on stderr about the
harness's warnings and retries (docs/PROTOCOL-COMMANDS.md section 9).

A harness that cannot reach its model (no network, no login) retries on its
own, for a long time or for ever; the waiter would sit in silence while only
`log` shows why.  So while it waits it reads what is appended to the event
file and says, on stderr, one line for a `log` line of kind `warning`:

    harnessctl: codex is retrying: Reconnecting... 2/5 (...); see harnessctl log FILE

A warning whose `source` is a harness's retry (codex's retried `error`,
Claude's `api_retry`) "is retrying", any other "warns".  Once per kind (retry,
no progress, sandbox, warning) per command, each as soon as it is read: a retry,
an agent's lack of progress or commands the harness cannot sandbox (their
sources: vocabulary.py) that follow an unrelated warning are news, and are
never held back behind it.  stdout is never
written: it holds the answer only.

The lines are read from the event file (from where the wait began), and only
when the runtime nudges the waiter because it wrote a warning (watches.py):
a wait with nothing to say reads nothing and costs no CPU.  A file that cannot
be read just gives no note.
"""

from __future__ import annotations

import os

from .errors import UsageError
from .store.address import open_event_file, resolve
from .vocabulary import RETRY_SOURCES, SANDBOX_SOURCE, STALL_SOURCE

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Callable, Dict, Optional, Set

    from .store.address import Address

WIDTH = 200  # characters of the harness's message kept
CHUNK = 1024 * 1024
NEEDLE = b'"kind":"warning"'  # in every warning line we write (compact JSON): others are not parsed


class Notes:
    """Follows one event file from `offset` and says what is due through `say`."""

    def __init__(self, file: str, offset: int, say: Callable[[str], None]) -> None:
        self.file = file  # as the user named it: the note tells them what to run
        self.offset = offset
        self.say = say
        self.said: Set[str] = set()
        self.pending: Dict[str, str] = {}  # kind -> its latest message, until said (insertion order: first seen first)
        self.harness: Optional[str] = None
        self.addr: Optional[Address] = None

    def look(self) -> None:
        """Read what was appended since the last look; say the note that is due.
        Never raises for the file: a note is a courtesy, the wait goes on."""
        try:
            self._read()
        except (OSError, UsageError, ValueError):
            pass
        self.due()

    def seen(self, event: object) -> None:
        """Take one event of the file: a `log` warning becomes a pending note."""
        if not (isinstance(event, dict) and event.get("type") == "log" and event.get("kind") == "warning"):
            return
        source = event.get("source")
        kind = ("retry" if source in RETRY_SOURCES else "stall" if source == STALL_SOURCE
                else "sandbox" if source == SANDBOX_SOURCE else "warning")
        if kind not in self.said:
            message = event.get("message")
            self.pending[kind] = message if isinstance(message, str) and message.strip() else "(no message)"

    def due(self) -> None:
        """Say the pending notes, first seen first."""
        while self.pending:
            kind = next(iter(self.pending))
            message = self.pending.pop(kind)
            self.said.add(kind)
            self.say(self.text(kind, message))

    def text(self, kind: str, message: str) -> str:
        """The note: one line, cut to WIDTH characters, terminal-safe."""
        from .visible import shown

        message = " ".join(message.split())
        if len(message) > WIDTH:
            message = message[:WIDTH - 1] + "…"
        verb = "is retrying" if kind == "retry" else "warns"
        return "harnessctl: %s %s: %s; see harnessctl log %s" % (
            self._harness(), verb, shown(message), shown(self.file))

    def _harness(self) -> str:
        """The harness by the name the user bound: the agent (ACP) if it is a
        plain name, else the adapter."""
        if self.harness is None:
            self.harness = "the harness"
            try:
                from .store.bindingfile import read_binding

                binding = read_binding(self.addr or resolve(self.file)) or {}
            except (OSError, UsageError, ValueError):
                binding = {}
            agent = binding.get("agent")
            if isinstance(agent, str) and agent and not any(c.isspace() or c == "/" for c in agent):
                self.harness = agent
            elif isinstance(binding.get("adapter"), str):
                self.harness = binding["adapter"]
        return self.harness

    def _read(self) -> None:
        """Take the complete lines appended since `offset`."""
        if self.addr is None:
            self.addr = resolve(self.file)
        fd = open_event_file(self.addr, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if size < self.offset:  # truncated back (a torn line removed): go on from its end
                self.offset = size
            rest = b""
            while self.offset + len(rest) < size:
                data = os.pread(fd, min(CHUNK, size - self.offset - len(rest)), self.offset + len(rest))
                if not data:
                    break
                rest += data
                end = rest.rfind(b"\n") + 1
                self._lines(rest[:end])
                self.offset += end
                rest = rest[end:]
        finally:
            os.close(fd)

    def _lines(self, data: bytes) -> None:
        if NEEDLE not in data:
            return
        import json

        for line in data.split(b"\n"):
            if NEEDLE in line:
                try:
                    self.seen(json.loads(line))
                except ValueError:
                    continue


def offset_now(file: str) -> int:
    """Where the file ends now (0 if there is none yet): a wait's notes start there."""
    try:
        return os.stat(resolve(file).path).st_size
    except (OSError, UsageError):
        return 0

