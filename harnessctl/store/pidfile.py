"""The harness's pid, recorded in the sidecar, so that a harness never
outlives a runtime that was killed (kill -9 leaves no chance to stop it): the
command that recovers the lost runtime kills it.  Stdlib `os` only: this is on
the recovery path of a command.

The file is trusted only if it is ours (private.py), and a process is killed
only if it runs as us and started when the file says: a pid file planted by
someone else must never make us kill one of our processes."""

from __future__ import annotations

import os

from . import private

SIGKILL = 9  # signal.SIGKILL; the signal module (with enum) would cost a command more than the rest

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Optional, Tuple


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
    private.write_atomic(path, "%d %s\n" % (pid, start_time(pid)))


def forget(path: str, pid: int) -> None:
    """Remove the record of `pid`, and only of it: the file may name the harness
    of another runtime by now (the event file was replaced under us)."""
    if _recorded(path)[0] == pid:
        _remove(path)


def kill_leftover(path: str) -> None:
    """Kill the harness a lost runtime recorded, if that very process still
    runs, as us.  Raises UsageError for a pid file that is not ours."""
    pid, started = _recorded(path)
    if pid is None:
        return
    if start_time(pid) == started and _runs_as_us(pid):
        kill_group(pid)
    _remove(path)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass  # gone already, or a read-only filesystem: its process is checked again, by its start time


def _recorded(path: str) -> Tuple[Optional[int], Optional[str]]:
    try:
        text = private.read_text(path)
        pid_text, started = (text or "").split()
        return int(pid_text), started
    except (OSError, ValueError):
        return None, None


def _runs_as_us(pid: int) -> bool:
    try:
        return os.stat("/proc/%d" % pid).st_uid == os.getuid()
    except OSError:
        return False
