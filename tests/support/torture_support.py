"""The torture suite's tools (issue 5): an independent line-by-line checker of an
event file, the project's own fold as a second opinion, send bookkeeping, and
the scenario drivers shared by tests/torture/test_torture_*.py and bench/torture_report.py.

The checker deliberately re-implements what the event file must look like from
the protocol text instead of calling harnessctl.eventfile.state, so a bug in the fold
cannot hide a bug in the writer.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import itertools
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from cliutil import ROOT, alive, cli_env, kill_all_under, processes_under, run, runtime_pids, start, wait_for
from cliutil import status as status_of

sys.path.insert(0, ROOT)

from harnessctl.eventfile.eventlog import read_events  # noqa: E402
from harnessctl.eventfile.state import fold  # noqa: E402
from harnessctl.store import locks  # noqa: E402
from harnessctl.store.address import Address  # noqa: E402

TYPES = ("accepted", "message", "request", "result", "log")
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
DIRECTIVES = ("/sleep", "/permission", "/question", "/fail")
DEFINITELY_REFUSED = (2, 3, 4, 5)  # exit codes that promise the input was NOT accepted


def full() -> bool:
    return os.environ.get("HARNESSCTL_TORTURE") == "full"


def count(default: int, full_count: int) -> int:
    """Smaller counts for the default run, the issue's counts with HARNESSCTL_TORTURE=full."""
    return full_count if full() else default


# -- the independent checker ---------------------------------------------------------


class Scan:
    """What one pass over the raw bytes of an event file found."""

    def __init__(self) -> None:
        self.problems: List[str] = []
        self.lines = 0
        self.inputs: Dict[str, Dict[str, Any]] = {}  # input_id -> text, run_id, line, result_line
        self.results = 0
        self.messages: Dict[str, Dict[str, Any]] = {}  # message_id -> latest snapshot + first line
        self.requests: Dict[str, str] = {}  # request_id -> latest state
        self.completed: List[Tuple[int, List[str], Any]] = []  # (line, input_ids, output) of completed runs

    @property
    def open_inputs(self) -> List[str]:
        return [i for i, v in self.inputs.items() if v["result_line"] is None]

    @property
    def pending_requests(self) -> List[str]:
        return [r for r, state in self.requests.items() if state == "pending"]

    def texts(self) -> Dict[str, List[str]]:
        """text -> the input ids that carry it."""
        out: Dict[str, List[str]] = {}
        for input_id, info in self.inputs.items():
            out.setdefault(info["text"], []).append(input_id)
        return out


def echo_of(text: str) -> Optional[str]:
    """What the mock stand-in echoes for one input (docs/PROTOCOL.md section 14), or None."""
    plain = []
    for line in text.split("\n"):
        name, _, arg = line.partition(" ")
        if name == "/sleep":
            try:
                float(arg)
                continue
            except ValueError:
                pass
        if name in DIRECTIVES[1:] or line.strip() == "/crash":
            continue
        plain.append(line)
    echo = "\n".join(plain).strip("\n")
    return "echo: " + echo if echo.strip() else None


def scan(path: str, foreign: Iterable[bytes] = (), torn_tail_ok: bool = False, mock: bool = True) -> Scan:
    """Check every line of `path` against the protocol; `foreign` lines (written by
    someone else on purpose by the test) are skipped."""
    s = Scan()
    skip = set(foreign)
    with open(path, "rb") as f:
        data = f.read()
    raw_lines = data.split(b"\n")
    tail = raw_lines.pop()
    if tail and tail not in skip and not torn_tail_ok:
        s.problems.append("torn tail: %r" % tail[:80])
    expected = 1
    for number, raw in enumerate(raw_lines, 1):
        if raw in skip:
            continue
        s.lines += 1
        try:
            event = json.loads(raw.decode("utf-8"))
        except ValueError:
            s.problems.append("line %d is not valid UTF-8 JSON: %r" % (number, raw[:80]))
            continue
        if not isinstance(event, dict):
            s.problems.append("line %d is not an object" % number)
            continue
        kind = event.get("type")
        if kind not in TYPES:
            s.problems.append("line %d has type %r" % (number, kind))
        if not isinstance(event.get("ts"), str) or not TS.match(event["ts"]):
            s.problems.append("line %d has ts %r" % (number, event.get("ts")))
        if event.get("seq") != expected:
            s.problems.append("line %d has seq %r, expected %d" % (number, event.get("seq"), expected))
        expected = event["seq"] + 1 if isinstance(event.get("seq"), int) else expected + 1
        handler = globals().get("_scan_" + str(kind))
        if handler is not None:
            handler(s, event, number)
    if mock:
        _check_echoes(s)
    return s


