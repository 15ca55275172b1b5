"""Torture scenario 6: torn tails, foreign writers, garbage and truncation (issue 5).

Commands refuse or recover as docs/PROTOCOL-SESSION.md sections 3 and 4 say and never change
a byte of an existing line: a fragment left by someone else is terminated
before the next append, lines that are not ours are skipped by every reader,
and a truncated file is read up to its last complete line."""

from __future__ import annotations

import os
import signal

import pytest
from cliutil import cli_env, events, ok, run, runtime_pids, wait_for
from torture_support import check, of_kind, settle, status_of, wait_results

pytestmark = pytest.mark.torture

ENV = {"HARNESSCTL_ADAPTER": "mock"}


def finished_file(path, runs=2):
    """An event file with `runs` finished runs and no live runtime."""
    for i in range(runs):
        ok("send", path, "run %d" % i, env=cli_env(**ENV))
        wait_results(path, i + 1)
    stop_runtime(path)


def stop_runtime(path):
    for pid in runtime_pids(path):
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not runtime_pids(path), what="runtime stopped")


def append(path, data):
    with open(path, "ab") as f:
        f.write(data)


def test_a_partial_line_appended_during_a_run_is_terminated_and_never_merged(efile):
    ok("send", efile, "/sleep 0.6\nslow", env=cli_env(**ENV))
    fragment = b'{"type":"message","text":"half of a li'
    append(efile, fragment)
    before = open(efile, "rb").read()
    wait_results(efile, 1)
    after = open(efile, "rb").read()
    assert after.startswith(before + b"\n"), "the fragment must be ended before the next event"
    check(efile, foreign=[fragment])
    assert status_of(efile)["state"] == "idle"


def test_garbage_bytes_are_skipped_by_status_recovery_and_the_runtime(efile):
    finished_file(efile)
    garbage = [b"\x00\xff\xfe garbage \x80", b"not json at all", b"[1, 2, 3]", b'{"no": "type"}']
    append(efile, b"\n".join(garbage) + b"\n")
    before = open(efile, "rb").read()
    report = status_of(efile)
    assert report["state"] == "idle" and report["runtime"] == "stopped"
    ok("send", efile, "after the garbage", env=cli_env(**ENV))
    assert wait_results(efile, 3)[-1]["output"] == "echo: after the garbage"
    assert open(efile, "rb").read().startswith(before)
    check(efile, foreign=garbage)


def test_a_foreign_writer_interleaving_whole_lines_changes_nothing_of_ours(efile):
    ok("send", efile, "/sleep 1\nbusy", env=cli_env(**ENV))
    foreign = [b'{"note": "appended by a monitoring script %d"}' % i for i in range(20)]
    for line in foreign:
        append(efile, line + b"\n")
    ok("send", efile, "steered in")
    wait_results(efile, 1)
    check(efile, foreign=foreign)


def test_a_file_truncated_mid_line_is_read_to_its_last_complete_line(efile):
    finished_file(efile)
    data = open(efile, "rb").read()
    cut = data.rstrip(b"\n").rfind(b"\n") + 1 + 20  # 20 bytes into the last line
    os.truncate(efile, cut)
    fragment = data[cut - 20:cut]
    report = status_of(efile)
    assert report["runtime"] == "stopped"
    ok("send", efile, "after the truncation", env=cli_env(**ENV))
    # the status above may have closed the cut run with a result of its own: wait for the new one
    wanted = "echo: after the truncation"
    wait_for(lambda: [r for r in of_kind(efile, "result") if r["output"] == wanted], what="the new input's result")
    assert open(efile, "rb").read().startswith(data[:cut] + b"\n")
    check(efile, foreign=[fragment])


def test_a_file_truncated_to_nothing_starts_again_at_seq_1(efile):
    finished_file(efile)
    os.truncate(efile, 0)
    assert status_of(efile)["state"] == "idle"
    ok("send", efile, "fresh start", env=cli_env(**ENV))
    [result] = wait_results(efile, 1)
    assert result["output"] == "echo: fresh start" and events(efile)[0]["seq"] == 1
    check(efile)


def test_a_file_truncated_under_a_live_runtime_keeps_every_line_whole(efile):
    ok("send", efile, "first", env=cli_env(**ENV))
    wait_results(efile, 1)
    data = open(efile, "rb").read()
    os.truncate(efile, len(data) - 10)
    ok("send", efile, "second")
    wait_results(efile, 1)
    after = open(efile, "rb").read()
    assert after.startswith(data[:-10] + b"\n")
    tail = after[len(data) - 9:]
    assert tail.endswith(b"\n") and b"echo: second" in tail
    for line in tail.splitlines():
        assert line.startswith(b'{"type":') and line.endswith(b"}"), line


def test_an_event_file_removed_under_a_live_runtime_gets_the_next_send(efile):
    ok("send", efile, "first", env=cli_env(**ENV))
    wait_results(efile, 1)
    os.unlink(efile)
    ok("send", efile, "after the removal")
    [result] = wait_results(efile, 1)
    assert result["output"] == "echo: after the removal"
    settle(efile)
    check(efile)


def test_an_event_file_moved_away_keeps_its_history_and_the_path_starts_over(efile, workdir):
    ok("send", efile, "first", env=cli_env(**ENV))
    wait_results(efile, 1)
    moved = str(workdir / "archived.jsonl")
    os.rename(efile, moved)
    before = open(moved, "rb").read()
    ok("send", efile, "into the new file")
    assert wait_results(efile, 1)[0]["output"] == "echo: into the new file"
    assert open(moved, "rb").read().startswith(before)
    settle(efile)
    check(efile)
    check(moved)


def test_a_foreign_file_put_at_the_path_under_a_live_runtime_is_refused_and_left_untouched(efile):
    ok("send", efile, "first", env=cli_env(**ENV))
    wait_results(efile, 1)
    os.unlink(efile)
    with open(efile, "wb") as f:
        f.write(b"somebody else's notes\n")
    proc = run("send", efile, "hello")
    assert proc.returncode == 2 and b"not a harnessctl event file" in proc.stderr
    assert open(efile, "rb").read() == b"somebody else's notes\n"
