"""What tells an idle runtime that it may no longer be reachable, without
waking it on a timer: Linux's inotify, through ctypes.

The runtime is unreachable once its path names another file (or none), or
its sidecar or socket was removed or replaced (lifetime.py decides that).
Each of those is a change to a name in a directory, or to a directory on
the way there being moved: so the watches are the event file itself, each
of the three names in its directory (the file, the sidecar, the socket,
which may live in a fallback folder: store/address.py), and each directory
from there up to `/` for its own move or removal.  One daemon thread sits
in read() on the inotify descriptor and calls `changed()` for a batch of
events that touch one of those; an event for another name in a watched
directory (another session's file beside ours) wakes that thread only,
never the loop.  It calls `lost()` when a watch ended by itself (its
filesystem unmounted, its directory removed) or the queue overflowed: the
runtime then falls back to its timer.  `start` returns None where inotify
cannot watch all of it (not Linux, out of instances or watches): the
caller uses the timer instead.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, FrozenSet, Optional, Tuple

    Plan = Dict[str, Tuple[int, FrozenSet[str]]]

# <sys/inotify.h>
IN_ATTRIB, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x4, 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
IN_DONT_FOLLOW, IN_MASK_ADD = 0x02000000, 0x20000000
SELF = IN_MOVE_SELF | IN_DELETE_SELF
NAMES = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name, NUL-padded
READ_SIZE = 65536


def plan(path: str, sidecar: str, socket: str) -> Plan:
    """What to watch: each path, its mask, and the names whose events count in
    it (a directory's).  The event file's link count (IN_ATTRIB) changes when
    a name of it is removed; the other changes come as names or moves."""
    watches: Dict[str, Tuple[int, FrozenSet[str]]] = {}

    def add(where: str, mask: int, name: Optional[str] = None) -> None:
        had, names = watches.get(where, (0, frozenset()))
        watches[where] = (had | mask, names | frozenset([name] if name else []))

    add(path, SELF | IN_ATTRIB)
    add(sidecar, SELF)
    for target in (path, sidecar, socket):
        directory, name = os.path.split(target)
        add(directory, NAMES | SELF, name)
        while os.path.dirname(directory) != directory:  # every directory above, for its own move
            directory = os.path.dirname(directory)
            add(directory, SELF)
    return watches


def relevant(data: bytes, names: Dict[int, FrozenSet[str]]) -> Tuple[bool, bool]:
    """(changed, lost) for a batch read from the descriptor: whether an event
    touches what we watch, and whether a watch ended by itself."""
    changed = lost = False
    offset = 0
    while offset + EVENT.size <= len(data):
        wd, mask, _, length = EVENT.unpack_from(data, offset)
        name = data[offset + EVENT.size:offset + EVENT.size + length].rstrip(b"\0")
        offset += EVENT.size + length
        if mask & (IN_IGNORED | IN_Q_OVERFLOW):
            lost = True
        elif mask & (SELF | IN_ATTRIB | IN_UNMOUNT) or os.fsdecode(name) in names.get(wd, ()):
            changed = True
    return changed, lost


class ReachWatch:
    """The inotify descriptor, its watches, and the thread that reads it."""

    def __init__(self, libc: Any, fd: int, names: Dict[int, FrozenSet[str]], changed: Callable[[], None],
                 lost: Callable[[], None]) -> None:
        self._libc = libc
        self.fd = fd
        self._names = names  # watch descriptor -> the names that count in it
        self._changed = changed
        self._lost = lost
        self.stopping = False
        self.thread = threading.Thread(target=self._read, name="reachwatch", daemon=True)

    def stop(self) -> None:
        """Remove every watch: each removal queues IN_IGNORED, which wakes the
        thread; it sees `stopping` and closes the descriptor."""
        self.stopping = True
        for wd in self._names:
            self._libc.inotify_rm_watch(self.fd, wd)  # one that ended already: EINVAL, nothing to do

    def _read(self) -> None:
        try:
            while not self.stopping:
                try:
                    data = os.read(self.fd, READ_SIZE)
                except InterruptedError:
                    continue
                if self.stopping:
                    return
                changed, lost = relevant(data, self._names)
                if lost:
                    self._lost()
                    return
                if changed:
                    self._changed()
        except OSError:  # not expected of inotify: the runtime falls back to its timer
            self._lost()
        finally:
            os.close(self.fd)


def start(path: str, sidecar: str, socket: str, changed: Callable[[], None],
          lost: Callable[[], None], libc: Any = None) -> Optional[ReachWatch]:
    """Watch what makes the runtime unreachable; `changed()` and `lost()` are
    called on the watch's own thread.  None where inotify cannot watch all of
    it (the caller checks on a timer)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = libc or ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(os.O_CLOEXEC)
    except (OSError, AttributeError):  # no libc to load, or one without inotify
        return None
    if fd < 0:  # out of instances (fs.inotify.max_user_instances), or no inotify in this kernel
        return None
    names: Dict[int, FrozenSet[str]] = {}
    for where, (mask, counted) in plan(path, sidecar, socket).items():
        # MASK_ADD: one directory under two names (a bind mount) is one watch, and keeps both masks
        wd = libc.inotify_add_watch(fd, os.fsencode(where), mask | IN_DONT_FOLLOW | IN_MASK_ADD)
        if wd < 0:  # gone already (the check that follows sees why), unreadable, or out of watches
            os.close(fd)
            return None
        names[wd] = names.get(wd, frozenset()) | counted
    watch = ReachWatch(libc, fd, names, changed, lost)
    try:
        watch.thread.start()
    except RuntimeError:  # no thread for it (ulimit -u)
        os.close(fd)
        return None
    return watch
