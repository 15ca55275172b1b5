"""`send --wait` / `wait FILE INPUT_ID` end to end through the CLI against the
REAL codex (`app-server`) and the REAL claude (`claude -p` stream-json), each
pointed at the loopback mock model server its own real tests use (no login,
no network).

Every test runs once per harness, but those of the notes of a retrying
harness, each retrying its own way (codex pointed at a closed port, Claude
answered a 500).  Skipped when a binary is missing, failed instead under
HARNESSCTL_REQUIRE_REAL=1.  Nothing here sleeps: the CLI itself
blocks until the answer (or a pending request) is there; every command has a
generous subprocess timeout so a hang fails instead of blocking CI.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import time
from typing import Any, Callable, Dict, List

import pytest
from claudecode_support import mock_messages as mm
from claudecode_support.fixtures import real_claude
from claudecode_support.session import Session as ClaudeSession
from cliutil import events, run, runtime_pids, start
from codex_support import mock_responses as mr
from codex_support.fixtures import real_session
from schemacheck import check_event

pytestmark = pytest.mark.real

COMMAND_TIMEOUT = 120  # seconds; far above any legitimate run against the mocks


class Harness:
    """One event file of one real harness, driven only through the CLI."""

    def __init__(self, name: str, path: str, work: str, env: Dict[str, str], adapter: str,
                 answer: Callable[[str], None], approval: Callable[[], str]) -> None:
        self.name = name
        self.path = path
        self.work = work
        self.env = env
        self.adapter = adapter
        self.answer = answer      # answer(text): the mock model's next turn is that plain text
        self.approval = approval  # approval() -> final text: the model asks to run `touch approved.txt`

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        """`python3 -m harnessctl ARGS`, as a user runs it."""
        return run(*args, env=self.env, timeout=COMMAND_TIMEOUT)

    def send(self, text: str, *flags: str) -> subprocess.CompletedProcess:
        """The first send of the file (it names the adapter and the work dir)."""
        return self.cli("send", self.path, text, "--adapter", self.adapter, "--cwd", self.work, *flags)

    def events(self, type_: str) -> List[Dict[str, Any]]:
        return [e for e in events(self.path) if e["type"] == type_]

    def the_input(self) -> Dict[str, Any]:
        """The one input of the file: its latest `accepted` snapshot (a harness may
        write a second one when it confirms the run)."""
        accepted = self.events("accepted")
        assert accepted and len({a["input_id"] for a in accepted}) == 1, accepted
        return accepted[-1]

    def explain(self, proc: subprocess.CompletedProcess) -> str:
        """Everything needed to judge a failure: the command, its outputs, the file."""
        lines = "".join(json.dumps(e) + "\n" for e in events(self.path) if e["type"] != "log")
        return "\n$ %s\nexit %s\n-- stdout:\n%s\n-- stderr:\n%s\n-- events (no logs):\n%s" % (
            " ".join(proc.args[1:]), proc.returncode, proc.stdout.decode(errors="replace"),
            proc.stderr.decode(errors="replace"), lines)


def stdout_lines(h: Harness, proc: subprocess.CompletedProcess, code: int, count: int) -> List[str]:
    """The command's stdout lines, after checking its exit code and line count."""
    assert proc.returncode == code, h.explain(proc)
    out = proc.stdout.decode()
    assert out.endswith("\n"), h.explain(proc)
    lines = out.splitlines()
    assert len(lines) == count, h.explain(proc)
    return lines


def codex_harness(session: Any, mock: mr.MockResponses) -> Harness:
    def answer(text: str) -> None:
        mock.add(mr.text(text, chunks=3))

    def approval() -> str:
        session.configure(approval_policy="on-request", sandbox_mode="read-only")
        mock.add(mr.function_call("exec_command", {"cmd": "touch approved.txt",
                                                   "sandbox_permissions": "require_escalated",
                                                   "justification": "needs to write"}, "call_touch"),
                 mr.text("Done."))
        return "Done."

    return Harness("codex", session.path, session.cwd, session.env, "codex", answer, approval)


