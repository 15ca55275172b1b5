"""`send --queue`, `send --interrupt` and `cancel FILE INPUT_ID` (docs/PROTOCOL-COMMANDS.md
section 6): how a caller's words land in a busy session, black-box through the CLI
with the mock adapter.  What the harness saw is its transcript
(FILE.d/mock-transcript.jsonl: the inputs of each finished turn)."""

from __future__ import annotations

import json
import os
import sys

from cliutil import cli_env, of_type, ok, results, run, runtime_pids, status, wait_for, wait_results
from schemacheck import check_event

M = ("--adapter", "mock")
WEDGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support", "wedge_agent.py")


def busy(efile, seconds=30):
    """A session with a run going; the run's id."""
    ok("send", efile, "/sleep %d\nfirst" % seconds, *M)
    return of_type(efile, "accepted")[0]["run_id"]


def sent(efile, *args):
    """A send's input id (--print-id)."""
    return ok("send", efile, *args, "--print-id").stdout.decode().strip()


def accepted(efile, input_id):
    """The latest `accepted` snapshot of an input."""
    return [e for e in of_type(efile, "accepted") if e["input_id"] == input_id][-1]


def harness_saw(efile):
    """Every input text the mock harness was given, by finished turn."""
    path = efile + ".d/mock-transcript.jsonl"
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line)["inputs"] for line in f]


def test_a_queued_send_to_a_busy_run_is_accepted_queued_and_in_no_run(efile):
    busy(efile)
    input_id = sent(efile, "second", "--queue")
    line = accepted(efile, input_id)
    assert (line["delivery"], line["run_id"]) == ("queued", None)
    assert status(efile)["queued"] == 1
    ok("cancel", efile)


def test_a_queued_send_starts_the_next_run_of_its_own(efile):
    first_run = busy(efile, 1)
    input_id = sent(efile, "second", "--queue")
    wait_results(efile, 2)
    line = accepted(efile, input_id)
    assert line["delivery"] == "queued" and line["run_id"] not in (None, first_run)
    assert [r["input_ids"] for r in results(efile)][1] == [input_id]
    assert harness_saw(efile) == [["/sleep 1\nfirst"], ["second"]]


def test_two_queued_sends_run_one_after_the_other(efile):
    busy(efile, 1)
    second, third = sent(efile, "second", "--queue"), sent(efile, "third", "--queue")
    wait_results(efile, 3)
    assert [r["input_ids"] for r in results(efile)][1:] == [[second], [third]]


def test_a_queued_send_to_an_idle_session_starts_a_run_at_once(efile):
    input_id = sent(efile, "hello", "--queue", *M)
    assert accepted(efile, input_id)["delivery"] == "start"


def test_a_send_without_queue_still_steers_the_busy_run(efile):
    run_id = busy(efile, 1)
    input_id = sent(efile, "steer")
    line = accepted(efile, input_id)
    assert (line["delivery"], line["run_id"]) == ("steer", run_id)


def test_send_interrupt_cancels_the_run_and_starts_the_next_with_its_text(efile):
    first_run = busy(efile)
    proc = run("send", efile, "instead", "--interrupt", "--wait")
    assert proc.returncode == 0, proc.stderr
    first, second = results(efile)
    assert (first["run_id"], first["status"]) == (first_run, "cancelled")
    assert (second["status"], second["output"]) == ("completed", "echo: instead")
    assert json.loads(proc.stdout)["run_id"] == second["run_id"]
    assert harness_saw(efile)[-1] == ["instead"]


def test_send_interrupt_writes_the_cancelled_result_before_its_run_starts(efile):
    busy(efile)
    input_id = sent(efile, "instead", "--interrupt")
    wait_results(efile, 2)
    lines = of_type(efile, "accepted") + results(efile)
    started = next(e["seq"] for e in lines if e.get("input_id") == input_id and e["run_id"])
    assert results(efile)[0]["seq"] < started


def test_send_interrupt_to_an_idle_session_starts_a_run(efile):
    input_id = sent(efile, "hello", "--interrupt", *M)
    assert accepted(efile, input_id)["delivery"] == "start"


def test_send_interrupt_drops_what_was_queued_before_it_saying_why(efile):
    busy(efile)
    queued = sent(efile, "queued", "--queue")
    interrupting = sent(efile, "instead", "--interrupt")
    wait_results(efile, 3)
    dropped = [r for r in results(efile) if r["input_ids"] == [queued]]
    assert [(r["status"], r["run_id"]) for r in dropped] == [("cancelled", None)]
    assert dropped[0]["error"] == ("dropped by an --interrupt send (input %s) before it reached the harness"
                                   % interrupting)
    assert dropped[0]["error_class"] == "dropped" and check_event(dropped[0]) == []
    assert ["queued"] not in harness_saw(efile)


