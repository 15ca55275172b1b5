"""Resolving an event path: the realpath, never through another user's symlink."""

from __future__ import annotations

import os

import pytest

from harnessctl.errors import UsageError
from harnessctl.store.address import resolve


def test_resolve_gives_the_realpath_through_our_own_symlinks(tmp_path):
    (tmp_path / "real" / "deep").mkdir(parents=True)
    os.symlink("real", str(tmp_path / "rel"))  # relative
    os.symlink(str(tmp_path / "real" / "deep"), str(tmp_path / "abs"))  # absolute
    os.symlink("../rel/deep", str(tmp_path / "real" / "up"))  # relative, through another symlink
    os.symlink("up", str(tmp_path / "real" / "chain"))
    cases = ["rel/e.jsonl", "abs/e.jsonl", "real/up/e.jsonl", "real/chain/../e.jsonl", "missing/../e.jsonl",
             "real/./deep//e.jsonl", "rel/missing/x/../e.jsonl"]
    for case in cases:
        path = str(tmp_path / case)
        assert resolve(path).path == os.path.realpath(path), case


def test_resolve_refuses_a_symlink_loop(tmp_path):
    os.symlink("b", str(tmp_path / "a"))
    os.symlink("a", str(tmp_path / "b"))
    with pytest.raises(UsageError, match="too many levels of symlinks"):
        resolve(str(tmp_path / "a" / "e.jsonl"))
