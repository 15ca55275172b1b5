"""Where a session is: on this machine (the modules the command line uses)
or on another one, over ssh (remote/calls.py), chosen once by the file's
address (Sessions.at); the operations the MCP server's tools and `harnessctl
serve`'s page use, alike for both forms.

One per server: it knows the ssh:// roots the operator gave, and runs every
remote command with them as HARNESSCTL_ROOT, so that the roots hold there on
real paths (a symlink an agent planted on that machine leads nowhere)."""

from __future__ import annotations

from .remote.address import Remote as RemoteAddress
from .remote.address import is_remote, parse

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple, Union

    from .commands import Send
    from .log.reader import Reader
    from .notes import Notes
    from .remote.calls import Stream, Watch

    Machine = Tuple[Optional[str], str, Optional[str]]
    EntryReader = Union[Reader, Stream]

ACTIVITY_TAIL = 64 * 1024  # bytes of the event file read for the latest activity


class Sessions:
    """Where the sessions of one server are: each one's form, chosen once
    from its address (at), and a fleet's status lines."""

    def __init__(self, roots: List[str]) -> None:
        self.remote_roots = [parse(root) for root in roots if is_remote(root)]

    def settings(self, machine: Machine) -> Dict[str, str]:
        """The environment of a remote command: the roots of its machine."""
        return {"HARNESSCTL_ROOT": "\n".join(root.path for root in self.remote_roots if root.machine == machine)}

    def at(self, file: str) -> Session:
        """The session `file` names: on this machine, or over ssh://."""
        if not is_remote(file):
            return Local(file)
        remote = parse(file)
        return Remote(remote, self.settings(remote.machine))

    def name(self, file: str) -> str:
        """The name a page shows `file` by (Session.name); an address no
        command would take is shown as it is (its row's error says why)."""
        from .errors import HarnessctlError

        try:
            return self.at(file).name()
        except HarnessctlError:
            return file

    def split(self, paths: List[str]) -> Tuple[List[str], List[str]]:
        """(the paths on this machine, those on others), each in order: a
        fleet watches the first by their files, asks the second by ssh."""
        return [p for p in paths if not is_remote(p)], [p for p in paths if is_remote(p)]

    def statuses(self, paths: List[str], held: Optional[Callable[[str], str]] = None) -> List[List[str]]:
        """Each path's status lines (a folder's files' lines), this machine's
        and others', each held to the roots by `held` where given (remote/fleet.statuses)."""
        from .remote import fleet

        return [[line for line, _ in lines] for lines in fleet.statuses(paths, self.settings, held)]


class Session:
    """One session, wherever it is: what the MCP tools and the page ask of
    it.  Local and Remote are its two forms; nothing that holds one asks
    which it is."""

    file = ""  # its address as given

    def notes(self, say: Callable[[str], None]) -> Optional[Notes]:
        """The notes of a wait on it (harness warnings, retries), said from now on; None where they cannot be read."""
        raise NotImplementedError

    def send(self, request: Send) -> str:
        raise NotImplementedError

    def wait(self, input_id: Optional[str], timeout: float, notes: Optional[Notes] = None) -> Tuple[str, str]:
        raise NotImplementedError

    def close(self) -> None:
        """Let go of what its waits hold open (a remote one's command)."""

    def reply(self, request_id: str, answer: str) -> None:
        raise NotImplementedError

    def cancel(self, input_id: Optional[str] = None) -> None:
        raise NotImplementedError

    def pieces(self, since: Optional[int], runs: Optional[int], as_json: bool) -> List[str]:
        """What `log` prints, one piece per entry (log.show.pieces)."""
        raise NotImplementedError

    def fork(self, new_file: str, cwd: Optional[str], worktree: bool = False) -> str:
        """fork's line; NEWFILE on the same machine (with `worktree`, in a worktree of its own)."""
        raise NotImplementedError

    def entries(self, wake: Callable[[], None]) -> EntryReader:
        """Its log entries as a page reads them: start(), then more() as it
        changes (log/reader.py); `wake()` is said when entries came that
        the fleet's watch does not see (a remote one's, pushed)."""
        raise NotImplementedError

    def patch(self) -> bytes:
        """What it changed in its worktree, as `diff FILE` prints it (worktree.patch)."""
        raise NotImplementedError

    def name(self) -> str:
        """The name a page shows it by: its file's name, and for one on
        another machine the machine too (`a.jsonl on box`), since the same
        name on two machines, or here and there, are two sessions."""
        import os

        return os.path.basename(self.file.rstrip("/")) or self.file

    def binding(self) -> Optional[Dict[str, Any]]:
        """The bound mode and rules; None for a file no send bound yet."""
        raise NotImplementedError

    def latest_activity(self) -> str:
        """What its run does now, in a few words."""
        raise NotImplementedError

    def new_cwd(self) -> Optional[str]:
        """The cwd a first send binds when it names none, where the caller
        must decide it (this machine's current folder); None where the
        session's machine does."""
        raise NotImplementedError

    def held_cwd(self, cwd: str, inside: Callable[[str, str], str]) -> str:
        """`cwd` on the session's machine, held to the roots there by
        `inside(address, what)` (the MCP server's)."""
        raise NotImplementedError

    def hold_worktree(self, cwd: Optional[str], new_file: Optional[str], inside: Callable[[str, str], str]) -> None:
        """Refuse a worktree the session (or the fork `new_file`) would get
        outside the roots: worktrees go beside the repository of `cwd` (None:
        the session's own), which may lie outside them."""
        raise NotImplementedError


