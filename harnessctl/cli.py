"""Command line: run what arguments.py parses, print, and map errors and
outcomes to exit codes (the only place that does).

A command becomes what commands.py holds (a send as data, its checks, the
outcome codes, the status lines), the layer the MCP tools stand on too;
this module adds only what a command line has: argv, stdin, stdout, stderr.
"""

from __future__ import annotations

import os
import sys

from . import __version__
from .arguments import count, parse, timeout
from .commands import (
    MAX_TEXT,
    OUTCOME_CODES,
    Send,
    check_text,
    deliver,
    error_line,
    file_statuses,
    fixed,
    listed,
    waited_line,
    with_file,
)
from .commandtable import BY_NAME
from .errors import HarnessctlError, OutcomeUnknownError, UsageError
from .stdio import deaf_to_sigint, drop_stdout, emit, end_with_reader, hold_std_fds, say

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple


def main(argv: Optional[List[str]] = None, adapter: Optional[str] = None, agent: Optional[str] = None) -> int:
    """Run one command; `adapter` (and `agent`) are fixed by a per-adapter package entry point."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        return run(argv, adapter, agent)
    except BrokenPipeError:
        # The reader went away (`status | true`): quiet, as the standard library's
        # tools are on EPIPE, but not 0: the line did not arrive.
        drop_stdout()
        return UsageError.exit_code
    except HarnessctlError as e:
        return fail(str(e), e.exit_code)
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if os.environ.get("HARNESSCTL_DEBUG") == "1":
            raise
        return fail("internal error: %s: %s (set HARNESSCTL_DEBUG=1 for a traceback)" % (type(e).__name__, e), 1)


def entry(adapter: Optional[str] = None, agent: Optional[str] = None) -> None:
    """The command's entry point: main(), then leave at once.  os._exit skips
    the interpreter's teardown of every module it imported, about 1.5 ms of a
    10 ms `status`.  Nothing is lost: every line was flushed as it was written
    (emit), files and locks are closed by the kernel, and a command starts no
    thread.  Should a flush still fail, the interpreter exits the usual way."""
    hold_std_fds()
    try:
        code = main(None, adapter, agent)
        deaf_to_sigint()
    except KeyboardInterrupt:  # it came while main was leaving by another way
        code = 130
        deaf_to_sigint()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            sys.exit(code)
    os._exit(code)


def fail(message: str, code: int) -> int:
    if os.environ.get("HARNESSCTL_DEBUG") == "1" and sys.exc_info()[0] is not None and sys.stderr is not None:
        import traceback

        traceback.print_exc()
    from .visible import shown

    say("harnessctl: %s" % shown(message.replace("\n", " ")))
    return code


def run(argv: List[str], fixed_adapter: Optional[str], fixed_agent: Optional[str] = None) -> int:
    early = help_or_version(argv, fixed_adapter)
    if early is not None:
        return early
    command, args, options, rules = parse(argv)
    if any(name.startswith("ssh://") for name in BY_NAME[command].addresses(args, options)):
        return remote(command, args, options, rules, fixed_adapter, fixed_agent)
    if command == "send":
        return send(args, options, rules, fixed_adapter, fixed_agent)
    if command == "mcp":
        return mcp(options, rules, fixed_adapter, fixed_agent)
    return LOCAL[command](args, options)


def help_or_version(argv: List[str], fixed_adapter: Optional[str]) -> Optional[int]:
    """The exit code of a run that only shows help or the version, else None."""
    options_part = argv[: argv.index("--")] if "--" in argv else argv
    if not argv:
        from .helptext import overview

        say(overview())
        return 2
    if ("-h" in options_part or "--help" in options_part) and (argv[0] in BY_NAME or argv[0].startswith("-")):
        # `nosuch --help` falls through to parse's unknown-command error (exit 2): a script asking
        # whether a command exists must not be told yes by the overview and exit 0.
        from .helptext import command_help, overview

        emit(command_help(argv[0], fixed_adapter) if argv[0] in BY_NAME else overview())
        return 0
    if argv[0] == "--version":
        emit("harnessctl %s" % __version__ + (" (%s adapter)" % fixed_adapter if fixed_adapter else ""))
        return 0
    return None


def rebind(args: List[str], options: Dict[str, str]) -> int:
    from . import rebind as rebinding

    binding, said = rebinding.rebind(args[0], options.get("--accept"))
    emit(binding)
    say("harnessctl: %s" % said)
    return 0


def fork(args: List[str], options: Dict[str, str]) -> int:
    from . import fork as forking

    line, warning = forking.fork(args[0], args[1], options.get("--cwd"), "--worktree" in options)
    if warning is not None:
        say("harnessctl: warning: %s" % warning)
    emit(json_line(line))
    return 0


def diff(args: List[str], options: Dict[str, str]) -> int:
    from .sessions import Sessions
    from .stdio import emit_bytes

    emit_bytes(Sessions([]).at(args[0]).patch())  # raw bytes: a patch is not lines to clean
    return 0


def prune(args: List[str], options: Dict[str, str]) -> int:
    from .prune import command

    return command(args, options, emit)


def serve(args: List[str], options: Dict[str, str]) -> int:
    from .serve.command import DEFAULT_HOST, serve_fleet

    return serve_fleet(args, options.get("--port", "0"), options.get("--host", DEFAULT_HOST), emit, say)


def wait(args: List[str], options: Dict[str, str]) -> int:
    """`wait FILE [INPUT_ID]`, its notes on stderr; `wait --any FILE...`."""
    if "--any" in options:
        from .waiting import wait_any

        end_with_reader()
        kind, index, line = wait_any(args, timeout(options))
        return outcome(waited_line(args[index], (kind, line)))
    from . import waiting
    from .notes import Notes, offset_now

    notes = Notes(args[0], offset_now(args[0]), say)
    end_with_reader()
    found = waiting.wait(args[0], args[1] if len(args) > 1 else None, timeout(options), notes)
    return outcome(waited_line(args[0], found))


def cancel(args: List[str], options: Dict[str, str]) -> int:
    from . import client

    client.cancel(args[0], args[1] if len(args) > 1 else None)
    return 0


def reply(args: List[str], options: Dict[str, str]) -> int:
    from . import client

    client.reply(args[0], args[1], args[2] if len(args) > 2 else read_stdin("ANSWER"))
    return 0


def send(args: List[str], options: Dict[str, str], rules: List[Tuple[str, str]], fixed_adapter: Optional[str],
         fixed_agent: Optional[str] = None) -> int:
    from . import commands

    if "--timeout" in options and "--wait" not in options:
        raise UsageError("--timeout applies to --wait: add --wait, or leave --timeout out")
    wait_timeout = timeout(options)
    request = asked_send(args, options, rules, fixed_adapter, fixed_agent)
    notes = None
    if "--wait" in options:
        from .notes import Notes, offset_now

        notes = Notes(args[0], offset_now(args[0]), say)  # from before the send: no note is missed
    input_id = commands.send(request)
    if "--print-id" in options:
        emit(input_id)
    if notes is None:
        return 0
    from .waiting import wait  # only a send that waits pays for it

    end_with_reader()
    try:
        waited = wait(args[0], input_id, wait_timeout, notes)
    except HarnessctlError as e:
        if e.exit_code == OutcomeUnknownError.exit_code:
            raise
        from shlex import quote

        # Accepted: any other code would tell a retrying script that nothing was sent.
        raise OutcomeUnknownError("the input %s was accepted, but waiting for its result failed: %s; "
                                  "harnessctl wait %s %s" % (input_id, e, quote(args[0]), input_id)) from None
    return outcome(waited)


def mcp(options: Dict[str, str], rules: List[Tuple[str, str]], fixed_adapter: Optional[str],
        fixed_agent: Optional[str]) -> int:
    """`harnessctl mcp`: serve MCP on stdin and stdout until stdin ends."""
    from .mcp import server

    return server.serve([root for verb, root in rules if verb == "root"], "--allow-agent-commands" in options,
                        fixed_adapter, fixed_agent, options.get("--max-mode", "ask"), "--allow-rules" in options,
                        "--sandbox" in options)


def schema_and_text(args: List[str], options: Dict[str, str]) -> Tuple[Optional[Dict[str, Any]], str]:
    """A send's schema (--schema FILE, or `-`: the first JSON document on
    stdin, TEXT after it when TEXT is not given) and its checked TEXT."""
    given = args[1] if len(args) > 1 else None
    if options.get("--schema") == "-":
        from .checks.structured import split

        leading, rest = split(read_stdin("--schema - and TEXT"))
        if given is not None and rest.strip():
            raise UsageError("--schema -: stdin holds more than the schema, and TEXT is given too: give one")
        return leading, check_text(rest if given is None else given)
    schema: Optional[Dict[str, Any]] = None
    if "--schema" in options:
        from .checks.structured import read_file

        schema = read_file(options["--schema"])
    return schema, check_text(given if given is not None else read_stdin("TEXT"))


def asked_send(args: List[str], options: Dict[str, str], rules: List[Tuple[str, str]],
               fixed_adapter: Optional[str], fixed_agent: Optional[str]) -> Send:
    """The send that FILE [TEXT] and the flags ask for, here or on another machine."""
    from .fields import from_flags

    wish = from_flags(options, rules)
    wish["adapter"], wish["agent"] = fixed(wish.get("adapter"), wish.get("agent"), fixed_adapter, fixed_agent)
    schema, text = schema_and_text(args, options)
    return Send(args[0], text, wish, schema, deliver("--queue" in options, "--interrupt" in options))


def remote(command: str, args: List[str], options: Dict[str, str], rules: List[Tuple[str, str]],
           fixed_adapter: Optional[str], fixed_agent: Optional[str]) -> int:
    """A command on sessions of other machines (harnessctl/remote/): the same
    command run there over ssh, TEXT and ANSWER on its stdin."""
    if command == "status" and len(args) > 1:
        from .remote import fleet

        worst = 0
        for lines in fleet.statuses(args):
            for line, code in lines:
                worst = max(worst, code)
                emit(json_line(line))
        return worst
    if command == "wait" and "--any" in options:
        from .remote import fleet

        return outcome(fleet.wait_any(args, timeout(options), lambda text: say("harnessctl: " + text)))
    if command == "diff":  # the session in either form (Session.patch)
        return diff(args, options)
    from .remote import forward

    stdin = None
    if command == "send":
        request = asked_send(args, options, rules, fixed_adapter, fixed_agent)
        passed = {name: value for name, value in options.items() if name in ("--wait", "--timeout", "--print-id")}
        options, rules = forward.send_flags(request, passed)
        stdin, args = forward.send_stdin(request.schema, request.text), args[:1]
    elif command == "reply":
        stdin, args = (args[2] if len(args) > 2 else read_stdin("ANSWER")).encode("utf-8"), args[:2]
    return forward.run(command, args, options, rules, stdin, emit)  # each line cleaned there


def statuses(args: List[str], options: Dict[str, str]) -> int:
    """`status FILE|DIR...`: one line per file, in the order given, a DIR's
    event files in its place (commands.listed).  One argument that is no
    session (or a DIR that cannot be read) is an error as any command's;
    otherwise each file's error is a line of its own ({"file", "error",
    "exit_code"}) so that it hides no other, and the command exits with the
    highest code seen."""
    from . import client

    if len(args) == 1:
        files = listed(args[0])
        if files is None:
            emit(json_line(with_file(args[0], client.status(args[0]))))
            return 0
        return _each_status(files, 0)
    worst = 0
    for arg in args:
        try:
            files = listed(arg)
        except HarnessctlError as e:
            worst = max(worst, e.exit_code)
            emit(error_line(arg, str(e), e.exit_code))
            continue
        worst = _each_status([arg] if files is None else files, worst)
    return worst


def _each_status(files: List[str], worst: int) -> int:
    """Print each file's status line or error line; the highest exit code seen."""
    for line, code in file_statuses(files):
        worst = max(worst, code)
        emit(json_line(line))
    return worst


