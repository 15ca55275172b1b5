"""Harness child processes: spawn with pipes, read stdout lines on a thread,
send stderr to the runtime log, notice the exit, and make sure a harness never
outlives a runtime that was killed.

Lines and the exit are handed to callbacks that queue them for the runtime's
single thread, so adapters see them in order and never concurrently.

The child is started with os.posix_spawn rather than subprocess: the runtime
is started by a user's first `send`, which waits for it, and subprocess (with
everything it imports) costs that send more than the spawn itself.  The child
gets a process group of its own, so killing it also kills the tools it runs.
"""

from __future__ import annotations

import os
import threading

from .backend import Child
from .pidfile import kill_group

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from typing import Callable, Dict, Optional, Sequence


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
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        actions = [(os.POSIX_SPAWN_DUP2, stdin_r, 0), (os.POSIX_SPAWN_DUP2, stdout_w, 1),
                   (os.POSIX_SPAWN_DUP2, stderr_fd, 2)]
        spawn = os.posix_spawn if "/" in argv[0] else os.posix_spawnp
        try:
            os.chdir(cwd)  # posix_spawn has no cwd: the runtime follows its harness (only ever one)
            self.pid = spawn(argv[0], list(argv), env, file_actions=actions, setpgroup=0)
        except BaseException:
            for fd in (stdin_r, stdin_w, stdout_r, stdout_w):
                os.close(fd)
            raise
        finally:
            os.chdir("/")
        os.close(stdin_r)
        os.close(stdout_w)
        self._stdin = stdin_w
        self._stdout = os.fdopen(stdout_r, "rb")
        self._write_lock = threading.Lock()
        self._exited = threading.Event()
        self.returncode: Optional[int] = None
        threading.Thread(target=self._read, args=(on_line, on_exit), daemon=True).start()

    def _read(self, on_line: Callable[[str], None], on_exit: Callable[[Optional[int]], None]) -> None:
        with self._stdout:
            for raw in self._stdout:
                on_line(raw.decode("utf-8", "replace").rstrip("\r\n"))
        _, status = os.waitpid(self.pid, 0)
        self.returncode = os.waitstatus_to_exitcode(status)
        self._exited.set()
        on_exit(self.returncode)

    def write_line(self, text: str) -> None:
        data = text.encode("utf-8") + b"\n"
        with self._write_lock:
            try:
                while data:
                    data = data[os.write(self._stdin, data):]
            except OSError:
                pass  # a broken pipe: the exit arrives through on_exit

    def close_stdin(self) -> None:
        with self._write_lock:
            if self._stdin >= 0:
                os.close(self._stdin)
                self._stdin = -1

    def kill(self) -> None:
        if not self._exited.is_set():
            kill_group(self.pid)

    def wait(self, timeout: float) -> Optional[int]:
        self._exited.wait(timeout)
        return self.returncode