def _scan_accepted(s: Scan, event: Dict[str, Any], number: int) -> None:
    input_id, text, run_id = event.get("input_id"), event.get("text"), event.get("run_id")
    if not isinstance(input_id, str) or not isinstance(text, str) or not text.strip():
        s.problems.append("line %d: accepted without input_id or text" % number)
        return
    if event.get("delivery") not in ("start", "steer", "queued"):
        s.problems.append("line %d: delivery %r" % (number, event.get("delivery")))
    info = s.inputs.get(input_id)
    if info is None:
        s.inputs[input_id] = {"text": text, "run_id": run_id, "line": number, "result_line": None}
        return
    if info["text"] != text:
        s.problems.append("line %d: input %s accepted again with another text" % (number, input_id))
    if info["result_line"] is not None:
        s.problems.append("line %d: input %s accepted again after its result" % (number, input_id))
    if info["run_id"] is not None and run_id != info["run_id"]:
        s.problems.append("line %d: input %s moved from run %s to %s" % (number, input_id, info["run_id"], run_id))
    elif info["run_id"] is None:
        info["run_id"] = run_id


def _scan_result(s: Scan, event: Dict[str, Any], number: int) -> None:
    s.results += 1
    run_id = event.get("run_id")
    if event.get("status") not in ("completed", "cancelled", "failed"):
        s.problems.append("line %d: result status %r" % (number, event.get("status")))
    input_ids = event.get("input_ids")
    if not isinstance(input_ids, list):
        s.problems.append("line %d: result without input_ids" % number)
        return
    for input_id in input_ids:
        info = s.inputs.get(input_id)
        if info is None:
            s.problems.append("line %d: result covers unknown input %s" % (number, input_id))
        elif info["result_line"] is not None:
            s.problems.append("line %d: input %s covered twice (first at line %d)"
                              % (number, input_id, info["result_line"]))
        else:
            info["result_line"] = number
            if run_id is not None and info["run_id"] not in (None, run_id):
                s.problems.append("line %d: input %s of run %s covered by run %s"
                                  % (number, input_id, info["run_id"], run_id))
    if run_id is not None and not any(info["run_id"] == run_id for info in s.inputs.values()):
        s.problems.append("line %d: result of run %s that no accepted line named" % (number, run_id))
    if run_id is not None:
        for input_id, info in s.inputs.items():
            if info["run_id"] == run_id and info["result_line"] is None:
                s.problems.append("line %d: run %s ended without covering its input %s" % (number, run_id, input_id))
    if event.get("status") == "completed":
        s.completed.append((number, list(input_ids), event.get("output")))


def _scan_message(s: Scan, event: Dict[str, Any], number: int) -> None:
    message_id = event.get("message_id")
    if not isinstance(message_id, str) or not isinstance(event.get("text"), str):
        s.problems.append("line %d: message without message_id or text" % number)
        return
    first = s.messages.get(message_id, {}).get("first_line", number)
    s.messages[message_id] = {"text": event["text"], "run_id": event.get("run_id"), "first_line": first}


def _scan_request(s: Scan, event: Dict[str, Any], number: int) -> None:
    request_id, state = event.get("request_id"), event.get("state")
    previous = s.requests.get(request_id)
    if state == "pending":
        if previous is not None:
            s.problems.append("line %d: request %s pending again (was %s)" % (number, request_id, previous))
        elif request_id != "req-%d" % (len(s.requests) + 1):
            s.problems.append("line %d: request id %s out of sequence" % (number, request_id))
    elif state in ("replied", "expired"):
        if previous != "pending":
            s.problems.append("line %d: request %s %s while %s" % (number, request_id, state, previous))
    else:
        s.problems.append("line %d: request state %r" % (number, state))
    s.requests[request_id] = state


