"""A command line as the shell will run it: its simple commands, what each runs
through the wrappers that run another command, and whether the line can be
verified statically at all.  policy.py matches `command:` rules on these
(docs/COMMANDS.md, "What a command pattern means").

Why a parser of our own: a rule on the text (`*pytest*`) lets `rm -rf ~
#pytest` through; a rule on the words the shell will run does not.  It reads a
line as bash would (and where zsh reads it otherwise, the way that writes or
runs more), and whatever it cannot read for certain (a substitution, an
expansion with side effects, a here-document, control flow, a redirection
out of the cwd) makes the line *unverifiable*: no allow matches it.  Deny
rules see more than an allow: every command found anywhere in the line, also
through `sudo`, `env`, `xargs`, `bash -c` and the like.

Three modules, one pass each: shellwords.py scans the text into words,
operators and simple commands; this module judges each simple command
(redirections, shell wrappers, what makes a line unverifiable) and finds
the views a deny sees; wrappers.py says what runs under each wrapper.
"""

from __future__ import annotations

import os
import re
import stat

from .shellwords import ASSIGNMENT, Lexer, Simple, Unparsable, group, split_pattern
from .wrappers import WRAPPERS, find_runs, script_for_deny, unreadable
from .wrappers import command_name as _name

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Callable, List, Optional, Sequence, Tuple

    from .shellwords import Word

    View = Tuple[str, ...]

MAX_LENGTH = 10_000
MAX_COMMANDS = 200
MAX_WRAPPERS = 4  # `bash -c` inside `bash -c` ...: deeper is not verifiable
MAX_VIEW_DEPTH = 8  # how deep deny views parse scripts and substitutions
MAX_VIEWS = 64  # views of one command kept from the wrappers between the first and the last

SHELLS = ("bash", "sh", "zsh", "dash", "ksh")
SHELL_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/")  # `./bash` is the workspace's, not a shell
KEYWORDS = frozenset(("if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
                      "select", "function", "time", "coproc", "!", "[[", "]]", "{", "}"))
OTHER_SHELLS = ("ash", "mksh", "yash", "posh", "fish", "csh", "tcsh", "su", "runuser")  # deny rules read their -c too
ANY_SHELL = frozenset(SHELLS + OTHER_SHELLS)
RUNS_TEXT = frozenset(("eval", "exec", "source", ".", "trap",  # builtins that run text as shell code
                       "emulate", "sched", "zpty"))  # zsh's: `emulate sh -c CODE`, `sched +1 CODE`
MOVES = frozenset(("cd", "pushd", "popd"))
HERE = ("<<", "<<-", "<<<")
CONTROL = frozenset([chr(c) for c in range(0x20) if c not in (9, 10)] + [chr(0x7f)]
                    + [chr(c) for c in range(0x80, 0xa0)])

_FD = re.compile(r"[0-9]+-?|-")
_SHELL_FLAGS = re.compile(r"-[celuxv]+|--login|--noprofile|--norc")
_FALLBACK = re.compile(r"[;&|()<>`'\"\n{}]+")

__all__ = ["Command", "Line", "parse", "split_pattern"]  # split_pattern (shellwords.py): policy.py reads patterns


class Command:
    """One simple command: its leading NAME=value assignments and its words
    (quotes removed, the command word first), its redirections as (fd,
    operator, target), and the views a deny rule is matched against: the words
    as written and as they are run (basename, through wrappers).  The views are
    found when first asked for: only a deny with a pattern needs them, and
    through `eval` and `bash -c` each costs a parse."""

    __slots__ = ("assigns", "words", "redirects", "_find_views", "_views")

    def __init__(self, assigns: Tuple[str, ...], words: Tuple[str, ...],
                 redirects: List[Tuple[str, str, str]], views: Callable[[], List[View]]) -> None:
        self.assigns, self.words, self.redirects, self._find_views = assigns, words, redirects, views
        self._views: Optional[List[View]] = None

    def views(self) -> List[View]:
        if self._views is None:
            self._views = self._find_views()
        return self._views

    def __repr__(self) -> str:
        return "Command(%r)" % (self.assigns + self.words,)


class Line:
    """A parsed command line: `commands` are what an allow must match (a shell
    wrapper's script parsed in its place), `why` is None when the line is
    verifiable, else the first reason it is not."""

    def __init__(self, commands: List[Command], why: Optional[str], views: Callable[[], List[View]]) -> None:
        self.commands, self.why, self._find_views = commands, why, views
        self._views: Optional[List[View]] = None

    @property
    def verifiable(self) -> bool:
        return self.why is None

    def all_views(self) -> List[View]:
        """Every view of every command found anywhere in the line, substitutions
        and wrappers included: what a deny sees of a line it cannot verify."""
        if self._views is None:
            self._views = self._find_views()
        return self._views


