#!/usr/bin/env python3
"""A tiny stdio MCP server whose one tool, `file_ticket`, asks its client an
elicitation (a form: title, count) and answers with what came back: the
real-agent tests configure an agent with it, so an MCP server's elicitation
travels the whole way (MCP server -> agent -> ACP `elicitation/create` ->
harnessctl question -> reply -> back).  Each elicitation result is appended
as a JSON line to $ELICITING_MCP_LOG."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, Optional

FORM = {"type": "object", "properties": {"title": {"type": "string", "title": "Title"},
                                         "count": {"type": "integer", "title": "How many"}},
        "required": ["title", "count"]}
TOOL = {"name": "file_ticket", "description": "File a ticket; asks the user for its details.",
        "inputSchema": {"type": "object", "properties": {}}}


def send(msg: Dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(dict(msg, jsonrpc="2.0")) + "\n")
    sys.stdout.flush()


def read() -> Optional[Dict[str, Any]]:
    line = sys.stdin.readline()
    return json.loads(line) if line else None


def elicit() -> Dict[str, Any]:
    """Ask the client; its answer (requests of its own in between are refused)."""
    send({"id": "elicit-1", "method": "elicitation/create",
          "params": {"mode": "form", "message": "Details for the ticket", "requestedSchema": FORM}})
    while True:
        msg = read()
        if msg is None:
            sys.exit(0)
        if msg.get("id") == "elicit-1" and "method" not in msg:
            return msg.get("result") or {"error": msg.get("error")}
        if "id" in msg and "method" in msg:
            send({"id": msg["id"], "error": {"code": -32601, "message": "not offered"}})


def main() -> None:
    while True:
        msg = read()
        if msg is None:
            return
        method, rid = msg.get("method"), msg.get("id")
        if method == "initialize":
            version = (msg.get("params") or {}).get("protocolVersion") or "2025-06-18"
            send({"id": rid, "result": {"protocolVersion": version, "capabilities": {"tools": {}},
                                        "serverInfo": {"name": "tickets", "version": "0.0.1"}}})
        elif method == "tools/list":
            send({"id": rid, "result": {"tools": [TOOL]}})
        elif method == "tools/call":
            result = elicit()
            log = os.environ.get("ELICITING_MCP_LOG")
            if log:
                with open(log, "a", encoding="utf-8") as f:
                    f.write(json.dumps(result) + "\n")
            send({"id": rid, "result": {"content": [{"type": "text", "text": json.dumps(result)}]}})
        elif rid is not None:
            send({"id": rid, "result": {}} if method == "ping" else
                 {"id": rid, "error": {"code": -32601, "message": "Method not found: %s" % method}})


if __name__ == "__main__":
    main()
