"""The tiny adapter: the example of docs/ADAPTERS.md."""

from __future__ import annotations

from harnessctl.kit import ChildBackend, Input, on_handlers

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict


class TinyBackend(ChildBackend):
    KEY = "ev"
    HANDLERS = on_handlers("took", "ask", "ran", "end")

    def start(self) -> None:
        self.runs: Dict[int, str] = {}  # harness turn -> our run id
        argv = self.harness_argv([])
        if argv is not None and self.spawn_harness(argv):
            self.host.ready()  # the harness reads stdin at once: nothing to wait for

    def send(self, item: Input) -> None:
        self.write_json({"op": "prompt", "id": item.input_id, "text": item.text})

    def interrupt(self) -> None:
        self.write_json({"op": "cancel"})

    def answer(self, token: Any, answer: Any) -> None:
        self.write_json({"op": answer, "ask": token})

    def _on_took(self, msg: Dict[str, Any]) -> None:
        if not msg["joined"]:
            self.runs[msg["turn"]] = self.host.new_run()
        self.host.accepted(msg["id"], "steer" if msg["joined"] else "start", self.runs[msg["turn"]])

    def _on_ask(self, msg: Dict[str, Any]) -> None:
        self.host.request(self.runs.get(msg["turn"]), "permission", msg["what"], options=["allow", "deny"],
                          token=msg["ask"])

    def _on_ran(self, msg: Dict[str, Any]) -> None:
        run_id, tool_id = self.runs.get(msg["turn"]), "cmd-%d" % msg["turn"]
        self.activity.tool_started(run_id, tool_id, "command", "shell", msg["command"], {"command": msg["command"]})
        self.activity.tool_completed(run_id, tool_id, "completed", exit_code=msg["code"])

    def _on_end(self, msg: Dict[str, Any]) -> None:
        run_id = self.runs.pop(msg["turn"], None)
        if msg["text"]:
            self.host.message(run_id, "%s-answer" % run_id, msg["text"])
        self.host.result(run_id, msg["ids"], msg["status"], output=msg["text"])
