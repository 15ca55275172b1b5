"""Command line: parse, run, map errors and outcomes to exit codes (the only place that does).

The parser is hand-written on purpose: the grammar is six fixed commands, and
every command is a fresh process whose start-up time is the product's latency.
"""

from __future__ import annotations

import os
import sys

from . import __version__
from .errors import HarnessctlError, OutcomeUnknownError, UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Sequence, Tuple

MAX_TEXT = 4 * 1024 * 1024


def main(argv: Optional[List[str]] = None, adapter: Optional[str] = None, agent: Optional[str] = None) -> int:
    """Run one command; `adapter` (and `agent`) are fixed by a per-adapter package entry point."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        return run(argv, adapter, agent)
    except BrokenPipeError:
        # The reader went away (`status | true`): quiet, as the standard library's
        # tools are on EPIPE, but not 0: the line did not arrive.
        _drop_stdout()
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
    code = main(None, adapter, agent)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            sys.exit(code)
    os._exit(code)


def hold_std_fds() -> None:
    """A caller may start us with fd 0, 1 or 2 closed (cron, `<&-`, `2>&-`).
    Such a slot is filled with /dev/null opened the other way round (a closed
    stdin by a write-only one, a closed stdout or stderr by a read-only one):
    it still fails as a closed stream would, but the pipes and files we open
    can no longer land on 0-2, where the runtime's spawn would put /dev/null
    over them.  Costs three fstat calls when all three are open."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            placeholder = os.open(os.devnull, os.O_WRONLY if fd == 0 else os.O_RDONLY)
            if placeholder != fd:  # a lower slot was free after all: never so, as we go up
                os.dup2(placeholder, fd, inheritable=False)
                os.close(placeholder)


def say(text: str) -> None:
    """One message on stderr; nothing when stderr is closed or unusable (the
    exit code still says what happened)."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def emit(text: str) -> None:
    """Print one line to stdout, or fail cleanly when stdout is closed
    (`>&-`), broken (EPIPE: re-raised for main) or full (`> /dev/full`)."""
    try:
        if sys.stdout is None:
            raise OSError(9, "stdout is closed")
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as e:
        _drop_stdout()
        raise UsageError("cannot write to stdout: %s" % (getattr(e, "strerror", None) or e)) from None


def _drop_stdout() -> None:
    """Point fd 1 at /dev/null so that the interpreter's own flush at exit
    does not report the same failure again with a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
    if sys.stdout is not None:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass


def fail(message: str, code: int) -> int:
    if os.environ.get("HARNESSCTL_DEBUG") == "1" and sys.exc_info()[0] is not None and sys.stderr is not None:
        import traceback

        traceback.print_exc()
    from .visible import shown

    say("harnessctl: %s" % shown(message.replace("\n", " ")))
    return code


def run(argv: List[str], fixed_adapter: Optional[str], fixed_agent: Optional[str] = None) -> int:
    options_part = argv[: argv.index("--")] if "--" in argv else argv
    if not argv:
        from .usage import overview

        say(overview())
        return 2
    if "-h" in options_part or "--help" in options_part:
        from .usage import command_help, overview

        emit(command_help(argv[0], fixed_adapter) if argv[0] in POSITIONALS else overview())
        return 0
    if argv[0] == "--version":
        emit("harnessctl %s" % __version__ + (" (%s adapter)" % fixed_adapter if fixed_adapter else ""))
        return 0
    command, args, options, rules = parse(argv)
    if command == "log":
        return log(args, options)
    if command == "agents":
        return agents(options)
    if command == "rebind":
        from .rebind import rebind

        binding, said = rebind(args[0], options.get("--accept"))
        emit(binding)
        say("harnessctl: %s" % said)
        return 0
    if command == "mcp":
        from .mcp import serve

        return serve([root for verb, root in rules if verb == "root"], "--allow-agent-commands" in options,
                     fixed_adapter, fixed_agent, options.get("--max-mode", "ask"), "--allow-rules" in options)
    from . import client

    if command == "send":
        return send(args, options, rules, fixed_adapter, fixed_agent)
    if command == "wait" and "--any" in options:
        kind, index, line = client.wait_any(args, timeout(options))
        return outcome((kind, with_file(args[index], line) if line else ""))
    if command == "wait":
        from .notes import Notes, offset_now

        notes = Notes(args[0], offset_now(args[0]), say)
        kind, line = client.wait(args[0], args[1] if len(args) > 1 else None, timeout(options), notes)
        return outcome((kind, with_file(args[0], line) if kind == "status" and line else line))
    if command == "status":
        return statuses(args)
    if command == "cancel":
        client.cancel(args[0])
    else:
        answer = args[2] if len(args) > 2 else read_stdin("ANSWER")
        client.reply(args[0], args[1], answer)
    return 0