def claude_harness(session: ClaudeSession) -> Harness:
    def answer(text: str) -> None:
        session.mock.script(mm.reply(mm.text(text)))

    def approval() -> str:
        session.mock.script(mm.reply(mm.text("I'll create it."), mm.bash("touch approved.txt", "Create approved.txt")),
                            mm.reply(mm.text("Created.")))
        return "Created."

    return Harness("claude", session.path, session.work, session.env, "claudecode", answer, approval)


@pytest.fixture(params=["codex", "claude"])
def harness(request, workdir):
    """A Harness over the real binary and its mock; everything reaped afterwards
    (and the file must still match the event schema)."""
    if request.param == "codex":
        with real_session(workdir) as (session, mock):  # skips or fails when codex is missing
            yield codex_harness(session, mock)
        return
    binary = real_claude()
    with mm.MockMessages() as mock:
        session = ClaudeSession(str(workdir), mock, binary)
        yield claude_harness(session)
        for pid in runtime_pids(session.path):
            os.kill(pid, signal.SIGKILL)  # its claude dies with it
    written = events(session.path)
    assert [e["seq"] for e in written] == list(range(1, len(written) + 1))
    assert [(e, check_event(e)) for e in written if check_event(e)] == []


def test_send_wait_prints_only_the_completed_result_of_the_input(harness):
    h = harness
    h.answer("Hello from the mock.")
    proc = h.send("Say hello.", "--wait")
    (line,) = stdout_lines(h, proc, 0, 1)
    printed = json.loads(line)
    accepted = h.the_input()
    assert printed["type"] == "result" and printed["status"] == "completed", h.explain(proc)
    assert accepted["input_id"] in printed["input_ids"], h.explain(proc)
    assert printed["output"] == "Hello from the mock.", h.explain(proc)
    assert printed in h.events("result")  # the line is the file's result event


def test_send_print_id_wait_prints_the_input_id_then_its_result(harness):
    h = harness
    h.answer("Answer for the id test.")
    proc = h.send("What is my id?", "--print-id", "--wait")
    input_id, line = stdout_lines(h, proc, 0, 2)
    accepted = h.the_input()
    assert input_id == accepted["input_id"], h.explain(proc)
    result = json.loads(line)
    assert result["type"] == "result" and result["status"] == "completed", h.explain(proc)
    assert input_id in result["input_ids"] and result["output"] == "Answer for the id test.", h.explain(proc)
    assert result in h.events("result")


def test_send_wait_stops_at_a_pending_approval_and_wait_after_the_reply_gives_the_result(harness):
    h = harness
    final = h.approval()
    sent = h.send("Run touch approved.txt", "--print-id", "--wait")
    input_id, line = stdout_lines(h, sent, 9, 2)
    request = json.loads(line)
    assert request["type"] == "request" and request["state"] == "pending", h.explain(sent)
    assert request["kind"] == "permission" and "allow" in request["options"], h.explain(sent)
    accepted = h.the_input()
    assert accepted["input_id"] == input_id and request["run_id"] == accepted["run_id"], h.explain(sent)
    assert request in h.events("request")  # the line is the file's pending request
    assert h.events("result") == [], h.explain(sent)
    assert not os.path.exists(os.path.join(h.work, "approved.txt"))

    replied = h.cli("reply", h.path, request["request_id"], "allow")
    assert replied.returncode == 0 and replied.stdout == b"", h.explain(replied)

    waited = h.cli("wait", h.path, input_id, "--timeout", "100")
    (line,) = stdout_lines(h, waited, 0, 1)
    result = json.loads(line)
    assert result["type"] == "result" and result["status"] == "completed", h.explain(waited)
    assert input_id in result["input_ids"] and result["output"] == final, h.explain(waited)
    assert result in h.events("result")
    assert os.path.exists(os.path.join(h.work, "approved.txt"))  # the allowed command ran


