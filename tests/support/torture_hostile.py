"""Torture class: the hostile agent (issue 19, "Done means").

An ACP agent that runs as the user and attacks harnessctl from the inside
(tests/support/acp_support/hostile_agent.py): it asks the client file system for
harnessctl's own files, writes the binding, the snapshot and the event file
itself, hides escape sequences in every field it controls, floods, never
answers a cancel and streams a line without a newline.

Round after round, each on a new event file that lies INSIDE the agent's
workspace (the README's own layout, the one the attack needs), a round plays
one to three behaviours drawn from a shuffled deck, with random details.
After each round: every command exited with a documented code (never 1) and
one clean stderr line, the event file passes the independent checker of
torture_support (the lines the agent forged left out), `log` and `log --json`
print no raw control or bidi character and no transcript line the agent
forged, no PWNED marker exists, and nothing is left running.

Every expectation names the finding of issue 19 it waits for (F1 ... F7); on
a branch without that fix the check fails, and the round's report says
which.  A round collects all its problems before failing, so one run lists
every finding still open.  Shared by tests/torture/test_torture_hostile.py and
bench/torture_report.py."""

from __future__ import annotations

import json
import os
import random
import re
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from cliutil import ROOT, cli_env, kill_all_under, run, runtime_pids, wait_for
from torture_support import Sends, check, count, fold, leftovers, read_events, settle

from harnessctl.store.address import fallback_socket_dir

AGENT = os.path.join(ROOT, "tests", "support", "acp_support", "hostile_agent.py")

# The knob of the grace period after which a runtime stops an agent that ignores
# session/cancel (issue 19 F2, added on another branch): update the name here
# once harnessctl/knobs.py has it.
CANCEL_GRACE_KNOB = "HARNESSCTL_CANCEL_GRACE"
CANCEL_GRACE = 1.0  # seconds, as the round sets the knob

BEHAVIOURS = ("fs", "append", "escapes", "flood", "cancel", "junk", "state", "binding", "refused")
TERMINAL = ("binding", "refused")  # a round ends with them: the file is unusable afterwards
DOCUMENTED = {0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 130}  # docs/PROTOCOL.md section 15, less 1 (a bug or a disk error)
# What no output for people may carry raw (docs/PROTOCOL-COMMANDS.md section 16, issue 19 F5): C0 but
# newline and tab, DEL, C1, zero-width characters, U+2028/2029, bidi overrides and isolates.
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200d\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069\ufeff]")
TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
FOREIGN_NOTE = re.compile(r"foreign|not (written by|ours)|outside|behind|append", re.I)
MARKER = "PWNED"
STATUSES_DURING_FLOOD = 3  # asked while the agent floods
WAIT = 60.0  # seconds to wait for what a round needs before calling it a problem
IDLE = "1"  # the runtime idles out quickly: the forgeries that act "after the next exit" get their turn


def sizes(full: Optional[bool] = None) -> Dict[str, int]:
    """Flood and junk sizes: cheap by default, the issue's with HARNESSCTL_TORTURE=full
    (or `full`)."""
    pick = count if full is None else (lambda small, big: big if full else small)
    return {"flood_updates": pick(5000, 200000), "flood_ids": pick(1000, 20000), "junk_bytes": pick(256, 768) << 20}


class Broken(Exception):
    """The round cannot go on (a wedged runtime, a refused binding)."""


