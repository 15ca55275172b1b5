"""The permission policy bound to a session: `--mode` and the `--allow`/`--deny`
rules the runtime applies to each permission request as it arrives
(docs/PROTOCOL-POLICY.md section 17).

A rule is `KIND[:PATTERN]`: KIND a tool kind of the activity vocabulary or
`*`, PATTERN a shell glob (fnmatch) matched against what the request is
about: the `server.tool` of an MCP call, or every path a file change touches.
A command line is judged by what the shell will run (commandline.py): each of
its simple commands takes the first rule whose pattern matches its words,
word by word; the line is denied if one of them is, allowed if all of them
are, and a line that cannot be verified statically is never allowed by a
pattern.  The first rule that matches decides; a request no rule decides is
parked for `reply`, as without a policy.

Without rules the harness itself enforces the mode (each adapter maps it onto
its own controls).  With rules the harness runs in `ask`, so that every
change and command reaches the rules, and the runtime applies the mode: what
it lets through (`edit`: file changes inside the bound cwd, `full`:
everything) is allowed where the first catch-all rule `*` stands, or after
the last rule.  So `--mode edit --deny '*'` edits and is refused the rest,
and `--mode full --deny 'command:rm *'` is refused one thing.

Two kinds of request stand apart.  A mode switch (a `mode` request: the
agent leaves its plan mode, or enters another) changes what the agent does
unasked from then on, so only a rule naming `mode` answers it: never `*`,
never the mode.  A permission that stands for a person's consent (`consent`:
a login URL to open) is answered by no rule and no mode.
"""

from __future__ import annotations

import os
from fnmatch import fnmatchcase
from functools import lru_cache

from ..errors import UsageError
from ..vocabulary import MODES, TOOL_KINDS

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    from .commandline import Line

    # One simple command as a rule sees it: the words an allow matches (its
    # assignments first) and the index of its command word, or None for the
    # part of an unverifiable line that no pattern allows; the views a deny
    # matches (found when first asked for).
    Part = Tuple[Optional[Tuple[str, ...]], int, Callable[[], List[Tuple[str, ...]]]]

VERBS = ("allow", "deny")
RULE_KINDS = TOOL_KINDS + ("mode",)  # `mode`: a mode switch request, which no other rule matches
MAX_RULES = 1000
MAX_POLICY_FILE = 1024 * 1024


def check_mode(mode: Optional[str]) -> Optional[str]:
    if mode is not None and mode not in MODES:
        raise UsageError("--mode must be one of %s (got %r)" % (", ".join(MODES), mode))
    return mode


def check_rule(verb: str, text: str) -> List[str]:
    """[verb, rule] as the binding keeps it; UsageError naming a bad rule."""
    if verb not in VERBS:
        raise UsageError("a policy rule is allow or deny, not %r" % verb)
    if not isinstance(text, str) or not text:
        raise UsageError("empty --%s rule: give KIND or KIND:PATTERN" % verb)
    kind, colon, pattern = text.partition(":")
    if kind != "*" and kind not in RULE_KINDS:
        raise UsageError("--%s %s: unknown kind %r (kinds: %s, or *)" % (verb, text, kind, ", ".join(RULE_KINDS)))
    if kind == "mode" and colon:
        raise UsageError("--%s %s: a mode rule takes no pattern (write --%s mode)" % (verb, text, verb))
    if colon and not pattern:
        raise UsageError("--%s %s: empty pattern after the colon (leave the colon out to match every %s)"
                         % (verb, text, "request" if kind == "*" else kind))
    if "\0" in text or "\n" in text:
        raise UsageError("--%s: a rule must not contain a NUL byte or a newline" % verb)
    if kind == "command" and colon and _pattern_words(pattern) is None:
        raise UsageError("--%s %s: the pattern is not the words of one command (an operator such as ; | && or "
                         "a redirection, a comment, or unbalanced quotes)" % (verb, text))
    return [verb, text]


def check_rules(rules: List[Tuple[str, str]]) -> Optional[List[List[str]]]:
    if len(rules) > MAX_RULES:
        raise UsageError("%d rules: at most %d" % (len(rules), MAX_RULES))
    return [check_rule(verb, text) for verb, text in rules] or None


def to_field(rules: List[List[str]]) -> str:
    """The rules of a send as the client passes them to the runtime: one
    `VERB RULE` per line (a rule holds no newline)."""
    return "\n".join("%s %s" % (verb, rule) for verb, rule in rules)