def agents(args: List[str], options: Dict[str, str]) -> int:
    import json

    from . import presets
    from .visible import shown

    entries = presets.listing(dict(os.environ))
    if "--json" in options:
        for entry in entries:
            emit(json.dumps(entry))
    else:  # a command line from the environment may hold anything: shown() makes it inert on a terminal
        emit("\n".join(shown(line) for line in presets.table(entries).splitlines()))
    return 0


def log(args: List[str], options: Dict[str, str]) -> int:
    """`log`: reads the event file only (log.py), never the runtime."""
    since, runs = count(options, "--since"), count(options, "--runs")
    if since is not None and runs is not None:
        raise UsageError("--since and --runs both say where to start: give one")
    from .log.show import show

    if "--follow" in options:
        end_with_reader()
    return show(args[0], "--follow" in options, since, runs, "--json" in options, "--diff" in options)


def outcome(waited: Tuple[str, str]) -> int:
    kind, line = waited
    if line:
        emit(json_line(line))
    return OUTCOME_CODES.get(kind, 1)


def json_line(line: str) -> str:
    """A JSON line from the event file or the runtime, with what could drive a
    terminal (C1 controls, bidi overrides...) written as JSON escapes."""
    if line.isprintable():
        return line
    from .visible import json_shown

    return json_shown(line)


def read_stdin(what: str) -> str:
    try:
        data = sys.stdin.buffer.read(MAX_TEXT + 1)
    except (OSError, AttributeError):
        raise UsageError("%s omitted and stdin is not readable" % what) from None
    if len(data) > MAX_TEXT:  # never pass on a silently cut-off prefix
        raise UsageError("%s on stdin is larger than %d MiB" % (what, MAX_TEXT // (1024 * 1024)))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("%s on stdin is not valid UTF-8" % what) from None


# The commands on this machine's sessions, but send and mcp (run): each is given its arguments and options.
LOCAL = {"log": log, "agents": agents, "rebind": rebind, "fork": fork, "serve": serve, "wait": wait, "status": statuses,
         "cancel": cancel, "reply": reply, "diff": diff, "prune": prune}
