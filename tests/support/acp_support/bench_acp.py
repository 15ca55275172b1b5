"""ACP adapter latencies with the real agents, next to the floor and next to
the agent's own start (bench/run calls rows() when the pinned agents are there).

Rows per agent: the first send (runtime spawn + agent spawn + initialize +
session/new + session/set_mode + the prompt written: what `accepted` waits
for), a minimal native driver doing the same steps without harnessctl (each
sample right after a first send's, so the machine's drift weighs on both), a send
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
from typing import Any, Dict, List, Optional, Tuple

from claudecode_support import mock_messages as mm
from cliutil import ROOT, events, runtime_pids, status, timed, wait_for
from codex_support import mock_responses as mr

from . import agents
from . import mock_gemini as mg

FLOOR = [sys.executable, "-I", "-S", "-c", "pass"]  # started as the package entry point is

def native_start(argv: List[str], env: Dict[str, str], cwd: str, mode: Optional[str]) -> float:
    """Seconds from spawn to the prompt written after initialize, session/new
    and session/set_mode (when `mode`) were answered: the agent's own part of a
    first send."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=cwd)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        session = ""
        steps = [("initialize", {"protocolVersion": 1, "clientCapabilities": {
                      "fs": {"readTextFile": True, "writeTextFile": True}, "terminal": False}}),
                 ("session/new", {"cwd": cwd, "mcpServers": []})]
        steps += [("session/set_mode", {"modeId": mode})] if mode else []
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
    """Seconds from running `argv` (a cancel) to the result that covers the
    file's latest input (a run that ended by itself meanwhile counts too)."""
    latest = [e["input_id"] for e in events(path) if e["type"] == "accepted"][-1]

    def covered() -> bool:
        return any(latest in e["input_ids"] for e in events(path) if e["type"] == "result")

    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
    wait_for(covered, 60, "the cancelled result")
    return time.perf_counter() - start


def busy(model: agents.Model, gate: str) -> None:
    """The next reply keeps its run going: it waits at `gate` after its first
    words (codex's mock has no gates: a minute-long stream instead)."""
    words = " ".join("word%d" % i for i in range(100))  # gemini ends a turn that repeats itself
    if model.agent == "codex":
        model.mock.add(mr.text(words, chunks=100, delay=0.6))
    elif model.agent == "claude":
        model.mock.script(mm.reply(mm.text(words), gate=gate, gate_after=1))
    else:
        model.mock.script(mg.reply(mg.text(words), gate=gate, gate_after=1))


def under_way(model: agents.Model, gate: str, asked: int) -> None:
    """Wait until the model has been asked for the busy run (`asked`: its
    request count before).  A run cancelled before the agent asks would leave
    the busy reply unserved, and the next run would take it, released already."""
    if model.agent == "codex":
        model.wait_requests(asked + 1)
    else:
        model.mock.wait_gate(gate)


def release(model: agents.Model, gate: str) -> None:
    if model.agent != "codex":
        model.mock.release(gate)


def rows(repeat: int, tmp: str, agent: str, entry: List[str]) -> List[Tuple[str, List[float], Any]]:
    """[(name, samples, floor samples or None)] for one ACP agent, driven through
    `entry` (the acp package's entry point, as bench/run builds it)."""

    def cli(*args: str) -> List[str]:
        return entry + list(args)

    npm = os.environ[agents.NPM_ENV]
    mock = agents.start_mock(agent)
    model = agents.Model(agent, mock)
    env = agents.agent_env(tmp, agent, npm, mock.base_url)
    # The bare driver's agents get a mock and a HOME of their own: a request one of
    # them sends before it is killed never takes a reply scripted for harnessctl's runs.
    bare_mock = agents.start_mock(agent)
    bare_root = os.path.join(tmp, "bare")
    os.makedirs(bare_root)
    bare_env = agents.agent_env(bare_root, agent, npm, bare_mock.base_url)
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    files = [os.path.join(tmp, "f%d.jsonl" % i) for i in range(repeat)]
    out: List[Tuple[str, List[float], Any]] = []

    def state(path: str, wanted: str) -> None:
        wait_for(lambda: status(path, env=env)["state"] == wanted, 60, "state %s" % wanted)

    def quietly(*args: str) -> None:
        subprocess.run(cli(*args), env=env, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)

    try:
        first, floor, bare = [], [], []
        argv = shlex.split(bare_env["HARNESSCTL_ACP_%s_CMD" % agent.upper()])
        for path in files:  # one agent at a time: each first send's run ends at once, its agent goes
            model.answer("ok")
            floor.append(timed(FLOOR, env))
            first.append(timed(cli("send", path, "hello", "--adapter", "acp", "--agent", agent, "--cwd", work), env))
            state(path, "idle")
            for pid in runtime_pids(path):
                agents.kill_tree(pid)
            # interleaved, as the floor is, so that the machine's drift weighs on both alike;
            # killed once its prompt is written: it takes no scripted reply
            bare.append(native_start(argv, bare_env, work, agents.MODES[agent]))
        out.append(("first send (runtime + agent + initialize + session/new + mode + prompt)", first, floor))
        out.append(("  bare agent: spawn to the prompt written (minimal native driver)", bare, None))
        # One live agent for the rest, in a new file, so these rows start from a new session, not one
        # resumed after the loop above killed its runtime.  A reply nobody scripted is the mock's "ok".
        path = os.path.join(tmp, "busy.jsonl")
        quietly("send", path, "hello", "--adapter", "acp", "--agent", agent, "--cwd", work)
        state(path, "idle")
        files.append(path)
        steer, floor, cancels = [], [], []
        for i in range(repeat):  # a busy run, a send into it; the run then ends
            asked = model.count()
            busy(model, "steer%d" % i)
            quietly("send", path, "work %d" % i)
            under_way(model, "steer%d" % i, asked)
            floor.append(timed(FLOOR, env))
            steer.append(timed(cli("send", path, "also this"), env))
            release(model, "steer%d" % i)
            state(path, "idle")
        for i in range(repeat):  # a busy run, cancelled
            asked = model.count()
            busy(model, "cancel%d" % i)
            quietly("send", path, "work %d" % i)
            under_way(model, "cancel%d" % i, asked)
            cancels.append(result_after(path, cli("cancel", path), env))
            release(model, "cancel%d" % i)
            state(path, "idle")
        how = "held for the next run" if agent == "gemini" else "_session/steering"
        out.append(("send into the busy run (%s)" % how, steer, floor))
        out.append(("cancel -> the cancelled result in the file", cancels, None))
    finally:
        for pid in [p for path in files for p in runtime_pids(path)]:
            agents.kill_tree(pid)  # the runtime and the agent it started
        agents.stop_mock(agent, mock)
        agents.stop_mock(agent, bare_mock)
    return out


