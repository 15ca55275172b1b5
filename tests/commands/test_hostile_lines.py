"""The record stays readable whatever is in it (issue 19, section 4): a line that
is not a well-formed event is skipped by every reader (EVENT.md, "Rules for
readers"), `wait` honours its deadline and compares parsed ids, no non-finite
number is ever written, and a read-only session can still be read.  Black-box
through the CLI with the mock adapter, where the contract is about the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from cliutil import ROOT, alive, of_type, ok, run, runtime_pids, wait_for

sys.path.insert(0, ROOT)

from harnessctl.eventfile import snapshot  # noqa: E402
from harnessctl.eventfile.eventlog import encode  # noqa: E402
from harnessctl.eventfile.state import Conversation  # noqa: E402
from harnessctl.store.address import Address  # noqa: E402
from harnessctl.store.bindingfile import read_binding  # noqa: E402

M = ("--adapter", "mock")
TS = "2026-12-02T10:40:33.794Z"


def stop(path: str, sig: int = signal.SIGTERM) -> None:
    """Stop the file's runtime (SIGTERM: it ends its runs; SIGKILL: it is lost) and wait until it is gone."""
    pids = runtime_pids(path)
    for pid in pids:
        os.kill(pid, sig)
    wait_for(lambda: not any(alive(p) for p in pids), 20, "the runtime gone")


def append(path: str, line: str) -> None:
    with open(path, "ab") as f:
        f.write(line.encode("utf-8") + b"\n")


def finished_session(path: str) -> str:
    """A session with one completed input and no runtime; that input's id."""
    ok("send", path, "hello", *M)
    ok("wait", path)
    stop(path)
    return of_type(path, "accepted")[0]["input_id"]


def lost_input(path: str) -> str:
    """A session whose runtime was killed during a run: its input is open in the file."""
    ok("send", path, "/sleep 30\nbusy", *M)
    stop(path, signal.SIGKILL)
    return of_type(path, "accepted")[0]["input_id"]


def result_line(input_ids: str, **fields: str) -> str:
    """A foreign result line; `fields` replace (or, with the value None, remove) fields as raw JSON text."""
    parts = {"type": '"result"', "ts": '"%s"' % TS, "seq": "1", "run_id": "null", "input_ids": input_ids,
             "status": '"completed"', "output": '""', "usage": "null", "cost_usd": "null", "error": "null"}
    parts.update(fields)
    return "{%s}" % ",".join('"%s":%s' % (k, v) for k, v in parts.items() if v is not None)


WRONG_TYPED = {
    "input_ids_a_number": result_line("5"),
    "input_ids_of_numbers": result_line("[1,2]"),
    "run_id_an_object_in_accepted":
        '{"type":"accepted","ts":"%s","seq":1,"input_id":"x","text":"x","delivery":"start","run_id":{"a":1}}' % TS,
    "run_id_an_object_in_result": result_line("[]", run_id='{"a":1}'),
    "input_id_a_list": '{"type":"accepted","ts":"%s","seq":1,"input_id":["x"],"text":"x","delivery":"start",'
                       '"run_id":null}' % TS,
    "request_id_a_number": '{"type":"request","ts":"%s","seq":1,"run_id":null,"request_id":7,"state":"pending",'
                           '"kind":"permission","message":"m","options":[]}' % TS,
    "request_id_of_unicode_digits": '{"type":"request","ts":"%s","seq":1,"run_id":null,"request_id":"req-\\u00b2",'
                                    '"state":"pending","kind":"permission","message":"m","options":[]}' % TS,
    "request_options_an_object": '{"type":"request","ts":"%s","seq":1,"run_id":null,"request_id":"req-9",'
                                 '"state":"pending","kind":"question","message":"m","options":[],'
                                 '"questions":[5]}' % TS,
    "seq_a_string": result_line("[]", seq='"1"'),
    "type_a_list": '{"type":["result"],"ts":"%s","seq":1}' % TS,
}


