"""`harnessctl fork FILE NEWFILE [--cwd DIR]`: a new session that continues
FILE's conversation, with FILE's binding (a new cwd allowed).

No runtime is involved.  The command only prepares NEWFILE: its binding (the
source's), a copy of the source's conversation handle (the file the
adapter's backend names in RESUME_FILE) as NEWFILE.d/fork-RESUME_FILE, and
its first line, a `log` of kind `forked` saying from where.  The harness
forks at NEWFILE's first start, natively (docs/PROTOCOL-COMMANDS.md section 22).
Every refusal comes before anything is written, and FILE and FILE.d are only
ever read.
"""

from __future__ import annotations

import os
import time

from .errors import StateError, UsageError
from .store.address import check_event_file, require_exists, resolve

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from .store.address import Address

FORK_PREFIX = "fork-"  # NEWFILE.d/fork-RESUME_FILE: what the backend forks from (ChildBackend.load_fork)
BUSY = {"running": "has a run going: wait for it, then fork",
        "cancelling": "has a run going: wait for it, then fork",
        "awaiting_reply": "has a request waiting for a reply: reply (or cancel), then fork"}


class Source:
    """What is forked: FILE's binding, its handle's name and text, the seq of
    its last line and the count of its inputs when it was read."""

    __slots__ = ("addr", "binding", "resume_file", "handle", "seq", "inputs")

    def __init__(self, addr: Address, binding: Dict[str, Any], resume_file: str, handle: str, seq: int,
                 inputs: int) -> None:
        self.addr, self.binding, self.resume_file, self.handle = addr, binding, resume_file, handle
        self.seq, self.inputs = seq, inputs


def fork(file: str, new_file: str, cwd: Optional[str] = None, worktree: bool = False) -> Tuple[str, Optional[str]]:
    """Make NEWFILE a fork of FILE: the output line ({"file", "forked_from",
    "seq"}, paths as given) and a warning to show, or None.  With
    `worktree`, NEWFILE works in a worktree of its own that starts with
    FILE's files as they are now (worktree.fork)."""
    from .commands import json_string

    if cwd is not None and worktree:
        raise UsageError("--cwd and --worktree both say where the fork works: give one")
    addr = resolve(file)
    require_exists(addr)
    check_event_file(addr)
    new = resolve(new_file)
    binding = _bound(addr, file)
    _require_new(new, new_file)
    resume_file = _resume_file(binding)
    if cwd is not None:
        from .binding import real_dir

        binding = dict(binding, cwd=real_dir(cwd))
        _check_hooks(binding)
    source = _read_source(addr, file, binding, resume_file)
    if worktree:
        _write_in_tree(new, new_file, source)
    else:
        _write(new, new_file, source)
    from .store.trusted import inside_workspace

    line = '{"file":%s,"forked_from":%s,"seq":%d}' % (json_string(new_file), json_string(file), source.seq)
    return line, inside_workspace(new.path, source.binding["cwd"])


def _write_in_tree(new: Address, new_file: str, source: Source) -> None:
    """NEWFILE written with a worktree of its own, made once every check
    passed, and removed again when NEWFILE cannot be written."""
    from . import worktree
    from .store.address import check_root

    cwd, name = source.binding["cwd"], worktree.named(new.path)
    check_root(worktree.planned(cwd, name), "worktree")
    tree = worktree.fork(cwd, name)
    source.binding = dict(source.binding, worktree=tree.as_dict(), cwd=worktree.cwd_in(tree, cwd))
    try:
        _write(new, new_file, source)
    except BaseException:
        worktree.remove(tree, True)
        raise


# -- the checks: nothing is written before all of them passed -----------------


def _bound(addr: Address, file: str) -> Dict[str, Any]:
    """FILE's binding (trusted: bindingfile.read_binding), refused when it has none."""
    from .store.bindingfile import read_binding

    binding = read_binding(addr)
    if binding is None:
        raise StateError("%s has no conversation to fork (nothing was sent to it)" % file)
    return binding


def _require_new(new: Address, new_file: str) -> None:
    """NEWFILE must not exist, nor be bound: fork makes a new session."""
    if os.path.lexists(new.path) or os.path.lexists(new.binding):
        raise UsageError("%s exists: fork makes a new event file; give a path that does not exist" % new_file)
    if not os.path.isdir(os.path.dirname(new.path)):
        raise UsageError("directory of the event file does not exist: %s" % os.path.dirname(new.path))


def _resume_file(binding: Dict[str, Any]) -> str:
    """The name of the bound adapter's conversation handle, once its manifest
    (with `agents`: the bound preset) claims `fork`."""
    from .checks.claims import claims
    from .store import registry

    manifest = registry.manifest(str(binding["adapter"]))
    who, words = claims(manifest, binding.get("agent"))
    if "fork" not in words:
        presets = manifest.get("agents")
        preset = presets.get(binding.get("agent")) if isinstance(presets, dict) else None
        degraded = preset.get("degraded") if isinstance(preset, dict) else None
        why = degraded.get("fork") if isinstance(degraded, dict) else None
        raise UsageError("%s cannot fork: %s" % (who, why or "no test proved that it can (its manifest does not "
                                                               "claim fork)"))
    name = getattr(registry.backend_class(str(binding["adapter"])), "RESUME_FILE", None)
    if not (isinstance(name, str) and name and "/" not in name):
        raise UsageError("%s claims fork but its backend names no RESUME_FILE (docs/ADAPTERS.md)" % who)
    return name


