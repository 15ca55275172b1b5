"""The git layer of a worktree per session (harnessctl/worktree.py), on real
git: repositories made in tmp_path, with a git config of the test's own so
that the user's does not matter."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from harnessctl import worktree
from harnessctl.errors import UsageError
from harnessctl.worktree import UNCOMMITTED, UNMERGED, Worktree

START = {"a.txt": b"one\ntwo\nthree\n", "b.txt": b"bee\n", ".gitignore": b"*.log\n"}


@pytest.fixture(autouse=True)
def git_env(tmp_path, monkeypatch):
    """No GIT_* of the caller's, a config file of the test's, a fixed identity."""
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)
    config = tmp_path / "gitconfig"
    config.write_text("[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_OPTIONAL_LOCKS", "0")  # the tests' own `git status` writes no index
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv("GIT_%s_NAME" % role, "Tester")
        monkeypatch.setenv("GIT_%s_EMAIL" % role, "tester@example.com")
    monkeypatch.delenv("HARNESSCTL_WORKTREES", raising=False)


def git(where, *args, stdin=None):
    return subprocess.run(["git", "-C", str(where)] + list(args), input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, check=True).stdout


def head(where):
    return git(where, "rev-parse", "HEAD").decode().strip()


def has_branch(where, branch):
    return subprocess.run(["git", "-C", str(where), "rev-parse", "--verify", "-q", "refs/heads/" + branch],
                          stdout=subprocess.DEVNULL).returncode == 0


def write(folder, name, data):
    path = os.path.join(os.fsencode(str(folder)), name if isinstance(name, bytes) else os.fsencode(name))
    with open(path, "wb") as f:
        f.write(data)


def commit(where, message):
    git(where, "add", "-A")
    git(where, "commit", "-qm", message)


def files(folder):
    """Every file under `folder` but .git and the ignored *.log: {bytes name: bytes content}."""
    found = {}
    top = os.fsencode(str(folder))
    for parent, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d != b".git"]
        for name in names:
            if name != b".git" and not name.endswith(b".log"):
                with open(os.path.join(parent, name), "rb") as f:
                    found[os.path.relpath(os.path.join(parent, name), top)] = f.read()
    return found


@pytest.fixture
def repo(tmp_path):
    top = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(top))
    for name, data in START.items():
        write(top, name, data)
    commit(top, "start")
    return top


# -- add -------------------------------------------------------------------------------------------


def test_three_worktrees_of_one_repository_each_keep_their_own_edit_of_the_same_file(repo):
    trees = [worktree.add(str(repo), "s%d" % i) for i in range(3)]
    for i, tree in enumerate(trees):
        write(tree.path, "a.txt", b"edit %d\n" % i)
    assert [files(tree.path)[b"a.txt"] for tree in trees] == [b"edit 0\n", b"edit 1\n", b"edit 2\n"]
    assert files(repo)[b"a.txt"] == START["a.txt"]
    assert [tree.branch for tree in trees] == ["harnessctl/s0", "harnessctl/s1", "harnessctl/s2"]


def test_add_makes_branch_and_folder_in_the_sibling_worktrees_folder_at_head(repo, tmp_path):
    tree = worktree.add(str(repo / "."), "fix")
    assert tree == Worktree(os.path.realpath(str(tmp_path / "repo.worktrees" / "fix")), "harnessctl/fix",
                            head(repo), os.path.realpath(str(repo / ".git")))
    assert head(tree.path) == tree.base and git(tree.path, "branch", "--show-current") == b"harnessctl/fix\n"


def test_HARNESSCTL_WORKTREES_holds_the_worktrees_when_set(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESSCTL_WORKTREES", str(tmp_path / "elsewhere" / "trees"))
    tree = worktree.add(str(repo), "fix")
    assert tree.path == os.path.realpath(str(tmp_path / "elsewhere" / "trees" / "fix"))


def test_a_relative_HARNESSCTL_WORKTREES_is_refused(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESSCTL_WORKTREES", "trees")
    with pytest.raises(UsageError, match="HARNESSCTL_WORKTREES must be an absolute path"):
        worktree.add(str(repo), "fix")
    assert not has_branch(repo, "harnessctl/fix")


def test_add_in_a_linked_worktree_joins_its_repository_at_its_head(repo, tmp_path):
    first = worktree.add(str(repo), "first")
    write(first.path, "a.txt", b"changed\n")
    commit(first.path, "in first")
    os.mkdir(os.path.join(first.path, "sub"))
    second = worktree.add(os.path.join(first.path, "sub"), "second")
    assert (second.repo, second.base) == (first.repo, head(first.path))
    assert second.path == os.path.realpath(str(tmp_path / "repo.worktrees" / "second"))


def test_add_outside_a_repository_is_refused_and_makes_nothing(tmp_path):
    (tmp_path / "plain").mkdir()
    before = sorted(os.listdir(str(tmp_path)))
    with pytest.raises(UsageError, match="is not in a git repository"):
        worktree.add(str(tmp_path / "plain"), "fix")
    assert sorted(os.listdir(str(tmp_path))) == before


def test_add_in_a_bare_repository_is_refused(tmp_path):
    git(tmp_path, "init", "-q", "--bare", "bare.git")
    with pytest.raises(UsageError, match="is a bare git repository"):
        worktree.add(str(tmp_path / "bare.git"), "fix")
    assert not os.path.exists(str(tmp_path / "bare.git.worktrees"))


def test_add_in_a_repository_without_a_commit_is_refused(tmp_path):
    git(tmp_path, "init", "-q", "empty")
    with pytest.raises(UsageError, match="has no commit yet"):
        worktree.add(str(tmp_path / "empty"), "fix")
    assert not os.path.exists(str(tmp_path / "empty.worktrees"))


def test_add_refuses_a_branch_taken_and_makes_no_folder(repo, tmp_path):
    git(repo, "branch", "harnessctl/fix")
    with pytest.raises(UsageError, match="branch harnessctl/fix exists already"):
        worktree.add(str(repo), "fix")
    assert not os.path.exists(str(tmp_path / "repo.worktrees"))


def test_add_refuses_a_folder_that_exists_and_makes_no_branch(repo, tmp_path):
    (tmp_path / "repo.worktrees" / "fix").mkdir(parents=True)
    with pytest.raises(UsageError, match="worktree folder exists already"):
        worktree.add(str(repo), "fix")
    assert not has_branch(repo, "harnessctl/fix")


def test_add_that_fails_half_way_takes_back_folder_branch_and_record(repo, tmp_path):
    write(repo, ".gitattributes", b"*.txt filter=boom\n")
    commit(repo, "attributes")
    git(repo, "config", "filter.boom.smudge", "false")
    git(repo, "config", "filter.boom.required", "true")
    with pytest.raises(UsageError, match="^git worktree failed: (error|fatal): "):
        worktree.add(str(repo), "fix")
    assert not os.path.exists(str(tmp_path / "repo.worktrees"))
    assert not has_branch(repo, "harnessctl/fix")
    assert git(repo, "worktree", "list", "--porcelain").count(b"worktree ") == 1


def test_add_runs_no_hook_of_the_repository(repo, tmp_path):
    for hook in ("post-checkout", "reference-transaction"):
        write(repo / ".git" / "hooks", hook, b"#!/bin/sh\necho >> %s\n" % os.fsencode(str(tmp_path / hook)))
        os.chmod(str(repo / ".git" / "hooks" / hook), 0o755)
    git(repo, "branch", "hooked")  # the hooks do run for git itself
    assert os.path.exists(str(tmp_path / "reference-transaction"))
    os.unlink(str(tmp_path / "reference-transaction"))
    worktree.add(str(repo), "fix")
    assert not os.path.exists(str(tmp_path / "post-checkout"))
    assert not os.path.exists(str(tmp_path / "reference-transaction"))


def test_git_missing_is_a_usage_error(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(UsageError, match="git is not installed"):
        worktree.add(str(repo), "fix")


def test_variables_that_redirect_git_are_not_followed(repo, tmp_path, monkeypatch):
    git(tmp_path, "init", "-q", "other")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "other" / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path / "other"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "no-index"))
    tree = worktree.add(str(repo), "fix")
    write(tree.path, "new.txt", b"x\n")
    assert (tree.repo, worktree.changes(tree)) == (os.path.realpath(str(repo / ".git")),
                                                   {"files": 1, "added": 1, "removed": 0})


# -- names -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, cleaned", [
    ("fix-login", "fix-login"), ("my session", "my-session"), ("a..b", "a.b"), (".hidden.", "hidden"),
    ("x.lock", "x"), ("café:~^?*[\\", "caf"), ("é.x", "x"), ("-a@{b}", "a--b"), ("run.lock.lock", "run"),
    ("n" * 300, "n" * worktree.MAX_NAME)])
def test_a_name_is_made_a_valid_branch_name(raw, cleaned):
    assert worktree.clean_name(raw) == cleaned
    git(".", "check-ref-format", "--branch", "harnessctl/" + cleaned)


def test_a_name_with_nothing_left_is_refused_and_makes_nothing(repo, tmp_path):
    with pytest.raises(UsageError, match="no worktree name can be made"):
        worktree.add(str(repo), "~:..-")
    assert not os.path.exists(str(tmp_path / "repo.worktrees"))


# -- fork ------------------------------------------------------------------------------------------


def make_dirty(folder):
    """An edit, a deletion, a new file, a staged new file and an ignored one."""
    write(folder, "a.txt", b"one\nTWO\nthree\n")
    os.unlink(os.path.join(str(folder), "b.txt"))
    write(folder, "c.txt", b"new\n")
    write(folder, "d.txt", b"staged\n")
    git(folder, "add", "d.txt")
    write(folder, "build.log", b"ignored\n")


def test_fork_carries_the_files_as_they_are_uncommitted(repo):
    make_dirty(repo)
    tree = worktree.fork(str(repo), "copy")
    assert tree.base == head(repo)
    assert files(tree.path) == {b"a.txt": b"one\nTWO\nthree\n", b"c.txt": b"new\n", b"d.txt": b"staged\n",
                                b".gitignore": START[".gitignore"]}
    assert not os.path.exists(os.path.join(tree.path, "build.log"))
    assert git(tree.path, "status", "--porcelain") == b" M a.txt\n D b.txt\n?? c.txt\n?? d.txt\n"


def test_fork_leaves_the_source_untouched(repo):
    make_dirty(repo)
    index = (repo / ".git" / "index").read_bytes()
    status = git(repo, "status", "--porcelain")
    worktree.fork(str(repo), "copy")
    assert git(repo, "status", "--porcelain") == status
    assert (repo / ".git" / "index").read_bytes() == index
    assert git(repo, "branch", "--show-current") == b"main\n"


def test_fork_of_a_session_worktree_starts_from_its_head_with_its_edits(repo):
    source = worktree.add(str(repo), "source")
    write(source.path, "a.txt", b"committed\n")
    commit(source.path, "in source")
    write(source.path, "b.txt", b"edited\n")
    tree = worktree.fork(source.path, "copy")
    assert tree.base == head(source.path) != source.base
    assert files(tree.path)[b"a.txt"] == b"committed\n" and files(tree.path)[b"b.txt"] == b"edited\n"
    assert head(source.path) == tree.base


# -- changes and patch -----------------------------------------------------------------------------


def test_changes_counts_commits_edits_and_new_files_against_base(repo):
    tree = worktree.add(str(repo), "fix")
    write(tree.path, "a.txt", b"one\n2\nthree\n")
    commit(tree.path, "on the branch")  # +1 -1
    write(tree.path, "b.txt", b"bee\nmore\n")  # +1, not committed
    write(tree.path, "c.txt", b"1\n2\n3\n")  # +3, new
    write(tree.path, "build.log", b"ignored\n")
    assert worktree.changes(tree) == {"files": 3, "added": 5, "removed": 1}


def test_changes_counts_a_binary_file_with_no_lines(repo):
    tree = worktree.add(str(repo), "fix")
    write(tree.path, "blob.bin", b"\0\1\2\n\3")
    assert worktree.changes(tree) == {"files": 1, "added": 0, "removed": 0}


def test_changes_of_a_worktree_whose_folder_is_gone_is_an_error(repo):
    tree = worktree.add(str(repo), "fix")
    shutil.rmtree(tree.path)
    with pytest.raises(UsageError, match="the worktree's folder is gone"):
        worktree.changes(tree)


def apply_on_base(repo, tree, tmp_path):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--no-checkout", str(repo), str(clone))
    git(clone, "checkout", "-q", tree.base)
    git(clone, "apply", "-", stdin=worktree.patch(tree))
    return clone


def test_patch_applies_on_a_clone_at_base_and_gives_the_worktrees_files(repo, tmp_path):
    tree = worktree.add(str(repo), "fix")
    write(tree.path, "a.txt", b"one\n2\nthree\n")
    commit(tree.path, "on the branch")
    os.unlink(os.path.join(tree.path, "b.txt"))
    write(tree.path, "c.txt", b"new\n")
    write(tree.path, "blob.bin", bytes(range(256)) * 4)
    clone = apply_on_base(repo, tree, tmp_path)
    assert files(clone) == files(tree.path)
    assert b"blob.bin" in files(clone) and b"b.txt" not in files(clone)


def test_patch_is_the_same_whatever_the_users_diff_settings(repo, tmp_path):
    for key, value in (("diff.noprefix", "true"), ("color.diff", "always"), ("diff.external", "false"),
                       ("diff.renames", "copies"), ("diff.context", "0")):
        git(repo, "config", key, value)
    tree = worktree.add(str(repo), "fix")
    os.rename(os.path.join(tree.path, "a.txt"), os.path.join(tree.path, "moved.txt"))
    write(tree.path, "b.txt", b"bee\nsee\n")
    clone = apply_on_base(repo, tree, tmp_path)
    assert files(clone) == files(tree.path)


def test_file_names_with_a_newline_or_bytes_not_utf8_survive_changes_and_patch(repo, tmp_path):
    tree = worktree.add(str(repo), "fix")
    write(tree.path, b"two\nlines.txt", b"x\n")
    write(tree.path, b"caf\xe9.txt", b"y\nz\n")
    assert worktree.changes(tree) == {"files": 2, "added": 3, "removed": 0}
    clone = apply_on_base(repo, tree, tmp_path)
    assert files(clone) == files(tree.path)


# -- removable and remove --------------------------------------------------------------------------


@pytest.mark.parametrize("change", ["untracked", "modified", "staged"])
def test_removable_refuses_changes_not_committed(repo, change):
    git(repo, "config", "status.showUntrackedFiles", "no")  # not the user's setting: untracked files count
    tree = worktree.add(str(repo), "fix")
    write(tree.path, "new.txt" if change != "modified" else "a.txt", b"x\n")
    if change == "staged":
        git(tree.path, "add", "new.txt")
    assert worktree.removable(tree) == UNCOMMITTED


def test_removable_refuses_commits_no_other_branch_has(repo):
    tree = worktree.add(str(repo), "fix")
    write(tree.path, "a.txt", b"x\n")
    commit(tree.path, "work")
    assert worktree.removable(tree) == UNMERGED


def test_removable_refuses_commits_of_a_branch_whose_folder_is_gone(repo):
    tree = worktree.add(str(repo), "fix")
    write(tree.path, "a.txt", b"x\n")
    commit(tree.path, "work")
    shutil.rmtree(tree.path)
    assert worktree.removable(tree) == UNMERGED


def test_removable_allows_a_clean_worktree_whose_commits_another_branch_has(repo):
    tree = worktree.add(str(repo), "fix")
    assert worktree.removable(tree) is None
    write(tree.path, "a.txt", b"x\n")
    write(tree.path, "build.log", b"ignored\n")
    commit(tree.path, "work")
    git(repo, "merge", "-q", "--ff-only", "harnessctl/fix")
    assert worktree.removable(tree) is None


def test_remove_deletes_the_folder_and_the_branch(repo):
    tree = worktree.add(str(repo), "fix")
    write(tree.path, "build.log", b"ignored\n")
    worktree.remove(tree, force=False)
    assert not os.path.exists(tree.path) and not has_branch(repo, "harnessctl/fix")
    assert git(repo, "worktree", "list", "--porcelain").count(b"worktree ") == 1


def test_remove_refuses_a_worktree_that_would_lose_work(repo):
    tree = worktree.add(str(repo), "fix")
    write(tree.path, "new.txt", b"x\n")
    with pytest.raises(UsageError, match="not removing the worktree .*: it holds uncommitted changes"):
        worktree.remove(tree, force=False)
    assert os.path.exists(os.path.join(tree.path, "new.txt")) and has_branch(repo, "harnessctl/fix")


def test_remove_with_force_drops_work(repo):
    tree = worktree.add(str(repo), "fix")
    write(tree.path, "a.txt", b"x\n")
    commit(tree.path, "work")
    write(tree.path, "new.txt", b"x\n")
    worktree.remove(tree, force=True)
    assert not os.path.exists(tree.path) and not has_branch(repo, "harnessctl/fix")


def test_remove_of_a_worktree_whose_folder_is_gone_drops_the_branch_and_the_record(repo):
    tree = worktree.add(str(repo), "fix")
    shutil.rmtree(tree.path)
    worktree.remove(tree, force=False)
    assert not has_branch(repo, "harnessctl/fix")
    assert git(repo, "worktree", "list", "--porcelain").count(b"worktree ") == 1


# -- the binding -----------------------------------------------------------------------------------


def test_a_worktree_comes_back_from_its_dict(repo):
    tree = worktree.add(str(repo), "fix")
    assert Worktree.from_dict(tree.as_dict()) == tree


GOOD = {"path": "/w/fix", "branch": "harnessctl/fix", "base": "a" * 40, "repo": "/r/.git"}


@pytest.mark.parametrize("bad", [
    ["not", "a", "dict"], {k: v for k, v in GOOD.items() if k != "base"}, dict(GOOD, extra="x"),
    dict(GOOD, path=7), dict(GOOD, path="relative/fix"), dict(GOOD, repo="/r/\0"), dict(GOOD, branch="main"),
    dict(GOOD, branch="harnessctl/*"), dict(GOOD, branch="harnessctl/"), dict(GOOD, base="abc123"),
    dict(GOOD, base="A" * 40)])
def test_a_malformed_worktree_in_a_binding_is_refused(bad):
    assert Worktree.from_dict(GOOD) == Worktree(**GOOD)
    with pytest.raises(UsageError, match="malformed worktree in the binding"):
        Worktree.from_dict(bad)
