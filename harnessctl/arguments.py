"""The command line's grammar: what each command takes (arguments, options
with a value, flags), the parser that holds argv to it, and the readers of
the option values that are numbers.  cli.py runs what it parses; helptext.py
spells the same grammar for people.

The parser is hand-written on purpose: the grammar is a few fixed commands,
and every command is a fresh process whose start-up time is the product's
latency.
"""

from __future__ import annotations

import sys

from .errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Sequence, Tuple

# Per command: the names of its arguments (those after the first optional one
# may be omitted), its options that take a value, and its flags.
NAMES = {"send": ("FILE", "TEXT"), "wait": ("FILE", "INPUT_ID"), "status": ("FILE",), "cancel": ("FILE", "INPUT_ID"),
         "reply": ("FILE", "REQUEST_ID", "ANSWER"), "log": ("FILE",), "rebind": ("FILE",), "agents": (),
         "mcp": (), "fork": ("FILE", "NEWFILE"), "serve": ("DIR",)}
POSITIONALS = {"send": (1, 2), "wait": (1, 2), "status": (1, sys.maxsize), "cancel": (1, 2), "reply": (2, 3),
               "log": (1, 1), "rebind": (1, 1), "agents": (0, 0), "mcp": (0, 0),
               "fork": (2, 2), "serve": (0, sys.maxsize)}  # wait --any: 1 to any number (parse)
OPTIONS = {"send": ("--cwd", "--model", "--adapter", "--agent", "--timeout", "--mode", "--policy", "--allow",
                    "--deny", "--schema", "--on-request", "--on-result", "--max-tokens", "--max-cost-usd",
                    "--sandbox-write"),
           "wait": ("--timeout",), "log": ("--since", "--runs"), "rebind": ("--accept",),
           "mcp": ("--root", "--max-mode"), "fork": ("--cwd",), "serve": ("--port", "--host")}
FLAGS = {"send": ("--print-id", "--wait", "--queue", "--interrupt", "--sandbox"), "wait": ("--any",),
         "log": ("--follow", "--json", "--diff"), "agents": ("--json",),
         "mcp": ("--allow-agent-commands", "--allow-rules", "--sandbox")}
# repeatable, and their order matters: kept apart, in order, as (allow|deny|root|sandbox-write, VALUE) "rules"
RULES = ("--allow", "--deny", "--root", "--sandbox-write")


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
        from .helptext import SYNOPSIS

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
    from .helptext import suggestion

    return suggestion(word, choices)


def require_utf8(value: str, name: str) -> None:
    """Arguments reach the runtime, the harness and the event file (JSON) as
    UTF-8; the event file's own path may be any bytes."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("%s is not valid UTF-8" % name) from None



def count(options: Dict[str, str], name: str) -> Optional[int]:
    """A whole number >= 1 (--since SEQ, --runs N)."""
    text = options.get(name)
    if text is None:
        return None
    if not (text.isascii() and text.isdigit() and int(text) >= 1):
        raise UsageError("%s must be a whole number, 1 or more (got %r)" % (name, text))
    return int(text)


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
