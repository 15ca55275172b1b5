"""Opening a file beneath a directory without ever leaving it.

An agent names files by path, and the ACP client file system must not let it
reach outside the session's working directory.  Checking a resolved path and
then opening the name again loses a race: the agent swaps a folder for a
symlink between the two and the open lands wherever the link points (issue 32:
a forged binding record in the state directory).  So nothing here opens a path
by name after a check.  The directory is opened once as a descriptor, and
every component below it is opened from the descriptor of the one above with
O_NOFOLLOW: a symlink anywhere below the directory is refused, even one that
points back inside it, and a `..` never appears.  Folders a write needs are
made the same way (mkdir beneath a descriptor, then opened without following).

The directory itself may be reached through symlinks the user chose, so it is
resolved (realpath) once; only what lies below it is the agent's to name.
Stdlib `os` only.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import List, Sequence, Tuple

DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
# a FIFO or a device never blocks the opener: the caller fstats what it got
LAST = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def split(root: str, path: str) -> Tuple[str, List[str]]:
    """The real `root` and the components of the absolute `path` below it.

    `path` must start with `root` as given or as resolved; it is split
    lexically, never resolved, because resolving is the check that races.
    An empty, `.` or `..` component is refused (PermissionError) rather than
    collapsed: collapsing `..` is how a path leaves through a symlink."""
    if not os.path.isabs(path) or "\0" in path:
        raise ValueError("path must be an absolute path")
    real = os.path.realpath(root)
    for prefix in (real, os.path.abspath(root)):
        top = prefix.rstrip(os.sep) + os.sep
        if path.startswith(top):
            names = path[len(top):].split(os.sep)
            if any(name in ("", ".", "..") for name in names):
                raise PermissionError("%s has an empty, '.' or '..' component; harnessctl opens only plain paths "
                                      "for an agent" % path)
            return real, names
    raise PermissionError("%s is outside the session's working directory %s" % (path, root))


def open_file(root: str, names: Sequence[str], flags: int, mode: int = 0o666, make_dirs: bool = False) -> int:
    """A descriptor of `root`/`names`, reached one component at a time from a
    descriptor of `root` (a real path: split() gives it), never following a
    symlink.  `flags` are the caller's for the last component (O_NOFOLLOW,
    O_NONBLOCK and O_CLOEXEC are added).  With `make_dirs` a missing folder is
    created.  A symlink on the way raises PermissionError; a missing one
    FileNotFoundError, as os.open would."""
    if not names:
        raise PermissionError("%s is the working directory, not a file" % root)
    if os.open not in os.supports_dir_fd or os.mkdir not in os.supports_dir_fd:
        raise OSError(errno.ENOSYS, "this platform cannot open a file beneath a directory")
    fd = os.open(root, DIRECTORY)
    try:
        where = root
        for name in names[:-1]:
            where = os.path.join(where, name)
            below = _open_dir(fd, name, where, make_dirs)
            os.close(fd)
            fd = below
        where = os.path.join(where, names[-1])
        try:
            return os.open(names[-1], flags | LAST, mode, dir_fd=fd)
        except OSError as e:
            raise _why(fd, names[-1], where, e) from None
    finally:
        os.close(fd)


def _open_dir(parent: int, name: str, where: str, make: bool) -> int:
    """The folder `name` in `parent`, made first if missing and `make`
    (EEXIST is fine: someone made it meanwhile, and it is opened without
    following whatever it is)."""
    try:
        return os.open(name, DIRECTORY, dir_fd=parent)
    except FileNotFoundError:
        if not make:
            raise
    except OSError as e:
        raise _why(parent, name, where, e) from None
    try:
        os.mkdir(name, 0o777, dir_fd=parent)
    except FileExistsError:
        pass
    try:
        return os.open(name, DIRECTORY, dir_fd=parent)
    except OSError as e:
        raise _why(parent, name, where, e) from None


def _why(parent: int, name: str, where: str, e: OSError) -> OSError:
    """PermissionError naming the symlink when `name` is one (O_NOFOLLOW says
    ELOOP; with O_DIRECTORY it says ENOTDIR, as for a file); `e` otherwise."""
    if e.errno == errno.ELOOP or (e.errno == errno.ENOTDIR and _is_link(parent, name)):
        return PermissionError("%s is a symbolic link; harnessctl follows none below the working directory "
                               "for an agent" % where)
    return e


def _is_link(parent: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False
