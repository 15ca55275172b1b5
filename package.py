#!/usr/bin/env python3
"""Build a self-contained per-adapter package (docs/PROTOCOL.md section 13).

    python3 package.py --adapter codex --output-dir dist [--python PATH]
    mkdir -p ~/.harness && tar xzf dist/harnessctl-codex-<version>-linux.tar.gz -C ~/.harness
    ~/.harness/codex/harnessctl status /tmp/none.jsonl     # exits 4: the entry point works

    python3 package.py --adapter acp --agent gemini    # -> ~/.harness/acp-gemini/harnessctl

The archive holds `<name>/harnessctl` (the entry point, adapter fixed, and with
--agent the agent too; <name> is the adapter, or ADAPTER-AGENT),
`<name>/manifest.json` and `<name>/lib/` (the core and that one adapter:
every file of its folder but Python's caches, executable bits kept).  An
adapter whose manifest breaks schema/manifest.schema.json is refused (exit 2).
Stdlib only; the output is reproducible (fixed mtimes, sorted entries).

The entry point's shebang names the real interpreter that runs package.py
(`#!/abs/python3.X -IS`), so each command starts without going through a
launcher on PATH: a pyenv shim costs ~50 ms a command.  `--python PATH` records
another one (resolved, checked: an ELF binary, Python 3.9+); `--python python3`
(a bare name) keeps the portable `#!/usr/bin/env -S python3 -I -S` for archives
built for other machines.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
from typing import Any, Dict, List, Optional  # package.py is a build tool: start-up cost does not matter

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, ROOT)

from harnessctl import PROTOCOL_VERSION, __version__  # noqa: E402
from harnessctl.store import registry  # noqa: E402

ENTRY = """{shebang}
\"\"\"harnessctl with the {adapter} adapter{with_agent} (self-contained package; see manifest.json).\"\"\"
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "lib"))
from harnessctl.cli import entry  # noqa: E402

