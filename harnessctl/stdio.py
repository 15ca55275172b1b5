"""A command's standard streams: a closed one filled (a cron job's), one
line out on stdout or stderr that fails cleanly when the stream cannot take
it, and a blocking command ended once nobody reads its stdout."""

from __future__ import annotations

import os
import sys

from .errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Callable, TextIO


def end_with_reader() -> None:
    """A command that blocks (a wait, `log --follow`) ends as Ctrl-C ends it
    (exit 130, the run goes on) once nobody reads its stdout: the pipe's
    reader exited (`| head -1`), or the ssh that ran it on this machine is
    gone (sshd closes the pipe; ssh passes no signal without a terminal, and
    the command would wait on, unseen, until its outcome).  A thread sleeps
    in poll() on fd 1, which says POLLERR or POLLHUP then; it runs only when
    stdout is a pipe or a socket, and nothing else ever ends it: the process
    leaves by os._exit.  A caller may have SIGINT ignored or blocked (a
    script's background job `harnessctl wait F | head -1 &` has it ignored):
    then the thread ends the process itself, 130 all the same, without
    undoing that caller's choice for a Ctrl-C.  `_thread`, `_signal`:
    `threading` and `signal` would add ~5 ms to every `send --wait`."""
    try:
        kind = os.fstat(1).st_mode & 0o170000
    except OSError:
        return
    if kind not in (0o010000, 0o140000):  # S_IFIFO, S_IFSOCK
        return
    import _signal  # type: ignore[import-not-found]  # no stub: `signal` itself imports enum
    import _thread
    import select

    sigint = _signal.SIGINT
    heard = _signal.getsignal(sigint) is _signal.default_int_handler
    heard = heard and sigint not in _signal.pthread_sigmask(_signal.SIG_BLOCK, ())

    def watch() -> None:
        poller = select.poll()
        poller.register(1, 0)  # no event asked: POLLERR and POLLHUP come all the same
        if poller.poll():
            if heard:
                os.kill(os.getpid(), sigint)  # KeyboardInterrupt in the main thread, as Ctrl-C
            else:
                os._exit(130)

    _thread.start_new_thread(watch, ())


def deaf_to_sigint() -> None:
    """Once a command's exit code is decided, a SIGINT changes nothing:
    end_with_reader's may come while the command leaves by another way (the
    reader's going also makes a write fail with EPIPE: exit 2), and a
    KeyboardInterrupt raised on the way out would escape every handler and
    end the process by the signal instead of its code."""
    import _signal  # builtin, loaded at start-up (no stub: see end_with_reader)

    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)


def hold_std_fds() -> None:
    """A caller may start us with fd 0, 1 or 2 closed (cron, `<&-`, `2>&-`).
    Such a slot is filled with /dev/null opened the other way round (a closed
    stdin by a write-only one, a closed stdout or stderr by a read-only one):
    it still fails as a closed stream would, but the pipes and files we open
    can no longer land on 0-2, where the runtime's spawn would put /dev/null
    over them.  Costs three fstat calls when all three are open."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            placeholder = os.open(os.devnull, os.O_WRONLY if fd == 0 else os.O_RDONLY)
            if placeholder != fd:  # a lower slot was free after all: never so, as we go up
                os.dup2(placeholder, fd, inheritable=False)
                os.close(placeholder)


def say(text: str) -> None:
    """One message on stderr; nothing when stderr is closed or unusable (the
    exit code still says what happened)."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def emit(text: str) -> None:
    """Print one line to stdout, or fail cleanly when stdout is closed
    (`>&-`), broken (EPIPE: re-raised for main) or full (`> /dev/full`)."""
    _to_stdout(lambda out: out.write(text + "\n"))


def emit_bytes(data: bytes) -> None:
    """Print bytes an agent chose (a patch): exact to a pipe or a file, the
    bytes a tool such as `git apply` must get; to a terminal with their
    control characters shown escaped (visible.py), never obeyed."""

    def write(out: TextIO) -> None:
        if out.isatty():
            from .visible import shown

            out.write(shown(data.decode("utf-8", "replace"), lines=True))
        else:
            out.buffer.write(data)

    _to_stdout(write)


def _to_stdout(write: Callable[[TextIO], object]) -> None:
    """`write` on stdout, flushed; a closed, broken or full stdout as emit says."""
    try:
        if sys.stdout is None:
            raise OSError(9, "stdout is closed")
        write(sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as e:
        drop_stdout()
        raise UsageError("cannot write to stdout: %s" % (getattr(e, "strerror", None) or e)) from None


def drop_stdout() -> None:
    """Point fd 1 at /dev/null so that the interpreter's own flush at exit
    does not report the same failure again with a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
    if sys.stdout is not None:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
