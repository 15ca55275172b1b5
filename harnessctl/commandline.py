"""A command line as the shell will run it: its simple commands, what each runs
through the wrappers that run another command, and whether the line can be
verified statically at all.  policy.py matches `command:` rules on these
(docs/COMMANDS.md, "What a command pattern means").

Why a parser of our own: a rule on the text (`*pytest*`) lets `rm -rf ~
#pytest` through; a rule on the words the shell will run does not.  It reads a
line as bash would, and whatever it cannot read for certain (a substitution,
an expansion with side effects, a here-document, control flow, a redirection
out of the cwd) makes the line *unverifiable*: no allow matches it.  Deny
rules see more than an allow: every command found anywhere in the line, also
through `sudo`, `env`, `xargs`, `bash -c` and the like.  Hand-written and
stdlib only: `shlex` knows neither operators nor `$(...)`, and a decision must
take well under a millisecond.
"""

from __future__ import annotations

import os
import re
import stat

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Callable, Dict, List, Optional, Sequence, Tuple

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
OTHER_SHELLS = ("ash", "mksh", "yash", "posh", "fish", "csh", "tcsh", "su")  # deny rules read their -c too
ANY_SHELL = frozenset(SHELLS + OTHER_SHELLS)
RUNS_TEXT = frozenset(("eval", "exec", "source", ".", "trap"))  # builtins that run text as shell code
MOVES = frozenset(("cd", "pushd", "popd"))
SEPARATORS = frozenset(("&&", "||", ";", "|", "\n"))
OPERATOR_WHY = {"&": "a command in the background (&)", "|&": "the operator |&", "(": "a subshell ( )",
                ")": "a subshell ( )", ";;": "a case clause (;;)", ";&": "a case clause (;&)",
                ";;&": "a case clause (;;&)"}
OPERATORS = (";;&", "&>>", "&&", "&>", "||", "|&", ";;", ";&", "&", "|", ";", "(", ")")
REDIRECTS = ("<<<", "<<-", "<<", "<>", "<&", ">>", ">&", ">|", "<", ">")
HERE = ("<<", "<<-", "<<<")
CONTROL = frozenset([chr(c) for c in range(0x20) if c not in (9, 10)] + [chr(0x7f)]
                    + [chr(c) for c in range(0x80, 0xa0)])

_PLAIN = re.compile(r"[^ \t\n;&|()<>\\'\"`$*?\[~]+")  # a run of characters that are themselves
_DOUBLE_PLAIN = re.compile(r'[^"\\$`]+')
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")  # brace expansion: one word becomes several
_FD = re.compile(r"[0-9]+-?|-")
_SHELL_FLAGS = re.compile(r"-[celuxv]+|--login|--noprofile|--norc")
_FALLBACK = re.compile(r"[;&|()<>`'\"\n{}]+")


class Unparsable(Exception):
    """The line is not one harnessctl can read (unbalanced quoting and the like)."""


class Word:
    """One word: `text` with the quotes removed, `raw` as written, whether it
    holds a `$` expansion, and whether an unquoted glob or leading `~` does."""

    __slots__ = ("text", "raw", "expands", "glob")

    def __init__(self, text: str, raw: str, expands: bool, glob: bool) -> None:
        self.text, self.raw, self.expands, self.glob = text, raw, expands, glob


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
    lexer = _Lexer(text)
    try:
        raw = _group(lexer.tokens(), lexer.note)
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


def _reads_scripts(simple: _Simple) -> bool:
    return bool(simple.words) and _name(simple.words[0].text) in ANY_SHELL


def split_pattern(text: str) -> Optional[Tuple[str, ...]]:
    """The words of a `command:` pattern, read as a command line is; None if it
    is not the words of one simple command (an operator, a redirection, a
    comment, unbalanced quotes)."""
    lexer = _Lexer(text)
    try:
        tokens = lexer.tokens()
    except Unparsable:
        return None
    if not tokens or lexer.comment or any(kind != "w" for kind, _, _ in tokens):
        return None
    return tuple(word.text for _, word, _ in tokens if isinstance(word, Word))


def _failed(text: str, why: str, cwd: Optional[str], own: Sequence[str]) -> Line:
    """A line harnessctl cannot read: no command an allow could match, and for
    deny rules a best-effort split on blanks, quotes and operators."""
    return Line([], why, lambda: [v for words in _split(text) for v in _views(words, cwd, own, MAX_VIEW_DEPTH)])