def _check_echoes(s: Scan) -> None:
    """No input echoed by the harness twice, never after its own result (a replay),
    and every input of a completed run echoed exactly once."""
    framed = {mid: ("\n" + m["text"] + "\n", m) for mid, m in s.messages.items()}
    for input_id, info in s.inputs.items():
        echo = echo_of(info["text"])
        if echo is None:
            continue
        needle = "\n" + echo + "\n"
        hits = [(mid, m) for mid, (text, m) in framed.items() if needle in text]
        if len(hits) > 1:
            s.problems.append("input %s echoed by %d messages: %s" % (input_id, len(hits), [h[0] for h in hits]))
        for _mid, m in hits:
            if info["run_id"] is not None and m["run_id"] != info["run_id"]:
                s.problems.append("input %s of run %s echoed by run %s (a replay)" % (input_id, info["run_id"],
                                                                                        m["run_id"]))
            if info["result_line"] is not None and m["first_line"] > info["result_line"]:
                s.problems.append("input %s echoed after its result (a replay)" % input_id)
        info["echoed"] = len(hits)
    for number, input_ids, output in s.completed:
        for input_id in input_ids:
            info = s.inputs.get(input_id)
            echo = echo_of(info["text"]) if info else None
            if echo is not None and (info.get("echoed") != 1 or "\n" + echo + "\n" not in "\n%s\n" % output):
                s.problems.append("input %s completed at line %d but not echoed exactly once" % (input_id, number))


def fold_problems(path: str, quiescent: bool) -> List[str]:
    """The project's own reading of the file: no anomalies; nothing open when quiescent."""
    conv = fold(event for event, _ in read_events(path))
    problems = ["fold anomaly: %s" % a for a in conv.anomalies]
    if quiescent and conv.is_busy():
        problems.append("fold: open work remains: inputs %s, runs %s, requests %s"
                        % (list(conv.open_inputs), list(conv.open_runs), list(conv.pending)))
    return problems


def check(path: str, quiescent: bool = True, foreign: Iterable[bytes] = (), mock: bool = True,
          torn_tail_ok: bool = False) -> Scan:
    """Both checks; raises AssertionError listing every violated invariant."""
    s = scan(path, foreign, torn_tail_ok=torn_tail_ok, mock=mock)
    problems = list(s.problems) + fold_problems(path, quiescent)
    if quiescent:
        problems += ["input %s has no result" % i for i in s.open_inputs]
        problems += ["request %s still pending" % r for r in s.pending_requests]
    assert not problems, "%s:\n  %s" % (path, "\n  ".join(problems[:30]))
    return s


def of_kind(path: str, kind: str) -> List[Dict[str, Any]]:
    """Events of one type; unlike cliutil.of_type it tolerates foreign JSON lines."""
    return [e for e, _ in read_events(path) if e.get("type") == kind]


def wait_results(path: str, count: int, timeout: float = 20) -> List[Dict[str, Any]]:
    return wait_until(lambda: len(of_kind(path, "result")) >= count and of_kind(path, "result"), timeout,
                      "%d results in %s" % (count, path))


# -- sends and their outcomes ----------------------------------------------------


class Sends:
    """Every send a scenario made, with its exit code, checked against the file:
    exit 0 -> its text accepted exactly once; 2..5 -> not accepted; otherwise
    (1, 6, killed) -> at most once."""

    def __init__(self) -> None:
        self.outcomes: List[Tuple[str, int, bytes]] = []
        self.lock = threading.Lock()

    def add(self, text: str, returncode: int, stderr: bytes = b"") -> None:
        with self.lock:
            self.outcomes.append((text, returncode, stderr))

    def ok_count(self) -> int:
        return sum(1 for _, rc, _ in self.outcomes if rc == 0)

    def verify(self, s: Scan) -> None:
        texts = s.texts()
        problems = []
        for text, rc, stderr in self.outcomes:
            copies = len(texts.get(text, []))
            if rc == 0 and copies != 1:
                problems.append("send exited 0 but its text is accepted %d times: %r" % (copies, text[:60]))
            elif rc in DEFINITELY_REFUSED and copies:
                problems.append("send exited %d but its text was accepted: %r" % (rc, text[:60]))
            elif copies > 1:
                problems.append("text accepted %d times: %r" % (copies, text[:60]))
            if rc > 0 and not one_clear_line(stderr):
                problems.append("exit %d without one clear error line: %r" % (rc, stderr[:300]))
        assert not problems, "\n".join(problems[:30])


def one_clear_line(stderr: bytes, *fragments: str) -> bool:
    """The protocol's error shape: one line, `harnessctl: ...`, carrying `fragments`."""
    err = stderr.decode("utf-8", "replace")
    return err.startswith("harnessctl: ") and err.count("\n") == 1 and all(f in err for f in fragments)


def popen_send(path: str, text: str, *flags: str, env: Optional[Dict[str, str]] = None,
               stdin: Any = None) -> subprocess.Popen:
    """A send in the background; with `stdin` (an open file) TEXT is read from it instead."""
    argv = ["send", path] + ([text] if stdin is None else []) + list(flags)
    return start(*argv, stdin=stdin if stdin is not None else subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env)


