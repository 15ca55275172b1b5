"""Hooks (`send --on-request CMD`, `--on-result CMD`): a command of the user's
that the runtime runs when a request is parked for a reply or a run ends.

A hook is bound to the event file like --model, so it is part of the binding
an agent cannot change (trusted.py).  Its command line is split like a shell
would (shlex) and run without one.  How the runtime runs it: hookrunner.py
(kept apart: a send needs only this, and threading costs ~6 ms to import).

A hook runs as the user, so the agent must not be able to rewrite what it
runs: the first send resolves its program (and an interpreter's script) to
an absolute path, against the sender's directory and PATH, records it
so, and refuses one that lies inside the bound cwd (docs/PROTOCOL-POLICY.md section 19)."""

from __future__ import annotations

import os

from ..errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import List, Optional

# Interpreters whose first argument that is not an option is a script file (checked like the
# program), and the options after which the code is inline instead (no script: -c, -e ...).
INTERPRETERS = {"python": ("c", "m"), "bash": ("c",), "sh": ("c",), "dash": ("c",), "zsh": ("c",),
                "node": ("e", "p", "--eval", "--print"), "ruby": ("e",), "perl": ("e", "E")}


def argv(command: str, name: str) -> List[str]:
    """The words of a hook's command line; exit 2 when it has none or cannot be split."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError as e:
        raise UsageError("%s: cannot split %r into words (%s)" % (name, command, e)) from None
    if not words:
        raise UsageError("%s names no command" % name)
    return words


def resolve(command: str, name: str) -> str:
    """`command` with its program, and an interpreter's script, as absolute
    paths in real folders (the rest of its words as given, quoted again);
    exit 2 when either is not found, or the program is not executable.
    Resolved by the sender, against its own directory and PATH: never later,
    in the bound cwd, where the agent could put a file of that name."""
    import shlex

    words = argv(command, name)
    words[0] = _program(words[0], name)
    script = _script(words)
    if script is not None:
        words[script] = _real_file(words[script], "%s: the script %r of %s" % (name, words[script], words[0]))
    return shlex.join(words)


def check_reach(command: str, cwd: str, name: str) -> None:
    """Refuse a resolved hook whose program or script lies inside `cwd` (a
    real path), as named or where its symlink leads: the agent could rewrite
    it there, and the runtime would run what it wrote as the user."""
    words = argv(command, name)
    script = _script(words)
    for index in (0, script) if script is not None else (0,):
        for path in (words[index], os.path.realpath(words[index])):
            if path == cwd or path.startswith(cwd.rstrip("/") + "/"):
                raise UsageError("%s: refusing the hook: its %s %s lies inside the bound cwd %s, where the agent "
                                 "can rewrite it; keep hooks outside the workspace"
                                 % (name, "program" if index == 0 else "script", path, cwd))


def _program(word: str, name: str) -> str:
    """A program's absolute path (_real_file): a word with a `/` from the
    current directory, another one found on PATH (as a shell finds it)."""
    if "/" in word:
        return _real_file(word, "%s: the program %r" % (name, word), executable=True)
    import shutil

    found = shutil.which(word)
    if found is None:
        raise UsageError("%s: the program %r is not found on PATH" % (name, word))
    return _real_file(found, "%s: the program %r (found as %s)" % (name, word, found), executable=True)


def _real_file(path: str, what: str, executable: bool = False) -> str:
    """`path` made absolute with its folder's real path and its own name (so
    a program that reads its name, `sh` as bash or busybox, still sees it)."""
    try:
        folder, own = os.path.split(os.path.abspath(path))
        real = os.path.join(os.path.realpath(folder), own)
        found = os.path.isfile(real)
    except (OSError, ValueError) as e:
        raise UsageError("%s cannot be resolved: %s" % (what, getattr(e, "strerror", None) or e)) from None
    if not found:
        raise UsageError("%s is not a file" % what)
    if executable and not os.access(real, os.X_OK):
        raise UsageError("%s is not executable" % what)
    return real


def _script(words: List[str]) -> Optional[int]:
    """Where the script of an interpreter's command line is (its first word
    that is not an option), or None: not an interpreter, no script, or its
    code is inline (`sh -c`, `python3 -m`, `node -e`)."""
    name = os.path.basename(words[0]).rstrip("0123456789.")
    inline = INTERPRETERS.get(name)
    if inline is None:
        return None
    for index, word in enumerate(words[1:], 1):
        if word.startswith("--"):
            if word.partition("=")[0] in inline:
                return None
        elif word.startswith("-") and len(word) > 1:
            if any(letter in inline for letter in word[1:]):
                return None
        elif word != "-":
            return index
    return None
