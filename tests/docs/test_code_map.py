"""docs/DEVELOPMENT.md's code map is the folder tree (issue 33): one line per
folder and module of harnessctl/, each adapter's folder with its modules;
a module added, moved or removed without its line fails here."""

from __future__ import annotations

import os
import re

from cliutil import ROOT


def code_map():
    """{path: description} from the fenced tree under "## The code map"."""
    with open(os.path.join(ROOT, "docs", "DEVELOPMENT.md"), encoding="utf-8") as f:
        text = f.read()
    block = re.search(r"^## The code map\n.*?^```\n(.*?)^```", text, re.S | re.M).group(1)
    found, stack = {}, []
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        name, _, description = line.strip().partition(" ")
        del stack[indent // 2:]
        path = "".join(stack) + name
        found[path] = description.strip()
        if name.endswith("/"):
            stack.append(name)
    return found


def tree(top):
    """The folders (ending in /) and modules under `top`, but each folder's __init__.py."""
    found = set()
    for directory, dirs, files in os.walk(os.path.join(ROOT, top)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(directory, ROOT).replace(os.sep, "/") + "/"
        found.add(rel)
        found.update(rel + name for name in files if name.endswith(".py") and name != "__init__.py")
    return found


def test_the_code_map_names_every_folder_and_module_of_the_package_once():
    listed = {path for path in code_map() if path.startswith("harnessctl/")}
    assert listed == tree("harnessctl")


def test_the_code_map_names_every_adapter_with_its_modules():
    listed = code_map()
    for path in sorted(tree("adapters")):
        folder, _, module = path.rpartition("/")
        if path.endswith("/"):
            assert path in listed, path
        else:
            assert module in listed[folder + "/"], path


def test_every_description_in_the_code_map_says_something():
    assert all(len(description) > 10 for description in code_map().values())
