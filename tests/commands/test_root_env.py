"""HARNESSCTL_ROOT: a command takes no event file and no working directory
whose real path lies outside the folders it names (one per line), symlinks
and all.  `harnessctl mcp` sets it on the commands it runs over ssh, so that
its ssh:// roots hold on the other machine (docs/COMMANDS.md)."""

from __future__ import annotations

import os

from cliutil import cli_env, run


def send(path, cwd, root):
    return run("send", path, "hello", "--adapter", "mock", "--cwd", cwd, env=cli_env(HARNESSCTL_ROOT=root))


def test_a_file_under_the_root_is_taken(workdir):
    inside = workdir / "in"
    inside.mkdir()
    proc = send(str(inside / "a.jsonl"), str(inside), str(inside))
    assert proc.returncode == 0, proc.stderr


def test_a_file_outside_the_root_is_refused_before_anything_is_written(workdir):
    (workdir / "in").mkdir()
    proc = send(str(workdir / "a.jsonl"), str(workdir / "in"), str(workdir / "in"))
    assert proc.returncode == 2 and "HARNESSCTL_ROOT" in proc.stderr.decode()
    assert not os.path.exists(workdir / "a.jsonl")


def test_a_symlink_inside_the_root_that_leads_out_is_refused(workdir):
    inside = workdir / "in"
    inside.mkdir()
    os.symlink(str(workdir / "outside.jsonl"), str(inside / "link.jsonl"))
    proc = send(str(inside / "link.jsonl"), str(inside), str(inside))
    assert proc.returncode == 2 and "outside.jsonl" in proc.stderr.decode()
    assert not os.path.lexists(workdir / "outside.jsonl")


def test_a_path_that_climbs_out_with_dot_dot_is_refused(workdir):
    inside = workdir / "in"
    inside.mkdir()
    proc = send(str(inside) + "/../a.jsonl", str(inside), str(inside))
    assert proc.returncode == 2


def test_a_working_directory_outside_the_root_is_refused(workdir):
    inside = workdir / "in"
    inside.mkdir()
    proc = send(str(inside / "a.jsonl"), str(workdir), str(inside))
    assert proc.returncode == 2 and "working directory" in proc.stderr.decode()
    assert not os.path.exists(inside / "a.jsonl")


def test_any_of_several_roots_one_per_line_will_do(workdir):
    first, second = workdir / "one", workdir / "two"
    first.mkdir()
    second.mkdir()
    proc = send(str(second / "a.jsonl"), str(second), "%s\n%s" % (first, second))
    assert proc.returncode == 0, proc.stderr


def test_status_of_a_file_outside_the_root_is_refused(workdir):
    inside = workdir / "in"
    inside.mkdir()
    assert send(str(workdir / "in" / "a.jsonl"), str(inside), str(inside)).returncode == 0
    proc = run("status", str(inside / "a.jsonl"), env=cli_env(HARNESSCTL_ROOT=str(workdir / "elsewhere")))
    assert proc.returncode == 2
