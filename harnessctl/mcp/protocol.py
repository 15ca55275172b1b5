"""The MCP revisions `harnessctl mcp` speaks, and every way they differ, in
one table: the server has one code path and asks this module where a
revision parts from another.

Two lines: the legacy revisions (2024-11-05 to 2025-11-25) open with an
`initialize` handshake whose answer holds for the connection; the modern one
(2026-07-28) has no handshake, and every request carries its revision and the
client's capabilities in `_meta`, so each is served on its own (a dual-era
server, as the 2026-07-28 versioning page calls it)."""

from __future__ import annotations

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"
TASKS = "io.modelcontextprotocol/tasks"



class Revision:
    """One revision and what sets it apart from the others."""

    def __init__(self, name: str, modern: bool, output_schemas: bool, id_optional: bool) -> None:
        self.name = name
        self.modern = modern  # per-request `_meta`, server/discover, `resultType` on every result, tasks
        self.output_schemas = output_schemas  # a tool may declare `outputSchema`
        self.id_optional = id_optional  # an error to a line whose id is unknown may leave `id` out

# Newest first: a legacy client that asks for none of these gets the newest legacy one.
REVISIONS = (
    Revision("2026-07-28", True, True, True),
    Revision("2025-11-25", False, True, True),
    Revision("2025-06-18", False, True, False),
    Revision("2025-03-26", False, False, False),
    Revision("2024-11-05", False, False, False),
)
BY_NAME = {revision.name: revision for revision in REVISIONS}
VERSIONS = [revision.name for revision in REVISIONS]
NEWEST_LEGACY = next(revision for revision in REVISIONS if not revision.modern)

UNSUPPORTED_VERSION, MISSING_CAPABILITY = -32022, -32021


def negotiated(asked: Any) -> Revision:
    """The revision `initialize` answers with: the client's when it is a
    legacy one of ours, else our newest legacy one (the client decides)."""
    revision = BY_NAME.get(asked) if isinstance(asked, str) else None
    return revision if revision is not None and not revision.modern else NEWEST_LEGACY


def modern_request(params: Dict[str, Any]) -> Optional[str]:
    """The revision a modern request names in `_meta`, or None for a
    legacy one (no such key: it relies on the connection's handshake)."""
    meta = params.get("_meta")
    if isinstance(meta, dict) and VERSION_KEY in meta:
        version = meta[VERSION_KEY]
        return version if isinstance(version, str) else ""
    return None


def client_has(params: Dict[str, Any], extension: str) -> bool:
    """Whether THIS request's per-request capabilities declare `extension`:
    a modern server must not infer capabilities from earlier requests."""
    meta = params.get("_meta")
    capabilities = meta.get(CAPABILITIES_KEY) if isinstance(meta, dict) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and isinstance(extensions.get(extension), dict)


def complete(revision: Revision, result: Dict[str, Any]) -> Dict[str, Any]:
    """A result as `revision` shapes it: a modern one says `resultType`."""
    if revision.modern and "resultType" not in result:
        return dict(result, resultType="complete")
    return result


def unsupported(requested: str) -> Dict[str, Any]:
    """The error to a modern request naming a revision we do not speak."""
    return {"code": UNSUPPORTED_VERSION, "message": "unsupported protocol version %s (supported: %s)"
            % (requested or '""', ", ".join(VERSIONS)), "data": {"supported": VERSIONS, "requested": requested}}


def missing_tasks() -> Dict[str, Any]:
    """The error to a tasks/* request whose capabilities lack the extension."""
    return {"code": MISSING_CAPABILITY, "message": "missing required client capability: the %s extension" % TASKS,
            "data": {"requiredCapabilities": {"extensions": {TASKS: {}}}}}


def discovery(server_info: Dict[str, Any], instructions: str) -> Dict[str, Any]:
    """server/discover's answer: every revision (the legacy ones through
    `initialize`), the tools and the Tasks extension.  Not to be cached
    across authorization contexts: the tools are this operator's."""
    return {"resultType": "complete", "supportedVersions": VERSIONS, "capabilities": capabilities(True),
            "_meta": {SERVER_INFO_KEY: server_info}, "instructions": instructions, "ttlMs": 0,
            "cacheScope": "private"}


def capabilities(modern: bool) -> Dict[str, Any]:
    found: Dict[str, Any] = {"tools": {"listChanged": False}}
    if modern:
        found["extensions"] = {TASKS: {}}
    return found


def tool_list(revision: Revision, tools: List[Dict[str, Any]]) -> Dict[str, Any]:
    """tools/list's answer: without `outputSchema` for a revision that has
    none; a modern one says how long it may be cached (not at all: it is
    cheap, and a server restarted with other flags must be seen)."""
    if not revision.output_schemas:
        tools = [{key: value for key, value in tool.items() if key != "outputSchema"} for tool in tools]
    if revision.modern:
        return {"resultType": "complete", "tools": tools, "ttlMs": 0, "cacheScope": "private"}
    return {"tools": tools}
