"""A git worktree per session: the git layer under `send --worktree`, `fork
--worktree`, the changes `status` shows, `diff` and `prune`.

A session's worktree is a linked worktree of the repository it was started
in, on a branch `harnessctl/<name>` made at that moment's HEAD (the `base`),
in a folder outside the repository (folder_default).  What a session did is
what its folder holds now against `base`: commits on the branch, edits not
committed and new files not ignored alike, so `changes` and `patch` read the
folder as it is (a snapshot into a throw-away index), never asking the agent
to commit.  Nothing here touches the user's own checkout, index or branches:
a snapshot is written to a copy of the index in a private temporary folder.

Git runs as `git -C DIR ...` with an argument list, stdin closed, LC_ALL=C
and no hook (core.hooksPath=/dev/null): harnessctl, not the user, makes and
drops these worktrees and branches, so a post-checkout or
reference-transaction hook of the user's is not asked.  Its environment is
ours minus every GIT_* variable (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE,
GIT_OBJECT_DIRECTORY, GIT_CONFIG_PARAMETERS, GIT_EXTERNAL_DIFF, ... as when
harnessctl runs from a git hook): those that only say who the user is or
which config file to read (GIT_KEPT) stay.  The user's config still
applies: its filters (LFS), safe.directory, identity.
"""

from __future__ import annotations

import collections
import os

from .errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Dict, List, NamedTuple, Optional, Tuple

    class _Fields(NamedTuple):
        path: str
        branch: str
        base: str
        repo: str
else:  # typing.NamedTuple would import typing; collections' is the same tuple
    _Fields = collections.namedtuple("_Fields", ("path", "branch", "base", "repo"))

PREFIX = "harnessctl/"  # every session's branch, so `git branch --list 'harnessctl/*'` shows them apart
GIT_KEPT = ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_SSH")
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
MAX_NAME = 200  # bytes of a folder name (255) and of refs/heads/harnessctl/NAME.lock, with room
UNCOMMITTED = "it holds uncommitted changes"
UNMERGED = "its branch has commits no other branch has"


class Worktree(_Fields):
    """One session's worktree: `path` its folder (real, absolute), `branch`
    (harnessctl/NAME), `base` the full id of the commit it started from, and
    `repo` the repository's common git dir (real, absolute).  The git dir
    rather than the main work tree: every repository has one, a bare one
    with linked worktrees and one made with --separate-git-dir too, and git
    runs in it when the worktree's folder is gone (remove)."""

    __slots__ = ()

    def as_dict(self) -> Dict[str, str]:
        return {"path": self.path, "branch": self.branch, "base": self.base, "repo": self.repo}

    @classmethod
    def from_dict(cls, data: object) -> Worktree:
        """A worktree read back from a binding on disk: anything but what
        as_dict wrote is refused, so that no path or option reaches git
        from a file that was edited or broken."""
        if not isinstance(data, dict) or set(data) != set(cls._fields):
            raise UsageError("malformed worktree in the binding: %.200r" % (data,))
        tree = cls(**data)
        name = tree.branch[len(PREFIX):] if isinstance(tree.branch, str) else ""
        if not (all(isinstance(value, str) and "\0" not in value for value in tree)
                and os.path.isabs(tree.path) and os.path.isabs(tree.repo) and is_commit_id(tree.base)
                and tree.branch.startswith(PREFIX) and name and _clean(name) == name):
            raise UsageError("malformed worktree in the binding: %.200r" % (data,))
        return tree


def is_commit_id(text: str) -> bool:
    """A full object id: 40 hex digits (SHA-1) or 64 (SHA-256)."""
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def clean_name(name: str) -> str:
    """NAME made a branch name component and a folder name alike: ASCII
    letters, digits, `.`, `_` and `-` (any other character becomes `-`), no
    `..`, not starting or ending with `.` or `-` nor ending with `.lock`
    (what `git check-ref-format --branch` wants), at most MAX_NAME long.
    The caller gives the event file's name without `.jsonl`."""
    cleaned = _clean(name)
    if not cleaned:
        raise UsageError("no worktree name can be made of %r: give the event file a name with a letter or digit" % name)
    return cleaned


def _clean(name: str) -> str:
    text = "".join(c if c in NAME_CHARS else "-" for c in name)[:MAX_NAME]
    while ".." in text:
        text = text.replace("..", ".")
    while True:
        stripped = text.strip(".-")
        stripped = stripped[:-len(".lock")] if stripped.endswith(".lock") else stripped
        if stripped == text:
            return text
        text = stripped


