"""harnessctl/store/registry.py: where the adapters are found and imported from, whatever sys.path holds."""

from __future__ import annotations

import os
import subprocess
import sys

from cliutil import ROOT

# harnessctl imported from the checkout as an editable install's finder imports it: by its folder, with the
# checkout itself not on sys.path (-I, and the cwd elsewhere), so no top-level `adapters` is importable.
EDITABLE = """
import importlib.util, sys
folder = sys.argv[1]
spec = importlib.util.spec_from_file_location("harnessctl", folder + "/__init__.py",
                                              submodule_search_locations=[folder])
module = importlib.util.module_from_spec(spec)
sys.modules["harnessctl"] = module
spec.loader.exec_module(module)
from harnessctl.store import registry
print(registry.backend_class("mock").RESUME_FILE)
"""


def test_a_backend_is_found_without_the_checkout_on_sys_path(tmp_path):
    """An editable install's command (`fork` asks the backend for its resume file) has harnessctl but not the
    checkout on sys.path: the adapters come from the folder the registry found (issue 47: before, `No module
    named 'adapters'`)."""
    proc = subprocess.run([sys.executable, "-I", "-c", EDITABLE, os.path.join(ROOT, "harnessctl")],
                          cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.strip() and b"/" not in proc.stdout.strip()
