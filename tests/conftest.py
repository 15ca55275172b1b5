"""Shared fixtures.  Every test gets its own directory, and every process a
test started under it (runtimes, harnesses) is killed when the test ends."""

from __future__ import annotations

import os

import cliutil  # tests/ is on sys.path: pyproject.toml's pythonpath
import pytest


@pytest.fixture(scope="session", autouse=True)
def state_dir(tmp_path_factory):
    """One state directory (binding records, seal key) for the whole session,
    not the user's: a record a deleted test file left can never judge a file
    of another run or another session's tests that got its inode number.  The
    tests' own in-process calls (trusted.record, seals) use it too."""
    path = str(tmp_path_factory.mktemp("harnessctl-state"))
    old = os.environ.get("HARNESSCTL_STATE_DIR")
    os.environ["HARNESSCTL_STATE_DIR"] = path
    yield path
    if old is None:
        del os.environ["HARNESSCTL_STATE_DIR"]
    else:
        os.environ["HARNESSCTL_STATE_DIR"] = old


@pytest.fixture
def workdir(tmp_path):
    """A fresh directory for event files; its processes are reaped afterwards."""
    yield tmp_path
    cliutil.kill_all_under(str(tmp_path))


@pytest.fixture
def efile(workdir):
    """The path of a not-yet-existing event file."""
    return str(workdir / "events.jsonl")
