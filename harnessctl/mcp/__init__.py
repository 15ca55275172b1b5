"""`harnessctl mcp`: the MCP server over stdio (lifecycle, roots, progress,
cancellation) and its tools, which stand on commands.py as the CLI does."""
