"""A command of this command line run on one remote session: the same
command on the session's machine, its output and exit code passed back.

The changes to the output: the `"file"` of the lines `status`, `wait` and
`send --wait` print is the address as the user gave it (ssh://…), as it is
the FILE as given locally, so that a line names a session the user can act
on, and a line naming a file not asked is refused; every line, on stdout and
stderr, is cleaned as a local agent's text is (visible.py)."""

from __future__ import annotations

import os
import sys

from ..client import WORKTREE
from ..errors import HarnessctlError, UsageError
from ..visible import json_shown, shown
from .address import Remote, is_remote, parse
from .ssh import Child, end_with_signals, failure
from .tunnel import SETTING, Tunnel

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

    from ..commands import Send

NAMING = ("status", "wait", "send", "fork")  # the commands whose lines carry "file"
FORWARDED = ("status", "send", "reply", "cancel")  # the commands a live runtime answers through a forward (tunnel.py)
PLAIN_SEND = ("--print-id", "--queue", "--interrupt", "--schema")  # a send's options that are no bound setting
MACHINE_BOUND = ("cwd", "on_request", "on_result", "sandbox_write", "worktree")  # resolved where they are bound


def words(command: str, paths: List[str], options: Dict[str, str], rules: List[Tuple[str, str]]) -> List[str]:
    """The remote command's words: options first, then `--`, then the paths
    and other arguments (so a path that starts with `-` stays an argument)."""
    from ..commandtable import BY_NAME

    found = [command]
    for name, value in options.items():
        found += [name] if name in BY_NAME[command].flags else [name, value]
    for verb, rule in rules:
        found += ["--" + verb, rule]
    return found + ["--"] + paths


