"""Harness child processes: spawn with pipes, read stdout lines on a thread,
send stderr to the runtime log, notice the exit, and make sure a harness never
outlives its runtime.

Lines (in batches: a harness streaming thousands of deltas a second costs
one queue hand-over per read, not per line) and the exit are handed to
callbacks that queue them for the runtime's single thread, so adapters see
them in order and never concurrently.

The child gets PR_SET_PDEATHSIG (it is killed the moment the runtime dies,
even by kill -9, instead of finishing a turn nobody records) and a process
group of its own (so the recovery of a lost runtime can kill the tools it
left running, see pidfile.py).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading

from .backend import Child
from .pidfile import kill_group

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Callable, Dict, Iterator, List, Optional, Sequence

PR_SET_PDEATHSIG = 1
LIBC = ctypes.CDLL(None)  # loaded in the parent: nothing may be imported between fork and exec


def _prepare_child() -> None:
    """Runs in the child between fork and exec."""
    os.setpgid(0, 0)
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Process(Child):
    def __init__(
        self,
        argv: Sequence[str],
        env: Dict[str, str],
        cwd: str,
        stderr_fd: int,
        on_lines: Callable[[List[str]], None],
        on_exit: Callable[[Optional[int]], None],
    ) -> None:
        self._popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr_fd,
            cwd=cwd,
            env=env,
            close_fds=True,
            preexec_fn=_prepare_child,
        )
        self.pid = self._popen.pid
        self._write_lock = threading.Lock()
        self._exited = threading.Event()
        threading.Thread(target=self._read, args=(on_lines, on_exit), daemon=True).start()

    def _read(self, on_lines: Callable[[List[str]], None], on_exit: Callable[[Optional[int]], None]) -> None:
        assert self._popen.stdout is not None  # stdout=PIPE
        with self._popen.stdout as stdout:
            for batch in read_lines(stdout.fileno()):
                on_lines(batch)
        returncode = self._popen.wait()
        self._exited.set()
        on_exit(returncode)

    def write_line(self, text: str) -> None:
        with self._write_lock:
            try:
                assert self._popen.stdin is not None  # stdin=PIPE
                self._popen.stdin.write(text.encode("utf-8") + b"\n")
                self._popen.stdin.flush()
            except (OSError, ValueError):
                pass  # a broken pipe: the exit arrives through on_exit

    def close_stdin(self) -> None:
        with self._write_lock:
            try:
                assert self._popen.stdin is not None  # stdin=PIPE
                self._popen.stdin.close()
            except OSError:
                pass

    def kill(self) -> None:
        if not self._exited.is_set():
            kill_group(self.pid)

    def wait(self, timeout: float) -> Optional[int]:
        self._exited.wait(timeout)
        return self._popen.returncode if self._exited.is_set() else None


def read_lines(fd: int) -> Iterator[List[str]]:
    """Complete lines from `fd` until EOF, as lists of whatever one read()
    delivered; a last line without its newline still counts at EOF."""
    pending: List[bytes] = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        end = chunk.rfind(b"\n")
        if end < 0:
            pending.append(chunk)
            continue
        data = b"".join(pending) + chunk[:end]
        pending = [chunk[end + 1:]] if end + 1 < len(chunk) else []
        yield [line.decode("utf-8", "replace").rstrip("\r") for line in data.split(b"\n")]
    if pending:
        yield [b"".join(pending).decode("utf-8", "replace").rstrip("\r")]
