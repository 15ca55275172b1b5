"""The detached runtime process: one per event file, its one writer.  The
coordinator owns the reactions that cross parts; each part (sends, cancel,
replies, spending, hooks, the harness's supervisor, the adapter's host) is
given only what it uses and knows no coordinator."""