def send_flags(request: Send, passed: Dict[str, str]) -> Tuple[Dict[str, str], List[Tuple[str, str]]]:
    """A send as the flags of the same send on another machine, with the
    options `passed` as they are (--wait, --print-id): what it binds
    (fields.as_flags), how it is delivered, and a schema as `--schema -`
    (it leads stdin: send_stdin)."""
    from ..fields import as_flags

    options, rules = as_flags(request.wish)
    if request.schema is not None:
        options["--schema"] = "-"
    if request.deliver is not None:
        options["--" + request.deliver] = ""
    return dict(options, **passed), rules


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
    each line of its output, cleaned here."""
    remote = parse(args[0])
    asked = [remote]
    paths = [remote.path] + args[1:]
    if command in ("fork", "prune"):  # every session it names on the same machine
        asked += [same_machine(remote, arg, command) for arg in args[1:]]
        paths = [one.path for one in asked]
    if command == "wait" or command == "log" and "--follow" in options or command == "send" and "--wait" in options:
        end_with_signals()  # only a command that may wait long pays for the import of signal (enum: ~4 ms)
    shown_line = _shown_line(command, options, asked)
    if command not in FORWARDED:
        return relay(remote, words(command, paths, options, rules), stdin, lambda line: emit(shown_line(line)), asked)
    tunnel = Tunnel(remote)
    code = answered(tunnel, command, args, options, rules, stdin, emit)
    if code is not None:
        return code
    if command == "status":  # the remote status says where its runtime's socket is: kept for the commands to come
        return relay(remote, words(command, paths, options, rules), stdin,
                     lambda line: emit(shown_line(tunnel.learn(line))), asked, {SETTING: "1"})
    code = relay(remote, words(command, paths, options, rules), stdin, lambda line: emit(shown_line(line)), asked)
    if not tunnel.known():
        learn(tunnel)
    return code


def learn(tunnel: Tunnel) -> None:
    """Learn where the session's runtime socket is (a remote status), for
    the commands to come; a failure leaves it to the next command."""
    remote = tunnel.remote
    child = Child.on(remote.machine, words("status", [remote.path], {}, []), settings={SETTING: "1"})
    code, out, _ = child.communicate()
    if code == 0:
        tunnel.learn(out.decode("utf-8", "surrogateescape").strip())


def answered(tunnel: Tunnel, command: str, args: List[str], options: Dict[str, str], rules: List[Tuple[str, str]],
             stdin: Optional[bytes], emit: Callable[[str], None]) -> Optional[int]:
    """The exit code of `command` (one of FORWARDED) answered by the live
    runtime through the forward, its output emitted as the remote command
    prints it, its error naming the address; None: run it on the remote machine."""
    fields = _fields(command, args, options, rules, stdin)
    if fields is None:
        return None
    try:
        text = tunnel.ask(fields, retry_on_eof=command == "status" or command == "cancel" and len(args) == 1)
    except HarnessctlError as e:
        raise type(e)(os.fsdecode(swapped(os.fsencode(str(e)), [tunnel.remote]))) from None
    if text is None or command == "status" and WORKTREE in text:  # git counts a worktree's changes there
        return None
    if command == "status":
        from ..commands import with_file

        emit(json_shown(renamed(with_file(tunnel.remote.path, text), [tunnel.remote])))
    elif command == "send" and "--print-id" in options:
        emit(shown(text))
    return 0


def _fields(command: str, args: List[str], options: Dict[str, str], rules: List[Tuple[str, str]],
            stdin: Optional[bytes]) -> Optional[List[str]]:
    """The request of `command` as the runtime takes it, or None when a
    forward cannot carry it: a send that names a folder or a program of
    that machine (a cwd, a hook), which binding.asked resolves there, or
    that waits (the remote command prints its notes)."""
    if command == "status":
        return ["status"] if len(args) == 1 and not options else None
    if command == "cancel":
        return ["cancel"] + args[1:2]
    if command == "reply":
        return ["reply", args[1], (stdin or b"").decode("utf-8", "surrogateescape")]
    if "--wait" in options:
        return None
    from ..binding import send_request
    from ..fields import NAMES, from_flags

    wish = from_flags({name: value for name, value in options.items() if name not in PLAIN_SEND}, rules)
    if any(wish.get(name) is not None for name in MACHINE_BOUND):
        return None
    text = (stdin or b"").decode("utf-8", "surrogateescape")
    schema = None
    if "--schema" in options:  # its field leads stdin, on a line of its own (send_stdin)
        schema, _, text = text.partition("\n")
    deliver = "queue" if "--queue" in options else "interrupt" if "--interrupt" in options else None
    return send_request(text, schema, {name: wish.get(name) for name in NAMES}, deliver)


def _shown_line(command: str, options: Dict[str, str], asked: Sequence[Remote]) -> Callable[[str], str]:
    """How a line of the remote command's output is shown here: a line that
    names a session with its address (renamed), prune's text with each file
    asked named by its address, any other cleaned."""
    if command in NAMING or command == "prune" and "--json" in options:
        return lambda line: json_shown(renamed(line, asked))
    if command == "prune":  # `removed PATH: …`
        return lambda line: shown(os.fsdecode(swapped(os.fsencode(line), asked)))
    return cleaned


def cleaned(line: str) -> str:
    """A line of the remote's output as it may reach a terminal (visible.py):
    a JSON line (`log --json`, `rebind`) with JSON escapes, so that it stays
    the same JSON; any other (`log`) as text, `\\x1b` shown."""
    return json_shown(line) if line.startswith("{") else shown(line, lines=True)


def same_machine(remote: Remote, other: str, command: str = "fork") -> Remote:
    if not is_remote(other) or parse(other).machine != remote.machine:
        raise UsageError("%s: the files must be on the same machine (%s, %s)" % (command, remote.given, other))
    return parse(other)


def relay(remote: Remote, remote_words: List[str], stdin: Optional[bytes], emit: Callable[[str], None],
          asked: Sequence[Remote] = (), settings: Optional[Dict[str, str]] = None) -> int:
    """Run the remote command: `stdin` written to it, its stdout passed on
    line by line to `emit`, its stderr passed on as it comes, cleaned as a
    local agent's text is (visible.py: an OSC 52 clipboard write is shown,
    not obeyed), each `harnessctl: …` line naming the files `asked` by
    their addresses (`addressed`).  What ssh itself says (other lines)
    is held to the end: when ssh fails it is the cause in our one-line
    error, else it follows the output."""
    child = Child.on(remote.machine, remote_words, stdin is not None, settings=settings)
    held: List[bytes] = []
    asked = asked or [remote]
    try:
        child.pump(stdin or b"", lambda line: _stderr_line(line, held, asked),
                   lambda line: emit(line.decode("utf-8", "surrogateescape")))
        code = child.wait()
    except BaseException:
        child.kill()
        raise
    error = failure(remote.machine, code, b"\n".join(held).decode("utf-8", "replace"))
    if error is not None:
        raise error
    for line in held:
        _write(sys.stderr, _shown(line))
    return code


def _stderr_line(line: bytes, held: List[bytes], asked: Sequence[Remote]) -> None:
    if line.startswith(b"harnessctl: "):
        _write(sys.stderr, _shown(addressed(line, asked)))
    elif line.strip():
        held.append(line)


def addressed(line: bytes, asked: Sequence[Remote]) -> bytes:
    """A `harnessctl: …` line of the remote's with the machine named: each
    file asked that it names by its remote path is named by its address as
    given (`no such event file: ssh://box/…/nope.jsonl`); a line that names
    none of them (a path the remote resolved through a symlink, a message
    about no file) gets the first address in front.  The remote harnessctl
    knows nothing of ssh: without this, its error reads as a local file's."""
    named = swapped(line, asked)
    if named != line:
        return named
    prefix = b"harnessctl: "
    return prefix + os.fsencode(asked[0].given) + b": " + line[len(prefix):]


