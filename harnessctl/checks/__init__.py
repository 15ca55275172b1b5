"""Pure checks of what the user allows and asks: the mode and rules, command
lines as the shell will run them, hooks, budgets, reply answers, `--schema`.
Nothing here runs, waits or writes; the runtime's parts (harnessctl/runtime/)
act on what these decide."""
