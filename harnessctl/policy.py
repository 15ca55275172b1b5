"""The permission policy bound to a session: `--mode` and the `--allow`/`--deny`
rules the runtime applies to each permission request as it arrives
(docs/PROTOCOL.md, "Permission policy").

A rule is `KIND[:PATTERN]`: KIND a tool kind of the activity vocabulary or
`*`, PATTERN a shell glob (fnmatch) matched against what the request is
about: its command line, the `server.tool` of an MCP call, or every path a
file change touches.  The first rule that matches decides; a request no rule
decides is parked for `reply`, as without a policy.

Without rules the harness itself enforces the mode (each adapter maps it onto
its own controls).  With rules the harness runs in `ask`, so that every
change and command reaches the rules, and the runtime applies the mode: what
it lets through (`edit`: file changes inside the bound cwd, `full`:
everything) is allowed where the first catch-all rule `*` stands, or after
the last rule.  So `--mode edit --deny '*'` edits and is refused the rest,
and `--mode full --deny 'command:rm *'` is refused one thing.
"""

from __future__ import annotations

import os
from fnmatch import fnmatchcase

from .activity import TOOL_KINDS
from .backend import MODES
from .errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

VERBS = ("allow", "deny")
# What makes one command line run more than the command a pattern names: an
# allow with a pattern never matches a line that holds one of these.
SHELL_OPERATORS = (";", "&", "|", "`", "$(", "<", ">", "\n", "\r")
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
    if kind != "*" and kind not in TOOL_KINDS:
        raise UsageError("--%s %s: unknown kind %r (kinds: %s, or *)" % (verb, text, kind, ", ".join(TOOL_KINDS)))
    if colon and not pattern:
        raise UsageError("--%s %s: empty pattern after the colon (leave the colon out to match every %s)"
                         % (verb, text, "request" if kind == "*" else kind))
    if "\0" in text or "\n" in text:
        raise UsageError("--%s: a rule must not contain a NUL byte or a newline" % verb)
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
    from . import jsonfile

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
    the request is parked for `reply`.  Only permissions are decided, and only
    with an option the request offers (`allow` or `deny`).  `own` are the
    session's own files (the event file, its sidecar): nothing allows a
    change to them."""
    if request.get("kind") != "permission":
        return None
    rules = binding.get("rules") or []
    if not rules:
        return None  # the harness itself enforces the mode
    cwd = binding["cwd"]
    for verb, text in rules + [["", "*"]]:  # the mode stands before the first catch-all `*`, else last
        if text == "*" and _mode_allows(binding.get("mode"), request, cwd, own):
            return _answer("allow", request, {"by": "mode", "mode": binding["mode"]})
        if verb and matches(text, verb, request, cwd, own):
            return _answer(verb, request, {"by": "rule", "rule": text})
    return None


def _mode_allows(mode: Optional[str], request: Dict[str, Any], cwd: str, own: Tuple[str, ...]) -> bool:
    """What the mode lets through without asking: `full` everything but a
    change to the session's own files, `edit` a file change whose paths are
    all known and inside the cwd."""
    if mode == "full":
        return not any(_is_own(p, cwd, own) for p in request.get("paths") or () if isinstance(p, str))
    return mode == "edit" and bool(request.get("paths")) and matches("file_change", "allow", request, cwd, own)


def _answer(verb: str, request: Dict[str, Any], why: Dict[str, str]) -> Optional[Tuple[str, Dict[str, str]]]:
    return (verb, why) if verb in (request.get("options") or ()) else None


def matches(rule: str, verb: str, request: Dict[str, Any], cwd: str, own: Tuple[str, ...] = ()) -> bool:
    """Whether `rule` (KIND[:PATTERN]) matches a permission request.  An allow
    must match every path a change touches, a deny any of them.  Never an
    allow: a path outside `cwd` or among `own`, and for a pattern, a command
    line that chains or redirects (`touch ok*` must not let `touch ok; rm -rf
    ~` through)."""
    kind, colon, pattern = rule.partition(":")
    tool = request.get("tool") if request.get("tool") in TOOL_KINDS else "other"
    if kind not in ("*", tool):
        return False
    paths = [p for p in request.get("paths") or () if isinstance(p, str)]
    if verb == "allow" and not all(_inside(p, cwd) and not _is_own(p, cwd, own) for p in paths):
        return False
    if not colon:
        return True
    subjects = _subjects(request, cwd)
    if not subjects:
        return False
    if verb == "allow":
        command = request.get("command")
        if isinstance(command, str) and any(operator in command for operator in SHELL_OPERATORS):
            return False
        return all(fnmatchcase(s, pattern) for s in subjects)
    return any(fnmatchcase(s, pattern) for s in subjects)


def _subjects(request: Dict[str, Any], cwd: str) -> List[str]:
    """What a pattern is matched against: the command line, `server.tool`, or
    each path both as written and where it really is (relative to the cwd when
    inside it), so an allow must match both spellings and a deny either
    (`gh/x` with `gh -> .github` is also `.github/x`)."""
    for key in ("command", "mcp_tool"):
        if isinstance(request.get(key), str) and request[key]:
            return [request[key]]
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