def closed_port() -> int:
    """A loopback port where nothing listens: bound to get it, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stderr_lines_until(proc: subprocess.Popen, needle: bytes, timeout: float) -> List[bytes]:
    """`proc`'s stderr lines up to the first that holds `needle` (it may take
    long: the condition is waited for, with `timeout` only as a guard)."""
    fd = proc.stderr.fileno()
    data = b""
    deadline = time.monotonic() + timeout
    while needle not in data or not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0 and select.select([fd], [], [], left)[0], "no %r on stderr; so far %r" % (needle, data)
        chunk = os.read(fd, 4096)
        assert chunk, "stderr closed; so far %r" % data
        data += chunk
    return data.splitlines()


def test_codex_send_wait_says_on_stderr_that_codex_retries_while_stdout_stays_empty(workdir):
    """Issue 25: codex with no network retries on its own; the waiting send
    says so on stderr (one line) and prints nothing on stdout but the result."""
    with real_session(workdir) as (session, mock):
        session.configure(base_url="http://127.0.0.1:%d/v1" % closed_port())
        config = os.path.join(session.codex_home, "config.toml")
        with open(config, encoding="utf-8") as f:
            text = f.read()
        with open(config, "w", encoding="utf-8") as f:  # codex's stream retries on (they are the ones it reports)
            f.write(text.replace("stream_max_retries = 0", "stream_max_retries = 9"))
        waiting = start("send", session.path, "Say hello.", "--adapter", "codex", "--cwd", session.cwd, "--wait",
                        "--timeout", str(COMMAND_TIMEOUT * 3), env=session.env)
        try:
            notes = stderr_lines_until(waiting, b"codex is retrying", COMMAND_TIMEOUT)
            assert not select.select([waiting.stdout], [], [], 0)[0]  # nothing on stdout while it waits
            assert session.events("result") == []
            assert run("cancel", session.path, env=session.env).returncode == 0
            out, err = waiting.communicate(timeout=COMMAND_TIMEOUT)
        finally:
            if waiting.poll() is None:
                waiting.kill()
                waiting.wait()
        assert waiting.returncode == 8, err
        (line,) = out.decode().splitlines()
        assert json.loads(line)["status"] == "cancelled"
        retry = [note for note in notes if b"codex is retrying" in note]
        assert len(retry) == 1 and b"Reconnecting" in retry[0], notes
        assert retry[0].endswith(b"; see harnessctl log " + session.path.encode()), notes
        assert all(note.startswith(b"harnessctl: codex ") for note in notes + err.splitlines()), (notes, err)


def test_claude_send_wait_says_its_api_retry_on_stderr_and_prints_only_the_result(workdir):
    """Claude retries a 500 once (CLAUDE_CODE_MAX_RETRIES=1), then answers:
    the retry is one note on stderr, stdout the result line alone."""
    binary = real_claude()
    with mm.MockMessages() as mock:
        session = ClaudeSession(str(workdir), mock, binary)
        session.env["CLAUDE_CODE_MAX_RETRIES"] = "1"
        mock.script(mm.reply(status=500, error_message="boom"), mm.reply(mm.text("Recovered.")))
        h = claude_harness(session)
        try:
            proc = h.send("hello", "--wait")
        finally:
            for pid in runtime_pids(session.path):
                os.kill(pid, signal.SIGKILL)
    (line,) = stdout_lines(h, proc, 0, 1)
    assert json.loads(line)["output"] == "Recovered.", h.explain(proc)
    (note,) = proc.stderr.decode().splitlines()
    assert note.startswith("harnessctl: claudecode is retrying: API request failed (HTTP 500"), h.explain(proc)
    assert note.endswith("; see harnessctl log %s" % session.path), h.explain(proc)
