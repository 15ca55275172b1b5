"""Every bash or sh block of README.md, EVENT.md and docs/*.md runs in CI, or says why not.

Each block is exactly one of:

a. run by another test that reads its section: RUN_BY names the test module of
   each (page, "## heading"), and that module's source must spell the heading,
   so the table cannot name a test that does not read the section;
b. marked with a line `# needs: REASON`, what a test machine lacks (a codex
   login, a Kubernetes cluster, machines to ssh to): still `bash -n` (`sh -n`)
   parses it, and every `harnessctl ...` command in it is held to the CLI's own
   grammar, harnessctl.arguments.parse;
c. run here, verbatim, by bash (an sh block by sh) on the mock: a scratch HOME
   with ~/repo and ~/agent, `harnessctl` on PATH, HARNESSCTL_ADAPTER=mock, in a
   copy of the checkout (what a block writes lands nowhere real); every command
   of it must succeed (-e); the runtimes it leaves are reaped (conftest's workdir).
   A `# mock:` line says how it runs on the mock, as in docs/RECIPES.md.

Each block is a test case named page:line, the line of its opening fence."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from typing import List, NamedTuple, Optional

import pytest
import readme
from cliutil import ROOT, cli_env, copy_checkout, launcher

from harnessctl import arguments
from harnessctl.errors import UsageError

# (page, "## heading") -> the test module that runs that section's blocks
RUN_BY = {
    ("README.md", "## Install"): "tests/install/test_install.py",
    ("README.md", "## Try it: no model, no network"): "tests/install/test_install.py",
    ("docs/RECIPES.md", "## Answers a script can use"): "tests/docs/test_readme.py",
    ("docs/RECIPES.md", "## Approvals"): "tests/docs/test_readme.py",
    ("docs/RECIPES.md", "## Watching and steering"): "tests/docs/test_readme.py",
    ("docs/RECIPES.md", "## Unattended: cron, budgets and hooks"): "tests/docs/test_readme.py",
    ("README.md", "## Development"): "tests/install/test_install.py",
    ("docs/FLEET.md", "## Slurm"): "tests/fleet/test_fleet_slurm.py",
}
PAGES = ["README.md", "EVENT.md"] + sorted("docs/" + name for name in os.listdir(os.path.join(ROOT, "docs"))
                                           if name.endswith(".md"))
NEEDS = re.compile(r"^# needs: (\S.*)$", re.M)
OPERATOR = set("();<>|&")  # shlex's punctuation_chars: a token made of them ends a command
STARTS = ("--", "if", "then", "elif", "else", "do", "!")  # after these, a word is a command (kubectl exec ... --)


class Block(NamedTuple):
    page: str
    line: int  # of the opening fence
    heading: Optional[str]  # the `## ` heading it is under
    language: str
    code: str


def shell_blocks() -> List[Block]:
    """The bash and sh blocks of every page, in order."""
    found = []
    for page in PAGES:
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            text = f.read()
        fences = list(readme.FENCE.finditer(text))
        headings = [m for m in re.finditer(r"^## .*$", text, re.M)
                    if not any(fence.start() < m.start() < fence.end() for fence in fences)]
        for fence in fences:
            if fence.group(1) in ("bash", "sh"):
                above = [h.group() for h in headings if h.start() < fence.start()]
                found.append(Block(page, text.count("\n", 0, fence.start()) + 1, above[-1] if above else None,
                                   fence.group(1), fence.group(2)))
    return found


BLOCKS = shell_blocks()


def name(block: Block) -> str:
    return "%s:%d" % (block.page, block.line)


def run_by(block: Block) -> Optional[str]:
    return RUN_BY.get((block.page, block.heading))


def is_operator(word: str) -> bool:
    return word != "" and set(word) <= OPERATOR


def harnessctl_commands(code: str) -> List[List[str]]:
    """The argv after `harnessctl` of each command in shell code that runs it: the
    words up to the first operator or comment, as shlex splits them (a backslash-
    continued line joined first, each line on its own; "$F" stays a word)."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
        for i, word in enumerate(words):
            before = words[i - 1] if i else ";"
            if ((word == "harnessctl" or word.endswith("/harnessctl"))
                    and (is_operator(before) or before in STARTS or re.match(r"\w+=", before))):
                argv = []
                for arg in words[i + 1:]:
                    if is_operator(arg):
                        break
                    argv.append(arg)
                commands.append(argv)
    return commands


