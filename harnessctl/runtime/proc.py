"""Harness child processes: spawn with pipes, read stdout lines on a thread,
send stderr to the runtime log, notice the exit, and make sure a harness never
outlives its runtime.

Lines (in batches: a harness streaming thousands of deltas a second costs
one queue hand-over per read, not per line) and the exit are handed to
callbacks that queue them for the runtime's single thread, so adapters see
them in order and never concurrently.

The child gets PR_SET_PDEATHSIG (it is killed the moment the runtime dies,
even by kill -9, instead of finishing a turn nobody records), a process
group of its own (so the recovery of a lost runtime can kill the tools it
left running, see pidfile.py), and every signal's default disposition with
none blocked (the runtime ignores SIGINT and SIGHUP for itself; a harness
cancelled by a signal must not silently ignore it).
"""

from __future__ import annotations

import ctypes
import os
import resource
import select
import signal
import subprocess
import threading

from ..kit.backend import STDERR_TAIL, Child
from ..store.pidfile import kill_group

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

PR_SET_PDEATHSIG = 1
LIBC = ctypes.CDLL(None)  # loaded in the parent: nothing may be imported between fork and exec


# The caller's descriptor limit, which the runtime raised for itself
# (main._raise_fd_limit): the harness gets it back.
CHILD_NOFILE: Optional[Tuple[int, int]] = None


def preparer(session: bool = False, enter: Optional[Callable[[], None]] = None) -> Callable[[], None]:
    """What runs in a child of the runtime (a harness, or a hook with
    `session`) between fork and exec: a process group (or session) of its own,
    death with the runtime, the caller's descriptor limit, and every signal's
    default disposition with none blocked; last, `enter`, the box of a
    --sandbox session (landlock.Ruleset.enter_fn).  An ignored disposition and the mask
    survive exec, so the signals the runtime ignores (its own SIGINT, SIGHUP,
    SIGPIPE, SIGXFSZ, and any the send that spawned it ignored) are read here,
    in the parent, and the child only resets them; caught ones need nothing."""
    catchable = set(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}
    ignored = [sig for sig in catchable if signal.getsignal(sig) == signal.SIG_IGN]
    nofile = CHILD_NOFILE

    def prepare() -> None:
        if session:
            os.setsid()
        else:
            os.setpgid(0, 0)
        LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, nofile)
        for sig in ignored:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        if enter is not None:
            enter()  # it raises if the kernel refuses: the exec never happens, nothing runs unboxed

    return prepare


# The longest line a harness may write: a longer one (an agent streaming
# hundreds of megabytes without a newline) is discarded up to its newline,
# instead of growing the runtime without bound and gluing the next message to it.
MAX_LINE = 64 * 1024 * 1024
READ_SIZE = 65536
STDERR_DRAIN = 0.1  # seconds between looks at a harness that closed its stdout but not its stderr