def parse(text: str, cwd: Optional[str] = None, own: Sequence[str] = (), depth: int = 0,
          moved: bool = False) -> Line:
    """The simple commands of `text`, redirections judged against `cwd` (a
    target among `own` is never fine).  `depth` counts shell wrappers around
    `text`; `moved` says a `cd` ran before it."""
    why = "a control character" if not CONTROL.isdisjoint(text) else None
    if len(text) > MAX_LENGTH or depth > MAX_VIEW_DEPTH:
        return _failed(text, "longer than %d characters" % MAX_LENGTH if len(text) > MAX_LENGTH
                       else "shell code nested deeper than %d" % MAX_VIEW_DEPTH, cwd, own)
    lexer = Lexer(text)
    try:
        raw = group(lexer.tokens(), lexer.note)
    except Unparsable as e:
        return _failed(text, why or str(e), cwd, own)
    except RecursionError:  # quotes and substitutions nested thousands deep
        return _failed(text, why or "quotes nested too deep", cwd, own)
    reader = _Reader(cwd, own, depth, moved, why or lexer.why)
    for simple in raw:
        reader.add(simple)
    if not raw:
        reader.note("no command")
    if len(reader.commands) > MAX_COMMANDS:
        reader.note("more than %d commands" % MAX_COMMANDS)
        reader.commands = []  # no allow could answer it: a deny sees them all the same (all_views)

    def views() -> List[View]:
        found = [v for simple in raw for v in _views([w.text for w in simple.words], cwd, own, depth)]
        inner = lexer.inner + [target.text for simple in raw for _, op, target in simple.redirects
                               if op == "<<<" and target and _reads_scripts(simple)]  # bash <<< 'rm -rf ~'
        for text in inner:
            found += parse(text, cwd, own, depth + 1).all_views()
        return found

    return Line(reader.commands, reader.why, views)


def _reads_scripts(simple: Simple) -> bool:
    return bool(simple.words) and _name(simple.words[0].text) in ANY_SHELL


def _failed(text: str, why: str, cwd: Optional[str], own: Sequence[str]) -> Line:
    """A line harnessctl cannot read: no command an allow could match, and for
    deny rules a best-effort split on blanks, quotes and operators."""
    return Line([], why, lambda: [v for words in _split(text) for v in _views(words, cwd, own, MAX_VIEW_DEPTH)])


def _split(text: str) -> List[List[str]]:
    """A best-effort split of shell text into commands of words: on blanks,
    quotes and operators, backslashes dropped."""
    return [words for words in (part.replace("\\", "").split() for part in _FALLBACK.split(text)) if words]


class _Reader:
    """Judges each simple command in line order and collects what an allow
    must match (a shell wrapper's script in its place)."""

    def __init__(self, cwd: Optional[str], own: Sequence[str], depth: int, moved: bool, why: Optional[str]) -> None:
        self.cwd, self.own, self.depth, self.moved, self.why = cwd, own, depth, moved, why
        self.commands: List[Command] = []

    def note(self, why: str) -> None:
        if self.why is None:
            self.why = why

    def add(self, simple: Simple) -> None:
        words = simple.words
        if any(a.expands for a in simple.assigns):
            self.note("an expansion in an assignment")
        if words:
            first = words[0]
            if first.expands:
                self.note("an expansion in the command word")
            elif first.glob:
                self.note("a glob or ~ in the command word")
            elif first.text in KEYWORDS:
                self.note("the shell keyword %s" % first.text)
            elif first.text in RUNS_TEXT:
                self.note("%s, which runs text as shell code" % first.text)
            elif self.moved and "/" in first.text and not first.text.startswith("/"):
                self.note("a relative command path after cd")
            wrapped = unreadable([w.text for w in words])
            if wrapped is not None:
                self.note(wrapped)
        redirects = [(fd, op, self._target(op, target)) for fd, op, target in simple.redirects]
        texts = tuple(w.text for w in words)
        if not (words and self._unwrap(simple, texts, redirects)):
            cwd, own, depth = self.cwd, self.own, self.depth
            self.commands.append(Command(tuple(a.text for a in simple.assigns), texts, redirects,
                                         lambda: _views(list(texts), cwd, own, depth)))
        if texts and (texts[0] in MOVES or texts[0] in ("builtin", "command") and MOVES.intersection(texts)):
            self.moved = True

    def _target(self, op: str, target: Optional[Word]) -> str:
        """The redirection's target, noting one that is not a regular file
        inside the cwd (a descriptor copy `2>&1` and `/dev/null` are fine)."""
        if op in HERE:
            self.note("a here-document %s" % op)
        if target is None:
            return ""
        text = target.text
        if op in HERE or op in ("<&", ">&") and _FD.fullmatch(text):
            return text
        if target.expands or target.glob or any(c in text for c in "$*?[~"):
            self.note("a redirection to %s, which the shell expands" % text)
        elif self.moved:
            self.note("a redirection after cd")
        elif (text != "/dev/null" and not _regular_inside(text, self.cwd, self.own)
              or op.endswith("!") and not _bash_reading_inside(text, self.cwd, self.own)):
            self.note("a redirection to %s, not a regular file inside the cwd" % text)
        return text

    def _unwrap(self, simple: Simple, texts: Tuple[str, ...],
                redirects: List[Tuple[str, str, str]]) -> bool:
        """`bash -lc SCRIPT`: the commands of SCRIPT in its place, when it is
        that and nothing more.  False for any other command."""
        if not _is_shell(texts[0]):
            return False
        k = 1
        while k < len(texts) and texts[k].startswith("-"):
            if not _SHELL_FLAGS.fullmatch(texts[k]):
                self.note("%s with options harnessctl does not read" % texts[0])
                return False
            k += 1
        if not any("c" in flag for flag in texts[1:k] if not flag.startswith("--")):
            if k == len(texts):
                self.note("%s reading commands from its input" % texts[0])
            return False  # `bash script.sh`: a command like any other
        script = simple.words[k:]
        if len(script) != 1 or script[0].expands or script[0].glob or simple.assigns:
            self.note("%s -c with %s" % (texts[0], "assignments before it" if simple.assigns else
                                         "arguments after the script" if len(script) > 1 else
                                         "an expansion in the script" if script else "no script"))
            return False
        if self.depth + 1 > MAX_WRAPPERS:
            self.note("shell wrappers nested deeper than %d" % MAX_WRAPPERS)
            return False
        inner = parse(script[0].text, self.cwd, self.own, self.depth + 1, self.moved)
        if inner.why is not None:
            self.note(inner.why)
        for command in inner.commands:
            self.commands.append(Command(command.assigns, command.words, command.redirects + redirects,
                                         _and_wrapper(command, list(texts))))
        return True


