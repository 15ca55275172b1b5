"""The contract ships with the repository: whoever clones it finds every
document the code and the docs point at (docs/PROTOCOL.md, the pages it lists and their sections,
the files README.md and EVENT.md link to), and nothing points at material a
user does not have."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROTOCOL = os.path.join(ROOT, "docs", "PROTOCOL.md")
# docs/PROTOCOL.md and the pages of its parts, docs/PROTOCOL-COMMANDS.md and the like
PROTOCOL_PAGE = r"PROTOCOL(?:-[A-Z]+)?\.md"
STANDIN = os.path.join(ROOT, "adapters", "mock", "standin.py")
THIS = os.path.relpath(os.path.abspath(__file__), ROOT)

# Material outside the repository that a clone does not have (spelled in parts,
# so that this file, which only forbids them, does not mention them itself).
SHARED = "sh" + "ared"
OUTSIDE = ("../" + SHARED, SHARED + "/PROTOCOL", "rese" + "arch/")
# A mention that does not name its page under docs/: "PROTOCOL.md" without "docs/", or "PROTOCOL section N".
BARE_PROTOCOL = re.compile(r"(?<![\w/-])" + PROTOCOL_PAGE + r"|\bPROTOCOL sections?\b")
# A markdown link to a page may show any text: [PROTOCOL.md](docs/PROTOCOL.md), or from docs/ (PROTOCOL.md)
LINK_TO_PROTOCOL = re.compile(r"\[[^\]\n]*\]\([^)\s]*" + PROTOCOL_PAGE + r"(?:#[^)\s]*)?\)")
# "docs/PROTOCOL-SESSION.md section 3", "docs/PROTOCOL.md sections 2, 6 and 14", "… sections 3 to 5"
CITATION = re.compile(r"docs/(" + PROTOCOL_PAGE + r"),?\s+sections?\s+"
                      r"(\d+(?:(?:\s*,\s*|\s+and\s+|\s+to\s+|\s*-\s*)\d+)*)")
LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def tracked_files():
    """The repository's tracked files (relative paths), plus the docs being
    written next to them; skips when git cannot list them."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("%s is not a git checkout (no .git)" % ROOT)
    proc = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        pytest.skip("git ls-files failed: %s" % proc.stderr.decode("utf-8", "replace").strip())
    names = {name for name in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if name}
    names.update(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    names.discard(THIS)
    return sorted(names)


def text_of(relpath):
    """The file's text, or None for a binary, unreadable or deleted file."""
    try:
        with open(os.path.join(ROOT, relpath), "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def tracked_texts():
    for relpath in tracked_files():
        text = text_of(relpath)
        if text is not None:
            yield relpath, text


def protocol_pages():
    """The contract's pages: docs/PROTOCOL.md and every page it links to by name."""
    with open(PROTOCOL, encoding="utf-8") as f:
        return ["PROTOCOL.md"] + sorted(set(re.findall(r"\]\((PROTOCOL-[A-Z]+\.md)\)", f.read())))


def protocol_sections():
    """{(page, section number)} of every numbered section of the contract's pages."""
    found = set()
    for name in protocol_pages():
        with open(os.path.join(ROOT, "docs", name), encoding="utf-8") as f:
            found.update((name, int(m.group(1))) for m in re.finditer(r"^## (\d+)\. \S", f.read(), re.M))
    return found


def cited_sections(text):
    """Every (page, section number) cited as "docs/PROTOCOL-PART.md section(s) …" (ranges expanded)."""
    cited = set()
    for m in CITATION.finditer(text):
        name, spec = m.groups()
        numbers = {int(n) for n in re.findall(r"\d+", spec)}
        for low, high in re.findall(r"(\d+)\s*(?:to|-)\s*(\d+)", spec):
            numbers.update(range(int(low), int(high) + 1))
        cited.update((name, n) for n in numbers)
    return cited


def lines_matching(text, pattern):
    """The lines of `text` where `pattern` occurs, numbered."""
    return ["%d: %s" % (n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if pattern.search(line)]


def markdown_links(text):
    """Relative link targets of a markdown text (code blocks and spans are not links)."""
    text = CODE_SPAN.sub("", FENCE.sub("", text))
    for target in LINK.findall(text):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("#", "/")):
            continue  # a URL (http:, mailto:), an anchor in the same page, or an absolute path
        yield target


def link_documents():
    names = ["README.md", "EVENT.md"]
    names += sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return names


# -- the contract is in the repository -------------------------------------------


def test_the_protocol_pages_are_in_the_repository_with_sections_numbered_across_them():
    assert os.path.isfile(PROTOCOL) and len(protocol_pages()) > 1
    numbers = sorted(n for _, n in protocol_sections())
    assert numbers == list(range(1, len(numbers) + 1)), numbers


def test_no_page_of_the_protocol_is_over_40_kb():
    sizes = {name: os.path.getsize(os.path.join(ROOT, "docs", name)) for name in protocol_pages()}
    assert all(size <= 40 * 1024 for size in sizes.values()), sizes


def test_no_tracked_file_points_at_material_outside_the_repository():
    offenders = {}
    for relpath, text in tracked_texts():
        hits = [line for needle in OUTSIDE for line in lines_matching(text, re.compile(re.escape(needle)))]
        if hits:
            offenders[relpath] = hits
    assert not offenders, offenders


def bare_protocol_mentions(text):
    """Lines that mention the protocol without naming docs/PROTOCOL.md."""
    return lines_matching(LINK_TO_PROTOCOL.sub("docs/PROTOCOL.md", text), BARE_PROTOCOL)


def test_every_mention_of_the_protocol_names_docs_protocol_md():
    offenders = {}
    for relpath, text in tracked_texts():
        hits = bare_protocol_mentions(text)
        if hits:
            offenders[relpath] = hits
    assert not offenders, offenders


def test_every_cited_protocol_section_exists():
    sections = protocol_sections()
    offenders = {}
    for relpath, text in tracked_texts():
        missing = sorted(cited_sections(text) - sections)
        if missing:
            offenders[relpath] = missing
    assert not offenders, "sections cited but not on the page named: %s" % offenders


def test_a_citation_names_one_section_a_list_or_a_range():
    assert cited_sections("see docs/PROTOCOL-COMMANDS.md section 9.") == {("PROTOCOL-COMMANDS.md", 9)}
    assert cited_sections("(docs/PROTOCOL.md sections 2, 12 and 14)") == {("PROTOCOL.md", n) for n in (2, 12, 14)}
    assert cited_sections("docs/PROTOCOL-SESSION.md sections 3 to 5") == {("PROTOCOL-SESSION.md", n) for n in (3, 4, 5)}
    assert cited_sections("PROTOCOL section 4") == set()


def test_a_mention_without_docs_is_bare_and_a_link_to_docs_protocol_md_is_not():
    assert bare_protocol_mentions("PROTOCOL section 4\ndocs/PROTOCOL-SESSION.md section 4") == ["1: PROTOCOL section 4"]
    assert bare_protocol_mentions("the contract is `PROTOCOL.md`") == ["1: the contract is `PROTOCOL.md`"]
    assert bare_protocol_mentions("see PROTOCOL-MCP.md") == ["1: see PROTOCOL-MCP.md"]
    assert bare_protocol_mentions("the contract: [PROTOCOL.md](docs/PROTOCOL.md#2-the-commands)") == []


def page(document):
    """(path, text) of a document of the repository; skips when this checkout lacks it."""
    path = os.path.join(ROOT, document)
    if not os.path.exists(path):
        pytest.skip("%s is not in this checkout" % document)
    with open(path, encoding="utf-8") as f:
        return path, f.read()


@pytest.mark.parametrize("document", link_documents())
def test_every_relative_link_resolves_to_a_file_in_the_repository(document):
    path, text = page(document)
    broken = []
    for target in markdown_links(text):
        file_part = target.split("#", 1)[0]
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
        inside = resolved == ROOT or resolved.startswith(ROOT + os.sep)
        if not inside or not os.path.exists(resolved):
            broken.append(target)
    assert not broken, "%s links to missing files: %s" % (document, broken)


def slugs(text):
    """The anchors GitHub gives the headings of a markdown text: lower case,
    punctuation dropped, spaces as hyphens (a repeated heading gets -1, -2 ...)."""
    seen = {}
    for heading in re.findall(r"^#{1,6} +(.+?) *$", FENCE.sub("", text), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        yield slug if count == 0 else "%s-%d" % (slug, count)


def test_a_slug_is_githubs_anchor_for_the_heading():
    assert list(slugs("## 17. Permission policy (`--mode`, `--allow`, `--deny`)\n## Try it: no model\n## A\n## A")) == [
        "17-permission-policy---mode---allow---deny", "try-it-no-model", "a", "a-1"]


@pytest.mark.parametrize("document", link_documents())
def test_every_anchor_names_a_heading_of_the_page_it_points_at(document):
    path, text = page(document)
    broken = []
    for target in re.findall(LINK, CODE_SPAN.sub("", FENCE.sub("", text))):
        file_part, hash_mark, anchor = target.partition("#")
        if not hash_mark or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or not (file_part or anchor):
            continue
        target_page = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not target_page.endswith(".md") or not os.path.isfile(target_page):
            continue  # a missing file is the test above's
        with open(target_page, encoding="utf-8") as f:
            if anchor not in set(slugs(f.read())):
                broken.append(target)
    assert not broken, "%s links to headings that do not exist: %s" % (document, broken)


# -- the mock's directives (docs/PROTOCOL.md section 14; docs/MOCK.md links there) --


def directive_table(path):
    """The directives in the first column of a page's `| directive | effect |` table."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    table = text[text.index("| directive | effect |"):]
    table = table[:table.find("\n\n")]
    return set(re.findall(r"^\| `(/[a-z]+)", table, re.M))


def test_the_mock_directive_table_lists_every_directive_the_stand_in_accepts_and_no_other():
    with open(STANDIN, encoding="utf-8") as f:
        source = f.read()
    steps_of = source[source.index("def steps_of("):source.index("\nclass ")]
    accepted = set(re.findall(r'"(/[a-z]+)"', steps_of))
    assert "/usage" in accepted and directive_table(PROTOCOL) == accepted


def test_the_readme_lists_every_exit_code_of_the_protocol():
    with open(PROTOCOL, encoding="utf-8") as f:
        table = f.read().split("\n## 15. Exit codes\n", 1)[1].split("\n## ", 1)[0]
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    sentence = readme[readme.index("Exit codes: "):readme.index(".\n", readme.index("Exit codes: "))]
    listed = re.findall(r"(?<![\w-])(\d+)\s[a-z]", sentence)
    assert listed == re.findall(r"^\| (\d+) \|", table, re.M)


def test_the_acp_agents_page_the_readme_links_for_logging_in_covers_every_preset():
    """The README's "log in" link for ACP agents lands on a row for each one."""
    import json

    with open(os.path.join(ROOT, "adapters", "acp", "manifest.json"), encoding="utf-8") as f:
        presets = json.load(f)["agents"]
    with open(os.path.join(ROOT, "docs", "ACP-AGENTS.md"), encoding="utf-8") as f:
        rows = {line.split("|")[1].strip().strip("`") for line in f if line.startswith("| `")}
    assert sorted(set(presets) - rows) == []


def acp_agent_rows() -> dict:
    """The install column of docs/ACP-AGENTS.md's table, by preset."""
    with open(os.path.join(ROOT, "docs", "ACP-AGENTS.md"), encoding="utf-8") as f:
        cells = [line.split("|") for line in f if line.startswith("| `")]
    return {cell[1].strip().strip("`"): cell[2] for cell in cells}


def test_the_acp_agents_page_names_the_node_each_npm_agent_needs():
    """An agent CI runs on a Node of its own (a recipe's NODE prefix, e.g. node22) says so in its row."""
    from acp_support.recipes import REACH, recipe

    rows = acp_agent_rows()
    floors = {name: recipe(name).NODE for name in REACH if recipe(name).NODE}
    assert floors, "no recipe runs on a Node of its own"
    for name, node in floors.items():
        assert "(Node ≥ %s." % node[len("node"):] in rows[name], (name, node)


def test_the_acp_agents_page_installs_every_python_312_agent_with_a_python_312():
    """pipx uses the Python it runs on; on 3.11 these agents' pinned versions do not install."""
    rows = acp_agent_rows()
    for name in ("fast-agent", "openhands", "kimi"):
        assert "pipx install --python python3.12 " in rows[name], name


# -- the rule recipes the docs teach (docs/PROTOCOL-POLICY.md section 17) --

RECIPE_RULE = re.compile(r"(?<!/permission )command:(npm (?:test|run lint)[^'\"`\]\\\n]*)")  # not a mock directive
# What "run the tests" and "run the lint" mean: with any arguments, and nothing that merely starts so.
INTENT = {"npm test": (["npm test", "npm test -- --watch"], ["npm testx", "npm run lint-and-deploy"]),
          "npm run lint": (["npm run lint", "npm run lint -- --fix"], ["npm run lint-and-deploy", "npm test"])}


@pytest.mark.parametrize("document", ["docs/RECIPES.md", "docs/MOCK.md", "docs/PROTOCOL-POLICY.md"])
def test_every_npm_rule_a_recipe_teaches_allows_what_it_means_and_no_more(document, tmp_path):
    from harnessctl.checks import policy

    rules = sorted(set(RECIPE_RULE.findall(text_of(document))))
    assert rules, document
    for pattern in rules:
        allowed, refused = INTENT[pattern.rstrip("* ")]
        binding = {"cwd": str(tmp_path), "mode": "ask", "rules": [["allow", "command:" + pattern], ["deny", "*"]]}
        for command, answer in [(c, "allow") for c in allowed] + [(c, "deny") for c in refused]:
            request = {"kind": "permission", "tool": "command", "command": command, "options": ["allow", "deny"]}
            assert (policy.decide(binding, request) or ("parked",))[0] == answer, (document, pattern, command)
