"""The session store: what lies beside an event file and in the state
folder, and the one way to reach a file's runtime.  Where a session's files
are (address.py), its binding on disk (bindingfile.py), the records an agent
cannot forge (trusted.py), private files opened only when they are the
caller's own (private.py), the sidecar's locks (locks.py), the harness's pid
(pidfile.py), the socket wire (ipc.py) and the adapters found on disk
(registry.py)."""
