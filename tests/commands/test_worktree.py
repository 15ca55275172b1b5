"""A git worktree per session (docs/PROTOCOL-COMMANDS.md section 25): `send
--worktree` and `fork --worktree` give a session its own worktree and branch,
`status` and `diff` show what it changed, and `prune` removes what stopped
sessions leave, never a live one's nor work a person may want.  Real git
repositories (Debian's git); the mock adapter stands in for the agent, and the
test edits the worktree as an agent would."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

import pytest
from cliutil import ROOT, cli_env, events, ok, run, status, wait_for
from gitbed import git, new_repo

from harnessctl import landlock


@pytest.fixture
def repo(workdir):
    """A repository with one commit: a.txt, and a folder sub/ with b.txt."""
    return new_repo(workdir / "repo", {"a.txt": "one\n", "sub/b.txt": "two\n"})


@pytest.fixture
def env():
    """Sessions that stop a moment after their run (prune takes only stopped ones)."""
    return cli_env(HARNESSCTL_ADAPTER="mock", HARNESSCTL_IDLE_TIMEOUT="1")


def new_session(workdir, repo, name, env, *flags: str, cwd=None) -> dict:
    """A --worktree session with one finished run: its status."""
    path = str(workdir / name)
    ok("send", path, "hi", "--worktree", "--cwd", str(cwd or repo), "--wait", *flags, env=env)
    return status(path, env)


def stopped(path, env) -> dict:
    return wait_for(lambda: (lambda found: found["runtime"] == "stopped" and found)(status(path, env)),
                    30, "the runtime's idle exit")


def branches(repo) -> list:
    return git(repo, "branch", "--format=%(refname:short)").split()


def test_three_sessions_on_one_repository_each_keep_their_own_edit(workdir, repo, env):
    trees = [new_session(workdir, repo, name + ".jsonl", env)["worktree"] for name in "abc"]
    for tree, text in zip(trees, ("alpha\n", "beta\n", "gamma\n")):
        with open(os.path.join(tree["path"], "a.txt"), "w") as f:
            f.write(text)
    assert [open(os.path.join(tree["path"], "a.txt")).read() for tree in trees] == ["alpha\n", "beta\n", "gamma\n"]
    assert (repo / "a.txt").read_text() == "one\n"
    assert [tree["branch"] for tree in trees] == ["harnessctl/a", "harnessctl/b", "harnessctl/c"]
    assert set(branches(repo)) == {"main", "harnessctl/a", "harnessctl/b", "harnessctl/c"}


def test_the_worktree_lies_beside_the_repository_and_starts_at_its_head(workdir, repo, env):
    found = new_session(workdir, repo, "a.jsonl", env)
    assert found["worktree"]["path"] == str(workdir / "repo.worktrees" / "a")
    assert found["cwd"] == found["worktree"]["path"]
    assert found["worktree"]["base"] == git(repo, "rev-parse", "HEAD").strip()


def test_harnessctl_worktrees_names_the_folder_the_worktrees_go_into(workdir, repo):
    env = cli_env(HARNESSCTL_ADAPTER="mock", HARNESSCTL_WORKTREES=str(workdir / "trees"))
    assert new_session(workdir, repo, "a.jsonl", env)["worktree"]["path"] == str(workdir / "trees" / "a")


def test_a_session_asked_to_work_in_a_folder_of_the_repository_works_in_that_folder_of_its_worktree(
        workdir, repo, env):
    found = new_session(workdir, repo, "a.jsonl", env, cwd=repo / "sub")
    assert found["cwd"] == os.path.join(found["worktree"]["path"], "sub")


def test_a_later_send_that_repeats_the_first_sends_flags_keeps_the_worktree(workdir, repo, env):
    first = new_session(workdir, repo, "a.jsonl", env)
    ok("send", str(workdir / "a.jsonl"), "again", "--worktree", "--cwd", str(repo), "--wait", env=env)
    assert status(str(workdir / "a.jsonl"), env)["worktree"]["path"] == first["worktree"]["path"]


@pytest.mark.parametrize("case", ["not a repository", "bare", "no commit", "branch taken", "git missing"])
def test_a_worktree_that_cannot_be_made_is_one_line_exit_2_and_nothing_is_made(workdir, repo, env, case):
    cwd = repo
    if case == "not a repository":
        cwd = workdir / "plain"
        cwd.mkdir()
    elif case == "bare":
        cwd = workdir / "bare.git"
        git(workdir, "clone", "-q", "--bare", str(repo), str(cwd))
    elif case == "no commit":
        cwd = workdir / "empty"
        git(workdir, "init", "-q", str(cwd))
    elif case == "branch taken":
        git(repo, "branch", "harnessctl/a")
    elif case == "git missing":
        (workdir / "bin").mkdir()
        env = dict(env, PATH=str(workdir / "bin"))
    before = sorted(os.listdir(workdir))
    proc = run("send", str(workdir / "a.jsonl"), "hi", "--worktree", "--cwd", str(cwd), env=env)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.decode().strip().splitlines()) == 1
    assert sorted(os.listdir(workdir)) == before  # no event file, no sidecar, no worktree folder


def edit(tree: dict) -> None:
    """An agent's work: a.txt changed, sub/b.txt deleted, new.txt and a binary file made."""
    path = tree["path"]
    with open(os.path.join(path, "a.txt"), "a") as f:
        f.write("more\n")
    os.unlink(os.path.join(path, "sub", "b.txt"))
    with open(os.path.join(path, "new.txt"), "w") as f:
        f.write("new\nfile\n")
    with open(os.path.join(path, "blob.bin"), "wb") as f:
        f.write(bytes(range(256)))


