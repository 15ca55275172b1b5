"""harnessctl.kit.jsonrpc.Calls: requests numbered, responses routed to their callbacks."""

from __future__ import annotations

from harnessctl.kit.jsonrpc import Calls


def calls(version=None):
    wire = []
    return Calls(wire.append, version), wire


def test_each_request_gets_its_own_id():
    rpc, wire = calls()
    first = rpc.call("a", {}, lambda r, e: None)
    second = rpc.call("b", {"x": 1}, lambda r, e: None)
    assert first != second
    assert wire == [{"id": first, "method": "a", "params": {}}, {"id": second, "method": "b", "params": {"x": 1}}]


def test_a_response_reaches_the_callback_of_its_request_once():
    rpc, _ = calls()
    seen = []
    rpc.call("a", {}, lambda r, e: seen.append(("a", r, e)))
    second = rpc.call("b", {}, lambda r, e: seen.append(("b", r, e)))
    assert rpc.answered({"id": second, "result": {"ok": True}})
    assert not rpc.answered({"id": second, "result": {"ok": True}})
    assert seen == [("b", {"ok": True}, None)]


def test_an_error_response_gives_the_error_and_no_result():
    rpc, _ = calls()
    seen = []
    request_id = rpc.call("a", {}, lambda r, e: seen.append((r, e)))
    rpc.answered({"id": request_id, "error": {"code": -32601, "message": "no"}})
    assert seen == [(None, {"code": -32601, "message": "no"})]


def test_a_response_with_an_unknown_id_is_not_answered():
    rpc, _ = calls()
    rpc.call("a", {}, lambda r, e: None)
    assert not rpc.answered({"id": 99, "result": {}})


def test_the_version_is_on_every_message_when_given():
    rpc, wire = calls("2.0")
    rpc.call("a", {}, lambda r, e: None)
    rpc.notify("n", {"x": 1})
    rpc.respond(7, {"done": True})
    rpc.refuse(8, -32601, "Method not found: m")
    assert [m["jsonrpc"] for m in wire] == ["2.0"] * 4
    assert wire[1:] == [{"jsonrpc": "2.0", "method": "n", "params": {"x": 1}},
                        {"jsonrpc": "2.0", "id": 7, "result": {"done": True}},
                        {"jsonrpc": "2.0", "id": 8, "error": {"code": -32601, "message": "Method not found: m"}}]


def test_a_notification_without_params_has_no_params_field():
    rpc, wire = calls()
    rpc.notify("initialized")
    assert wire == [{"method": "initialized"}]
