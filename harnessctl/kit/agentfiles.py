"""The files an agent reaches through its client's file system (ACP's
fs/read_text_file and fs/write_text_file): only inside the bound cwd, and
never one of harnessctl's own.

A path is split, never resolved: the open walks it from a descriptor of the
cwd and follows no symlink (beneath.py), so no swap after the check can take
it elsewhere.  Offered to adapters as `Config.agent_file`; what the agent's
request means (line ranges, a missing file) stays in the adapter.
"""

from __future__ import annotations

import errno
import os
import stat

from ..store import trusted
from . import beneath

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any


class AgentFile:
    """A path the agent named, checked: it lies inside `cwd` and is none of
    harnessctl's own files (trusted.refuse_agent_access: the event file, a
    sidecar, the state directory).  Raises PermissionError otherwise (and
    ValueError for a path that is not absolute)."""

    def __init__(self, cwd: str, path: Any) -> None:
        if not isinstance(path, str):
            raise ValueError("path must be an absolute path")
        self.root, self.names = beneath.split(cwd, path)
        self.real = os.path.join(self.root, *self.names)  # for messages
        trusted.refuse_agent_access(self.real)

    def open(self, flags: int, make_dirs: bool = False) -> int:
        """The file, opened beneath the cwd's descriptor (no symlink followed,
        and never blocking: a FIFO would stop the runtime's only thread);
        anything but a regular file is refused, judged by fstat of what was
        opened.  A hard link reaches past every path check, so a file with
        other names is neither read nor written: its other name may lie
        outside the cwd, or be a sidecar's, the seal key or a record."""
        try:
            fd = beneath.open_file(self.root, self.names, flags, 0o666, make_dirs)
        except OSError as e:
            if e.errno not in (errno.EISDIR, errno.ENXIO):  # ENXIO: a FIFO or socket nobody reads
                raise
            raise PermissionError("%s is not a regular file" % self.real) from None
        st = os.fstat(fd)
        refusal = None
        if not stat.S_ISREG(st.st_mode):
            refusal = "%s is not a regular file" % self.real
        elif st.st_nlink > 1:
            refusal = "%s has other hard links; harnessctl does not use them for an agent" % self.real
        if refusal is not None:
            os.close(fd)
            raise PermissionError(refusal)
        return fd
