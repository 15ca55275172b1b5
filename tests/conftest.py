"""Shared fixtures.  Every test gets its own directory, and every process a
test started under it (runtimes, harnesses) is killed when the test ends."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile

import cliutil  # tests/ is on sys.path: pyproject.toml's pythonpath
import pytest


def pytest_configure(config):
    """One state directory (binding records, seal key) for the whole session,
    not the user's: a record a deleted test file left can never judge a file
    of another run or another session's tests that got its inode number.  Set
    before collection, so that an environment a test module builds when
    imported (cliutil.cli_env) has it, and the tests' own in-process calls
    (trusted.record, seals) use it too."""
    config.harnessctl_state = (os.environ.get("HARNESSCTL_STATE_DIR"), tempfile.mkdtemp(prefix="harnessctl-state-"))
    os.environ["HARNESSCTL_STATE_DIR"] = config.harnessctl_state[1]
    config.harnessctl_sockets = (os.environ.get("HARNESSCTL_SOCKET_DIR"), socket_dir())
    os.environ["HARNESSCTL_SOCKET_DIR"] = config.harnessctl_sockets[1]


def socket_dir() -> str:
    """The session's own fallback socket folder (HARNESSCTL_SOCKET_DIR), not the machine's /tmp/harnessctl-UID:
    test runs side by side (CI runs three) must not meet there, and tests acting as another user plant and move
    it.  Directly in /tmp, not made yet: harnessctl makes it, and the other user can plant one there."""
    return "/tmp/harnessctl-%d-test-%s" % (os.getuid(), secrets.token_hex(4))


def pytest_unconfigure(config):
    old, made = config.harnessctl_state
    shutil.rmtree(made, ignore_errors=True)
    shutil.rmtree(made + "-boxes", ignore_errors=True)  # the --sandbox sessions' box folders (harnessctl/box.py)
    old_sockets, sockets = config.harnessctl_sockets
    shutil.rmtree(sockets, ignore_errors=True)
    for name, value in (("HARNESSCTL_STATE_DIR", old), ("HARNESSCTL_SOCKET_DIR", old_sockets)):
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


SPREAD = {"test_acp_reach_real"}  # each test starts its own agent; together they outlast the rest of the suite


def pytest_collection_modifyitems(items):
    """Under pytest-xdist's `--dist loadgroup` (docs/DEVELOPMENT.md), a module's tests share one worker, so
    what a module starts once (an sshd, a cluster, an install) starts once; only the modules in SPREAD are
    dealt out test by test.  Without xdist the mark is inert."""
    for item in items:
        name = item.module.__name__.rpartition(".")[2]
        if name not in SPREAD:
            item.add_marker(pytest.mark.xdist_group(name))


@pytest.fixture
def workdir(tmp_path):
    """A fresh directory for event files; its processes are reaped afterwards."""
    yield tmp_path
    cliutil.kill_all_under(str(tmp_path))


@pytest.fixture
def project(workdir):
    """A session's cwd (`--cwd`): a scratch folder, never the checkout the tests run from, which may hold
    the interpreter a hook runs (the README's venv lies inside it, and a hook inside the cwd is refused:
    issue 47)."""
    folder = workdir / "project"
    folder.mkdir(exist_ok=True)
    return str(folder)


@pytest.fixture
def efile(workdir):
    """The path of a not-yet-existing event file."""
    return str(workdir / "events.jsonl")


@pytest.fixture
def mcp(workdir):
    """`harnessctl mcp --root WORKDIR`, initialized (tests/support/mcp_support/client.py); stopped after the test."""
    from mcp_support.client import Client

    client = Client("--root", str(workdir), cwd=str(workdir))
    client.initialize()
    yield client
    client.stop()


@pytest.fixture(scope="session")
def ssh_bed():
    """The OpenSSH test bed (tests/support/ssh_support.py) of the ssh:// tests: started once per test session,
    stopped at its end; without sshd the tests skip with the reason (fail under HARNESSCTL_REQUIRE_REAL=1)."""
    import ssh_support

    cliutil.missing_part(ssh_support.missing())
    bed = ssh_support.SshBed().start()
    try:
        yield bed
    finally:
        bed.stop()
