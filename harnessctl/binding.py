"""The binding: what a session's event file is bound to (adapter, cwd, model,
agent, policy, hooks, limits) as one table, FIELDS, and what is done with
it: built by a first send, checked against a later one, merged, carried to
the runtime by name, passed on as flags to another machine (binding.json
itself: bindingfile.py).  A later send may omit a field; a different value
is refused (exit 2), except for one it may change (the limits: that is how
a spent budget is raised).  `send --help` (helptext.py), `status`
(state.py) and the MCP send tool's schema (mcp/tools.py) read FIELDS too: a
new bound setting is one row and its check.  Start-up: policy, budget,
hooks, the registry and the records are imported only by the functions
that need them."""

from __future__ import annotations

import os

from . import ipc
from .address import check_root
from .errors import HarnessctlError, UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple


# What `status` shows of a field: its value (null when unbound), its value only when bound,
# or only `true` when bound (a hook's command line may hold a secret, a token).
ALWAYS, WHEN_BOUND, THAT_BOUND = "always", "when bound", "that it is bound"
SEND_VERSION = 2  # of the send request; 1 was thirteen positional fields (harnessctl 0.1.0 before the binding table)


class Field:
    """One bound setting: its binding key `name`, its send `flag` (`usage` in
    the synopsis, `help` its lines in `send --help`, a template that may name
    {adapters}), the `variable` that gives it to a new file when the flag is
    not given, the `check` a bound value must pass, whether a later send may
    `change` it, what `status` shows of it, its property in the MCP send
    tool's schema (None: the tool does not offer it) and how its value is
    `read` back from the send request (given as text)."""

    __slots__ = ("name", "flag", "usage", "help", "variable", "check", "change", "status", "mcp", "read")

    def __init__(self, name: str, flag: str, usage: str, help: str, check: Callable[[Any], bool],
                 status: str = WHEN_BOUND, variable: Optional[str] = None, change: bool = False,
                 mcp: Optional[Dict[str, Any]] = None, read: Callable[[str], Any] = str) -> None:
        self.name, self.flag, self.usage, self.help, self.variable = name, flag, usage, help, variable
        self.check, self.change, self.status, self.mcp, self.read = check, change, status, mcp, read


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


def _dirs(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, str) and os.path.isabs(v) for v in value))


def _read_rules(text: str) -> Any:
    from .checks.policy import from_field

    return from_field(text)  # checked again: the runtime trusts no command


RULE = {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2,
        "description": '["allow" or "deny", "KIND[:GLOB]"]'}

