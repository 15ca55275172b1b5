"""The lean tiny adapter: a harness that runs one turn at a time and cannot
take an input while it works, so the core holds busy sends
(harnessctl/kit/holding.py) and starts the next run with all of them."""

from __future__ import annotations

from harnessctl.kit import ChildBackend, HeldInputs, Input, on_handlers

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional


class LeanBackend(ChildBackend):
    KEY = "is"
    HANDLERS = on_handlers("ran", "done")

    def start(self) -> None:
        self.run_id: Optional[str] = None  # the turn the harness works on
        self.inputs: List[str] = []  # its inputs
        self.tools = 0
        self.held = HeldInputs(self.host, self._start_run)
        argv = self.harness_argv([])
        if argv is not None and self.spawn_harness(argv):
            self.host.ready()

    def send(self, item: Input) -> None:
        if self.run_id is None:  # the harness reads its stdin in order: written is taken
            self.host.accepted(item.input_id, "start", self._start_run([item]))
        else:
            self.held.hold(item)

    def _start_run(self, items: List[Input]) -> str:
        self.run_id, self.inputs = self.host.new_run(), [i.input_id for i in items]
        self.write_json({"do": "work", "texts": [i.text for i in items]})
        return self.run_id

    def revoke(self, input_id: str) -> bool:
        return self.held.revoke(input_id)

    def interrupt(self) -> None:
        self.held.cancel()
        if self.run_id is not None:
            self.write_json({"do": "stop"})

    def _on_ran(self, msg: Dict[str, Any]) -> None:
        self.tools += 1
        tool_id, command = "lean-%d" % self.tools, str(msg["command"])
        self.activity.tool_started(self.run_id, tool_id, "command", "shell", command, {"command": command})
        self.activity.tool_completed(self.run_id, tool_id, "completed")  # it never says an exit code

    def _on_done(self, msg: Dict[str, Any]) -> None:
        run_id, inputs = self.run_id, self.inputs
        self.run_id, self.inputs = None, []
        self.host.message(run_id, "%s-reply" % run_id, msg["text"])
        self.host.result(run_id, inputs, msg["status"], output=msg["text"])
        self.held.start_next()
