"""The runtime log, FILE.d/runtime.log: the runtime's diagnostics and its
harness's stderr, capped while the runtime lives.

A chatty harness can write a hundred megabytes of stderr in seconds, and a
runtime may live for days; so the log is rotated whenever it would pass
LIMIT bytes (to runtime.log.1, replacing the one before), and the two
together never hold much more than twice that.  Every write goes through
`write`, from any thread.  The log's descriptor number stays the same across
a rotation (the new file is put in its place with dup2), and fd 2, where a
traceback of the interpreter itself goes, follows it.
"""

from __future__ import annotations

import os
import threading

from ..errors import HarnessctlError
from ..store import private

LIMIT = 4 * 1024 * 1024


class RuntimeLog:
    def __init__(self, path: str) -> None:
        """Open (create) the log, rotated first when it is large already;
        OSError, or private.py's refusal of a file that is not ours."""
        self.path = path
        self._lock = threading.Lock()
        self._stderr = False  # fd 2 is the log too
        if self._size_at(path) > LIMIT:
            self._set_aside()
        self.fd = private.open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "runtime log")
        self._size = os.fstat(self.fd).st_size

    def capture_stderr(self) -> None:
        """From now on fd 2 writes into the log (across rotations too)."""
        os.dup2(self.fd, 2)
        self._stderr = True

    def write(self, data: bytes) -> None:
        """Append `data`; never raises: a log that cannot be written is no reason to stop."""
        with self._lock:
            try:
                if self._size + len(data) > LIMIT and self._size > 0:
                    self._rotate()
                os.write(self.fd, data)
                self._size += len(data)
            except (OSError, HarnessctlError):
                pass

    def debug(self, text: str) -> None:
        """One line of the runtime's own, stamped."""
        from ..eventfile.eventlog import timestamp

        self.write(("%s %s\n" % (timestamp(), text.rstrip("\n"))).encode("utf-8", "replace"))

    def _rotate(self) -> None:
        self._set_aside()
        self._size = 0  # also when the new file cannot be opened: not a rename on every write
        fd = private.open_file(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "runtime log")
        os.dup2(fd, self.fd, inheritable=False)
        if self._stderr:
            os.dup2(fd, 2)
        os.close(fd)

    def _set_aside(self) -> None:
        try:
            os.replace(self.path, self.path + ".1")
        except OSError:
            pass

    @staticmethod
    def _size_at(path: str) -> int:
        try:
            return os.lstat(path).st_size
        except OSError:
            return 0
