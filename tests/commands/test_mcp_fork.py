"""The MCP `fork` tool (issue 36, item 5): what `harnessctl fork` does, its
line as the structured result, both paths and the cwd under the roots, and
a source's policy granted in another cwd held to the server's cap."""

from __future__ import annotations

import json
import os

from cliutil import ok
from mcp_support.client import structured


def test_the_fork_tool_gives_the_commands_line_and_the_fork_holds_the_conversation(mcp, workdir):
    source, new = str(workdir / "a.jsonl"), str(workdir / "b.jsonl")
    last = structured(mcp.tool("send", file=source, text="first words", adapter="mock", wait=True))["seq"]
    result = mcp.tool("fork", file=source, new_file=new)
    assert structured(result) == {"file": new, "forked_from": source, "seq": last}
    assert json.loads(result["content"][0]["text"]) == structured(result)
    found = structured(mcp.tool("send", file=new, text="/history", wait=True))
    assert found["output"] == 'history: ["first words"]'


def test_a_new_file_outside_the_roots_is_refused_and_not_made(mcp, workdir, tmp_path_factory):
    source = str(workdir / "a.jsonl")
    mcp.tool("send", file=source, text="hi", adapter="mock", wait=True)
    outside = str(tmp_path_factory.mktemp("elsewhere") / "b.jsonl")
    result = mcp.tool("fork", file=source, new_file=outside)
    assert result["isError"] is True and "not under the allowed roots" in result["structuredContent"]["error"]
    assert not os.path.lexists(outside) and not os.path.lexists(outside + ".d")


def test_a_cwd_outside_the_roots_is_refused(mcp, workdir):
    source, new = str(workdir / "a.jsonl"), str(workdir / "b.jsonl")
    mcp.tool("send", file=source, text="hi", adapter="mock", wait=True)
    result = mcp.tool("fork", file=source, new_file=new, cwd="/")
    assert result["isError"] is True and "refusing cwd /" in result["structuredContent"]["error"]
    assert not os.path.lexists(new)


def test_a_refusal_is_a_tool_error_with_the_commands_exit_code(mcp, workdir):
    source = str(workdir / "a.jsonl")
    mcp.tool("send", file=source, text="hi", adapter="mock", wait=True)
    result = mcp.tool("fork", file=source, new_file=source)
    assert result["isError"] is True and result["structuredContent"]["exit_code"] == 2


def test_a_full_mode_source_forked_into_another_cwd_is_held_to_max_mode(mcp, workdir):
    source, new, other = str(workdir / "a.jsonl"), str(workdir / "b.jsonl"), workdir / "other"
    other.mkdir()
    ok("send", source, "hi", "--adapter", "mock", "--mode", "full", "--cwd", str(workdir), "--wait")
    result = mcp.tool("fork", file=source, new_file=new, cwd=str(other))
    assert result["isError"] is True and "--max-mode" in result["structuredContent"]["error"]
    assert not os.path.lexists(new)
    assert structured(mcp.tool("fork", file=source, new_file=new))["file"] == new  # same cwd: the grant it had
