"""What an agent that may edit its workspace can never change: the bindings
the user made, and the files the ACP client file system never touches.

A session's sidecar lies beside its event file, and that is often inside the
workspace an agent may write (`cd repo && harnessctl send fix.jsonl ...`).
Its binding.json names the adapter, the agent command, the policy, the hooks
and the budget, so it is acted on only when it equals the latest record of
THIS file in the user's state directory, outside every workspace, which only
a harnessctl command writes.  A record names its file twice: by the event
file's device and inode (it follows a `mv` of the session, and hard links)
and by its real path (it survives a restore from a backup, or device numbers
that change at boot); the inode's record wins.  Each holds the whole binding
and a generation, bumped whenever the binding changes (a budget raised), so an
agent can neither drop the binding, nor write back an earlier one, nor swap
in another session's.  The sidecar's cache of the fold (state.json) changes
all the time, so it is sealed instead: a keyed hash under a secret kept beside
the records (`seal`).  Stdlib only; `_blake2` is hashlib's own BLAKE2,
imported without the OpenSSL module that `import hashlib` loads (~4 ms per command).
"""

from __future__ import annotations

import os

from ..errors import HarnessctlError, UsageError
from . import private

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from hashlib import blake2b
    from typing import Any, Dict, List, Optional, Tuple, Type


def state_dir() -> str:
    """`~/.local/state/harnessctl` under the passwd entry's home, whatever HOME
    and XDG_STATE_HOME say: a cron job without the profile and an interactive
    shell find the same records.  HARNESSCTL_STATE_DIR (absolute) replaces it,
    for tests and for a user who sets it everywhere harnessctl runs."""
    explicit = os.environ.get("HARNESSCTL_STATE_DIR")
    if explicit is not None:
        if not os.path.isabs(explicit):
            raise UsageError("HARNESSCTL_STATE_DIR must be an absolute path, not %r" % explicit)
        return explicit
    import pwd

    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:  # a uid without a passwd entry (some containers): the home we were given
        home = os.environ.get("HOME", "/")
    return os.path.join(home, ".local", "state", "harnessctl")


def blake2() -> Type[blake2b]:
    """hashlib's BLAKE2b class, without loading OpenSSL."""
    try:
        from _blake2 import blake2b
    except ImportError:  # an interpreter without it: the same hash, through hashlib
        from hashlib import blake2b
    return blake2b


