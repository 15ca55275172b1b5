"""Issue 25, item 8: the runtime ignores SIGINT and SIGHUP for itself, and may
inherit more ignored or blocked signals from the send that started it (a
script run with nohup, a runner in the background), but every process it
starts has each signal's default disposition and an empty signal mask: a
harness or hook cancelled by a signal is not left to ignore it.  Black-box
through the CLI: the child is a shell script that records its own
/proc/self/status and then execs what it stands in front of."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from typing import Dict, Set, Tuple

from cliutil import ROOT, only, run, runtime_pids, wait_for, wait_results

WEDGE = os.path.join(ROOT, "tests", "support", "wedge_agent.py")

# `record.sh OUT COMMAND...`: writes its signal masks to OUT, then becomes COMMAND (same pid).  With
# builtins only: a shell that forks (for grep) blocks every signal meanwhile, and would record that.
RECORD = """while read -r name value; do
  case $name in SigIgn:|SigBlk:) echo "$name$value";; esac
done < /proc/$$/status > "$1.tmp"
mv "$1.tmp" "$1"
shift
exec "$@"
"""


def hostile_caller() -> None:
    """preexec_fn of the send: it ignores SIGUSR1 and blocks SIGUSR2 and SIGTERM,
    which a runtime it spawns inherits."""
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2, signal.SIGTERM})


def send(*args: str, wait: bool = True) -> subprocess.CompletedProcess:
    return run("send", *args, *(["--wait"] if wait else []), stdin=subprocess.DEVNULL, preexec_fn=hostile_caller,
               timeout=120)


def recorder(workdir, name: str) -> Tuple[str, str]:
    """The command line prefix that records into a file, and that file."""
    script = os.path.join(str(workdir), "record.sh")
    with open(script, "w") as f:
        f.write(RECORD)
    out = os.path.join(str(workdir), name)
    return "/bin/sh %s %s" % (shlex.quote(script), shlex.quote(out)), out


def masks(out: str) -> Dict[str, Set[int]]:
    """The signals the child ignores and blocks, of those a program may set: the
    C library keeps its own (32 and 33 under glibc, whose posix_spawn leaves them
    ignored in the runtime and whose sigaction refuses them)."""
    wait_for(lambda: os.path.exists(out), what="the child's record")
    settable = {int(sig) for sig in signal.valid_signals()}
    with open(out) as f:
        bits = {name: int(value, 16) for name, value in (line.split(":") for line in f.read().splitlines())}
    return {name: {sig for sig in settable if value >> (sig - 1) & 1} for name, value in bits.items()}


def test_a_harness_the_runtime_starts_has_default_signal_dispositions_and_an_empty_mask(workdir):
    prefix, out = recorder(workdir, "harness")
    path = os.path.join(str(workdir), "events.jsonl")
    proc = send(path, "hello", "--adapter", "acp", "--agent", "%s %s %s" % (prefix, shlex.quote(sys.executable),
                                                                             shlex.quote(WEDGE)))
    assert proc.returncode == 0, proc.stderr
    assert masks(out) == {"SigIgn": set(), "SigBlk": set()}


def test_a_hook_the_runtime_starts_has_default_signal_dispositions_and_an_empty_mask(workdir, project):
    prefix, out = recorder(workdir, "hook")
    path = os.path.join(str(workdir), "events.jsonl")
    proc = send(path, "hello", "--adapter", "mock", "--cwd", project, "--on-result", "%s cat" % prefix)
    assert proc.returncode == 0, proc.stderr
    assert masks(out) == {"SigIgn": set(), "SigBlk": set()}


def test_a_runtime_started_by_a_caller_that_blocks_sigterm_still_stops_on_sigterm(workdir):
    path = os.path.join(str(workdir), "events.jsonl")
    proc = send(path, "/sleep 60", "--adapter", "mock", wait=False)
    assert proc.returncode == 0, proc.stderr
    os.kill(only(runtime_pids(path)), signal.SIGTERM)
    (result,) = wait_results(path, 1, timeout=60)
    assert result["status"] == "failed" and "SIGTERM" in result["error"]
