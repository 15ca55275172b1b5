"""Who may ask `harnessctl serve` anything.

The page can answer an agent's approval requests, so a request from anywhere
but the person's own browser must fail: every request carries the token
printed with the URL (a GET in its query, a POST in a header, which no other
site's page can set without a preflight this server never answers), and the
Host header must name this server, so that a name rebound to 127.0.0.1 by
someone's DNS (DNS rebinding) reaches nothing.

The Host's port is not checked: a rebinding attack is told apart by its
name (a DNS name it controls), never by its port, and a browser that reached
this server by an address sends the port it connected to, which a forward
(`ssh -L 9090:127.0.0.1:8080`, a container's `-p`) legitimately changes.
Refusing it guarded nothing and broke every tunnel whose ports differ.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Optional

TOKEN_HEADER = "X-Harnessctl-Token"


class Guard:
    """The token of one serve and the Host names it answers to."""

    def __init__(self, host: str, port: int, token: Optional[str] = None) -> None:
        self.host = host
        self.port = port
        self.token = token or secrets.token_urlsafe(32)

    def url(self) -> str:
        """The one URL the person opens (as Jupyter prints it)."""
        host = "[%s]" % self.host if ":" in self.host else self.host
        return "http://%s:%d/?token=%s" % (host, self.port, self.token)

    def token_ok(self, given: Optional[str]) -> bool:
        return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())

    def host_ok(self, header: Optional[str]) -> bool:
        return self.host_refused(header) is None

    def host_refused(self, header: Optional[str]) -> Optional[str]:
        """Why a Host header does not name this server, or None when it does:
        as name an IP address (a rebinding attack needs a DNS name),
        `localhost` when it listens on loopback, or the --host given; any
        port (see above).  The reason is the 403's body, read by a person
        whose tunnel or bookmark went wrong, so it says what to do; it never
        holds the token (a rebound page could read it)."""
        if not header:
            return "the request has no Host header: open the URL harnessctl serve printed"
        if header.startswith("["):  # an IPv6 address: [::1]:8080
            name = header[1:].partition("]")[0]
        else:
            name = header.rpartition(":")[0] if header.count(":") == 1 else header
        lowered = name.lower()
        if lowered == self.host.lower() or (lowered == "localhost" and is_loopback(self.host)):
            return None
        if _is_address(name):
            return None
        names = "an IP address" + (" or localhost" if is_loopback(self.host) else "")
        if not _is_address(self.host) and self.host.lower() != "localhost":
            names += " or %s" % self.host
        return ("refusing Host %r: this server answers only to %s, as a DNS name could be one rebound to "
                "this machine by another site's page; open the URL harnessctl serve printed (through a tunnel: "
                "http://127.0.0.1:LOCAL_PORT/ and its ?token=)" % (header, names))


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or `localhost`) is this machine alone."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
