"""The binding: what a session's event file is bound to (the fields of
fields.FIELDS), and what is done with it: resolved on the machine that
binds it, built by a first send, checked against a later one, merged, and
carried to the runtime by name (binding.json itself: bindingfile.py).  A
later send may omit a field; a different value is refused (exit 2), except
for one it may change (the limits: that is how a spent budget is raised).
Start-up: policy, budget, hooks, the registry and the records are imported
only by the functions that need them."""

from __future__ import annotations

import os

from .errors import HarnessctlError, UsageError
from .fields import FIELDS, HOOKS, NAMES, THAT_BOUND
from .store import ipc
from .store.address import check_root

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from .worktree import Worktree

SEND_VERSION = 2  # of the send request; 1 was thirteen positional fields (harnessctl 0.1.0 before the binding table)

# -- a send's binding ------------------------------------------------------------------------------


def asked(wish: Dict[str, Any]) -> Dict[str, Any]:
    """What a send asks for, every field by name (None: not given), as this
    machine binds it: the cwd a real directory, a hook's program by absolute
    path, the box's folders real ones.  `wish` holds what a face gave
    (fields.parsed); it is resolved here, on the machine that binds it, not
    where the command was typed (a send to another machine)."""
    asked = {name: wish.get(name) for name in NAMES}
    if asked["cwd"] is not None:
        asked["cwd"] = real_dir(asked["cwd"])
    for field in HOOKS:
        command = asked[field.name]
        if command is not None:
            from .checks.hooks import resolve

            asked[field.name] = resolve(command, field.flag)
    asked["sandbox_write"] = _box_folders(bool(asked["sandbox"]), asked["sandbox_write"] or [])
    return asked


def _box_folders(boxed: bool, writes: List[str]) -> Optional[List[str]]:
    """The real folders of a send's --sandbox-write (each must exist), or
    None.  Whether this machine can box is asked when a file is bound
    (client.send), not here: a later send to a boxed file need not say it."""
    if writes and not boxed:
        raise UsageError("--sandbox-write adds a folder to the box: give --sandbox too")
    found = set()
    for path in writes:
        real = os.path.realpath(path)
        if not os.path.isdir(real):
            raise UsageError("--sandbox-write %s: not a directory" % path)
        found.add(real)
    return sorted(found) or None


def new_binding(wanted: Dict[str, Any]) -> Dict[str, Any]:
    """The binding of a new file: what the send asks for, with its variables
    where it gives no flag, checked against the adapter's manifest."""
    from .store import registry

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
    from .store.registry import did_you_mean

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
        hook, name = wanted[field.name], field.flag  # a flag's is resolved already (asked)
        if not hook and field.variable and os.environ.get(field.variable):
            hook, name = resolve(os.environ[field.variable], field.variable), field.variable
        if hook:
            binding[field.name] = hook
            check_reach(hook, binding["cwd"], name)


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


def with_worktree(binding: Dict[str, Any], bound: Optional[Dict[str, Any]], path: str) -> Dict[str, Any]:
    """A new binding that asks for --worktree, with its worktree made: a
    new branch and folder named from the event file `path`, the cwd moved
    into it.  The worktree of a first send that failed after making it is
    taken again (its binding is `bound`), not made twice."""
    if binding.get("worktree") is not True:
        return binding
    if bound is not None and bound.get("worktree") is not None:
        return dict(binding, worktree=bound["worktree"], cwd=bound["cwd"])
    from . import worktree

    name = worktree.named(path)
    check_root(worktree.planned(binding["cwd"], name), "worktree")
    tree = worktree.add(binding["cwd"], name)
    return dict(binding, worktree=tree.as_dict(), cwd=worktree.cwd_in(tree, binding["cwd"]))


def worktree_of(file: str) -> Worktree:
    """The worktree of the session `file` names, from its trusted binding."""
    from .store.address import require_exists, resolve
    from .store.bindingfile import read_binding
    from .worktree import Worktree

    addr = resolve(file)
    require_exists(addr)
    bound = read_binding(addr) or {}
    if bound.get("worktree") is None:
        raise UsageError("%s has no worktree: its first send gave no --worktree" % file)
    return Worktree.from_dict(bound["worktree"])


# -- check and change ------------------------------------------------------------------------------


def check_binding(bound: Dict[str, Any], wanted: Dict[str, Any]) -> None:
    """A later command may omit any field; a different value is a conflict,
    except for a field a later send may change (changed()).  A send that
    gives --worktree again, to a file whose first send made its worktree,
    repeats that send's flags: its --cwd is where the worktree came from."""
    same_tree = bound.get("worktree") is not None and wanted.get("worktree") is True
    for field in FIELDS:
        key = field.name
        if same_tree and key in ("worktree", "cwd"):
            continue
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
