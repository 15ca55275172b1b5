"""Sends held while a run is busy, for a harness that cannot steer.

A harness that cannot take an input into its running turn (and may even
cancel that turn when it gets a second prompt: gemini over ACP) must not be
written to while it works.  Such an input is still accepted at once, as
`queued` with no run, because the core promises the user a receipt; it
then starts the next run, together with every input held beside it, and
only then is it attributed: the same rule as everywhere, that attribution
is what the harness confirmed (here: the run we started with it), never a
guess.  A cancel drops what is held, each input with a `cancelled` result
and no run.

The adapter says it cannot steer by using this instead of steering: in
`send`, while a run is open, `held.hold(item)`; after it reported a run's
result, `held.start_next()`; in `interrupt`, `held.cancel()`; in `revoke`,
`return held.revoke(input_id)`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Callable, List

    from .backend import Host, Input


class HeldInputs:
    """The inputs accepted `queued` while a run is busy, in the order sent.

    `start_run(items)` is the adapter's: it starts ONE run with the items'
    texts, in order, and returns its run id (from `host.new_run()`)."""

    def __init__(self, host: Host, start_run: Callable[[List[Input]], str]) -> None:
        self.host = host
        self.start_run = start_run
        self.items: List[Input] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def hold(self, item: Input) -> None:
        """Accept `item` as queued, with no run yet: it starts the next one."""
        self.items.append(item)
        self.host.accepted(item.input_id, "queued", None)

    def start_next(self) -> None:
        """Once the busy run's result is reported: one run for everything held,
        each input attributed to it.  Nothing held, nothing happens."""
        items, self.items = self.items, []
        if items:
            run_id = self.start_run(items)
            for item in items:
                self.host.attributed(item.input_id, run_id)

    def revoke(self, input_id: str) -> bool:
        """Take back one held input (Backend.revoke): True if it was held."""
        kept = [i for i in self.items if i.input_id != input_id]
        taken, self.items = len(kept) != len(self.items), kept
        return taken

    def cancel(self) -> None:
        """A cancel: every held input ends `cancelled`, in no run."""
        items, self.items = self.items, []
        if items:
            self.host.result(None, [i.input_id for i in items], "cancelled")
