"""Which adapters exist: data, not code.  Each `adapters/<name>/manifest.json`
names its backend class; the core imports nothing of an adapter until a
runtime needs that backend.

The repository's `adapters/` folder is found in two layouts:

- beside this package (a checkout, an editable install of one, or a
  per-adapter package's `lib/`): the package `adapters`;
- inside this package (`pip install`: pyproject.toml installs the folder as
  `harnessctl.adapters`, so no top-level `adapters` lands in site-packages).

The package is imported from the folder found, not looked up on `sys.path`:
an editable install's command has harnessctl without the checkout on it, and
`fork` imports a backend in the command (`package()`).  A manifest names its
backend relative to its own package (".backend:Class"), which resolves in
either layout.  `problems()` holds a manifest to
schema/manifest.schema.json (package.py and tests/adapters/test_manifest.py use it)."""

from __future__ import annotations

import json
import os
import re

from ..errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, List

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the harnessctl package
if os.path.isdir(os.path.join(HERE, "adapters")):  # pip-installed
    ADAPTERS_DIR, ADAPTERS_PACKAGE = os.path.join(HERE, "adapters"), "harnessctl.adapters"
else:  # a checkout, or a per-adapter package's lib/
    ADAPTERS_DIR, ADAPTERS_PACKAGE = os.path.join(os.path.dirname(HERE), "adapters"), "adapters"

# schema/manifest.schema.json, which documents each word and key (tests/adapters/test_manifest.py keeps them equal)
CAPABILITIES = ("steer", "cancel", "approvals", "questions", "resume", "usage", "cost", "crash-recovery",
                "structured-output", "fork")
KEYS = {"name": "string", "version": "string", "description": "string", "backend": "string", "harness": "object",
        "capabilities": "array", "agents": "object"}
HARNESS_KEYS = {"name": "string", "version": "string", "package": "string", "binary": "string or null",
                "binary_env": "string or null", "args_env": "string or null", "agent_env": "string or null",
                "mode_env": "string or null", "sandbox_writes": "array", "schema_refusal": "string"}
AGENT_KEYS = {"command": "string", "command_env": "string", "package": "string or null", "registry": "string",
              "version": "string or null", "capabilities": "array", "degraded": "object", "modes": "object",
              "sandbox_writes": "array", "tests": "string", "unproven": "string"}
# keys a manifest, its harness or a preset may omit
OPTIONAL = ("package", "agent_env", "mode_env", "schema_refusal", "agents", "degraded", "modes", "tests", "unproven",
            "registry", "sandbox_writes")
REGISTRIES = ("npm", "pypi")  # where a preset's package comes from (npm when not said)
TYPES: Dict[str, Any] = {"string": str, "object": dict, "array": list, "string or null": (str, type(None))}
BACKEND = r"\.[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*"  # the schema's patterns
ENV_NAME = r"HARNESSCTL_[A-Z0-9_]+"


def names() -> List[str]:
    try:
        entries = sorted(os.listdir(ADAPTERS_DIR))
    except OSError:
        return []
    return [n for n in entries if os.path.isfile(os.path.join(ADAPTERS_DIR, n, "manifest.json"))]


def manifest(name: str) -> Dict[str, Any]:
    path = os.path.join(ADAPTERS_DIR, name, "manifest.json")
    if not name.isidentifier() or not os.path.isfile(path):
        known = ", ".join(names()) or "none installed"
        raise UsageError("unknown adapter %r%s (known: %s)" % (name, did_you_mean(name, names()), known))
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """"; did you mean X?" for the known name closest to a mistyped one, else ""."""
    import difflib

    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return "; did you mean %s?" % close[0] if close else ""


def backend_class(name: str) -> Any:
    import importlib  # only a runtime imports a backend: a command never needs it

    module_name, _, class_name = manifest(name)["backend"].partition(":")
    module = importlib.import_module(module_name, "%s.%s" % (package(), name))
    return getattr(module, class_name)