def _split(text: str) -> List[List[str]]:
    """A best-effort split of shell text into commands of words: on blanks,
    quotes and operators, backslashes dropped."""
    return [words for words in (part.replace("\\", "").split() for part in _FALLBACK.split(text)) if words]


# -- words and operators ---------------------------------------------------------------------------

if TYPE_CHECKING:
    Token = Tuple[str, "str | Word", str]  # ("w", Word, ""), ("op", OPERATOR, ""), ("r", REDIRECTION, FD)


class _Lexer:
    """The tokens of a line: words, control operators and redirections, with
    the first reason the line cannot be verified and the text of every
    substitution (for deny rules)."""

    def __init__(self, text: str) -> None:
        self.s, self.i = text, 0
        self.why: Optional[str] = None
        self.inner: List[str] = []
        self.comment = False
        self.expands = self.glob = False

    def note(self, why: str) -> None:
        if self.why is None:
            self.why = why

    def tokens(self) -> List[Token]:
        s, n = self.s, len(self.s)
        out: List[Token] = []
        while self.i < n:
            c = s[self.i]
            if c in " \t":
                self.i += 1
            elif c == "\\" and s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "#":
                self.comment = True
                end = s.find("\n", self.i)
                self.i = n if end < 0 else end
            elif c == "\n":
                out.append(("op", "\n", ""))
                self.i += 1
            elif c in "<>" and not s.startswith("(", self.i + 1):
                out.append(("r", self._operator(REDIRECTS), ""))
            elif c in ";&|()":
                op = self._operator(OPERATORS)
                out.append(("r", op[1:], "&") if op in ("&>", "&>>") else ("op", op, ""))
            else:
                word = self._word()
                if (self.i < n and s[self.i] in "<>" and not s.startswith("(", self.i + 1)
                        and word.raw.isdigit() and word.raw.isascii()):
                    out.append(("r", self._operator(REDIRECTS), word.raw))
                else:
                    out.append(("w", word, ""))
        return out

    def _operator(self, table: Tuple[str, ...]) -> str:
        op = next(op for op in table if self.s.startswith(op, self.i))
        self.i += len(op)
        return op

    def _word(self) -> Word:
        s, n, start = self.s, len(self.s), self.i
        out: List[str] = []
        unquoted: List[str] = []
        self.expands = self.glob = False
        while self.i < n:
            c = s[self.i]
            plain = _PLAIN.match(s, self.i)
            if plain:
                out.append(plain.group())
                unquoted.append(plain.group())
                self.i = plain.end()
            elif c in " \t\n;&|()":
                break
            elif c in "<>":
                if not s.startswith("(", self.i + 1):
                    break
                self.note("a process substitution %s(...)" % c)
                out.append(self._substitution(self.i + 2))
            elif c == "\\":
                following = s[self.i + 1:self.i + 2]
                if following != "\n":
                    out.append(following or "\\")
                self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise Unparsable("an unbalanced single quote")
                out.append(s[self.i + 1:end])
                self.i = end + 1
            elif c == '"':
                self.i += 1
                self._double(out)
            elif c == "`":
                self._backtick(out)
            elif c == "$":
                self._dollar(out, False)
            else:  # * ? [ ~
                self.glob = self.glob or c != "~" or self.i == start
                out.append(c)
                unquoted.append(c)
                self.i += 1
        if _BRACES.search("".join(unquoted)):
            self.note("a brace expansion {a,b}")
        return Word("".join(out), s[start:self.i], self.expands, self.glob)

    def _double(self, out: List[str]) -> None:
        """The inside of "...", from just after the opening quote."""
        s, n = self.s, len(self.s)
        while self.i < n:
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\":
                following = s[self.i + 1:self.i + 2]
                if following in ('"', "\\", "$", "`"):
                    out.append(following)
                elif following != "\n":
                    out.append("\\" + following)
                self.i += 2
            elif c == "$":
                self._dollar(out, True)
            elif c == "`":
                self._backtick(out)
            else:
                plain = _DOUBLE_PLAIN.match(s, self.i)
                assert plain is not None
                out.append(plain.group())
                self.i = plain.end()
        raise Unparsable("an unbalanced double quote")

    def _dollar(self, out: List[str], quoted: bool) -> None:
        """A `$` and what it expands.  A plain `$NAME` or `${NAME}` is kept as
        written, and only inside double quotes: unquoted, the shell splits its
        value into words (`ok${IFS}/etc/passwd` is two) and expands globs in it."""
        s, i = self.s, self.i
        following = s[i + 1:i + 2]
        if following == "(":
            self.note("an arithmetic expansion $((...))" if s.startswith("((", i + 1) else
                      "a command substitution $(...)")
            out.append(self._substitution(i + 2))
            return
        if following == "{":
            end = _close(s, i + 2, "{", "}")
            inside = s[i + 2:end - 1]
            if _NAME.fullmatch(inside):
                self._variable(quoted)
            else:
                self.note("an expansion ${%s}" % inside[:40])
                if any(mark in inside for mark in ("$(", "`", "<(", ">(")):
                    self.inner.append(inside)
        elif following == "'" and not quoted:
            self.note("$'...' quoting")
            end = _close_escaped(s, i + 2, "'", "$'")
        elif following == '"' and not quoted:
            self.note('$"..." quoting')
            self.i = i + 2
            self._double(out)
            return
        elif following == "[":
            self.note("an arithmetic expansion $[...]")
            end = _close(s, i + 2, "[", "]")
        elif _NAME.match(s, i + 1):
            end = _NAME.match(s, i + 1).end()  # type: ignore[union-attr]
            self._variable(quoted)
        elif following and following in "0123456789@*#?$!-":
            end = i + 2
            self._variable(quoted)
            if following in "@*":
                self.note("$%s, which expands to any number of words" % following)
        else:
            end = i + 1
        out.append(s[i:end])
        self.i = end

    def _variable(self, quoted: bool) -> None:
        self.expands = True
        if not quoted:
            self.note("an unquoted $ expansion, which the shell splits into words")

    def _substitution(self, start: int) -> str:
        """A `$(...)`, `<(...)` or `>(...)` whose inside begins at `start`: its
        text, kept for deny rules, and the raw text for the word."""
        end = _close(self.s, start, "(", ")")
        self.inner.append(self.s[start:end - 1])
        raw = self.s[self.i:end]
        self.i = end
        return raw

    def _backtick(self, out: List[str]) -> None:
        s, n, j = self.s, len(self.s), self.i + 1
        inner: List[str] = []
        while j < n and s[j] != "`":
            if s[j] == "\\" and j + 1 < n:
                inner.append(s[j + 1] if s[j + 1] in "$`\\" else s[j:j + 2])
                j += 2
            else:
                inner.append(s[j])
                j += 1
        if j >= n:
            raise Unparsable("an unbalanced backtick")
        self.note("a command substitution `...`")
        self.inner.append("".join(inner))
        out.append(s[self.i:j + 1])
        self.i = j + 1


