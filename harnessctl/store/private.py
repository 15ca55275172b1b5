"""The session's private files, opened only when they are the caller's own.

Nothing in an event path or a sidecar is followed, opened, read as trusted or
acted on unless the calling user owns it and neither group nor others may
write it; sidecar files are never reached through a symlink (O_NOFOLLOW, then
fstat of what was opened) and are created 0600.  Otherwise another local user
could plant a symlink or a pid file that makes our process overwrite, append
to or kill something of ours.  A refusal is a UsageError (exit 2) naming the
path and its owner.  Stdlib `os` only (`pwd` for a refusal's message), and
imported where files are opened or created: a command that finds its runtime
alive opens none of them.
"""

from __future__ import annotations

import os

from ..errors import HarnessctlError, UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Optional

# Symlinks owned by root are trusted too: root can do anything anyway, and
# system paths such as /var/run -> /run are root's.
SYSTEM_UID = 0
# stat.S_IFMT and friends, without importing stat (start-up cost)
S_IFMT, S_IFDIR, S_IFREG, S_IFLNK = 0o170000, 0o040000, 0o100000, 0o120000


# No space, quota exceeded, file too large: the disk's fault, not the caller's
# input, so exit 1 as for any write of the event file that fails (docs/PROTOCOL.md section 15).
DISK_ERRNOS = (28, 122, 27)  # ENOSPC, EDQUOT, EFBIG


def cannot(what: str, path: str, e: OSError) -> HarnessctlError:
    """The error for an OSError while creating or writing `path`."""
    cls = HarnessctlError if e.errno in DISK_ERRNOS else UsageError
    return cls("cannot %s %s: %s" % (what, path, e.strerror))


def owner(uid: int) -> str:
    """`mallory (uid 1001)`, for messages."""
    import pwd

    try:
        return "%s (uid %d)" % (pwd.getpwuid(uid).pw_name, uid)
    except KeyError:
        return "uid %d" % uid


def check(path: str, st: os.stat_result, what: str = "file") -> None:
    """Refuse `st` (of `path`) unless it is ours and not writable by group or others."""
    if st.st_uid != os.getuid():
        raise UsageError("refusing %s %s: it is owned by %s, not by you" % (what, path, owner(st.st_uid)))
    if st.st_mode & 0o022:
        raise UsageError("refusing %s %s: it is writable by group or others (mode %04o); chmod go-w it"
                         % (what, path, st.st_mode & 0o7777))


def check_dir(path: str) -> None:
    """`path` is a directory of ours, or a symlink of ours (or root's) to one."""
    try:
        st = os.lstat(path)
        if st.st_mode & S_IFMT == S_IFLNK:
            check_symlink(path, st)
            st = os.stat(path)
    except OSError as e:
        raise UsageError("cannot use directory %s: %s" % (path, e.strerror)) from None
    if st.st_mode & S_IFMT != S_IFDIR:
        raise UsageError("refusing %s: it is not a directory" % path)
    check(path, st, "directory")


def make_dir(path: str) -> bool:
    """Create `path` 0700, or accept an existing one of ours; True if created."""
    try:
        os.mkdir(path, 0o700)
        created = True
    except FileExistsError:
        created = False
    except OSError as e:
        raise cannot("create", path, e) from None
    check_dir(path)
    return created


def open_file(path: str, flags: int, what: str = "file") -> int:
    """os.open without following a symlink and without blocking on a FIFO, then
    refuse anything that is not a regular file of ours.  With O_CREAT the file
    is created 0600.  Raises UsageError for a refusal, OSError otherwise
    (FileNotFoundError included)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as e:
        if e.errno == 40:  # ELOOP: the last component is a symlink
            raise UsageError("refusing %s %s: it is a symlink" % (what, path)) from None
        raise
    try:
        st = os.fstat(fd)
        if st.st_mode & S_IFMT != S_IFREG:
            raise UsageError("refusing %s %s: it is not a regular file" % (what, path))
        check(path, st, what)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_file(path: str, what: str = "file") -> None:
    """An existing `path` must be a regular file of ours (a missing one is
    fine): for a file that another process, such as a harness, will open."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if st.st_mode & S_IFMT == S_IFLNK:
        raise UsageError("refusing %s %s: it is a symlink" % (what, path))
    if st.st_mode & S_IFMT != S_IFREG:
        raise UsageError("refusing %s %s: it is not a regular file" % (what, path))
    check(path, st, what)


def read_text(path: str) -> Optional[str]:
    """The whole (UTF-8) text of a private file, or None if it does not exist."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read().decode("utf-8", "replace")


def write_atomic(path: str, text: str, sync: bool = False) -> None:
    """Replace `path` with `text` so that readers never see half a file.  The
    temporary file is created exclusively (never through a planted symlink),
    removed again when the write fails (e.g. the disk is full), and rename()
    replaces whatever was at `path` without following it."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        os.unlink(tmp)  # left by a crash of an earlier process with our pid
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def check_symlink(path: str, st: os.stat_result) -> None:
    """A symlink is followed only if it is ours or root's."""
    if st.st_uid not in (os.getuid(), SYSTEM_UID):
        raise UsageError("refusing symlink %s: it is owned by %s, not by you" % (path, owner(st.st_uid)))
