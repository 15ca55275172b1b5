"""A command of this command line run on one remote session: the same
command on the session's machine, its output and exit code passed back.

The one change to the output: the `"file"` of the lines `status`, `wait` and
`send --wait` print is the address as the user gave it (ssh://…), as it is
the FILE as given locally, so that a line names a session the user can act on."""

from __future__ import annotations

import os
import sys

from ..errors import UsageError
from .address import Remote, is_remote, parse
from .ssh import Child, command_line, end_with_signals, failure

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

NAMING = ("status", "wait", "send", "fork")  # the commands whose lines carry "file"
CHUNK = 65536


def words(command: str, paths: List[str], options: Dict[str, str], rules: List[Tuple[str, str]]) -> List[str]:
    """The remote command's words: options first, then `--`, then the paths
    and other arguments (so a path that starts with `-` stays an argument)."""
    from ..arguments import FLAGS

    found = [command]
    for name, value in options.items():
        found += [name] if name in FLAGS.get(command, ()) else [name, value]
    for verb, rule in rules:
        found += ["--" + verb, rule]
    return found + ["--"] + paths


def send_options(options: Dict[str, str], rules: List[Tuple[str, str]], adapter: Optional[str], agent: Optional[str],
                 schema: Optional[Dict[str, Any]]) -> Tuple[Dict[str, str], List[Tuple[str, str]]]:
    """A remote send's options: a --policy FILE (read here) as --mode and rules,
    a schema as `--schema -` (it leads stdin), the adapter a per-adapter
    command fixes as --adapter."""
    from ..commands import policy

    found = {name: value for name, value in options.items() if name not in ("--policy", "--schema")}
    if "--policy" in options:
        read = policy(options.get("--mode"), rules, options["--policy"]) or {}
        if read.get("mode") is not None:
            found["--mode"] = read["mode"]
        rules = [(verb, rule) for verb, rule in read.get("rules") or []]
    for name, value in (("--adapter", adapter), ("--agent", agent)):
        if value is not None:
            found[name] = value
    if schema is not None:
        found["--schema"] = "-"
    return found, rules


def send_stdin(schema: Optional[Dict[str, Any]], text: str) -> bytes:
    """TEXT on stdin, after the schema on a line of its own when there is one."""
    if schema is None:
        return text.encode("utf-8")
    from ..checks.structured import to_field

    return (to_field(schema) + "\n" + text).encode("utf-8")


def run(command: str, args: List[str], options: Dict[str, str], rules: List[Tuple[str, str]],
        stdin: Optional[bytes], emit: Callable[[str], None]) -> int:
    """Run `command` on the session args[0] names (ssh://…); for fork, args[1]
    must be on the same machine.  Returns the remote exit code; `emit` prints
    a line of the commands whose lines name their file."""
    remote = parse(args[0])
    paths = [remote.path] + args[1:]
    if command == "fork":
        paths[1] = same_machine(remote, args[1]).path
    if command == "wait" or command == "log" and "--follow" in options or command == "send" and "--wait" in options:
        end_with_signals()  # only a command that may wait long pays for the import of signal (enum: ~4 ms)
    return relay(remote, words(command, paths, options, rules), stdin, emit if command in NAMING else None)


def same_machine(remote: Remote, other: str) -> Remote:
    if not is_remote(other) or parse(other).machine != remote.machine:
        raise UsageError("fork: FILE and NEWFILE must be on the same machine (%s, %s)" % (remote.given, other))
    return parse(other)


def relay(remote: Remote, remote_words: List[str], stdin: Optional[bytes], emit: Optional[Callable[[str], None]]
          ) -> int:
    """Run the remote command: `stdin` written to it, its stdout passed on
    (line by line to `emit` with "file" renamed, or without `emit` straight
    to our stdout), its stderr passed on as it comes.  What ssh itself says (lines
    that are not `harnessctl: …`) is held to the end: when ssh fails it is the
    cause in our one-line error, else it follows the output."""
    child = Child(command_line(remote.machine, remote_words), stdin is not None, emit is not None)
    held: List[bytes] = []
    try:
        _pump(child, stdin or b"", lambda line: _stderr_line(line, held),
              None if emit is None else lambda line: emit(renamed(line.decode("utf-8", "surrogateescape"), remote)))
        code = child.wait()
    except BaseException:
        child.kill()
        raise
    error = failure(remote.machine, code, b"\n".join(held).decode("utf-8", "replace"))
    if error is not None:
        raise error
    if held:
        _write(sys.stderr, b"\n".join(held) + b"\n")
    return code


def _pump(child: Child, data: bytes, on_stderr: Callable[[bytes], None],
          on_stdout: Optional[Callable[[bytes], None]]) -> None:
    """Write `data` to the child's stdin (then close it: the remote reads to
    EOF) while its stderr and stdout come line by line, until both end."""
    import select

    poller = select.poll()
    readers = {child.stderr: on_stderr}
    if child.stdout is not None and on_stdout is not None:
        readers[child.stdout] = on_stdout
    pending = dict.fromkeys(readers, b"")
    for fd in readers:
        poller.register(fd, select.POLLIN)
    left = memoryview(data)
    if child.stdin is not None:
        os.set_blocking(child.stdin, False)
        poller.register(child.stdin, select.POLLOUT)
    while pending:
        for fd, _ in poller.poll():
            if fd == child.stdin:
                left = _feed(child, left, poller)
                continue
            chunk = os.read(fd, CHUNK)
            if not chunk:
                poller.unregister(fd)
                rest = pending.pop(fd)
                if rest:
                    readers[fd](rest)
                continue
            lines = (pending[fd] + chunk).split(b"\n")
            pending[fd] = lines.pop()
            for line in lines:
                readers[fd](line)
    if child.stdin is not None:  # the remote ended before it read all: nobody reads the rest
        os.close(child.stdin)
        child.stdin = None


def _feed(child: Child, left: memoryview, poller: Any) -> memoryview:
    """Write what stdin can take now; close it once all is written (or the
    remote stopped reading: its exit code says why)."""
    assert child.stdin is not None
    try:
        left = left[os.write(child.stdin, left[:CHUNK]):]
    except BrokenPipeError:
        left = left[len(left):]
    if not left:
        poller.unregister(child.stdin)
        os.close(child.stdin)
        child.stdin = None
    return left


def _stderr_line(line: bytes, held: List[bytes]) -> None:
    if line.startswith(b"harnessctl: "):
        _write(sys.stderr, line + b"\n")
    elif line.strip():
        held.append(line)


def renamed(line: str, remote: Remote) -> str:
    """A JSON line whose "file" is a path on `remote`, with that file's address instead."""
    if not line.startswith('{"file":'):
        return line
    from ..commands import json_string

    plain = '{"file":%s,' % json_string(remote.path)
    if line.startswith(plain) and ',"forked_from":' not in line:  # the usual line: no json to import
        return '{"file":%s,' % json_string(remote.given) + line[len(plain):]
    import json

    try:
        value = json.loads(line)
    except ValueError:
        return line
    for key in ("file", "forked_from"):
        if isinstance(value.get(key), str) and value[key].startswith("/"):
            value[key] = remote.with_path(value[key])
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _write(stream: Any, data: bytes) -> None:
    try:
        stream.buffer.write(data)
        stream.flush()
    except (OSError, ValueError, AttributeError):
        pass
