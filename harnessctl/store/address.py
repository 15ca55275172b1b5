"""Where a session lives: the event file's real path and its `FILE.d/` sidecar.

The path IS the session (docs/PROTOCOL-SESSION.md section 3), so everything private to a
session is derived from it here and nowhere else.
"""

from __future__ import annotations

import os

from ..errors import NotFoundError, UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import List, Optional, Tuple

# AF_UNIX sun_path is 108 bytes including the terminating NUL.
MAX_SOCKET_PATH = 107
# ssh's master socket, DIR/ssh-%C (40 hex digits) while ssh binds it as that name plus ".<16 random>", is the
# longest name harnessctl puts in the fallback folder: 107 - 45 - 17 bytes are left for DIR.
MAX_SOCKET_DIR = 45
MAX_SYMLINKS = 40  # as the kernel's own limit on a path's symlinks
S_IFMT, S_IFLNK = 0o170000, 0o120000  # stat's, without importing stat (start-up cost)
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
    def runtime_host(self) -> str:
        """The machine and pid of the runtime holding the lock (store/holder.py)."""
        return os.path.join(self.sidecar, "runtime.host")

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
    A fixed place (not $TMPDIR) so that a cron job and a shell find the same socket;
    HARNESSCTL_SOCKET_DIR (absolute) replaces it, for a user who sets it everywhere
    harnessctl runs and for test runs that must not share the machine's."""
    explicit = os.environ.get("HARNESSCTL_SOCKET_DIR")
    if explicit is None:
        return "/tmp/harnessctl-%d" % os.getuid()
    if not os.path.isabs(explicit):
        raise UsageError("HARNESSCTL_SOCKET_DIR must be an absolute path, not %r" % explicit)
    if len(os.fsencode(explicit)) > MAX_SOCKET_DIR:
        raise UsageError("HARNESSCTL_SOCKET_DIR is longer than %d bytes, too long for the sockets it holds: %s"
                         % (MAX_SOCKET_DIR, explicit))
    return explicit


def resolve(file: str) -> Address:
    """Normalize FILE to the session's identity (its realpath), never through
    a symlink that another user planted."""
    if not file or "\0" in file:
        raise UsageError("event file path is empty or contains a NUL byte")
    try:
        absolute = os.path.abspath(file)
    except (OSError, ValueError) as e:  # the current directory is gone or not decodable
        raise UsageError("cannot resolve %s: %s" % (file, e)) from None
    path = _realpath(absolute)
    if os.path.isdir(path):
        raise UsageError("event path is a directory, not an event file: %s" % path)
    check_root(path, "event file")
    return Address(path)


def check_root(real: str, what: str) -> None:
    """HARNESSCTL_ROOT (folders, one per line): when set, a command takes no
    event file and no working directory whose real path lies outside them.
    `harnessctl mcp` sets it on the commands it runs on another machine, so
    that its ssh:// roots hold there on real paths, symlinks and all."""
    text = os.environ.get("HARNESSCTL_ROOT")
    if not text:
        return
    roots = [os.path.realpath(root) for root in text.split("\n") if root]
    if not under(real, roots):
        raise UsageError("refusing %s %s: it is not under HARNESSCTL_ROOT (%s)" % (what, real, ", ".join(roots)))


def under(real: str, roots: List[str]) -> bool:
    """Whether the resolved path `real` is one of `roots` or lies inside one."""
    return any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots)


def _realpath(path: str) -> str:
    """os.path.realpath of an absolute path, refusing to follow a symlink that
    neither the caller nor root owns (private.check_symlink).  One lstat per
    component, as realpath itself does, so resolving costs nothing extra."""
    resolved = "/"
    todo = [part for part in reversed(path.split("/")) if part]
    hops = 0
    missing = False  # from here on nothing exists: the rest is resolved by name, as realpath does
    while todo:
        name = todo.pop()
        if name == ".":
            continue
        if name == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, name)
        try:
            st = None if missing else os.lstat(candidate)
        except FileNotFoundError:
            st, missing = None, True
        except OSError as e:
            raise UsageError("cannot access %s: %s" % (candidate, e.strerror)) from None
        if st is None or st.st_mode & S_IFMT != S_IFLNK:
            resolved = candidate
            continue
        hops += 1
        if hops > MAX_SYMLINKS:
            raise UsageError("too many levels of symlinks in %s" % path)
        from .private import check_symlink

        check_symlink(candidate, st)
        target = os.readlink(candidate)
        if target.startswith("/"):
            resolved = "/"
        todo.extend(part for part in reversed(target.split("/")) if part)
    return resolved


