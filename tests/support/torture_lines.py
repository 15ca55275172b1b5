"""The torture suite's "hostile line" class (issue 19): every field of every
event type given every wrong JSON type, appended as foreign lines to a live
session's event file, and to one whose runtime is stopped or lost, round
after round.  After each round every command still exits with a documented
code (never 1), and the file passes the independent checker while the
project's fold reads it exactly as it reads the file without those lines.

Which lines are hostile is decided here, independently of harnessctl.eventfile.state:
a line is hostile when schema/events.schema.json rejects it (tests/support/schemacheck.py),
when it holds a number that is not finite (`Infinity` is not JSON), or when
its `seq` is beyond 2^53 - 1 (EVENT.md, "Rules for readers").  A variant that
turns out to be a valid event (a string where any string will do) is left out:
a valid foreign line may change the conversation, which is issue 19 section 1's
business, not this class's.
"""

from __future__ import annotations

import json
import os
import random
import signal
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import schemacheck
from cliutil import alive, cli_env, run, runtime_pids
from torture_support import Sends, of_kind, scan, send, settle, wait_until

from harnessctl.eventfile.eventlog import read_events
from harnessctl.eventfile.state import fold

TS = "2026-12-02T10:40:33.794Z"
MAX_SEQ = 2 ** 53 - 1

# Raw JSON for every wrong type: null, booleans, numbers (huge, non-finite,
# non-finite-looking), strings (empty, escaped, a lone surrogate, a terminal
# escape), arrays and objects; None: the field left out.
WRONG: Tuple[Optional[str], ...] = (
    "null", "true", "false", "0", "-1", "7", "1" + "0" * 400, "1.5", "1e999", "-1e999", "Infinity", "-Infinity",
    "NaN", '"Infinity"', '""', '"x"', '"\\u0062ogus"', '"\\u0000"', '"\\ud800"', '"\\u001b]0;pwned\\u0007"',
    '"\\u0031"', "[]", "[1]", '["x"]', "[null]", "[[]]", "{}", '{"a":1}', '{"type":"result"}', None,
)
# Whole lines that are no event object at all.
NOT_OBJECTS = ("[]", "5", '"result"', "null", "true", '[{"type":"result"}]')


def templates(input_id: str, run_id: str) -> Dict[str, Dict[str, Any]]:
    """A valid line of every type, naming a real input and run of the session:
    a hostile variant that were read as an event would change them."""
    return {
        "accepted": {"type": "accepted", "ts": TS, "seq": 1, "input_id": input_id, "text": "x", "delivery": "start",
                     "run_id": run_id},
        "message": {"type": "message", "ts": TS, "seq": 1, "run_id": run_id, "message_id": run_id + "-msg-9",
                    "role": "assistant", "text": "x"},
        "request": {"type": "request", "ts": TS, "seq": 1, "run_id": run_id, "request_id": "req-1",
                    "state": "pending", "kind": "question", "message": "m", "options": ["allow", "deny"],
                    "tool": "command", "questions": [{"id": "q1", "question": "why?"}], "answer": "allow"},
        "result": {"type": "result", "ts": TS, "seq": 1, "run_id": run_id, "input_ids": [input_id],
                   "status": "completed", "output": "", "usage": None, "cost_usd": None, "error": None,
                   "error_class": None},
        "log": {"type": "log", "ts": TS, "seq": 1, "level": "info", "kind": "text.delta", "run_id": run_id,
                "message_id": None, "text": "x"},
    }


def variant(template: Dict[str, Any], field: str, raw: Optional[str]) -> bytes:
    """The template's line with `field`'s JSON replaced by `raw` (None: left out)."""
    parts = [(k, json.dumps(v)) for k, v in template.items()]
    return ("{%s}" % ",".join('"%s":%s' % (k, raw if k == field else v) for k, v in parts
                              if k != field or raw is not None)).encode("utf-8")


def is_hostile(line: bytes) -> bool:
    """Whether `line` is not a valid event by the protocol's own texts."""
    def no_constant(name: str) -> Any:
        raise ValueError(name)

    try:
        event = json.loads(line, parse_constant=no_constant)
    except ValueError:
        return True  # Infinity, NaN, or a number too large to parse
    if not isinstance(event, dict) or schemacheck.check_event(event) or _not_finite(event):
        return True
    return isinstance(event.get("seq"), int) and event["seq"] > MAX_SEQ


def _not_finite(value: Any) -> bool:
    if isinstance(value, float):
        return value - value != 0
    if isinstance(value, dict):
        return any(_not_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_not_finite(v) for v in value)
    return False


def catalogue(input_id: str, run_id: str) -> List[bytes]:
    """Every hostile variant for this input and run: each field of each type given each wrong value."""
    lines = [raw.encode() for raw in NOT_OBJECTS]
    for template in templates(input_id, run_id).values():
        for field in template:
            for raw in WRONG:
                line = variant(template, field, raw)
                if is_hostile(line):
                    lines.append(line)
    return sorted(set(lines))


