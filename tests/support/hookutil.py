"""Hooks in tests: a small Python script that records its stdin, argv, environment and cwd in a
file of its own (named by its pid) in a directory of the test's; the test waits for those files."""

from __future__ import annotations

import json
import os
import shlex
import sys

from cliutil import processes_under, wait_for

HOOK = r'''
import json, os, sys, time
out, mode = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "ok"
data = sys.stdin.buffer.read()
child = None
if mode == "hang":  # a hook that hangs, with a child in its process group
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", out]).pid
record = {"pid": os.getpid(), "child": child, "stdin": data.decode("utf-8"), "argv": sys.argv, "cwd": os.getcwd(),
          "file": os.environ.get("HARNESSCTL_FILE"), "event": os.environ.get("HARNESSCTL_EVENT"),
          "env": dict(os.environ), "start": time.time()}
tmp = os.path.join(out, ".%d.tmp" % os.getpid())
with open(tmp, "w") as f:
    json.dump(record, f)
os.rename(tmp, os.path.join(out, "%d.json" % os.getpid()))
if mode == "hang":
    time.sleep(3600)
elif mode == "fail":
    sys.exit(3)
elif mode == "release":  # waits for the test to let it go, then says when it ended
    while not os.path.exists(os.path.join(out, "release-%d" % os.getpid())):
        time.sleep(0.01)
    with open(os.path.join(out, "end-%d" % os.getpid()), "w") as f:
        f.write(repr(time.time()))
'''


def hook(workdir, mode="ok", name="hooks"):
    """The command line of a recording hook, and the directory its records go to."""
    out = workdir / name
    out.mkdir(exist_ok=True)
    script = workdir / "hook.py"
    script.write_text(HOOK)
    return "%s %s %s %s" % (shlex.quote(sys.executable), shlex.quote(str(script)), shlex.quote(str(out)), mode), out


def records(out):
    found = []
    for name in os.listdir(str(out)):
        if name.endswith(".json") and not name.startswith("."):
            with open(os.path.join(str(out), name)) as f:
                found.append(json.load(f))
    return sorted(found, key=lambda r: r["start"])


def wait_records(out, count, timeout=30):
    return wait_for(lambda: len(records(out)) >= count and records(out), timeout, "%d hook runs" % count)


def raw_line(path, seq):
    """The line with this seq, exactly as it is in the file."""
    with open(path, "rb") as f:
        for line in f:
            if json.loads(line)["seq"] == seq:
                return line
    raise AssertionError("no line with seq %d" % seq)


def gone(out):
    """Every process of the hooks that record into `out` (and their children) has ended."""
    wait_for(lambda: not processes_under(str(out)), 30, "the hooks' processes gone")
