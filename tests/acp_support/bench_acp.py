"""ACP adapter latencies with the real agents, next to the floor and next to
the agent's own start (bench/run calls rows() when the pinned agents are there).

Rows per agent: the first send (runtime spawn + agent spawn + initialize +
session/new + session/set_mode + the prompt written: what `accepted` waits
for), a minimal native driver doing the same steps without harnessctl, a send
into the busy run (`_session/steering` for codex and claude; held for the next
run on gemini), and cancel -> the run's `cancelled` result in the file.  The
floor is `python3 -c pass`, measured interleaved.  Nothing here is asserted.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from typing import Any, Dict, List, Tuple

from cliutil import ROOT, events, runtime_pids, status, timed, wait_for

from codex_support import mock_responses as mr

from . import agents

FLOOR = [sys.executable, "-I", "-S", "-c", "pass"]  # started as the package entry point is

def native_start(argv: List[str], env: Dict[str, str], cwd: str, mode: str) -> float:
    """Seconds from spawn to the prompt written after initialize, session/new
    and session/set_mode were answered: the agent's own part of a first send."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=cwd)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        session = ""
        steps = [("initialize", {"protocolVersion": 1, "clientCapabilities": {
                      "fs": {"readTextFile": True, "writeTextFile": True}, "terminal": False}}),
                 ("session/new", {"cwd": cwd, "mcpServers": []}),
                 ("session/set_mode", {"modeId": mode})]
        for number, (method, params) in enumerate(steps, 1):
            if method == "session/set_mode":
                params = dict(params, sessionId=session)
            proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
                              + "\n").encode())
            proc.stdin.flush()
            for raw in proc.stdout:
                message = json.loads(raw)
                if message.get("id") == number and "method" not in message:
                    session = (message.get("result") or {}).get("sessionId") or session
                    break
        prompt = {"jsonrpc": "2.0", "id": 9, "method": "session/prompt",
                  "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}}
        proc.stdin.write((json.dumps(prompt) + "\n").encode())
        proc.stdin.flush()
        return time.perf_counter() - start
    finally:
        agents.kill_tree(proc.pid)
        proc.wait()


def result_after(path: str, argv: List[str], env: Dict[str, str]) -> float:
    """Seconds from running `argv` (a cancel) to the next result line in the file."""
    before = len([e for e in events(path) if e["type"] == "result"])
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
    wait_for(lambda: len([e for e in events(path) if e["type"] == "result"]) > before, 60, "the cancelled result")
    return time.perf_counter() - start


def busy(model: agents.Model) -> None:
    """The next reply keeps its run going for a minute (codex's mock has no gate: a slow stream)."""
    if model.agent == "codex":
        model.mock.add(mr.text("word " * 600, chunks=600, delay=0.1))
    else:
        model.held(" ".join("word%d" % i for i in range(100)))  # gemini ends a turn that repeats itself


def rows(repeat: int, tmp: str, agent: str, entry: List[str]) -> List[Tuple[str, List[float], Any]]:
    """[(name, samples, floor samples or None)] for one ACP agent, driven through
    `entry` (the acp package's entry point, as bench/run builds it)."""

    def cli(*args: str) -> List[str]:
        return entry + list(args)

    npm = os.environ[agents.NPM_ENV]
    mock = agents.start_mock(agent)
    model = agents.Model(agent, mock)
    env = agents.agent_env(tmp, agent, npm, mock.base_url)
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    files = [os.path.join(tmp, "f%d.jsonl" % i) for i in range(repeat)]
    out: List[Tuple[str, List[float], Any]] = []
    try:
        first, floor = [], []
        for path in files:
            busy(model)  # the run stays busy for the steer
            floor.append(timed(FLOOR, env))
            first.append(timed(cli("send", path, "hello", "--adapter", "acp", "--agent", agent, "--cwd", work), env))
        out.append(("first send (runtime + agent + initialize + session/new + mode + prompt)", first, floor))
        argv = shlex.split(env["HARNESSCTL_ACP_%s_CMD" % agent.upper()])
        bare = []
        for _ in range(repeat):
            model.answer("ok")
            bare.append(native_start(argv, env, work, agents.MODES[agent]))
        out.append(("  bare agent: spawn to the prompt written (minimal native driver)", bare, None))
        steer, floor = [], []
        for i, path in enumerate(files):
            model.answer("steered %d" % i)
            floor.append(timed(FLOOR, env))
            steer.append(timed(cli("send", path, "also this"), env))
        how = "held for the next run" if agent == "gemini" else "_session/steering"
        out.append(("send into the busy run (%s)" % how, steer, floor))
        cancels = []
        for path in files:
            if agent != "gemini":  # the steered run ends with its answer: start a busy one to cancel
                wait_for(lambda p=path: status(p, env=env)["state"] == "idle", 60, "the steered run's end")
                busy(model)
                subprocess.run(cli("send", path, "one more"), env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                               check=True)
            cancels.append(result_after(path, cli("cancel", path), env))
        out.append(("cancel -> the cancelled result in the file", cancels, None))
    finally:
        model.release()
        for pid in [p for path in files for p in runtime_pids(path)]:
            agents.kill_tree(pid)  # the runtime and the agent it started
        agents.stop_mock(agent, mock)
    return out