# -- the check ----------------------------------------------------------------------------

BUSINESS = ("seq", "open_inputs", "open_runs", "pending", "closed_requests", "request_count", "last_result",
            "inputs_seen", "results_seen")


def check_with_hostile(path: str, hostile: Set[bytes], sends: Sends) -> None:
    """The independent checker skipping the hostile lines, and the fold: the
    same business state with and without them, and no anomaly but skipped lines."""
    s = scan(path, foreign=hostile)
    problems = list(s.problems)
    with open(path, "rb") as f:
        own = [json.loads(line) for line in f.read().split(b"\n") if line and line not in hostile]
    whole, clean = fold(e for e, _ in read_events(path)), fold(own)
    for name in BUSINESS:
        if getattr(whole, name) != getattr(clean, name):
            problems.append("the hostile lines changed the fold's %s: %r, without them %r"
                            % (name, getattr(whole, name), getattr(clean, name)))
    problems += ["fold anomaly: %s" % a for a in whole.anomalies if not a.startswith("a line was skipped")]
    problems += ["input %s has no result" % i for i in s.open_inputs]
    problems += ["request %s still pending" % r for r in s.pending_requests]
    assert not problems, "%s:\n  %s" % (path, "\n  ".join(problems[:30]))
    sends.verify(s)


# -- the scenario -------------------------------------------------------------------------

# Exit codes each command may give after a round (docs/PROTOCOL.md section 15); never 1.
ALLOWED = {"status": (0,), "cancel": (0,), "wait": (0, 10), "wait-input": (0, 7, 8, 9, 10), "send": (0,),
           "log": (0,)}
STOPS = ("live", "sigterm", "sigkill")


def hostile_lines(directory: str, rounds: int, seed: int, per_round: int = 40) -> Dict[str, Any]:
    """`rounds` rounds: a run starts, its runtime lives on or is stopped
    (SIGTERM) or lost (kill -9), `per_round` random hostile lines naming its
    input and run are appended, then every command is run and the file checked."""
    path = os.path.join(directory, "hostile.jsonl")
    rng = random.Random(seed)
    env = cli_env(HARNESSCTL_ADAPTER="mock")
    sends = Sends()
    hostile: Set[bytes] = set()
    by_stop = {stop: 0 for stop in STOPS}
    by_exit: Dict[str, Dict[int, int]] = {name: {} for name in ALLOWED}
    variants = 0
    for number in range(rounds):
        text = "/sleep %.2f\nround %d" % (rng.uniform(0.2, 1.0), number)
        assert send(path, text, sends, env=env) == 0, sends.outcomes[-1]
        accepted = [e for e in of_kind(path, "accepted") if e.get("text") == text][-1]
        stop = rng.choice(STOPS)
        by_stop[stop] += 1
        _stop(path, stop)
        pool = catalogue(accepted["input_id"], accepted["run_id"])
        variants = max(variants, len(pool))
        lines = rng.sample(pool, min(per_round, len(pool)))
        with open(path, "ab") as f:
            for line in lines:
                f.write(line + b"\n")
        hostile.update(lines)
        for name, code in _commands(path, accepted["input_id"], sends, env, number).items():
            by_exit[name][code] = by_exit[name].get(code, 0) + 1
        settle(path, env=env)
        check_with_hostile(path, hostile, sends)
    _stop(path, "sigterm")
    check_with_hostile(path, hostile, sends)
    return {"rounds": rounds, "by_stop": by_stop, "lines": len(hostile), "variants": variants,
            "by_exit": by_exit, "inputs": len(scan(path, foreign=hostile).inputs)}


def _stop(path: str, how: str) -> None:
    if how == "live":
        return
    pids = runtime_pids(path)
    for pid in pids:
        os.kill(pid, signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
    wait_until(lambda: not any(alive(p) for p in pids), 20, "the runtime gone")


def _commands(path: str, input_id: str, sends: Sends, env: Dict[str, str], number: int) -> Dict[str, int]:
    """Every command once, in the order a script might; each exit code checked."""
    codes = {}
    for name, argv in (("status", ["status", path]), ("wait-input", ["wait", path, input_id, "--timeout", "5"]),
                       ("wait", ["wait", path, "--timeout", "5"]), ("cancel", ["cancel", path]),
                       ("log", ["log", path]), ("log", ["log", path, "--since", "1", "--json"])):
        proc = run(*argv, env=env)
        assert proc.returncode in ALLOWED[name], (argv, proc.returncode, proc.stderr.decode("utf-8", "replace"))
        codes[name] = proc.returncode
    codes["send"] = send(path, "after round %d" % number, sends, env=env)
    assert codes["send"] in ALLOWED["send"], sends.outcomes[-1]
    return codes


def all_fields() -> Sequence[Tuple[str, str]]:
    """(type, field) of every template: what the class covers."""
    return [(kind, field) for kind, template in templates("i", "r").items() for field in template]