def folder_default(repo_top: str) -> str:
    """The folder the worktrees of the repository whose main work tree is
    `repo_top` go into: $HARNESSCTL_WORKTREES when set (absolute), else the
    sibling `<repo>.worktrees/` of the repository.  Outside the repository,
    so that no worktree shows up in the main one's `git status` or in a
    tool's walk of its files."""
    explicit = os.environ.get("HARNESSCTL_WORKTREES")
    if explicit is not None:
        if not os.path.isabs(explicit):
            raise UsageError("HARNESSCTL_WORKTREES must be an absolute path, not %r" % explicit)
        return os.path.normpath(explicit)
    top = os.path.normpath(repo_top)
    return os.path.join(os.path.dirname(top), os.path.basename(top) + ".worktrees")


def main_top(common: str) -> str:
    """The main work tree of the repository whose common git dir is
    `common`, as git itself names it (`git worktree list`'s first line): the
    folder holding `.git`, else (a bare repository, --separate-git-dir) the
    git dir itself."""
    return os.path.dirname(common) if os.path.basename(common) == ".git" else common


# -- making one ------------------------------------------------------------------------------------


def add(cwd: str, name: str) -> Worktree:
    """A new worktree on a new branch harnessctl/NAME, at the HEAD of the
    work tree `cwd` is in (from inside a linked worktree: that one's HEAD,
    and the new worktree joins the same repository)."""
    top, common, _, head = _checkout(cwd)
    return _create(top, common, head, clean_name(name), None)


def fork(source_cwd: str, name: str) -> Worktree:
    """A new worktree on a new branch harnessctl/NAME, at the HEAD of the
    work tree `source_cwd` is in (a session's worktree or any checkout),
    holding that work tree's files as they are now, committed or not: its
    edits and deletions left unstaged, its new files (not ignored)
    untracked, as the source has them.  The source's files, index and
    branch are not touched."""
    top, common, index, head = _checkout(source_cwd)
    name = clean_name(name)
    tree = _text(_snapshot(top, index, ("write-tree",)))
    return _create(top, common, head, name, tree)


def planned(cwd: str, name: str) -> str:
    """The folder add(cwd, name) would make: for a check of where it lies
    (the roots of a caller) before anything is made."""
    common = _checkout(cwd)[1]
    return os.path.join(folder_default(main_top(common)), clean_name(name))


def named(event_path: str) -> str:
    """A session's worktree name: its event file's name without `.jsonl`."""
    name = os.path.basename(event_path)
    return name[:-len(".jsonl")] if name.endswith(".jsonl") else name


def cwd_in(tree: Worktree, asked: str) -> str:
    """Where a session asked to work in `asked` works in its worktree: the
    same folder of the repository (its root, or a folder in it), in the tree."""
    prefix = _text(_git(os.path.abspath(asked), ("rev-parse", "--show-prefix"))).rstrip("/")
    return os.path.join(tree.path, prefix) if prefix else tree.path


def _checkout(cwd: str) -> Tuple[str, str, str, str]:
    """(top, common git dir, index file, HEAD's commit id) of the work tree
    `cwd` is in; a folder in no work tree, a bare repository and one with
    no commit yet are refused, each with its reason."""
    where = os.path.abspath(cwd)
    code, out, err = _run(where, ("rev-parse", "--is-bare-repository", "--is-inside-work-tree", "--git-common-dir"))
    if code != 0:
        raise UsageError("%s is not in a git repository (%s)" % (where, _reason(err, code)))
    bare, inside, common = _text(out).split("\n", 2)
    if bare == "true":
        raise UsageError("%s is a bare git repository: a worktree starts from a checked-out one" % where)
    if inside != "true":
        raise UsageError("%s is not in a git work tree (a .git folder?): a worktree starts from one" % where)
    code, out, _ = _run(where, ("rev-parse", "--show-toplevel", "--git-path", "index", "--verify", "--quiet",
                                "HEAD^{commit}"))
    lines = _text(out).split("\n")
    if code != 0:
        raise UsageError("the git repository of %s has no commit yet: a worktree starts from one" % where)
    if len(lines) != 3:
        raise UsageError("the git repository of %s has a newline in its path: not taken for a worktree" % where)
    top, index, head = lines
    return top, os.path.realpath(os.path.join(where, common)), os.path.join(where, index), head