def test_status_counts_the_changes_uncommitted_and_untracked_included(workdir, repo, env):
    tree = new_session(workdir, repo, "a.jsonl", env)["worktree"]
    assert tree["changes"] == {"files": 0, "added": 0, "removed": 0}
    edit(tree)
    assert status(str(workdir / "a.jsonl"), env)["worktree"]["changes"] == {"files": 4, "added": 3, "removed": 1}


def test_status_of_a_folder_counts_each_worktree_sessions_own_changes_on_its_own_line(workdir, repo, env):
    """The counts are made side by side (commands.file_statuses): each still lands on its own session's line."""
    for name, count in (("a", 3), ("b", 0), ("c", 1)):
        tree = new_session(workdir, repo, name + ".jsonl", env)["worktree"]
        for i in range(count):
            with open(os.path.join(tree["path"], "new-%d.txt" % i), "w") as f:
                f.write("x\n")
    ok("send", str(workdir / "d.jsonl"), "hi", "--cwd", str(repo), "--wait", env=env)
    lines = [json.loads(line) for line in ok("status", str(workdir) + "/", env=env).stdout.splitlines()]
    assert [(os.path.basename(line["file"]), (line.get("worktree") or {}).get("changes")) for line in lines] == [
        ("a.jsonl", {"files": 3, "added": 3, "removed": 0}), ("b.jsonl", {"files": 0, "added": 0, "removed": 0}),
        ("c.jsonl", {"files": 1, "added": 1, "removed": 0}), ("d.jsonl", None)]


def test_wait_ends_with_the_status_line_changes_counted(workdir, repo, env):
    tree = new_session(workdir, repo, "a.jsonl", env)["worktree"]
    (workdir / "repo.worktrees" / "a" / "c.txt").write_text("c\n")
    for words in (["wait"], ["wait", "--any"]):
        line = json.loads(ok(*words, str(workdir / "a.jsonl"), env=env).stdout)
        assert (line["worktree"]["path"], line["worktree"]["changes"]) == (tree["path"], {"files": 1, "added": 1,
                                                                                           "removed": 0}), words


def test_status_counts_what_the_session_committed_on_its_branch(workdir, repo, env):
    tree = new_session(workdir, repo, "a.jsonl", env)["worktree"]
    (workdir / "repo.worktrees" / "a" / "c.txt").write_text("c\n")
    git(tree["path"], "add", "c.txt")
    git(tree["path"], "commit", "-qm", "c")
    assert status(str(workdir / "a.jsonl"), env)["worktree"]["changes"] == {"files": 1, "added": 1, "removed": 0}


def test_diff_prints_a_patch_that_git_apply_takes_on_a_clean_checkout_of_the_base(workdir, repo, env):
    tree = new_session(workdir, repo, "a.jsonl", env)["worktree"]
    edit(tree)
    patch = ok("diff", str(workdir / "a.jsonl"), env=env).stdout
    clean = workdir / "clean"
    git(workdir, "clone", "-q", str(repo), str(clean))
    subprocess.run(["git", "-C", str(clean), "apply", "--binary", "-"], input=patch, check=True)
    for name in ("a.txt", "new.txt", "blob.bin"):
        assert (clean / name).read_bytes() == open(os.path.join(tree["path"], name), "rb").read()
    assert not (clean / "sub" / "b.txt").exists()


