"""Torture scenario 9: rename, hard-link and unlink an event file during a run (issue 9).

The session's writer lock follows the file, not its name, so no sequence of
rename, link and unlink ever gives one file two writers: no input with two
results, no `seq` used twice, no torn line, every send that exited 0 accepted
exactly once, and none that exited 2..5 accepted at all.  The regression tests
below are the issue's instances, one behaviour each; the last test plays the
randomized class of tests/support/torture_moves.py (10 rounds by default, 100 with
HARNESSCTL_TORTURE=full; HARNESSCTL_TORTURE_SEED replays a run).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from typing import Any, Dict, List, Sequence

import pytest
from cliutil import alive, cli_env, events, ok, rebind, run, runtime_pids, start, wait_for
from torture_moves import copy_lines, moves, remove_tree
from torture_support import (
    Scan,
    Sends,
    check,
    count,
    finish,
    of_kind,
    one_clear_line,
    popen_send,
    send,
    settle,
    status_of,
)

pytestmark = pytest.mark.torture

MOCK = ("--adapter", "mock")
LOST = "runtime lost; input outcome is uncertain"
STOPPED = "the runtime stopped ("


def env(timeout: str = "10", idle: str = "1") -> Dict[str, str]:
    """Runtimes that idle out after a second, so that a hard link's other name is served soon."""
    return cli_env(HARNESSCTL_IDLE_TIMEOUT=idle, HARNESSCTL_TIMEOUT=timeout)


def results_of(path: str, text: str) -> List[Dict[str, Any]]:
    """The results covering the one input whose text is `text`."""
    ids = {e["input_id"] for e in of_kind(path, "accepted") if e["text"] == text}
    assert len(ids) == 1, "%r accepted as %s in %s" % (text, ids, path)
    return [r for r in of_kind(path, "result") if ids & set(r["input_ids"])]


def ended_once(path: str, text: str) -> Dict[str, Any]:
    """The input's one result: completed, or failed by the runtime that stopped under it."""
    [result] = results_of(path, text)
    assert result["status"] == "completed" or (result["status"] == "failed"
                                               and result["error"].startswith(STOPPED)), result
    return result


def gone(pids: Sequence[int]) -> None:
    """Wait until the runtimes the operation cut off have stopped by themselves."""
    wait_for(lambda: not any(alive(p) for p in pids), what="runtimes %s exited" % pids)


def after_the_cut(path: str, old: Sequence[int], first: str, e: Dict[str, str]) -> Scan:
    """The runtimes the operation cut off have stopped, the file is settled and
    valid, `first` ended exactly once and the send `second` was answered."""
    gone(old)
    settle(path, env=e)
    s = check(path)
    ended_once(path, first)
    assert ended_once(path, "second")["output"] == "echo: second"
    return s


def test_a_file_renamed_during_a_run_gets_one_writer_and_seq_1_2_3_under_its_new_name(workdir):
    a, b, e = str(workdir / "a.jsonl"), str(workdir / "b.jsonl"), env()
    ok("send", a, "/sleep 2\nfirst", *MOCK, env=e)
    old = runtime_pids(a)
    os.rename(a, b)
    refused = run("send", b, "second", *MOCK, env=e)  # no sidecar under this name: never bound anew
    assert refused.returncode == 2 and one_clear_line(refused.stderr, "has events but no binding"), refused.stderr
    rebind(b, e)  # the binding recorded for the file when it was a.jsonl, taken for b.jsonl
    ok("send", b, "second", *MOCK, env=e)  # once the old writer let go
    s = after_the_cut(b, old, "/sleep 2\nfirst", e)
    assert [event["seq"] for event in events(b)] == list(range(1, s.lines + 1))
    assert not os.path.exists(a)