@pytest.mark.parametrize("name", sorted(WRONG_TYPED))
def test_a_wrong_typed_foreign_line_is_skipped_by_status_cancel_wait_and_send(efile, name):
    input_id = finished_session(efile)
    append(efile, WRONG_TYPED[name])
    for args in (("status", efile), ("cancel", efile), ("wait", efile), ("wait", efile, input_id)):
        proc = run(*args)
        assert proc.returncode == 0, (args, proc.returncode, proc.stderr)
    assert json.loads(ok("status", efile).stdout)["state"] == "idle"
    ok("send", efile, "again")  # a runtime starts on the file (it folds the line too)
    assert json.loads(ok("wait", efile).stdout)["state"] == "idle"


def test_a_result_without_status_does_not_close_its_input(efile):
    input_id = lost_input(efile)
    append(efile, result_line(json.dumps([input_id]), status=None))
    proc = run("wait", efile, input_id)
    assert proc.returncode == 7, proc.stderr  # the lost-runtime rule's failed result, not the foreign line
    assert json.loads(proc.stdout)["error"] == "runtime lost; input outcome is uncertain"


def test_a_foreign_pending_request_without_options_is_not_pending(efile):
    finished_session(efile)
    append(efile, '{"type":"request","ts":"%s","seq":1,"run_id":null,"request_id":"req-1","state":"pending",'
                  '"kind":"permission","message":"m"}' % TS)
    assert json.loads(ok("status", efile).stdout)["requests"] == []


def test_wait_finds_a_result_whose_input_id_is_written_with_an_escape(efile):
    input_id = lost_input(efile)
    escaped = '"\\u%04x%s"' % (ord(input_id[0]), input_id[1:])
    line = result_line("[%s]" % escaped)
    append(efile, line)
    proc = run("wait", efile, input_id, "--timeout", "20")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == line + "\n"  # the line as it is in the file


def test_wait_honours_its_timeout_when_the_cache_says_an_input_ended_that_the_file_does_not(efile):
    input_id = lost_input(efile)
    ok("status", efile)  # the lost-runtime rule: the input has its failed result
    addr = Address(os.path.realpath(efile))
    size = os.path.getsize(efile)
    with open(efile, "rb+") as f:  # the result line is taken out again, the cache is left claiming it
        lines = f.read().split(b"\n")
        keep = b"\n".join(line for line in lines if b'"type":"result"' not in line)
        f.seek(0)
        f.write(keep)
        f.truncate()
    conv, _, _ = snapshot.load(addr)
    conv.open_inputs.clear()
    conv.open_runs.clear()
    snapshot.save(addr, conv, os.path.getsize(efile), read_binding(addr))
    assert os.path.getsize(efile) < size
    proc = run("wait", efile, input_id, "--timeout", "1")
    assert proc.returncode == 10, (proc.returncode, proc.stderr)


@pytest.mark.parametrize("live", [True, False], ids=["live", "stopped"])
def test_wait_with_an_empty_input_id_is_a_usage_error_with_or_without_a_runtime(efile, live):
    ok("send", efile, "hello", *M)
    if not live:
        stop(efile)
    proc = run("wait", efile, "")
    assert proc.returncode == 2 and b"empty INPUT_ID" in proc.stderr, proc.stderr


def test_a_snapshot_whose_conversation_has_wrong_types_is_ignored(efile):
    finished_session(efile)
    addr = Address(os.path.realpath(efile))
    conv, offset, _ = snapshot.load(addr)
    conv.open_inputs = {"x": 5}  # type: ignore[dict-item]
    snapshot.save(addr, conv, offset, None)
    proc = run("cancel", efile)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(ok("status", efile).stdout)["state"] == "idle"