def test_diff_of_a_session_without_a_worktree_exits_2(workdir, repo, env):
    path = str(workdir / "a.jsonl")
    ok("send", path, "hi", "--cwd", str(repo), "--wait", env=env)
    proc = run("diff", path, env=env)
    assert proc.returncode == 2 and b"no worktree" in proc.stderr


def test_a_fork_with_a_worktree_starts_with_the_sources_files_as_they_are_now(workdir, repo, env):
    tree = new_session(workdir, repo, "a.jsonl", env)["worktree"]
    edit(tree)
    before = git(tree["path"], "status", "--porcelain")
    ok("fork", str(workdir / "a.jsonl"), str(workdir / "b.jsonl"), "--worktree", env=env)
    forked = status(str(workdir / "b.jsonl"), env)["worktree"]
    assert forked["branch"] == "harnessctl/b" and forked["base"] == tree["base"]
    for name in ("a.txt", "new.txt", "blob.bin"):
        assert open(os.path.join(forked["path"], name), "rb").read() == open(os.path.join(tree["path"], name),
                                                                             "rb").read()
    assert not os.path.exists(os.path.join(forked["path"], "sub", "b.txt"))
    assert git(tree["path"], "status", "--porcelain") == before
    assert forked["changes"] == {"files": 4, "added": 3, "removed": 1}


def test_a_fork_takes_a_worktree_or_a_cwd_not_both(workdir, repo, env):
    new_session(workdir, repo, "a.jsonl", env)
    proc = run("fork", str(workdir / "a.jsonl"), str(workdir / "b.jsonl"), "--worktree", "--cwd", str(repo), env=env)
    assert proc.returncode == 2 and not (workdir / "b.jsonl").exists()


# -- prune ---------------------------------------------------------------------------------------------------


def record_count(path: str) -> int:
    """How many records of the state folder name the event file `path`."""
    folder = os.path.join(os.environ["HARNESSCTL_STATE_DIR"], "sessions")
    found = 0
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as f:
            found += json.load(f).get("path") == os.path.realpath(path)
    return found


def pruned(*args: str, env, code: int = 0) -> list:
    proc = run("prune", *args, "--json", env=env)
    assert proc.returncode == code, proc.stderr
    return [json.loads(line) for line in proc.stdout.decode().splitlines()]


def test_prune_removes_a_stopped_sessions_sidecar_records_worktree_and_branch(workdir, repo, env):
    path = str(workdir / "a.jsonl")
    tree = new_session(workdir, repo, "a.jsonl", env)["worktree"]
    stopped(path, env)
    found = pruned(str(workdir) + "/", env=env)
    assert found == [{"file": path, "removed": ["worktree " + tree["path"], "branch harnessctl/a", "sidecar",
                                                "records"], "dry_run": False}]
    assert not os.path.exists(tree["path"]) and not os.path.exists(path + ".d") and record_count(path) == 0
    assert branches(repo) == ["main"] and os.path.exists(path)


def test_prune_dry_run_removes_nothing_and_says_what_it_would(workdir, repo, env):
    path = str(workdir / "a.jsonl")
    tree = new_session(workdir, repo, "a.jsonl", env)["worktree"]
    stopped(path, env)
    assert pruned(path, "--dry-run", env=env)[0]["removed"] == ["worktree " + tree["path"], "branch harnessctl/a",
                                                                "sidecar", "records"]
    assert os.path.exists(tree["path"]) and os.path.exists(path + ".d") and record_count(path) > 0
    assert "harnessctl/a" in branches(repo)


def test_prune_events_removes_the_event_file_too(workdir, repo, env):
    path = str(workdir / "a.jsonl")
    new_session(workdir, repo, "a.jsonl", env)
    stopped(path, env)
    assert "events" in pruned(path, "--events", env=env)[0]["removed"]
    assert not os.path.exists(path)


@pytest.mark.parametrize("work", ["uncommitted", "unmerged"])
def test_prune_keeps_a_session_whose_worktree_holds_work_unless_forced(workdir, repo, env, work):
    path = str(workdir / "a.jsonl")
    tree = new_session(workdir, repo, "a.jsonl", env)["worktree"]
    (workdir / "repo.worktrees" / "a" / "c.txt").write_text("c\n")
    if work == "unmerged":
        git(tree["path"], "add", "c.txt")
        git(tree["path"], "commit", "-qm", "c")
    stopped(path, env)
    kept = pruned(path, env=env, code=3)
    assert kept[0]["refused"] is True and kept[0]["removed"] == []
    assert os.path.exists(tree["path"]) and os.path.exists(path + ".d") and record_count(path) > 0
    assert pruned(path, "--force", env=env)[0]["removed"][:2] == ["worktree " + tree["path"], "branch harnessctl/a"]
    assert not os.path.exists(tree["path"]) and branches(repo) == ["main"]


