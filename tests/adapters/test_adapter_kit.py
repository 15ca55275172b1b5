"""A fourth adapter written from docs/ADAPTERS.md alone (tests/support/tiny_adapter)
touches nothing outside `adapters/<name>/`: dropped into a copy of the
repository, it is picked up by the manifest checks, the conformance suite and
package.py with no other edit.  So is a leaner one (tests/support/tiny_adapter_lean)
that claims neither steering nor approvals and reports no exit codes: the
suite tests what a manifest claims, and the core holds its busy sends.  Every
adapter imports harnessctl only through the kit (harnessctl/kit/__init__.py), and
docs/ADAPTERS.md names exactly what the kit holds."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
from cliutil import ROOT, cli_env, kill_all_under

from harnessctl import kit

TINY = os.path.join(ROOT, "tests", "support", "tiny_adapter")
LEAN = os.path.join(ROOT, "tests", "support", "tiny_adapter_lean")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A copy of the repository with the tiny adapters as adapters/tiny and adapters/tiny_lean."""
    where = tmp_path_factory.mktemp("kit") / "harnessctl"
    shutil.copytree(ROOT, str(where), ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "build", "dist",
                                                                      "*.egg-info"))
    shutil.copytree(TINY, str(where / "adapters" / "tiny"))
    shutil.copytree(LEAN, str(where / "adapters" / "tiny_lean"))
    yield where
    kill_all_under(str(where.parent))


def in_copy(checkout, *argv):
    env = cli_env()
    env["PYTHONPATH"] = str(checkout)
    return subprocess.run([sys.executable, *argv], cwd=str(checkout), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=600)


def test_a_new_adapter_folder_passes_the_manifest_checks_and_the_conformance_suite(checkout):
    proc = in_copy(checkout, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/adapters/test_manifest.py",
                   "tests/adapters/test_conformance.py", "-k", "tiny")
    out = proc.stdout.decode()
    assert proc.returncode == 0, out[-3000:]
    assert " passed" in out and "failed" not in out
    assert int(out.split(" passed")[0].split()[-1]) >= 6  # the conformance tests ran for it


def test_an_adapter_without_steering_approvals_or_exit_codes_passes_the_conformance_suite(checkout):
    proc = in_copy(checkout, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                   "tests/adapters/test_conformance.py", "-k", "tiny_lean")
    out = proc.stdout.decode()
    assert proc.returncode == 0, out[-3000:]
    assert "tiny_lean does not claim approvals" in out and "failed" not in out
    assert int(out.split(" passed")[0].split()[-1]) >= 7  # the held sends, the cancel, the crash, the tool, ...


def test_package_py_ships_the_new_adapter_with_its_harness(checkout):
    proc = in_copy(checkout, "package.py", "--adapter", "tiny", "--output-dir", str(checkout / "dist"))
    assert proc.returncode == 0, proc.stderr
    with tarfile.open(proc.stdout.decode().strip()) as tar:
        harness = tar.getmember("tiny/lib/adapters/tiny/harness.py")
    assert harness.mode & 0o111


def _harnessctl_imports(path):
    """The harnessctl modules a file imports, function-local and type-only imports included."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "harnessctl")
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "harnessctl":
            found.update("%s.%s" % (node.module, a.name) if node.module == "harnessctl" else node.module
                         for a in node.names)
    return found


def test_adapters_import_nothing_of_harnessctl_but_the_kit():
    folders = [os.path.join(ROOT, "adapters"), TINY, LEAN]
    files = [os.path.join(d, f) for folder in folders for d, _, names in os.walk(folder) for f in names
             if f.endswith(".py")]
    reached = {os.path.relpath(path, ROOT): sorted(_harnessctl_imports(path) - {"harnessctl.kit"}) for path in files}
    assert {path: found for path, found in reached.items() if found} == {}
    assert any(_harnessctl_imports(path) for path in files)  # the walk found the adapters


def test_adapters_md_documents_exactly_the_kit():
    with open(os.path.join(ROOT, "docs", "ADAPTERS.md"), encoding="utf-8") as f:
        section = f.read().split("### The kit", 1)[1].split("\n#", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    documented = [name for row in rows for name in re.findall(r"`(\w+)`", row)]
    assert sorted(documented) == sorted(kit.__all__)