def test_sends_to_both_names_of_a_hard_link_made_during_a_run_have_one_writer(workdir):
    a, b, e = str(workdir / "a.jsonl"), str(workdir / "b.jsonl"), env()
    sends = Sends()
    assert send(a, "/sleep 1\nfirst", sends, *MOCK, env=e) == 0
    os.link(a, b)
    rebind(b, e)  # the second name gets its own sidecar, with the file's binding
    procs = [(popen_send(b, "via b", *MOCK, env=e), "via b"), (popen_send(a, "via a", env=e), "via a")]
    codes = [finish(proc, text, sends) for proc, text in procs]
    assert codes == [0, 0], sends.outcomes  # b waits until the runtime serving a idles out
    settle(a, env=e)
    wait_for(lambda: not runtime_pids(a) and not runtime_pids(b), what="both runtimes idled out")
    assert os.path.samefile(a, b)
    s = check(a)
    sends.verify(s)
    assert ended_once(a, "via b")["output"] == "echo: via b"


def test_a_sidecar_removed_during_a_run_stops_its_runtime_and_the_next_send_starts_anew(workdir):
    a, e = str(workdir / "a.jsonl"), env()
    ok("send", a, "/sleep 1.5\nfirst", *MOCK, env=e)
    old = runtime_pids(a)
    remove_tree(a + ".d")
    rebind(a, e)  # the file has events: its binding comes back from the record, never anew
    ok("send", a, "second", *MOCK, env=e)
    after_the_cut(a, old, "/sleep 1.5\nfirst", e)


def successor_serves(path, old, e):
    """A new runtime, not one of `old`, serves `path`: it holds the pending request
    of the second send, takes its reply and a third send, and the file settles."""
    successor = runtime_pids(path)
    assert successor and not set(successor) & set(old)
    report = status_of(path, e)
    assert report["runtime"] == "alive" and report["state"] == "awaiting_reply", report
    ok("reply", path, report["requests"][0]["request_id"], "allow", env=e)
    ok("send", path, "third", env=e)
    assert runtime_pids(path) == successor
    settle(path, env=e)


def test_a_stale_runtime_whose_sidecar_was_removed_leaves_its_successors_socket_alone(workdir):
    a, e = str(workdir / "a.jsonl"), env(idle="30")  # the successor stays for every command below
    ok("send", a, "/sleep 1\nfirst", *MOCK, env=e)
    old = runtime_pids(a)
    remove_tree(a + ".d")
    rebind(a, e)
    ok("send", a, "/permission may I?\nsecond", *MOCK, env=e)
    gone(old)
    assert os.path.exists(os.path.join(a + ".d", "runtime.sock"))
    successor_serves(a, old, e)
    check(a)
    assert "permission: allow" in ended_once(a, "/permission may I?\nsecond")["output"]


def test_a_stale_runtime_whose_sidecar_moved_away_leaves_the_socket_of_a_new_session_at_its_path_alone(workdir):
    """Here the successor serves another file, so it need not wait for the stale
    runtime: it listens at the old socket path while the stale one still lives,
    and the stale one is made to stop only then (a status reaches it through its
    socket, which moved along with the sidecar)."""
    a, b, e = str(workdir / "a.jsonl"), str(workdir / "b.jsonl"), env(idle="30")
    ok("send", a, "/sleep 1.5\nfirst", *MOCK, env=e)
    old = runtime_pids(a)
    os.rename(a, b)
    os.rename(a + ".d", b + ".d")
    ok("send", a, "/permission may I?\nsecond", *MOCK, env=e)  # a new file and session under the old name
    ok("status", b, env=e)
    gone(old)
    successor_serves(a, old, e)
    settle(b, env=e)
    check(a)
    check(b)
    ended_once(b, "/sleep 1.5\nfirst")


