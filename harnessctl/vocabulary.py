"""The words every layer shares: how much an agent may do without asking
(`--mode`) and the kinds of tool call (EVENT.md, "Activity").  Kept at the
ground floor, importing nothing, so that the checks (which judge by them),
the adapter kit (which reports in them) and the registry (which checks a
manifest's mode table against them) need not import one another."""

MODES = ("ask", "edit", "full")  # --mode, from least to most the agent may do without asking
TOOL_KINDS = ("command", "file_change", "mcp", "web_search", "read", "search", "subagent", "other")
