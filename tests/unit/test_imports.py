"""Who knows whom (issue 33), read from the sources with every import counted,
the ones inside a function too: no circle of imports in the package; the two
faces (the command line, the MCP server) stand on one layer, commands.py, and
neither on the other."""

from __future__ import annotations

import ast
import os

from cliutil import ROOT

CLI = {"harnessctl.cli", "harnessctl.arguments"}
MCP = {"harnessctl.mcp.server", "harnessctl.mcp.call", "harnessctl.mcp.tools"}


def modules():
    """Every module of the package: its dotted name -> its file."""
    found = {}
    for directory, dirs, files in os.walk(os.path.join(ROOT, "harnessctl")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                found[dotted[:-len(".__init__")] if dotted.endswith(".__init__") else dotted] = path
    return found


def imports(module, path, known):
    """The package's modules that `module` imports anywhere in its source,
    outside `if TYPE_CHECKING:` blocks (those never run)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    typing_only = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            typing_only.update(id(child) for child in ast.walk(node))
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                child = "%s.%s" % (base, alias.name)
                found.add(child if child in known else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name in known and name != module}


def graph():
    known = modules()
    return {module: imports(module, path, known) for module, path in known.items()}


def reachable(edges, module):
    seen, todo = set(), [module]
    while todo:
        for name in edges[todo.pop()]:
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def test_no_module_of_the_package_reaches_itself_through_its_imports():
    edges = graph()
    assert [m for m in sorted(edges) if m in reachable(edges, m)] == []


def test_the_mcp_face_imports_nothing_of_the_command_line_face():
    edges = graph()
    for module in MCP:
        assert not edges[module] & CLI, module


def test_the_command_layer_imports_neither_face():
    assert not reachable(graph(), "harnessctl.commands") & (CLI | MCP)


def test_the_reader_finds_the_imports_it_must():
    edges = graph()
    assert "harnessctl.commands" in edges["harnessctl.cli"]
    assert "harnessctl.runtime.sends" in edges["harnessctl.runtime.coordinator"]
