"""`status` and `wait --any` over sessions on many machines: one ssh per
machine, all at once, the lines in the order the files were given.

A machine that cannot be reached is one error line per file of it (exit
code 5), as a file that is no session is: it hides no other machine."""

from __future__ import annotations

import json

from ..commands import error_line, file_status, listed
from ..errors import HarnessctlError, UnavailableError, UsageError
from .address import Remote, is_remote, parse
from .calls import error_of
from .forward import renamed, words
from .ssh import Child, end_with_signals

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    Machine = Tuple[Optional[str], str, Optional[str]]
    Lines = List[Tuple[str, int]]  # (line, its exit code)

MACHINE_ERRORS = ("cannot reach ", "cannot run ")  # ssh.failure's: the machine's, not a file's


def machines(args: List[str]) -> Dict[Machine, List[int]]:
    """The positions of the remote arguments, by machine, in order."""
    found: Dict[Machine, List[int]] = {}
    for index, arg in enumerate(args):
        if is_remote(arg):
            found.setdefault(parse(arg).machine, []).append(index)
    return found


def statuses(args: List[str], settings: Optional[Callable[[Machine], Dict[str, str]]] = None,
             held: Optional[Callable[[str], str]] = None) -> List[Lines]:
    """Per argument, its lines: a local file's or folder's as `status` gives
    them, a remote one's from its machine's one `status` command (run with
    `settings(machine)` in its environment).  `held(path)`, where given,
    holds every argument and each file of a local folder to the caller's
    roots (the address to ask, or a HarnessctlError: that path's error line)."""
    found: List[Lines] = [[] for _ in args]
    asked = []
    for index, arg in enumerate(args):
        try:
            asked.append(held(arg) if held else arg)
        except HarnessctlError as e:
            found[index] = [(error_line(arg, str(e), e.exit_code), e.exit_code)]
            asked.append("")
    remotes = {index: parse(asked[index]) for indexes in machines(asked).values() for index in indexes}
    running = [(indexes, _start_status([remotes[i] for i in indexes], settings))
               for indexes in machines(asked).values()]
    for index, arg in enumerate(args):
        if index not in remotes and not found[index]:
            found[index] = _local(arg, held)
    for indexes, proc in running:
        for index, lines in zip(indexes, _collect([remotes[i] for i in indexes], proc)):
            found[index] = lines
    return found


def _local(arg: str, held: Optional[Callable[[str], str]]) -> Lines:
    try:
        files = listed(arg)
    except HarnessctlError as e:
        return [(error_line(arg, str(e), e.exit_code), e.exit_code)]
    return [_held_status(file, held) for file in ([arg] if files is None else files)]


def _held_status(file: str, held: Optional[Callable[[str], str]]) -> Tuple[str, int]:
    """A file's line, or its error line when it leads out of the roots (a symlink in a folder may)."""
    try:
        if held is not None:
            held(file)
    except HarnessctlError as e:
        return error_line(file, str(e), e.exit_code), e.exit_code
    return file_status(file)


def _start_status(remotes: List[Remote], settings: Optional[Callable[[Machine], Dict[str, str]]]) -> Child:
    machine = remotes[0].machine
    return Child.on(machine, words("status", [r.path for r in remotes], {}, []),
                    settings=settings(machine) if settings else None)


def _collect(remotes: List[Remote], child: Child) -> List[Lines]:
    """Each remote argument's lines from its machine's answer."""
    code, out, err = child.communicate()
    error = error_of(remotes[0], code, err, range(256))  # the machine's failure only
    if error is not None:
        return [[(error_line(r.given, str(error), error.exit_code), error.exit_code)] for r in remotes]
    lines = [line for line in out.decode("utf-8", "surrogateescape").split("\n") if line]
    error = error_of(remotes[0], code, err)
    if not lines and error is not None:  # one argument: its error is the command's (stderr), as `status FILE` alone
        return [[(error_line(remotes[0].given, str(error), error.exit_code), error.exit_code)]]
    try:
        named = [(renamed(line, remotes), _code(line)) for line in lines]
    except HarnessctlError as e:  # a line about a file not asked: nothing this machine said is passed on
        return [[(error_line(r.given, str(e), e.exit_code), e.exit_code)] for r in remotes]
    return _attributed(remotes, named)


def _code(line: str) -> int:
    if '"error":' not in line:
        return 0
    try:
        code = json.loads(line).get("exit_code")
    except ValueError:
        return 1
    return code if isinstance(code, int) else 1


