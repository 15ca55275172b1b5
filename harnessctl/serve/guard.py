"""Who may ask `harnessctl serve` anything.

The page can answer an agent's approval requests, so a request from anywhere
but the person's own browser must fail: every request carries the token
printed with the URL (a GET in its query, a POST in a header, which no other
site's page can set without a preflight this server never answers), and the
Host header must name this server, so that a name rebound to 127.0.0.1 by
someone's DNS (DNS rebinding) reaches nothing.
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
        """A Host header that names this server: its port, and as name an IP
        address (a rebinding attack needs a DNS name), `localhost` when it
        listens on loopback, or the --host given."""
        if not header:
            return False
        if header.startswith("["):  # an IPv6 address: [::1]:8080
            name, _, rest = header[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else rest or "80"
        else:
            name, _, port = header.partition(":")
            port = port or "80"
        if port != str(self.port):
            return False
        if name.lower() == self.host.lower():
            return True
        if name.lower() == "localhost":
            return is_loopback(self.host)
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
