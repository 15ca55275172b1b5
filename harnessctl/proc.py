"""Harness child processes: spawn with pipes, read stdout lines on a thread,
send stderr to the runtime log, notice the exit.

Lines and the exit are handed to `post`, which queues them for the runtime's
single thread, so adapters see them in order and never concurrently.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import threading
from typing import Callable, Dict, Optional, Sequence

from .backend import Child

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """If the runtime is killed (-9), its harness must not run on unrecorded."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


class Process(Child):
    def __init__(
        self,
        argv: Sequence[str],
        env: Dict[str, str],
        cwd: str,
        stderr_fd: int,
        on_line: Callable[[str], None],
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
            preexec_fn=_die_with_parent,
        )
        self.pid = self._popen.pid
        self._write_lock = threading.Lock()
        thread = threading.Thread(target=self._read, args=(on_line, on_exit), daemon=True)
        thread.start()

    def _read(self, on_line: Callable[[str], None], on_exit: Callable[[Optional[int]], None]) -> None:
        for raw in self._popen.stdout:
            on_line(raw.decode("utf-8", "replace").rstrip("\r\n"))
        on_exit(self._popen.wait())

    def write_line(self, text: str) -> None:
        with self._write_lock:
            try:
                self._popen.stdin.write(text.encode("utf-8") + b"\n")
                self._popen.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # the exit arrives through on_exit

    def close_stdin(self) -> None:
        with self._write_lock:
            try:
                self._popen.stdin.close()
            except OSError:
                pass

    def kill(self) -> None:
        try:
            self._popen.kill()
        except OSError:
            pass

    def wait(self, timeout: float) -> Optional[int]:
        try:
            return self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