def _check_hooks(binding: Dict[str, Any]) -> None:
    """A hook bound outside FILE's cwd may lie inside the new one, where the
    agent could rewrite it: refused as a send refuses it."""
    from .checks.hooks import check_reach
    from .fields import HOOKS

    for field in HOOKS:
        if binding.get(field.name):
            check_reach(binding[field.name], binding["cwd"], "%s (bound to the forked file)" % field.flag)


def _read_source(addr: Address, file: str, binding: Dict[str, Any], resume_file: str) -> Source:
    """FILE as it stands: idle (no run, no open input, no pending request),
    with a conversation handle, and the seq of its last line."""
    from .store import private
    from .store.bindingfile import never_sent

    if never_sent(addr):
        raise StateError("%s has no conversation to fork yet (no send to it was ever accepted)" % file)
    state = _state(addr)
    if state in BUSY:
        raise StateError("%s %s" % (file, BUSY[state]))
    path = os.path.join(addr.sidecar, resume_file)
    handle = private.read_text(path) if os.path.isdir(addr.sidecar) else None
    if not handle:
        raise StateError("%s has no conversation to fork yet (no run ever started: %s is missing)" % (file, path))
    from .eventfile import snapshot

    conv = snapshot.load(addr)[0]
    return Source(addr, binding, resume_file, handle, conv.seq, conv.inputs_seen)


def _state(addr: Address) -> str:
    """FILE's state as `status` shows it: its live runtime's word, else the
    fold's, where work a lost runtime left open counts as ended (the next
    writer records it failed).  Nothing is written to FILE."""
    import json

    from .client import ask, timeout_seconds

    deadline = time.monotonic() + timeout_seconds()
    return str(json.loads(ask(addr, ["status"], deadline, True, lambda: _stopped_status(addr))).get("state"))


def _stopped_status(addr: Address) -> str:
    """The status line's state without a runtime, read from the file alone."""
    import json

    from .eventfile import snapshot
    from .eventfile.state import LOST, close_open_work

    conv = snapshot.load(addr)[0]
    for event in close_open_work(conv, LOST):
        conv.apply(event, unwritten=True)
    return json.dumps({"state": conv.status()["state"]})


# -- NEWFILE ---------------------------------------------------------------------


def _write(new: Address, new_file: str, source: Source) -> None:
    """NEWFILE's sidecar, fork file and binding, then its first line, under
    its spawn lock (a first send to NEWFILE meanwhile waits, then finds it
    bound).  What this made is taken back when a step fails."""
    from .client import timeout_seconds
    from .store import locks, private
    from .store.bindingfile import write_binding

    made: List[str] = [new.sidecar] if private.make_dir(new.sidecar) else []
    spawn = locks.wait_lock(new.spawn_lock, time.monotonic() + timeout_seconds())
    fd = None
    try:
        if spawn is None:
            raise UsageError("%s is being set up by another command: nothing was forked" % new_file)
        if not made:
            from .spawn import clear_foreign

            clear_foreign(new)  # a left-over sidecar: nothing planted there reaches the fork's first run
        try:
            fd = os.open(new.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600)
        except FileExistsError:
            raise UsageError("%s exists: fork makes a new event file; give a path that does not exist"
                             % new_file) from None
        made.append(new.path)
        locks.lock_fd(fd)
        fork_file = os.path.join(new.sidecar, FORK_PREFIX + source.resume_file)
        made.append(fork_file)
        private.write_atomic(fork_file, source.handle, sync=True)
        made.append(new.binding)
        write_binding(new, source.binding)
        _first_line(fd, new, source)
    except OSError as e:
        _take_back(new, made)
        raise private.cannot("create the fork", new.path, e) from None
    except BaseException:
        _take_back(new, made)
        raise
    finally:
        if fd is not None:
            os.close(fd)
        locks.unlock(spawn)


def _first_line(fd: int, new: Address, source: Source) -> None:
    """`{"type":"log",...,"seq":1,"level":"info","kind":"forked","from":PATH,
    "from_seq":N,"inputs":K}`, fsynced: N is the seq of FILE's last line, K
    the inputs FILE had taken (eventfile.lineage.moved_on compares it)."""
    from .eventfile.eventlog import EventLog

    log = EventLog(os.dup(fd), new.path, 0)
    try:
        log.append({"type": "log", "level": "info", "kind": "forked", "from": source.addr.path,
                    "from_seq": source.seq, "inputs": source.inputs})
    finally:
        log.close()


def _take_back(new: Address, made: List[str]) -> None:
    """Remove what a fork that failed made (`made`: the paths, in the order
    made), so that nothing of it looks like a session; a sidecar it made
    goes too, with its lock, when nothing else is in it."""
    for path in reversed(made):
        try:
            if path == new.sidecar:
                for name in os.listdir(path):
                    if name == "spawn.lock" or name.endswith(".tmp"):
                        os.unlink(os.path.join(path, name))
                os.rmdir(path)
            else:
                os.unlink(path)
        except OSError:
            pass
