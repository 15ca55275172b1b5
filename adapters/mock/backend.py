"""The mock adapter: drives the stand-in (standin.py) like a real harness."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, Optional

from harnessctl import private
from harnessctl.backend import Backend, Input

STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin.py")


class MockBackend(Backend):
    child: Any = None

    def start(self) -> None:
        self.runs: Dict[int, str] = {}  # stand-in turn number -> our run id
        self.requests: Dict[str, str] = {}  # our request id -> stand-in request id
        transcript = os.path.join(self.config.sidecar, "mock-transcript.jsonl")
        private.check_file(transcript, "transcript")  # the stand-in opens it: refuse one that is not ours here
        argv = [sys.executable, "-I", "-S", STANDIN, transcript]
        self.child = self.host.spawn(argv, self.config.env, self.config.cwd)

    def send(self, item: Input) -> None:
        self._write({"op": "input", "id": item.input_id, "text": item.text})

    def interrupt(self) -> None:
        self._write({"op": "interrupt"})

    def answer(self, request_id: str, answer: Any) -> None:
        self._write({"op": "answer", "request": self.requests.pop(request_id, None), "answer": answer})

    def stop(self) -> None:
        self.child.close_stdin()
        if self.child.wait(5) is None:
            self.child.kill()

    def on_line(self, line: str) -> None:
        try:
            event = json.loads(line)
            handler = getattr(self, "_on_" + event["ev"])
        except (ValueError, KeyError, TypeError, AttributeError):
            self.host.log("diagnostic", level="warning", message="unreadable stand-in line", line=line[:500])
            return
        handler(event)

    def _write(self, message: Dict[str, Any]) -> None:
        self.child.write_line(json.dumps(message))

    def _run(self, event: Dict[str, Any]) -> Optional[str]:
        return self.runs.get(event.get("turn"))

    def _on_ready(self, event: Dict[str, Any]) -> None:
        if event.get("resumed_turns"):
            self.host.log("diagnostic", message="resumed the stand-in conversation",
                          resumed_turns=event["resumed_turns"])
        self.host.ready()

    def _on_received(self, event: Dict[str, Any]) -> None:
        if event["delivery"] == "start":
            self.runs[event["turn"]] = self.host.new_run()
        self.host.accepted(event["id"], event["delivery"], self._run(event))

    def _on_delta(self, event: Dict[str, Any]) -> None:
        self.host.log("text.delta", run_id=self._run(event), text=event["text"])

    def _on_request(self, event: Dict[str, Any]) -> None:
        if event["kind"] == "permission":
            request_id = self.host.request(self._run(event), "permission", event["message"], options=["allow", "deny"])
        else:
            questions = [{"id": "q1", "question": event["message"]}]
            request_id = self.host.request(self._run(event), "question", event["message"],
                                           details={"questions": questions})
        self.requests[request_id] = event["request"]

    def _on_message(self, event: Dict[str, Any]) -> None:
        self.host.message(self._run(event), "%s-%s" % (self._run(event), event["id"]), event["text"])

    def _on_done(self, event: Dict[str, Any]) -> None:
        run_id = self.runs.pop(event["turn"], None)
        if event.get("deltas"):
            self.host.log("diagnostic", run_id=run_id, message="stand-in stream statistics",
                          deltas=event["deltas"], write_seconds=event.get("write_seconds"),
                          longest_write=event.get("longest_write"))
        self.host.result(run_id, event["inputs"], event["status"], output=event["output"], error=event.get("error"))