# The bound fields, in the order `send --help` lists their flags.
FIELDS = (
    Field("cwd", "--cwd", "[--cwd DIR]", """\
  --cwd DIR       the working directory of a new FILE (default: the current directory)
""", _text, status=ALWAYS, mcp={"type": "string", "description": "the working directory of a new file, under an "
                                                                 "allowed root (default: the server's own)"}),
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
""", _policy("mode"), status=ALWAYS, mcp={"type": "string", "enum": ["ask", "edit", "full"],
                         "description": "what the agent may do without asking"}),
    Field("rules", "--allow", "[--allow RULE]... [--deny RULE]... | [--policy FILE]", """\
  --allow RULE    answer a matching permission request allow; RULE is KIND[:GLOB], KIND one of
  --deny RULE     command, file_change, read, search, mcp, web_search, subagent, other or *;
                  GLOB matches the command line, the paths (relative to the cwd) or server.tool.
                  `mode` (no GLOB) answers the agent's own mode switches, which nothing else does
                  Repeatable: the first rule that matches decides; the rest waits for reply
  --policy FILE   the mode and rules as JSON: {{"mode": "ask", "rules": [["allow", "RULE"], ...]}}
""", _policy("rules"), mcp={"type": "array", "items": RULE, "description": "permission rules, first match decides"},
          read=_read_rules),
    Field("sandbox", "--sandbox", "[--sandbox [--sandbox-write DIR]...]", """\
  --sandbox       run the agent of a new FILE, and all it starts, in a box (Linux's Landlock):
                  it writes only in the cwd, a TMPDIR of its own, its own program's folders
                  and each --sandbox-write DIR; it can neither read nor write harnessctl's
                  state nor any session's event file or sidecar, nor reach a runtime;
                  it keeps the network (docs/OPERATIONS.md, "The box")
  --sandbox-write DIR  one more folder a boxed agent may write (repeatable)
""", _flag, read=lambda text: True,
          mcp={"type": "boolean", "description": "run the agent in a box: it writes only in its cwd, its own "
                                                 "folders and its TMPDIR, and reaches no harnessctl runtime"}),
    Field("sandbox_write", "--sandbox-write", "", "", _dirs, read=lambda text: text.split("\0")),
    Field("max_tokens", "--max-tokens", "[--max-tokens N]", """\
  --max-tokens N    a budget of the whole conversation: tokens (input + output, all runs),
""", _limit("max_tokens"), change=True, read=int,
          mcp={"type": "integer", "minimum": 1, "description": "token budget of the conversation"}),
    Field("max_cost_usd", "--max-cost-usd", "[--max-cost-usd X]", """\
  --max-cost-usd X  or US dollars where the harness reports a cost; a run that reaches it is
                  interrupted and fails (error_class budget), later sends exit 2 until a send
                  gives a higher limit (limits, unlike the rest of the binding, may change)
""", _limit("max_cost_usd"), change=True, read=float,
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


# -- a send's binding ------------------------------------------------------------------------------


def asked(given: Dict[str, Any]) -> Dict[str, Any]:
    """What a send asks for, every field by name (None: not given), its cwd a
    real directory.  `given` holds the values of the flags it was given."""
    asked = {name: given.get(name) for name in NAMES}
    if asked["cwd"] is not None:
        asked["cwd"] = real_dir(asked["cwd"])
    return asked


def new_binding(wanted: Dict[str, Any]) -> Dict[str, Any]:
    """The binding of a new file: what the send asks for, with its variables
    where it gives no flag, checked against the adapter's manifest."""
    from . import registry

    adapter = wanted["adapter"] or os.environ.get("HARNESSCTL_ADAPTER")
    if not adapter:
        raise UsageError("no adapter for this new event file: pass --adapter NAME or set HARNESSCTL_ADAPTER")
    manifest = registry.manifest(adapter)
    binding = {"adapter": adapter, "cwd": wanted["cwd"] or real_dir("."), "model": wanted["model"]}
    agent_env = (manifest.get("harness") or {}).get("agent_env")
    agent = wanted.get("agent") or (os.environ.get(agent_env) if agent_env else None)
    if agent is not None and "agents" not in manifest:
        raise UsageError("the %s adapter takes no --agent (it drives one harness)" % adapter)
    if agent is None and "agents" in manifest:
        raise UsageError("the %s adapter needs --agent NAME_OR_COMMAND (presets: %s)%s" % (
            adapter, ", ".join(sorted(manifest["agents"])), " or %s" % agent_env if agent_env else ""))
    if agent is not None:
        check_agent(agent, manifest["agents"], "--agent" if wanted.get("agent") else str(agent_env))
        binding["agent"] = agent
    mode = _new_mode(wanted, manifest, adapter, agent)
    if mode is not None:
        binding["mode"] = mode
    if wanted["rules"] is not None:
        binding["rules"] = wanted["rules"]
    _new_hooks(wanted, binding)
    for field in FIELDS:  # the rest (the limits) as given
        if field.name not in binding and wanted[field.name] is not None:
            binding[field.name] = wanted[field.name]
    return binding


def check_agent(agent: str, presets: Dict[str, Any], flag: str) -> None:
    """An agent that is no preset is a command line, whose program must be
    found now: a typo (`--agent claud`) is refused before anything is bound,
    with the preset it was probably meant to be."""
    import shlex
    import shutil

    if agent in presets:
        return
    try:
        argv = shlex.split(agent)
    except ValueError as e:
        raise UsageError("%s %s: not valid shell syntax (%s)" % (flag, agent, e)) from None
    if argv and shutil.which(argv[0]) is not None:
        return
    from .registry import did_you_mean

    raise UsageError("%s %s: no such preset, and %s is no command on PATH%s (presets: %s)" % (
        flag, agent, repr(argv[0]) if argv else "an empty line", did_you_mean(agent, presets),
        ", ".join(sorted(presets))))


def _new_mode(wanted: Dict[str, Any], manifest: Dict[str, Any], adapter: str, agent: Optional[str]) -> Optional[str]:
    """The --mode of a new file, which its agent's mode table must have."""
    mode = wanted["mode"]
    table = _mode_table(manifest, agent)
    if mode is not None and mode not in table:
        raw = (manifest.get("harness") or {}).get("mode_env")
        instead = "; set %s to one of the agent's own mode ids instead" % raw if raw else ""
        if table:
            raise UsageError("--mode %s: the %s agent %s has no mode that does what it means (its table: %s)%s" % (
                mode, adapter, agent, ", ".join(table), instead))
        raise UsageError("--mode: harnessctl knows no mode table of the %s agent %s%s" % (adapter, agent, instead))
    if mode is None and wanted["rules"] is not None and "ask" in table:
        return "ask"  # rules decide what the harness asks, so it asks for every change and command
    return mode


def _new_hooks(wanted: Dict[str, Any], binding: Dict[str, Any]) -> None:
    """The hooks of a new file, a flag's or else its variable's: resolved and
    refused inside the cwd (hooks.py)."""
    from .checks.hooks import check_reach, resolve

    for field in HOOKS:
        given = wanted[field.name]
        command = given or (os.environ.get(field.variable) if field.variable else None) or None
        if command is not None:
            name = field.flag if given else str(field.variable)
            binding[field.name] = resolve(command, name)  # a flag's is already: this resolves the variable's
            check_reach(binding[field.name], binding["cwd"], name)


def _mode_table(manifest: Dict[str, Any], agent: Optional[str]) -> Dict[str, Any]:
    """The --mode values the adapter can put its harness in: all of them for
    one harness, else those of the agent's table in the manifest (a preset may
    map only some: an agent with no mode that means `edit` leaves it out)."""
    from .vocabulary import MODES

    agents = manifest.get("agents")
    if agents is None:
        return {mode: mode for mode in MODES}
    preset = agents.get(agent) if isinstance(agents, dict) else None
    modes = preset.get("modes") if isinstance(preset, dict) else None
    return modes if isinstance(modes, dict) else {}


def real_dir(path: str) -> str:
    try:
        real = os.path.realpath(path)
    except OSError as e:  # the current directory was removed
        raise UsageError("cannot resolve the working directory %s: %s" % (path, e.strerror)) from None
    if not os.path.isdir(real):
        raise UsageError("cwd is not a directory: %s" % real)
    check_root(real, "working directory")
    try:
        real.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("the working directory %r is not valid UTF-8: pass --cwd with a UTF-8 path" % real) from None
    return real


# -- check and change ------------------------------------------------------------------------------


def check_binding(bound: Dict[str, Any], wanted: Dict[str, Any]) -> None:
    """A later command may omit any field; a different value is a conflict,
    except for a field a later send may change (changed())."""
    for field in FIELDS:
        key = field.name
        if not field.change and wanted.get(key) is not None and wanted[key] != bound.get(key):
            value = bound.get(key)
            if field.status == THAT_BOUND and value is not None:
                value = "a hook (its command line is not shown: it may hold a secret)"
            if key == "rules" and value is not None:
                value = ", ".join("--%s %s" % (verb, rule) for verb, rule in value)
            raise UsageError("%s is bound to this event path: %s (new workspace = new file)"
                             % (key, value if value is not None else "the harness default"))


def changed(bound: Dict[str, Any], wanted: Dict[str, Any]) -> Dict[str, Any]:
    """The fields a later send may change that it gives, and that differ
    from the bound ones: they replace them."""
    return {field.name: wanted[field.name] for field in FIELDS
            if field.change and wanted.get(field.name) is not None and wanted[field.name] != bound.get(field.name)}


def retried(bound: Optional[Dict[str, Any]], wanted: Dict[str, Any]) -> Dict[str, Any]:
    """What a send to a file whose first send failed asks for: what it gives,
    and what the failed one bound where it gives nothing (`--agent claude`
    alone corrects `--adapter acp --agent claud`)."""
    bound = bound or {}
    kept = {k: v for k, v in bound.items() if k in wanted and wanted[k] is None}
    if wanted["adapter"] not in (None, bound.get("adapter")):
        kept.pop("agent", None)  # another adapter's agent
    return dict(wanted, **kept)


# -- the send request ------------------------------------------------------------------------------


DELIVERIES = ("queue", "interrupt")  # send --queue, --interrupt: never steer (sends.py)


def send_request(text: str, schema: Optional[str], wanted: Dict[str, Any], deliver: Optional[str] = None) -> List[str]:
    """A send as the command hands it to the runtime: the text, the schema
    (structured.to_field), how it is delivered (DELIVERIES, or None: steer
    where the harness can) and the fields it gives, each by name (ipc.named)."""
    values = {"text": text}
    if schema:
        values["schema"] = schema
    if deliver:
        values["deliver"] = deliver
    for name, value in wanted.items():
        if value:  # an empty value gives nothing, as an omitted flag
            values[name] = _to_text(value)
    return ipc.named("send", SEND_VERSION, values)


def _to_text(value: Any) -> str:
    if isinstance(value, list) and not (value and isinstance(value[0], list)):  # sandbox_write: paths
        return "\0".join(value)
    if value is True:
        return "1"
    if isinstance(value, list):  # the rules
        from .checks.policy import to_field

        return to_field(value)
    return repr(value) if isinstance(value, float) else str(value)


def read_send_request(request: List[str], path: str) -> Tuple[str, str, Dict[str, Any], Optional[str]]:
    """(text, schema field, wanted, deliver) of a send request; the error a
    command of another version hears (ipc.read_named), or a malformed request's."""
    values = ipc.read_named(request, "send", SEND_VERSION, path)
    text, schema, deliver = values.pop("text", None), values.pop("schema", ""), values.pop("deliver", None)
    unknown = sorted(set(values) - set(NAMES))
    if text is None or unknown or deliver not in (None,) + DELIVERIES:
        raise HarnessctlError("malformed send request: %s" % (
            "no text" if text is None else "unknown " + unknown[0] if unknown else "deliver %r" % deliver))
    try:
        return text, schema, {field.name: field.read(values[field.name]) if field.name in values else None
                              for field in FIELDS}, deliver
    except ValueError as e:
        raise HarnessctlError("malformed send request: %s" % e) from None
