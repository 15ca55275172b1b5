"""Local socket IPC between a command and the runtime: one JSON line each way.

Both ends check the peer's uid with SO_PEERCRED, so only the same user can
talk to a runtime (and a command never trusts a socket planted by someone else
at a fallback path).
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import Any, Dict, Optional

MAX_MESSAGE = 64 * 1024 * 1024


def peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def listen(path: str) -> socket.socket:
    """Bind the runtime's socket (0600), replacing a stale one left by a dead runtime.
    Only called while holding the runtime lock, so a live runtime's socket is never removed."""
    parent = os.path.dirname(path)
    os.makedirs(parent, mode=0o700, exist_ok=True)
    st = os.stat(parent)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError("socket directory %s must be owned by you with mode 0700" % parent)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(path)
    finally:
        os.umask(old)
    server.listen(128)
    return server


def send_message(conn: socket.socket, message: Dict[str, Any]) -> None:
    conn.sendall((json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8"))


def read_message(conn: socket.socket) -> Optional[Dict[str, Any]]:
    """One JSON line, or None if the peer closed before sending one."""
    chunks = []
    size = 0
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n"):
            break
        if size > MAX_MESSAGE:
            raise ValueError("message too large")
    message = json.loads(b"".join(chunks))
    if not isinstance(message, dict):
        raise ValueError("message is not a JSON object")
    return message


def connect(path: str, timeout: Optional[float]) -> socket.socket:
    """Connect to a runtime; OSError (ENOENT, ECONNREFUSED) means there is none."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(path)
        if peer_uid(conn) != os.getuid():
            raise PermissionError("runtime socket %s belongs to another user" % path)
    except BaseException:
        conn.close()
        raise
    return conn
