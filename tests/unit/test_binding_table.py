"""fields.FIELDS is the one table of the bound settings: each test here walks
it, so a new row is held to everything a bound setting must have (a flag in
`send --help` that the parser takes, its place in the MCP send tool, what
`status` shows, its check, a trip through each face and over the socket),
and the send request's version is said plainly when command and runtime
differ."""

from __future__ import annotations

import os
import threading

import pytest

from harnessctl import arguments, binding, client, fields, helptext
from harnessctl.commandtable import BY_NAME
from harnessctl.errors import HarnessctlError, UnavailableError, UsageError
from harnessctl.eventfile.state import Conversation, status_report
from harnessctl.fields import ALWAYS, FIELDS, NAMES, THAT_BOUND, WHEN_BOUND
from harnessctl.mcp.tools import SCHEMAS
from harnessctl.store import ipc, trusted
from harnessctl.store.address import Address
from harnessctl.store.bindingfile import write_binding

# A value of each bound field as binding.json holds it (a new row needs one here).
SAMPLES = {"cwd": "/tmp", "model": "gpt-x", "adapter": "mock", "agent": "gemini", "mode": "edit",
           "rules": [["allow", "command:ls*"], ["deny", "*"]], "max_tokens": 1000, "max_cost_usd": 2.5,
           "on_request": "/bin/true request", "on_result": "/bin/echo result", "sandbox": True,
           "sandbox_write": ["/srv/cache"], "worktree": {"path": "/srv/r.worktrees/a", "branch": "harnessctl/a",
                                                         "base": "a" * 40, "repo": "/srv/r/.git"}}
OTHERS = {"cwd": "/", "model": "gpt-y", "adapter": "codex", "agent": "codex", "mode": "full",
          "rules": [["deny", "*"]], "max_tokens": 2000, "max_cost_usd": 3.0, "on_request": "/bin/false",
          "on_result": "/bin/false", "sandbox": False, "sandbox_write": ["/srv/other", "/opt/x"],
          "worktree": {"path": "/srv/r.worktrees/b", "branch": "harnessctl/b", "base": "b" * 40, "repo": "/srv/r/.git"}}

# What a send asks for: the bound value, but for the worktree, which a send asks for by a switch and which binds
# the worktree it made (binding.with_worktree).
WISHES = dict(SAMPLES, worktree=True)


def test_every_field_has_a_sample_and_one_name():
    assert set(SAMPLES) == set(OTHERS) == set(NAMES) and len(NAMES) == len(set(NAMES))


@pytest.mark.parametrize("field", FIELDS, ids=NAMES)
def test_each_field_has_its_flag_in_send_help_and_the_parser(field):
    text = helptext.command_help("send", None)
    assert "\n  %s " % field.flag in text and field.usage in " ".join(helptext.SYNOPSIS["send"].split())
    assert field.flag in BY_NAME["send"].options + BY_NAME["send"].flags
    if field.variable is not None:
        assert field.variable in text


@pytest.mark.parametrize("field", FIELDS, ids=NAMES)
def test_the_mcp_send_tool_offers_each_field_its_row_offers(field):
    properties = SCHEMAS["send"]["inputSchema"]["properties"]
    if field.mcp is None:
        assert field.name not in properties
    else:
        assert properties[field.name] == field.mcp


@pytest.mark.parametrize("field", FIELDS, ids=NAMES)
def test_status_shows_each_field_as_its_row_says(field):
    bare = status_report(Conversation(), {"adapter": "mock", "cwd": "/", "model": None}, alive=False)
    bound = status_report(Conversation(), {"adapter": "mock", "cwd": "/", field.name: SAMPLES[field.name]},
                          alive=False)
    if field.status == ALWAYS:
        assert field.name in bare and bound[field.name] == SAMPLES[field.name]
    else:
        assert field.name not in bare
        assert bound[field.name] == (True if field.status == THAT_BOUND else SAMPLES[field.name])
        assert field.status in (WHEN_BOUND, THAT_BOUND)


def test_status_keeps_its_order_of_keys():
    report = status_report(Conversation(), SAMPLES, alive=True)
    assert list(report) == ["state", "run_id", "queued", "requests", "cwd", "model", "adapter", "mode", "runtime",
                            "last_activity", "worktree", "agent", "rules", "sandbox", "sandbox_write", "totals",
                            "max_tokens", "max_cost_usd", "on_request", "on_result"]


@pytest.mark.parametrize("field", FIELDS, ids=NAMES)
def test_each_field_check_takes_its_sample_and_refuses_another_shape(field):
    assert field.check(SAMPLES[field.name]) and field.check({}) is False


@pytest.mark.parametrize("field", FIELDS, ids=NAMES)
def test_a_binding_a_rows_check_refuses_is_never_written(field, tmp_path):
    """A row's check is its whole check: a value no read would take is refused before the record and the sidecar."""
    addr = Address(str(tmp_path / "s.jsonl"))
    with pytest.raises(UsageError, match="not a value it can bind"):
        write_binding(addr, dict(SAMPLES, **{field.name: {}}))
    assert os.listdir(str(tmp_path)) == [] and trusted.latest(addr.path) is None


@pytest.mark.parametrize("field", FIELDS, ids=NAMES)
def test_a_later_send_may_change_a_field_only_where_its_row_says(field):
    wanted = dict.fromkeys(NAMES, None)
    wanted[field.name] = OTHERS[field.name]
    if field.change:
        binding.check_binding(SAMPLES, wanted)
        assert binding.changed(SAMPLES, wanted) == {field.name: OTHERS[field.name]}
    else:
        with pytest.raises(UsageError, match="%s is bound to this event path" % field.name):
            binding.check_binding(SAMPLES, wanted)
        assert binding.changed(SAMPLES, wanted) == {}