def _create(top: str, common: str, head: str, name: str, tree: Optional[str]) -> Worktree:
    """Branch harnessctl/NAME at `head` checked out in FOLDER/NAME, with the
    files of `tree` (fork) laid over it uncommitted.  Hooks do not run (the
    module's docstring).  A failure half-way takes back what was made."""
    branch = PREFIX + name
    path = os.path.join(folder_default(main_top(common)), name)
    if _has_branch(top, branch):
        raise UsageError("branch %s exists already: name the event file differently, or `git branch -D` it" % branch)
    if os.path.lexists(path):
        raise UsageError("worktree folder exists already: %s" % path)
    made = _missing_parents(path)
    try:
        _git(top, ("worktree", "add", "--quiet", "-b", branch, path, head))
        if tree is not None:
            _git(path, ("read-tree", "-m", "-u", "HEAD", tree))  # a fresh checkout: only the changed files are written
            _git(path, ("reset", "--quiet"))  # the index back to HEAD: edits unstaged, new files untracked
    except BaseException:
        _take_back(top, path, branch, made)
        raise
    return Worktree(os.path.realpath(path), branch, head, common)


def _missing_parents(path: str) -> List[str]:
    """The folders above `path` that do not exist yet, deepest first: `git
    worktree add` makes them, and leaves them behind when it fails."""
    missing = []
    parent = os.path.dirname(path)
    while parent != os.path.dirname(parent) and not os.path.lexists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    return missing


def _take_back(top: str, path: str, branch: str, made: List[str]) -> None:
    """Undo a half-made worktree: git's record of it and its folder (git
    drops both itself when its checkout fails, not when ours does), the
    branch (git keeps that), the folders made for it."""
    import shutil

    _run(top, ("worktree", "remove", "--force", path))
    shutil.rmtree(path, ignore_errors=True)
    _run(top, ("branch", "-D", branch))  # checked before: it is the one just made
    for folder in made:
        try:
            os.rmdir(folder)
        except OSError:
            break


# -- what a session did ----------------------------------------------------------------------------


def changes(tree: Worktree) -> Dict[str, int]:
    """{"files", "added", "removed"}: the files the worktree's folder holds
    now that differ from `base`, and their lines added and removed; commits
    on the branch, edits not committed and new files not ignored alike.  A
    binary file counts with no lines.  Cheap on a large checkout: only the
    files whose stat changed are read (_snapshot)."""
    out = _snapshot(tree.path, _index(tree), ("diff-index", "--cached", "--numstat", "-z", "--no-renames",
                                              tree.base, "--"))
    files = added = removed = 0
    for record in out.split(b"\0"):
        if record:  # ADDED TAB REMOVED TAB NAME, `-` for a binary file's counts
            counts = record.split(b"\t", 2)
            files += 1
            added += int(counts[0]) if counts[0] != b"-" else 0
            removed += int(counts[1]) if counts[1] != b"-" else 0
    return {"files": files, "added": added, "removed": removed}


def patch(tree: Worktree) -> bytes:
    """What `changes` counts, as a patch that `git apply` takes on a clean
    checkout of `base`: binary files and new files included.  diff-index,
    git's plumbing, so that no diff setting of the user's (noprefix, color,
    an external diff) changes it."""
    return _snapshot(tree.path, _index(tree), ("diff-index", "--cached", "--patch", "--binary", "--no-renames",
                                               tree.base, "--"))


def _index(tree: Worktree) -> str:
    """The index file of the worktree's folder, which must still be one."""
    if not os.path.isdir(tree.path):
        raise UsageError("the worktree's folder is gone: %s" % tree.path)
    if not os.path.lexists(os.path.join(tree.path, ".git")):
        raise UsageError("the worktree's folder is no git worktree any more (no .git in it): %s" % tree.path)
    return os.path.join(tree.path, _text(_git(tree.path, ("rev-parse", "--git-path", "index"))))


