"""The OpenSSH test bed (tests/ssh_support.py) for the tests of ssh:// addresses: started once per test
session, stopped at its end; without sshd the tests skip with the reason (fail under HARNESSCTL_REQUIRE_REAL=1)."""

from __future__ import annotations

import os

import cliutil
import pytest
import ssh_support


@pytest.fixture(scope="session")
def ssh_bed():
    reason = ssh_support.missing()
    if reason:
        if os.environ.get("HARNESSCTL_REQUIRE_REAL") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    bed = ssh_support.SshBed().start()
    try:
        yield bed
    finally:
        bed.stop()


@pytest.fixture
def ssh_env(ssh_bed):
    """The CLI's test environment (cliutil.cli_env) with HARNESSCTL_SSH naming the bed and the remote command
    running this checkout's harnessctl with the same environment."""
    return ssh_bed.env(cliutil.cli_env(), cliutil.command())