def send(args: List[str], options: Dict[str, str], rules: List[Tuple[str, str]], fixed_adapter: Optional[str],
         fixed_agent: Optional[str] = None) -> int:
    from . import client

    adapter, agent = fixed(options.get("--adapter"), options.get("--agent"), fixed_adapter, fixed_agent)
    if "--timeout" in options and "--wait" not in options:
        raise UsageError("--timeout applies to --wait: add --wait, or leave --timeout out")
    wait_timeout = timeout(options)
    text = check_text(args[1] if len(args) > 1 else read_stdin("TEXT"))
    schema = None
    if "--schema" in options:
        from .structured import read_file

        schema = read_file(options["--schema"])
    notes = None
    if "--wait" in options:
        from .notes import Notes, offset_now

        notes = Notes(args[0], offset_now(args[0]), say)  # from before the send: no note is missed
    input_id = client.send(args[0], text, options.get("--cwd"), options.get("--model"), adapter, agent,
                           policy(options, rules), schema, unattended(options))
    if "--print-id" in options:
        emit(input_id)
    if notes is None:
        return 0
    try:
        waited = client.wait(args[0], input_id, wait_timeout, notes)
    except HarnessctlError as e:
        if e.exit_code == OutcomeUnknownError.exit_code:
            raise
        from shlex import quote

        # Accepted: any other code would tell a retrying script that nothing was sent.
        raise OutcomeUnknownError("the input %s was accepted, but waiting for its result failed: %s; "
                                  "harnessctl wait %s %s" % (input_id, e, quote(args[0]), input_id)) from None
    return outcome(waited)