def test_every_field_round_trips_the_send_request():
    request = binding.send_request("hi\nthere", '{"type":"object"}', dict(WISHES))
    assert request[0] == "send/%d" % binding.SEND_VERSION
    heard = ipc.decode_fields(ipc.encode_fields(request))
    assert binding.read_send_request(heard, "/f.jsonl") == ("hi\nthere", '{"type":"object"}', WISHES, None)


def test_every_field_passes_on_as_the_send_flags_the_parser_takes_back():
    options, rules = fields.as_flags(WISHES)
    argv = ["send", "f.jsonl", "hi"] + [word for name, value in options.items() for word in (name, value) if word]
    argv += [word for verb, value in rules for word in ("--" + verb, value)]
    assert arguments.parse(argv) == ("send", ["f.jsonl", "hi"], options, rules)
    assert {field.flag for field in FIELDS if field.name not in ("rules", "sandbox_write")} == set(options)
    assert rules == [("allow", "command:ls*"), ("deny", "*"), ("sandbox-write", "/srv/cache")]


def test_the_send_flags_of_every_field_read_back_as_the_same_wish():
    """A send passed on to another machine asks there what it asked here."""
    assert fields.from_flags(*fields.as_flags(WISHES)) == WISHES


def test_the_mcp_send_tool_arguments_read_as_the_flags_do():
    offered = {name: WISHES[name] for name in fields.mcp_properties()}
    options, rules = fields.as_flags(offered)
    assert fields.parsed(offered) == fields.from_flags(options, rules) == offered


def test_a_send_request_without_values_reads_as_nothing_given():
    request = binding.send_request("hi", None, dict.fromkeys(NAMES, None))
    assert binding.read_send_request(request, "/f.jsonl") == ("hi", "", dict.fromkeys(NAMES, None), None)


@pytest.mark.parametrize("request_fields, command", [
    (["send", "hi"] + [""] * 11, "an earlier harnessctl) sent version 1"),
    (["send/3", "harnessctl=9.9", "text=hi"], "harnessctl 9.9) sent version 3"),
])
def test_a_runtime_says_which_versions_differ_and_applies_nothing(request_fields, command):
    with pytest.raises(UnavailableError) as raised:
        binding.read_send_request(request_fields, "/f.jsonl")
    message = str(raised.value)
    assert message.startswith("the runtime serving /f.jsonl is harnessctl ") and command in message
    assert "nothing was sent" in message and "\n" not in message


@pytest.mark.parametrize("request_fields", [["send/2", "harnessctl=0", "model=x"], ["send/2", "text=hi", "nope"],
                                            ["send/2", "text=hi", "max_tokens=many"], ["send/2", "text=a", "bad=1"]])
def test_a_malformed_send_request_is_refused(request_fields):
    with pytest.raises(HarnessctlError, match="malformed send request"):
        binding.read_send_request(request_fields, "/f.jsonl")


def test_a_command_hears_that_an_earlier_runtime_cannot_read_its_send(tmp_path):
    """A runtime of before the named request calls it malformed: the command says why instead."""
    path = str(tmp_path / "s.jsonl")
    open(path, "w").close()
    os.mkdir(path + ".d", 0o700)
    server = ipc.listen(Address(path).socket)
    heard = []

    def old_runtime() -> None:
        conn = ipc.accept(server)
        heard.append(ipc.decode_fields(ipc.read_all(conn)))
        conn.sendall(ipc.encode_response(1, "malformed request %r" % heard[0][1]))  # after the proof
        conn.close()

    thread = threading.Thread(target=old_runtime)
    thread.start()
    try:
        with pytest.raises(UnavailableError, match="is an earlier harnessctl, which reads send requests of "
                                                   "version 1; this command .* sent version 2: nothing was sent"):
            client.send(path, "hi", {"adapter": "mock"})
    finally:
        thread.join(10)
        server.close()
    assert heard[0][0].startswith(ipc.PROOF) and heard[0][1] == "send/2"
    assert "text=hi" in heard[0] and "adapter=mock" in heard[0]


@pytest.mark.parametrize("field", FIELDS, ids=NAMES)
def test_a_new_file_binds_each_field_a_send_gives(field, tmp_path):
    given = {"adapter": "acp" if field.name == "agent" else "mock", field.name: SAMPLES[field.name]}
    given["cwd"] = str(tmp_path)  # the cwd's sample too: a real directory
    if field.name == "sandbox_write":  # a folder of the box, which must exist
        given.update(sandbox=True, sandbox_write=[str(tmp_path)])
    new = binding.new_binding(binding.asked(given))
    assert field.name in new and new["adapter"] == given["adapter"] and new["cwd"] == os.path.realpath(given["cwd"])
    if field.status != THAT_BOUND and field.name not in ("cwd", "sandbox_write"):  # hooks: by their real path
        assert new[field.name] == SAMPLES[field.name]


def test_a_command_hears_that_an_earlier_runtime_reads_no_proof(tmp_path):
    """A runtime of before the proof (ipc.encode_request) reads it as its operation and calls it malformed."""
    path = str(tmp_path / "s.jsonl")
    open(path, "w").close()
    os.mkdir(path + ".d", 0o700)
    server = ipc.listen(Address(path).socket)

    def old_runtime() -> None:
        conn = ipc.accept(server)
        op = ipc.decode_fields(ipc.read_all(conn))[0]
        conn.sendall(ipc.encode_response(1, "malformed request %r" % op))
        conn.close()

    thread = threading.Thread(target=old_runtime)
    thread.start()
    try:
        with pytest.raises(UnavailableError, match="is an earlier harnessctl, which reads no proof: nothing was sent"):
            client.send(path, "hi", {"adapter": "mock"})
    finally:
        thread.join(10)
        server.close()
