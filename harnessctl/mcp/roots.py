"""The directories a path given to `harnessctl mcp` must lie under: the
operator's --root, else the client's roots (legacy revisions only: asked
with roots/list, again after notifications/roots/list_changed), else the
server's current directory.

Under 2026-07-28 a server sends the client no request of its own (roots
are deprecated there, and asked only by a round trip the tool call itself
would have to make), so a modern request is held to --root or the cwd."""

from __future__ import annotations

import json
import os
import threading

from ..errors import UsageError
from ..remote.address import is_remote, parse
from ..store.address import under
from .call import check_path

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional

PATIENCE = 10.0  # seconds a client gets to answer roots/list


class Roots:
    """The allowed roots of one connection, and the answers to roots/list."""

    def __init__(self, fixed: List[str], send: Callable[[Dict[str, Any]], None]) -> None:
        self.fixed = fixed
        self.send = send
        self.state = threading.Condition()  # guards what follows
        self.capable = False  # the legacy client declared the roots capability
        self.known: Optional[List[str]] = None  # None: not asked yet (or changed since)
        self.answers: Dict[str, Dict[str, Any]] = {}  # responses to our roots/list, by id
        self.asked = 0

    def declared(self, capable: bool) -> None:
        with self.state:
            self.capable = capable

    def changed(self) -> None:
        with self.state:
            self.known = None

    def answered(self, message: Dict[str, Any]) -> None:
        with self.state:
            self.answers[json.dumps(message["id"])] = message
            self.state.notify_all()

    def roots(self, ask: bool) -> List[str]:
        """--root, else (when `ask`, and the client can) the client's roots, else our cwd."""
        if self.fixed:
            return self.fixed
        with self.state:
            capable, known = self.capable and ask, self.known
        if capable and known is None:
            known = self.ask()
            with self.state:
                self.known = known
        return (known if capable else None) or [os.path.realpath(os.getcwd())]

    def ask(self) -> List[str]:
        """roots/list, answered within PATIENCE: its file:// roots, resolved;
        none when it fails or lists none."""
        from urllib.parse import unquote, urlparse

        with self.state:
            self.asked += 1
            ident = "harnessctl-roots-%d" % self.asked
        self.send({"jsonrpc": "2.0", "id": ident, "method": "roots/list"})
        key = json.dumps(ident)
        with self.state:
            self.state.wait_for(lambda: key in self.answers, PATIENCE)
            answer = self.answers.pop(key, {})
        found = (answer.get("result") or {}).get("roots") if isinstance(answer.get("result"), dict) else None
        roots = []
        for root in found if isinstance(found, list) else []:
            uri = urlparse(root.get("uri", "")) if isinstance(root, dict) and isinstance(root.get("uri"), str) else None
            if uri is not None and uri.scheme == "file" and uri.path:
                roots.append(os.path.realpath(unquote(uri.path)))
        return roots

    def inside(self, path: str, what: str, ask: bool) -> str:
        """`path` resolved (symlinks and all), if it lies under an allowed root."""
        if not path:
            raise UsageError("%s must not be empty" % what)
        check_path(path, what)
        if is_remote(path):
            return self.inside_remote(path, what)
        real = os.path.realpath(path)
        roots = [root for root in self.roots(ask) if not is_remote(root)]
        if not under(real, roots):
            raise UsageError("refusing %s %s: it is not under the allowed roots (%s)" % (what, real, ", ".join(roots)))
        return real

    def inside_remote(self, address: str, what: str) -> str:
        """An ssh:// address, its path made plain (no `.`, `..` or `//`), if it
        lies under an ssh:// --root of the same machine.  Its real path is held
        to the roots there: Sessions runs each command with HARNESSCTL_ROOT."""
        import posixpath

        remote = parse(address)
        plain = posixpath.normpath(remote.path).replace("//", "/")
        roots = [parse(root) for root in self.fixed if is_remote(root)]
        if not any(root.machine == remote.machine and under(plain, [posixpath.normpath(root.path)]) for root in roots):
            raise UsageError("refusing %s %s: it is not under the allowed ssh:// roots (%s)"
                             % (what, address, ", ".join(root.given for root in roots) or "none: give --root ssh://…"))
        return remote.with_path(plain)
