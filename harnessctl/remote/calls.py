"""Commands on a remote session as calls that return what they found (the
MCP server's tools, fleet.py): the remote command's stdout read back, and
its failure raised as the error it was there, with its exit code."""

from __future__ import annotations

from ..commands import OUTCOME_CODES
from ..errors import HarnessctlError, from_code
from .address import Remote
from .forward import renamed, words
from .ssh import Child, failure

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

    from ..commands import Send
    from ..log.reader import Entries

WAIT_CODES = {code: kind for kind, code in OUTCOME_CODES.items() if code}  # a wait's exit code: what it found


def error_of(remote: Remote, code: int, stderr: bytes, ok: Sequence[int] = (0,)) -> Optional[HarnessctlError]:
    """What a remote command's exit code means: None when it is one of `ok`,
    ssh's failure, else the remote harnessctl's own error (its last message)."""
    said = stderr.decode("utf-8", "replace")
    error = failure(remote.machine, code, said)
    if error is not None or code in ok:
        return error
    ours = [line[len("harnessctl: "):] for line in said.splitlines() if line.startswith("harnessctl: ")]
    return from_code(code, ours[-1] if ours else "exit %d on %s" % (code, remote.host))


def call(remote: Remote, command: str, args: Sequence[str] = (), options: Optional[Dict[str, str]] = None,
         stdin: Optional[bytes] = None, ok: Sequence[int] = (0,), settings: Optional[Dict[str, str]] = None,
         rules: Sequence[Tuple[str, str]] = ()) -> Tuple[int, str]:
    """(exit code, stdout) of `command` on the remote session, with `args`
    after its path; its error raised."""
    command_words = words(command, [remote.path, *args], options or {}, list(rules))
    code, out, err = Child.on(remote.machine, command_words, stdin is not None, settings=settings).communicate(
        stdin or b"")
    error = error_of(remote, code, err, ok)
    if error is not None:
        raise error
    return code, out.decode("utf-8", "surrogateescape")


def send(remote: Remote, request: Send, settings: Dict[str, str]) -> str:
    """A send (as commands.Send holds it) to a remote session: its input id."""
    from .forward import send_flags, send_stdin

    options, rules = send_flags(request, {"--print-id": ""})
    _, out = call(remote, "send", (), options, send_stdin(request.schema, request.text), settings=settings,
                  rules=rules)
    return out.strip()


class Watch:
    """One remote `wait` held until it answers: the runtime there pushes its
    answer the moment the line is written, and a look here (`found`) costs
    no round trip.  A wait with no end of its own (no --timeout): the caller
    says how long it looks, and `close` ends the remote command (its ssh gone,
    it exits: stdio.end_with_reader) when it no longer wants the answer."""

    def __init__(self, remote: Remote, input_id: Optional[str], settings: Dict[str, str]) -> None:
        import threading

        self.remote = remote
        self.input_id = input_id
        self._child = Child.on(remote.machine, words("wait", [remote.path] + ([input_id] if input_id else []), {}, []),
                               settings=settings)
        self._done = threading.Event()
        self._answer: Tuple[int, bytes, bytes] = (0, b"", b"")
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        try:
            self._answer = self._child.communicate()
        finally:
            self._done.set()

    def found(self, timeout: float) -> Optional[Tuple[str, str]]:
        """What the wait found, as waiting.wait's (kind, line), once it has
        answered within `timeout` seconds; None while it waits."""
        if not self._done.wait(timeout):
            return None
        code, out, err = self._answer
        error = error_of(self.remote, code, err, (0, *WAIT_CODES))
        if error is not None:
            raise error
        kind = WAIT_CODES.get(code) or ("completed" if self.input_id else "status")
        return kind, renamed(out.decode("utf-8", "surrogateescape").strip(), [self.remote])

    def close(self) -> None:
        if not self._done.is_set():
            self._child.kill()


class Stream:
    """A remote session's log entries as a page reads them (log/reader.py's
    start, more and close): `log --json` there for what the file holds now,
    then one `log --json --follow` there whose lines a thread takes as they
    come, `wake()` said when some wait to be taken.  Its first lines repeat
    what `log --json` gave, and an entry comes again each time it changes:
    the page sends an entry only when it changed (serve/follow.py).  Should
    the follow end (the connection lost), each look asks `log --json` again."""

    def __init__(self, remote: Remote, window: Callable[[], List[str]], settings: Dict[str, str],
                 wake: Callable[[], None]) -> None:
        import threading

        self.remote, self.window, self.settings, self.wake = remote, window, settings, wake
        self.lock = threading.Lock()
        self.pending: List[Tuple[str, Dict[str, Any]]] = []
        self.child: Optional[Child] = None
        self.ended = threading.Event()

    def start(self) -> Entries:
        import threading

        found = _entries(self.window())
        self.child = Child.on(self.remote.machine, words("log", [self.remote.path], {"--json": "", "--follow": ""}, []),
                              settings=self.settings)
        threading.Thread(target=self._follow, args=(self.child,), daemon=True).start()
        return found

    def more(self) -> Tuple[bool, Entries]:
        if self.ended.is_set():
            return False, _entries(self.window())
        with self.lock:
            found, self.pending = self.pending, []
        return False, found

    def close(self) -> None:
        if self.child is not None:
            self.child.kill()

    def _follow(self, child: Child) -> None:
        try:
            child.pump(b"", lambda line: None, self._line)
        except OSError:
            pass
        finally:
            self.ended.set()
            child.kill()
            self.wake()

    def _line(self, line: bytes) -> None:
        found = _entries([line.decode("utf-8", "surrogateescape")])
        with self.lock:
            first = not self.pending
            self.pending += found
        if found and first:  # one wake for what comes until the page takes it
            self.wake()


def _entries(pieces: List[str]) -> Entries:
    """The entries of `log --json` lines, by their ids; a line that is none (a note about the reading) is left out."""
    import json

    found = []
    for piece in pieces:
        try:
            entry = json.loads(piece)
        except ValueError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or "entry" not in entry:
            continue
        key = entry.pop("id")
        entry.pop("reply", None)
        found.append((key, entry))
    return found
