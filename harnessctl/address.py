"""Where a session lives: the event file's real path and its `FILE.d/` sidecar.

The path IS the session (PROTOCOL section 3), so everything private to a
session is derived from it here and nowhere else.
"""

from __future__ import annotations

import os


from .errors import NotFoundError, UsageError

TYPE_CHECKING = False  # typing is not imported at run time: every command pays for its imports
if TYPE_CHECKING:
    from typing import Dict, Optional

# AF_UNIX sun_path is 108 bytes including the terminating NUL.
MAX_SOCKET_PATH = 107
EVENT_TYPES = ("accepted", "message", "request", "result", "log")


class Address:
    """The files of one session, all derived from the event file's realpath."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    @property
    def sidecar(self) -> str:
        return self.path + ".d"

    @property
    def runtime_lock(self) -> str:
        return os.path.join(self.sidecar, "runtime.lock")

    @property
    def spawn_lock(self) -> str:
        return os.path.join(self.sidecar, "spawn.lock")

    @property
    def binding(self) -> str:
        return os.path.join(self.sidecar, "binding.json")

    @property
    def snapshot(self) -> str:
        return os.path.join(self.sidecar, "state.json")

    @property
    def harness_pid(self) -> str:
        return os.path.join(self.sidecar, "harness.pid")

    @property
    def runtime_log(self) -> str:
        return os.path.join(self.sidecar, "runtime.log")

    @property
    def socket(self) -> str:
        """The runtime's socket: in the sidecar, or a short fallback path when
        the sidecar path would not fit into sockaddr_un."""
        inside = os.path.join(self.sidecar, "runtime.sock")
        if len(os.fsencode(inside)) <= MAX_SOCKET_PATH:
            return inside
        import hashlib

        digest = hashlib.sha256(os.fsencode(self.path)).hexdigest()[:24]
        return os.path.join(fallback_socket_dir(), digest + ".sock")


def fallback_socket_dir() -> str:
    """A per-user 0700 directory under /tmp for sockets whose real path is too long.
    A fixed place (not $TMPDIR) so that a cron job and a shell find the same socket."""
    return "/tmp/harnessctl-%d" % os.getuid()


def resolve(file: str) -> Address:
    """Normalize FILE to the session's identity (its realpath)."""
    if not file or "\0" in file:
        raise UsageError("event file path is empty or contains a NUL byte")
    path = os.path.realpath(os.path.abspath(file))
    if os.path.isdir(path):
        raise UsageError("event path is a directory, not an event file: %s" % path)
    return Address(path)


def require_exists(addr: Address) -> None:
    """status/cancel/reply: the file must have been created by a send."""
    if not os.path.exists(addr.path):
        raise NotFoundError("no such event file: %s (a send creates it)" % addr.path)


def check_binding(bound: Dict[str, Optional[str]], wanted: Dict[str, Optional[str]]) -> None:
    """A later command may omit adapter/cwd/model; a different value is a conflict."""
    for key in ("adapter", "cwd", "model"):
        if wanted.get(key) is not None and wanted[key] != bound.get(key):
            value = bound.get(key)
            raise UsageError("%s is bound to this event path: %s (new workspace = new file)"
                             % (key, value if value is not None else "the harness default"))


def check_event_file(addr: Address) -> None:
    """Refuse an existing file that is not ours, leaving it untouched."""
    try:
        with open(addr.path, "rb") as f:
            head = f.readline(65536)
    except FileNotFoundError:
        return
    except OSError as e:
        raise UsageError("cannot read event file %s: %s" % (addr.path, e.strerror)) from None
    if not head:
        return
    import json

    try:
        first = json.loads(head)
    except ValueError:
        first = None
    if not (isinstance(first, dict) and first.get("type") in EVENT_TYPES and "seq" in first):
        raise UsageError("not a harnessctl event file (left untouched): %s" % addr.path)


def make_sidecar(addr: Address) -> None:
    """Create FILE.d/ (0700) and the event file (0600) for a first send."""
    parent = os.path.dirname(addr.path)
    if not os.path.isdir(parent):
        raise UsageError("directory of the event file does not exist: %s" % parent)
    try:
        os.mkdir(addr.sidecar, 0o700)
    except FileExistsError:
        if not os.path.isdir(addr.sidecar):
            raise UsageError("%s exists and is not a directory" % addr.sidecar) from None
    except OSError as e:
        raise UsageError("cannot create %s: %s" % (addr.sidecar, e.strerror)) from None
    try:
        os.close(os.open(addr.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600))
    except OSError as e:
        raise UsageError("cannot create event file %s: %s" % (addr.path, e.strerror)) from None


def read_binding(addr: Address) -> Optional[Dict[str, Optional[str]]]:
    """The adapter/cwd/model bound to this file, or None before the first send."""
    import json

    try:
        with open(addr.binding, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise UsageError("unreadable binding %s: %s" % (addr.binding, e)) from None


def write_binding(addr: Address, binding: Dict[str, Optional[str]]) -> None:
    import json

    write_atomic(addr.binding, json.dumps(binding))


def write_atomic(path: str, text: str) -> None:
    """Replace `path` with `text` so readers never see half a file."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)  # e.g. the disk is full: leave no half-written temporary file behind
        raise
