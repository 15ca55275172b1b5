"""What a remote status teaches the forward (harnessctl/remote/tunnel.py): a line from another machine
is untrusted, so only a socket path and a proof that ssh's `-L` reads as meant are kept."""

from __future__ import annotations

import json

import pytest

from harnessctl.remote.address import parse
from harnessctl.remote.tunnel import Tunnel

LINE = {"state": "idle", "runtime": "stopped", "totals": {"tokens": 0}}


@pytest.fixture
def tunnel(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESSCTL_STATE_DIR", str(tmp_path / "state"))
    return Tunnel(parse("ssh://box/srv/a.jsonl"))


def with_forward(socket, proof="0a1b2c"):
    return json.dumps(dict(LINE, forward={"socket": socket, "proof": proof}), separators=(",", ":"))


def test_a_sound_forward_is_kept_and_taken_out_of_the_line(tunnel):
    line = tunnel.learn(with_forward("/srv/a.jsonl.d/runtime.sock"))
    assert json.loads(line) == LINE
    assert tunnel.known()


@pytest.mark.parametrize("socket", ["/srv/a:b.sock", "/srv/a b.sock", "relative.sock", "/srv/a\n.sock", 7])
def test_a_socket_path_ssh_would_read_otherwise_is_never_kept(tunnel, socket):
    assert json.loads(tunnel.learn(with_forward(socket))) == LINE
    assert not tunnel.known()


@pytest.mark.parametrize("proof", ["", "ab cd", "ab\0cd", None])
def test_a_proof_that_is_no_plain_word_is_never_kept(tunnel, proof):
    tunnel.learn(with_forward("/srv/a.jsonl.d/runtime.sock", proof))
    assert not tunnel.known()


@pytest.mark.parametrize("line", ['{"state":"idle","runtime":"stopped"}', "not json", "[1,2]"])
def test_a_line_without_a_forward_is_left_as_it_came(tunnel, line):
    assert tunnel.learn(line) == line
    assert not tunnel.known()