def from_field(field: str) -> Optional[List[List[str]]]:
    """The rules of `to_field`, checked again; empty for none."""
    pairs = [line.partition(" ") for line in field.split("\n")] if field else []
    return check_rules([(verb, rule) for verb, _, rule in pairs])


def read_file(path: str) -> Tuple[Optional[str], Optional[List[List[str]]]]:
    """(mode, rules) of a policy file: {"mode": …, "rules": [["allow", "KIND:PATTERN"], …]}."""
    from .. import jsonfile

    policy = jsonfile.read(path, "the policy file", MAX_POLICY_FILE)
    if not isinstance(policy, dict) or set(policy) - {"mode", "rules"}:
        raise UsageError('the policy file %s must be a JSON object with "mode" and "rules" only' % path)
    mode, rules = policy.get("mode"), policy.get("rules", [])
    if mode is not None and not isinstance(mode, str):
        raise UsageError("the policy file %s: mode must be one of %s" % (path, ", ".join(MODES)))
    if not isinstance(rules, list) or not all(isinstance(r, list) and len(r) == 2 and all(
            isinstance(part, str) for part in r) for r in rules):
        raise UsageError('the policy file %s: rules must be a list of ["allow" or "deny", "KIND[:PATTERN]"]' % path)
    return check_mode(mode), check_rules([(verb, text) for verb, text in rules])


def is_valid(binding: Dict[str, Any]) -> bool:
    """Whether a binding's mode and rules are ones this harnessctl wrote."""
    mode, rules = binding.get("mode"), binding.get("rules")
    if mode is not None and mode not in MODES:
        return False
    if rules is None:
        return True
    try:
        return isinstance(rules, list) and 0 < len(rules) <= MAX_RULES and all(
            isinstance(r, list) and len(r) == 2 and check_rule(r[0], r[1]) == r for r in rules)
    except UsageError:
        return False


def native_mode(binding: Dict[str, Any]) -> Optional[str]:
    """The mode the harness itself is put in: the bound one, or `ask` when
    rules decide (a harness that did not ask could not be refused)."""
    mode = binding.get("mode")
    return "ask" if mode is not None and binding.get("rules") else mode


def decide(binding: Dict[str, Any], request: Dict[str, Any],
           own: Tuple[str, ...] = ()) -> Optional[Tuple[str, Dict[str, str]]]:
    """(the option that answers `request`, the fields that say why) or None:
    the request is parked for `reply`.  Only permissions and mode switches
    are decided, and only with an option the request offers (`allow` or
    `deny`); a permission that stands for consent never is.  `own` are the
    session's own files (the event file, its sidecar): nothing allows a
    change to them."""
    rules = binding.get("rules") or []
    if request.get("kind") == "mode":
        verb = next((verb for verb, text in rules if text == "mode"), None)
        return _answer(verb, request, {"by": "rule", "rule": "mode"}) if verb else None
    if request.get("kind") != "permission" or request.get("consent") is True:
        return None
    if not rules:
        return None  # the harness itself enforces the mode
    cwd = binding["cwd"]
    where = _own_cwd(request, cwd)
    if "\0" in where:
        return None  # names no directory: a person judges, as a path with a NUL
    if where != cwd and request.get("paths"):  # relative paths resolve where the tool runs
        request = dict(request, paths=[os.path.join(where, p) if isinstance(p, str) else p for p in request["paths"]])
    command = _command(request)
    if command is not None:
        from .commandline import parse

        return _decide_line(binding, request, _judged_in(parse(command, where, own), cwd, where), own)
    for verb, text in rules + [["", "*"]]:  # the mode stands before the first catch-all `*`, else last
        if text == "*" and mode_allows(binding.get("mode"), request, cwd, own):
            return _answer("allow", request, {"by": "mode", "mode": binding["mode"]})
        if verb and matches(text, verb, request, cwd, own):
            return _answer(verb, request, {"by": "rule", "rule": text})
    return None


def _own_cwd(request: Dict[str, Any], cwd: str) -> str:
    """Where the request says its tool runs, really (relative to the bound
    cwd, symlinks resolved), or the bound cwd when it says nothing."""
    own = request.get("cwd")
    if not isinstance(own, str) or not own:
        return cwd
    where = real(own, cwd)
    return cwd if where == os.path.realpath(cwd) else where


