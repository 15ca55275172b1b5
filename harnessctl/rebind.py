"""`harnessctl rebind FILE`: get a session whose binding is refused or gone
back, with its policy (mode, rules, hooks, limits) kept.

When the state directory records a binding of FILE under this very path, it
is written back to binding.json: it is the one harnessctl itself last wrote.
Any other binding (binding.json when nothing is recorded: the state
directory was deleted or is another one, the session was copied; or the
binding recorded for the file under another name: it was moved without its
sidecar) is shown with a fingerprint and taken only by
`rebind FILE --accept FINGERPRINT`: a person reads what will run before it
runs, and nothing can change it between the two commands.
"""

from __future__ import annotations

from .errors import UsageError
from .store import private, trusted
from .store.address import check_event_file, make_sidecar, require_exists, resolve
from .store.bindingfile import parse_binding, write_binding

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from .store.address import Address


def rebind(file: str, accept: Optional[str]) -> Tuple[str, str]:
    """(the binding as indented JSON, a line saying what was done)."""
    addr = resolve(file)
    require_exists(addr)
    check_event_file(addr)
    recorded = trusted.latest(addr.path)
    try:
        current = parse_binding(addr)
    except UsageError:
        current = None  # unreadable: only a record can take its place
    if accept is not None:
        return _accept(addr, accept, [b for b in (current, (recorded or {}).get("binding")) if b is not None])
    if recorded is not None and recorded.get("path") == addr.path:
        binding: Dict[str, Any] = recorded["binding"]
        if current is not None and trusted.canonical(current) == trusted.canonical(binding):
            trusted.check(addr.path, binding, addr.binding)  # refreshes a record found by the path only
            return shown(binding), "%s is the binding recorded for %s (generation %d): nothing to do" % (
                addr.binding, addr.path, recorded["generation"])
        _write(addr, binding)
        return shown(binding), "restored the binding recorded for %s in %s (generation %d)" % (
            addr.path, trusted.state_dir(), recorded["generation"])
    if recorded is not None:
        candidate, where = recorded["binding"], "the binding recorded for this file as %s" % recorded.get("path")
    elif current is not None:
        candidate, where = current, "its binding.json"
    else:
        raise UsageError("nothing to rebind: %s is missing or unreadable and %s holds no record of %s; put a "
                         "binding.json back (from a backup) and run rebind again, or start a new event file"
                         % (addr.binding, trusted.state_dir(), addr.path))
    return shown(candidate), (
        "%s holds no binding of %s under this name; above is %s: check every field (adapter, agent, cwd, mode, "
        "rules, hooks, limits) and, if it is yours, take it with: harnessctl rebind %s --accept %s"
        % (trusted.state_dir(), addr.path, where, addr.path, trusted.fingerprint(candidate)))


def _accept(addr: Address, accept: str, candidates: List[Dict[str, Any]]) -> Tuple[str, str]:
    """Record and write the candidate `rebind` showed, if it still has that fingerprint."""
    for binding in candidates:
        if trusted.fingerprint(binding) == accept:
            _write(addr, binding)
            return shown(binding), "recorded this binding for %s" % addr.path
    raise UsageError("%s is not the fingerprint of a binding rebind shows for %s now: run `harnessctl rebind %s` "
                     "again and read what it shows" % (accept, addr.path, addr.path))


def _write(addr: Address, binding: Dict[str, Any]) -> None:
    """Record `binding` as the file's latest, then write it into the sidecar."""
    make_sidecar(addr)
    try:
        write_binding(addr, binding)
    except OSError as e:
        raise private.cannot("write", addr.binding, e) from None


def shown(binding: Dict[str, Any]) -> str:
    """Indented JSON, ASCII only: whatever an agent wrote there reaches the
    terminal as escapes, never as control characters."""
    import json

    return json.dumps(binding, indent=2, sort_keys=True)