class Process(Child):
    def __init__(
        self,
        argv: Sequence[str],
        env: Dict[str, str],
        cwd: str,
        stderr: Callable[[bytes], None],
        on_lines: Callable[[List[str]], None],
        on_overlong: Callable[[int], None],
        on_exit: Callable[[Optional[int]], None],
        enter: Optional[Callable[[], None]] = None,
    ) -> None:
        """`stderr(data)` takes what the harness writes to its stderr (the
        runtime log); `on_overlong(size)` hears of a discarded line, in order with the others;
        `enter` puts the child into its box before exec (preparer)."""
        self._popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            close_fds=True,
            preexec_fn=preparer(enter=enter),
        )
        self.pid = self._popen.pid
        self._write_lock = threading.Lock()
        self._exited = threading.Event()
        self._stderr_tail = b""
        lines = Lines(on_lines, on_overlong)

        def keep_tail(data: bytes) -> None:
            self._stderr_tail = (self._stderr_tail + data)[-STDERR_TAIL:]
            stderr(data)

        try:
            threading.Thread(target=self._read, args=(lines, keep_tail, on_exit), daemon=True).start()
        except RuntimeError:  # no thread (ulimit -u): the start fails, and no harness is left behind
            kill_group(self.pid)
            self._popen.wait()
            raise

    def _read(self, lines: Lines, stderr: Callable[[bytes], None], on_exit: Callable[[Optional[int]], None]) -> None:
        """Stdout lines and stderr, from one thread, until stdout ends; then
        stderr until it ends or the harness has exited; then the exit."""
        assert self._popen.stdout is not None and self._popen.stderr is not None  # PIPE
        out, err = self._popen.stdout.fileno(), self._popen.stderr.fileno()
        poller = select.poll()
        poller.register(out, select.POLLIN)
        poller.register(err, select.POLLIN)
        reading = {out, err}
        while out in reading:
            for fd, _ in poller.poll():
                self._take(fd, out, lines, stderr, reading, poller)
        lines.close()
        while err in reading:
            ready = poller.poll(0 if self._popen.poll() is not None else STDERR_DRAIN * 1000)
            if not ready and self._popen.poll() is not None:
                break
            for fd, _ in ready:
                self._take(fd, out, lines, stderr, reading, poller)
        self._popen.stdout.close()
        self._popen.stderr.close()
        returncode = self._popen.wait()
        self._exited.set()
        on_exit(returncode)

    @staticmethod
    def _take(fd: int, out: int, lines: Lines, stderr: Callable[[bytes], None], reading: Set[int],
              poller: select.poll) -> None:
        try:
            chunk = os.read(fd, READ_SIZE)
        except OSError:
            chunk = b""
        if not chunk:
            reading.discard(fd)
            poller.unregister(fd)
        elif fd == out:
            lines.feed(chunk)
        else:
            stderr(chunk)

    def stderr_tail(self) -> str:
        """Read on the runtime thread once on_exit was posted: the reader thread
        wrote its last byte before that."""
        return self._stderr_tail.decode("utf-8", "replace")

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


class Lines:
    """Splits a harness's stdout into lines, handed to `on_lines` in batches
    (whatever one read delivered); a line longer than `limit` is dropped up
    to its newline and only its size goes to `on_overlong`."""

    def __init__(self, on_lines: Callable[[List[str]], None], on_overlong: Callable[[int], None],
                 limit: int = MAX_LINE) -> None:
        self.on_lines = on_lines
        self.on_overlong = on_overlong
        self.limit = limit
        self.pending: List[bytes] = []  # the start of the line being read
        self.size = 0  # its bytes so far
        self.dropping = False  # it is longer than the limit: its bytes are counted, not kept

    def feed(self, chunk: bytes) -> None:
        end = chunk.rfind(b"\n")
        if end < 0:
            self._carry(chunk)
            return
        parts = chunk[:end].split(b"\n")
        self._carry(parts[0])
        first = self._take_line()
        if first is not None:
            parts[0] = first
        else:
            del parts[0]
        if parts:
            self.on_lines([decode(line) for line in parts])
        self._carry(chunk[end + 1:])

    def close(self) -> None:
        """End of file: a last line without its newline still counts."""
        if self.size or self.dropping:
            line = self._take_line()
            if line is not None:
                self.on_lines([decode(line)])

    def _carry(self, data: bytes) -> None:
        """Part of a line whose newline has not come yet."""
        self.size += len(data)
        if self.dropping:
            return
        if self.size > self.limit:
            self.dropping, self.pending = True, []
        elif data:
            self.pending.append(data)

    def _take_line(self) -> Optional[bytes]:
        """The line carried so far, now complete; None if it was too long (said)."""
        line, size, dropped = b"".join(self.pending), self.size, self.dropping
        self.pending, self.size, self.dropping = [], 0, False
        if dropped:
            self.on_overlong(size)
            return None
        return line


def decode(line: bytes) -> str:
    return line.decode("utf-8", "replace").rstrip("\r")
