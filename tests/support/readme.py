"""The fenced code blocks of README.md, docs/RECIPES.md and the docs, so tests run what they show."""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Tuple

README = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "README.md")
RECIPES = os.path.join(os.path.dirname(README), "docs", "RECIPES.md")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)


def section(heading: str, path: str = README) -> str:
    """The text of the `## heading` section of README.md (or another page), up to the next `## ` heading."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end >= 0 else len(text)]


def blocks(heading: str, path: str = README) -> List[Tuple[str, str]]:
    """(language, code) of each fenced block in that section, in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(section(heading, path))]


def headings(path: str) -> List[str]:
    """The `## ` headings of a page, in order (none inside a fenced block)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    fences = list(FENCE.finditer(text))
    return [m.group() for m in re.finditer(r"^## .*$", text, re.M)
            if not any(fence.start() < m.start() < fence.end() for fence in fences)]


def recipes() -> List[Tuple[str, str]]:
    """(language, code) of every block of docs/RECIPES.md, section by section."""
    return [block for heading in headings(RECIPES) for block in blocks(heading, RECIPES)]


def block_after(heading: str) -> str:
    """The first bash block of that section."""
    return next(code for language, code in blocks(heading) if language == "bash")


MOCK = re.compile(r"^# mock: (.*)$", re.M)
TASK = re.compile(r'harnessctl send \S+ ("[^"]*")')  # the quoted task of a block's first send


def on_the_mock(code: str) -> str:
    """The block as its `# mock:` line says to run it on the mock, whose answer to
    the block's own prompt would mean nothing: `first, COMMAND` runs COMMAND
    first; `as the task, TASK` puts TASK in place of the quoted task of the
    block's first `harnessctl send`."""
    (line,) = MOCK.findall(code)
    how, _, what = line.partition(", ")
    if how == "first":
        return what + "\n" + code
    found = TASK.search(code)
    assert how == "as the task" and found and code.count(found.group(1)) == 1, line
    return code.replace(found.group(1), what)


def presets_table() -> str:
    """docs/ACP.md's table of the ACP presets, as adapters/acp/manifest.json says
    it (test_acp_claims.py keeps them equal; print this to update the page)."""
    import json

    path = os.path.join(os.path.dirname(README), "adapters", "acp", "manifest.json")
    with open(path, encoding="utf-8") as f:
        presets = json.load(f)["agents"]
    rows = ["| preset | command | tested with | proved against the real agent | `--mode` ask / edit / full |",
            "|---|---|---|---|---|"]
    for name, p in presets.items():
        tested = "`%s` %s" % (p["package"], p["version"]) if p["version"] else "not tested here"
        if p["version"] and p.get("registry") == "pypi":
            tested += " (PyPI)"
        proved = ", ".join(p["capabilities"]) or "nothing"
        if p.get("unproven"):
            proved += ": " + p["unproven"]
        if p.get("degraded"):
            proved += "; degraded: " + "; ".join("%s: %s" % item for item in p["degraded"].items())
        modes = p.get("modes") or {}
        table = " / ".join("`%s`" % modes[m].rsplit("#", 1)[-1] if m in modes else "–" for m in ("ask", "edit", "full"))
        rows.append("| `%s` | `%s` | %s | %s | %s |" % (name, p["command"], tested, proved, table if modes else "–"))
    return "\n".join(rows)
