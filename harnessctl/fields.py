"""The bound settings as one table, FIELDS: each row is one setting of a
session's binding (adapter, cwd, model, agent, policy, box, limits, hooks)
and says how every face shows and takes it: the send flag and its help
(arguments.py and helptext.py read them through commandtable.py), what
`status` shows (eventfile/state.py), the MCP send tool's property
(mcp/tools.py), how a face's value is parsed and checked, and how it goes
over the wire (binding.py) and as flags to another machine (as_flags).  A
new bound setting is one row here and its check.  Nothing here touches a
file: what is bound is binding.py's, where it is kept bindingfile.py's."""

from __future__ import annotations

import os

from .errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple


# What `status` shows of a field: its value (null when unbound), its value only when bound,
# or only `true` when bound (a hook's command line may hold a secret, a token).
ALWAYS, WHEN_BOUND, THAT_BOUND = "always", "when bound", "that it is bound"


# How a send's flag gives a field: a VALUE (`--model M`), a SWITCH (`--sandbox`), or REPEATED
# (`--sandbox-write DIR`..., kept in order with the rules, as arguments.parse gives them).
VALUE, SWITCH, REPEATED = "value", "switch", "repeated"


class Field:
    """One bound setting: its binding key `name`, its send `flag` and how
    the flag `takes` its value (`usage` in the synopsis, `help` its lines in
    `send --help`, a template that may name {adapters}), how a face's value
    is `parse`d (a flag's text, an MCP argument: UsageError if it is no
    value of the field), the `variable` that gives it to a new file when the
    flag is not given, the `check` a bound value must pass, whether a later
    send may `change` it, what `status` shows of it, its property in the MCP
    send tool's schema (None: the tool does not offer it) and how its value
    is `read` back from the send request (given as text)."""

    __slots__ = ("name", "flag", "takes", "usage", "help", "parse", "variable", "check", "change", "status", "mcp",
                 "read")

    def __init__(self, name: str, flag: str, usage: str, help: str, check: Callable[[Any], bool],
                 status: str = WHEN_BOUND, variable: Optional[str] = None, change: bool = False,
                 mcp: Optional[Dict[str, Any]] = None, read: Callable[[str], Any] = str, takes: str = VALUE,
                 parse: Callable[[Any], Any] = str) -> None:
        self.name, self.flag, self.takes, self.usage, self.help = name, flag, takes, usage, help
        self.parse, self.variable, self.check, self.change = parse, variable, check, change
        self.status, self.mcp, self.read = status, mcp, read


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _text_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _policy(name: str) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        if value is None:
            return True  # no policy (and no import of it)
        from .checks.policy import is_valid

        return is_valid({name: value})
    return check


def _limit(name: str) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        if value is None:
            return True  # no limit bound (and no import)
        from .checks.budget import is_valid

        return is_valid({name: value})
    return check


def _flag(value: Any) -> bool:
    return value is None or isinstance(value, bool)


def _worktree(value: Any) -> bool:
    """None, or the worktree a first send made (binding.with_worktree)."""
    if value is None:
        return True
    from .worktree import Worktree

    try:
        Worktree.from_dict(value)
    except UsageError:
        return False
    return True


def _dirs(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, str) and os.path.isabs(v) for v in value))


def _read_rules(text: str) -> Any:
    from .checks.policy import from_field

    return from_field(text)  # checked again: the runtime trusts no command


def _mode(value: Any) -> Any:
    from .checks.policy import check_mode

    return check_mode(value)


def _rules(pairs: Any) -> Any:
    from .checks.policy import check_rules

    return check_rules(pairs)


def _tokens(value: Any) -> int:
    from .checks.budget import tokens

    return tokens(str(value))  # a flag's text, or an MCP argument's integer


def _cost(value: Any) -> float:
    from .checks.budget import cost

    return cost(value)


def _switch(value: Any) -> Any:
    return value or None  # an MCP `false` asks for nothing


def _paths(values: Any) -> List[str]:
    return [str(value) for value in values]


RULE_FLAGS = ("--allow", "--deny")  # the rules' flags: (allow|deny, RULE) pairs, in order
RULE = {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2,
        "description": '["allow" or "deny", "KIND[:GLOB]"]'}