def fixed(adapter: Optional[str], agent: Optional[str], fixed_adapter: Optional[str],
          fixed_agent: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """The adapter and agent a send binds: those given, else a per-adapter
    package's own; one that differs from the package's is refused."""
    if fixed_adapter and adapter not in (None, fixed_adapter):
        raise UsageError("this harnessctl is the %s adapter's; --adapter %s is not available"
                         % (fixed_adapter, adapter))
    if fixed_agent and agent not in (None, fixed_agent):
        raise UsageError("this harnessctl runs the %s agent; --agent %s is not available" % (fixed_agent, agent))
    return adapter or fixed_adapter, agent or fixed_agent


def unattended(options: Dict[str, str]) -> Dict[str, Any]:
    """The hooks (--on-request, --on-result) and limits (--max-tokens,
    --max-cost-usd) a send binds, by binding key; only those it gives."""
    found: Dict[str, Any] = {}
    from .hooks import KEYS, resolve

    for key, (flag, _) in KEYS.items():
        if flag in options:
            found[key] = resolve(options[flag], flag)
    if "--max-tokens" in options or "--max-cost-usd" in options:
        from . import budget

        if "--max-tokens" in options:
            found["max_tokens"] = budget.tokens(options["--max-tokens"])
        if "--max-cost-usd" in options:
            found["max_cost_usd"] = budget.cost(options["--max-cost-usd"])
    return found


def statuses(files: List[str]) -> int:
    """`status FILE...`: one line per file, in the order given.  One file that
    is not a session is an error as any command's; among several it is a line
    of its own ({"file", "error", "exit_code"}) so that it hides no other, and
    the command exits with the highest code seen."""
    from . import client

    if len(files) == 1:
        emit(json_line(with_file(files[0], client.status(files[0]))))
        return 0
    worst = 0
    for file in files:
        line, code = file_status(file)
        worst = max(worst, code)
        emit(json_line(line))
    return worst


def file_status(file: str) -> Tuple[str, int]:
    """One file's line among several (`status FILE...`, the MCP status tool):
    its status line with "file", or its error line; and that exit code."""
    from . import client

    try:
        return with_file(file, client.status(file)), 0
    except HarnessctlError as e:
        return error_line(file, str(e), e.exit_code), e.exit_code
    except Exception as e:
        if os.environ.get("HARNESSCTL_DEBUG") == "1":
            raise
        return error_line(file, "internal error: %s: %s" % (type(e).__name__, e), 1), 1


def with_file(file: str, line: str) -> str:
    """A status line with `"file": FILE` (the path as given) as its first key."""
    return '{"file":%s,%s' % (json_string(file), line[1:])


def error_line(file: str, message: str, code: int) -> str:
    """The line of a file that is not a session: the message a command on it
    alone prints (without `harnessctl: `, made inert as it is: visible.py), and its exit code."""
    from .visible import shown

    return '{"file":%s,"error":%s,"exit_code":%d}' % (json_string(file), json_string(shown(message.replace("\n", " "))),
                                                     code)


def json_string(text: str) -> str:
    """`text` as a JSON string, valid UTF-8 whatever it holds: a path that is
    not UTF-8 (its bytes are lone surrogates here) is written with \\u escapes,
    as state.status_line does.  A plain path costs no import of json."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return '"%s"' % text
    import json

    quoted = json.dumps(text, ensure_ascii=False)
    try:
        quoted.encode("utf-8")
    except UnicodeEncodeError:
        quoted = json.dumps(text)
    return quoted


def policy(options: Dict[str, str], rules: List[Tuple[str, str]]) -> Optional[Dict[str, Any]]:
    """The permission policy a send asks for ({"mode", "rules"}), or None when
    it names none (a later send: the bound one; a first: the harness's own)."""
    if "--policy" in options:
        if rules or "--mode" in options:
            raise UsageError("--policy FILE holds the mode and the rules: give it, or --mode/--allow/--deny")
        from .policy import read_file

        mode, checked = read_file(options["--policy"])
        return {"mode": mode, "rules": checked}
    if not rules and "--mode" not in options:
        return None
    from .policy import check_mode, check_rules

    return {"mode": check_mode(options.get("--mode")), "rules": check_rules(rules)}


def agents(options: Dict[str, str]) -> int:
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
    """`log`: reads the event file only (follow.py), never the runtime."""
    since, runs = count(options, "--since"), count(options, "--runs")
    if since is not None and runs is not None:
        raise UsageError("--since and --runs both say where to start: give one")
    from .follow import show

    return show(args[0], "--follow" in options, since, runs, "--json" in options, "--diff" in options)


def count(options: Dict[str, str], name: str) -> Optional[int]:
    """A whole number >= 1 (--since SEQ, --runs N)."""
    text = options.get(name)
    if text is None:
        return None
    if not (text.isascii() and text.isdigit() and int(text) >= 1):
        raise UsageError("%s must be a whole number, 1 or more (got %r)" % (name, text))
    return int(text)


# What `--wait` and `wait` exit with, by what they waited for (the status line: 0).
OUTCOME_CODES = {"completed": 0, "status": 0, "failed": 7, "cancelled": 8, "request": 9, "timeout": 10}


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


def timeout(options: Dict[str, str]) -> Optional[float]:
    """--timeout S: seconds, a finite number >= 0 (more than a year is a year)."""
    text = options.get("--timeout")
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise UsageError("--timeout must be a number of seconds, 0 or more (got %r)" % text)
    return min(value, 365 * 86400.0)


# Per command: the names of its arguments (those after the first optional one
# may be omitted), its options that take a value, and its flags.
NAMES = {"send": ("FILE", "TEXT"), "wait": ("FILE", "INPUT_ID"), "status": ("FILE",), "cancel": ("FILE",),
         "reply": ("FILE", "REQUEST_ID", "ANSWER"), "log": ("FILE",), "rebind": ("FILE",), "agents": (),
         "mcp": ()}
POSITIONALS = {"send": (1, 2), "wait": (1, 2), "status": (1, sys.maxsize), "cancel": (1, 1), "reply": (2, 3),
               "log": (1, 1), "rebind": (1, 1), "agents": (0, 0), "mcp": (0, 0)}  # wait --any: 1 to any number (parse)
OPTIONS = {"send": ("--cwd", "--model", "--adapter", "--agent", "--timeout", "--mode", "--policy", "--allow",
                    "--deny", "--schema", "--on-request", "--on-result", "--max-tokens", "--max-cost-usd"),
           "wait": ("--timeout",), "log": ("--since", "--runs"), "rebind": ("--accept",),
           "mcp": ("--root", "--max-mode")}
FLAGS = {"send": ("--print-id", "--wait"), "wait": ("--any",), "log": ("--follow", "--json", "--diff"),
         "agents": ("--json",), "mcp": ("--allow-agent-commands", "--allow-rules")}
# repeatable, and their order matters: kept apart, in order, as (allow|deny|root, VALUE) "rules"
RULES = ("--allow", "--deny", "--root")


def parse(argv: List[str]) -> Tuple[str, List[str], Dict[str, str], List[Tuple[str, str]]]:
    """(command, arguments, options, rules); a flag's value is the empty
    string; rules are the --allow/--deny values as (allow|deny, RULE), in order."""
    command = argv[0]
    if command not in POSITIONALS:
        raise UsageError("unknown command %r%s (commands: %s; --help)"
                         % (command, _suggest(command, list(POSITIONALS)), ", ".join(POSITIONALS)))
    allowed, flags = OPTIONS.get(command, ()), FLAGS.get(command, ())
    args: List[str] = []
    options: Dict[str, str] = {}
    rules: List[Tuple[str, str]] = []
    rest = iter(argv[1:])
    for arg in rest:
        if arg == "--":
            args.extend(rest)
            break
        name, eq, value = arg.partition("=")
        if arg in flags:
            options[arg] = ""
        elif arg.startswith("--") and name in allowed:
            if not eq:
                following = next(rest, None)
                if following is None:
                    raise UsageError("%s needs a value" % name)
                value = following
            if not value:
                raise UsageError("%s must not be empty" % name)
            if name in RULES:
                rules.append((name[2:], value))
            else:
                options[name] = value
        elif arg.startswith("-") and len(arg) > 1:
            raise UsageError("unknown option %s for %s%s" % (arg, command, _suggest(name, allowed + flags)))
        else:
            args.append(arg)
    named = list(options.items()) + [("--" + verb, rule) for verb, rule in rules]
    if command == "wait" and "--any" in options:  # every argument is a FILE, which may be any bytes
        if not args:
            raise UsageError("wait --any: missing FILE (usage: harnessctl wait --any FILE... [--timeout S])")
    else:
        check_count(command, args)
        named += list(zip(NAMES[command][1:], args[1:]))
    for name, value in named:
        if name != "TEXT":  # check_text says more about a bad TEXT
            require_utf8(value, name)
    return command, args, options, rules


def check_count(command: str, args: List[str]) -> None:
    low, high = POSITIONALS[command]
    names = NAMES[command]
    if len(args) < low:
        from .usage import SYNOPSIS

        usages = [" ".join(usage.split()) for usage in SYNOPSIS[command].split("\n       harnessctl ")]  # wait: two
        raise UsageError("%s: missing %s (usage: %s)" % (command, " and ".join(names[len(args):low]),
                                                        " or harnessctl ".join(usages)))
    if len(args) > high and not high:
        raise UsageError("%s takes no arguments, got %s" % (command, " ".join(repr(a) for a in args)))
    if len(args) > high:
        last = names[high - 1]
        if last in ("TEXT", "ANSWER"):
            from shlex import quote

            raise UsageError("%s takes one %s, got %d words: quote it (harnessctl %s %s %s) or pipe it on stdin"
                             % (command, last, len(args) - high + 1, command, " ".join(names[:high - 1]),
                                quote(" ".join(args[high - 1:]))))
        raise UsageError("%s takes %s (%s), got %d; extra: %s" % (
            command, "1 argument" if high == 1 else "%d arguments" % high, " ".join(names[:high]), len(args),
            " ".join(repr(a) for a in args[high:])))


def _suggest(word: str, choices: Sequence[str]) -> str:
    from .usage import suggestion

    return suggestion(word, choices)


def require_utf8(value: str, name: str) -> None:
    """Arguments reach the runtime, the harness and the event file (JSON) as
    UTF-8; the event file's own path may be any bytes."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("%s is not valid UTF-8" % name) from None


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


def check_text(text: str) -> str:
    if not text.strip():
        raise UsageError("empty text: nothing to send")
    if "\0" in text:
        raise UsageError("text contains a NUL byte")
    if len(text.encode("utf-8", "surrogateescape")) > MAX_TEXT:
        raise UsageError("text is larger than %d MiB" % (MAX_TEXT // (1024 * 1024)))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("text is not valid UTF-8") from None
    return text