class Local(Session):
    """A session on this machine: the modules the command line uses."""

    def __init__(self, file: str) -> None:
        self.file = file

    def notes(self, say: Callable[[str], None]) -> Optional[Notes]:
        from .notes import Notes, offset_now

        return Notes(self.file, offset_now(self.file), say)

    def send(self, request: Send) -> str:
        from . import commands

        return commands.send(request)

    def wait(self, input_id: Optional[str], timeout: float, notes: Optional[Notes] = None) -> Tuple[str, str]:
        from .waiting import wait

        return wait(self.file, input_id, timeout, notes)

    def reply(self, request_id: str, answer: str) -> None:
        from . import client

        client.reply(self.file, request_id, answer)

    def cancel(self, input_id: Optional[str] = None) -> None:
        from . import client

        client.cancel(self.file, input_id)

    def pieces(self, since: Optional[int], runs: Optional[int], as_json: bool) -> List[str]:
        from .log.show import pieces

        return pieces(self.file, since, runs, as_json)

    def fork(self, new_file: str, cwd: Optional[str], worktree: bool = False) -> str:
        if is_remote(new_file):
            from .errors import UsageError

            raise UsageError("fork: FILE and NEWFILE must be on the same machine (%s, %s)" % (self.file, new_file))
        from .fork import fork

        return fork(self.file, new_file, cwd, worktree)[0]

    def entries(self, wake: Callable[[], None]) -> EntryReader:
        from .log.reader import Reader

        return Reader(self.file)  # the fleet's watch sees its file change

    def patch(self) -> bytes:
        from .binding import worktree_of
        from .worktree import patch

        return patch(worktree_of(self.file))

    def binding(self) -> Optional[Dict[str, Any]]:
        from .store.address import resolve
        from .store.bindingfile import read_binding

        return read_binding(resolve(self.file))

    def latest_activity(self) -> str:
        return latest_activity(self.file)

    def new_cwd(self) -> Optional[str]:
        import os

        return None if os.path.exists(self.file) else os.getcwd()

    def held_cwd(self, cwd: str, inside: Callable[[str, str], str]) -> str:
        return inside(cwd, "cwd")

    def hold_worktree(self, cwd: Optional[str], new_file: Optional[str], inside: Callable[[str, str], str]) -> None:
        from .worktree import named, planned

        if cwd is None:
            cwd = (self.binding() or {}).get("cwd")
        if cwd is not None:
            inside(planned(cwd, named(new_file or self.file)), "worktree")


