"""The shape of tests/ (docs/DEVELOPMENT.md): the suites are folders, the
helpers, fakes and beds they share live in tests/support/ (on pytest's
pythonpath), and no test module imports another, so that a test module can
be read, moved or deleted on its own."""

from __future__ import annotations

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(ROOT, "tests")


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


def test_no_test_module_imports_another():
    assert sorted(path for path in modules() if imports_a_test_module(path)) == []


def test_an_import_of_a_test_module_is_found_and_one_of_a_support_module_is_not(tmp_path):
    (tmp_path / "test_a.py").write_text("import cliutil\nfrom acp_support.recipes import PYPI\n")
    (tmp_path / "test_b.py").write_text("import test_acp_real as real\n")
    assert not imports_a_test_module(str(tmp_path / "test_a.py"))
    assert imports_a_test_module(str(tmp_path / "test_b.py"))
