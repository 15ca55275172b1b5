"""The harness's pid, recorded in the sidecar, so that a harness never
outlives a runtime that was killed (kill -9 leaves no chance to stop it): the
command that recovers the lost runtime kills it.  Stdlib `os` only: this is on
the recovery path of a command."""

from __future__ import annotations

import os

SIGKILL = 9  # signal.SIGKILL; the signal module (with enum) would cost a command more than the rest

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from typing import Optional


def start_time(pid: int) -> Optional[str]:
    """The kernel's start time of `pid` (field 22 of /proc/PID/stat), which
    tells a recorded harness from an unrelated process that reused its pid."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def kill_group(pid: int) -> None:
    """SIGKILL the harness and everything in its process group."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, SIGKILL)
            return
        except OSError:
            continue


def record(path: str, pid: int) -> None:
    with open(path, "w") as f:
        f.write("%d %s\n" % (pid, start_time(pid)))


def forget(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def kill_leftover(path: str) -> None:
    """Kill the harness a lost runtime recorded, if that very process still runs."""
    try:
        with open(path) as f:
            pid_text, started = f.read().split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return
    if start_time(pid) == started:
        kill_group(pid)
    forget(path)
