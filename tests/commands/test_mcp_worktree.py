"""The MCP send and fork tools' `worktree` (docs/PROTOCOL-MCP.md section 21): what `send --worktree` and
`fork --worktree` do, with the worktree's folder held to the allowed roots like every path a call names."""

from __future__ import annotations

import os

import pytest
from gitbed import new_repo
from mcp_support.client import Client, structured


@pytest.fixture
def repo(workdir):
    return new_repo(workdir / "repo", {"a.txt": "one\n"})


def test_send_with_worktree_binds_the_session_to_a_worktree_of_its_own(mcp, workdir, repo):
    file = str(workdir / "a.jsonl")
    structured(mcp.tool("send", file=file, text="hi", adapter="mock", cwd=str(repo), worktree=True, wait=True))
    (found,) = structured(mcp.tool("status", files=[file]))["statuses"]
    assert found["worktree"]["path"] == found["cwd"] == str(workdir / "repo.worktrees" / "a")
    assert found["worktree"]["changes"] == {"files": 0, "added": 0, "removed": 0}


def test_fork_with_worktree_gives_the_fork_the_sources_files_as_they_are(mcp, workdir, repo):
    file, new = str(workdir / "a.jsonl"), str(workdir / "b.jsonl")
    structured(mcp.tool("send", file=file, text="hi", adapter="mock", cwd=str(repo), worktree=True, wait=True))
    (workdir / "repo.worktrees" / "a" / "new.txt").write_text("new\n")
    structured(mcp.tool("fork", file=file, new_file=new, worktree=True))
    assert (workdir / "repo.worktrees" / "b" / "new.txt").read_text() == "new\n"


def test_a_worktree_that_would_lie_outside_the_roots_is_refused_and_not_made(workdir, repo):
    client = Client("--root", str(repo), cwd=str(repo))  # the worktrees go beside the repository: outside
    client.initialize()
    try:
        result = client.tool("send", file=str(repo / "a.jsonl"), text="hi", adapter="mock", cwd=str(repo),
                             worktree=True)
    finally:
        client.stop()
    assert result["isError"] is True and "refusing worktree" in result["structuredContent"]["error"]
    assert not os.path.exists(workdir / "repo.worktrees") and not os.path.exists(repo / "a.jsonl")
