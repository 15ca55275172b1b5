"""The shape of tests/ (docs/DEVELOPMENT.md): the suites are folders, the
helpers, fakes and beds they share live in tests/support/ (on pytest's
pythonpath), and no test module imports another, so that a test module can
be read, moved or deleted on its own.  The modules that still import
another are listed with what they take from it; the list only shrinks."""

from __future__ import annotations

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(ROOT, "tests")
STILL = {  # a test module that imports others: what it takes, to move to tests/support/
    "tests/real/test_acp_claims.py": "the proofs of four real modules, read from their parametrize marks",
}


def modules():
    for folder, dirs, files in os.walk(TESTS):
        dirs[:] = [d for d in dirs if d != "support"]
        for name in files:
            if name.startswith("test_") and name.endswith(".py"):
                yield os.path.relpath(os.path.join(folder, name), ROOT)


def imports_a_test_module(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        if any(name.split(".")[-1].startswith("test_") for name in names):
            return True
    return False


def test_the_top_of_tests_is_conftest_and_the_suites():
    top = sorted(name for name in os.listdir(TESTS) if not name.startswith((".", "__")))
    assert len(top) <= 12 and all(os.path.isdir(os.path.join(TESTS, name)) for name in top
                                  if name != "conftest.py"), top


def test_no_test_module_imports_another_but_those_listed():
    importing = sorted(path for path in modules() if imports_a_test_module(path))
    assert [path for path in importing if path not in STILL] == []


def test_each_module_listed_still_imports_another():
    assert [path for path in STILL if not imports_a_test_module(path)] == []
