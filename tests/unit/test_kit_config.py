"""What `Config` offers an adapter of the session's own files (docs/ADAPTERS.md,
section 3): the adapters use these instead of rebuilding the sidecar's names
or reaching into policy, private and trusted themselves."""

from __future__ import annotations

import os

import pytest

from harnessctl.kit import Config, UsageError


def config(tmp_path, mode=None):
    (tmp_path / "cwd").mkdir(exist_ok=True)
    (tmp_path / "e.jsonl.d").mkdir(exist_ok=True)
    return Config(str(tmp_path / "cwd"), None, str(tmp_path / "e.jsonl.d"), {}, False, mode=mode)


def test_own_files_are_the_event_file_and_its_sidecar(tmp_path):
    assert config(tmp_path).own_files == (str(tmp_path / "e.jsonl"), str(tmp_path / "e.jsonl.d"))


def test_a_sidecar_file_is_named_in_the_sidecar(tmp_path):
    assert config(tmp_path).sidecar_file("runtime.log") == str(tmp_path / "e.jsonl.d" / "runtime.log")


def test_a_harness_file_that_is_a_symlink_is_refused_before_the_harness_opens_it(tmp_path):
    c = config(tmp_path)
    assert c.harness_file("t.jsonl", "transcript") == c.sidecar_file("t.jsonl")  # missing: fine
    os.symlink("/etc/passwd", c.sidecar_file("t.jsonl"))
    with pytest.raises(UsageError, match="refusing transcript .* symlink"):
        c.harness_file("t.jsonl", "transcript")


@pytest.mark.parametrize("mode, path, allowed", [
    ("edit", "src/a.py", True),
    ("edit", "../outside.py", False),
    ("edit", "../e.jsonl", False),
    ("edit", "../e.jsonl.d/binding.json", False),
    ("ask", "src/a.py", False),
    ("full", "src/a.py", False),  # only `edit` is judged here: `full` is the harness's own
    (None, "src/a.py", False),
])
def test_edit_allows_a_change_inside_the_cwd_and_none_to_the_sessions_own_files(tmp_path, mode, path, allowed):
    details = {"tool": "file_change", "paths": [path]}
    assert config(tmp_path, mode).edit_allows(details) is allowed


def test_edit_allows_nothing_when_the_paths_are_unknown(tmp_path):
    assert config(tmp_path, "edit").edit_allows({"tool": "file_change"}) is False


def test_an_agent_file_is_inside_the_cwd_and_never_the_sidecar(tmp_path):
    c = config(tmp_path)
    (tmp_path / "cwd" / "a.txt").write_text("hello")
    target = c.agent_file(str(tmp_path / "cwd" / "a.txt"))
    with os.fdopen(target.open(os.O_RDONLY), "rb") as f:
        assert f.read() == b"hello"
    assert target.real == str(tmp_path / "cwd" / "a.txt")
    with pytest.raises(PermissionError):
        c.agent_file(str(tmp_path / "outside.txt"))
    with pytest.raises(ValueError):
        c.agent_file(None)


def test_an_agent_file_is_never_an_event_file_or_a_sidecars(tmp_path):
    c = config(tmp_path)
    (tmp_path / "cwd" / "x.jsonl.d").mkdir()
    (tmp_path / "cwd" / "x.jsonl.d" / "binding.json").write_text("{}")
    for name in ("x.jsonl", "x.jsonl.d/binding.json"):
        with pytest.raises(PermissionError, match="harnessctl"):
            c.agent_file(str(tmp_path / "cwd" / name))
