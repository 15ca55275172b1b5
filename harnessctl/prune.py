"""`harnessctl prune [DIR/|FILE]...`: what stopped sessions leave behind,
removed (docs/PROTOCOL-COMMANDS.md section 25).

A cron job that starts a session a night leaves, each year, 365 event
files, sidecars, records in the state folder and, with --worktree, as many
worktrees and branches.  Prune removes them for the sessions it is given,
and only those harnessctl bound (a record in the state folder names them):

* never a live session: its runtime's lock is taken, and held while the
  session's files go, so that no send starts it meanwhile;
* never work a person may still want: a worktree with uncommitted changes,
  or a branch with commits no other branch has, keeps the whole session
  (its record is what finds the worktree) unless --force;
* the event file itself only with --events: without it, the file stays as
  a log, which no send may continue (its binding is gone);
* the records of event files that are gone, in a folder given or named
  exactly, are dropped, with their worktrees.
"""

from __future__ import annotations

import os
import re
import time

from .errors import HarnessctlError, UsageError

TYPE_CHECKING = False  # keeps typing out of start-up; mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")


def duration(text: str) -> float:
    """`--older-than` as seconds: a number and a unit (s, m, h, d, w; none: seconds)."""
    match = DURATION.fullmatch(text)
    if match is None:
        raise UsageError("--older-than takes a duration such as 90s, 30m, 12h, 7d or 2w, not %r" % text)
    return float(match.group(1)) * UNITS[match.group(2) or "s"]


class Outcome:
    """What prune did, or would do, to one session: the things `removed`
    (or to remove), or why it was `kept`; `refused` when what kept it is
    work that --force would remove."""

    __slots__ = ("file", "removed", "kept", "refused")

    def __init__(self, file: str) -> None:
        self.file = file
        self.removed: List[str] = []
        self.kept: Optional[str] = None
        self.refused = False

    def as_dict(self, dry_run: bool) -> Dict[str, Any]:
        found: Dict[str, Any] = {"file": self.file, "removed": self.removed, "dry_run": dry_run}
        if self.kept is not None:
            found.update(kept=self.kept, refused=self.refused)
        return found

    def line(self, dry_run: bool) -> str:
        if self.kept is not None:
            return "kept %s: %s" % (self.file, self.kept)
        return "%s %s: %s" % ("would remove" if dry_run else "removed", self.file, ", ".join(self.removed))


