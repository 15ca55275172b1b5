"""Codex adapter latencies with the real binary, next to the floor.

    HARNESSCTL_TEST_CODEX_BIN=/path/to/codex python3 bench/run --harnesses-only   (bench/run calls rows())

Rows: first send (runtime spawn + app-server start + thread/start + turn/start
answered), a send that starts a new run on a live runtime, and a send that
steers a running turn (turn/steer answered).  The floor is `python3 -c pass`
(the same interpreter, plain start as `python3 -m harnessctl`), measured
interleaved so machine load moves both.  The model is the loopback mock, so
codex never waits on a network.  Nothing here is asserted by the tests.
"""

from __future__ import annotations

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))

import cliutil  # noqa: E402
from cliutil import timed  # noqa: E402

from codex_support.mock_responses import MockResponses, text, write_codex_home  # noqa: E402

FLOOR = [sys.executable, "-c", "pass"]


def send(path, words, env, *flags):
    return cliutil.command("send", path, words, *flags)


def measure(repeat, argv_fn, env, before=None):
    samples, floor = [], []
    for i in range(repeat):
        if before:
            before(i)
        floor.append(timed(FLOOR, env))
        samples.append(timed(argv_fn(i), env))
    return samples, floor


def rows(repeat, tmp):
    """[(name, samples, floor samples)] for the codex adapter."""
    binary = os.environ.get("HARNESSCTL_TEST_CODEX_BIN") or shutil.which("codex")
    if not binary:
        raise SystemExit("codex not found: set HARNESSCTL_TEST_CODEX_BIN")
    mock = MockResponses().start()
    mock.default = text("word " * 600, chunks=600, delay=0.1)  # every turn streams for a minute
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    env = cliutil.cli_env(HARNESSCTL_CODEX_BIN=binary, HARNESSCTL_IDLE_TIMEOUT="600", HARNESSCTL_TIMEOUT="60")
    env.update(write_codex_home(os.path.join(tmp, "codex_home"), mock.base_url))
    out = []
    try:
        cold = [os.path.join(tmp, "cold%d.jsonl" % i) for i in range(repeat)]

        def quiet(i):  # the previous cold run must not stream while the next one starts
            if i:
                cliutil.run("cancel", cold[i - 1], env=env)
        s, f = measure(repeat, lambda i: send(cold[i], "hello", env, "--adapter", "codex", "--cwd", work), env,
                       before=quiet)
        out.append(("first send (runtime + app-server + thread/start + turn/start)", s, f))
        quiet(repeat)

        def idle(i):
            cliutil.run("cancel", cold[i], env=env)
            cliutil.wait_for(lambda: cliutil.status(cold[i], env=env)["state"] != "cancelling", 30)
        s, f = measure(repeat, lambda i: send(cold[i], "again", env), env, before=idle)
        out.append(("send starting a new run on a live runtime (turn/start)", s, f))

        busy = cold[0]
        cliutil.wait_for(lambda: cliutil.status(busy, env=env)["state"] == "running", 30)
        s, f = measure(repeat, lambda i: send(busy, "steer %d" % i, env), env)
        out.append(("send steering a running turn (turn/steer)", s, f))
    finally:
        cliutil.kill_all_under(tmp)
        mock.stop()
    return out
