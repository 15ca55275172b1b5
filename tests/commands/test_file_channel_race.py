"""The ACP client file system cannot be raced out of its cwd (issue 32, item 4):
a process flips a folder of the cwd between a real directory and a symlink to
a directory outside as fast as it can (acp_support/flipper.py) while the file
channel writes and reads through that folder.  Nothing may be written outside
and no read may return what lies outside.

HARNESSCTL_RACE_SECONDS sets how long the file channel is raced (default 10:
thousands of flips; set more for a longer hunt); the run through a real ACP
agent takes a sixth of it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

from cliutil import ROOT, cli_env, run

from adapters.acp import wire
from harnessctl.kit import Config

SECONDS = float(os.environ.get("HARNESSCTL_RACE_SECONDS", "10"))
FLIPPER = os.path.join(ROOT, "tests", "support", "acp_support", "flipper.py")
HOSTILE = os.path.join(ROOT, "tests", "support", "acp_support", "hostile_agent.py")
NAMES = ["secret.txt", "target.txt"]
# (what is asked, of which file below the flipping folder): every write could
# escape to change target.txt or create deep/ outside; every read to read secret.txt
ASKS = [(wire.write_text, "target.txt"), (wire.write_text, "deep/new.txt"), (wire.read_text, "secret.txt")]


def layout(root):
    """cwd/ and beside it outside/secret.txt (what a read must never return)
    and outside/target.txt (what a write must never change), both OUTSIDE."""
    cwd, outside = root / "cwd", root / "outside"
    cwd.mkdir()
    outside.mkdir()
    for name in NAMES:
        (outside / name).write_text("OUTSIDE")
    return cwd, outside


def untouched(outside) -> bool:
    return sorted(os.listdir(str(outside))) == NAMES and all((outside / n).read_text() == "OUTSIDE" for n in NAMES)


def test_a_folder_flipped_to_a_symlink_never_takes_the_file_channel_outside_the_cwd(tmp_path):
    cwd, outside = layout(tmp_path)
    sidecar = str(tmp_path / "e.jsonl.d")
    flipper = subprocess.Popen([sys.executable, FLIPPER, str(cwd / "flip"), str(outside), str(SECONDS)],
                               stdout=subprocess.PIPE)
    reads, answered, refused = set(), 0, 0
    try:
        while flipper.poll() is None:
            for ask, name in ASKS:
                try:
                    reads.add(ask(Config(str(cwd), None, sidecar, {}, False),
                                  {"path": str(cwd / "flip" / name), "content": "inside"}).get("content"))
                    answered += 1
                except OSError:  # refused (PermissionError), or the folder was gone a moment
                    refused += 1
    finally:
        flips = int(flipper.communicate()[0])
    assert untouched(outside), os.listdir(str(outside))
    assert "OUTSIDE" not in reads
    assert flips > 100 and answered > 0 and refused > 0, (flips, answered, refused)  # the race was run


def test_an_acp_agent_flipping_a_folder_of_its_cwd_never_gets_outside_it(workdir):
    cwd, outside = layout(workdir)
    path = str(workdir / "events.jsonl")
    seconds = max(SECONDS / 6, 1.0)
    proc = run("send", path, "/race %s %s" % (seconds, outside), "--adapter", "acp", "--agent",
               shlex.quote(HOSTILE), "--cwd", str(cwd), "--wait",
               env=cli_env(FAKE_ACP_HOME=str(workdir / "sessions")), timeout=seconds + 120)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(json.loads(proc.stdout)["output"])
    assert untouched(outside), os.listdir(str(outside))
    assert "OUTSIDE" not in seen["reads"]
    assert seen["flips"] > 10 and seen["answered"] > 0 and seen["refused"] > 0, seen