def canonical(binding: Dict[str, Any]) -> str:
    import json

    return json.dumps(binding, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(binding: Dict[str, Any]) -> str:
    """A short hash of the binding's canonical text: `rebind --accept` takes
    exactly the binding it showed, not one written meanwhile."""
    return blake2()(canonical(binding).encode("utf-8"), digest_size=8).hexdigest()


# -- the records: the latest binding of each file ----------------------------------------------------


def _record_names(path: str, st: Optional[os.stat_result]) -> List[str]:
    """The record of the file's inode (when it exists), then that of its path."""
    records = os.path.join(state_dir(), "sessions")
    digest = blake2()(os.fsencode(path), digest_size=20).hexdigest()
    names = [os.path.join(records, "path-%s.json" % digest)]
    if st is not None:
        names.insert(0, os.path.join(records, "inode-%d-%d.json" % (st.st_dev, st.st_ino)))
    return names


def _stat(path: str) -> Optional[os.stat_result]:
    try:
        return os.stat(path)
    except OSError:
        return None


def latest(path: str) -> Optional[Dict[str, Any]]:
    """The latest record of the event file `path` ({"path", "dev", "ino",
    "generation", "binding"}), or None when the state directory holds none.
    The inode's record wins, except over an empty file that it names under
    another path: inode numbers are reused, and the record of a deleted file
    must not judge a new one (a session that moved has events)."""
    st = _stat(path)
    names = _record_names(path, st)
    if st is not None:
        found = _load(names.pop(0))
        if found is not None and (st.st_size > 0 or found.get("path") == path):
            return found
    return _load(names[0])


def _load(name: str) -> Optional[Dict[str, Any]]:
    import json

    try:
        text = private.read_text(name)
        found = json.loads(text) if text is not None else None
    except (OSError, ValueError, UsageError):
        return None
    if (isinstance(found, dict) and isinstance(found.get("binding"), dict)
            and type(found.get("generation")) is int):
        return found
    return None


def record(path: str, binding: Dict[str, Any]) -> None:
    """Record `binding` as the latest of the event file `path` (before it is
    written to the sidecar); the generation goes up when it differs."""
    import json

    st = _stat(path)
    current = latest(path)
    same = current is not None and canonical(current["binding"]) == canonical(binding)
    if same and _names_file(current or {}, path, st):
        return
    generation = 1 if current is None else current["generation"] + (0 if same else 1)
    text = json.dumps({"path": path, "dev": st.st_dev if st else None, "ino": st.st_ino if st else None,
                       "generation": generation, "binding": binding}, sort_keys=True) + "\n"
    names = _record_names(path, st)
    make_state_dir(os.path.dirname(names[0]))
    for name in names:
        try:
            private.write_atomic(name, text, sync=True)
        except OSError as e:
            raise private.cannot("record the binding in", name, e) from None


def records() -> List[Tuple[str, Dict[str, Any]]]:
    """Every record in the state directory: (its file, the record), a
    file's inode record and its path record each (prune reads them)."""
    folder = os.path.join(state_dir(), "sessions")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for name in names:
        loaded = _load(os.path.join(folder, name)) if name.endswith(".json") else None
        if loaded is not None and isinstance(loaded.get("path"), str):
            found.append((os.path.join(folder, name), loaded))
    return found


def forget(path: str) -> None:
    """Drop every record of the event file `path` (prune): its binding is
    never trusted again, so the file may never be used again either."""
    for name, found in records():
        if found["path"] == path:
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass
            except OSError as e:
                raise private.cannot("remove the record", name, e) from None


def check(path: str, binding: Dict[str, Any], shown: str) -> None:
    """Refuse (UsageError) a binding.json (`shown`) that is not the latest
    binding recorded for the event file `path`.  A file bound before records
    were kept per file is taken over once, when the binding has a record of
    the old kind (named by its content)."""
    current = latest(path)
    if current is None:
        if _old_record_exists(binding):
            record(path, binding)
            return
        raise refusal(path, shown, None)
    if canonical(current["binding"]) != canonical(binding):
        raise refusal(path, shown, current["generation"])
    if not _names_file(current, path, _stat(path)):
        try:
            record(path, binding)  # moved (found by its inode), or replaced or renumbered (found by its path)
        except HarnessctlError:
            pass  # best effort: the binding is trusted either way


def _names_file(found: Dict[str, Any], path: str, st: Optional[os.stat_result]) -> bool:
    """Whether a record names the file `path` is now (and `st`, if it exists)."""
    return found.get("path") == path and (st is None or (found.get("dev"), found.get("ino")) == (st.st_dev, st.st_ino))


def _old_record_exists(binding: Dict[str, Any]) -> bool:
    """Whether a harnessctl before per-file records recorded this binding
    (bindings/<hash of its canonical text>.json)."""
    text = canonical(binding)
    digest = blake2()(text.encode("utf-8"), digest_size=20).hexdigest()
    try:
        return private.read_text(os.path.join(state_dir(), "bindings", digest + ".json")) == text + "\n"
    except (OSError, UsageError):
        return False


def refusal(path: str, shown: str, generation: Optional[int]) -> UsageError:
    """What happened and how to get the file back with its policy."""
    if generation is None:
        what = ("harnessctl has no record of it in %s (that state directory was deleted or is another one, "
                "the session was copied, or binding.json was changed by hand or by an agent); "
                "`harnessctl rebind %s` shows it and records it again, policy included, once you accept it"
                % (state_dir(), path))
    else:
        what = ("harnessctl has no record of it as this file's latest binding (generation %d in %s): an "
                "earlier binding or another session's was written back, by hand or by an agent; "
                "`harnessctl rebind %s` restores the recorded one" % (generation, state_dir(), path))
    return UsageError("refusing binding %s: %s" % (shown, what))


def missing(path: str, shown: str) -> UsageError:
    """A file with events whose binding.json is gone: never bound anew."""
    return UsageError("%s has events but no binding (%s is missing), and harnessctl never binds a used file anew: "
                      "`harnessctl rebind %s` restores the binding recorded in %s" % (path, shown, path, state_dir()))


def make_state_dir(sub: str) -> None:
    """The state directory and `sub` in it, 0700 and ours."""
    top = state_dir()
    try:
        os.makedirs(os.path.dirname(top), 0o700, exist_ok=True)
    except OSError as e:
        error = private.cannot("create the state directory", os.path.dirname(top), e)
        raise type(error)("%s (a home you cannot write: set HARNESSCTL_STATE_DIR to a directory of yours, "
                          "in every environment harnessctl runs in)" % error) from None
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
    return blake2()(text.encode("utf-8", "surrogateescape"), key=key, digest_size=16).hexdigest()


def runtime_proof(create: bool = False) -> str:
    """What a command shows a runtime to be answered (ipc.encode_request): a
    keyed hash only a process that can read the key can make; "" without a key."""
    return seal("harnessctl runtime proof", create) or ""


def _key_path() -> str:
    return os.path.join(state_dir(), "key")


def _key(create: bool) -> Optional[bytes]:
    """The key; a key file with a second name (a hard link someone made, say
    inside a workspace where an agent reads it) is never used: it is removed
    and a new one made, and seals made with the old key no longer match."""
    path = _key_path()
    try:
        text, st = _read_key(path)
        if st is not None and st.st_nlink != 1:
            _drop(path, st)
            text = None
        if text is None and create:
            _make_key(path)
            text, st = _read_key(path)
            if st is None or st.st_nlink != 1:
                return None
        return bytes.fromhex(text) if text is not None and len(text) == 64 else None
    except (OSError, ValueError, UsageError):
        return None


def _read_key(path: str) -> Tuple[Optional[str], Optional[os.stat_result]]:
    try:
        fd = private.open_file(path, os.O_RDONLY, "key")
    except FileNotFoundError:
        return None, None
    with os.fdopen(fd, "rb") as f:
        return f.read().decode("ascii", "replace"), os.fstat(f.fileno())


def _drop(path: str, st: os.stat_result) -> None:
    """Remove `path` if it is still the file `st` (a concurrent command may have replaced it)."""
    try:
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            os.unlink(path)
    except FileNotFoundError:
        pass


def _make_key(path: str) -> None:
    """32 random bytes, hex, written whole under a temporary name and renamed
    into place (one name at every moment: a reader never sees a second link).
    Commands that race each make one and the last wins: a seal made with a
    key that lost no longer matches, and its cache is rebuilt from the file."""
    make_state_dir(state_dir())
    private.write_atomic(path, os.urandom(32).hex(), sync=True)


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
                "edit files there could record a binding of its own; set HARNESSCTL_STATE_DIR outside the workspace"
                % (state_dir(), cwd))
    return None