def finish(proc: subprocess.Popen, text: str, sends: Sends, timeout: float = 60) -> int:
    _, err = proc.communicate(timeout=timeout)
    sends.add(text, proc.returncode, err)
    return proc.returncode


def send(path: str, text: str, sends: Sends, *flags: str, env: Optional[Dict[str, str]] = None) -> int:
    proc = run("send", path, text, *flags, env=env)
    sends.add(text, proc.returncode, proc.stderr)
    return proc.returncode


# -- a filesystem of our own -------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(mountpoint: str, options: str) -> Iterator[str]:
    """Mount a tmpfs at `mountpoint` (a new directory) for the block; the test is
    skipped where mounting is not allowed.  Processes using it are killed first."""
    import pytest

    os.mkdir(mountpoint)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", mountpoint],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % proc.stdout.decode().strip())
    try:
        yield mountpoint
    finally:
        kill_all_under(mountpoint)
        wait_until(lambda: subprocess.run(["umount", mountpoint], stderr=subprocess.DEVNULL).returncode == 0,
                   10, "umount %s" % mountpoint, 0.1)


# -- processes, sockets, locks ---------------------------------------------------------


def kill_runtimes(path: str) -> Optional[float]:
    """kill -9 every runtime of `path`; the moment of the kill, or None if none ran."""
    pids = runtime_pids(path)
    if not pids:
        return None
    moment = time.monotonic()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    wait_until(lambda: not any(alive(p) for p in pids), 10, "killed runtime gone")
    return moment


def wait_until(predicate: Any, timeout: float, what: str, interval: float = 0.01) -> Any:
    return wait_for(predicate, timeout, what, interval)


def settle(path: str, timeout: float = 30, env: Optional[Dict[str, str]] = None) -> None:
    """Wait until the file shows no open work; a dead runtime's work is closed by a
    status (the lost-runtime rule), exactly as a caller would see it."""
    deadline = time.monotonic() + timeout
    while True:
        conv = fold(event for event, _ in read_events(path))
        if not conv.is_busy():
            return
        if not runtime_pids(path):
            status_of(path, env)
            continue
        if time.monotonic() > deadline:
            raise AssertionError("%s never settled: %s" % (path, conv.status()))
        time.sleep(0.05)


def leftovers(directory: str, paths: Sequence[str]) -> List[str]:
    """Processes, sockets and held locks left behind by the sessions in `paths`."""
    found = ["process %d: %s" % (pid, _cmdline(pid)) for pid in processes_under(directory) if alive(pid)]
    for path in paths:
        addr = Address(os.path.realpath(path))
        if os.path.exists(addr.socket):
            found.append("socket %s" % addr.socket)
        for lock in (addr.runtime_lock, addr.spawn_lock):
            if os.path.exists(lock):
                fd = locks.try_lock(lock)
                if fd is None:
                    found.append("lock held: %s" % lock)
                locks.unlock(fd)
    return found


