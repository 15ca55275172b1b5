"""Torture scenario 7: the bad-input cases tests/commands/test_bad_input.py does not have yet
(issue 5).  Same rules: the documented exit code, ONE clear stderr line, empty
stdout, and not a byte of any existing file changes."""

from __future__ import annotations

import os
import pathlib
import signal

import pytest
from badinput import existing, file_with, foreign_text, new_path, snapshot_files, with_pending_request, with_question
from cliutil import cli_env, ok, run, runtime_pids, wait_for
from torture_support import of_kind, one_clear_line, tmpfs

pytestmark = pytest.mark.torture


def long_name(workdir):
    return str(workdir / ("n" * 300 + ".jsonl"))


def over_path_max(workdir):
    return str(workdir / "/".join(["d" * 200] * 25) / "events.jsonl")


def sidecar_is_a_file(workdir):
    file_with(workdir, "side.jsonl.d", "not a directory\n")
    return str(workdir / "side.jsonl")


def corrupt_binding(workdir):
    """A bound file whose runtime is gone and whose binding was damaged."""
    path = existing(workdir)
    for pid in runtime_pids(path):
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not runtime_pids(path), what="runtime stopped")
    with open(path + ".d/binding.json", "w") as f:
        f.write("{broken")
    return path


def looks_like_ours(workdir):
    return file_with(workdir, "almost.jsonl", '{"type": "log", "note": "no seq: not one of our events"}\n')


def dangling_symlink(workdir):
    link = str(workdir / "dangling.jsonl")
    os.symlink(str(workdir / "missing-dir" / "target.jsonl"), link)
    return link


def cwd_symlink_to_file(workdir):
    os.symlink(str(workdir / "plain"), str(workdir / "filelink"))
    return new_path(workdir)


def with_replied_request(workdir):
    path = with_pending_request(workdir)
    ok("reply", path, "req-1", "allow")
    wait_for(lambda: len(of_kind(path, "result")) == 2, what="result")
    return path


def empty_path(workdir):
    return ""


M = ("--adapter", "mock")
CASES = {
    # name: (setup, args with {f} for the path and {w} for workdir, stdin, env, exit code, stderr fragment)
    "send_file_name_too_long": (long_name, ("send", "{f}", "hi", *M), None, None, 2, "File name too long"),
    "send_path_longer_than_path_max": (over_path_max, ("send", "{f}", "hi", *M), None, None, 2, "File name too long"),
    "send_empty_path": (empty_path, ("send", "{f}", "hi", *M), None, None, 2, "empty"),
    "send_sidecar_is_a_file": (sidecar_is_a_file, ("send", "{f}", "hi", *M), None, None, 2, "Not a directory"),
    "send_corrupt_binding": (corrupt_binding, ("send", "{f}", "hi"), None, None, 2, "unreadable binding"),
    "send_first_line_without_seq": (
        looks_like_ours, ("send", "{f}", "hi", *M), None, None, 2, "not a harnessctl event file"),
    "send_dangling_symlink_into_missing_dir": (
        dangling_symlink, ("send", "{f}", "hi", *M), None, None, 2, "does not exist"),
    "send_cwd_symlink_to_a_file": (
        cwd_symlink_to_file, ("send", "{f}", "hi", "--cwd", "{w}/filelink", *M), None, None, 2, "not a directory"),
    "send_adapter_path_traversal": (
        new_path, ("send", "{f}", "hi", "--adapter", "../mock"), None, None, 2, "unknown adapter"),
    "send_unknown_adapter_from_env": (
        new_path, ("send", "{f}", "hi"), None, {"HARNESSCTL_ADAPTER": "nosuch"}, 2, "unknown adapter"),
    "send_option_twice_conflicting": (
        existing, ("send", "{f}", "hi", "--model", "m1", "--model", "m2"), None, None, 2, "model is bound"),
    "cancel_extra_argument": (
        existing, ("cancel", "{f}", "now", "later"), None, None, 2,
        "takes 2 arguments (FILE INPUT_ID), got 3; extra: 'later'"),
    "reply_too_many_arguments": (
        with_pending_request, ("reply", "{f}", "req-1", "allow", "extra"), None, None, 2, "quote it"),
    "reply_invalid_utf8_stdin": (
        with_pending_request, ("reply", "{f}", "req-1"), b"\xff\xfe", None, 2, "not valid UTF-8"),
    "reply_already_replied": (
        with_replied_request, ("reply", "{f}", "req-1", "deny"), None, None, 3, "already replied"),
    "reply_json_to_a_permission": (
        with_pending_request, ("reply", "{f}", "req-1", '{"q1": "allow"}'), None, None, 2, "allow, deny"),
    "status_on_a_dangling_symlink": (dangling_symlink, ("status", "{f}"), None, None, 4, "no such event file"),
    "reply_answer_larger_than_4mib_on_stdin": (
        with_question, ("reply", "{f}", "req-1"), b"z" * (5 * 1024 * 1024), None, 2, "larger than 4 MiB"),
    "reply_on_a_foreign_file": (
        foreign_text, ("reply", "{f}", "req-1", "allow"), None, None, 2, "not a harnessctl event file"),
}


def assert_refused(proc, code, fragment):
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert one_clear_line(proc.stderr, fragment), proc.stderr
    assert proc.stdout == b""


def assert_unchanged(workdir, before):
    after = snapshot_files(workdir)
    for name, data in before.items():
        assert after.get(name, b"") == data or (name.endswith(".jsonl") and after[name].startswith(data)), name


@pytest.mark.parametrize("name", sorted(CASES))
def test_more_bad_input(name, workdir):
    setup, args, stdin, env_extra, code, fragment = CASES[name]
    open(str(workdir / "plain"), "w").close()
    path = setup(workdir)
    before = snapshot_files(workdir)
    argv = [a.replace("{f}", path).replace("{w}", str(workdir)) for a in args]
    assert_refused(run(*argv, input=stdin, env=cli_env(**(env_extra or {}))), code, fragment)
    assert_unchanged(workdir, before)


def test_send_text_with_invalid_utf8_in_argv_exits_2(workdir):
    proc = run(b"send", os.fsencode(str(workdir / "e.jsonl")), b"caf\xe9", b"--adapter", b"mock")
    assert_refused(proc, 2, "not valid UTF-8")
    assert not os.path.exists(str(workdir / "e.jsonl"))


def test_send_with_stdin_closed_exits_2(workdir):
    proc = run("send", str(workdir / "e.jsonl"), "--adapter", "mock", preexec_fn=lambda: os.close(0))
    assert_refused(proc, 2, "stdin")
    assert not os.path.exists(str(workdir / "e.jsonl"))


@pytest.fixture
def read_only_dir(workdir):
    """A read-only mount: root ignores permission bits, not a read-only filesystem
    (test_bad_input covers the permission bits for other users)."""
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    with tmpfs(str(workdir / "ro"), "ro,size=64k") as mountpoint:
        yield pathlib.Path(mountpoint)


def test_send_in_a_read_only_directory_exits_2_even_as_root(read_only_dir):
    proc = run("send", str(read_only_dir / "e.jsonl"), "hi", "--adapter", "mock")
    assert_refused(proc, 2, "cannot create")
    assert os.listdir(str(read_only_dir)) == []


def test_the_matrix_and_this_file_hold_at_least_30_cases():
    from badinput import CASES as BASE

    assert not set(BASE) & set(CASES), "extend, never duplicate"
    assert len(BASE) + len(CASES) >= 30
