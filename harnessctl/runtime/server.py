"""The runtime's command server: the local socket, one thread per connection,
and the reply slot (`Waiter`) each command waits on.

A handler thread reads one request, hands it to the loop with its Waiter, and
sends whatever the loop puts in the slot.  It never touches the runtime's
state itself.
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time

from ..errors import HarnessctlError, UnavailableError
from ..store import ipc

# Descriptors kept free of waits: for the commands that answer at once, the
# harness's pipes (a restart too) and the files the runtime opens meanwhile.
RESERVE = 64

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, List, Optional, Set, Tuple


class Waiter:
    """The reply slot of one command connection: the encoded response."""

    def __init__(self, conn: Any = None) -> None:
        self._done = threading.Event()
        self.response = b""
        self.conn = conn

    def reply(self, response: bytes) -> None:
        if not self._done.is_set():
            self.response = response
            self._done.set()

    def ok(self, text: str = "") -> None:
        self.reply(ipc.encode_response(0, text))

    def fail(self, error: HarnessctlError) -> None:
        self.reply(ipc.encode_response(error.exit_code, str(error)))

    def retry(self) -> None:
        self.reply(ipc.RETRY.encode())

    def wait(self) -> bytes:
        self._done.wait()
        return self.response

    def nudge(self) -> None:
        """One NUDGE byte to a waiting command, now, before its answer; dropped if
        its socket buffer is full (the command is not reading: the answer still comes)."""
        if not self._done.is_set():
            try:
                self.conn.send(ipc.NUDGE, socket.MSG_DONTWAIT)
            except OSError:
                pass

    def hung_up(self) -> bool:
        """True once the command closed its end (Ctrl-C, --timeout): it
        shut down only its sending side while it still waits for us."""
        poller = select.poll()
        poller.register(self.conn.fileno(), select.POLLHUP)
        return bool(poller.poll(0))


class CommandServer:
    def __init__(self, sock: Any, path: str, timeout: float, submit: Callable[[List[str], Waiter], None],
                 debug: Callable[[str], None]) -> None:
        """`sock` listens at `path` already (commands queue in its backlog from
        then on); `submit(request, waiter)` hands a request to the loop."""
        self.sock = sock
        self.path = path
        self.identity = identity(path)
        # Its directory, held: a sidecar renamed with the event file takes our
        # socket along, and stop() still finds it there to remove it.
        self._directory = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.timeout = timeout
        self.submit = submit
        self.debug = debug
        self.stopping = False
        self.intake = threading.Lock()  # orders "request submitted" against "stopped listening"
        self.connections: Set[threading.Thread] = set()  # joined at exit so every reply is sent
        self.acceptor: Optional[threading.Thread] = None  # joined first at exit: it may hold one more
        self.most_waits = 0  # set by start(): waits held at once, each one descriptor
        self.proof = ""  # what a request must show (ipc.encode_request), read when the first one comes

    def start(self) -> None:
        """Accept from now on.  The descriptors left (of the limit, less what
        is open now and RESERVE) bound the waits held at once, so that a
        command that answers at once (status, cancel) always gets one."""
        import resource

        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if limit == resource.RLIM_INFINITY:
            limit = 1 << 20
        self.most_waits = max(0, limit - open_descriptors() - RESERVE)
        self.acceptor = threading.Thread(target=self._accept_loop, daemon=True)
        self.acceptor.start()

    def is_ours(self) -> bool:
        """The socket at our path is still the one we bound."""
        return identity(self.path) == self.identity

    def stop(self) -> None:
        """Stop taking commands: those that reach us from now on are told to retry."""
        with self.intake:
            self.stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes accept(), which close() alone leaves blocked
        except OSError:
            pass
        self.sock.close()
        name, directory, self._directory = os.path.basename(self.path), self._directory, -1
        if directory < 0:  # stopped already
            return
        try:
            st = os.stat(name, dir_fd=directory, follow_symlinks=False)
            if (st.st_dev, st.st_ino) == self.identity:  # never a successor's socket
                os.unlink(name, dir_fd=directory)
        except OSError:
            pass
        finally:
            os.close(directory)

    def join(self) -> None:
        """Let every connection taken get its reply before we exit, also one
        whose command has yet to send its request (it is told to retry): a
        command whose request we read and never answered could not tell
        whether it was applied.  The acceptor goes first, since it may have
        taken one more; a command that sends nothing is given up on after
        the read timeout, as at any other time."""
        deadline = time.monotonic() + self.timeout + 1
        if self.acceptor is not None:
            self.acceptor.join(max(0.0, deadline - time.monotonic()))
        for thread in list(self.connections):
            thread.join(max(0.0, deadline - time.monotonic()))

    def _proven(self, field: str) -> bool:
        """Whether a request's first field is the proof (ipc.encode_request); the
        key is read again on a mismatch, in case a command replaced it meanwhile."""
        from ..store import trusted

        if not field.startswith(ipc.PROOF):
            return False
        given = field[len(ipc.PROOF):]
        if not self.proof or given != self.proof:
            self.proof = trusted.runtime_proof(create=True)
        return bool(self.proof) and hmac_equal(given, self.proof)

    def _accept_loop(self) -> None:
        """Accept until stopped, whatever accept() says: out of descriptors
        (EMFILE) or memory, a connection reset in the backlog.  The waiting
        connections stay in the backlog until a descriptor is free again."""
        failing = False
        while not self.stopping:
            try:
                conn = ipc.accept(self.sock)
            except OSError as e:
                if self.stopping:
                    return
                if not failing:
                    self.debug("accept failed (%s); retrying until it works again" % e.strerror)
                failing = True
                time.sleep(0.05)
                continue
            failing = False
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self.connections.add(thread)
            try:
                thread.start()
            except RuntimeError:  # no thread for it now (ulimit -u): answered here, accepting waits meanwhile
                self.connections.discard(thread)
                self._serve(conn, holding=False)

    def _serve(self, conn: Any, holding: bool = True) -> None:
        try:
            self._answer(conn, holding)
        finally:
            conn.close()
            self.connections.discard(threading.current_thread())

    def _answer(self, conn: Any, holding: bool) -> None:
        """Read the request, hand it to the loop, send the reply.  Without
        `holding` (served on the accept thread: no thread of its own could
        start) a `wait`, which may take hours, is refused instead of blocking
        every other command."""
        try:
            if ipc.peer_uid(conn) != os.getuid():
                return
            conn.settimeout(self.timeout)
            request = ipc.decode_fields(ipc.read_all(conn))
        except (OSError, ValueError):
            return
        if not request:
            return
        waiter = Waiter(conn)
        with self.intake:
            if not self._proven(request.pop(0)):
                waiter.fail(UnavailableError(
                    ipc.REFUSED_PROOF + ", so it may not use the "
                    "runtime (give every command of a session the same HARNESSCTL_STATE_DIR; a command inside a "
                    "--sandbox box reaches no runtime outside it)"))
            elif self.stopping:
                waiter.retry()
            elif request[0] == "wait" and not holding:
                waiter.fail(UnavailableError("the runtime cannot start a thread to wait with (the process limit, "
                                             "ulimit -u, is reached); wait again later"))
            elif request[0] == "wait" and len(self.connections) > self.most_waits:
                waiter.fail(UnavailableError("the runtime holds as many waits as its file descriptor limit allows "
                                             "(%d); wait again later, or raise ulimit -n" % self.most_waits))
            else:
                self.submit(request, waiter)
        response = waiter.wait()
        try:
            ipc.send_all(conn, response)
        except OSError:
            pass


def hmac_equal(given: str, expected: str) -> bool:
    import hmac

    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8"))


def open_descriptors() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 64


def identity(path: str) -> Optional[Tuple[int, int]]:
    """(st_dev, st_ino) of `path` itself, or None if it is gone."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
