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
from .ssh import end_with_signals, failure, start

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
    import selectors
    import subprocess

    end_with_signals()
    proc = start(remote.machine, remote_words, stdin is not None,
                 stdout=subprocess.PIPE if emit else None, stderr=subprocess.PIPE)
    held: List[bytes] = []
    pending = {proc.stderr.fileno(): b""}  # type: ignore[union-attr]
    if emit:
        pending[proc.stdout.fileno()] = b""  # type: ignore[union-attr]
    selector = selectors.DefaultSelector()
    for fd in pending:
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ)
    to_write = memoryview(stdin or b"")
    if stdin is not None:
        os.set_blocking(proc.stdin.fileno(), False)  # type: ignore[union-attr]
        selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE)  # type: ignore[union-attr]
    try:
        while selector.get_map():
            for key, _ in selector.select():
                fd = key.fd
                if fd not in pending:
                    to_write = _write_some(fd, to_write, selector, proc)
                    continue
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    selector.unregister(fd)
                    chunk = b"\n" if pending[fd] else b""
                lines = (pending[fd] + chunk).split(b"\n")
                pending[fd] = lines.pop()
                for line in lines:
                    if fd == proc.stderr.fileno():  # type: ignore[union-attr]
                        _stderr_line(line, held)
                    elif emit is not None:
                        emit(renamed(line.decode("utf-8", "surrogateescape"), remote))
        code = proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        selector.close()
    said = b"\n".join(held).decode("utf-8", "replace")
    error = failure(remote.machine, code, said)
    if error is not None:
        raise error
    if held:
        _write(sys.stderr, b"\n".join(held) + b"\n")
    return code


def _write_some(fd: int, data: memoryview, selector: Any, proc: Any) -> memoryview:
    """Feed stdin; close it once all is written (the remote reads to EOF)."""
    try:
        written = os.write(fd, data[:CHUNK])
    except BrokenPipeError:  # the remote stopped reading: its exit code says why
        written = len(data)
    data = data[written:]
    if not data:
        selector.unregister(fd)
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
    return data


def _stderr_line(line: bytes, held: List[bytes]) -> None:
    if line.startswith(b"harnessctl: "):
        _write(sys.stderr, line + b"\n")
    elif line.strip():
        held.append(line)


def renamed(line: str, remote: Remote) -> str:
    """A JSON line whose "file" is a path on `remote`, with that file's address instead."""
    if not line.startswith('{"file":'):
        return line
    import json

    from ..commands import json_string

    try:
        path, end = json.JSONDecoder().raw_decode(line, 8)
    except ValueError:
        return line
    if not isinstance(path, str) or not path.startswith("/"):
        return line
    line = '{"file":' + json_string(remote.with_path(path)) + line[end:]
    if ',"forked_from":' in line:  # fork's line names its source too
        value = json.loads(line)
        value["forked_from"] = remote.with_path(value["forked_from"])
        line = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return line


def _write(stream: Any, data: bytes) -> None:
    try:
        stream.buffer.write(data)
        stream.flush()
    except (OSError, ValueError, AttributeError):
        pass
