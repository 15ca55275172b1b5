"""`send --wait` and `wait` say the harness's warnings and retries on stderr
while they wait, one line each, once per kind, each as it comes; stdout stays
the answer alone (docs/PROTOCOL-COMMANDS.md section 9).  Black-box through the CLI with
the mock's `/warning SOURCE TEXT` directive; the once-per-kind rule on
harnessctl.notes itself."""

from __future__ import annotations

import json
import os
import select
import time

import cliutil
from cliutil import interruptible, of_type, ok, run, wait_for

from harnessctl.notes import Notes

M = ("--adapter", "mock")
NOTE_START = b"harnessctl: mock is retrying: "
# A harness that keeps retrying, as codex without network: a retry every half second for a minute.
RETRYING = "\n".join("/warning api_retry API request failed (529); retry %d of 120\n/sleep 0.5" % i
                     for i in range(1, 121))


def start(*args):
    return cliutil.start(*args, preexec_fn=interruptible)


def stderr_line(proc, timeout=60):
    """The first line `proc` writes on stderr (read without blocking past `timeout`)."""
    fd = proc.stderr.fileno()
    data = b""
    deadline = time.monotonic() + timeout
    while b"\n" not in data:
        left = deadline - time.monotonic()
        assert left > 0 and select.select([fd], [], [], left)[0], "no line on stderr; so far %r" % data
        chunk = os.read(fd, 4096)
        assert chunk, "stderr closed; so far %r" % data
        data += chunk
    line, _, rest = data.partition(b"\n")
    return line, rest


def test_send_wait_says_a_retry_once_on_stderr_and_prints_only_the_result(efile):
    text = "/warning api_retry API request failed (529); retry 1 of 3\n" \
           "/warning api_retry API request failed (529); retry 2 of 3\n/warning api_retry retry 3 of 3"
    proc = run("send", efile, text, "--wait", *M)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["type"] == "result" and proc.stdout.count(b"\n") == 1
    (note,) = proc.stderr.decode().splitlines()
    assert note.startswith(NOTE_START.decode()) and note.endswith("; see harnessctl log %s" % efile), note


def test_send_wait_says_the_retry_while_the_run_still_goes_on(efile):
    waiting = start("send", efile, RETRYING, "--wait", *M)
    note, _ = stderr_line(waiting)
    assert note.startswith(NOTE_START) and b"retry" in note
    assert of_type(efile, "result") == []  # said while waiting, not at the end
    ok("cancel", efile)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 8, err
    assert json.loads(out)["status"] == "cancelled" and out.count(b"\n") == 1  # stdout: the result alone


def test_wait_says_the_retry_too(efile):
    input_id = ok("send", efile, RETRYING, "--print-id", *M).stdout.decode().strip()
    waiting = start("wait", efile, input_id)
    note, _ = stderr_line(waiting)
    assert note.startswith(NOTE_START)
    ok("cancel", efile)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 8 and json.loads(out)["input_ids"] == [input_id], err


def test_a_warning_that_is_no_retry_is_said_as_warns_made_terminal_safe(efile):
    proc = run("send", efile, "/warning configWarning model \x1b[31mold\x1b[0m is deprecated", "--wait", *M)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.decode() == ("harnessctl: mock warns: model \\x1b[31mold\\x1b[0m is deprecated; "
                                    "see harnessctl log %s\n" % efile)


def test_a_wait_without_warnings_says_nothing_on_stderr(efile):
    proc = run("send", efile, "hello", "--wait", *M)
    assert (proc.returncode, proc.stderr) == (0, b"")


def test_a_retry_after_an_unrelated_warning_is_said_too(efile):
    text = "/warning configWarning model old is deprecated\n/warning error Reconnecting... 1/5"
    proc = run("send", efile, text, "--wait", *M)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.decode().splitlines() == [
        "harnessctl: mock warns: model old is deprecated; see harnessctl log %s" % efile,
        "harnessctl: mock is retrying: Reconnecting... 1/5; see harnessctl log %s" % efile]


# -- the rules, on the notes themselves ---------------------------------------------------


def notes():
    said = []
    return Notes("/nowhere/events.jsonl", 0, said.append), said


def warning(source, message="something"):
    return {"type": "log", "level": "warning", "kind": "warning", "source": source, "message": message}


def test_each_kind_is_said_once_per_wait():
    n, said = notes()
    for i in range(3):
        n.seen(warning("error", "Reconnecting... %d/5" % i))
        n.due()
    assert said == ["harnessctl: the harness is retrying: Reconnecting... 0/5; "
                    "see harnessctl log /nowhere/events.jsonl"]


def test_a_note_of_the_other_kind_is_said_at_once_after_the_first():
    n, said = notes()
    n.seen(warning("configWarning", "old model"))
    n.due()
    n.seen(warning("error", "Reconnecting... 1/5"))
    n.due()
    assert said[1:] == ["harnessctl: the harness is retrying: Reconnecting... 1/5; "
                        "see harnessctl log /nowhere/events.jsonl"], said


def test_an_acp_agents_lack_of_progress_is_said_after_an_unrelated_warning():
    n, said = notes()
    n.seen(warning("notice", "Model metadata for `m` not found"))
    n.due()
    n.seen(warning("no_progress", "the ACP agent codex has shown no progress 10 s after the prompt"))
    n.due()
    assert said[1:] == ["harnessctl: the harness warns: the ACP agent codex has shown no progress 10 s after the "
                        "prompt; see harnessctl log /nowhere/events.jsonl"], said


def test_commands_the_harness_cannot_sandbox_are_said_after_an_unrelated_warning():
    n, said = notes()
    n.seen(warning("warning", "Model metadata for `mock-model` not found"))
    n.due()
    n.seen(warning("sandbox", "codex cannot sandbox its commands, so each one fails: bwrap: execvp "
                   "codex-linux-sandbox: No such file or directory"))
    n.due()
    assert said[1:] == ["harnessctl: the harness warns: codex cannot sandbox its commands, so each one fails: "
                        "bwrap: execvp codex-linux-sandbox: No such file or directory; "
                        "see harnessctl log /nowhere/events.jsonl"], said


def test_a_note_is_one_line_of_at_most_200_characters_of_the_message():
    n, said = notes()
    n.seen(warning(None, "first line\nsecond line " + "x" * 500))
    n.due()
    (note,) = said
    message = note[len("harnessctl: the harness warns: "):note.index("; see harnessctl log")]
    assert "\n" not in note and message.startswith("first line second line x") and len(message) == 200


def test_only_log_lines_of_kind_warning_are_said():
    n, said = notes()
    n.seen({"type": "log", "level": "warning", "kind": "diagnostic", "message": "2 log events dropped"})
    n.seen({"type": "result", "kind": "warning", "message": "not a log line"})
    n.due()
    assert said == []


def test_an_mcp_wait_gives_the_note_in_a_progress_message_and_keeps_stdout_json_rpc(workdir, efile):
    from mcp_support.client import Client  # its reader fails on any stdout line that is not JSON

    mcp = Client("--root", str(workdir), cwd=str(workdir))
    try:
        mcp.initialize()
        call = mcp.start("tools/call", {"name": "send", "_meta": {"progressToken": "t"}, "arguments": {
            "file": efile, "text": RETRYING, "adapter": "mock", "wait": True}})
        wait_for(lambda: [p for p in mcp.progress("t") if "mock is retrying: API request failed" in p["message"]],
                 60, "a progress message with the note")
        ok("cancel", efile)
        assert mcp.answer(call)["result"]["structuredContent"]["outcome"] == "cancelled"
    finally:
        mcp.proc.kill()
        mcp.proc.wait()