entry(adapter={adapter!r}, agent={agent!r})
"""
PYTHON_FLOOR = "3.9"
MTIME = 1767225600  # 2026-01-01: reproducible archives
SHEBANG_MAX = 127  # bytes the kernel reads of a `#!` line on older Linux (256 since 5.1)


def command_name(name: str) -> str:
    """A bare interpreter name as it may go into the `#!` line: a plain command
    name (letters, digits, `.`, `_`, `+`, `-`) and nothing else, so that no
    newline, space or shell syntax can add a line or an argument to the entry point."""
    plain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-"
    if not name or name.startswith("-") or any(c not in plain for c in name) \
            or len(("#!/usr/bin/env -S %s -I -S" % name).encode()) > SHEBANG_MAX:
        raise ValueError("--python %r is not a plain interpreter name such as python3 (or a path to one)" % name)
    return name


def shebang(python: str) -> str:
    """The entry point's `#!` line for `python` (a bare name: looked up on PATH
    where the package runs); raises ValueError for an interpreter that cannot work."""
    if "/" not in python:
        return "#!/usr/bin/env -S %s -I -S" % command_name(python)
    path = os.path.realpath(python)
    try:
        with open(path, "rb") as f:
            elf = f.read(4) == b"\x7fELF"
    except OSError as exc:
        raise ValueError("cannot read %s: %s" % (python, exc.strerror)) from None
    if not elf:
        raise ValueError("%s is not an ELF binary (a pyenv shim or a wrapper script?): pass the interpreter "
                         "it runs, e.g. --python \"$(pyenv which python3)\"" % python)
    line = "#!%s -IS" % path  # the kernel passes one argument: -I -S combined
    if len(line.encode()) > SHEBANG_MAX or any(c.isspace() for c in path):
        raise ValueError("%s cannot go into a #! line (too long or has spaces): pass another --python" % path)
    floor = tuple(int(n) for n in PYTHON_FLOOR.split("."))
    probe = subprocess.run([path, "-I", "-S", "-c", "import sys; sys.exit(sys.version_info < %r)" % (floor,)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if probe.returncode != 0:
        raise ValueError("%s is not Python %s or newer" % (path, PYTHON_FLOOR))
    return line


def sources(top: str) -> List[str]:
    """Relative paths of every file to ship under `top`: all of them but Python's
    caches (an adapter may hold scripts, data, a stand-in in another language)."""
    found = []
    for directory, dirs, files in os.walk(os.path.join(ROOT, top)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [os.path.relpath(os.path.join(directory, name), ROOT) for name in sorted(files)
                  if not name.endswith(".pyc")]
    return found


def package_manifest(adapter: str, agent: Optional[str] = None) -> Dict[str, Any]:
    adapter_manifest = registry.manifest(adapter)
    manifest = {
        "name": "harnessctl-%s" % folder_name(adapter, agent),
        "harnessctl_version": __version__,
        "protocol_version": PROTOCOL_VERSION,
        "adapter": adapter,
        "adapter_version": adapter_manifest["version"],
        "description": adapter_manifest["description"],
        "harness": adapter_manifest["harness"],
        "capabilities": adapter_manifest["capabilities"],
        "python_requires": ">=%s" % PYTHON_FLOOR,
        "entry_point": "harnessctl",
    }
    if agent is not None:  # the preset's own line: its command and what was proved against it
        manifest["agent"] = dict(adapter_manifest["agents"][agent], name=agent)
    elif "agents" in adapter_manifest:
        manifest["agents"] = adapter_manifest["agents"]
    return manifest


def folder_name(adapter: str, agent: Optional[str]) -> str:
    return adapter if agent is None else "%s-%s" % (adapter, agent)


def build(adapter: str, output_dir: str, python: str = sys.executable, agent: Optional[str] = None) -> str:
    """The archive's path; raises ValueError (and writes nothing) for a manifest that breaks
    schema/manifest.schema.json, an agent that is not one of its presets, or an
    interpreter that cannot work."""
    problems = registry.problems(adapter)
    if problems:
        raise ValueError("adapters/%s/manifest.json: %s" % (adapter, "; ".join(problems)))
    presets = registry.manifest(adapter).get("agents") or {}
    if agent is not None and agent not in presets:
        raise ValueError("--agent %s is not a preset of the %s adapter (%s)" % (
            agent, adapter, ", ".join(sorted(presets)) or "it has none"))
    entry = ENTRY.format(shebang=shebang(python), adapter=adapter, agent=agent,
                         with_agent=" and the %s agent" % agent if agent else "").encode()
    manifest = package_manifest(adapter, agent)
    files = sources("harnessctl") + ["adapters/__init__.py"] + sources(os.path.join("adapters", adapter))
    os.makedirs(output_dir, exist_ok=True)
    name = folder_name(adapter, agent)
    target = os.path.join(output_dir, "harnessctl-%s-%s-linux.tar.gz" % (name, __version__))
    with open(target, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=MTIME) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            add_bytes(tar, "%s/harnessctl" % name, entry, 0o755)
            add_bytes(tar, "%s/manifest.json" % name, (json.dumps(manifest, indent=2) + "\n").encode(), 0o644)
            for rel in files:
                with open(os.path.join(ROOT, rel), "rb") as f:
                    data, executable = f.read(), os.fstat(f.fileno()).st_mode & 0o111
                add_bytes(tar, "%s/lib/%s" % (name, rel), data, 0o755 if executable else 0o644)
    return target


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, MTIME
    tar.addfile(info, io.BytesIO(data))


def main() -> int:
    parser = argparse.ArgumentParser(description="Build dist/harnessctl-<adapter>-<version>-linux.tar.gz")
    parser.add_argument("--adapter", required=True, choices=registry.names())
    parser.add_argument("--agent", help="a preset of an adapter with agents (acp): fixed in the entry point")
    parser.add_argument("--output-dir", default="dist")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter for the entry point's #! line (default: this one, resolved); "
                        "a bare name such as python3 is looked up on PATH where the package runs")
    args = parser.parse_args()
    try:
        print(build(args.adapter, args.output_dir, args.python, args.agent))
    except ValueError as exc:  # one line, exit 2 like a usage error
        print("%s: error: %s" % (parser.prog, exc), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
