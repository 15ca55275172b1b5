"""Where a session is: on this machine (the modules the command line uses)
or on another one, over ssh (remote/calls.py), by the file's address; the
operations the MCP server's tools and `harnessctl serve`'s page use.

One per server: it knows the ssh:// roots the operator gave, and runs every
remote command with them as HARNESSCTL_ROOT, so that the roots hold there on
real paths (a symlink an agent planted on that machine leads nowhere)."""

from __future__ import annotations

from .remote.address import Remote, is_remote, parse

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from .commands import Send
    from .notes import Notes

    Machine = Tuple[Optional[str], str, Optional[str]]

ACTIVITY_TAIL = 64 * 1024  # bytes of the event file read for the latest activity
REMOTE_SLICE = 2.0  # seconds a remote wait asks at once: each ask is an ssh round trip


class Sessions:
    """The session operations the tools use, wherever the session is."""

    def __init__(self, roots: List[str]) -> None:
        self.remote_roots = [parse(root) for root in roots if is_remote(root)]

    def settings(self, machine: Machine) -> Dict[str, str]:
        """The environment of a remote command: the roots of its machine."""
        return {"HARNESSCTL_ROOT": "\n".join(root.path for root in self.remote_roots if root.machine == machine)}

    def _remote(self, file: str) -> Optional[Remote]:
        return parse(file) if is_remote(file) else None

    def send(self, request: Send) -> str:
        remote = self._remote(request.file)
        if remote is None:
            from . import commands

            return commands.send(request)
        from .remote import calls

        return calls.send(remote, request, self.settings(remote.machine))

    def slice(self, file: str, local: float) -> float:
        """How long one ask of a sliced wait lasts."""
        return REMOTE_SLICE if is_remote(file) else local

    def wait(self, file: str, input_id: Optional[str], timeout: float, notes: Optional[Notes] = None
             ) -> Tuple[str, str]:
        remote = self._remote(file)
        if remote is None:
            from .waiting import wait

            return wait(file, input_id, timeout, notes)
        from .remote import calls

        return calls.wait(remote, input_id, timeout, self.settings(remote.machine))

    def statuses(self, paths: List[str]) -> List[List[str]]:
        """Each path's status lines (a folder's files' lines), this machine's and others'."""
        from .remote import fleet

        return [[line for line, _ in lines] for lines in fleet.statuses(paths, self.settings)]

    def reply(self, file: str, request_id: str, answer: str) -> None:
        remote = self._remote(file)
        if remote is None:
            from . import client

            client.reply(file, request_id, answer)
        else:
            self._output(remote, "reply", [request_id], answer.encode("utf-8"))

    def cancel(self, file: str, input_id: Optional[str] = None) -> None:
        remote = self._remote(file)
        if remote is None:
            from . import client

            client.cancel(file, input_id)
        else:
            self._output(remote, "cancel", [input_id] if input_id else [])

    def _output(self, remote: Remote, command: str, args: List[str], stdin: Optional[bytes] = None,
                options: Optional[Dict[str, str]] = None, ok: Tuple[int, ...] = (0,)) -> Tuple[int, str]:
        """(exit code, stdout) of `command` on the remote session, held to its machine's roots."""
        from .remote import calls
        from .remote.forward import words

        return calls.output(remote, words(command, [remote.path] + args, options or {}, []), stdin, ok,
                            self.settings(remote.machine))

    def pieces(self, file: str, since: Optional[int], runs: Optional[int], as_json: bool) -> List[str]:
        """What `log` prints, one piece per entry (log.show.pieces)."""
        remote = self._remote(file)
        if remote is None:
            from .log.show import pieces

            return pieces(file, since, runs, as_json)
        options = {name: str(value) for name, value in (("--since", since), ("--runs", runs)) if value is not None}
        if as_json:
            options["--json"] = ""
        _, out = self._output(remote, "log", [], options=options)
        return out.splitlines() if as_json else [out.rstrip("\n")]

    def fork(self, file: str, new_file: str, cwd: Optional[str]) -> str:
        """fork's line; both files on one machine."""
        remote = self._remote(file)
        if remote is None:
            if is_remote(new_file):
                from .errors import UsageError

                raise UsageError("fork: FILE and NEWFILE must be on the same machine (%s, %s)" % (file, new_file))
            from .fork import fork

            return fork(file, new_file, cwd)[0]
        from .remote.forward import renamed, same_machine

        new = same_machine(remote, new_file)
        _, out = self._output(remote, "fork", [new.path], options={"--cwd": cwd} if cwd else None)
        return renamed(out.strip(), [remote, new])

    def binding(self, file: str) -> Optional[Dict[str, Any]]:
        """The file's bound mode and rules; None for a file no send bound yet.
        A remote file's rules cannot be read from here: they are given as one
        allow rule, so that a grant checked against them is held to the cap."""
        remote = self._remote(file)
        if remote is None:
            from .address import resolve
            from .bindingfile import read_binding

            return read_binding(resolve(file))
        code, out = self._output(remote, "status", [], ok=(0, 4))
        if code == 4:
            return None
        import json

        return {"mode": json.loads(out).get("mode"), "rules": [["allow", "*"]]}

    def latest_activity(self, file: str) -> str:
        """A running session's latest activity (latest_activity); a remote one's is "working"."""
        return "working" if is_remote(file) else latest_activity(file)


def latest_activity(file: str) -> str:
    """What a running session does now: the title of the run's latest tool,
    from the end of the event file (never more than ACTIVITY_TAIL bytes
    read), made inert; "working" when there is none."""
    import json
    import os

    from .visible import shown

    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return "working"
    try:
        size = os.fstat(fd).st_size
        tail = os.pread(fd, ACTIVITY_TAIL, max(0, size - ACTIVITY_TAIL))
    finally:
        os.close(fd)
    for raw in reversed(tail.split(b"\n")[1:] if size > ACTIVITY_TAIL else tail.split(b"\n")):
        if b'"tool.started"' not in raw and b'"tool.completed"' not in raw:
            continue
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        title = event.get("title") if isinstance(event, dict) else None
        if isinstance(title, str) and title:
            verb = "running" if event.get("kind") == "tool.started" else "ran"
            return "%s: %s" % (verb, shown(title[:200]))
    return "working"