def test_prune_leaves_a_live_session_alone(workdir, repo):
    env = cli_env(HARNESSCTL_ADAPTER="mock")  # the runtime stays for minutes
    path = str(workdir / "a.jsonl")
    tree = new_session(workdir, repo, "a.jsonl", env)["worktree"]
    found = pruned(path, "--force", env=env)
    assert found[0]["removed"] == [] and "live" in found[0]["kept"] and found[0]["refused"] is False
    assert os.path.exists(tree["path"]) and status(path, env)["runtime"] == "alive"


def test_prune_never_touches_a_file_harnessctl_did_not_bind(workdir, env):
    foreign = workdir / "notes.jsonl"
    foreign.write_text('{"type":"log"}\n')
    (workdir / "notes.jsonl.d").mkdir()
    found = pruned(str(workdir) + "/", "--events", "--force", env=env)
    assert found[0]["removed"] == [] and "no record" in found[0]["kept"]
    assert foreign.exists() and (workdir / "notes.jsonl.d").exists()


def test_prune_of_a_folder_drops_the_records_and_worktrees_of_event_files_gone_from_it(workdir, repo, env):
    path = str(workdir / "a.jsonl")
    tree = new_session(workdir, repo, "a.jsonl", env)["worktree"]
    stopped(path, env)
    os.unlink(path)
    found = pruned(str(workdir) + "/", env=env)
    assert found == [{"file": path, "removed": ["worktree " + tree["path"], "branch harnessctl/a", "records"],
                      "dry_run": False}]
    assert record_count(path) == 0 and not os.path.exists(tree["path"])


def test_prune_older_than_keeps_a_session_that_changed_since(workdir, repo, env):
    path = str(workdir / "a.jsonl")
    new_session(workdir, repo, "a.jsonl", env)
    stopped(path, env)
    assert "older-than" in pruned(path, "--older-than", "7d", env=env)[0]["kept"]
    assert os.path.exists(path + ".d")


def test_prune_older_than_refuses_a_duration_it_cannot_read(workdir, env):
    proc = run("prune", str(workdir), "--older-than", "soon", env=env)
    assert proc.returncode == 2 and b"--older-than" in proc.stderr


def test_a_pruned_file_stays_a_log_that_no_send_continues(workdir, repo, env):
    path = str(workdir / "a.jsonl")
    new_session(workdir, repo, "a.jsonl", env)
    stopped(path, env)
    pruned(path, env=env)
    assert b"echo: hi" in ok("log", path, env=env).stdout
    assert run("send", path, "more", env=env).returncode == 2


# -- in a box ------------------------------------------------------------------------------------------------

FAKE = os.path.join(ROOT, "tests", "support", "acp_support", "fake_agent.py")


def boxed_tool(path: str, repo, line: str) -> dict:
    """What the fake ACP agent, boxed in a worktree session of `repo`, got when it ran `line`: its tool's end."""
    ok("send", path, "/tool " + line, "--adapter", "acp", "--agent", shlex.quote(FAKE), "--cwd", str(repo),
       "--worktree", "--sandbox", "--wait", "--timeout", "60")
    return [e for e in events(path) if e.get("kind") == "tool.completed"][-1]


@pytest.mark.skipif(landlock.why_not() is not None, reason=str(landlock.why_not()))
def test_a_boxed_session_commits_on_its_branch_but_changes_no_config_hook_or_other_branch(workdir, repo):
    path = str(workdir / "a.jsonl")
    commit = "git -c user.email=t@example.com -c user.name=t commit --allow-empty -qm boxed"
    assert boxed_tool(path, repo, commit)["exit_code"] == 0
    assert git(repo, "log", "-1", "--format=%s", "harnessctl/a").strip() == "boxed"
    main = git(repo, "rev-parse", "main")
    for attack in ("git config user.name evil", "git update-ref refs/heads/main HEAD",
                   "cp /bin/true %s" % (repo / ".git" / "hooks" / "pre-commit")):
        assert boxed_tool(path, repo, attack)["exit_code"] != 0, attack
    assert git(repo, "rev-parse", "main") == main and not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert subprocess.run(["git", "-C", str(repo), "config", "--local", "user.name"], capture_output=True).stdout == b""
