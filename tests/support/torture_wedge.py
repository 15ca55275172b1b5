"""Torture scenario: an agent that tries to wedge its runtime (issue 19,
sections 2 and 7), round after round on one event file through the ACP
adapter (tests/support/wedge_agent.py): junk lines without a newline (some beyond
the 64 MiB cap), stderr floods, storms of distinct message ids, cancels it
never answers, and plain prompts between them.  Every round ends with the
result its misbehaviour deserves, `status` answers in the middle of each,
the runtime log stays within its cap, and the file passes the suite's
independent checker.  Shared by tests/torture/test_torture_wedge.py and
bench/torture_report.py."""

from __future__ import annotations

import json
import os
import random
import sys
import threading

from cliutil import ROOT, cli_env, run, runtime_pids
from torture_support import check

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Tuple

WEDGE = os.path.join(ROOT, "tests", "support", "wedge_agent.py")
MOVES = ("plain", "noline", "overlong", "stderr", "storm", "deaf")
LOG_CAP = 4 * 1024 * 1024 + 65536  # harnessctl/runtime/runtimelog.py, and one read beyond it
TIMEOUT = 300


class Wedges:
    def __init__(self, directory: str, seed: int) -> None:
        self.path = os.path.join(directory, "wedge.jsonl")
        self.random = random.Random(seed)
        self.env = cli_env(HARNESSCTL_CANCEL_GRACE="1")
        self.stats: Dict[str, Any] = {"rounds": 0, "by_move": {m: 0 for m in MOVES}, "statuses": 0}

    def harnessctl(self, *args: str) -> Tuple[int, str, str]:
        proc = run(*args, env=self.env, timeout=TIMEOUT)
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()

    def play(self, rounds: int) -> Dict[str, Any]:
        for _ in range(rounds):
            self.round(self.random.choice(MOVES))
        check(self.path, mock=False)
        for pid in runtime_pids(self.path):
            os.kill(pid, 15)
        return self.stats

    def text(self, move: str) -> str:
        size = self.random.randint
        return {"plain": "hello %d" % self.stats["rounds"], "noline": "/noline %d" % size(1, 4 << 20),
                "overlong": "/noline %d" % size(64 << 20, 80 << 20), "stderr": "/stderr %d" % size(1, 12 << 20),
                "storm": "/storm %d" % size(1, 3000), "deaf": "/deaf"}[move]

    def round(self, move: str) -> None:
        code, out, err = self.harnessctl("send", self.path, self.text(move), "--adapter", "acp", "--agent",
                                         "%s %s" % (sys.executable, WEDGE), "--print-id")
        assert code == 0, (move, code, err)
        input_id = out.strip()
        statuses: List[Tuple[int, str, str]] = []
        meddler = threading.Thread(target=lambda: statuses.append(self.harnessctl("status", self.path)))
        meddler.start()
        if move == "deaf":
            assert self.harnessctl("cancel", self.path)[0] == 0
        meddler.join()
        assert statuses[0][0] == 0, statuses
        code, out, err = self.harnessctl("wait", self.path, input_id)
        result = json.loads(out)
        assert code == (8 if move == "deaf" else 0), (move, code, err)
        assert result["status"] == ("cancelled" if move == "deaf" else "completed"), result
        if move in ("noline", "overlong"):
            assert result["output"] == "after the junk", result
        log = os.path.join(self.path + ".d", "runtime.log")
        assert os.path.getsize(log) <= LOG_CAP
        self.stats["rounds"] += 1
        self.stats["statuses"] += 1
        self.stats["by_move"][move] += 1


def wedges(directory: str, rounds: int, seed: int) -> Dict[str, Any]:
    return Wedges(directory, seed).play(rounds)
