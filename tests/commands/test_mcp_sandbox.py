"""`harnessctl mcp --sandbox` and the send tool's `sandbox`: a box an MCP
caller asks for, or one the operator's server puts on every file a call
binds, which no call can turn off (docs/PROTOCOL-POLICY.md section 11,
docs/PROTOCOL-MCP.md section 21)."""

from __future__ import annotations

import json
import os

import pytest
from cliutil import run
from mcp_support.client import Client

from harnessctl import landlock

pytestmark = pytest.mark.skipif(landlock.why_not() is not None, reason=str(landlock.why_not()))


@pytest.fixture
def work(workdir):
    path = workdir / "work"  # beside the event files, not holding them: a box could not keep them
    path.mkdir()
    return str(path)


def server(workdir, *flags):
    client = Client("--root", str(workdir), *flags, cwd=str(workdir))
    client.initialize()
    return client


def bound(efile):
    with open(efile + ".d/binding.json") as f:
        return json.load(f)


def test_a_server_started_with_sandbox_boxes_every_file_a_call_binds(workdir, efile, work):
    client = server(workdir, "--sandbox", "--max-mode", "full")
    result = client.tool("send", file=efile, text="hi", adapter="mock", cwd=work, mode="full")
    client.stop()
    assert result["isError"] is False, result
    assert (bound(efile)["mode"], bound(efile)["sandbox"]) == ("full", True)


def test_a_call_cannot_turn_the_servers_box_off(workdir, efile, work):
    client = server(workdir, "--sandbox")
    result = client.tool("send", file=efile, text="hi", adapter="mock", cwd=work, sandbox=False)
    client.stop()
    assert result["isError"] is True and result["structuredContent"]["exit_code"] == 2
    assert "harnessctl mcp --sandbox" in result["structuredContent"]["error"]
    assert not os.path.exists(efile)


def test_a_call_may_ask_a_server_without_one_for_a_box(workdir, efile, work):
    client = server(workdir)
    result = client.tool("send", file=efile, text="hi", adapter="mock", cwd=work, sandbox=True)
    client.stop()
    assert result["isError"] is False, result
    assert bound(efile)["sandbox"] is True


def test_a_call_that_names_no_box_on_a_server_without_one_binds_none(workdir, efile, work):
    client = server(workdir)
    result = client.tool("send", file=efile, text="hi", adapter="mock", cwd=work)
    client.stop()
    assert result["isError"] is False, result
    assert "sandbox" not in bound(efile)


def test_mcp_sandbox_is_in_its_help():
    proc = run("mcp", "--help")
    assert proc.returncode == 0 and b"--sandbox" in proc.stdout
