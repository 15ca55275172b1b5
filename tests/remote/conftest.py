"""The environment of the tests of ssh:// addresses, over the OpenSSH test bed (tests/conftest.py's ssh_bed)."""

from __future__ import annotations

import cliutil
import pytest


@pytest.fixture
def ssh_env(ssh_bed):
    """The CLI's test environment (cliutil.cli_env) with HARNESSCTL_SSH naming the bed and the remote command
    running this checkout's harnessctl with the same environment."""
    return ssh_bed.env(cliutil.cli_env(), cliutil.command())