def test_concurrent_statuses_on_a_copy_without_sidecar_record_its_loss_exactly_once(workdir):
    a, e = str(workdir / "a.jsonl"), env()
    ok("send", a, "/permission hold\nfirst", *MOCK, env=e)
    wait_for(lambda: status_of(a, e)["state"] == "awaiting_reply", what="pending request")
    copies = [str(workdir / ("copy-%d.jsonl" % trial)) for trial in range(10)]
    for copy in copies:
        copy_lines(a, copy)  # an accepted input without a result, a pending request, no sidecar
    ok("cancel", a, env=e)
    for copy in copies:
        procs = [start("status", copy, stdin=subprocess.DEVNULL, env=e) for _ in range(20)]
        outputs = [proc.communicate(timeout=60) + (proc.returncode,) for proc in procs]
        assert [rc for _, _, rc in outputs] == [0] * 20, [err for _, err, rc in outputs if rc][:3]
        assert all(len(out.splitlines()) == 1 for out, _, _ in outputs)
        check(copy)  # no input covered twice, no request expired twice, seq never reused
        [result] = of_kind(copy, "result")
        assert result["status"] == "failed" and result["error"] == LOST, result
        assert not os.path.exists(copy + ".d")


FOREIGN = (b'{"type":"log","ts":"2026-01-01T00:00:00.000Z","seq":1,"level":"info","kind":"note",'
           b'"message":"appended by hand"}')


@pytest.mark.parametrize("snapshot", ["kept", "removed"])
def test_after_an_idle_exit_a_foreign_line_with_a_low_seq_never_makes_seq_go_back(workdir, snapshot):
    a, e = str(workdir / "a.jsonl"), env()
    ok("send", a, "first", *MOCK, env=e)
    settle(a, env=e)
    wait_for(lambda: not runtime_pids(a), what="idle exit")
    highest = max(event["seq"] for event in events(a))
    with open(a, "ab") as f:
        f.write(FOREIGN + b"\n")
    if snapshot == "removed":  # the next runtime folds the whole file instead of the snapshot's tail
        os.unlink(os.path.join(a + ".d", "state.json"))
    ok("send", a, "second", env=e)
    settle(a, env=e)
    check(a, foreign=[FOREIGN])
    with open(a, "rb") as f:
        tail = f.read().split(FOREIGN + b"\n", 1)[1]
    assert json.loads(tail.splitlines()[0])["seq"] == highest + 1


def test_a_file_and_sidecar_renamed_together_during_a_run_continue_under_the_new_name(workdir):
    a, b, e = str(workdir / "a.jsonl"), str(workdir / "b.jsonl"), env()
    ok("send", a, "/sleep 1.5\nfirst", *MOCK, env=e)
    old = runtime_pids(a)
    os.rename(a, b)
    os.rename(a + ".d", b + ".d")
    ok("send", b, "second", env=e)  # the binding moved along: no --adapter needed
    refused = run("send", a, "third", env=e)
    assert refused.returncode == 2 and one_clear_line(refused.stderr, "no adapter"), refused.stderr
    assert not os.path.exists(a) and not os.path.exists(a + ".d")
    after_the_cut(b, old, "/sleep 1.5\nfirst", e)


def test_a_file_unlinked_during_a_run_gets_its_last_lines_and_the_path_a_new_file(workdir):
    a, e = str(workdir / "a.jsonl"), env()
    ok("send", a, "/sleep 1.5\nfirst", *MOCK, env=e)
    old = runtime_pids(a)
    kept = os.open(a, os.O_RDONLY)
    try:
        os.unlink(a)
        ok("send", a, "second", env=e)
        gone(old)
        removed = "/proc/self/fd/%d" % kept
        check(removed)  # the stopped runtime ended its run in the file it had open
        ended_once(removed, "/sleep 1.5\nfirst")
    finally:
        os.close(kept)
    settle(a, env=e)
    check(a)
    assert [event["text"] for event in of_kind(a, "accepted")] == ["second"]


def test_a_file_replaced_by_its_copy_during_a_run_ends_the_run_once_in_each(workdir):
    a, e = str(workdir / "a.jsonl"), env()
    ok("send", a, "/sleep 1.5\nfirst", *MOCK, env=e)
    old = runtime_pids(a)
    kept = os.open(a, os.O_RDONLY)
    try:
        copy_lines(a, a + ".copy")
        os.rename(a + ".copy", a)
        ok("send", a, "second", env=e)
        gone(old)
        original = "/proc/self/fd/%d" % kept
        check(original)
        ended_once(original, "/sleep 1.5\nfirst")
        assert [event["text"] for event in of_kind(original, "accepted")] == ["/sleep 1.5\nfirst"]
    finally:
        os.close(kept)
    settle(a, env=e)
    check(a)
    [lost] = results_of(a, "/sleep 1.5\nfirst")  # the copy's open input: recovered, never replayed
    assert lost["status"] == "failed" and lost["error"] == LOST, lost
    assert ended_once(a, "second")["output"] == "echo: second"


