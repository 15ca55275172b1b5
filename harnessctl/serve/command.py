"""`harnessctl serve [DIR|FILE]... [--port N] [--host ADDR]`: the fleet page
on one port, until interrupted (docs/PROTOCOL-SERVE.md section 24)."""

from __future__ import annotations

import os
import signal

from .. import knobs
from ..errors import NotFoundError, UnavailableError, UsageError
from ..sessions import Sessions
from .fleet import Fleet
from .guard import Guard, is_loopback
from .handler import REQUEST_TIMEOUT, Server

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, List

DEFAULT_HOST = "127.0.0.1"


def serve_fleet(args: List[str], port: str, host: str, emit: Callable[[str], None], say: Callable[[str], None]) -> int:
    """Serve until SIGINT, SIGTERM or SIGHUP (exit 0).  `emit` prints the URL line,
    `say` a warning: cli.py's, so that every line out is cleaned the same way."""
    timeout = knobs.seconds(os.environ, "HARNESSCTL_SERVE_TIMEOUT", REQUEST_TIMEOUT)
    sessions = Sessions([])
    here, _ = sessions.split(args)  # those on other machines are asked there
    for arg in [arg for arg in here if _not_there_yet(arg)]:  # every exit 4 before any warning
        say("harnessctl: warning: nothing at %s: served as an event file, shown once a send creates it "
            "(if you meant a folder, it is not there)" % arg)
    fleet = Fleet(args or ["."], sessions)
    fleet.look()  # a folder that is not there is this command's error, before any port is taken
    try:
        server = Server((host, _port(port)), Guard(host, 0), fleet, timeout)
    except OSError as e:
        raise UnavailableError("cannot listen on %s port %s: %s" % (host, port, e.strerror or e)) from None
    server.guard.port = server.server_address[1]
    if not is_loopback(host):
        say("harnessctl: warning: serving on %s, not only on this machine: anyone who reaches it and learns the "
            "token can answer your agents' requests" % host)
    for signum in (signal.SIGTERM, signal.SIGHUP):  # SIGHUP: the terminal of `ssh -t box harnessctl serve` closed
        signal.signal(signum, _interrupted)
    try:  # an interrupt as soon as the URL is out (a script that read it and stops serve) is exit 0 too
        fleet.start()
        emit(server.guard.url())
        server.serve_forever(poll_interval=3600)  # shutdown() is never called: an interrupt ends it
    except KeyboardInterrupt:
        pass
    finally:
        fleet.stopped.set()
        server.server_close()
    return 0


def _not_there_yet(arg: str) -> bool:
    """Whether `arg` is a FILE that does not exist yet.  One is served on
    purpose: its row shows once a send creates it (docs/PROTOCOL-SERVE.md
    section 24).  But it is also what a mistyped folder looks like (`serve ~/agnet`),
    so serve_fleet warns of it.  A FILE whose folder is missing too no send
    can create (send refuses it): exit 4, as a missing DIR/ is."""
    if arg.endswith("/"):  # a DIR/ is Fleet.look's error
        return False
    try:
        os.stat(arg)
        return False
    except FileNotFoundError:
        pass
    except (OSError, ValueError):  # unreadable, or a NUL: its row says what is wrong
        return False
    folder = os.path.dirname(arg) or "."
    if not os.path.isdir(folder):
        raise NotFoundError("no such directory: %s (so no send can create %s)" % (folder, arg))
    return True


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise UsageError("--port must be a number from 0 to 65535 (0: any free port), not %r" % value)
    return port


def _interrupted(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