def require_exists(addr: Address) -> None:
    """status/cancel/reply: the file must have been created by a send."""
    try:
        os.stat(addr.path)
    except FileNotFoundError:
        raise NotFoundError("no such event file: %s (a send creates it)" % addr.path) from None
    except OSError as e:  # e.g. a directory on the way that we may not search
        raise UsageError("cannot access event file %s: %s" % (addr.path, e.strerror)) from None


def open_event_file(addr: Address, flags: int) -> int:
    """The event file, opened only if it is a regular file of ours (a FIFO or a
    device is refused without blocking on it)."""
    from . import private

    try:
        return private.open_file(addr.path, flags, "event file")
    except FileNotFoundError:
        raise
    except OSError as e:
        raise UsageError("cannot open event file %s: %s" % (addr.path, e.strerror)) from None


def check_event_file(addr: Address) -> None:
    """Refuse an existing file that is not ours, leaving it untouched."""
    try:
        fd = open_event_file(addr, os.O_RDONLY)
    except FileNotFoundError:
        return
    with os.fdopen(fd, "rb") as f:
        head = f.readline(HEAD)
    if head and not is_event_line(head):
        raise UsageError("not a harnessctl event file (left untouched): %s" % addr.path)


# A first line longer than this (a first prompt of megabytes) is recognized by
# the start our own encoder gives every line, without reading all of it.
HEAD = 65536


def is_event_line(head: bytes) -> bool:
    """Whether a first line (at most HEAD bytes of it) is one of our events."""
    if not head.endswith(b"\n") and len(head) >= HEAD:
        kind = head[9:head.find(b'"', 9)].decode("ascii", "replace")
        return head.startswith(b'{"type":"') and kind in EVENT_TYPES and b'","seq":' in head[:80]
    import json

    try:
        first = json.loads(head)
    except ValueError:
        return False
    return isinstance(first, dict) and first.get("type") in EVENT_TYPES and "seq" in first


def make_sidecar(addr: Address) -> Tuple[bool, Optional[Tuple[int, int]]]:
    """Create FILE.d/ (0700) and the event file (0600) for a first send, or
    check the existing ones are ours.  Returns what was created: the sidecar
    (True/False) and the event file ((st_dev, st_ino), or None), so that a
    send that fails next can take them back."""
    from . import private

    parent = os.path.dirname(addr.path)
    if not os.path.isdir(parent):
        raise UsageError("directory of the event file does not exist: %s" % parent)
    made_sidecar = private.make_dir(addr.sidecar)
    try:
        fd = os.open(addr.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        os.close(open_event_file(addr, os.O_WRONLY | os.O_APPEND))  # one of ours, and writable
        return made_sidecar, None
    except OSError as e:
        if made_sidecar:
            os.rmdir(addr.sidecar)  # still empty: a first send that fails leaves nothing behind
        raise private.cannot("create event file", addr.path, e) from None
    st = os.fstat(fd)
    os.close(fd)
    return made_sidecar, (st.st_dev, st.st_ino)


def in_a_listing(name: str) -> bool:
    """Whether `status DIR` lists a file of this name: `*.jsonl`, not a dot file."""
    return name.endswith(".jsonl") and not name.startswith(".")


def unlisted(path: str) -> Optional[str]:
    """The warning for an event file `status DIR` will never list (a send that binds `notes.txt`)."""
    name = os.path.basename(path)
    if in_a_listing(name):
        return None
    return "`status DIR` lists only files named *.jsonl (not dot files): it will not list %s" % name