def _attributed(remotes: List[Remote], lines: Lines) -> List[Lines]:
    """Split a machine's lines among its arguments, in order: a file's is
    one line, a folder's are its files' lines (in increasing order)."""
    found: List[Lines] = [[] for _ in remotes]
    at = 0
    for line, code in lines:
        name = _file(line)
        while at < len(remotes) - 1 and not _takes(remotes[at].given, name, found[at]):
            at += 1
        found[at].append((line, code))
    return found


def _takes(given: str, name: str, taken: Lines) -> bool:
    if not taken:
        return name == given or name.startswith(given.rstrip("/") + "/")
    return name != given and name.startswith(given.rstrip("/") + "/") and name > _file(taken[-1][0])


def _file(line: str) -> str:
    try:
        name = json.JSONDecoder().raw_decode(line, 8)[0] if line.startswith('{"file":') else ""
    except ValueError:
        return ""
    return name if isinstance(name, str) else ""


def wait_any(args: List[str], timeout: Optional[float], warn: Callable[[str], None]) -> Tuple[str, str]:
    """`wait --any` over machines: (kind, line) as waiting.wait_any's.

    First every file is looked at (one `status` per machine, at once): a file
    that is no session fails the command as it does locally; the first in the
    order given that is neither running nor cancelling is the answer.  Else
    each machine (and this one) waits on its own files and the first to answer
    wins; the others are stopped.  An unreachable machine is left out with a
    warning; none reachable is exit 5."""
    import time

    from ..waiting import _busy

    started = time.monotonic()
    reachable: List[int] = []
    for index, lines in enumerate(statuses(args)):
        if len(lines) != 1:  # a folder: `wait --any` takes files, as it does here
            raise UsageError("wait --any takes event files, and %s is a directory" % args[index])
        line, code = lines[0]
        if code and is_remote(args[index]) and json.loads(line)["error"].startswith(MACHINE_ERRORS):
            warn("warning: %s" % json.loads(line)["error"])
            continue
        if code:
            raise _error(json.loads(line))
        if not _busy(line):
            return "status", line
        reachable.append(index)
    if not reachable:
        raise UnavailableError("wait --any: no machine of the files can be reached")
    left = None if timeout is None else max(0.0, timeout - (time.monotonic() - started))
    return _race([args[i] for i in reachable], left)


def _error(value: Dict[str, Any]) -> HarnessctlError:
    from ..errors import from_code

    return from_code(value.get("exit_code", 1), str(value.get("error")))


def _race(args: List[str], timeout: Optional[float]) -> Tuple[str, str]:
    """Wait on every machine at once: the first status line that comes wins."""
    import queue
    import threading

    end_with_signals()
    answers: queue.Queue[Tuple[str, str, Optional[HarnessctlError]]] = queue.Queue()
    groups = machines(args)
    local = [arg for arg in args if not is_remote(arg)]
    children = []
    for indexes in groups.values():
        remotes = [parse(args[i]) for i in indexes]
        options = {} if timeout is None else {"--timeout": repr(timeout)}
        child = Child.on(remotes[0].machine, words("wait", [r.path for r in remotes], dict(options, **{"--any": ""}),
                                                   []))
        children.append(child)
        threading.Thread(target=_remote_answer, args=(remotes, child, answers), daemon=True).start()
    if local:
        threading.Thread(target=_local_answer, args=(local, timeout, answers), daemon=True).start()
    try:
        for _ in range(len(groups) + bool(local)):
            kind, line, error = answers.get()
            if error is not None:
                raise error
            if kind != "timeout":
                return kind, line
        return "timeout", ""
    finally:
        for child in children:
            child.kill()


def _remote_answer(remotes: List[Remote], child: Child, answers: Any) -> None:
    code, out, err = child.communicate()
    line = out.decode("utf-8", "surrogateescape").strip()
    error = error_of(remotes[0], code, err, (0, 10))
    try:
        line = renamed(line, remotes) if line and error is None else line
    except HarnessctlError as e:
        error = e
    answers.put(("status" if line else "timeout", line, error))


def _local_answer(files: List[str], timeout: Optional[float], answers: Any) -> None:
    from ..commands import with_file
    from ..waiting import wait_any

    try:
        kind, index, line = wait_any(files, timeout)
        answers.put((kind, with_file(files[index], line) if line else "", None))
    except HarnessctlError as e:
        answers.put(("error", "", e))
