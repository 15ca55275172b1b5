"""`harnessctl agents`: the agent presets the adapters' manifests name, each
with its command (after its override variable), whether that command is
found on this machine and at which version, and what the project's tests
proved it does at its pinned version.

Nothing is run to learn a version: an agent's `--version` may start a
server, ask for a login or take seconds under node.  The version is read from
the package.json of the npm package the found command belongs to (the
preset's `package`), walking up from the real path of the command; for a PyPI
package (`registry`: pypi), from the metadata of the distribution in the venv
the command's real path is in (pip's or pipx's)."""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil

from .store import registry

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

PACKAGE_DEPTH = 6  # folders walked up from a command to its package.json (dist/bin/x.js sits 2-3 deep)


def listing(env: Dict[str, str]) -> List[Dict[str, Any]]:
    """One entry per preset of every adapter that has presets, in manifest order."""
    found = []
    for adapter in registry.names():
        for name, preset in (registry.manifest(adapter).get("agents") or {}).items():
            found.append(entry(adapter, name, preset, env))
    return found


def entry(adapter: str, name: str, preset: Dict[str, Any], env: Dict[str, str]) -> Dict[str, Any]:
    variable = preset.get("command_env")
    line = (env.get(variable) if variable else None) or preset.get("command") or ""
    try:
        argv = shlex.split(line)
    except ValueError:
        argv = []
    path = shutil.which(argv[0], path=env.get("PATH")) if argv else None
    return {
        "agent": name, "adapter": adapter, "command": line, "command_env": variable,
        "package": preset.get("package"), "registry": preset.get("registry") or "npm", "found": path,
        "version": found_version(argv, path, preset) if path else None,
        "tested_version": preset.get("version"), "capabilities": preset.get("capabilities") or [],
        "degraded": preset.get("degraded") or {}, "modes": preset.get("modes"),
        "tests": preset.get("tests"), "unproven": preset.get("unproven"),
    }


def found_version(argv: List[str], path: str, preset: Dict[str, Any]) -> Optional[str]:
    if preset.get("registry") == "pypi":
        return venv_version(path, preset.get("package"))
    return installed_version(argv, path, preset.get("package"))


def venv_version(path: str, package: Optional[str]) -> Optional[str]:
    """The Version of `package`'s dist-info in the venv that holds the command
    (VENV/bin/X, or a link to it as pipx makes); None when it is not there."""
    if not package:
        return None
    venv = os.path.dirname(os.path.dirname(os.path.realpath(path)))
    wanted = re.sub(r"[-_.]+", "_", package).lower()
    pattern = os.path.join(glob.escape(venv), "lib", "python*", "site-packages", "*.dist-info", "METADATA")
    for metadata in sorted(glob.glob(pattern)):
        if os.path.basename(os.path.dirname(metadata)).lower().startswith(wanted + "-"):
            return _metadata_version(metadata)
    return None


def _metadata_version(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip() or None
                if not line.strip():  # the headers end at the first blank line
                    break
    except OSError:
        pass
    return None


def installed_version(argv: List[str], path: str, package: Optional[str]) -> Optional[str]:
    """The version in the package.json of `package`: beside the command where
    npm links it, else above its real path or a script it is given (`node
    /x/dist/index.js`); None when none is found."""
    if not package:
        return None
    # where npm puts the package beside the command it links: a local prefix's node_modules/.bin/X,
    # a global prefix's bin/X (lib/node_modules); a platform binary (cline's) has a package of its own
    parent = os.path.dirname(os.path.dirname(path))
    for beside in (os.path.join(parent, package), os.path.join(parent, "lib", "node_modules", package)):
        version = _package_version(os.path.join(beside, "package.json"), package)
        if version is not None:
            return version
    starts = [path] + [word for word in argv[1:] if os.path.isabs(word) and os.path.exists(word)]
    for start in starts:
        folder = os.path.dirname(os.path.realpath(start))
        for _ in range(PACKAGE_DEPTH):
            version = _package_version(os.path.join(folder, "package.json"), package)
            if version is not None:
                return version
            folder = os.path.dirname(folder)
    return None


def _package_version(path: str, package: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and data.get("name") == package and isinstance(data.get("version"), str):
        return data["version"]
    return None


def table(entries: List[Dict[str, Any]]) -> str:
    """The listing for a person: agent, command, the version found on PATH
    ("yes" when it is not an npm package's, "no" when not found), what is proven."""
    rows = [("AGENT", "COMMAND", "FOUND", "PROVEN")]
    for e in entries:
        found = "no" if not e["found"] else e["version"] or "yes"  # where: in --json
        rows.append((e["agent"], e["command"], found, proven(e)))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3]
                     for row in rows)


def proven(e: Dict[str, Any]) -> str:
    """`at 1.18.33: cancel, approvals (degraded: steer)`, or why nothing is."""
    if not e["tested_version"]:
        return "nothing: %s" % (e["unproven"] or "not tested here")
    words = ", ".join(e["capabilities"]) or "plain runs only"
    degraded = " (degraded: %s)" % ", ".join(e["degraded"]) if e["degraded"] else ""
    return "at %s: %s%s" % (e["tested_version"], words, degraded)