def swapped(line: bytes, asked: Sequence[Remote]) -> bytes:
    """`line` with each file asked named by its address as given instead of its path there."""
    import re

    given = {os.fsencode(remote.path): os.fsencode(remote.given) for remote in asked}
    paths = b"|".join(re.escape(path) for path in sorted(given, key=len, reverse=True))  # one pass, longest first
    return re.sub(paths, lambda match: given[match.group()], line)


def _shown(line: bytes) -> bytes:
    """A line of the remote's stderr as it may reach a terminal, with its newline."""
    return (shown(line.decode("utf-8", "surrogateescape")) + "\n").encode("utf-8")


def renamed(line: str, asked: Sequence[Remote]) -> str:
    """A JSON line whose "file" (and a fork's "forked_from") is a file asked
    (or one in a folder asked), with that file's address instead.  A line
    about any other file is refused (HarnessctlError): a compromised remote
    must not hand a script a local path, or another machine's file, to act
    on.  A line that is no JSON (an input id) names no file: it passes."""
    if not line.lstrip().startswith(("{", "[")):
        return line
    from ..commands import json_string

    for remote in asked:  # the usual line: its first key the file asked, and no other that could name one
        plain = '{"file":%s,' % json_string(remote.path)
        rest = line[len(plain):]
        if line.startswith(plain) and not any(mark in rest for mark in ('file"', "forked_from", "\\u")):
            return '{"file":%s,' % json_string(remote.given) + rest
    import json

    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        raise HarnessctlError("%s: the remote harnessctl answered a line that is no JSON object" % asked[0].given)
    for key in ("file", "forked_from"):
        if key in value:
            value[key] = _address(value[key], asked)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _address(path: Any, asked: Sequence[Remote]) -> str:
    """The address of `path` when it names a file asked, or one that `status`
    lists in a folder asked (the folder as given, joined to the file's name)."""
    for remote in asked:
        name = os.path.basename(path) if isinstance(path, str) else ""
        if path == remote.path or name not in ("", ".", "..") and os.path.join(remote.path, name) == path:
            return remote.with_path(path)
    raise HarnessctlError("%s: the remote harnessctl answered about %s, a file not asked: refused"
                          % (asked[0].given, ("%r" % (path,))[:200]))


def _write(stream: Any, data: bytes) -> None:
    try:
        stream.buffer.write(data)
        stream.flush()
    except (OSError, ValueError, AttributeError):
        pass