def _close(s: str, i: int, opening: str, closing: str) -> int:
    """The index just after the `closing` that matches an `opening` just
    before `i`, quotes and backslashes respected (best effort: a `case` inside
    a substitution can fool it, and then the line is unverifiable anyway)."""
    depth, n = 1, len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            end = s.find("'", i + 1)
            if end < 0:
                break
            i = end
        elif c == '"':
            i = _close_double(s, i + 1) - 1
        elif c == "`":
            end = _close_escaped(s, i + 1, "`", "backtick")
            i = end - 1
        elif c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise Unparsable("an unbalanced %s" % opening)


def _close_double(s: str, i: int) -> int:
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif s.startswith("$(", i):
            i = _close(s, i + 2, "(", ")")
        elif s.startswith("${", i):
            i = _close(s, i + 2, "{", "}")
        elif c == "`":
            i = _close_escaped(s, i + 1, "`", "backtick")
        else:
            i += 1
    raise Unparsable("an unbalanced double quote")


def _close_escaped(s: str, i: int, end: str, what: str) -> int:
    """The index after the `end` that closes a span a backslash escapes in
    (a backtick's, `$'...'`'s); Unparsable naming `what` when none does."""
    n = len(s)
    while i < n:
        if s[i] == "\\":
            i += 2
        elif s[i] == end:
            return i + 1
        else:
            i += 1
    raise Unparsable("an unbalanced %s" % what)