def _snapshot(top: str, index: str, args: Tuple[str, ...]) -> bytes:
    """The output of `git ARGS` on an index that holds the files of the work
    tree `top` as they are now: a copy of its index `index` (times kept, so
    git's check for a file changed within its timestamp's tick still holds)
    that `git add --all` brings up to date, in a private temporary folder.
    Only the files whose stat differs from the copy are read; the work
    tree's own index is not written.  New contents land in the repository's
    objects, unreferenced, as a `git stash` would leave them."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="harnessctl-index-") as temp:
        copy = os.path.join(temp, "index")
        try:
            shutil.copy2(index, copy)
        except FileNotFoundError:  # no index yet: HEAD's files, all of them read by the add
            _git(top, ("read-tree", "HEAD"), copy)
        except OSError as e:
            raise UsageError("cannot copy the git index %s: %s" % (index, e.strerror)) from None
        _git(top, ("add", "--all"), copy)
        return _git(top, args, copy)


# -- dropping one ----------------------------------------------------------------------------------


def removable(tree: Worktree) -> Optional[str]:
    """None when the worktree and its branch may go without losing work,
    else why not: files not committed (new ones included), or commits that
    neither `base` nor another branch holds (the worktree's HEAD too,
    should it have left the branch).  A worktree whose folder is gone is
    judged by its branch alone."""
    where, heads = tree.repo, ["refs/heads/" + tree.branch]
    if os.path.isdir(tree.path):
        _index(tree)  # a folder that is no worktree is not asked about another repository's files
        status = _git(tree.path, ("status", "--porcelain", "--untracked-files=normal", "--ignore-submodules=none"))
        if status:
            return UNCOMMITTED
        where = tree.path
        heads.insert(0, "HEAD")
    # --exclude's pattern for --branches is relative to refs/heads/ (git 2.39: refs/heads/NAME excludes nothing);
    # NAME holds no glob character (clean_name).  --ignore-missing: a branch deleted already holds nothing.
    ahead = _git(where, ("rev-list", "--max-count=1", "--ignore-missing", *heads,
                         "--not", tree.base, "--exclude=" + tree.branch, "--branches"))
    return UNMERGED if ahead else None


def remove(tree: Worktree, force: bool) -> None:
    """Drop the worktree (its folder, or git's record of a folder already
    gone) and its branch.  Refused, with the reason, while removable says
    work would be lost, unless `force`."""
    if not force:
        reason = removable(tree)
        if reason is not None:
            raise UsageError("not removing the worktree %s: %s" % (tree.path, reason))
    if os.path.isdir(tree.path):
        _git(tree.repo, ("worktree", "remove") + (("--force",) if force else ()) + (tree.path,))
    else:
        _git(tree.repo, ("worktree", "prune"))
    if _has_branch(tree.repo, tree.branch):
        _git(tree.repo, ("branch", "-D", tree.branch))


# -- running git -----------------------------------------------------------------------------------


def _has_branch(where: str, branch: str) -> bool:
    return _run(where, ("rev-parse", "--verify", "--quiet", "refs/heads/" + branch))[0] == 0


def _git(where: str, args: Tuple[str, ...], index: Optional[str] = None) -> bytes:
    """git's output, or a UsageError with its reason."""
    code, out, err = _run(where, args, index)
    if code != 0:
        raise UsageError("git %s failed: %s" % (args[0], _reason(err, code)))
    return out


def _run(where: str, args: Tuple[str, ...], index: Optional[str] = None) -> Tuple[int, bytes, bytes]:
    """`git -C WHERE ARGS` (GIT_INDEX_FILE=`index` when given): its exit
    status, output and error output.  GIT_OPTIONAL_LOCKS=0: a `git status`
    of ours does not write the refreshed index of a worktree an agent is
    working in."""
    import subprocess

    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_") or key.startswith(GIT_KEPT)}
    env.update(LC_ALL="C", GIT_OPTIONAL_LOCKS="0")
    if index is not None:
        env["GIT_INDEX_FILE"] = index
    command = ["git", "-C", where, "-c", "core.hooksPath=/dev/null"] + list(args)
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, check=False)
    except FileNotFoundError:
        raise UsageError("git is not installed (no `git` on PATH): a worktree needs it") from None
    except OSError as e:
        raise UsageError("cannot run git: %s" % e.strerror) from None
    return done.returncode, done.stdout, done.stderr


def _reason(err: bytes, code: int) -> str:
    """git's own one-line reason: its first `fatal:` or `error:` line (a
    hint or a progress line may come first), else its first line."""
    lines = [line.strip() for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
    found = [line for line in lines if line.startswith(("fatal:", "error:"))] or lines
    return found[0] if found else "exit status %d" % code


def _text(out: bytes) -> str:
    """A line of git's output as a str (undecodable bytes kept, as os.fsdecode keeps a file name's)."""
    return os.fsdecode(out).rstrip("\n")
