"""`status DIR`: a directory stands for the event files directly in it
(docs/PROTOCOL-COMMANDS.md section 7), black-box through the CLI and the MCP status
tool with the mock adapter."""

from __future__ import annotations

import json
import os

import pytest
from cliutil import cli_env, ok, run, runtime_pids, wait_for
from mcp_support.client import Client

M = ("--adapter", "mock")


def lines(proc):
    return [json.loads(line) for line in proc.stdout.decode().splitlines()]


def idle(path):
    ok("send", str(path), "hello", "--wait", *M)
    return str(path)


def running(path):
    ok("send", str(path), "/sleep 60\nwork", *M)
    return str(path)


def stopped(path):
    """A session whose runtime exited (idle timeout)."""
    ok("send", str(path), "hello", "--wait", *M, env=cli_env(HARNESSCTL_IDLE_TIMEOUT="0.2"))
    wait_for(lambda: not runtime_pids(str(path)), 30, "the idle exit of %s" % path)
    return str(path)


def foreign(path):
    """A `.jsonl` file that is no session."""
    with open(str(path), "w") as f:
        f.write('{"hello": "world"}\n')
    return str(path)


@pytest.fixture
def folder(workdir):
    path = workdir / "sessions"
    path.mkdir()
    return path


def test_a_directory_gives_one_line_per_event_file_sorted_by_name_in_byte_order(folder):
    for name in ("b.jsonl", "a.jsonl", "B.jsonl"):
        stopped(folder / name)
    proc = ok("status", str(folder))
    assert [(line["file"], line["state"]) for line in lines(proc)] == [
        (str(folder / name), "idle") for name in ("B.jsonl", "a.jsonl", "b.jsonl")]
    assert proc.stderr == b""


def test_each_file_is_the_directory_as_given_joined_to_its_name(folder, workdir):
    stopped(folder / "a.jsonl")
    for given in ("sessions", "sessions/", "./sessions"):
        (line,) = lines(ok("status", given, cwd=str(workdir)))
        assert line["file"] == os.path.join(given, "a.jsonl")


def test_sidecars_dot_files_other_names_and_subdirectories_are_not_listed(folder):
    a = stopped(folder / "a.jsonl")
    stopped(folder / ".hidden.jsonl")
    (folder / "notes.txt").write_text("not a session\n")
    (folder / "old.jsonl.bak").write_text("not a session\n")
    (folder / "dir.jsonl").mkdir()
    (folder / "nested").mkdir()
    stopped(folder / "nested" / "deep.jsonl")
    assert sorted(os.listdir(str(folder))) == [".hidden.jsonl", ".hidden.jsonl.d", "a.jsonl", "a.jsonl.d", "dir.jsonl",
                                               "nested", "notes.txt", "old.jsonl.bak"]
    assert [line["file"] for line in lines(ok("status", str(folder)))] == [a]


def test_a_symlink_to_a_session_is_listed_and_a_dangling_one_is_not(folder, workdir):
    elsewhere = stopped(workdir / "elsewhere.jsonl")
    os.symlink(elsewhere, str(folder / "linked.jsonl"))
    os.symlink(str(workdir / "gone.jsonl"), str(folder / "dangling.jsonl"))
    (line,) = lines(ok("status", str(folder)))
    assert (line["file"], line["state"]) == (str(folder / "linked.jsonl"), "idle")


def test_a_symlink_to_a_directory_is_a_directory(folder, workdir):
    stopped(folder / "a.jsonl")
    os.symlink(str(folder), str(workdir / "link"))
    (line,) = lines(ok("status", str(workdir / "link")))
    assert line["file"] == str(workdir / "link" / "a.jsonl") and line["state"] == "idle"


def test_files_and_directories_mix_in_the_order_given(folder, workdir):
    first, last = stopped(workdir / "first.jsonl"), stopped(workdir / "last.jsonl")
    x, y = stopped(folder / "x.jsonl"), stopped(folder / "y.jsonl")
    proc = ok("status", first, str(folder), last, x)
    assert [line["file"] for line in lines(proc)] == [first, x, y, last, x]


def test_a_live_session_among_idle_ones_shows_its_run(folder):
    stopped(folder / "a.jsonl")
    running(folder / "b.jsonl")
    idle(folder / "c.jsonl")
    proc = ok("status", str(folder))
    assert [(line["state"], line["runtime"]) for line in lines(proc)] == [
        ("idle", "stopped"), ("running", "alive"), ("idle", "alive")]


def test_an_empty_directory_prints_nothing_and_exits_0(folder):
    proc = run("status", str(folder))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


def test_a_directory_without_event_files_among_files_adds_no_line(folder, workdir):
    a = stopped(workdir / "a.jsonl")
    (folder / "notes.txt").write_text("not a session\n")
    assert [line["file"] for line in lines(ok("status", str(folder), a))] == [a]


