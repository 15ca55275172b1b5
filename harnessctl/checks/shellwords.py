"""A line of shell text as bash reads it: its words (quotes removed, each
expansion and glob noted), its control operators and redirections, grouped
into simple commands.  No judgement here: commandline.py decides what the
simple commands run and whether the line can be verified.

A line may be run by zsh too (codex and Claude Code run commands in the
user's login shell, zsh on macOS), so what zsh reads otherwise is read the
safe way: its redirections (`>!`, `>>|`, `&>!` ...) are redirections, and
its own expansions (`=cmd`, `$=x`, a subscript) are noted like bash's.

Hand-written and stdlib only: `shlex` knows neither operators nor `$(...)`,
and a decision must take well under a millisecond.  Whatever the scanner
cannot read for certain (a substitution, an expansion with side effects)
is noted as the first reason the line is unverifiable, and the text of
every substitution is kept for deny rules.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Callable, List, Optional, Tuple

    Token = Tuple[str, "str | Word", str]  # ("w", Word, ""), ("op", OPERATOR, ""), ("r", REDIRECTION, FD)

SEPARATORS = frozenset(("&&", "||", ";", "|", "\n"))
OPERATOR_WHY = {"&": "a command in the background (&)", "|&": "the operator |&", "(": "a subshell ( )",
                ")": "a subshell ( )", ";;": "a case clause (;;)", ";&": "a case clause (;&)",
                ";;&": "a case clause (;;&)"}
# zsh's clobbering forms end in ! or | (bash reads `>!` as `>` into a file named `!`); longest first.
ZSH_REDIRECTS = (">>&!", ">>&|", ">>&", ">&!", ">&|", ">>!", ">>|", ">!")
OPERATORS = (";;&", "&>>!", "&>>|", "&>>", "&>!", "&>|", "&&", "&>", "||", "|&", ";;", ";&", "&", "|", ";", "(", ")")
REDIRECTS = ("<<<", "<<-") + ZSH_REDIRECTS + ("<<", "<>", "<&", ">>", ">&", ">|", "<", ">")

_PLAIN = re.compile(r"[^ \t\n;&|()<>\\'\"`$*?\[~]+")  # a run of characters that are themselves
_DOUBLE_PLAIN = re.compile(r'[^"\\$`]+')
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")  # brace expansion: one word becomes several


class Unparsable(Exception):
    """The line is not one harnessctl can read (unbalanced quoting and the like)."""


class Word:
    """One word: `text` with the quotes removed, `raw` as written, whether it
    holds a `$` expansion, and whether an unquoted glob or leading `~` does."""

    __slots__ = ("text", "raw", "expands", "glob")

    def __init__(self, text: str, raw: str, expands: bool, glob: bool) -> None:
        self.text, self.raw, self.expands, self.glob = text, raw, expands, glob


def split_pattern(text: str) -> Optional[Tuple[str, ...]]:
    """The words of a `command:` pattern, read as a command line is; None if it
    is not the words of one simple command (an operator, a redirection, a
    comment, unbalanced quotes)."""
    lexer = Lexer(text)
    try:
        tokens = lexer.tokens()
    except Unparsable:
        return None
    if not tokens or lexer.comment or any(kind != "w" for kind, _, _ in tokens):
        return None
    return tuple(word.text for _, word, _ in tokens if isinstance(word, Word))


# -- words and operators ---------------------------------------------------------------------------


class Lexer:
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
                out.append(("r", op[1:], "&") if op.startswith("&>") else ("op", op, ""))
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
        if s.startswith("=", start) and self.i > start + 1:
            self.note("a word that starts with =, which zsh expands (=cmd is the path of cmd)")
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
            if s.startswith("[", end):
                self.note("a subscript $%s[...], which zsh evaluates" % s[i + 1:end])
        elif following and following in "=~^+":
            self.note("the zsh expansion $%s" % following)
            end = i + 1
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


class Simple:
    """A simple command as the tokens give it, before it is judged."""

    __slots__ = ("assigns", "words", "redirects")

    def __init__(self) -> None:
        self.assigns: List[Word] = []
        self.words: List[Word] = []
        self.redirects: List[Tuple[str, str, Optional[Word]]] = []

    def empty(self) -> bool:
        return not (self.assigns or self.words or self.redirects)


def group(tokens: List[Token], note: Callable[[str], None]) -> List[Simple]:
    """The tokens as simple commands; what is not a plain sequence of simple
    commands is noted."""
    commands: List[Simple] = []
    current, last = Simple(), ""
    k, n = 0, len(tokens)
    while k < n:
        kind, value, fd = tokens[k]
        k += 1
        if kind == "w":
            assert isinstance(value, Word)
            if not current.words and ASSIGNMENT.match(value.raw):
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
            current = Simple()
        elif value != "\n":
            note("%s with no command before it" % value)
        last = value
    if not current.empty():
        commands.append(current)
    elif last in ("&&", "||", "|"):
        note("a line that ends with %s" % last)
    return commands