def test_a_send_to_a_hard_link_whose_runtime_stays_busy_exits_5_and_sends_nothing(workdir):
    a, b, e = str(workdir / "a.jsonl"), str(workdir / "b.jsonl"), env(timeout="3")
    ok("send", a, "/permission hold\nfirst", *MOCK, env=e)
    os.link(a, b)
    rebind(b, e)
    refused = run("send", b, "not sent", *MOCK, env=e)  # gives up after 0.8 x 3 s
    assert refused.returncode == 5 and one_clear_line(refused.stderr, "another runtime"), refused.stderr
    assert not os.path.exists(b + ".d/runtime.sock")  # its sidecar keeps the runtime's log of why, no runtime
    ok("cancel", a, env=e)
    settle(a, env=e)
    check(a)
    assert [event["text"] for event in of_kind(a, "accepted")] == ["/permission hold\nfirst"]


def test_two_sends_to_a_hard_link_whose_runtime_stays_busy_both_exit_5_and_send_nothing(workdir):
    a, b, e = str(workdir / "a.jsonl"), str(workdir / "b.jsonl"), env(timeout="3")
    sends = Sends()
    assert send(a, "/permission hold\nfirst", sends, *MOCK, env=e) == 0
    os.link(a, b)
    rebind(b, e)
    first = popen_send(b, "not sent 1", *MOCK, env=e)
    wait_for(lambda: os.path.exists(os.path.join(b + ".d", "runtime.log")), what="the first send's runtime")
    second = popen_send(b, "not sent 2", *MOCK, env=e)  # waits for that runtime, then starts its own
    codes = [finish(first, "not sent 1", sends), finish(second, "not sent 2", sends)]
    ok("cancel", a, env=e)
    settle(a, env=e)
    sends.verify(check(a))
    assert codes == [5, 5], sends.outcomes
    assert all(one_clear_line(err, "another runtime") for _, _, err in sends.outcomes[1:]), sends.outcomes


def test_reply_and_cancel_through_a_hard_links_other_name_apply_nothing_and_say_so(workdir):
    a, b, e = str(workdir / "a.jsonl"), str(workdir / "b.jsonl"), env(timeout="3")
    ok("send", a, "/permission hold\nfirst", *MOCK, env=e)
    wait_for(lambda: status_of(a, e)["state"] == "awaiting_reply", what="pending request")
    os.link(a, b)
    before = open(a, "rb").read()
    procs = [run("reply", b, "req-1", "allow", env=e), run("cancel", b, env=e)]
    assert open(a, "rb").read() == before and status_of(a, e)["state"] == "awaiting_reply"
    ok("cancel", a, env=e)
    assert all(p.returncode in (3, 5) for p in procs), [(p.returncode, p.stderr) for p in procs]
    assert all(one_clear_line(p.stderr) for p in procs)


def test_rename_link_and_unlink_at_random_moments_never_give_a_file_two_writers(workdir):
    seed = int(os.environ.get("HARNESSCTL_TORTURE_SEED") or random.randrange(1 << 30))
    print("HARNESSCTL_TORTURE_SEED=%d" % seed)
    try:
        stats = moves(str(workdir), count(10, 100), seed)
    except AssertionError as e:
        raise AssertionError("HARNESSCTL_TORTURE_SEED=%d: %s" % (seed, e)) from None
    print(stats)
    assert all(stats["by_op"].values()), stats["by_op"]
    assert stats["sends_ok"] and stats["inputs"] >= stats["sends_ok"], stats