def test_queue_and_interrupt_together_exit_2(efile):
    proc = run("send", efile, "x", "--queue", "--interrupt", *M)
    assert proc.returncode == 2 and b"give one" in proc.stderr
    assert not os.path.exists(efile)


def test_cancel_input_id_revokes_a_queued_input_that_never_reaches_the_harness(efile):
    busy(efile, 2)
    input_id = sent(efile, "never", "--queue")
    ok("cancel", efile, input_id)
    revoked = [r for r in results(efile) if r["input_ids"] == [input_id]]
    assert [(r["status"], r["run_id"], r["error_class"]) for r in revoked] == [("cancelled", None, "revoked")]
    wait_results(efile, 2)
    wait_for(lambda: status(efile)["state"] == "idle", what="the first run ended")
    assert harness_saw(efile) == [["/sleep 2\nfirst"]]


def test_revoking_leaves_the_running_run_alone(efile):
    run_id = busy(efile, 2)
    ok("cancel", efile, sent(efile, "never", "--queue"))
    assert status(efile)["run_id"] == run_id
    assert [r["status"] for r in wait_results(efile, 2)] == ["cancelled", "completed"]


def test_cancel_input_id_of_a_delivered_input_exits_3_saying_so(efile):
    run_id = busy(efile)
    input_id = of_type(efile, "accepted")[0]["input_id"]
    proc = run("cancel", efile, input_id)
    assert proc.returncode == 3
    assert b"already delivered" in proc.stderr and run_id.encode() in proc.stderr
    assert results(efile) == []
    ok("cancel", efile)


def test_cancel_input_id_twice_exits_3_the_second_time(efile):
    busy(efile)
    input_id = sent(efile, "never", "--queue")
    ok("cancel", efile, input_id)
    proc = run("cancel", efile, input_id)
    assert proc.returncode == 3 and b"has ended" in proc.stderr
    ok("cancel", efile)


def test_cancel_input_id_without_a_runtime_exits_3(efile):
    ok("send", efile, "hello", "--wait", *M, env=cli_env(HARNESSCTL_IDLE_TIMEOUT="0.2"))
    wait_for(lambda: not runtime_pids(efile), what="the runtime gone")
    proc = run("cancel", efile, "no-such-input")
    assert proc.returncode == 3 and b"no runtime serves it" in proc.stderr


def test_cancel_without_input_id_also_drops_the_queued_inputs(efile):
    busy(efile)
    input_id = sent(efile, "queued", "--queue")
    ok("cancel", efile)
    wait_for(lambda: len(results(efile)) == 2, what="both ended")
    dropped = [r for r in results(efile) if r["input_ids"] == [input_id]]
    assert [(r["status"], r["run_id"], r.get("error_class")) for r in dropped] == [("cancelled", None, None)]


def test_a_queued_send_may_bring_a_schema_for_its_own_run(efile, tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text('{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}')
    busy(efile, 1)
    proc = run("send", efile, "answer", "--queue", "--schema", str(schema), "--wait")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output_json"] == {"ok": False}


def test_the_run_an_interrupt_starts_outlives_the_cancels_grace_period(efile):
    env = cli_env(HARNESSCTL_CANCEL_GRACE="0.5")
    ok("send", efile, "/sleep 30\nfirst", *M, env=env)
    proc = run("send", efile, "/sleep 2\ninstead", "--interrupt", "--wait", env=env)
    assert proc.returncode == 0, proc.stderr
    assert [r["status"] for r in results(efile)] == ["cancelled", "completed"]


def test_an_interrupt_the_agent_ignores_still_starts_its_run_in_a_new_harness(efile):
    env = cli_env(HARNESSCTL_CANCEL_GRACE="1")
    agent = ("--adapter", "acp", "--agent", "%s %s" % (sys.executable, WEDGE))
    ok("send", efile, "/deaf", *agent, env=env)
    proc = run("send", efile, "instead", "--interrupt", "--wait", env=env)
    assert proc.returncode == 0, proc.stderr
    first, second = results(efile)
    assert first["status"] == "cancelled" and "did not end the run" in first["error"]
    assert second["output"] == "echo: instead"