def reach_rows(repeat: int, tmp: str, agent: str, entry: List[str]) -> Dict[str, List[float]]:
    """Samples of one reach agent's first send (issue 21), run by its preset's
    command from its npm prefix against its recipe's mock; no mode is set (the
    recipes configure none).  The agents take seconds to start and vary by
    more than harnessctl costs, so harnessctl's own part is measured inside
    each send: `agent` is the time from the agent's spawn to the prompt
    written, read from the runtime log (HARNESSCTL_DEBUG=1 stamps both, its
    own logging counted as harnessctl's), `own` the rest of the send.  `bare`
    is the agent alone under a minimal driver, interleaved, for comparison."""
    import contextlib
    import shutil

    from .recipes import recipe

    rec = recipe(agent)
    prefix = agents.reach_prefix(agent)
    mock, bare_mock = agents.start_mock(rec.MOCK), agents.start_mock(rec.MOCK)
    model = agents.Model(agent, mock, rec.MOCK)
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    env = dict(agents.reach_env(os.path.join(tmp, "cli"), agent, prefix, mock.base_url), HARNESSCTL_DEBUG="1")
    bare_env = agents.reach_env(os.path.join(tmp, "bare"), agent, prefix, bare_mock.base_url)
    argv = shlex.split(str(registry_preset(agent)["command"]))
    argv[0] = shutil.which(argv[0], path=bare_env["PATH"]) or argv[0]
    files = [os.path.join(tmp, "f%d.jsonl" % i) for i in range(repeat)]
    out: Dict[str, List[float]] = {"first": [], "agent": [], "own": [], "bare": []}
    around = getattr(rec, "around", None)
    try:
        with contextlib.ExitStack() as stack:
            if around is not None:  # what runs beside the agent (openclaw's gateway), for both drivers
                stack.enter_context(around(os.path.join(tmp, "cli"), env))
                stack.enter_context(around(os.path.join(tmp, "bare"), bare_env))
            for path in files:
                model.answer("ok")
                first = timed(entry + ["send", path, "hello", "--adapter", "acp", "--agent", agent, "--cwd", work],
                              env)
                wait_for(lambda: status(path, env=env)["state"] == "idle", 120, "idle")  # noqa: B023 (called here)
                for pid in runtime_pids(path):
                    agents.kill_tree(pid)
                part = agent_part(path + ".d/runtime.log")
                out["first"].append(first)
                out["agent"].append(part)
                out["own"].append(first - part)
                out["bare"].append(native_start(argv, bare_env, work, None))
    finally:
        for pid in [p for path in files for p in runtime_pids(path)]:
            agents.kill_tree(pid)
        agents.stop_mock(rec.MOCK, mock)
        agents.stop_mock(rec.MOCK, bare_mock)
    return out


def agent_part(runtime_log: str) -> float:
    """Seconds from the agent's spawn to the first session/prompt written, from
    the debug lines of a runtime log (`2026-12-04T12:46:27.233Z <text>`)."""
    import datetime

    def when(line: str) -> float:
        stamp = datetime.datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S.%fZ")
        return stamp.replace(tzinfo=datetime.timezone.utc).timestamp()

    with open(runtime_log, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    spawn = next(line for line in lines if ": spawn " in line)
    prompt = next(line for line in lines if "< {" in line and '"session/prompt"' in line)
    return when(prompt) - when(spawn)


def registry_preset(agent: str) -> Dict[str, Any]:
    from harnessctl.store import registry

    return registry.manifest("acp")["agents"][agent]