class Pruner:
    """One prune: its options, and each session's outcome."""

    def __init__(self, older_than: Optional[float], events: bool, force: bool, dry_run: bool) -> None:
        self.cutoff = None if older_than is None else time.time() - older_than
        self.events, self.force, self.dry_run = events, force, dry_run

    def prune(self, args: List[str]) -> List[Outcome]:
        """Each argument's sessions, pruned: a FILE, or a folder's event files
        (as `status DIR` lists them) and the records of those gone from it."""
        from .commands import listed
        from .store.address import resolve

        found = []
        for arg in args:
            files = listed(arg)
            for file in [arg] if files is None else files:
                found.append(self.session(file))
            if files is not None:
                found.extend(self.gone(path) for path in _gone_paths(os.path.realpath(arg), True))
            elif not os.path.lexists(arg):
                found.extend(self.gone(path) for path in _gone_paths(resolve(arg).path, False))
        return found

    def session(self, file: str) -> Outcome:
        """One event file's session, pruned unless it is live, newer than
        --older-than, not harnessctl's, or holds work (without --force)."""
        from .store import locks, trusted
        from .store.address import resolve

        outcome = Outcome(file)
        try:
            addr = resolve(file)
            st = os.stat(addr.path)
            record = trusted.latest(addr.path)
            if record is None or not _names(record, addr.path, st):
                outcome.kept = "harnessctl has no record of binding it: not a session of this user's to remove"
                return outcome
            if self.cutoff is not None and st.st_mtime > self.cutoff:
                outcome.kept = "it changed less than --older-than ago"
                return outcome
            held = None
            if os.path.isdir(addr.sidecar):
                held = locks.try_lock(addr.runtime_lock)
                if held is None:
                    outcome.kept = "it is live: its runtime runs (cancel it, or wait for its idle exit)"
                    return outcome
            try:
                self._remove(outcome, addr.path, record["binding"], addr.sidecar)
            finally:
                locks.unlock(held)
        except (HarnessctlError, OSError) as e:
            outcome.kept = str(e) if isinstance(e, HarnessctlError) else "%s: %s" % (file, e.strerror or e)
        return outcome

    def gone(self, path: str) -> Outcome:
        """The records (and worktree) of an event file that no longer exists."""
        from .store import trusted

        outcome = Outcome(path)
        for _, record in trusted.records():
            if record["path"] == path:
                try:
                    self._remove(outcome, path, record["binding"], None)
                except HarnessctlError as e:
                    outcome.kept = str(e)
                break
        return outcome

    def _remove(self, outcome: Outcome, path: str, binding: Dict[str, Any], sidecar: Optional[str]) -> None:
        """Remove what a stopped session left (or, in a dry run, say it would),
        its worktree first: a worktree that must stay keeps everything."""
        tree = _worktree(binding)
        if tree is not None:
            from . import worktree

            reason = worktree.removable(tree)
            if reason is not None and not self.force:
                outcome.kept, outcome.refused = "%s (%s): --force removes it" % (reason, tree.path), True
                return
            outcome.removed += ["worktree %s" % tree.path, "branch %s" % tree.branch]
            if not self.dry_run:
                worktree.remove(tree, True)
        if sidecar is not None and os.path.isdir(sidecar):
            outcome.removed.append("sidecar")
            if not self.dry_run:
                _remove_sidecar(sidecar)
        outcome.removed.append("records")
        if self.events and os.path.lexists(path):
            outcome.removed.append("events")
        if not self.dry_run:
            from .store import trusted

            trusted.forget(path)
            if self.events and os.path.lexists(path):
                os.unlink(path)


def _names(record: Dict[str, Any], path: str, st: os.stat_result) -> bool:
    """Whether a record is of this very file: by its inode, or by its path
    when it was bound before it existed (a file put in its place since is not ours)."""
    if record.get("ino") is None:
        return record["path"] == path
    return (record.get("dev"), record.get("ino")) == (st.st_dev, st.st_ino)


def _worktree(binding: Dict[str, Any]) -> Any:
    if binding.get("worktree") is None:
        return None
    from .worktree import Worktree

    return Worktree.from_dict(binding["worktree"])


def _gone_paths(where: str, folder: bool) -> List[str]:
    """The event files the records name that no longer exist: those in the
    folder `where`, or the file `where` itself."""
    from .store import trusted

    paths = {record["path"] for _, record in trusted.records()}
    return sorted(path for path in paths
                  if (os.path.dirname(path) if folder else path) == where and not os.path.lexists(path))


def _remove_sidecar(sidecar: str) -> None:
    """A sidecar and all in it: a real folder of ours, never through a symlink
    (shutil.rmtree walks by descriptor where the platform can)."""
    import shutil

    from .store import private

    st = os.lstat(sidecar)
    private.check(sidecar, st, "sidecar")
    if not os.path.isdir(sidecar) or os.path.islink(sidecar):
        raise UsageError("refusing to remove %s: not a folder" % sidecar)
    shutil.rmtree(sidecar)


def command(args: List[str], options: Dict[str, str], emit: Callable[[str], None]) -> int:
    """`prune` run: a line per session, through `emit`; the exit code is 3
    when a session was kept for the work in its worktree (--force removes it)."""
    import json

    from .visible import json_shown, shown

    dry_run = "--dry-run" in options
    older = duration(options["--older-than"]) if "--older-than" in options else None
    refused = False
    for outcome in Pruner(older, "--events" in options, "--force" in options, dry_run).prune(args):
        if outcome.removed or outcome.kept is not None:
            emit(json_shown(json.dumps(outcome.as_dict(dry_run), ensure_ascii=False, separators=(",", ":")))
                 if "--json" in options else shown(outcome.line(dry_run)))
        refused = refused or outcome.refused
    return 3 if refused else 0
