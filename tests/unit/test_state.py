"""Unit tests of the pure fold from events to conversation state."""

from __future__ import annotations

import itertools

from harnessctl.eventfile.state import LOST, Conversation, close_open_work, fold

SEQ = itertools.count(1)
TS = "2026-12-02T10:40:33.794Z"


def accepted(input_id, run_id, delivery="start"):
    return {"type": "accepted", "ts": TS, "seq": next(SEQ), "input_id": input_id, "text": input_id,
            "delivery": delivery, "run_id": run_id}


def result(run_id, input_ids, status="completed"):
    return {"type": "result", "ts": TS, "seq": next(SEQ), "run_id": run_id, "input_ids": input_ids, "status": status,
            "output": "", "usage": None, "cost_usd": None, "error": None}


def request(request_id, state, run_id="r1"):
    return {"type": "request", "ts": TS, "seq": next(SEQ), "request_id": request_id, "state": state, "run_id": run_id,
            "kind": "permission", "message": "ok?", "options": ["allow", "deny"]}


def test_a_started_run_is_running_until_its_result():
    conv = fold([accepted("i1", "r1")])
    assert conv.status()["state"] == "running" and conv.active_run() == "r1"
    conv.apply(result("r1", ["i1"]))
    assert conv.status()["state"] == "idle" and not conv.is_busy()


def test_steered_inputs_share_the_run_and_one_result():
    conv = fold([accepted("i1", "r1"), accepted("i2", "r1", "steer"), result("r1", ["i1", "i2"])])
    assert conv.open_inputs == {} and conv.anomalies == [] and conv.inputs_seen == 2


def test_unattributed_input_is_queued_until_its_snapshot_names_the_run():
    conv = fold([accepted("i1", "r1"), accepted("i2", None, "steer")])
    assert conv.status()["queued"] == 1
    conv.apply(accepted("i2", "r2", "steer"))
    assert conv.status()["queued"] == 0 and conv.open_runs == {"r1": ["i1"], "r2": ["i2"]}


def test_a_later_snapshot_never_changes_a_confirmed_run():
    conv = fold([accepted("i1", "r1"), accepted("i1", "r9")])
    assert conv.open_inputs["i1"] == "r1" and conv.anomalies


def test_a_pending_request_means_awaiting_reply_until_replied():
    conv = fold([accepted("i1", "r1"), request("req-1", "pending")])
    assert conv.status()["state"] == "awaiting_reply"
    assert conv.status()["requests"] == [{"request_id": "req-1", "kind": "permission", "message": "ok?"}]
    conv.apply(request("req-1", "replied"))
    assert conv.status()["state"] == "running" and conv.closed_requests == {"req-1": "replied"}
    assert conv.request_count == 1


def test_latest_failed_result_makes_the_state_failed():
    assert fold([accepted("i1", "r1"), result("r1", ["i1"], "failed")]).status()["state"] == "failed"


def test_cancelling_is_reported_only_while_work_is_open():
    conv = fold([accepted("i1", "r1")])
    assert conv.status(cancelling=True)["state"] == "cancelling"
    conv.apply(result("r1", ["i1"], "cancelled"))
    assert conv.status(cancelling=True)["state"] == "idle"


def test_a_duplicate_result_is_an_anomaly():
    conv = fold([accepted("i1", "r1"), result("r1", ["i1"]), result("r1", ["i1"])])
    assert conv.anomalies


def test_close_open_work_fails_every_open_input_and_expires_requests():
    conv = fold([accepted("i1", "r1"), accepted("i2", "r1", "steer"), accepted("i3", None, "steer"),
                 request("req-1", "pending")])
    events = close_open_work(conv, LOST)
    results = [e for e in events if e["type"] == "result"]
    assert {tuple(r["input_ids"]) for r in results} == {("i1", "i2"), ("i3",)}
    assert all(r["status"] == "failed" and r["error"] == LOST for r in results)
    assert [e["state"] for e in events if e["type"] == "request"] == ["expired"]
    for event in events:
        conv.apply(event, unwritten=True)  # as the runtime folds what it has not written yet
    assert not conv.is_busy() and conv.anomalies == []


def test_close_open_work_of_an_idle_conversation_is_empty():
    assert close_open_work(fold([accepted("i1", "r1"), result("r1", ["i1"])]), LOST) == []


def test_the_fold_survives_a_round_trip_through_its_snapshot():
    log = {"type": "log", "seq": 1000, "ts": "2026-12-02T10:40:33.794Z"}
    conv = fold([accepted("i1", "r1"), request("req-1", "pending"), log])
    again = Conversation.from_dict(conv.to_dict())
    assert again.status() == conv.status() and again.seq == 1000 and again.request_count == 1


def test_runtime_ids_are_version_4_uuids():
    import uuid

    from harnessctl.runtime.host import new_id

    assert uuid.UUID(new_id()).version == 4 and new_id() != new_id()
