"""The box of a `--sandbox` session: what its agent, and every process the
agent starts, may write and read, as a Landlock ruleset (landlock.py).

It may write beneath the bound cwd, the session's own box folder (its
TMPDIR, and the state folder of any harnessctl it runs itself), the folders
its own program needs (the manifest's `sandbox_writes`: codex's
`$CODEX_HOME`, `~/.claude`, ...), a few device files, and what the user adds
with `--sandbox-write`.  It may read and run everything else, except the
denied paths: harnessctl's state folder (the records, the seal key, the
runtimes' proof), every session's box folder, and the event file and sidecar
of this and of every recorded session.

Landlock only grants, so "everything except" is built by granting each
entry of each folder on the way down to a denied path, and nothing to the
folders on the way themselves: a file made in one of them later cannot be
read.  Names can be listed everywhere, the denied folders' too (never a
file's content): a harnessctl the agent runs builds its own box inside this
one from those listings.  A denied path beneath a folder the agent may
write could not be kept from it: that is refused (exit 2), never boxed loosely.
"""

from __future__ import annotations

import os

from .errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

    from .landlock import Ruleset

# The device files every program may write (and /dev/pts, /dev/shm beneath).
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm")


def folder(event_path: str) -> str:
    """The session's box folder: beside the state folder (never inside it, nor
    in the sidecar, both of which the agent may not read), one per event file."""
    from .store.trusted import blake2, state_dir

    top = state_dir()
    digest = blake2()(os.fsencode(event_path), digest_size=12).hexdigest()
    return os.path.join(top + "-boxes", digest)


def declared(manifest: Dict[str, Any], agent: Optional[str], env: Dict[str, str]) -> List[str]:
    """The folders (a trailing /) and files the agent's own program writes, as
    the adapter's manifest and the agent's preset declare them, `~` and `$NAME`
    expanded in the agent's environment; an entry whose variable is unset is skipped."""
    entries = list((manifest.get("harness") or {}).get("sandbox_writes") or [])
    presets = manifest.get("agents")
    if isinstance(presets, dict) and isinstance(presets.get(agent), dict):
        entries += presets[agent].get("sandbox_writes") or []
    found = []
    for entry in entries:
        if not isinstance(entry, str):
            continue  # the registry's check of the manifest says so
        if entry.startswith("$"):
            name, _, rest = entry[1:].partition("/")
            if not env.get(name):
                continue
            entry = env[name] + ("/" + rest if rest else "/")
        elif entry.startswith("~/"):
            entry = os.path.join(env.get("HOME") or os.path.expanduser("~"), entry[2:])
        found.append(entry)
    return found


def check_binding(event_path: str, binding: Dict[str, Any]) -> Optional[str]:
    """For the send that binds a file: a box this machine cannot make, or
    one that could not keep this session's files or the state folder from the
    agent, is refused (exit 2) before anything starts; the warning of `--mode
    full` without a box.  Other sessions' files are the runtime's to check
    (Box(others=True)), before the harness starts: a send need not read every record."""
    if not binding.get("sandbox"):
        if binding.get("mode") == "full":
            return ("--mode full without --sandbox: the agent may run anything, anywhere you can write "
                    "(docs/OPERATIONS.md, \"The box\")")
        return None
    from .landlock import why_not
    from .store import registry

    reason = why_not()
    if reason is not None:
        raise UsageError(reason)
    manifest = registry.manifest(binding["adapter"])
    Box(event_path, binding["cwd"], binding.get("sandbox_write") or [],
        declared(manifest, binding.get("agent"), dict(os.environ)), others=False, git=git_folders(binding)).check()
    return None