def _judged_in(line: Line, cwd: str, where: str) -> Line:
    """A line that runs in `where`, not the bound cwd: its redirections were
    judged there already; it cannot be verified when `where` lies outside
    the bound cwd, nor when its command word is a relative path (`./x` is
    not the script a rule names)."""
    if where == cwd:
        return line
    from . import commandline

    if not _under(where, os.path.realpath(cwd)):
        why = "it runs in %s, outside the cwd" % where
    elif any("/" in c.words[0] and not c.words[0].startswith("/") for c in line.commands if c.words):
        why = "a relative command path, run in %s" % where
    else:
        return line
    return commandline.Line(line.commands, line.why or why, line.all_views)


def _decide_line(binding: Dict[str, Any], request: Dict[str, Any], line: Line,
                 own: Tuple[str, ...]) -> Optional[Tuple[str, Dict[str, str]]]:
    """A command line: each simple command takes the first rule (or the mode)
    that matches it.  Denied if one part's is a deny, allowed if every part's
    is an allow, else parked.  A line that cannot be verified has one more
    part, which only a deny or a rule without a pattern matches."""
    rules, cwd = binding["rules"], binding["cwd"]
    mode: str = binding.get("mode") or ""
    by_mode = mode_allows(mode, request, cwd, own)
    firsts = [_first_rule(rules, request, part, cwd, own, by_mode) for part in _parts(line)]
    denied = next((text for verb, text in firsts if verb == "deny"), None)
    if denied is not None:
        return _answer("deny", request, {"by": "rule", "rule": denied})
    if not all(verb == "allow" for verb, _ in firsts):
        return None
    used = list(dict.fromkeys(text for _, text in firsts if text is not None))
    if not used:
        return _answer("allow", request, {"by": "mode", "mode": mode})
    why = {"by": "rule", "rule": " + ".join(used)}
    if any(text is None for _, text in firsts):
        why["mode"] = mode  # the mode allowed the other parts
    return _answer("allow", request, why)


def _first_rule(rules: List[List[str]], request: Dict[str, Any], part: Part, cwd: str, own: Tuple[str, ...],
                by_mode: bool) -> Tuple[str, Optional[str]]:
    """(verb, rule) of the first rule that matches one part of a line; the
    mode stands at the first catch-all `*`, else last ("allow", None);
    ("", None) when nothing matches."""
    for verb, text in rules + [["", "*"]]:
        if text == "*" and by_mode and part[0] is not None:
            return "allow", None
        if verb and matches(text, verb, request, cwd, own, part):
            return verb, text
    return "", None


def _command(request: Dict[str, Any]) -> Optional[str]:
    command = request.get("command")
    return command if isinstance(command, str) and command else None


def _parts(line: Line) -> List[Part]:
    """The parts a command line is judged by: its simple commands, and for a
    line that cannot be verified (or holds no command) one more with every
    view of the line and no words."""
    parts: List[Part] = [(c.assigns + c.words, len(c.assigns), c.views) for c in line.commands]
    if not line.verifiable or not parts:
        parts.append((None, 0, line.all_views))
    return parts


def _part_matches(pattern: str, verb: str, part: Part) -> bool:
    """An allow's pattern matches a part's words as written; a deny's any of
    its views."""
    words = _pattern_words(pattern)
    if words is None:
        return False
    written, at, views = part
    if verb == "allow":
        return written is not None and _words_match(words, written, at)
    return any(_words_match(words, view, None) for view in views())


def _words_match(pattern: Tuple[str, ...], words: Tuple[str, ...], at: Optional[int]) -> bool:
    """Word by word: each pattern word a glob matching exactly one word, and a
    last pattern word `*` any number of further words.  When `at` is the
    index of the command word, a command word holding a `/` needs a pattern
    word holding one (`pytest *` allows neither `./pytest` nor `/tmp/pytest`)."""
    rest = pattern[-1] == "*"
    fixed = pattern[:-1] if rest else pattern
    if len(words) < len(fixed) or not rest and len(words) != len(fixed):
        return False
    if at is not None and at < len(words) and "/" in words[at] and (at >= len(fixed) or "/" not in fixed[at]):
        return False
    return all(fnmatchcase(word, glob) for word, glob in zip(words, fixed))


@lru_cache(maxsize=1024)
def _pattern_words(pattern: str) -> Optional[Tuple[str, ...]]:
    from .commandline import split_pattern

    return split_pattern(pattern)


