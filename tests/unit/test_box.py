"""The box's ruleset (harnessctl/box.py) entered by a child process: what it
may read and write, symlinks and folders on the way down to a denied path,
and the manifest's declared folders."""

from __future__ import annotations

import os
import subprocess

import pytest

from harnessctl import box, landlock
from harnessctl.errors import UsageError

pytestmark = pytest.mark.skipif(landlock.why_not() is not None, reason=str(landlock.why_not()))


@pytest.fixture
def layout(tmp_path, monkeypatch):
    """home/ holding the state folder (with its key), a project, runs/ with an event file."""
    home = tmp_path / "home"
    state = home / ".local" / "state" / "harnessctl"
    state.mkdir(parents=True)
    (state / "key").write_text("secret")
    (home / "project").mkdir()
    (home / "notes.txt").write_text("notes")
    (home / "runs").mkdir()
    (home / "runs" / "fix.jsonl").write_text("{}\n")
    (home / "runs" / "fix.jsonl.d").mkdir()
    monkeypatch.setenv("HARNESSCTL_STATE_DIR", str(state))
    return home


def boxed(home, *argv, writes=(), agent_writes=()):
    """Run argv in the box of runs/fix.jsonl bound to project/: its exit code."""
    made = box.Box(str(home / "runs" / "fix.jsonl"), str(home / "project"), writes, agent_writes)
    ruleset = made.ruleset()
    try:
        return subprocess.run(list(argv), cwd=str(home / "project"), preexec_fn=ruleset.enter_fn(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    finally:
        ruleset.close()


def test_the_box_reads_a_file_beside_the_way_down_to_the_state_folder(layout):
    assert boxed(layout, "cat", str(layout / "notes.txt")) == 0


def test_the_box_reads_no_file_of_the_state_folder(layout):
    assert boxed(layout, "cat", str(layout / ".local" / "state" / "harnessctl" / "key")) != 0


def test_a_symlink_beside_the_way_down_does_not_open_the_state_folder(layout):
    os.symlink(str(layout / ".local" / "state" / "harnessctl"), str(layout / "shortcut"))
    assert boxed(layout, "cat", str(layout / "shortcut" / "key")) != 0


def test_a_symlink_to_a_folder_above_the_state_folder_does_not_open_it(layout):
    os.symlink(str(layout / ".local"), str(layout / "dotlocal"))
    assert boxed(layout, "cat", str(layout / "dotlocal" / "state" / "harnessctl" / "key")) != 0


def test_the_box_writes_in_the_cwd_and_not_beside_it(layout):
    assert boxed(layout, "touch", str(layout / "project" / "made")) == 0
    assert boxed(layout, "touch", str(layout / "made")) != 0
    assert not (layout / "made").exists()


def test_a_sandbox_write_folder_is_writable(layout, tmp_path):
    extra = tmp_path / "cache"
    extra.mkdir()
    assert boxed(layout, "touch", str(extra / "made"), writes=[str(extra)]) == 0


def test_a_sandbox_write_folder_inside_the_state_folder_is_refused(layout):
    inside = layout / ".local" / "state" / "harnessctl" / "sessions"
    inside.mkdir()
    with pytest.raises(UsageError, match="lies inside"):
        box.Box(str(layout / "runs" / "fix.jsonl"), str(layout / "project"), [str(inside)], []).check()


def test_a_cwd_holding_the_state_folder_is_refused(layout):
    with pytest.raises(UsageError, match="holds"):
        box.Box(str(layout / "runs" / "fix.jsonl"), str(layout), [], []).check()


def test_a_file_made_beside_the_way_down_after_the_box_was_made_cannot_be_read(layout):
    made = box.Box(str(layout / "runs" / "fix.jsonl"), str(layout / "project"), [], [])
    ruleset = made.ruleset()
    (layout / "later.txt").write_text("later")
    try:
        code = subprocess.run(["cat", str(layout / "later.txt")], preexec_fn=ruleset.enter_fn(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    finally:
        ruleset.close()
    assert code != 0


def test_declared_folders_expand_home_and_variables_and_skip_an_unset_one():
    manifest = {"harness": {"sandbox_writes": ["$CODEX_HOME", "~/.codex/", "$UNSET_ONE"]},
                "agents": {"claude": {"sandbox_writes": ["~/.claude.json"]}}}
    env = {"HOME": "/home/me", "CODEX_HOME": "/srv/codex"}
    assert box.declared(manifest, "claude", env) == ["/srv/codex/", "/home/me/.codex/", "/home/me/.claude.json"]


def test_a_declared_folder_that_is_missing_is_made_and_writable(layout):
    declared = str(layout / ".agent") + "/"
    assert boxed(layout, "touch", str(layout / ".agent" / "state"), agent_writes=[declared]) == 0
    assert oct(os.stat(declared).st_mode & 0o777) == "0o700"