class Box:
    """The box of one session: `check()` refuses what cannot be boxed,
    `env()` is what the agent's environment gains, `ruleset()` the Landlock
    ruleset its process enters."""

    def __init__(self, event_path: str, cwd: str, writes: Iterable[str], agent_writes: Iterable[str],
                 others: bool = True, git: Iterable[str] = ()) -> None:
        """`others`: deny the recorded sessions' files too (read from the state folder);
        `git`: the git folders a worktree session commits through (git_folders)."""
        from .store.trusted import state_dir

        self.event_path = event_path
        self.folder = folder(event_path)
        self.state = os.path.realpath(state_dir())
        self.cwd = cwd
        self.user_writes = [os.path.realpath(path) for path in writes]
        self.agent_writes = list(agent_writes)
        self.git_writes = list(git)
        self.denied = _denied(self.state, event_path, others)

    def env(self) -> Dict[str, str]:
        """A TMPDIR of its own, and the state folder of a harnessctl the agent
        runs itself: both in the box folder, so a nested session works inside
        the box.  IS_SANDBOX=1 tells Claude Code (and claude-agent-acp) the
        truth: as root they refuse bypassPermissions outside a sandbox."""
        return {"TMPDIR": os.path.join(self.folder, "tmp"), "HARNESSCTL_STATE_DIR": os.path.join(self.folder, "state"),
                "IS_SANDBOX": "1"}

    def writable(self) -> List[Tuple[str, str]]:
        """(what, real path) of each place the agent may write."""
        places = [("the cwd", self.cwd)] + [("--sandbox-write", path) for path in self.user_writes]
        places += [("the worktree's git folder", path) for path in self.git_writes]
        return places + [("the agent's own %s" % path, os.path.realpath(path)) for path in self.agent_writes]

    def check(self) -> None:
        """Refuse (exit 2) a box that could not keep a denied path from the
        agent: one beneath a place it may write, or a place it may write
        inside harnessctl's state folder."""
        for what, place in self.writable():
            for denied in self.denied:
                if _within(denied, place):
                    raise UsageError("--sandbox: %s %s holds %s, which the agent must neither read nor write; "
                                     "keep event files and harnessctl's state outside the folders it may write"
                                     % (what, place, denied))
                if _within(place, denied):
                    raise UsageError("--sandbox: %s %s lies inside %s, which the agent must neither read nor "
                                     "write" % (what, place, denied))

    def _make_folders(self) -> None:
        """The box folder, its TMPDIR and state folder, each 0700 and ours (the
        folder of all boxes too: their names are no one else's business)."""
        from .store.private import make_dir

        boxes = os.path.dirname(self.folder)
        os.makedirs(os.path.dirname(boxes), exist_ok=True)
        for path in (boxes, self.folder, *(self.env()[name] for name in ("TMPDIR", "HARNESSCTL_STATE_DIR"))):
            make_dir(path)

    def ruleset(self) -> Ruleset:
        """The ruleset, built now (folders the agent's program needs are made
        first, 0700): read everywhere but the denied paths, write where `writable` says."""
        from .landlock import ALL, READ, READ_DIR, Ruleset

        self.check()
        self._make_folders()
        for path in self.agent_writes:
            if path.endswith("/"):
                os.makedirs(path, mode=0o700, exist_ok=True)
        ruleset = Ruleset()
        try:
            _grant(ruleset, "/", READ_DIR)  # names everywhere (a box inside this one needs them), no content
            kept = _identities(self.denied + sorted(_ancestors(self.denied)))
            for path, symlink in _readable(self.denied):
                _grant(ruleset, path, READ, self.denied if symlink else None, kept)
            for _, place in self.writable():  # checked again as opened: it may have changed since check()
                _grant(ruleset, place, ALL, self.denied)
            for path in (self.folder,) + DEVICES:
                _grant(ruleset, path, ALL)
        except BaseException:
            ruleset.close()
            raise
        return ruleset


