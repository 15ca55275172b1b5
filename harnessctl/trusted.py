"""What an agent that may edit its workspace can never change: the bindings
the user made, and the files the ACP client file system never touches.

A session's sidecar lies beside its event file, and that is often inside the
workspace an agent may write (`cd repo && harnessctl send fix.jsonl ...`).
Its binding.json names the adapter and the agent command a runtime executes,
so it is acted on only when the user's state directory, outside every
workspace, holds a record of exactly that binding, which only a harnessctl
command writes.  A record is named by a hash of the binding's canonical text:
a sidecar that is renamed or copied with its event file stays bound, and an
agent that rewrites binding.json can at most swap in another binding this
user made.  The sidecar's cache of the fold (state.json) changes all the
time, so it is sealed instead: a keyed hash under a secret kept beside the
records (`seal`).  Stdlib only; `_blake2` is hashlib's own BLAKE2, imported without
the OpenSSL module that `import hashlib` loads (~4 ms per command).
"""

from __future__ import annotations

import os

from . import private
from .errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from hashlib import blake2b
    from typing import Any, Dict, Optional, Type


def state_dir() -> str:
    """`$XDG_STATE_HOME/harnessctl`, by default `~/.local/state/harnessctl`
    (the passwd entry's home when HOME is unset, as for some cron jobs)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative value is ignored
        home = os.environ.get("HOME", "")
        if not os.path.isabs(home):
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        base = os.path.join(home, ".local", "state")
    return os.path.join(base, "harnessctl")


def _blake2b() -> Type[blake2b]:
    """hashlib's BLAKE2b class, without loading OpenSSL."""
    try:
        from _blake2 import blake2b
    except ImportError:  # an interpreter without it: the same hash, through hashlib
        from hashlib import blake2b
    return blake2b


def record_path(binding: Dict[str, Any]) -> str:
    digest = _blake2b()(canonical(binding).encode("utf-8"), digest_size=20).hexdigest()
    return os.path.join(state_dir(), "bindings", digest + ".json")


def canonical(binding: Dict[str, Any]) -> str:
    import json

    return json.dumps(binding, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def record(binding: Dict[str, Any]) -> None:
    """Record `binding` as one the user made (before it is written to a sidecar)."""
    path, text = record_path(binding), canonical(binding) + "\n"
    if _read_record(path) == text:
        return
    _make_state_dir(os.path.dirname(path))
    try:
        private.write_atomic(path, text, sync=True)
    except OSError as e:
        raise private.cannot("record the binding in", path, e) from None


def _make_state_dir(sub: str) -> None:
    """The state directory and `sub` in it, 0700 and ours."""
    top = state_dir()
    try:
        os.makedirs(os.path.dirname(top), 0o700, exist_ok=True)
    except OSError as e:
        raise private.cannot("create the state directory", os.path.dirname(top), e) from None
    private.make_dir(top)
    if sub != top:
        private.make_dir(sub)


# -- sealing what a sidecar caches ------------------------------------------------------------------


def seal(text: str, create: bool = False) -> Optional[str]:
    """A keyed hash of `text` under the user's secret in the state directory,
    for a cache kept in a sidecar (state.json): a copy an agent forged is
    told apart and ignored.  None when there is no key (and `create` is
    False, or it cannot be made)."""
    key = _key(create)
    if key is None:
        return None
    return _blake2b()(text.encode("utf-8", "surrogateescape"), key=key, digest_size=16).hexdigest()


def _key(create: bool) -> Optional[bytes]:
    path = os.path.join(state_dir(), "key")
    try:
        text = private.read_text(path)
        if text is None and create:
            _make_key(path)
            text = private.read_text(path)
        return bytes.fromhex(text) if text is not None and len(text) == 64 else None
    except (OSError, ValueError, UsageError):
        return None


def _make_key(path: str) -> None:
    """32 random bytes, hex, created whole or not at all (link() of a finished
    file fails if a concurrent command made the key first: theirs is kept)."""
    _make_state_dir(state_dir())
    tmp = "%s.%d.tmp" % (path, os.getpid())
    private.write_atomic(tmp, os.urandom(32).hex(), sync=True)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)


def is_recorded(binding: Dict[str, Any]) -> bool:
    """Whether a harnessctl command recorded exactly this binding."""
    return _read_record(record_path(binding)) == canonical(binding) + "\n"


def _read_record(path: str) -> Optional[str]:
    try:
        return private.read_text(path)
    except OSError:
        return None


# -- what the ACP client file system never reaches ------------------------------------------------


def refuse_agent_access(real: str) -> None:
    """Raise PermissionError when the real path `real` is one of harnessctl's
    own files: an event file, a sidecar or anything in it, the socket
    directory under /tmp, or the state directory holding the records."""
    from .address import fallback_socket_dir

    for private_dir in (state_dir(), fallback_socket_dir()):
        if _within(real, os.path.realpath(private_dir)):
            raise PermissionError("%s is harnessctl's own directory; agents may not use it" % real)
    if os.path.lexists(os.path.join(real + ".d", "binding.json")):
        raise PermissionError("%s is a harnessctl event file; agents may not use it" % real)
    parent = real
    while parent != os.path.dirname(parent):
        if parent.endswith(".d") and os.path.lexists(os.path.join(parent, "binding.json")):
            raise PermissionError("%s is in harnessctl's sidecar %s; agents may not use it" % (real, parent))
        parent = os.path.dirname(parent)


def is_session_file(st: os.stat_result, sidecar: str) -> bool:
    """Whether `st` is the event file of `sidecar` or a file in it, under
    any name (a hard link the agent made)."""
    try:
        names = [sidecar[:-len(".d")]] + [os.path.join(sidecar, name) for name in os.listdir(sidecar)]
    except OSError:
        names = [sidecar[:-len(".d")]]
    for name in names:
        try:
            other = os.lstat(name)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def inside_workspace(event_path: str, cwd: Optional[str]) -> Optional[str]:
    """The warning for an event file, or the state directory, inside the bound
    working directory, where an agent that may edit files can change them
    (docs/OPERATIONS.md, Security: where to keep them); None when both lie elsewhere."""
    if cwd is None:
        return None
    if _within(event_path, cwd):
        return ("the event file %s lies inside the working directory %s: an agent that may edit files there "
                "can rewrite or cut its record; keep event files outside the workspace (see "
                "docs/OPERATIONS.md, Security)" % (event_path, cwd))
    if _within(os.path.realpath(state_dir()), cwd):
        return ("harnessctl's state directory %s lies inside the working directory %s: an agent that may "
                "edit files there could record a binding of its own; set XDG_STATE_HOME outside the workspace"
                % (state_dir(), cwd))
    return None


def refusal(path: str) -> UsageError:
    return UsageError(
        "refusing binding %s: harnessctl has no record of it (it was changed outside harnessctl, for "
        "example by an agent in the workspace, or written by an older harnessctl); check it, remove it "
        "and send again with --adapter" % path)