class Remote(Session):
    """A session on another machine: each operation the same command run
    there over ssh (remote/calls.py), with that machine's roots."""

    def __init__(self, remote: RemoteAddress, settings: Dict[str, str]) -> None:
        self.file = remote.given
        self.remote = remote
        self.settings = settings
        self._watch: Optional[Watch] = None

    def notes(self, say: Callable[[str], None]) -> Optional[Notes]:
        return None  # they are on its machine's stderr

    def send(self, request: Send) -> str:
        from .remote import calls

        return calls.send(self.remote, request, self.settings)

    def wait(self, input_id: Optional[str], timeout: float, notes: Optional[Notes] = None) -> Tuple[str, str]:
        """One remote `wait` held across the caller's looks (calls.Watch): each
        look waits here for its answer, pushed by the runtime there."""
        from .remote.calls import Watch

        if self._watch is None or self._watch.input_id != input_id:
            self.close()
            self._watch = Watch(self.remote, input_id, self.settings)
        found = self._watch.found(timeout)
        if found is None:
            return "timeout", ""
        self._watch = None
        return found

    def close(self) -> None:
        """End the remote wait nobody looks at any more."""
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def reply(self, request_id: str, answer: str) -> None:
        self._call("reply", [request_id], answer.encode("utf-8"))

    def cancel(self, input_id: Optional[str] = None) -> None:
        self._call("cancel", [input_id] if input_id else [])

    def pieces(self, since: Optional[int], runs: Optional[int], as_json: bool) -> List[str]:
        options = {name: str(value) for name, value in (("--since", since), ("--runs", runs)) if value is not None}
        if as_json:
            options["--json"] = ""
        _, out = self._call("log", [], options=options)
        return out.splitlines() if as_json else [out.rstrip("\n")]

    def fork(self, new_file: str, cwd: Optional[str], worktree: bool = False) -> str:
        from .remote.forward import renamed, same_machine

        new = same_machine(self.remote, new_file)
        options = {"--cwd": cwd} if cwd else {}
        if worktree:
            options["--worktree"] = ""
        _, out = self._call("fork", [new.path], options=options)
        return renamed(out.strip(), [self.remote, new])

    def entries(self, wake: Callable[[], None]) -> EntryReader:
        from .remote.calls import Stream

        return Stream(self.remote, lambda: self.pieces(None, None, True), self.settings, wake)

    def patch(self) -> bytes:
        """`diff` there, with the last newline the ssh layer drops (ssh.Child.communicate): a patch ends with one."""
        out = self._call("diff", [])[1]
        return (out + "\n" if out else out).encode("utf-8", "surrogateescape")

    def name(self) -> str:
        return "%s on %s" % (super().name(), self.remote.authority)

    def binding(self) -> Optional[Dict[str, Any]]:
        """Its rules cannot be read from here: they are given as one allow
        rule, so that a grant checked against them is held to the cap."""
        code, out = self._call("status", [], ok=(0, 4))
        if code == 4:
            return None
        import json

        return {"mode": json.loads(out).get("mode"), "rules": [["allow", "*"]]}

    def latest_activity(self) -> str:
        return "working"

    def new_cwd(self) -> Optional[str]:
        return None  # its machine's: the folder the remote command starts in

    def held_cwd(self, cwd: str, inside: Callable[[str, str], str]) -> str:
        """An absolute one held to that machine's roots; a relative one is that machine's to resolve."""
        return parse(inside(self.remote.with_path(cwd), "cwd")).path if cwd.startswith("/") else cwd

    def hold_worktree(self, cwd: Optional[str], new_file: Optional[str], inside: Callable[[str, str], str]) -> None:
        """Held there: the command runs with that machine's roots
        (HARNESSCTL_ROOT), which binding.with_worktree and fork check."""

    def _call(self, command: str, args: List[str], stdin: Optional[bytes] = None,
              options: Optional[Dict[str, str]] = None, ok: Tuple[int, ...] = (0,)) -> Tuple[int, str]:
        """(exit code, stdout) of `command` on the session, held to its machine's roots."""
        from .remote.calls import call

        return call(self.remote, command, args, options, stdin, ok, self.settings)


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