# The bound fields, in the order `send --help` lists their flags.
FIELDS = (
    Field("cwd", "--cwd", "[--cwd DIR]", """\
  --cwd DIR       the working directory of a new FILE (default: the current directory)
""", _text, status=ALWAYS, mcp={"type": "string", "description": "the working directory of a new file, under an "
                                                                 "allowed root (default: the server's own)"}),
    Field("worktree", "--worktree", "[--worktree]", """\
  --worktree      give a new FILE its own git worktree of the cwd's repository, on a new branch
                  harnessctl/NAME (NAME: FILE's name) at HEAD, in $HARNESSCTL_WORKTREES/NAME
                  (default: REPO.worktrees/NAME beside the repository); the session works there
""", _worktree, takes=SWITCH, parse=_switch, read=lambda text: True,
          mcp={"type": "boolean", "description": "give a new file its own git worktree of the cwd's repository, "
                                                 "on a new branch harnessctl/NAME"}),
    Field("model", "--model", "[--model MODEL]", """\
  --model MODEL   the model of a new FILE (default: the harness's own)
""", _text_or_none, status=ALWAYS, mcp={"type": "string", "description": "the model of a new file"}),
    Field("adapter", "--adapter", "[--adapter NAME]", """\
  --adapter NAME  the adapter of a new FILE ({adapters})
""", _text, status=ALWAYS, variable="HARNESSCTL_ADAPTER",
          mcp={"type": "string", "description": "the adapter of a new file (mock, codex, claudecode, acp)"}),
    Field("agent", "--agent", "[--agent AGENT]", """\
  --agent AGENT   the agent of a new FILE, for an adapter that drives many (acp):
                  a preset name or a command line
""", _text_or_none, mcp={"type": "string", "description": "the agent preset of a new acp file (harnessctl agents)"}),
    Field("mode", "--mode", "[--mode ask|edit|full]", """\
  --mode MODE     what the agent of a new FILE may do without asking: ask (read only),
                  edit (change files in the cwd), full (anything); default: the harness's own
""", _policy("mode"), parse=_mode, status=ALWAYS, mcp={"type": "string", "enum": ["ask", "edit", "full"],
                         "description": "what the agent may do without asking"}),
    Field("rules", "--allow", "[--allow RULE]... [--deny RULE]... | [--policy FILE]", """\
  --allow RULE    answer a matching permission request allow; RULE is KIND[:GLOB], KIND one of
  --deny RULE     command, file_change, read, search, mcp, web_search, subagent, other or *;
                  GLOB matches the command line, the paths (relative to the cwd) or server.tool.
                  `mode` (no GLOB) answers the agent's own mode switches, which nothing else does
                  Repeatable: the first rule that matches decides; the rest waits for reply
  --policy FILE   the mode and rules as JSON: {{"mode": "ask", "rules": [["allow", "RULE"], ...]}}
""", _policy("rules"), takes=REPEATED, parse=_rules, read=_read_rules,
          mcp={"type": "array", "items": RULE, "description": "permission rules, first match decides"}),
    Field("sandbox", "--sandbox", "[--sandbox [--sandbox-write DIR]...]", """\
  --sandbox       run the agent of a new FILE, and all it starts, in a box (Linux's Landlock):
                  it writes only in the cwd, a TMPDIR of its own, its own program's folders
                  and each --sandbox-write DIR; it can neither read nor write harnessctl's
                  state nor any session's event file or sidecar, nor reach a runtime;
                  it keeps the network (docs/OPERATIONS.md, "The box")
  --sandbox-write DIR  one more folder a boxed agent may write (repeatable)
""", _flag, takes=SWITCH, parse=_switch, read=lambda text: True,
          mcp={"type": "boolean", "description": "run the agent in a box: it writes only in its cwd, its own "
                                                 "folders and its TMPDIR, and reaches no harnessctl runtime"}),
    Field("sandbox_write", "--sandbox-write", "", "", _dirs, takes=REPEATED, parse=_paths,
          read=lambda text: text.split("\0")),
    Field("max_tokens", "--max-tokens", "[--max-tokens N]", """\
  --max-tokens N    a budget of the whole conversation: tokens (input + output, all runs),
""", _limit("max_tokens"), parse=_tokens, change=True, read=int,
          mcp={"type": "integer", "minimum": 1, "description": "token budget of the conversation"}),
    Field("max_cost_usd", "--max-cost-usd", "[--max-cost-usd X]", """\
  --max-cost-usd X  or US dollars where the harness reports a cost; a run that reaches it is
                  interrupted and fails (error_class budget), later sends exit 2 until a send
                  gives a higher limit (limits, unlike the rest of the binding, may change)
""", _limit("max_cost_usd"), parse=_cost, change=True, read=float,
          mcp={"type": "number", "exclusiveMinimum": 0, "description": "cost budget, US dollars"}),
    Field("on_request", "--on-request", "[--on-request CMD]", """\
  --on-request CMD  a hook of a new FILE: run CMD (split like a shell would, run without one)
                  whenever a request is parked for a reply, with its line on stdin, HARNESSCTL_FILE
                  and HARNESSCTL_EVENT=request in its environment, in the cwd; it never delays the
                  run, and is killed after HARNESSCTL_HOOK_TIMEOUT (default: HARNESSCTL_ON_REQUEST);
                  its program (and script) is recorded by absolute path, and refused inside the cwd
""", _text_or_none, status=THAT_BOUND, variable="HARNESSCTL_ON_REQUEST"),
    Field("on_result", "--on-result", "[--on-result CMD]", """\
  --on-result CMD   the same whenever a run ends, with its result line, HARNESSCTL_EVENT=result
                  (default: HARNESSCTL_ON_RESULT)
""", _text_or_none, status=THAT_BOUND, variable="HARNESSCTL_ON_RESULT"),
)
NAMES = tuple(field.name for field in FIELDS)
HOOKS = tuple(field for field in FIELDS if field.name.startswith("on_"))  # the hooks: on_request, on_result


