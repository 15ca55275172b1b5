"""Git for the tests of worktree sessions: git run with no user's settings
needed (a name, an email, the first branch's name), and a repository with
one commit of the files given."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Dict

GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main"]


def git(where, *args: str) -> str:
    """`git -C WHERE ARGS`, which must succeed: its output."""
    return subprocess.run(GIT + ["-C", str(where), *args], check=True, capture_output=True, text=True).stdout


def new_repo(path: Path, files: Dict[str, str]) -> Path:
    """A repository at `path` whose one commit holds `files` (name: text; a name may hold folders)."""
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q")
    git(path, "add", ".")
    git(path, "commit", "-qm", "first")
    return path