def assert_no_leftovers(directory: str, paths: Sequence[str], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while True:
        found = leftovers(directory, paths)
        if not found:
            return
        assert time.monotonic() < deadline, "left behind:\n  " + "\n  ".join(found[:20])
        time.sleep(0.05)


def _cmdline(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")[:200]
    except OSError:
        return "?"


# -- scenario 1: kill -9 roulette -----------------------------------------------------

MOMENTS = ("spawn", "start", "steer", "request", "result", "idle")


class Roulette:
    """Kill the runtime of one event file at random moments, round after round
    (until `rounds` rounds killed one), and check the whole file after every round.

    The mock adapter by default; a subclass names another adapter, the texts
    that make its harness work for a while or ask for permission, and how to
    check from the harness's side that no input reached it twice."""

    adapter = "mock"
    moments = MOMENTS
    mock = True  # the mock's echo lines are checked too
    start_text = "/sleep 0.3\n%s"
    run_text = "/sleep 0.8\n%s"  # a run that steers can join
    request_text = "/permission may I?\n%s"

    def __init__(self, directory: str, seed: int) -> None:
        self.directory = directory
        self.path = os.path.join(directory, "roulette.jsonl")
        self.rng = random.Random(seed)
        self.sends = Sends()
        extra = dict(self.harness_env(), HARNESSCTL_ADAPTER=self.adapter)
        self.env = cli_env(HARNESSCTL_IDLE_TIMEOUT="2", **extra)
        self.idle_env = cli_env(HARNESSCTL_IDLE_TIMEOUT="1", **extra)
        self.rounds = 0
        self.kills = 0
        self.misses = 0
        self.by_moment: Dict[str, int] = {m: 0 for m in self.moments}
        self.recovery: List[float] = []  # kill -> a status that applied the lost-runtime rule
        self.respawn: List[float] = []  # kill -> the next send exiting 0
        self.n = 0

    def token(self, label: str) -> str:
        self.n += 1
        return "t%d-%s" % (self.n, label)

    def harness_env(self) -> Dict[str, str]:
        return {}

    def replays(self) -> List[str]:
        """Inputs the harness received twice, from its own log (adapters with a fake harness)."""
        return []

    def check(self) -> Scan:
        s = check(self.path, mock=self.mock)
        self.sends.verify(s)
        replayed = self.replays()
        assert not replayed, "the harness received these inputs again: %s" % replayed[:5]
        return s

    def play(self, rounds: int) -> Dict[str, Any]:
        assert send(self.path, self.token("first"), self.sends, env=self.env) == 0
        while self.kills < rounds:  # a round whose runtime was already gone is played again
            assert self.misses <= rounds, "too many rounds found no runtime to kill: %d" % self.misses
            moment = self.moments[self.kills % len(self.moments)]
            killed = getattr(self, "_" + moment)()
            self.rounds += 1
            if killed is None:
                self.misses += 1
            else:
                self.kills += 1
                self.by_moment[moment] += 1
                self._recover(killed)
            settle(self.path, env=self.env)
            self.check()
        assert send(self.path, self.token("last"), self.sends, env=self.env) == 0
        settle(self.path, env=self.env)
        wait_until(lambda: not runtime_pids(self.path), 30, "the last runtime idles out", 0.1)
        final = self.check()
        return {
            "rounds": self.rounds, "kills": self.kills, "missed": self.misses, "by_moment": self.by_moment,
            "sends": len(self.sends.outcomes), "sends_ok": self.sends.ok_count(), "inputs": len(final.inputs),
            "results": final.results, "lines": final.lines,
            "max_recovery_s": max(self.recovery or [0.0]), "max_respawn_s": max(self.respawn or [0.0]),
        }

    def _recover(self, killed: float) -> None:
        status_of(self.path, self.env)
        self.recovery.append(time.monotonic() - killed)
        text = self.token("after")
        assert send(self.path, text, self.sends, env=self.env) == 0, self.sends.outcomes[-1]
        self.respawn.append(time.monotonic() - killed)

    def _cold(self) -> None:
        if runtime_pids(self.path):
            kill_runtimes(self.path)
            status_of(self.path, self.env)

    def _spawn(self) -> Optional[float]:
        """During the runtime's own start-up."""
        self._cold()
        text = self.token("spawn")
        proc = popen_send(self.path, text, env=self.env)
        wait_until(lambda: runtime_pids(self.path) or proc.poll() is not None, 30, "runtime spawned", 0.002)
        time.sleep(self.rng.uniform(0, 0.06))
        killed = kill_runtimes(self.path)
        finish(proc, text, self.sends)
        return killed

    def _start(self) -> Optional[float]:
        """While the harness starts and the first input is delivered."""
        self._cold()
        text = self.start_text % self.token("start")
        proc = popen_send(self.path, text, env=self.env)
        time.sleep(self.rng.uniform(0.05, 0.45))
        killed = kill_runtimes(self.path)
        finish(proc, text, self.sends)
        return killed

    def _steer(self) -> Optional[float]:
        """While several inputs steer into a running run."""
        first = self.run_text % self.token("run")
        send(self.path, first, self.sends, env=self.env)
        texts = [self.token("steer") for _ in range(3)]
        procs = [popen_send(self.path, t, env=self.env) for t in texts]
        time.sleep(self.rng.uniform(0, 0.35))
        killed = kill_runtimes(self.path)
        for proc, text in zip(procs, texts):
            finish(proc, text, self.sends)
        return killed

    def _request(self) -> Optional[float]:
        """While a request is pending (and maybe being answered)."""
        text = self.request_text % self.token("request")
        if send(self.path, text, self.sends, env=self.env) == 0:
            wait_until(lambda: fold(e for e, _ in read_events(self.path)).pending, 10, "pending request")
        reply = None
        if self.rng.random() < 0.5:
            pending = list(fold(e for e, _ in read_events(self.path)).pending)
            if pending:
                reply = start("reply", self.path, pending[0], "allow", stdout=subprocess.DEVNULL, env=self.env)
        time.sleep(self.rng.uniform(0, 0.15))
        killed = kill_runtimes(self.path)
        if reply is not None:
            _, err = reply.communicate(timeout=60)
            assert reply.returncode in (0, 3, 6), (reply.returncode, err)
        return killed

    def _result(self) -> Optional[float]:
        """While the run answers and its result is written."""
        text = self.token("result")
        send(self.path, text, self.sends, env=self.env)
        time.sleep(self.rng.uniform(0, 0.03))
        return kill_runtimes(self.path)

    def _idle(self) -> Optional[float]:
        """Around the idle exit, with a send racing it."""
        self._cold()
        text = self.token("idle")
        send(self.path, text, self.sends, env=self.idle_env)
        settle(self.path, env=self.idle_env)
        time.sleep(self.rng.uniform(0.8, 1.0))  # the runtime exits about 1 s after the run ended
        racer = self.token("racer")
        proc = popen_send(self.path, racer, env=self.idle_env)
        time.sleep(self.rng.uniform(0, 0.1))
        killed = kill_runtimes(self.path)
        finish(proc, racer, self.sends)
        return killed


class CodexRoulette(Roulette):
    """The Codex adapter against the fake app-server of tests/support/codex_support."""

    adapter = "codex"
    mock = False
    start_text = "%s"
    run_text = "/slow %s"  # streams until a steer arrives
    request_text = "/approve %s"
    fake = os.path.join(ROOT, "tests", "support", "codex_support", "fake_app_server.py")

    def harness_env(self) -> Dict[str, str]:
        return {"HARNESSCTL_CODEX_BIN": self.fake, "FAKE_CODEX_HOME": self.directory}

    def replays(self) -> List[str]:
        """A text delivered (turn/start or turn/steer) by two app-server processes.  Within
        one process a refused steer followed by a start of the same input is legitimate."""
        seen: Dict[str, int] = {}
        spawn = 0
        replayed = []
        for line in _lines(os.path.join(self.directory, "requests.jsonl")):
            method = line.get("method")
            if method == "initialize":
                spawn += 1
            elif method in ("turn/start", "turn/steer"):
                text = line["params"]["input"][0]["text"]
                if seen.setdefault(text, spawn) != spawn:
                    replayed.append(text)
        return replayed


class ClaudeRoulette(Roulette):
    """The Claude Code adapter against the fake claude of tests/support/claudecode_support
    (plain turns only: it has no slow turn or permission prompt without a script)."""

    adapter = "claudecode"
    moments = ("spawn", "start", "steer", "result", "idle")
    mock = False
    start_text = run_text = "%s"
    fake = os.path.join(ROOT, "tests", "support", "claudecode_support", "fake_claude.py")

    def harness_env(self) -> Dict[str, str]:
        return {"HARNESSCTL_CLAUDE_BIN": self.fake, "FAKE_CLAUDE_LOG": os.path.join(self.directory, "claude.log")}

    def replays(self) -> List[str]:
        texts = []
        for entry in _lines(os.path.join(self.directory, "claude.log")):
            try:
                line = json.loads(entry.get("stdin") or "null")
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("type") == "user":
                texts.append(line["message"]["content"])
        return sorted({t for t in texts if texts.count(t) > 1})


def _lines(path: str) -> List[Dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


# -- scenario 2: fan-in ---------------------------------------------------------------


def fan_in(directory: str, senders: int, per_sender: int) -> Dict[str, Any]:
    """`senders` concurrent shell-like senders, each doing `per_sender` sends in a
    row, into one event file whose runtime starts cold."""
    path = os.path.join(directory, "fanin.jsonl")
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="5", HARNESSCTL_ADAPTER="mock")
    sends = Sends()

    def sender(k: int) -> None:
        for i in range(per_sender):
            send(path, "sender %d send %d" % (k, i), sends, env=env)

    started = time.monotonic()
    threads = [threading.Thread(target=sender, args=(k,)) for k in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    settle(path, timeout=120)
    s = check(path)
    sends.verify(s)
    codes = sorted({rc for _, rc, _ in sends.outcomes})
    assert codes == [0], "fan-in sends failed: %s" % [o for o in sends.outcomes if o[1]][:5]
    assert len(s.inputs) == senders * per_sender
    return {"senders": senders, "per_sender": per_sender, "accepted": len(s.inputs), "lines": s.lines,
            "seconds": elapsed}


# -- scenario 3: many files -----------------------------------------------------------


def many_files(directory: str, files: int, workers: int = 6) -> Dict[str, Any]:
    """`files` event files, each with a live runtime at once (a pending request
    keeps each one busy); all answer; then all idle out and leave nothing behind."""
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="1", HARNESSCTL_ADAPTER="mock")
    paths = [os.path.join(directory, "many-%03d.jsonl" % i) for i in range(files)]
    sends = Sends()

    def start(path: str) -> None:
        send(path, "/permission hold %s\nhello %s" % (os.path.basename(path), os.path.basename(path)), sends, env=env)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(start, paths))
    assert sends.ok_count() == files, [o for o in sends.outcomes if o[1]][:5]
    wait_until(lambda: all(fold(e for e, _ in read_events(p)).pending for p in paths), 60, "every request")
    live = sum(1 for p in paths if runtime_pids(p))
    assert live == files, "only %d of %d runtimes alive at once" % (live, files)
    with ThreadPoolExecutor(workers) as pool:
        reports = list(pool.map(lambda p: status_of(p, env), paths))
    assert all(r["runtime"] == "alive" and r["state"] == "awaiting_reply" for r in reports), reports[:3]
    with ThreadPoolExecutor(workers) as pool:
        replies = list(pool.map(lambda p: run("reply", p, "req-1", "allow", env=env), paths))
    assert all(r.returncode == 0 for r in replies), [r.stderr for r in replies if r.returncode][:3]
    started = time.monotonic()
    wait_until(lambda: not any(runtime_pids(p) for p in paths), 60, "every runtime idled out", 0.2)
    idle_out = time.monotonic() - started
    for path in paths:
        s = check(path)
        assert s.results == 1 and s.requests == {"req-1": "replied"}
    assert_no_leftovers(directory, paths)
    return {"files": files, "alive_at_once": live, "answered": len(reports), "idle_out_s": idle_out,
            "inputs": files}


# -- scenario 8: senders killed while they wait; sends racing the idle exit -------------


def kill_senders(directory: str, kills: int, seed: Optional[int] = None) -> Dict[str, Any]:
    """kill -9 of `send` at random moments (spawning the runtime, writing a 2 MB
    prompt to the socket, waiting for the receipt): each input must be accepted
    with its full text exactly once, or not at all, and the runtime keep working."""
    path = os.path.join(directory, "killed-senders.jsonl")
    rng = random.Random(seed)
    sends = Sends()
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="0.5", HARNESSCTL_ADAPTER="mock")
    assert send(path, "warm up", sends, env=env) == 0
    prompt = os.path.join(directory, "prompt.txt")
    texts = {"warm up", "still works"}
    for i in range(kills):
        text = ("kill %d " % i) + "y" * (2 * 1024 * 1024)
        texts.add(text)
        with open(prompt, "w") as f:
            f.write(text)
        with open(prompt, "rb") as stdin:
            proc = popen_send(path, text, env=env, stdin=stdin)
        time.sleep(rng.uniform(0.05, 0.3))  # python start-up, the 2 MB read, the exchange: all in here
        proc.kill()
        finish(proc, text, sends)
        if i % 3 == 0:  # let the runtime idle out now and then: the next kill hits a spawn
            settle(path, env=env)
            wait_until(lambda: not runtime_pids(path), 10, "idle exit", 0.05)
    assert send(path, "still works", sends, env=env) == 0
    settle(path, env=env)
    s = check(path)
    sends.verify(s)
    assert set(s.texts()) <= texts, "an accepted text that no sender sent whole"
    assert of_kind(path, "result")[-1]["output"] == "echo: still works"
    accepted = sum(1 for t in s.texts() if t.startswith("kill "))
    killed = sum(1 for _, rc, _ in sends.outcomes if rc == -signal.SIGKILL)
    return {"kills": kills, "killed_mid_send": killed, "accepted": accepted, "absent": kills - accepted,
            "inputs": len(s.inputs)}