def as_flags(values: Dict[str, Any]) -> Tuple[Dict[str, str], List[Tuple[str, str]]]:
    """The send options and rules (as arguments.parse gives them) that ask for
    these bound values (by binding key; None or false: not asked): a send
    passed on to a harnessctl on another machine."""
    options: Dict[str, str] = {}
    rules: List[Tuple[str, str]] = []
    for field in FIELDS:
        value = values.get(field.name)
        if value is None or value is False:
            continue
        if field.name == "rules":
            rules += [(verb, rule) for verb, rule in value]
        elif isinstance(value, list):  # a repeatable flag, kept in order with the rules
            rules += [(field.flag[2:], item) for item in value]
        else:
            options[field.flag] = "" if value is True else str(value)
    return options, rules


def mcp_properties() -> Dict[str, Any]:
    """The MCP send tool's properties of the bound fields it offers."""
    return {field.name: field.mcp for field in FIELDS if field.mcp is not None}


def flags_of(field: Field) -> Tuple[str, ...]:
    """The send flags that give a field: the rules' are --allow and --deny."""
    return RULE_FLAGS if field.name == "rules" else (field.flag,)


def send_flags() -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]:
    """The send flags of the fields (commandtable.py): those that take a
    value, the switches and the repeatable ones (--allow, --deny for the rules)."""
    repeated = tuple(flag for field in FIELDS if field.takes == REPEATED for flag in flags_of(field))
    return (tuple(field.flag for field in FIELDS if field.takes == VALUE),
            tuple(field.flag for field in FIELDS if field.takes == SWITCH), repeated)


def parsed(given: Dict[str, Any]) -> Dict[str, Any]:
    """What a send asks for (a face's values by binding key; None: not
    given), each value as its field parses it."""
    return {field.name: field.parse(given[field.name]) for field in FIELDS if given.get(field.name) is not None}


def from_flags(options: Dict[str, str], rules: List[Tuple[str, str]]) -> Dict[str, Any]:
    """What a send's flags ask for, by binding key (`options` and `rules` as
    arguments.parse gives them); a --policy FILE gives the mode and rules."""
    given: Dict[str, Any] = {}
    for field in FIELDS:
        if field.takes == REPEATED:
            verbs = [flag[2:] for flag in flags_of(field)]
            pairs = [(verb, value) for verb, value in rules if verb in verbs]
            given[field.name] = (pairs if field.name == "rules" else [value for _, value in pairs]) or None
        elif field.flag in options:
            given[field.name] = True if field.takes == SWITCH else options[field.flag]
    if "--policy" in options:
        if given.get("mode") is not None or given.get("rules"):
            raise UsageError("--policy FILE holds the mode and the rules: give it, or --mode/--allow/--deny")
        from .checks.policy import read_file

        given["mode"], given["rules"] = read_file(options["--policy"])
    return parsed(given)
