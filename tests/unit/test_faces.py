"""The two faces (the command line, the MCP server) stand on one layer,
commands.py, and neither on the other: read from the sources, every import
counted, the ones inside a function and under TYPE_CHECKING too."""

from __future__ import annotations

import ast
import os

from cliutil import ROOT

PACKAGE = os.path.join(ROOT, "harnessctl")
CLI = {"cli", "arguments"}
MCP = {"mcp", "mcpcall", "mcptools"}


def imports(module):
    """The harnessctl modules `module` imports anywhere in its source."""
    with open(os.path.join(PACKAGE, module + ".py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found.update([node.module.split(".")[0]] if node.module else [alias.name for alias in node.names])
    return found


def reachable(module):
    seen, todo = set(), [module]
    while todo:
        for name in imports(todo.pop()):
            if name not in seen and os.path.exists(os.path.join(PACKAGE, name + ".py")):
                seen.add(name)
                todo.append(name)
    return seen


def test_the_mcp_face_imports_nothing_of_the_command_line_face():
    for module in MCP:
        assert not imports(module) & CLI, module


def test_the_command_layer_imports_neither_face():
    assert not reachable("commands") & (CLI | MCP)


def test_no_circle_runs_through_a_face_or_the_command_layer():
    for module in CLI | MCP | {"commands", "log", "logwindow", "logprinter", "render"}:
        assert module not in reachable(module), module