def package() -> str:
    """ADAPTERS_PACKAGE, imported (once) from ADAPTERS_DIR itself; its name.

    A name looked up on sys.path may not resolve: an editable install maps
    harnessctl to the checkout without putting the checkout on sys.path, so a
    command (`fork`) finds no top-level `adapters`, or finds a PyPI
    distribution of that name instead.  The folder the manifests came from is
    the package their backends import from."""
    import sys

    if ADAPTERS_PACKAGE not in sys.modules:
        import importlib.util

        spec = importlib.util.spec_from_file_location(ADAPTERS_PACKAGE, os.path.join(ADAPTERS_DIR, "__init__.py"),
                                                      submodule_search_locations=[ADAPTERS_DIR])
        if spec is None or spec.loader is None:
            raise ImportError("no adapters package in %s" % ADAPTERS_DIR)
        module = importlib.util.module_from_spec(spec)
        sys.modules[ADAPTERS_PACKAGE] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[ADAPTERS_PACKAGE]
            raise
    return ADAPTERS_PACKAGE


def problems(name: str) -> List[str]:
    """What makes adapters/<name>/manifest.json break schema/manifest.schema.json
    (a missing or unknown key, a wrong type, an unknown capability, ...); empty
    when nothing does."""
    try:
        data = manifest(name)
    except ValueError as exc:
        return ["not valid JSON (%s)" % exc]
    if not isinstance(data, dict):
        return ["not a JSON object"]
    found = _shape(data, KEYS, "")
    harness = data.get("harness")
    if isinstance(harness, dict):
        found += _shape(harness, HARNESS_KEYS, "harness.")
        found += ["harness.%s %r is not a HARNESSCTL_... variable name" % (key, harness[key])
                  for key in ("binary_env", "args_env", "agent_env", "mode_env") if isinstance(harness.get(key), str)
                  and not re.fullmatch(ENV_NAME, harness[key])]
    agents = data.get("agents")
    for agent, preset in agents.items() if isinstance(agents, dict) else ():
        found += _agent_problems(agent, preset)
    if isinstance(data.get("name"), str) and data["name"] != name:
        found.append("name %r is not the adapter's folder name %r" % (data["name"], name))
    if isinstance(data.get("backend"), str) and not re.fullmatch(BACKEND, data["backend"]):
        found.append("backend %r is not .MODULE:CLASS (a module of the adapter's own package)" % data["backend"])
    return found + _capability_problems(data.get("capabilities"), "")


def _agent_problems(agent: str, preset: Any) -> List[str]:
    """What is wrong with one preset of an `agents` table."""
    from ..vocabulary import MODES

    where = "agents.%s." % agent
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", agent):
        return ["agent preset name %r is not lower-case letters, digits, - and _" % agent]
    if not isinstance(preset, dict):
        return ["%s is not object" % where[:-1]]
    found = _shape(preset, AGENT_KEYS, where)
    if isinstance(preset.get("command_env"), str) and not re.fullmatch(ENV_NAME, preset["command_env"]):
        found.append("%scommand_env %r is not a HARNESSCTL_... variable name" % (where, preset["command_env"]))
    found += _capability_problems(preset.get("capabilities"), where)
    if isinstance(preset.get("registry"), str) and preset["registry"] not in REGISTRIES:
        found.append("%sregistry %r is not one of %s" % (where, preset["registry"], ", ".join(REGISTRIES)))
    degraded = preset.get("degraded")
    for word in degraded if isinstance(degraded, dict) else {}:
        if word not in CAPABILITIES:
            found.append("%sdegraded: unknown capability %r" % (where, word))
    modes = preset.get("modes")
    if isinstance(modes, dict) and not (modes and set(modes) <= set(MODES) and all(
            isinstance(v, str) and v for v in modes.values())):
        found.append("%smodes must give the agent's own mode id (a string) for some of %s"
                     % (where, ", ".join(MODES)))
    return found


def _capability_problems(capabilities: Any, where: str) -> List[str]:
    words = capabilities if isinstance(capabilities, list) else []
    found = []
    for i, word in enumerate(words):
        if word not in CAPABILITIES:
            found.append("%sunknown capability %r (known: %s)" % (where, word, ", ".join(CAPABILITIES)))
        elif word in words[:i]:
            found.append("%scapability %r listed twice" % (where, word))
    return found


def _shape(value: Dict[str, Any], keys: Dict[str, str], where: str) -> List[str]:
    """Missing, unknown, mistyped and empty-string keys of one object."""
    found: List[str] = []
    for key, kind in keys.items():
        if key not in value:
            if key not in OPTIONAL:
                found.append("missing key %s%s" % (where, key))
        elif not isinstance(value[key], TYPES[kind]):
            found.append("%s%s is not %s" % (where, key, kind))
        elif value[key] == "":
            found.append("%s%s is empty" % (where, key))
    return found + ["unknown key %s%s" % (where, key) for key in value if key not in keys]
