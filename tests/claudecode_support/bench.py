#!/usr/bin/env python3
"""Send latency of the claudecode adapter against the floor, with the real
`claude` and the loopback mock:

  floor        `python3 -c pass`
  first send   cold: a new event file, so the send spawns the runtime and Claude
  idle send    runtime and Claude warm, nothing running (delivery start)
  steer send   a run is busy (the mock holds its answer): delivery steer

Each figure is the wall time of the command, from exec to exit 0.  Usage:
  HARNESSCTL_TEST_CLAUDE_BIN=/path/to/claude python3 tests/claudecode_support/bench.py [N]
Prints one JSON object (seconds: median, p90, n per figure).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from claudecode_support.fixtures import wait_for  # noqa: E402
from claudecode_support.mock_messages import MockMessages, reply, text  # noqa: E402
from claudecode_support.session import Session  # noqa: E402


def timed(argv, env=None):
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit("failed: %s: %s" % (argv, proc.stderr.decode()))
    return elapsed


def summary(samples):
    ordered = sorted(samples)
    return {"median": round(ordered[len(ordered) // 2], 4),
            "p90": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))], 4), "n": len(ordered)}


def send_argv(session, text_value):
    return [sys.executable, "-m", "harnessctl", "send", session.path, text_value,
            "--adapter", "claudecode", "--cwd", session.work]


def stop(session):
    pid = session.runtime_pid()
    if pid:
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: session.runtime_pid() is None, 30, "runtime gone")


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    binary = os.environ.get("HARNESSCTL_TEST_CLAUDE_BIN") or shutil.which("claude")
    if not binary:
        raise SystemExit("set HARNESSCTL_TEST_CLAUDE_BIN")
    figures = {"floor": summary([timed([sys.executable, "-c", "pass"]) for _ in range(n)])}
    first, idle, steer = [], [], []
    with MockMessages(default=reply(text("ok"))) as mock:
        for i in range(n):
            session = Session(tempfile.mkdtemp(prefix="ccbench-"), mock, binary)
            first.append(timed(send_argv(session, "first %d" % i), session.env))
            session.wait_results(1)
            idle.append(timed(send_argv(session, "idle %d" % i), session.env))
            session.wait_results(2)
            mock.script(reply(text("slow"), gate="bench%d" % i))
            session.send("busy %d" % i)
            mock.wait_gate("bench%d" % i)
            steer.append(timed(send_argv(session, "steer %d" % i), session.env))
            mock.release("bench%d" % i)
            stop(session)
            shutil.rmtree(session.root, ignore_errors=True)
    figures.update(first_send=summary(first), idle_send=summary(idle), steer_send=summary(steer))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
