"""What runs under a wrapper: the command `sudo`, `env`, `nice`, `xargs` and
the like run with their arguments, the commands of `find -exec`, and the
script of a shell's `-c`.  Deny rules see through each of them
(commandline.py's views); an allow never does: a wrapped command is matched
as written.
"""

from __future__ import annotations

from .options import Options, read
from .shellwords import ASSIGNMENT, split_pattern

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Callable, Dict, List, Optional, Tuple

    Run = Tuple[List[str], Optional[str]]  # (the command a wrapper runs, why that is a guess or None)


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


ENV = Options(" \t0iv", "aCLPSUu", {
    "ignore-environment": "", "null": "", "unset": "=", "chdir": "=", "split-string": "=", "argv0": "=",
    "block-signal": "?", "default-signal": "?", "ignore-signal": "?", "list-signal-handling": "", "debug": "",
    "help": "", "version": ""})  # GNU env, and BSD's -L -P -U
SUDO = Options("ABbEeHhiKklNnPSsVv", "aCcDgpRrTtUu", {
    "askpass": "", "auth-type": "=", "background": "", "bell": "", "close-from": "=", "login-class": "=",
    "preserve-env": "?", "edit": "", "group": "=", "set-home": "", "help": "", "host": "=", "login": "",
    "remove-timestamp": "", "reset-timestamp": "", "list": "", "no-update": "", "non-interactive": "",
    "preserve-groups": "", "prompt": "=", "chdir": "=", "chroot": "=", "role": "=", "stdin": "", "shell": "",
    "type": "=", "command-timeout": "=", "other-user": "=", "user": "=", "version": "", "validate": ""})
DOAS = Options("Lns", "aCu", {})
_SU_LONGS = {"command": "=", "session-command": "=", "fast": "", "group": "=", "supp-group": "=", "login": "",
             "preserve-environment": "", "pty": "", "shell": "=", "whitelist-environment": "=", "help": "",
             "version": ""}
SU = Options("fhlmpPV", "cgGsw", _SU_LONGS, permute=True)  # util-linux su (and BSD's -f -l -m)
RUNUSER = Options("fhlmpPV", "cgGsuw", dict(_SU_LONGS, user="="), permute=True)
RUNUSER_COMMAND = Options(RUNUSER.flags, RUNUSER.valued, RUNUSER.longs)  # `runuser -u USER CMD ...`


def _env(args: List[str]) -> Run:
    """`env [options] [-] [NAME=VALUE ...] CMD`.  `-S STRING` (`-iS`,
    `--split-string=`) is split into words that stand in its place, and
    env reads its options again from there."""
    options, operands, why = read(args, ENV)
    split = next(((value, end) for name, value, end in options if name in ("S", "split-string")), None)
    if split is not None:
        value, end = split
        words = None if "$" in value or "\\" in value else split_pattern(value)  # env -S expands ${X}, \_ ...
        inner, inner_why = _env(list(words if words is not None else value.split()) + args[end:])
        return inner, why or inner_why or (None if words is not None else "a -S string harnessctl cannot split")
    if operands[:1] == ["-"]:  # `env - CMD` is `env -i CMD`
        operands = operands[1:]
    return _drop_assignments(operands), why


def _sudo(args: List[str]) -> Run:
    options, operands, why = read(args, SUDO)
    return _drop_assignments(operands), why


def _doas(args: List[str]) -> Run:
    options, operands, why = read(args, DOAS)
    return operands, why


def _su(args: List[str], spec: Options = SU) -> Run:
    """`su [options] [-] [USER [ARGS]]`: the shell runs `-c CMD` (anywhere
    among the options, or `--command=`, `--session-command=`), else ARGS
    (`su root -- -c CMD`).  `runuser -u USER CMD ARGS` runs CMD itself."""
    options, operands, why = read(args, spec)
    if any(name in ("u", "user") for name, _, _ in options):
        options, operands, why = read(args, RUNUSER_COMMAND)
        return operands, why
    scripts = [value for name, value, _ in options if name in ("c", "command", "session-command")]
    if operands[:1] == ["-"]:
        operands = operands[1:]
    if scripts:
        return ["sh", "-c", "\n".join(scripts)], why
    return (["sh"] + operands[1:] if operands[1:] else []), why


def _chrt(args: List[str]) -> List[str]:
    rest = _after_options(args, "TPD")
    return rest[1:] if rest and rest[0].isdigit() else rest


def _plain(run: Callable[[List[str]], List[str]]) -> Callable[[List[str]], Run]:
    """A wrapper whose options are read leniently: nothing it runs is a guess."""
    return lambda args: (run(args), None)


def command_name(word: str) -> str:
    """The command a word names: `/bin/rm`, `\\rm` and zsh's `=rm` are `rm`."""
    return word.lstrip("\\=").rpartition("/")[2]


def unreadable(words: List[str]) -> Optional[str]:
    """Why what a command runs through its wrappers cannot be read for
    certain (an option a wrapper does not take, a -S string harnessctl
    cannot split), or None: each wrapper in turn, as a deny sees them."""
    while words and command_name(words[0]) in WRAPPERS:
        name = command_name(words[0])
        words, why = WRAPPERS[name](words[1:])
        if why is not None:
            return "%s: %s" % (name, why)
    return None


# What runs under each wrapper: its arguments -> (the command it runs, why that is a guess or None).
WRAPPERS: Dict[str, Callable[[List[str]], Run]] = {
    "env": _env,
    "sudo": _sudo,
    "doas": _doas,
    "su": _su,
    "runuser": lambda a: _su(a, RUNUSER),
    "command": _plain(_after_options),
    "builtin": _plain(_after_options),
    "nice": _plain(lambda a: _after_options(a, "n", ("adjustment",))),
    "timeout": _plain(lambda a: _skip_one(_after_options(a, "sk", ("signal", "kill-after")))),
    "nohup": _plain(_after_options),
    "stdbuf": _plain(lambda a: _after_options(a, "ioe", ("input", "output", "error"))),
    "ionice": _plain(lambda a: _after_options(a, "cnpPu", ("class", "classdata", "pid", "pgid", "uid"))),
    "chrt": _plain(_chrt),
    "setsid": _plain(_after_options),
    "time": _plain(lambda a: _after_options(a, "fo", ("format", "output"))),
    "exec": _plain(lambda a: _after_options(a, "a")),
    "busybox": _plain(lambda a: a),
    "noglob": _plain(lambda a: a),  # zsh's precommand modifiers
    "nocorrect": _plain(lambda a: a),
    "-": _plain(lambda a: a),
    "repeat": _plain(_skip_one),  # zsh: `repeat N CMD`
    "watch": _plain(lambda a: _after_options(a, "nq", ("interval",))),
    "xargs": _plain(lambda a: _after_options(a, "aEIdLnPs", ("arg-file", "delimiter", "max-args", "max-procs",
                                                             "max-chars", "process-slot-var"))),
}
