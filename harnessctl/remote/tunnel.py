"""A remote runtime's socket, forwarded over the ssh master connection.

A warm `status`, `send`, `reply` or `cancel` to a live remote session then
costs one round trip and no remote interpreter: the command speaks the
runtime's own protocol (store/ipc.py) to a local socket that the ssh master
(`ssh -O forward -L LOCAL:REMOTE`) connects to the remote runtime's socket.

Two things only the remote machine knows are learned once, from a remote
`status` run with HARNESSCTL_FORWARD=1 (client.with_forward): where the
runtime's socket is, and the proof its requests must show (the remote
state folder's, ipc.encode_request).  They are kept in the local state
folder, which an agent in a --sandbox box cannot read.  The local socket is
ssh's, mode 0600 in a 0700 folder of ours; it dies with the master (a later
command removes the file and forwards again).

Whenever the forward cannot answer (no master, no runtime listening there,
a runtime exiting, a proof no longer accepted), the caller runs the command
on the remote machine as before: nothing was sent.  Once a request is out,
a connection that ends without an answer is what it is locally: the
request may have been applied (client.exchange)."""

from __future__ import annotations

import os

from ..store.address import Address

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple

    from .address import Remote

SETTING = "HARNESSCTL_FORWARD"  # in a remote status's environment: add "forward" to its line
FOLDER = "fw"  # the local sockets' folder, in the socket folder (address.fallback_socket_dir)


class Forwarded(Address):
    """A remote session as the client's exchange sees it: its socket the
    local end of the forward, its path the remote one (its messages name
    it; forward.answered names the address instead)."""

    __slots__ = ("local",)

    def __init__(self, path: str, local: str) -> None:
        super().__init__(path)
        self.local = local

    @property
    def socket(self) -> str:
        return self.local


class Tunnel:
    """The forward of one remote session's runtime socket."""

    def __init__(self, remote: Remote) -> None:
        self.remote = remote
        key = _key(remote)
        from ..store.address import fallback_socket_dir
        from ..store.trusted import state_dir

        self.folder = os.path.join(fallback_socket_dir(), FOLDER)
        self.local = os.path.join(self.folder, key[:24] + ".sock")
        self.record = os.path.join(state_dir(), "forwards", key)

    def ask(self, fields: List[str], retry_on_eof: bool) -> Optional[str]:
        """The live remote runtime's answer to `fields` through the forward;
        None when the forward cannot answer (ask the remote machine instead).
        A forward that does not listen (never made, or its master exited) is
        made first; one that listens but gets no answer has no runtime behind it."""
        from ..errors import UnavailableError

        learned = self._learned()
        if learned is None:
            return None
        try:
            found = self._exchange(fields, retry_on_eof, learned[1])
            if found is None and not _listens(self.local) and self._forwarded(learned[0]):
                found = self._exchange(fields, retry_on_eof, learned[1])
            return found
        except UnavailableError as e:
            from ..store.ipc import REFUSED_PROOF

            if not str(e).startswith(REFUSED_PROOF):
                raise
            self.forget()  # the remote key was made anew: learned again by the remote command
            return None

    def _exchange(self, fields: List[str], retry_on_eof: bool, proof: str) -> Optional[str]:
        import time

        from ..client import NoRuntime, exchange, timeout_seconds

        try:
            return exchange(Forwarded(self.remote.path, self.local), fields, time.monotonic() + timeout_seconds(),
                            retry_on_eof, proof)
        except NoRuntime:
            return None

    def learn(self, line: str) -> str:
        """A remote status line (run with SETTING) without its "forward",
        which is kept for the commands to come; the forward is made now when
        a runtime is live there."""
        import json

        try:
            report = json.loads(line)
        except (ValueError, RecursionError):
            return line  # no status line: shown as the remote said it (forward.renamed refuses it)
        if not isinstance(report, dict) or "forward" not in report:
            return line  # a harnessctl there that knows no forward, or a session named through a symlink
        found = report.pop("forward")
        if isinstance(found, dict) and _sound(found):
            self._keep(found["socket"], found["proof"])
            if report.get("runtime") == "alive" and not _listens(self.local):
                self._forwarded(found["socket"])
        from ..eventfile.state import status_line

        return status_line(report)

    def known(self) -> bool:
        return self._learned() is not None

    def forget(self) -> None:
        try:
            os.unlink(self.record)
        except OSError:
            pass

    # -- the record and the forward ---------------------------------------------------

    def _learned(self) -> Optional[Tuple[str, str]]:
        """(remote socket, proof) as learned, or None."""
        from ..errors import HarnessctlError
        from ..store.private import read_text

        try:
            text = read_text(self.record)
        except (OSError, HarnessctlError):
            return None
        if text is None or text.count("\0") != 1:
            return None
        socket, proof = text.split("\0")
        return socket, proof

    def _keep(self, socket: str, proof: str) -> None:
        from ..store.private import write_atomic
        from ..store.trusted import make_state_dir

        make_state_dir(os.path.dirname(self.record))
        write_atomic(self.record, socket + "\0" + proof)

    def _forwarded(self, remote_socket: str) -> bool:
        """Forward the remote socket now; a file left by a master that has
        exited is removed first.  Only in a private folder of ours."""
        from ..store.private import make_dir

        make_dir(os.path.dirname(self.folder))
        make_dir(self.folder)
        if os.stat(self.folder).st_mode & 0o077:
            return False  # not private: never used (ipc.listen refuses such a folder too)
        try:
            os.unlink(self.local)
        except FileNotFoundError:
            pass
        except OSError:
            return False
        return _forward(self.remote, self.local, remote_socket)


def _key(remote: Remote) -> str:
    """What names one forward: the session and everything that decides
    which machine and which harnessctl there the words reach."""
    from ..store.trusted import blake2

    parts = [os.environ.get("HARNESSCTL_SSH", ""), os.environ.get("HARNESSCTL_REMOTE_COMMAND", ""),
             remote.user or "", remote.host, remote.port or "", remote.path]
    return blake2()("\0".join(parts).encode("utf-8", "surrogateescape"), digest_size=20).hexdigest()


def _sound(found: Dict[str, object]) -> bool:
    """A forward a remote status names that ssh can take: an absolute socket
    path and a proof, with nothing ssh's `-L` would read otherwise."""
    socket, proof = found.get("socket"), found.get("proof")
    return (isinstance(socket, str) and isinstance(proof, str) and socket.startswith("/") and proof.isalnum()
            and not any(c in socket for c in ":\0\n") and not any(c.isspace() for c in socket))


def _listens(path: str) -> bool:
    """Someone of ours accepts at `path` (ssh's listener: the master lives)."""
    from ..store import ipc

    try:
        ipc.connect(path, 1.0).close()
    except OSError:
        return False
    return True


def _forward(remote: Remote, local: str, remote_socket: str) -> bool:
    """`ssh -O forward -L LOCAL:REMOTE host` to the master; False when it
    could not (no master running, or HARNESSCTL_SSH is no ssh)."""
    from ..errors import HarnessctlError
    from .ssh import Child, command_line

    argv = command_line(remote.machine, [])[:-3]  # ssh and its options, without `-- HOST COMMAND`
    argv += ["-O", "forward", "-L", "%s:%s" % (local, remote_socket), "--", remote.host]
    try:
        child = Child(argv, False, False)
    except HarnessctlError:
        return False
    code, _, _ = child.communicate()
    return code == 0