# -- simple commands -------------------------------------------------------------------------------


class _Simple:
    """A simple command as the tokens give it, before it is judged."""

    __slots__ = ("assigns", "words", "redirects")

    def __init__(self) -> None:
        self.assigns: List[Word] = []
        self.words: List[Word] = []
        self.redirects: List[Tuple[str, str, Optional[Word]]] = []

    def empty(self) -> bool:
        return not (self.assigns or self.words or self.redirects)


def _group(tokens: List[Token], note: Callable[[str], None]) -> List[_Simple]:
    """The tokens as simple commands; what is not a plain sequence of simple
    commands is noted."""
    commands: List[_Simple] = []
    current, last = _Simple(), ""
    k, n = 0, len(tokens)
    while k < n:
        kind, value, fd = tokens[k]
        k += 1
        if kind == "w":
            assert isinstance(value, Word)
            if not current.words and _ASSIGNMENT.match(value.raw):
                current.assigns.append(value)
            else:
                current.words.append(value)
            continue
        assert isinstance(value, str)
        if kind == "r":
            target = tokens[k][1] if k < n and tokens[k][0] == "w" else None
            if isinstance(target, Word):
                k += 1
            else:
                note("a redirection %s without a target" % value)
            current.redirects.append((fd, value, target if isinstance(target, Word) else None))
            continue
        if value not in SEPARATORS:
            note(OPERATOR_WHY[value])
        if not current.empty():
            commands.append(current)
            current = _Simple()
        elif value != "\n":
            note("%s with no command before it" % value)
        last = value
    if not current.empty():
        commands.append(current)
    elif last in ("&&", "||", "|"):
        note("a line that ends with %s" % last)
    return commands


class _Reader:
    """Judges each simple command in line order and collects what an allow
    must match (a shell wrapper's script in its place)."""

    def __init__(self, cwd: Optional[str], own: Sequence[str], depth: int, moved: bool, why: Optional[str]) -> None:
        self.cwd, self.own, self.depth, self.moved, self.why = cwd, own, depth, moved, why
        self.commands: List[Command] = []

    def note(self, why: str) -> None:
        if self.why is None:
            self.why = why

    def add(self, simple: _Simple) -> None:
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
        elif text != "/dev/null" and not _regular_inside(text, self.cwd, self.own):
            self.note("a redirection to %s, not a regular file inside the cwd" % text)
        return text

    def _unwrap(self, simple: _Simple, texts: Tuple[str, ...],
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


def _name(word: str) -> str:
    return word.lstrip("\\").rpartition("/")[2]


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
        while k < len(words) and (words[k] in KEYWORDS and words[k] != "time" or _ASSIGNMENT.match(words[k])):
            k += 1
        words = words[k:]
        if not words:
            continue
        name, args = _name(words[0]), words[1:]
        script = " ".join(args) if name == "eval" else _script_for_deny(args) if name in ANY_SHELL else None
        if len(found) < MAX_VIEWS or not (name in WRAPPERS or name == "find" or script is not None):
            found += _forms(words)  # `sudo sudo ... rm`: the first views and the last, not each between
        if name in WRAPPERS:
            todo.append((WRAPPERS[name](args), depth))
        elif name == "find":
            todo += [(run, depth) for run in _find_runs(args)]
        elif script is not None and depth < MAX_VIEW_DEPTH:
            found += parse(script, cwd, own, depth + 1).all_views()
        elif name == "eval":
            todo.append((args, depth))  # deeper down, eval's words as they are
        elif script is not None:
            todo += [(words, depth) for words in _split(script)]
    return found


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
    while k < len(words) and _ASSIGNMENT.match(words[k]):
        k += 1
    return words[k:]


def _skip_one(words: List[str]) -> List[str]:
    return words[1:]


def _script_for_deny(args: List[str]) -> Optional[str]:
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


def _find_runs(args: List[str]) -> List[List[str]]:
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
    "watch": lambda a: _after_options(a, "nq", ("interval",)),
    "xargs": lambda a: _after_options(a, "aEIdLnPs", ("arg-file", "delimiter", "max-args", "max-procs",
                                                      "max-chars", "process-slot-var")),
}