def idle_race(directory: str, senders: int, per_sender: int) -> Dict[str, Any]:
    """Concurrent senders against a runtime that idles out after 10 ms: a send
    that reaches an exiting runtime must be handed to the next one, so every
    send exits 0 (never 6, "outcome unknown", for a plain idle exit)."""
    path = os.path.join(directory, "idle-race.jsonl")
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="0.01", HARNESSCTL_ADAPTER="mock")
    sends = Sends()

    def sender(k: int) -> None:
        rng = random.Random(k)
        for i in range(per_sender):
            send(path, "sender %d send %d" % (k, i), sends, env=env)
            time.sleep(rng.uniform(0, 0.05))

    threads = [threading.Thread(target=sender, args=(k,)) for k in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    settle(path, env=env)
    s = check(path)
    sends.verify(s)
    failed = [o for o in sends.outcomes if o[1]]
    assert not failed, "sends that did not exit 0: %s" % [(o[0], o[1], o[2][:200]) for o in failed[:5]]
    with open(Address(os.path.realpath(path)).runtime_log, "rb") as f:
        exits = f.read().count(b"shutting down: idle")
    return {"sends": len(sends.outcomes), "idle_exits": exits, "inputs": len(s.inputs)}


# -- concurrent sends, cancels and replies -------------------------------------------


def storm(directory: str, senders: int, per_sender: int) -> Dict[str, Any]:
    """Senders (plain, /sleep, /permission, /question inputs), one script that
    cancels at random and one that answers every pending request, all at once
    into one file: every command gets a documented exit code, and the file
    ends with every input covered by exactly one result."""
    path = os.path.join(directory, "storm.jsonl")
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="0.3", HARNESSCTL_ADAPTER="mock")
    sends = Sends()
    done = threading.Event()
    counts = {"cancel": 0, "reply": 0}
    problems: List[str] = []

    def sender(k: int) -> None:
        rng = random.Random(k)
        for i in range(per_sender):
            head = rng.choice(["", "/sleep %.2f\n" % rng.uniform(0, 0.3), "/permission ok?\n", "/question which?\n"])
            send(path, head + "storm %d-%d" % (k, i), sends, env=env)

    def canceller() -> None:
        rng = random.Random(-1)
        while not done.wait(rng.uniform(0, 0.2)):
            proc = run("cancel", path, env=env)
            counts["cancel"] += 1
            if proc.returncode not in (0, 4):
                problems.append("cancel exited %d: %r" % (proc.returncode, proc.stderr))

    def replier() -> None:
        rng = random.Random(-2)
        while not done.wait(rng.uniform(0, 0.1)):
            for request_id, request in list(fold(e for e, _ in read_events(path)).pending.items()):
                proc = run("reply", path, request_id, "allow" if request.get("kind") == "permission" else "blue",
                           env=env)
                counts["reply"] += 1
                if proc.returncode not in (0, 3):  # 3: cancelled (expired) meanwhile
                    problems.append("reply exited %d: %r" % (proc.returncode, proc.stderr))

    helpers = [threading.Thread(target=canceller), threading.Thread(target=replier)]
    threads = [threading.Thread(target=sender, args=(k,)) for k in range(senders)]
    for thread in helpers + threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    for thread in helpers:
        thread.join()
    assert not problems, problems[:5]
    run("cancel", path, env=env)
    settle(path, env=env)
    s = check(path)
    sends.verify(s)
    assert [o for o in sends.outcomes if o[1]] == []
    return {"sends": len(sends.outcomes), "cancels": counts["cancel"], "replies": counts["reply"],
            "results": s.results, "inputs": len(s.inputs)}


