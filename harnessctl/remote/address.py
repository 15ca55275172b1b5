"""An `ssh://[user@]host[:port]/absolute/path` session address.

No percent-decoding: the path is the remote path's own bytes, as `ssh host
cat PATH` would name them (a space is a space).  A user or host that starts
with `-` is refused: ssh would read it as an option."""

from __future__ import annotations

from ..errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Optional, Tuple

SCHEME = "ssh://"


class Remote:
    """One parsed address: where (user, host, port) and which file there."""

    __slots__ = ("given", "user", "host", "port", "path")

    def __init__(self, given: str, user: Optional[str], host: str, port: Optional[str], path: str) -> None:
        self.given = given
        self.user = user
        self.host = host
        self.port = port
        self.path = path

    @property
    def machine(self) -> Tuple[Optional[str], str, Optional[str]]:
        """What one ssh connection reaches: the files of one machine share it."""
        return self.user, self.host, self.port

    @property
    def authority(self) -> str:
        """`[user@]host[:port]` as given: how a person named the machine."""
        return self.given[len(SCHEME):].split("/", 1)[0]

    def with_path(self, path: str) -> str:
        """The address of another file on the same machine."""
        return SCHEME + self.authority + path


def is_remote(text: str) -> bool:
    return text.startswith(SCHEME)


def parse(given: str) -> Remote:
    """The address `given` (which starts with ssh://), or UsageError saying what is wrong."""
    authority, slash, path = given[len(SCHEME):].partition("/")
    if not slash or not path:
        raise UsageError("%s: an ssh:// address names a file by its absolute path: ssh://[user@]host[:port]/PATH"
                         % given)
    user: Optional[str] = None
    if "@" in authority:
        user, _, authority = authority.rpartition("@")
        if not user or user.startswith("-"):
            raise UsageError("%s: bad user name %r" % (given, user))
    host, port = _host_port(given, authority)
    if not host or host.startswith("-") or any(c.isspace() or c in "/\\'\"`$;&|<>" for c in host):
        raise UsageError("%s: bad host name %r" % (given, host))
    return Remote(given, user, host, port, "/" + path)


def _host_port(given: str, authority: str) -> Tuple[str, Optional[str]]:
    """host and port of `host`, `host:22`, `[::1]` or `[::1]:22`."""
    if authority.startswith("["):
        host, bracket, rest = authority[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise UsageError("%s: bad host %r" % (given, authority))
        port = rest[1:] if rest else None
    else:
        host, colon, port_text = authority.partition(":")
        port = port_text if colon else None
    if port is not None and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise UsageError("%s: bad port %r" % (given, port))
    return host, port
