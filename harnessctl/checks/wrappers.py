"""What runs under a wrapper: the command `sudo`, `env`, `nice`, `xargs` and
the like run with their arguments, the commands of `find -exec`, and the
script of a shell's `-c`.  Deny rules see through each of them
(commandline.py's views); an allow never does: a wrapped command is matched
as written.
"""

from __future__ import annotations

from .shellwords import ASSIGNMENT, split_pattern

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Callable, Dict, List, Optional, Tuple


def _after_options(words: List[str], valued: str = "", long_valued: Tuple[str, ...] = ()) -> List[str]:
    """The words after a wrapper's options: `-x` flags, `-x VALUE` for the
    letters in `valued` (or `-xVALUE`), `--long[=VALUE]`, and `--`."""
    k = 0
    while k < len(words):
        word = words[k]
        if word == "--":
            return words[k + 1:]
        if not word.startswith("-") or word == "-":
            break
        if word.startswith("--"):
            k += 2 if "=" not in word and word[2:] in long_valued else 1
            continue
        k += 1
        for at, letter in enumerate(word[1:], 1):
            if letter in valued:
                k += 1 if at == len(word) - 1 else 0
                break
    return words[k:]


def _drop_assignments(words: List[str]) -> List[str]:
    k = 0
    while k < len(words) and ASSIGNMENT.match(words[k]):
        k += 1
    return words[k:]


def _skip_one(words: List[str]) -> List[str]:
    return words[1:]


def script_for_deny(args: List[str]) -> Optional[str]:
    """The script of `bash [options] -c SCRIPT ...` (or `su -c SCRIPT`),
    whatever the options."""
    if "--command" in args[:-1]:
        return args[args.index("--command") + 1]
    given = next((arg for arg in args if arg.startswith("--command=")), None)
    if given is not None:
        return given.partition("=")[2]
    k, has_c = 0, False
    while k < len(args) and args[k][:1] in ("-", "+") and args[k] != "--":
        if args[k] in ("-o", "+o", "-O", "+O"):
            k += 1
        has_c = has_c or (args[k].startswith("-") and not args[k].startswith("--") and "c" in args[k])
        k += 1
    k += 1 if k < len(args) and args[k] == "--" else 0
    return args[k] if has_c and k < len(args) else None


def find_runs(args: List[str]) -> List[List[str]]:
    """The commands of `find ... -exec CMD ... ;` (and -execdir, -ok, -okdir)."""
    runs, k = [], 0
    while k < len(args):
        if args[k] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = k + 1
            while end < len(args) and args[end] not in (";", "+"):
                end += 1
            runs.append(args[k + 1:end])
            k = end
        k += 1
    return runs


def _env(args: List[str]) -> List[str]:
    """`env [-S STRING] ... CMD`: -S splits STRING into the words before CMD."""
    command = _drop_assignments(_after_options(args, "uCS", ("unset", "chdir", "split-string")))
    options = args[:len(args) - len(command)]
    given = ""
    for k, arg in enumerate(options):
        if arg in ("-S", "--split-string") and k + 1 < len(options):
            given = options[k + 1]
        elif arg.startswith("--split-string=") or arg.startswith("-S") and len(arg) > 2:
            given = arg.partition("=")[2] if arg.startswith("--") else arg[2:]
    return list(split_pattern(given) or given.split()) + command if given else command


def _chrt(args: List[str]) -> List[str]:
    rest = _after_options(args, "TPD")
    return rest[1:] if rest and rest[0].isdigit() else rest


# What runs under each wrapper: its arguments -> the command it runs.
WRAPPERS: Dict[str, Callable[[List[str]], List[str]]] = {
    "env": _env,
    "command": lambda a: _after_options(a),
    "builtin": lambda a: _after_options(a),
    "sudo": lambda a: _drop_assignments(_after_options(a, "ugCDhprtTU", (
        "user", "group", "close-from", "chdir", "host", "prompt", "role", "type", "command-timeout",
        "other-user"))),
    "doas": lambda a: _after_options(a, "uC"),
    "nice": lambda a: _after_options(a, "n", ("adjustment",)),
    "timeout": lambda a: _skip_one(_after_options(a, "sk", ("signal", "kill-after"))),
    "nohup": lambda a: _after_options(a),
    "stdbuf": lambda a: _after_options(a, "ioe", ("input", "output", "error")),
    "ionice": lambda a: _after_options(a, "cnpPu", ("class", "classdata", "pid", "pgid", "uid")),
    "chrt": _chrt,
    "setsid": lambda a: _after_options(a),
    "time": lambda a: _after_options(a, "fo", ("format", "output")),
    "exec": lambda a: _after_options(a, "a"),
    "busybox": lambda a: a,
    "noglob": lambda a: a,  # zsh's precommand modifiers
    "nocorrect": lambda a: a,
    "-": lambda a: a,
    "repeat": _skip_one,  # zsh: `repeat N CMD`
    "watch": lambda a: _after_options(a, "nq", ("interval",)),
    "xargs": lambda a: _after_options(a, "aEIdLnPs", ("arg-file", "delimiter", "max-args", "max-procs",
                                                      "max-chars", "process-slot-var")),
}
