"""The words every layer shares: how much an agent may do without asking
(`--mode`), the kinds of tool call (EVENT.md, "Activity") and the warnings a
waiter tells of.  Kept at the
ground floor, importing nothing, so that the checks (which judge by them),
the adapter kit (which reports in them) and the registry (which checks a
manifest's mode table against them) need not import one another."""

MODES = ("ask", "edit", "full")  # --mode, from least to most the agent may do without asking
TOOL_KINDS = ("command", "file_change", "mcp", "web_search", "read", "search", "subagent", "other")
# The `source` of a `log` warning a waiter gives a note of its own (notes.py): a harness retrying its model
# (the names codex and Claude Code give it: a retried `error`, `api_retry`), a run its agent shows nothing of
# (Activity.stalled), commands the harness cannot sandbox (Activity.cannot_sandbox).
RETRY_SOURCES = ("error", "api_retry")
STALL_SOURCE = "no_progress"
SANDBOX_SOURCE = "sandbox"
