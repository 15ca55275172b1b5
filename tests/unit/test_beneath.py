"""harnessctl.kit.beneath: a path is opened one component at a time from a
descriptor of the directory, and nothing below the directory is followed
(issue 32, item 4).  The race itself is in test_file_channel_race.py."""

from __future__ import annotations

import os
import stat

import pytest

from adapters.acp import wire
from harnessctl.kit import Config, beneath

WRITE = os.O_WRONLY | os.O_CREAT


@pytest.fixture
def cwd(tmp_path):
    (tmp_path / "cwd" / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("OUTSIDE")
    return tmp_path / "cwd"


def opened(root, path, flags=os.O_RDONLY, make_dirs=False) -> int:
    real, names = beneath.split(str(root), str(path))
    return beneath.open_file(real, names, flags, make_dirs=make_dirs)


def read(root, path) -> str:
    with os.fdopen(opened(root, path), "r") as f:
        return f.read()


def test_a_plain_path_below_the_directory_is_opened(cwd):
    (cwd / "sub" / "a.txt").write_text("inside")
    assert read(cwd, cwd / "sub" / "a.txt") == "inside"


def test_a_path_under_the_directory_as_given_through_a_symlink_is_opened(cwd, tmp_path):
    os.symlink(str(cwd), str(tmp_path / "alias"))
    (cwd / "a.txt").write_text("inside")
    assert read(tmp_path / "alias", tmp_path / "alias" / "a.txt") == "inside"
    assert read(tmp_path / "alias", cwd / "a.txt") == "inside"


def test_a_symlinked_intermediate_folder_is_refused_for_a_read(cwd, tmp_path):
    os.symlink(str(tmp_path / "outside"), str(cwd / "link"))
    with pytest.raises(PermissionError, match="symbolic link"):
        opened(cwd, cwd / "link" / "secret.txt")


def test_a_symlinked_intermediate_folder_is_refused_for_a_write(cwd, tmp_path):
    os.symlink(str(tmp_path / "outside"), str(cwd / "link"))
    with pytest.raises(PermissionError, match="symbolic link"):
        opened(cwd, cwd / "link" / "new.txt", WRITE, make_dirs=True)
    assert os.listdir(str(tmp_path / "outside")) == ["secret.txt"]


def test_a_symlink_pointing_inside_the_directory_is_refused_too(cwd):
    (cwd / "sub" / "a.txt").write_text("inside")
    os.symlink("sub", str(cwd / "alias"))
    with pytest.raises(PermissionError, match="symbolic link"):
        opened(cwd, cwd / "alias" / "a.txt")


def test_a_symlinked_last_component_is_refused(cwd, tmp_path):
    os.symlink(str(tmp_path / "outside" / "secret.txt"), str(cwd / "sub" / "link.txt"))
    for flags in (os.O_RDONLY, WRITE):
        with pytest.raises(PermissionError, match="symbolic link"):
            opened(cwd, cwd / "sub" / "link.txt", flags)
    assert (tmp_path / "outside" / "secret.txt").read_text() == "OUTSIDE"


def test_a_dangling_symlink_is_not_created_through(cwd, tmp_path):
    os.symlink(str(tmp_path / "outside" / "planted.txt"), str(cwd / "new.txt"))
    with pytest.raises(PermissionError, match="symbolic link"):
        opened(cwd, cwd / "new.txt", WRITE)
    assert not (tmp_path / "outside" / "planted.txt").exists()


@pytest.mark.parametrize("tail", ["../outside/secret.txt", "sub/../a.txt", "sub/./a.txt", "sub//a.txt", "sub/"])
def test_dot_dot_dot_and_empty_components_are_refused(cwd, tail):
    with pytest.raises(PermissionError, match="component"):
        beneath.split(str(cwd), str(cwd) + "/" + tail)


def test_a_path_outside_the_directory_is_refused(cwd, tmp_path):
    for path in (tmp_path / "outside" / "secret.txt", str(cwd) + "-sibling/a.txt", "/"):
        with pytest.raises(PermissionError, match="outside"):
            beneath.split(str(cwd), str(path))


def test_a_relative_path_is_invalid(cwd):
    with pytest.raises(ValueError):
        beneath.split(str(cwd), "sub/a.txt")


def test_the_directory_itself_is_not_a_file(cwd):
    with pytest.raises(PermissionError):
        beneath.open_file(str(cwd), [], os.O_RDONLY)


def test_missing_folders_are_created_for_a_write(cwd):
    os.close(opened(cwd, cwd / "a" / "b" / "c.txt", WRITE, make_dirs=True))
    assert (cwd / "a" / "b" / "c.txt").is_file()


def test_a_missing_folder_is_not_found_for_a_read(cwd):
    with pytest.raises(FileNotFoundError):
        opened(cwd, cwd / "a" / "b.txt")


def test_creating_folders_stops_at_a_symlink_planted_in_the_middle(cwd, tmp_path):
    (cwd / "a").mkdir()
    os.symlink(str(tmp_path / "outside"), str(cwd / "a" / "b"))
    with pytest.raises(PermissionError, match="symbolic link"):
        opened(cwd, cwd / "a" / "b" / "c" / "d.txt", WRITE, make_dirs=True)
    assert os.listdir(str(tmp_path / "outside")) == ["secret.txt"]


def test_a_fifo_is_opened_without_blocking(cwd):
    os.mkfifo(str(cwd / "pipe"))
    fd = opened(cwd, cwd / "pipe")  # a blocking open would never return: there is no writer
    try:
        assert stat.S_ISFIFO(os.fstat(fd).st_mode)
    finally:
        os.close(fd)


def config(cwd: str, sidecar: str) -> Config:
    return Config(cwd, None, sidecar, {}, False)


@pytest.mark.parametrize("ask", [lambda cwd, sidecar, params: wire.read_text(config(cwd, sidecar), params),
                                 lambda cwd, sidecar, params: wire.write_text(config(cwd, sidecar),
                                                                              dict(params, content="x"))])
def test_the_file_channel_refuses_a_fifo_without_blocking(cwd, ask):
    os.mkfifo(str(cwd / "pipe"))
    with pytest.raises(PermissionError, match="not a regular file"):
        ask(str(cwd), str(cwd / "e.jsonl.d"), {"path": str(cwd / "pipe")})
