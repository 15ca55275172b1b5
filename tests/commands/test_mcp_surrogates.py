"""Every line `harnessctl mcp` writes is valid UTF-8 JSON that a strict parser (jq) takes: a lone surrogate
a client sent as a JSON escape (`"\\ud800"`) in an id, a method, a revision or a tool's arguments comes back
replaced (U+FFFD), never echoed as `\\ud800`; a surrogate pair that is one character stays that character."""

from __future__ import annotations

import json
import re

import pytest
from cliutil import run

LONE = re.compile(r"[\ud800-\udfff]")

LINES = {  # each sends "\ud800" where an answer may echo it
    "id of an unknown method": r'{"jsonrpc":"2.0","id":"a\ud800","method":"no/such"}',
    "method": r'{"jsonrpc":"2.0","id":1,"method":"x\ud800"}',
    "low surrogate in the id": r'{"jsonrpc":"2.0","id":"\udc80","method":"ping"}',
    "modern revision": r'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":'
                       r'{"io.modelcontextprotocol/protocolVersion":"\ud800"}}}',
    "tool name": r'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x\ud800","arguments":{}}}',
    "tool argument": r'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"status",'
                     r'"arguments":{"files":["\ud800.jsonl"]}}}',
    "bad params with the id": r'{"jsonrpc":"2.0","id":"\ud800","method":"ping","params":[]}',
}


def answers(workdir, *lines):
    """The lines the server wrote for `lines` (after an initialize), as bytes."""
    init = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
    proc = run("mcp", "--root", str(workdir), input="\n".join((init,) + lines).encode() + b"\n", cwd=str(workdir))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()[1:]


def strings(value):
    """Every string of a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@pytest.mark.parametrize("kind", sorted(LINES))
def test_an_answer_echoing_a_lone_surrogate_is_strict_utf8_json(workdir, kind):
    (line,) = answers(workdir, LINES[kind])
    value = json.loads(line.decode("utf-8"))  # strict: the bytes are UTF-8
    assert not [s for s in strings(value) if LONE.search(s)], line
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate


def test_a_lone_surrogate_in_the_id_comes_back_replaced(workdir):
    (line,) = answers(workdir, LINES["id of an unknown method"])
    assert json.loads(line)["id"] == "a\ufffd"


def test_a_surrogate_pair_in_the_id_is_its_one_character(workdir):
    (line,) = answers(workdir, r'{"jsonrpc":"2.0","id":"\ud83d\ude00","method":"ping"}')
    assert json.loads(line)["id"] == "\U0001f600"