def grammar_errors(code: str) -> List[str]:
    """What the CLI's parser says of each `harnessctl` command in the code that it refuses."""
    errors = []
    for argv in harnessctl_commands(code):
        try:
            arguments.parse(argv)
        except UsageError as exc:
            errors.append("harnessctl %s: %s" % (shlex.join(argv), exc))
    return errors


def test_harnessctl_commands_are_the_words_after_harnessctl_up_to_an_operator_or_a_comment():
    code = ('claude mcp add harnessctl -- harnessctl mcp --root ~/agent   # Claude Code\n'
            'id=$(harnessctl status "$F" | jq .) && kubectl exec j -- harnessctl reply $F req-1 \\\n  allow\n'
            'echo harnessctl; ~/.harness/codex/harnessctl --version >/dev/null')
    assert harnessctl_commands(code) == [["mcp", "--root", "~/agent"], ["status", "$F"],
                                         ["reply", "$F", "req-1", "allow"], ["--version"]]


def test_grammar_errors_name_a_command_the_cli_refuses_and_pass_a_good_one():
    assert grammar_errors('harnessctl send f.jsonl "hi" --wait --timeout 60') == []
    assert len(grammar_errors("harnessctl send f.jsonl hi --wiat\nharnessctl sned f.jsonl hi")) == 2


@pytest.mark.parametrize("page, heading", sorted(RUN_BY))
def test_run_by_names_a_test_that_reads_the_section_and_a_section_with_a_shell_block(page, heading):
    with open(os.path.join(ROOT, RUN_BY[page, heading]), encoding="utf-8") as f:
        assert heading in f.read(), "%s does not read %s of %s" % (RUN_BY[page, heading], heading, page)
    assert any(block.page == page and block.heading == heading for block in BLOCKS), (page, heading)


@pytest.mark.parametrize("block", BLOCKS, ids=name)
def test_block_falls_under_exactly_one_rule(block):
    marks = re.findall(r"^\s*#\s*needs\b.*$", block.code, re.M)
    assert len(marks) <= 1 and len(NEEDS.findall(block.code)) == len(marks), "one `# needs: REASON` at most: %s" % marks
    if marks:
        assert run_by(block) is None, "marked `# needs:` yet run by %s" % run_by(block)
        assert not readme.MOCK.search(block.code), "marked `# needs:` yet says how to run on the mock"


@pytest.mark.parametrize("block", [block for block in BLOCKS if NEEDS.search(block.code)], ids=name)
def test_block_marked_needs_parses_and_its_harnessctl_commands_hold_to_the_grammar(block):
    parsed = subprocess.run([block.language, "-n"], input=block.code.encode(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert parsed.returncode == 0, parsed.stderr.decode()
    assert grammar_errors(block.code) == []


@pytest.mark.parametrize("block", [block for block in BLOCKS if not NEEDS.search(block.code) and not run_by(block)],
                         ids=name)
def test_block_runs_as_written_on_the_mock(block, workdir):
    if re.search(r"\bjq\b", block.code) and shutil.which("jq") is None:
        pytest.skip("the block uses jq, which is not installed")
    home, bin_dir = workdir / "home", workdir / "bin"
    for folder in (home / "repo", home / "agent", bin_dir):
        folder.mkdir(parents=True)
    launcher(bin_dir)
    path = os.pathsep.join((str(bin_dir), os.path.dirname(sys.executable), os.environ["PATH"]))  # python3: ours
    env = cli_env(HARNESSCTL_ADAPTER="mock", HOME=str(home), PATH=path)
    code = readme.on_the_mock(block.code) if readme.MOCK.search(block.code) else block.code
    proc = subprocess.run([block.language, "-e", "-c", code], cwd=str(copy_checkout(workdir)), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert proc.returncode == 0, (proc.stdout.decode()[-2000:], proc.stderr.decode()[-2000:])