def test_a_jsonl_file_that_is_no_session_is_its_error_line_even_when_the_directory_is_alone(folder):
    a, other = stopped(folder / "a.jsonl"), foreign(folder / "z.jsonl")
    proc = run("status", str(folder))
    assert (proc.returncode, proc.stderr) == (2, b"")
    good, bad = lines(proc)
    assert good["file"] == a and good["state"] == "idle"
    assert bad == {"file": other, "exit_code": 2, "error": "not a harnessctl event file (left untouched): %s" % other}


def test_the_exit_code_is_the_highest_of_every_file_of_every_argument(folder, workdir):
    stopped(folder / "a.jsonl")
    foreign(folder / "b.jsonl")
    missing = str(workdir / "missing.jsonl")
    proc = run("status", str(folder), missing)
    assert proc.returncode == 4 and [line.get("exit_code") for line in lines(proc)] == [None, 2, 4]


def test_a_missing_directory_named_with_a_slash_alone_is_the_one_line_error_exit_4(workdir):
    proc = run("status", "nope/", cwd=str(workdir))
    assert (proc.returncode, proc.stdout) == (4, b"")
    assert proc.stderr == b"harnessctl: no such directory: nope/\n"


def test_a_missing_directory_among_other_arguments_is_its_error_line(workdir):
    a = stopped(workdir / "a.jsonl")
    proc = run("status", "nope/", a, cwd=str(workdir))
    assert (proc.returncode, proc.stderr) == (4, b"")
    error, good = lines(proc)
    assert error == {"file": "nope/", "error": "no such directory: nope/", "exit_code": 4}
    assert good["file"] == a


def test_a_missing_path_without_a_slash_is_a_missing_event_file(workdir):
    proc = run("status", str(workdir / "nope"))
    assert (proc.returncode, proc.stdout) == (4, b"")
    assert b"no such event file" in proc.stderr


def test_a_file_named_with_a_slash_is_refused_as_no_directory(workdir):
    a = stopped(workdir / "a.jsonl")
    proc = run("status", a + "/")
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr == ("harnessctl: cannot access directory %s/: Not a directory\n" % a).encode()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_an_unreadable_directory_alone_exits_2_with_one_line_on_stderr(folder):
    stopped(folder / "a.jsonl")
    folder.chmod(0o300)
    try:
        proc = run("status", str(folder))
    finally:
        folder.chmod(0o700)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr == ("harnessctl: cannot read directory %s: Permission denied\n" % folder).encode()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_an_unreadable_directory_among_files_is_its_error_line_exit_2(folder, workdir):
    a = stopped(workdir / "a.jsonl")
    folder.chmod(0o300)
    try:
        proc = run("status", a, str(folder))
    finally:
        folder.chmod(0o700)
    assert (proc.returncode, proc.stderr) == (2, b"")
    good, error = lines(proc)
    assert good["file"] == a
    assert error == {"file": str(folder), "exit_code": 2,
                     "error": "cannot read directory %s: Permission denied" % folder}


# -- the MCP status tool ----------------------------------------------------------


def test_the_mcp_status_tool_takes_a_directory_and_holds_its_files_to_the_roots(folder, workdir, tmp_path_factory):
    a = stopped(folder / "a.jsonl")
    outside = stopped(tmp_path_factory.mktemp("outside") / "out.jsonl")
    os.symlink(outside, str(folder / "b.jsonl"))
    client = Client("--root", str(workdir), cwd=str(workdir))
    try:
        client.initialize()
        result = client.tool("status", files=[str(folder), str(workdir / "empty")])
    finally:
        client.close()
    assert result["isError"] is False, result
    good, refused, missing = result["structuredContent"]["statuses"]
    assert good["file"] == a and good["state"] == "idle"
    assert refused["file"] == str(folder / "b.jsonl") and refused["exit_code"] == 2
    assert "not under the allowed roots" in refused["error"]
    assert missing["file"] == str(workdir / "empty") and missing["exit_code"] == 4


# -- a send that binds a file `status DIR` will not list ---------------------------------------------------

UNLISTED = "harnessctl: warning: `status DIR` lists only files named *.jsonl (not dot files): it will not list %s"


@pytest.mark.parametrize("name", ["notes.txt", ".hidden.jsonl"])
def test_the_send_that_binds_a_file_status_dir_does_not_list_warns_once(workdir, name):
    path = str(workdir / name)
    first = run("send", path, "hello", "--wait", *M)
    assert first.returncode == 0 and first.stderr.decode().splitlines().count(UNLISTED % name) == 1, first.stderr
    later = run("send", path, "again", "--wait")
    assert later.returncode == 0 and b"status DIR" not in later.stderr
    assert lines(ok("status", str(workdir))) == []


def test_the_send_that_binds_a_jsonl_file_says_nothing_of_status_dir(workdir):
    proc = run("send", str(workdir / "notes.jsonl"), "hello", "--wait", *M)
    assert proc.returncode == 0 and b"status DIR" not in proc.stderr
