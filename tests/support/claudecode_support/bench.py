"""Claude Code adapter latencies with the real binary, next to the floor.

    HARNESSCTL_TEST_CLAUDE_BIN=/path/to/claude python3 bench/run --harnesses-only   (bench/run calls rows())

Rows: first send (runtime spawn + claude start + `initialize` answered + the
user line's `queued` receipt), a send that starts a new run on a live
runtime, the same with `--schema` (the cost of a schema switch: Claude is
restarted with --resume and --json-schema before the run starts), and a send
that steers a busy run (the mock holds the answer, so the receipt is all the
send waits for).  The floor is `python3 -c pass` (the same
interpreter, plain start as `python3 -m harnessctl`), measured interleaved so
machine load moves both.  The model is the loopback mock, so claude never waits
on a network.  Nothing here is asserted by the tests.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))

from cliutil import command, timed  # noqa: E402

from claudecode_support.fixtures import wait_for  # noqa: E402
from claudecode_support.mock_messages import MockMessages, reply, text, tool_use  # noqa: E402
from claudecode_support.session import Session  # noqa: E402

FLOOR = [sys.executable, "-c", "pass"]


def send(session, words):
    return command("send", session.path, words, "--adapter", "claudecode", "--cwd", session.work)


def rows(repeat, tmp):
    """[(name, samples, floor samples)] for the claudecode adapter."""
    binary = os.environ.get("HARNESSCTL_TEST_CLAUDE_BIN") or shutil.which("claude")
    if not binary:
        raise SystemExit("claude not found: set HARNESSCTL_TEST_CLAUDE_BIN")
    first, idle, switch, steer = ([], []), ([], []), ([], []), ([], [])
    with MockMessages(default=reply(text("ok"))) as mock:
        for i in range(repeat):
            session = Session(os.path.join(tmp, "s%d" % i), mock, binary)
            session.env["HARNESSCTL_IDLE_TIMEOUT"] = "600"
            try:
                for (samples, floor), words in ((first, "first"), (idle, "idle")):
                    floor.append(timed(FLOOR, session.env))
                    samples.append(timed(send(session, words), session.env))
                    wait_for(session.status_idle, 60, "the run to end")
                schema = os.path.join(session.root, "schema.json")
                with open(schema, "w", encoding="utf-8") as f:
                    json.dump({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}, f)
                mock.script(reply(tool_use("StructuredOutput", {"ok": True})))
                switch[1].append(timed(FLOOR, session.env))
                switch[0].append(timed(send(session, "schema") + ["--schema", schema], session.env))
                wait_for(session.status_idle, 60, "the run to end")
                mock.script(reply(text("slow"), gate="busy%d" % i))
                session.send("busy")
                mock.wait_gate("busy%d" % i)
                steer[1].append(timed(FLOOR, session.env))
                steer[0].append(timed(send(session, "steer"), session.env))
                mock.release("busy%d" % i)
            finally:
                pid = session.runtime_pid()
                if pid:
                    os.kill(pid, signal.SIGKILL)
    return [("first send (runtime + claude start + initialize + queued receipt)",) + first,
            ("send starting a new run on a live runtime (queued receipt)",) + idle,
            ("send --schema on a live runtime (claude restarted for the schema, queued receipt)",) + switch,
            ("send steering a busy run (queued receipt, run_id null)",) + steer]
