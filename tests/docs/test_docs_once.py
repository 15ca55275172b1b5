"""The docs say each thing once (issue 33): a table lives on one page, and a
figure (a number with its unit, about one subject) is the same wherever a page
repeats it.  Copies drift: two knobs tables, two exit-code tables and two lists
of the mock's directives had already come apart when this test was written.

Four checks, each over README.md, EVENT.md and docs/*.md (fenced code left out):

* Two tables on different pages with the same number of columns that share at
  least half the rows of the smaller one, by their first cell (`HARNESSCTL_TIMEOUT`,
  `7`, `/sleep S`), are one table written twice: keep it on the page that owns
  it and link there.
* Each figure of FIGURES has one value on every page that states it.
* Each pinned package (`name@1.2.3`, or `` `name` 1.2.3 `` in a table) has one
  version, also where a page names it by its last part (`codex 0.171.0`): the
  one `.ci/run` installs.
* No run of PROSE_RUN words is on two pages: a sentence said again elsewhere
  is a fact written twice (say it where it belongs, link there).
"""

from __future__ import annotations

import glob
import os
import re

import pytest
from cliutil import ROOT

FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
SEPARATOR = re.compile(r"^\|[\s:|-]+\|?\s*$")
CELL = re.compile(r"(?<!\\)\|")

# subject -> pattern whose first group that matched is the figure.  A new
# subject needs only a pattern that finds it where the pages state it.
FIGURES = {
    # from "CI", ".ci/run" or "a whole run" to "about N minutes" within one sentence (a "." before a
    # blank ends it; ".ci", "3.9" do not)
    "how long CI takes": r"(?:\bCI\b|\.ci/run|whole (?:CI )?run)(?:[^.]|\.(?=\S)){0,400}?about (\d+) minutes",
    "how many tests need a real agent": r"\b(\d+)(?: or so)?(?: tests)? (?:that )?needs? (?:a real agent|one)\b",
    "how many more ACP agents the reach tests run": r"\b(\w+) other ACP agents\b",
    "the Python floor": r"Python (3\.\d+) or newer|interpreter older than (3\.\d+)|Python (3\.\d+) floor",
    "the largest TEXT": r"\bTEXT\b[^.|]{0,90}?(\d+) MiB",
    "the largest schema": r"(?:schema|SCHEMA_FILE)[^.|]{0,100}?(\d+) KiB",
    "when runtime.log is rotated": r"generation\) whenever it would pass (\d+) MiB",
    "the longest harness stdout line": r"longer than (\d+) MiB is discarded",
    "how many runs log shows": r"last (\d+) runs",
    "how far back log looks": r"file's last (\d+) MiB",
    "the largest ACP file-system read": r"reads? over (\d+) MiB",
    "how many MCP calls run at once": r"at most (\d+)(?: calls run)? at once",
    "how many hooks run at once": r"at most (\d+) (?:hooks )?run at once|(\d+) were running",
    "how many hooks wait their turn": r"up to (\d+) more wait|(\d+) waiting\b",
    "how long lines wait for disk space": r"for at most (\d+) minutes",
    "how long log lines are buffered": r"buffered for up to ([\d.]+) s\b",
    "HARNESSCTL_IDLE_TIMEOUT's default": r"HARNESSCTL_IDLE_TIMEOUT`(?: seconds)?(?: \(default |, | \| )(\d+)",
    "HARNESSCTL_CANCEL_GRACE's default": r"HARNESSCTL_CANCEL_GRACE`(?: seconds)?(?: \(default |, | \| )(\d+)",
    "HARNESSCTL_TIMEOUT's default": r"HARNESSCTL_TIMEOUT`(?: seconds)?(?: \(default |, | \| )(\d+)",
    "HARNESSCTL_HOOK_TIMEOUT's default": r"HARNESSCTL_HOOK_TIMEOUT`(?: seconds)?(?: \(default |, | \| )(\d+)",
}
# a sentence's worth: shorter runs are the shared phrases of a vocabulary (`idle`, `running`, …)
PROSE_RUN = 12
# `name@1.2.3` or, in a table, `` `name` 1.2.3 ``; and a bare `name 1.2.3` in prose
PIN = re.compile(r"(@?[A-Za-z][\w./-]*)(?:@|` )(\d+\.\d+\.\d+)\b")
BARE = re.compile(r"(?<![\w@/.-])([A-Za-z][\w.-]*) (\d+\.\d+\.\d+)\b")


