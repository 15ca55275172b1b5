"""Shared fixtures.  Every test gets its own directory, and every process a
test started under it (runtimes, harnesses) is killed when the test ends."""

from __future__ import annotations

import cliutil  # tests/ is on sys.path: pyproject.toml's pythonpath
import pytest


@pytest.fixture
def workdir(tmp_path):
    """A fresh directory for event files; its processes are reaped afterwards."""
    yield tmp_path
    cliutil.kill_all_under(str(tmp_path))


@pytest.fixture
def efile(workdir):
    """The path of a not-yet-existing event file."""
    return str(workdir / "events.jsonl")
