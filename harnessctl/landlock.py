"""The kernel's Landlock, through ctypes: the ABI it offers, a ruleset of
paths and the rights beneath each, and the two calls that put the calling
thread (and every process it starts from then on) inside it for good.

Landlock only adds restrictions: a right the ruleset handles is denied
everywhere except beneath a path that a rule grants it on, and a process can
never leave its domain nor widen it.  Its ptrace rule (since ABI 1) keeps a
boxed process from attaching to one outside, or opening its memory and
descriptors (root still reads its /proc/PID/environ and maps); the scopes
of ABI 6 keep it from signalling one and from connecting to an abstract Unix
socket one bound.  Linux only; see docs/OPERATIONS.md, "The box".
"""

from __future__ import annotations

import ctypes
import os
import sys

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Callable, Optional

# The syscalls have these numbers on every architecture (the generic table).
CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3, 5
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

# The lowest ABI that confines what a boxed agent writes (TRUNCATE: ABI 3),
# links and renames (REFER: ABI 2), and whom it signals or reaches on an
# abstract socket (the scopes: ABI 6).  Linux 6.12 offers it.
NEEDED_ABI = 6
# The rights a rule on a file (not a directory) may carry.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ = EXECUTE | READ_FILE | READ_DIR | IOCTL_DEV
ALL = (1 << 16) - 1  # every filesystem right of ABI 5 and later (ABI 7 added none)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """The Landlock ABI this kernel offers; 0 when it offers none (an older
    kernel, Landlock not in the boot's `lsm=`, or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _libc().syscall(CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    return max(0, version)


def why_not() -> Optional[str]:
    """Why no box can be made here (one line), or None when one can."""
    if not sys.platform.startswith("linux"):
        return "--sandbox needs Linux's Landlock; this system is %s (docs/OPERATIONS.md, \"The box\")" % sys.platform
    found = abi()
    if found == 0:
        return ("--sandbox needs Linux's Landlock, which this kernel (%s) does not offer (Linux 5.13 or later, with "
                "landlock in the lsm= boot list)" % os.uname().release)
    if found < NEEDED_ABI:
        return ("--sandbox needs Landlock ABI %d (Linux 6.12 or later: it scopes signals and abstract sockets); this "
                "kernel (%s) offers ABI %d" % (NEEDED_ABI, os.uname().release, found))
    return None


class Ruleset:
    """A Landlock ruleset being built: every filesystem right handled, both
    scopes on, and what `grant` adds.  `enter_fn()` is what a child calls
    between fork and exec; the caller closes the ruleset once the child runs."""

    def __init__(self) -> None:
        self._libc = _libc()
        attr = _RulesetAttr(ALL, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
        fd = self._libc.syscall(CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset: " + os.strerror(ctypes.get_errno()))
        self.fd: int = fd

    def grant(self, fd: int, rights: int) -> None:
        """Grant `rights` beneath the file or directory open at `fd` (O_PATH will do)."""
        attr = _PathBeneathAttr(rights, fd)
        if self._libc.syscall(ADD_RULE, self.fd, RULE_PATH_BENEATH, ctypes.byref(attr), 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_add_rule: " + os.strerror(ctypes.get_errno()))

    def enter_fn(self) -> Callable[[], None]:
        """A function of no argument that puts the calling thread into the
        ruleset, after forbidding it new privileges (Landlock's condition for an
        unprivileged caller); it raises if the kernel refuses.  Its calls are
        resolved now: nothing is loaded between fork and exec."""
        syscall, prctl, fd = self._libc.syscall, self._libc.prctl, self.fd

        def enter() -> None:
            if prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or syscall(RESTRICT_SELF, fd, 0) != 0:
                raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")

        return enter

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