class Round:
    """One event file, one hostile agent, the behaviours of one round."""

    def __init__(self, root: str, number: int, rng: random.Random, plan: List[str],
                 size: Optional[Dict[str, int]] = None) -> None:
        self.rng = rng
        self.size = size or sizes()
        self.plan = plan
        self.dir = os.path.join(root, "round-%03d" % number)
        work = "work" + ("-" + "w" * 90 if rng.random() < 0.3 else "")  # long: the socket goes to /tmp
        self.work = os.path.join(self.dir, work)
        os.makedirs(self.work)
        self.path = os.path.join(self.work, "session.jsonl")  # inside the agent's workspace
        self.report_path = os.path.join(self.dir, "agent-report.jsonl")
        flags = ["--report", self.report_path]
        if "refused" in plan:
            flags.append("--refuse-session")
        elif rng.random() < 0.5:
            flags.append("--hostile-ids")
        self.agent = " ".join([sys.executable, AGENT] + flags)
        self.env = cli_env(HARNESSCTL_IDLE_TIMEOUT=IDLE, FAKE_ACP_HOME=os.path.join(self.dir, "agent-home"),
                           **{CANCEL_GRACE_KNOB: str(CANCEL_GRACE)})
        self.sends = Sends()
        self.problems: List[str] = []
        self.foreign: List[bytes] = []  # lines the agent appended itself: not harnessctl's
        self.commands: List[Tuple[str, int]] = []
        self.stats: Dict[str, Any] = {}
        self.mark = 0  # the agent's report lines of earlier behaviours

    # -- commands ---------------------------------------------------------------------------

    def cmd(self, *args: str, timeout: float = 120) -> Any:
        """A harnessctl command; its exit code and stderr are checked here."""
        proc = run(*args, env=self.env, timeout=timeout)
        self.commands.append((args[0], proc.returncode))
        err = proc.stderr.decode("utf-8", "replace")
        if proc.returncode not in DOCUMENTED:
            self.problem("F3/F4 (exit 1)", "`%s` exited %d: %r" % (args[0], proc.returncode, err[-300:]))
        if proc.returncode and not (err.startswith("harnessctl: ") and err.count("\n") == 1):
            self.problem("F5", "`%s` exit %d stderr is not one line: %r" % (args[0], proc.returncode, err[:300]))
        if FORBIDDEN.search(err):
            self.problem("F5", "`%s` stderr carries raw controls: %r" % (args[0], err[:300]))
        return proc

    def send(self, text: str, bound: bool = True) -> Optional[str]:
        """The input id, or None if the send did not exit 0."""
        flags = ["--adapter", "acp", "--agent", self.agent, "--cwd", self.work] if bound else []
        proc = self.cmd("send", self.path, text, "--print-id", *flags)
        self.sends.add(text, proc.returncode, proc.stderr)
        return proc.stdout.decode().strip() if proc.returncode == 0 else None

    def problem(self, finding: str, text: str) -> None:
        self.problems.append("%s: %s" % (finding, text))

    # -- reading ----------------------------------------------------------------------------

    def reports(self, event: Optional[str] = None) -> List[Dict[str, Any]]:
        """What the agent reported since the behaviour going on started."""
        try:
            with open(self.report_path, encoding="utf-8") as f:
                lines = [json.loads(line) for line in f][self.mark:]
        except FileNotFoundError:
            return []
        return [r for r in lines if event is None or r["event"] == event]

    def wait_report(self, event: str, what: str, timeout: float = WAIT) -> Dict[str, Any]:
        return self.waited(lambda: (self.reports(event) or [None])[-1], what, timeout)

    def events(self, kind: Optional[str] = None) -> List[Dict[str, Any]]:
        """harnessctl's own lines (the agent's forged ones left out)."""
        out: List[Dict[str, Any]] = []
        if not os.path.exists(self.path):
            return out
        with open(self.path, "rb") as f:
            for raw in f:
                if raw.rstrip(b"\n") in self.foreign or not raw.endswith(b"\n"):
                    continue
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(event, dict) and (kind is None or event.get("type") == kind):
                    out.append(event)
        return out

    def result_of(self, input_id: str, timeout: float = WAIT) -> Dict[str, Any]:
        return self.waited(lambda: next((r for r in self.events("result") if input_id in (r.get("input_ids") or [])),
                                        None), "the result of %s" % input_id, timeout)

    def pending(self, run_of: str, timeout: float = WAIT) -> Dict[str, Any]:
        """The pending request of the run that `run_of` (an input id) started."""
        def found() -> Optional[Dict[str, Any]]:
            runs = {a.get("run_id") for a in self.events("accepted") if a.get("input_id") == run_of}
            requests: Dict[str, Dict[str, Any]] = {}
            for r in self.events("request"):
                if r.get("run_id") in runs:
                    requests[r["request_id"]] = r
            return next((r for r in requests.values() if r.get("state") == "pending"), None)
        return self.waited(found, "a pending request of %s" % run_of, timeout)

    def waited(self, predicate: Callable[[], Any], what: str, timeout: float) -> Any:
        try:
            return wait_for(predicate, timeout, what, 0.05)
        except AssertionError as e:
            raise Broken(str(e)) from None

    def diagnostics(self, after_seq: int = 0) -> List[Dict[str, Any]]:
        return [e for e in self.events("log") if e.get("kind") == "diagnostic" and e.get("seq", 0) > after_seq]

    def seq_now(self) -> int:
        return max([e.get("seq", 0) for e in self.events() if isinstance(e.get("seq"), int)] or [0])

    # -- the round --------------------------------------------------------------------------

    def play(self) -> None:
        for behaviour in self.plan:
            try:
                getattr(self, "_" + behaviour)()
            except Broken as e:
                self.problem(FINDING_OF[behaviour], "%s: the round could not go on: %s" % (behaviour, e))
                break
        self.finish()

    def finish(self) -> None:
        """The checks every round ends with."""
        killed = False
        if os.path.exists(self.path):
            try:
                settle(self.path, timeout=WAIT, env=self.env)
            except AssertionError as e:
                self.problem("checker", "the file never settled: %s" % e)
                kill_all_under(self.dir)
                killed = True
                self.cmd("status", self.path)  # the lost-runtime rule closes what the killed runtime left open
            self.check_file()
            self.check_log()
        if any(MARKER in names for _, _, names in os.walk(self.dir)):
            self.problem("F1", "the forged agent command ran: %s exists" % MARKER)
        try:
            wait_for(lambda: not runtime_pids(self.path), WAIT, "the runtime idles out", 0.05)
            wait_for(lambda: killed or not leftovers(self.dir, [self.path]), 10, "nothing left behind", 0.05)
        except AssertionError:
            self.problem("F2", "left behind: %s" % leftovers(self.dir, [self.path])[:5])
        kill_all_under(self.dir)

    def check_file(self) -> None:
        """The independent checker over harnessctl's own lines (a copy without
        the agent's forged ones), and the sends against it.  Right after forged
        lines the runtime's `seq` may go on from its own count or skip past
        theirs: a skip of at most their number is renumbered in the copy,
        anything else the checker sees as it is."""
        copy = os.path.join(self.dir, "checked.jsonl")
        with open(self.path, "rb") as f, open(copy, "wb") as out:
            out.writelines(own_lines(f, self.foreign))
        try:
            scan = check(copy, mock=False)
            self.sends.verify(scan)
            self.stats["lines"] = scan.lines
        except AssertionError as e:
            self.problem("checker", str(e)[:2000])
        with open(self.path, "rb") as f:
            for number, raw in enumerate(f, 1):
                try:
                    json.loads(raw, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
                except ValueError as e:
                    if raw.endswith(b"\n") and "Expecting" not in str(e):
                        self.problem("F4", "line %d holds a non-finite number %s" % (number, e))

    def check_log(self) -> None:
        """`log` and `log --json`: documented exits, nothing raw, no forged transcript line."""
        results = len([e for e in read_events(self.path) if e[0].get("type") == "result"])
        for flags in ([], ["--json"]):
            proc = self.cmd("log", self.path, *flags)
            out = proc.stdout.decode("utf-8", "replace")
            raw = FORBIDDEN.findall(out)
            if raw:
                self.problem("F5", "`%s` printed %d raw control/bidi characters, e.g. %r"
                             % (" ".join(["log"] + flags), len(raw), sorted(set(raw))[:8]))
            forged = [line for line in out.split("\n") if line.startswith("===")]
            if not flags and len(forged) > results:
                self.problem("F5", "`log` printed %d `===` lines for %d results: %r" % (len(forged), results,
                                                                                         forged[:3]))
            self.stats["log_lines"] = self.stats.get("log_lines", 0) + out.count("\n")

    # -- the behaviours -----------------------------------------------------------------------

    def started(self, text: str) -> str:
        """A behaviour's first send: its input id; the agent's reports count from here."""
        self.mark += len(self.reports())
        input_id = self.send(text)
        if input_id is None:
            raise Broken("the send of %r did not exit 0: %r" % (text, self.sends.outcomes[-1][1:]))
        return input_id

    def _fs(self) -> None:
        """F1: the client file system never reads or writes harnessctl's files;
        F2: a FIFO is refused, not read."""
        input_id = self.started("/fs %d" % self.rng.randrange(1 << 30))
        binding = _read(self.path + ".d/binding.json")  # bound before the send returned, before any fs request
        plan = self.wait_report("fs-plan", "the agent's fs plan")
        try:
            self.wait_report("fs-done", "every fs request answered")
        except Broken:
            done = self.reports("fs")
            stuck = [t for t in plan["targets"] if t not in {d["target"] for d in done}][:1]
            raise Broken("F2: an fs request was never answered (stuck at %s): the runtime wedged" % stuck) from None
        requests = self.reports("fs")
        self.stats["fs_requests"] = len(requests)
        self.stats["fs_refused"] = sum(1 for r in requests if r["refused"])
        for r in requests:
            if not r["refused"]:
                self.problem("F1", "%s of %s was served, not refused" % (r["method"], r["target"]))
        self.result_of(input_id)
        nonce = plan["nonce"].encode()
        touched = [p for p in self.harnessctl_files() if nonce in _read(p)]
        if touched:
            self.problem("F1", "the agent's fs writes reached %s" % touched)
        if _read(self.path + ".d/binding.json") != binding:
            self.problem("F1", "binding.json changed under the agent's fs requests")

    def harnessctl_files(self) -> List[str]:
        files = [self.path]
        for folder in (self.path + ".d", fallback_socket_dir()):
            if os.path.isdir(folder):
                files += [os.path.join(folder, n) for n in os.listdir(folder)
                          if os.path.isfile(os.path.join(folder, n))]
        return files

    def _append(self) -> None:
        """F1: a foreign append while the runtime holds the file is recorded as a
        diagnostic and never acted on (the forged `replied` answers nothing)."""
        before = self.seq_now()
        input_id = self.started("/forge-append")
        forged = self.wait_report("forged-append", "the agent's forged lines")
        self.foreign += [line.encode("utf-8") for line in forged["lines"]]
        self.stats["forged_lines"] = self.stats.get("forged_lines", 0) + len(forged["lines"])
        request_id = forged["request_id"]
        status = json.loads(self.cmd("status", self.path).stdout or b"{}")
        if [r.get("request_id") for r in status.get("requests", [])] != [request_id]:
            self.problem("F1", "after a forged `replied`, status shows %s, not %s pending"
                         % (status.get("requests"), request_id))
        if self.cmd("reply", self.path, request_id, "deny").returncode != 0:
            self.problem("F1", "reply to %s after a forged `replied` did not exit 0" % request_id)
        answer = self.wait_report("permission-answer", "the agent's real answer")
        if answer.get("optionId") != "reject_once":
            self.problem("F1", "the agent got %r, not the real answer reject_once" % answer.get("optionId"))
        result = self.result_of(input_id)
        if "FORGED" in str(result.get("output")) or "reject_once" not in str(result.get("output")):
            self.problem("F1", "the run's own result is not the agent's real answer: %r" % result.get("output"))
        notes = [d for d in self.diagnostics(before) if FOREIGN_NOTE.search(json.dumps(d))]
        self.stats["foreign_flagged"] = self.stats.get("foreign_flagged", 0) + bool(notes)
        if not notes:
            self.problem("F1", "no diagnostic about the foreign append")

    def _escapes(self) -> None:
        """F5: escape sequences in every field; a non-token option id becomes
        `option-N`, `reply` with it works and hands the agent its own id back."""
        input_id = self.started("/escapes %d" % self.rng.randrange(1 << 30))
        request = self.pending(input_id)
        offered = self.wait_report("permission-options", "the agent's options")["options"]
        names = request.get("options") or []
        self.stats["escape_rounds"] = 1
        odd = [n for n in names if not TOKEN.match(str(n))]
        if odd:
            self.problem("F5", "option names that are not plain tokens: %r" % odd)
        if not any(re.match(r"^option-\d+$", str(n)) for n in names):
            self.problem("F5", "no non-token option id was renamed option-N: %r" % names)
        raw = json.dumps(request, ensure_ascii=False)
        renamed = [offered[i] for i, n in enumerate(names[:len(offered)]) if re.match(r"^option-\d+$", str(n))]
        if not all(json.dumps(o, ensure_ascii=False)[1:-1] in raw for o in renamed):
            self.problem("F5", "the request does not keep the agent's own ids of the renamed options")
        pick = self.rng.choice([1, 2]) if len(names) > 2 else 0
        if "\0" in str(names[pick]):  # not even an argument: answer with the last (a reject) to go on
            self.problem("F5", "option %r cannot be passed to reply" % names[pick])
            pick = len(names) - 1
        if self.cmd("reply", self.path, request["request_id"], str(names[pick])).returncode != 0:
            self.problem("F5", "reply with option %r did not exit 0" % names[pick])
        answer = self.wait_report("permission-answer", "the agent's answer")
        if pick < len(offered) and answer.get("optionId") != offered[pick]:
            self.problem("F5", "replying %r gave the agent %r, not its option %r"
                         % (names[pick], answer.get("optionId"), offered[pick]))
        self.result_of(input_id)

    def _flood(self) -> None:
        """F7 and issue 19's held case: `status` answers (exit 0) during a flood;
        the agent floods until the round asked STATUSES_DURING_FLOOD of them."""
        n = self.size
        stop = os.path.join(self.dir, "flood-enough")
        input_id = self.started("/flood %d %d %s" % (n["flood_updates"], n["flood_ids"], stop))
        slowest, during, asked, peak = 0.0, 0, 0, 0
        deadline = time.monotonic() + 10 * WAIT
        while not any(input_id in (r.get("input_ids") or []) for r in self.events("result")):
            if time.monotonic() > deadline:
                raise Broken("no result of the flood after %ds" % (10 * WAIT))
            started = time.monotonic()
            proc = self.cmd("status", self.path)
            slowest = max(slowest, time.monotonic() - started)
            asked += 1
            peak = max([peak] + [_peak_rss(pid) for pid in runtime_pids(self.path)])
            if proc.returncode != 0:
                self.problem("F7", "status during a flood exited %d after %.1fs" % (proc.returncode,
                                                                                     time.monotonic() - started))
            elif json.loads(proc.stdout).get("state") == "running":
                during += 1
            if asked >= STATUSES_DURING_FLOOD and not os.path.exists(stop):
                open(stop, "w").close()
        flooded = self.wait_report("flood-done", "the flood's count")
        self.stats.update(flood_updates=flooded["updates"], flood_ids=flooded["ids"], status_during_flood=during,
                          max_status_s=slowest, max_flood_rss_mb=peak >> 20)  # reported, not checked

    def _cancel(self) -> None:
        """F2: an agent that ignores session/cancel is stopped after the grace
        period and the run ends `cancelled`."""
        input_id = self.started("/ignore-cancel")
        agent = self.wait_report("ignoring-cancel", "the agent to stall")
        self.waited(lambda: any("stalling" in str(e.get("text")) for e in self.events("log")), "streaming", WAIT)
        if self.cmd("cancel", self.path).returncode != 0:
            self.problem("F2", "cancel of a stalling agent did not exit 0")
        started = time.monotonic()
        try:
            result = self.result_of(input_id, CANCEL_GRACE + WAIT)
        except Broken:
            raise Broken("F2: no result %.0fs after cancel (grace %s=%s): the run stays cancelling"
                         % (CANCEL_GRACE + WAIT, CANCEL_GRACE_KNOB, CANCEL_GRACE)) from None
        self.stats["max_cancel_end_s"] = time.monotonic() - started
        if result.get("status") != "cancelled":
            self.problem("F2", "an ignored cancel ended %r, not cancelled" % result.get("status"))
        try:
            wait_for(lambda: not os.path.exists("/proc/%d" % agent["pid"]), WAIT, "the agent stopped", 0.05)
        except AssertionError:
            self.problem("F2", "the agent that ignored the cancel still runs")

    def _junk(self) -> None:
        """F2: a line without a newline is capped (the runtime does not grow
        with it), recorded as a diagnostic, and the next message is read whole."""
        size = self.size["junk_bytes"]
        before = self.seq_now()
        input_id = self.started("/junk %d" % size)
        try:
            request = self.pending(input_id, 2 * WAIT)
        except Broken:
            raise Broken("F2: the message after %d MiB of junk never arrived (glued to it?)" % (size >> 20)) from None
        peak = max([_peak_rss(pid) for pid in runtime_pids(self.path)] or [0])
        self.stats.update(junk_mb=size >> 20, max_rss_mb=peak >> 20)
        if peak >= size:
            self.problem("F2", "the runtime grew to %d MiB for a %d MiB line" % (peak >> 20, size >> 20))
        if not self.diagnostics(before):
            self.problem("F2", "no diagnostic about the %d MiB line" % (size >> 20))
        self.cmd("reply", self.path, request["request_id"], "allow")
        result = self.result_of(input_id)
        if "after the junk: allow_once" not in str(result.get("output")):
            self.problem("F2", "the answer after the junk is lost: %r" % result.get("output"))

    def _state(self) -> None:
        """F1: a state.json forged after the runtime exited is ignored; status
        tells the truth of the event file."""
        input_id = self.started("/forge-state")
        self.result_of(input_id)
        self.wait_report("helper-done", "the forged state.json")
        truth = fold(e for e, _ in read_events(self.path)).status()
        proc = self.cmd("status", self.path)
        if proc.returncode != 0:
            self.problem("F1", "status after a forged state.json exited %d" % proc.returncode)
            return
        shown = json.loads(proc.stdout)
        if "FORGED" in proc.stdout.decode() or (shown.get("state"), shown.get("requests")) != (
                truth["state"], truth["requests"]):
            self.problem("F1", "status believed a forged state.json: %s" % proc.stdout.decode().strip()[:300])

    def _binding(self) -> None:
        """F1: a binding the agent rewrote (during its turn, or after the runtime
        exited) is refused with exit 2 by the next status and send; the forged
        command never runs."""
        when = self.rng.choice(["now", "later"])
        input_id = self.started("/forge-binding %s" % when)
        self.result_of(input_id)
        self.wait_report("forged-binding", "the forged binding")
        self.waited(lambda: not runtime_pids(self.path), "the runtime idles out", WAIT)
        self.stats["binding_forged_" + when] = 1
        status = self.cmd("status", self.path)
        if status.returncode != 2:
            self.problem("F1", "status of a forged binding (%s) exited %d: %s"
                         % (when, status.returncode, status.stdout.decode().strip()[:200]))
        proc_code = self.send("after the forgery", bound=False)
        if self.sends.outcomes[-1][1] != 2:
            self.problem("F1", "send with a forged binding (%s) exited %d (input %s)"
                         % (when, self.sends.outcomes[-1][1], proc_code))

    def _refused(self) -> None:
        """F5: an agent's error text reaches send's stderr as one clean line (exit 5)."""
        self.send("hello")
        code, err = self.sends.outcomes[-1][1], self.sends.outcomes[-1][2]
        if code != 5:
            self.problem("F5", "a refused session/new exited %d: %r" % (code, err[:200]))
        self.stats["refused_sessions"] = 1


FINDING_OF = {"fs": "F1/F2", "append": "F1", "escapes": "F5", "flood": "F7", "cancel": "F2", "junk": "F2",
              "state": "F1", "binding": "F1", "refused": "F5"}


def own_lines(lines: Any, foreign: List[bytes]) -> List[bytes]:
    """The lines not in `foreign`; the first own line after a run of k foreign
    ones may skip up to k seq numbers (the runtime counted past them): that
    skip is taken out of its seq and every later one."""
    out: List[bytes] = []
    shift, last, skipped = 0, 0, 0
    for raw in lines:
        if raw.rstrip(b"\n") in foreign:
            skipped += 1
            continue
        try:
            event = json.loads(raw)
            seq = event["seq"]
        except (ValueError, TypeError, KeyError):
            out.append(raw)
            continue
        if isinstance(seq, int) and skipped and last + 1 < seq - shift <= last + 1 + skipped:
            shift = seq - last - 1
        if shift and isinstance(seq, int) and raw.endswith(b"\n"):
            event["seq"] = seq - shift
            raw = (json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        last = seq - shift if isinstance(seq, int) else last + 1
        skipped = 0
        out.append(raw)
    return out


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _peak_rss(pid: int) -> int:
    """The process's peak resident size in bytes (VmHWM)."""
    for line in _read("/proc/%d/status" % pid).decode().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


class Deck:
    """Behaviours dealt from a shuffled deck, so a few rounds cover them all;
    a terminal behaviour ends its round, `refused` plays alone."""

    def __init__(self, rng: random.Random, behaviours: Tuple[str, ...] = BEHAVIOURS) -> None:
        self.rng = rng
        self.behaviours = behaviours
        self.cards: List[str] = []

    def deal(self) -> List[str]:
        hand: List[str] = []
        for _ in range(self.rng.randint(1, 3)):
            if not self.cards:
                self.cards = list(self.behaviours)
                self.rng.shuffle(self.cards)
            card = self.cards.pop()
            if card in hand or (card == "refused" and hand):
                self.cards.append(card)
                break
            hand.append(card)
            if card == "refused":
                break
        return [c for c in hand if c not in TERMINAL] + [c for c in hand if c in TERMINAL]


def hostile(directory: str, rounds: int, seed: int, behaviours: Tuple[str, ...] = BEHAVIOURS,
            size: Optional[Dict[str, int]] = None) -> Dict[str, Any]:
    """`rounds` rounds; raises AssertionError listing every problem of every round."""
    rng = random.Random(seed)
    deck = Deck(rng, behaviours)
    problems: List[str] = []
    totals: Dict[str, Any] = {"rounds": rounds, "by_behaviour": {b: 0 for b in behaviours}, "commands": 0,
                              "exit_codes": {}}
    for number in range(rounds):
        plan = deck.deal()
        one = Round(directory, number, rng, plan, size)
        one.play()
        for behaviour in plan:
            totals["by_behaviour"][behaviour] += 1
        for _, code in one.commands:
            totals["commands"] += 1
            totals["exit_codes"][code] = totals["exit_codes"].get(code, 0) + 1
        for key, value in one.stats.items():
            if key.startswith("max_"):
                totals[key] = max(totals.get(key, 0), value)
            else:
                totals[key] = totals.get(key, 0) + value
        problems += ["round %d %s: %s" % (number, plan, p) for p in one.problems]
    assert not problems, "seed %d, %d problems:\n  %s" % (seed, len(problems), "\n  ".join(problems))
    return totals