def git_folders(binding: Dict[str, Any]) -> List[str]:
    """What a boxed session with a worktree writes to commit on its branch:
    the worktree's own folder in the repository (its HEAD, index, logs),
    the objects, and the folders of the harnessctl/* branches and their
    logs; never the repository's config, hooks, or any other branch.  Found
    from the recorded repository, never from the worktree's `.git` file,
    which the agent writes.  Git's folders that do not exist are left out."""
    tree = binding.get("worktree")
    if not isinstance(tree, dict):
        return []
    from .worktree import Worktree

    common, path = Worktree.from_dict(tree).repo, tree["path"]
    found = [os.path.join(common, *parts) for parts in (("objects",), ("refs", "heads", "harnessctl"),
                                                          ("logs", "refs", "heads", "harnessctl"))]
    admin = os.path.join(common, "worktrees")
    for name in sorted(os.listdir(admin)) if os.path.isdir(admin) else []:
        try:
            with open(os.path.join(admin, name, "gitdir")) as f:
                if f.read().rstrip("\n") == os.path.join(path, ".git"):
                    found.append(os.path.join(admin, name))
        except OSError:
            continue
    return [folder for folder in found if os.path.isdir(folder)]


def _denied(state: str, event_path: str, others: bool) -> List[str]:
    """harnessctl's state folder, every box folder, and the event file and
    sidecar of this session and (`others`) of each one the state folder records."""
    paths = {state, state + "-boxes", event_path, event_path + ".d"}  # denied whether they exist yet or not
    for other in _recorded_sessions(state) if others else []:
        paths.update(path for path in (other, other + ".d") if os.path.lexists(path))
    return sorted(paths)


def _recorded_sessions(state: str) -> List[str]:
    """The event files the state folder holds a record of (by path)."""
    import json

    found: List[str] = []
    try:
        names = os.listdir(os.path.join(state, "sessions"))
    except OSError:
        return found
    for name in names:
        if name.startswith("path-") and name.endswith(".json"):
            try:
                with open(os.path.join(state, "sessions", name), "rb") as f:
                    path = json.loads(f.read(1 << 20)).get("path")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(path, str) and os.path.isabs(path):
                found.append(path)
    return found


def _ancestors(paths: Iterable[str]) -> Set[str]:
    """Every folder above any of `paths`, up to /."""
    found = set()
    for path in paths:
        while path != "/":
            path = os.path.dirname(path)
            found.add(path)
    return found


def _readable(denied: List[str]) -> List[Tuple[str, bool]]:
    """The entries beside each folder on the way down to a denied path, and
    whether each is a symlink: granted whole, they make every path readable
    but the denied ones (and the folders on the way)."""
    above = _ancestors(denied)
    skip = above.union(denied)
    found = []
    for parent in sorted(above):
        try:
            with os.scandir(parent) as entries:
                found += [(entry.path, entry.is_symlink()) for entry in entries if entry.path not in skip]
        except OSError:
            continue
    return found


def _grant(ruleset: Ruleset, path: str, rights: int, around: Optional[List[str]] = None,
           kept: Optional[Set[Tuple[int, int]]] = None) -> None:
    """Grant `rights` beneath `path` as it is opened now, by descriptor.  With
    `kept` (the denied paths' and their folders' device and inode), a bind
    mount of one is not granted; with `around` (the denied paths: for a
    symlink, or a place the agent may write, which an earlier agent's
    detached child could have swapped for one), neither is what the
    descriptor's real path shows to be a denied path or a folder above one.
    The folders on the way down to a denied path are no agent's to change."""
    from .landlock import FILE_RIGHTS

    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone, or a dangling symlink: nothing to grant
    try:
        st = os.fstat(fd)
        if kept is not None and (st.st_dev, st.st_ino) in kept:
            return
        if around is not None:
            real = os.readlink("/proc/self/fd/%d" % fd)
            if any(_within(real, place) or _within(place, real) for place in around):
                return
        if st.st_mode & 0o170000 != 0o040000:  # not a directory: only the rights a file may have
            rights &= FILE_RIGHTS
        ruleset.grant(fd, rights)
    finally:
        os.close(fd)


def _identities(paths: Iterable[str]) -> Set[Tuple[int, int]]:
    found = set()
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        found.add((st.st_dev, st.st_ino))
    return found


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")
