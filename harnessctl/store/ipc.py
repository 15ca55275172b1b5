"""Local socket IPC between a command and the runtime.

One request and one response per connection, each ended by the sender
shutting down its side:

* request: the fields (operation, then its arguments) as netstrings,
  `<byte length>:<UTF-8 bytes>,` each.  A send's are named and versioned
  (`named`): `send/2`, `harnessctl=VERSION`, then `name=value` each, so a
  runtime of another version says so instead of misreading them;
* response: `<exit code> <text>` — the text is what the command prints (the
  status line) or its error message — or the single word `retry` when the
  runtime is exiting and the command should start a new one.

The format is deliberately not JSON, and the module uses `_socket` rather
than `socket`: importing json (with re) and socket (with enum) costs more than
the interpreter's own start-up, and a live `status` or `send` needs neither.

Both ends check the peer's uid with SO_PEERCRED, so only the same user can
talk to a runtime (and a command never trusts a socket planted by someone
else at a fallback path).
"""

from __future__ import annotations

import _socket
import os
import sys

from ..errors import HarnessctlError, UnavailableError, UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple

MAX_MESSAGE = 64 * 1024 * 1024
RETRY = "retry"
# Sent to a `wait ID notes` watch, before its answer, each time the harness's warning is written:
# the waiter then reads the file's new lines for its stderr note (notes.py).  No answer starts with it.
NUDGE = b"~"
# How a runtime's answer to a request without the right proof (encode_request) begins: a command that
# holds another machine's proof (remote/tunnel.py) learns from it that the proof is stale.
REFUSED_PROOF = "refused: this command cannot read the state folder this runtime uses"
Timeout = _socket.timeout  # TimeoutError from Python 3.10 on; a distinct OSError on 3.9


def peer_uid(conn: _socket.socket) -> int:
    creds = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # struct ucred: pid, uid, gid
    return int.from_bytes(creds[4:8], sys.byteorder)


def listen(path: str) -> _socket.socket:
    """Bind the runtime's socket (0600), replacing a stale one left by a dead runtime.
    Only called while holding the runtime lock, so a live runtime's socket is never removed.
    Its directory (the sidecar, or the fallback under /tmp) must be a real
    directory of ours, 0700: never a symlink someone planted there."""
    from .private import make_dir

    parent = os.path.dirname(path)
    make_dir(parent)
    mode = os.stat(parent).st_mode & 0o777  # of the directory, also behind a symlink of ours
    if mode & 0o077:
        raise UsageError("refusing socket directory %s: its mode is %04o, not 0700" % (parent, mode))
    try:
        if os.lstat(path).st_mode & 0o170000 not in (0o140000, 0o120000):  # a socket, or a symlink in its place
            raise UsageError("refusing runtime socket %s: it is not a socket" % path)
        os.unlink(path)
    except FileNotFoundError:
        pass
    server = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(path)
    finally:
        os.umask(old)
    server.listen(128)
    return server


def accept(server: _socket.socket) -> _socket.socket:
    """The next connection (blocking).  `_accept` is what socket.socket.accept
    itself calls; using it keeps the socket module out of the runtime's start-up."""
    fd, _ = server._accept()  # type: ignore[attr-defined]
    return _socket.socket(fileno=fd)


def connect(path: str, timeout: Optional[float]) -> _socket.socket:
    """Connect to a runtime; OSError (ENOENT, ECONNREFUSED) means there is none."""
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        try:
            conn.connect(path)
        except PermissionError:
            raise PermissionError("cannot reach runtime socket %s: permission denied (is it yours?)" % path) from None
        uid = peer_uid(conn)
        if uid != os.getuid():
            from .private import owner

            raise PermissionError("refusing runtime socket %s: it is served by %s, not by you" % (path, owner(uid)))
    except BaseException:
        conn.close()
        raise
    return conn


def read_all(conn: _socket.socket) -> bytes:
    """Everything the peer sends until it shuts down its side."""
    chunks: List[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(262144)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_MESSAGE:
            raise ValueError("message too large")


def send_all(conn: _socket.socket, data: bytes) -> None:
    conn.sendall(data)
    conn.shutdown(_socket.SHUT_WR)


def encode_fields(fields: List[str]) -> bytes:
    out = bytearray()
    for field in fields:
        data = field.encode("utf-8")
        out += b"%d:%s," % (len(data), data)
    return bytes(out)


PROOF = "proof="  # the first field of every request (encode_request)


def encode_request(fields: List[str], proof: Optional[str] = None) -> bytes:
    """A command's request: the proof that it may use harnessctl's state
    folder (trusted.runtime_proof), then its fields.  A runtime answers only
    a proven request, so a process in a --sandbox box, which cannot read that
    folder, reaches no runtime, though Landlock lets it connect.  `proof`:
    another machine's, for its runtime's forwarded socket (remote/tunnel.py)."""
    if proof is None:
        from .trusted import runtime_proof

        proof = runtime_proof(create=True)
    return encode_fields([PROOF + proof] + fields)


def decode_fields(data: bytes) -> List[str]:
    fields = []
    pos = 0
    while pos < len(data):
        colon = data.index(b":", pos)
        length = int(data[pos:colon])
        end = colon + 1 + length
        if data[end:end + 1] != b",":
            raise ValueError("malformed request")
        fields.append(data[colon + 1:end].decode("utf-8"))
        pos = end + 1
    return fields


def named(op: str, version: int, values: Dict[str, str]) -> List[str]:
    """The fields of a versioned request: `OP/VERSION`, this harnessctl's
    version, then each value as `name=value` (in any order)."""
    return ["%s/%d" % (op, version), "harnessctl=" + own_version()] + ["%s=%s" % item for item in values.items()]


def read_named(request: List[str], op: str, version: int, path: str) -> Dict[str, str]:
    """The values of a `named` request, by name.  A request of another
    version (an earlier command's positional one too) is refused with both
    versions named: nothing is applied."""
    if request[0] != "%s/%d" % (op, version):
        _, _, theirs = request[0].partition("/")  # none: the positional request of version 1
        given = [field[11:51] for field in request[1:] if theirs and field.startswith("harnessctl=")]
        raise UnavailableError(other_version(path, op, "harnessctl %s" % own_version(), version,
                                             "harnessctl %s" % given[0] if given else "an earlier harnessctl",
                                             theirs[:20] or "1"))
    values: Dict[str, str] = {}
    for field in request[1:]:
        name, equals, value = field.partition("=")
        if not equals or name in values:
            raise HarnessctlError("malformed %s request: a field %r" % (op, name[:40]))
        values[name] = value
    values.pop("harnessctl", None)
    return values


def other_version(path: str, op: str, runtime: str, reads: object, command: str, sent: object) -> str:
    """The one line a command hears when it and the runtime serving `path`
    speak different versions of an `op` request."""
    return ("the runtime serving %s is %s, which reads %s requests of version %s; this command (%s) sent version "
            "%s: nothing was sent; that runtime exits once the conversation is idle for HARNESSCTL_IDLE_TIMEOUT "
            "(60 s by default): send again then" % (path, runtime, op, reads, command, sent))


def own_version() -> str:
    """This harnessctl's version (the package's)."""
    from .. import __version__

    return __version__


def encode_response(code: int, text: str) -> bytes:
    return ("%d %s" % (code, text)).encode("utf-8")


def decode_response(data: bytes) -> Optional[Tuple[int, str]]:
    """(exit code, text), or None for `retry`."""
    text = data.decode("utf-8", "replace")
    if text == RETRY:
        return None
    code, _, rest = text.partition(" ")
    return int(code), rest