def mode_allows(mode: Optional[str], request: Dict[str, Any], cwd: str, own: Tuple[str, ...]) -> bool:
    """What the mode lets through without asking: `full` everything but a
    change to the session's own files, `edit` a file change whose paths are
    all known and inside the cwd."""
    if mode == "full":
        return not any(_is_own(p, cwd, own) for p in request.get("paths") or () if isinstance(p, str))
    return mode == "edit" and bool(request.get("paths")) and matches("file_change", "allow", request, cwd, own)


def _answer(verb: str, request: Dict[str, Any], why: Dict[str, str]) -> Optional[Tuple[str, Dict[str, str]]]:
    return (verb, why) if verb in (request.get("options") or ()) else None


def matches(rule: str, verb: str, request: Dict[str, Any], cwd: str, own: Tuple[str, ...] = (),
            part: Optional[Part] = None) -> bool:
    """Whether `rule` (KIND[:PATTERN]) matches a permission request.  An allow
    must match every path a change touches, a deny any of them.  Never an
    allow: a path outside `cwd` or among `own`.  A command line is matched
    by its simple commands (`part`: one of them), an allow every one of them
    and only on a line that can be verified, a deny any of them."""
    kind, colon, pattern = rule.partition(":")
    tool = request.get("tool") if request.get("tool") in TOOL_KINDS else "other"
    if kind not in ("*", tool):
        return False
    paths = [p for p in request.get("paths") or () if isinstance(p, str)]
    if verb == "allow" and not all(_inside(p, cwd) and not _is_own(p, cwd, own) for p in paths):
        return False
    if not colon:
        return True
    if part is not None:
        return _part_matches(pattern, verb, part)
    command = _command(request)
    if command is not None:
        from .commandline import parse

        hits = [_part_matches(pattern, verb, p) for p in _parts(parse(command, cwd, own))]
        return all(hits) if verb == "allow" else any(hits)
    subjects = _subjects(request, cwd)
    if not subjects:
        return False
    if verb == "allow":
        return all(fnmatchcase(s, pattern) for s in subjects)
    return any(fnmatchcase(s, pattern) for s in subjects)


def _subjects(request: Dict[str, Any], cwd: str) -> List[str]:
    """What a pattern is matched against when there is no command line:
    `server.tool`, or each path both as written and where it really is
    (relative to the cwd when inside it), so an allow must match both
    spellings and a deny either (`gh/x` with `gh -> .github` is also
    `.github/x`)."""
    if isinstance(request.get("mcp_tool"), str) and request["mcp_tool"]:
        return [request["mcp_tool"]]
    paths = [p for p in request.get("paths") or () if isinstance(p, str)]
    return list(dict.fromkeys([_relative(p, cwd) for p in paths] + [_written(p, cwd) for p in paths]))


def _written(path: str, cwd: str) -> str:
    """The path as the request spells it, `..` collapsed, relative to the cwd
    when it says inside."""
    full = os.path.normpath(os.path.join(cwd, path))
    return os.path.relpath(full, cwd) if _under(full, cwd) else full


def real(path: str, cwd: str) -> str:
    """Where `path` really is: joined to the cwd and resolved component by
    component, each symlink before the `..` after it (`src/link/../x` with
    `link -> /etc` is `/x`), a missing tail kept as written.  A name with a
    NUL names no file: it is only tidied, and never counts as inside."""
    full = os.path.join(cwd, path)
    return os.path.normpath(full) if "\0" in full else os.path.realpath(full)


def _is_own(path: str, cwd: str, own: Tuple[str, ...]) -> bool:
    """Whether `path` really is one of the session's own files (or lies in its
    sidecar), however it is spelt."""
    where = real(path, cwd)
    return any(_under(where, os.path.realpath(mine)) for mine in own)


def _inside(path: str, cwd: str) -> bool:
    """Whether `path` really lies inside the real cwd: a symlink anywhere on
    the way (`src/link/x`, `src/link/../x`) counts where it leads."""
    return "\0" not in path and _under(real(path, cwd), os.path.realpath(cwd))


def _under(full: str, cwd: str) -> bool:
    return full == cwd or full.startswith(cwd.rstrip("/") + "/")


def _relative(path: str, cwd: str) -> str:
    """The path a pattern sees: where it really is, relative to the real cwd
    when inside it (`gh/x` with `gh -> .github` is `.github/x`), else absolute."""
    where, root = real(path, cwd), os.path.realpath(cwd)
    return os.path.relpath(where, root) if _under(where, root) else where
