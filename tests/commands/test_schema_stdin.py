"""`send --schema -`: the schema is the JSON document that leads stdin, and
TEXT (when not given as an argument) follows it: how a remote send carries a
local schema file without a second channel (docs/COMMANDS.md)."""

from __future__ import annotations

import json

from cliutil import events, of_type, run

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def send(efile, *args, stdin):
    return run("send", efile, "--adapter", "mock", "--schema", "-", "--wait", *args, input=stdin)


def test_the_schema_and_then_the_text_come_on_stdin(efile):
    proc = send(efile, stdin=(json.dumps(SCHEMA) + '\n/json {"n": 3}\nsecond line').encode())
    assert proc.returncode == 0, proc.stderr
    [accepted] = of_type(efile, "accepted")
    assert accepted["schema"] == SCHEMA and accepted["text"] == '/json {"n": 3}\nsecond line'


def test_a_text_argument_takes_the_schema_alone_from_stdin(efile):
    proc = send(efile, '/json {"n": 1}', stdin=json.dumps(SCHEMA).encode() + b"\n")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output_json"] == {"n": 1}


def test_stdin_with_more_than_the_schema_and_a_text_argument_is_exit_2(efile):
    proc = send(efile, "hello", stdin=(json.dumps(SCHEMA) + "\nand more").encode())
    assert proc.returncode == 2 and "give one" in proc.stderr.decode()
    assert events(efile) == []


def test_stdin_that_does_not_start_with_a_json_object_is_exit_2(efile):
    for stdin in (b"not json\nhello", b"[1, 2]\nhello"):
        proc = send(efile, stdin=stdin)
        assert proc.returncode == 2 and "--schema -" in proc.stderr.decode()
    assert events(efile) == []


def test_a_schema_with_no_text_after_it_is_an_empty_text(efile):
    proc = send(efile, stdin=json.dumps(SCHEMA).encode())
    assert proc.returncode == 2 and "empty text" in proc.stderr.decode()