def _and_wrapper(command: Command, wrapper: List[str]) -> Callable[[], List[View]]:
    """The views of a command of a wrapper's script: its own, and the
    wrapper's as written (`--deny 'command:bash *'` sees `bash -lc ...`)."""
    return lambda: command.views() + _forms(wrapper)


def _is_shell(word: str) -> bool:
    head, _, name = word.rpartition("/")
    return name in SHELLS and (not head or head + "/" in SHELL_DIRS)


def _regular_inside(text: str, cwd: Optional[str], own: Sequence[str]) -> bool:
    """Whether a redirection target is a regular file inside `cwd`, symlinks
    resolved, or a new file whose directory is; never one of `own`, and never
    a file with a second hard link (it may be one outside the cwd)."""
    if not cwd or not text:
        return False
    root = os.path.realpath(cwd)
    full = os.path.realpath(os.path.join(root, text))
    if not _under(full, root) or any(_under(full, os.path.realpath(mine)) for mine in own):
        return False
    try:
        found = os.stat(full)
    except FileNotFoundError:
        return os.path.isdir(os.path.dirname(full))
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_nlink == 1


def _bash_reading_inside(text: str, cwd: Optional[str], own: Sequence[str]) -> bool:
    """zsh's `>! FILE` is bash's `>` into a file named `!` (`!FILE` when
    written together): whether that file too is a regular one inside the
    cwd, or lies in a folder that does not exist (bash cannot open it)."""
    if not cwd:
        return False
    for name in ("!", "!" + text):
        full = os.path.realpath(os.path.join(cwd, name))
        if os.path.isdir(os.path.dirname(full)) and not _regular_inside(name, cwd, own):
            return False
    return True


def _under(full: str, root: str) -> bool:
    return full == root or full.startswith(root.rstrip("/") + "/")


# -- what runs: the views a deny rule sees ---------------------------------------------------------


def _forms(words: List[str]) -> List[View]:
    """A command's words as written, and with the command word's path and
    backslashes taken off (`/bin/rm` and `\\rm` are `rm`)."""
    forms = [tuple(words)]
    name = _name(words[0])
    if name and name != words[0]:
        forms.append((name,) + tuple(words[1:]))
    return forms


def _views(words: List[str], cwd: Optional[str], own: Sequence[str], depth: int) -> List[View]:
    """Every view of one simple command (its assignments already dropped):
    its forms, and through each wrapper, the forms of what the wrapper runs.
    A wrapper's command is shorter than the wrapper's: that ends the loop.  A
    script (`eval`, `bash -c`) is parsed up to MAX_VIEW_DEPTH deep, and
    split on blanks and operators deeper down."""
    found: List[View] = []
    todo = [(words, depth)]
    while todo:
        words, depth = todo.pop()
        k = 0
        while k < len(words) and (words[k] in KEYWORDS and words[k] != "time" or ASSIGNMENT.match(words[k])):
            k += 1
        words = words[k:]
        if not words:
            continue
        name, args = _name(words[0]), words[1:]
        script = " ".join(args) if name == "eval" else script_for_deny(args) if name in ANY_SHELL else None
        if len(found) < MAX_VIEWS or not (name in WRAPPERS or name == "find" or script is not None):
            found += _forms(words)  # `sudo sudo ... rm`: the first views and the last, not each between
        if name in WRAPPERS:
            todo.append((WRAPPERS[name](args)[0], depth))
        elif name == "find":
            todo += [(run, depth) for run in find_runs(args)]
        elif script is not None and depth < MAX_VIEW_DEPTH:
            found += parse(script, cwd, own, depth + 1).all_views()
        elif name == "eval":
            todo.append((args, depth))  # deeper down, eval's words as they are
        elif script is not None:
            todo += [(words, depth) for words in _split(script)]
    return found


