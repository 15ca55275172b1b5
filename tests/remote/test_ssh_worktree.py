"""A worktree per session over ssh:// (docs/PROTOCOL-COMMANDS.md section 25): `send --worktree`, `status`,
`diff`, `fork --worktree` and `prune` run on the remote machine with its git, against real sshd on the loopback
interface; the repository and the worktrees are on that machine (this one, read at their local paths)."""

from __future__ import annotations

import json
import os

import cliutil
import pytest
from cliutil import run, wait_for
from gitbed import git, new_repo
from ssh_support import address


@pytest.fixture
def repo(workdir):
    return new_repo(workdir / "repo", {"a.txt": "one\n"})


@pytest.fixture
def env(ssh_bed):
    """The remote runtimes stop a moment after their run: prune takes only stopped sessions."""
    return ssh_bed.env(cliutil.cli_env(HARNESSCTL_ADAPTER="mock", HARNESSCTL_IDLE_TIMEOUT="1"), cliutil.command())


def ok(*args, env):
    proc = run(*args, env=env)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr.decode())
    return proc


def remote_status(addr, env) -> dict:
    (line,) = ok("status", addr, env=env).stdout.decode().splitlines()
    return json.loads(line)


def session(workdir, repo, env, name="a.jsonl") -> str:
    addr = address("h1", str(workdir / name))
    ok("send", addr, "hi", "--worktree", "--cwd", str(repo), "--wait", env=env)
    return addr


def test_send_worktree_over_ssh_makes_the_worktree_there_and_status_counts_its_changes(workdir, repo, env):
    addr = session(workdir, repo, env)
    tree = remote_status(addr, env)["worktree"]
    assert tree["path"] == str(workdir / "repo.worktrees" / "a") and tree["branch"] == "harnessctl/a"
    (workdir / "repo.worktrees" / "a" / "new.txt").write_text("new\n")
    assert remote_status(addr, env)["worktree"]["changes"] == {"files": 1, "added": 1, "removed": 0}


def test_diff_over_ssh_prints_the_patch_exactly_as_it_is_there(workdir, repo, env):
    addr = session(workdir, repo, env)
    (workdir / "repo.worktrees" / "a" / "a.txt").write_bytes(b"one\n\x1b[31mred\x1b[0m\n")
    here = ok("diff", str(workdir / "a.jsonl"), env=env).stdout
    assert ok("diff", addr, env=env).stdout == here and b"\x1b[31m" in here


def test_fork_worktree_over_ssh_carries_the_sources_uncommitted_files(workdir, repo, env):
    addr = session(workdir, repo, env)
    (workdir / "repo.worktrees" / "a" / "new.txt").write_text("new\n")
    ok("fork", addr, address("h1", str(workdir / "b.jsonl")), "--worktree", env=env)
    assert (workdir / "repo.worktrees" / "b" / "new.txt").read_text() == "new\n"


def test_prune_over_ssh_removes_a_stopped_sessions_worktree_and_branch_there(workdir, repo, env):
    addr = session(workdir, repo, env)
    wait_for(lambda: remote_status(addr, env)["runtime"] == "stopped", 30, "the remote runtime's idle exit")
    (line,) = ok("prune", addr, "--json", "--dry-run", env=env).stdout.decode().splitlines()
    assert (json.loads(line)["file"], json.loads(line)["removed"][:2]) == (
        addr, ["worktree " + str(workdir / "repo.worktrees" / "a"), "branch harnessctl/a"])
    (line,) = ok("prune", addr, env=env).stdout.decode().splitlines()
    assert line.startswith("removed %s: worktree %s, branch harnessctl/a" % (addr, workdir / "repo.worktrees" / "a"))
    assert not os.path.exists(workdir / "repo.worktrees" / "a") and git(repo, "branch", "--format=%(refname)") \
        == "refs/heads/main\n"