# -- a full disk, another user -----------------------------------------------------


NOBODY = 65534  # the user a test acts as to be someone else


def fill(directory):
    """Write filler until the filesystem is full, then take the last pages one by
    one (tmpfs counts pages per CPU and lets a few more through near the limit).
    Returns the filler's directory: remove it to give the space back."""
    filler = os.path.join(str(directory), "filler")
    os.mkdir(filler)
    with open(os.path.join(filler, "bulk"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError as e:
            assert e.errno == errno.ENOSPC
    failures = 0
    for n in itertools.count():
        try:
            with open(os.path.join(filler, "page-%d" % n), "wb", buffering=0) as f:
                f.write(b"\0" * 4096)
        except OSError:
            failures += 1
            if failures == 8:
                return filler


def as_nobody(argv, keep_root_fs=False):
    """Run the CLI's main() in a forked child acting as user nobody: (exit code,
    stderr).  With `keep_root_fs` only the effective uid changes and the
    filesystem uid stays root, so file permissions do not stop the child."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status and stderr
        code = 99
        try:
            sys.stderr = os.fdopen(write_end, "w")
            if keep_root_fs:
                os.setegid(NOBODY)
                os.seteuid(NOBODY)
                ctypes.CDLL(None).setfsuid(0)
            else:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            os.environ["HARNESSCTL_TIMEOUT"] = "2"
            from harnessctl import cli

            code = cli.main(argv)
            sys.stderr.flush()
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        err = f.read().decode("utf-8", "replace")
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status), status
    return os.WEXITSTATUS(status), err