def pages():
    """{relative path: text without fenced code} of every markdown page."""
    names = ["README.md", "EVENT.md"] + sorted(
        os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    texts = {}
    for name in names:
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            texts[name] = FENCE.sub("", f.read())
    return texts


def normal(cell):
    return " ".join(cell.strip().lower().split())


def cells(line):
    return [normal(c) for c in CELL.split(line.strip().strip("|"))]


def tables(text):
    """[(line number, header cells, [first cell of each row])] of a markdown text."""
    found = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and SEPARATOR.match(lines[i + 1]):
            start, header, keys = i + 1, cells(lines[i]), []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                keys.append(cells(lines[i])[0])
                i += 1
            found.append((start, header, keys))
        else:
            i += 1
    return found


def copied_tables(texts):
    """Pairs of tables on different pages that are one table written twice."""
    every = [(page, line, header, keys) for page, text in texts.items() for line, header, keys in tables(text)]
    copies = []
    for n, (page, line, header, keys) in enumerate(every):
        for other, other_line, other_header, other_keys in every[n + 1:]:
            shared = set(keys) & set(other_keys)
            if (other != page and len(header) == len(other_header) and len(shared) >= 2
                    and 2 * len(shared) >= min(len(set(keys)), len(set(other_keys)))
                    and (header[0] == other_header[0] or 2 * len(shared) >= max(len(set(keys)), len(set(other_keys))))):
                copies.append("%s:%d and %s:%d (%s)" % (page, line, other, other_line, ", ".join(sorted(shared))))
    return copies


def figures(texts):
    """{subject: {value: [pages]}} of every figure of FIGURES the pages state."""
    seen = {}
    for subject, pattern in FIGURES.items():
        for page, text in texts.items():
            for m in re.finditer(pattern, " ".join(text.split()), re.I):
                value = next(g for g in m.groups() if g is not None)
                seen.setdefault(subject, {}).setdefault(value, []).append(page)
    return seen


def versions(texts):
    """{package: {version: [pages]}}: the pins, and bare mentions by a pin's last part."""
    seen = {}
    for page, text in texts.items():
        for name, version in PIN.findall(text):
            seen.setdefault(name, {}).setdefault(version, []).append(page)
    by_part = {}
    for name in seen:
        by_part.setdefault(name.rsplit("/", 1)[-1], []).append(name)
    for page, text in texts.items():
        for part, version in BARE.findall(" ".join(text.split())):
            names = by_part.get(part, [])
            if len(names) == 1:
                seen[names[0]].setdefault(version, []).append(page)
    return seen


def repeated_prose(texts, length=PROSE_RUN):
    """{run of `length` words: [pages]} of every run of words more than one page holds."""
    seen = {}
    for page, text in texts.items():
        words = re.findall(r"[\w`'/-]+(?:\.[\w`'/-]+)*", text.lower())  # "file.d" a word, a full stop not
        for i in range(len(words) - length + 1):
            pages_of = seen.setdefault(" ".join(words[i:i + length]), [])
            if page not in pages_of:
                pages_of.append(page)
    return {run: where for run, where in seen.items() if len(where) > 1}


def differing(seen):
    return {subject: values for subject, values in seen.items() if len(values) > 1}


# -- the docs ------------------------------------------------------------------


def test_no_table_is_on_two_pages():
    copies = copied_tables(pages())
    assert not copies, "tables written twice (keep one, link to it):\n" + "\n".join(copies)


def test_no_sentence_is_on_two_pages():
    repeated = repeated_prose(pages())
    assert not repeated, "said on two pages (keep one, link to it):\n" + "\n".join(
        "%s: %s" % (", ".join(where), run) for run, where in sorted(repeated.items()))


def test_every_figure_has_one_value_on_every_page():
    seen = figures(pages())
    assert not differing(seen), "one figure, several values:\n%s" % "\n".join(
        "%s: %s" % item for item in sorted(differing(seen).items()))
    assert sorted(seen) == sorted(FIGURES), "figures no page states (fix the pattern): %s" % (
        sorted(set(FIGURES) - set(seen)))


def test_every_pinned_package_has_one_version():
    seen = versions(pages())
    assert "@openai/codex" in seen and not differing(seen), differing(seen)


def test_every_pinned_package_is_at_the_version_ci_installs():
    path = os.path.join(ROOT, ".ci", "run")
    if not os.path.exists(path):
        pytest.skip(".ci/run is not in this checkout")
    with open(path, encoding="utf-8") as f:
        installed = dict(PIN.findall(f.read()))
    stated = {name: sorted(values) for name, values in versions(pages()).items() if name in installed}
    assert "@openai/codex" in stated and all(stated[name] == [installed[name]] for name in stated), (
        "the docs' versions %s, .ci/run's %s" % (stated, installed))


# -- the checks themselves -------------------------------------------------------


KNOBS_A = "| variable | default | meaning |\n|---|---|---|\n| `A` | 1 | a |\n| `B` | 2 | b |\n| `C` | 3 | c |\n"
KNOBS_B = "| name | default | what |\n|---|---|---|\n| `A` | 1 | a, said otherwise |\n| `C` | 4 | c |\n"


def test_a_table_copied_to_another_page_is_found_even_drifted_or_renamed():
    assert copied_tables({"one.md": KNOBS_A, "two.md": KNOBS_B}) == ["one.md:1 and two.md:1 (`a`, `c`)"]
    assert copied_tables({"one.md": KNOBS_A, "two.md": KNOBS_A.replace("`A`", "`D`").replace("`B`", "`E`")}) == []
    assert copied_tables({"one.md": KNOBS_A + "\n" + KNOBS_B}) == []  # one page may hold both


def test_a_table_with_other_columns_about_the_same_things_is_another_table():
    presets = "| preset | install |\n|---|---|\n| `A` | npm i a |\n| `B` | npm i b |\n"
    assert copied_tables({"one.md": KNOBS_A, "two.md": presets}) == []


def test_a_table_of_other_things_that_shares_a_few_names_is_another_table():
    types = "| type | what |\n|---|---|\n| `a` | x |\n| `b` | y |\n| `c` | z |\n"
    entries = "| entry | fields |\n|---|---|\n" + "".join("| `%s` | f |\n" % k for k in "abcdefgh")
    assert copied_tables({"one.md": types, "two.md": entries}) == []


def test_a_sentence_said_again_on_another_page_is_found_in_other_line_breaks_and_case():
    one = "The runtime answers every connection it accepted\nbefore it exits, however late.\n"
    two = "Note: the runtime answers every connection it accepted before it exits, however late!\n"
    assert repeated_prose({"one.md": one, "two.md": two}) == {
        "the runtime answers every connection it accepted before it exits however late": ["one.md", "two.md"]}
    assert repeated_prose({"one.md": one + one}) == {}  # one page may repeat itself
    assert repeated_prose({"one.md": one, "two.md": "The runtime answers every connection before it exits."}) == {}


def test_a_pipe_inside_a_cell_and_a_table_in_code_are_not_cells_or_tables():
    assert tables("| a | b |\n|---|---|\n| `x \\| y` | z |\n") == [(1, ["a", "b"], ["`x \\| y`"])]
    assert copied_tables({"one.md": KNOBS_A, "two.md": FENCE.sub("", "```\n" + KNOBS_A + "```\n")}) == []


@pytest.mark.parametrize("one, two", [
    ("A whole run takes about 37 minutes on two cores.", "A whole CI run takes about 21 minutes."),
    ("`bash .ci/run` lints, checks types and runs everything: about 21 minutes.",
     "`bash .ci/run` is what CI runs: it lints (pyproject.toml), and runs pytest (about 20 minutes on two cores)"),
    ("the 240 or so that need one skip", "About 250 tests need a real agent"),
    ("It needs Python 3.9 or newer.", "refuses an interpreter older than 3.8"),
    ("`HARNESSCTL_HOOK_TIMEOUT` seconds (default 30)", "| `HARNESSCTL_HOOK_TIMEOUT` | 60 | seconds |"),
])
def test_a_figure_that_differs_between_pages_is_found(one, two):
    assert len(differing(figures({"one.md": one, "two.md": two}))) == 1
    assert differing(figures({"one.md": one, "two.md": one})) == {}


def test_a_pin_that_differs_between_pages_is_found_also_by_its_last_part():
    pins = "tested with `@openai/codex@0.171.0`"
    assert differing(versions({"one.md": pins, "two.md": "| `@openai/codex` 0.172.0 |"}))
    assert differing(versions({"one.md": pins, "two.md": "codex 0.170.0 refuses it"}))
    assert differing(versions({"one.md": pins, "two.md": "codex 0.171.0 refuses it; codex-acp 2.6.0"})) == {}
