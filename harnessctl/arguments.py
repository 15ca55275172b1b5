"""The parser that holds argv to each command's grammar (commandtable.py:
its arguments, options with a value, flags), and the readers of the option
values that are numbers.  cli.py runs what it parses; helptext.py spells
the same grammar for people.

The parser is hand-written on purpose: the grammar is a few fixed commands,
and every command is a fresh process whose start-up time is the product's
latency.
"""

from __future__ import annotations

from .commandtable import BY_NAME, RULES
from .errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Sequence, Tuple

def parse(argv: List[str]) -> Tuple[str, List[str], Dict[str, str], List[Tuple[str, str]]]:
    """(command, arguments, options, rules); a flag's value is the empty
    string; rules are the --allow/--deny values as (allow|deny, RULE), in order."""
    command = argv[0]
    if command not in BY_NAME:
        raise UsageError("unknown command %r%s (commands: %s; --help)"
                         % (command, _suggest(command, list(BY_NAME)), ", ".join(BY_NAME)))
    row = BY_NAME[command]
    allowed, flags = row.options, row.flags
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
        named += list(zip(row.names[1:], args[1:]))
    for name, value in named:
        if name != "TEXT":  # check_text says more about a bad TEXT
            require_utf8(value, name)
    return command, args, options, rules


def check_count(command: str, args: List[str]) -> None:
    row = BY_NAME[command]
    low, high, names = row.low, row.high, row.names
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
    """`; did you mean 'send'?` for a near miss, as git says it; else nothing."""
    import difflib  # only for a command line that is wrong

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return "; did you mean %r?" % close[0] if close else ""


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
