"""The sizes the code holds itself to (docs/DEVELOPMENT.md, "Sizes"): a
module of harnessctl/ or adapters/ at most 400 lines, a class at most 250, a
function at most 60.  An adapter's wire module (the pure mappings of a wide
protocol) is excepted by name and says why in its docstring.  What is over a
limit today is listed in OVER with the way down; a listed part that fits
now fails too, so the list only shrinks."""

from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIMITS = {"module": 400, "class": 250, "function": 60}
WIRE = ("adapters/acp/wire.py",)  # excepted by name: pure mappings, one small function a shape
OVER: dict = {}  # part -> the way down; empty: nothing is over its limit


def sources():
    for top in ("harnessctl", "adapters"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.relpath(os.path.join(folder, name), ROOT)


def oversized():
    """Every part over its limit: {"path" or "path:name": (kind, lines)}."""
    found = {}
    for path in sources():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = f.read()
        lines = text.count("\n")
        if lines > LIMITS["module"] and path not in WIRE:
            found[path] = ("module", lines)
        for node in ast.walk(ast.parse(text)):
            kind = ("class" if isinstance(node, ast.ClassDef) else
                    "function" if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None)
            if kind is not None:
                size = node.end_lineno - node.lineno + 1
                if size > LIMITS[kind]:
                    found["%s:%s" % (path, node.name)] = (kind, size)
    return found


def test_no_module_class_or_function_is_over_its_limit_but_those_listed():
    new = {part: size for part, size in oversized().items() if part not in OVER}
    assert not new, "over the limits %s: split them (docs/DEVELOPMENT.md, Sizes)" % LIMITS


def test_each_part_listed_over_a_limit_still_is():
    fits = sorted(set(OVER) - set(oversized()))
    assert not fits, "fits its limit now: take it off OVER"


@pytest.mark.parametrize("path", WIRE)
def test_a_wire_module_over_the_limit_says_why_in_its_docstring(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    assert "Over 400 lines because" in doc