def test_the_conversation_of_a_snapshot_is_checked_field_by_field():
    with pytest.raises(ValueError):
        Conversation.from_dict({"pending": {"req-1": {"type": "request", "request_id": "req-1"}}})
    with pytest.raises(ValueError):
        Conversation.from_dict({"open_runs": {"r1": "i1"}})
    assert Conversation.from_dict({"seq": 3, "open_inputs": {"i1": None}}).open_inputs == {"i1": None}


# -- no non-finite number ---------------------------------------------------------------


def test_a_non_finite_number_is_written_as_null():
    line = encode({"type": "result", "cost_usd": float("inf"), "usage": {"input_tokens": float("nan")}})
    assert json.loads(line, parse_constant=lambda name: pytest.fail("%s written" % name)) == {
        "type": "result", "cost_usd": None, "usage": {"input_tokens": None}}


def test_a_lone_surrogate_from_a_foreign_line_is_written_escaped():
    line = encode({"type": "request", "message": "\ud800 and \u00e9"})
    assert line == b'{"type":"request","message":"\\ud800 and \\u00e9"}\n'


@pytest.mark.parametrize("amount", [1e999, 10 ** 400, float("nan"), True, "1.5"])
def test_the_acp_adapter_takes_no_cost_that_is_not_a_finite_number(amount):
    from adapters.acp import wire

    assert wire.cost({"cost": {"amount": amount, "currency": "USD"}}) is None


@pytest.mark.parametrize("frame", [
    {"total_cost_usd": 1e999},
    {"total_cost_usd": 10 ** 400},
    {"model_usage_since_last_result": {"m": {"costUSD": 1e999}}},
    {"model_usage_since_last_result": {"m": {"costUSD": "a lot"}}},
])
def test_the_claude_code_adapter_takes_no_cost_that_is_not_a_finite_number(frame):
    from adapters.claudecode import wire

    assert wire.turn_cost(frame, 0.0)[0] in (None, 0.0)


# -- a read-only filesystem ---------------------------------------------------------------


@pytest.fixture
def read_only(workdir):
    """A tmpfs with a finished session and, beside it, one whose runtime was lost
    during a run; then remounted read-only.  Skipped where mounting is not allowed."""
    from torture_support import tmpfs

    with tmpfs(str(workdir / "ro"), "size=16m") as mount:
        done, lost = os.path.join(mount, "done.jsonl"), os.path.join(mount, "lost.jsonl")
        ids = {"done": finished_session(done), "lost": lost_input(lost)}
        proc = run("status", done)  # nothing left for the file's next writer
        assert proc.returncode == 0
        remount = subprocess.run(["mount", "-o", "remount,ro", mount])
        if remount.returncode != 0:
            pytest.skip("cannot remount read-only")
        yield done, lost, ids


def test_status_wait_and_cancel_read_a_session_on_a_read_only_filesystem(read_only):
    done, _, ids = read_only
    before = open(done, "rb").read()
    for args in (("status", done), ("wait", done), ("wait", done, ids["done"]), ("cancel", done)):
        proc = run(*args)
        assert proc.returncode == 0, (args, proc.returncode, proc.stderr)
    assert json.loads(ok("status", done).stdout)["runtime"] == "stopped"
    assert open(done, "rb").read() == before


def test_status_of_a_lost_run_on_a_read_only_filesystem_shows_what_recovery_will_record(read_only):
    _, lost, ids = read_only
    before = open(lost, "rb").read()
    report = json.loads(ok("status", lost).stdout)
    assert report["state"] == "failed" and report["runtime"] == "stopped"
    assert open(lost, "rb").read() == before


def test_cancel_and_wait_of_a_lost_run_on_a_read_only_filesystem_say_the_file_cannot_be_written(read_only):
    _, lost, ids = read_only
    for args in (("cancel", lost), ("wait", lost, ids["lost"])):
        proc = run(*args)
        assert proc.returncode == 1 and b"read-only" in proc.stderr, (args, proc.stderr)
