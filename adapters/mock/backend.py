"""The mock adapter: drives the stand-in (standin.py) like a real harness."""

from __future__ import annotations

import json
import os
import sys

from harnessctl.kit import ChildBackend, Input, argv_line, permission_subject, unified_diff

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional

STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin.py")
TRANSCRIPT = "mock-transcript.jsonl"  # the stand-in's conversation: resumed at every start


class MockBackend(ChildBackend):
    KEY = "ev"
    HANDLERS = {"ready": "_on_ready", "received": "_on_received", "delta": "_on_delta", "request": "_on_request",
                "message": "_on_message", "done": "_on_done", "tool": "_on_tool", "edit": "_on_edit",
                "plan": "_on_plan", "usage": "_on_usage", "warning": "_on_warning"}

    RESUME_FILE = TRANSCRIPT  # `harnessctl fork` copies it; a fork starts from the copy (_fork)

    def start(self) -> None:
        self.runs: Dict[int, str] = {}  # stand-in turn number -> our run id
        self.session_logged = False
        transcript = self.config.harness_file(TRANSCRIPT, "transcript")  # the stand-in opens it
        if not self._fork(transcript):
            return
        argv = [sys.executable, "-I", "-S", STANDIN, transcript]
        if self.config.mode:
            argv.append(self.config.mode)  # the stand-in asks as the mode says
        self.spawn_harness(argv)

    def _fork(self, transcript: str) -> bool:
        """A forked file's first start: its transcript is the copy `fork` left
        (FILE.d/fork-TRANSCRIPT), as a real harness forks from the source's
        handle.  Once the transcript exists the fork is done and ignored.
        False (the start reported failed) when the copy cannot be made."""
        if os.path.lexists(transcript):
            return True
        try:
            fork = self.config.harness_file("fork-" + TRANSCRIPT, "fork transcript")
            with open(fork, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return True  # no fork: a new conversation
        except OSError as exc:
            self.host.start_failed("cannot fork the stand-in conversation: %s" % exc)
            return False
        try:
            fd = os.open(transcript, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except OSError as exc:
            self.host.start_failed("cannot fork the stand-in conversation: %s" % exc)
            return False
        return True

    def send(self, item: Input) -> None:
        message: Dict[str, Any] = {"op": "input", "id": item.input_id, "text": item.text}
        if item.schema is not None:
            message["schema"] = item.schema
        self.write_json(message)

    def interrupt(self) -> None:
        self.write_json({"op": "interrupt"})

    def answer(self, token: Any, answer: Any) -> None:
        self.write_json({"op": "answer", "request": token, "answer": answer})

    def _run(self, event: Dict[str, Any]) -> Optional[str]:
        return self.runs.get(event.get("turn"))  # type: ignore[arg-type]

    def _on_ready(self, event: Dict[str, Any]) -> None:
        if event.get("resumed_turns"):
            self.host.log("diagnostic", message="resumed the stand-in conversation",
                          resumed_turns=event["resumed_turns"])
        self.host.ready()

    def _on_received(self, event: Dict[str, Any]) -> None:
        if event["delivery"] == "start":
            self.runs[event["turn"]] = self.host.new_run()
        self.host.accepted(event["id"], event["delivery"], self._run(event))
        if not self.session_logged:  # with the first input, as Claude does: a file still starts with `accepted`
            self.session_logged = True
            self.activity.session(None, "mock", version=self.config.harness.get("version"), model=self.config.model)

    def _message_id(self, event: Dict[str, Any]) -> str:
        return "%s-msg-%s" % (self._run(event), event["turn"])

    def _on_delta(self, event: Dict[str, Any]) -> None:
        self.activity.text(self._run(event), self._message_id(event), event["text"])

    def _on_tool(self, event: Dict[str, Any]) -> None:
        run_id, command, code = self._run(event), event["command"], event["exit_code"]
        self.activity.tool_started(run_id, event["id"], "command", "shell", command, {"command": command})
        if event.get("declined"):
            self.activity.tool_completed(run_id, event["id"], "declined")
            return
        output = "mock output of: %s\n" % command
        self.activity.tool_output(run_id, event["id"], output)
        self.activity.tool_completed(run_id, event["id"], "completed" if code == 0 else "failed", code, output)

    def _on_edit(self, event: Dict[str, Any]) -> None:
        run_id, path = self._run(event), event["path"]
        self.activity.tool_started(run_id, event["id"], "file_change", "edit", path, {"path": path})
        if event.get("declined"):
            self.activity.tool_completed(run_id, event["id"], "declined")
            return
        diff = unified_diff(path, None, "written by the mock\n")
        self.activity.file_changed(run_id, event["id"], path, "add", diff)
        self.activity.tool_completed(run_id, event["id"], "completed")

    def _on_plan(self, event: Dict[str, Any]) -> None:
        self.activity.plan(self._run(event), [(text, status) for text, status in event["steps"]])

    def _on_request(self, event: Dict[str, Any]) -> None:
        if event["kind"] == "permission":
            self.host.request(self._run(event), "permission", event["message"], options=["allow", "deny"],
                              details=_subject(event.get("tool"), event.get("subject")), token=event["request"])
        else:
            questions = [{"id": "q1", "question": event["message"]}]
            self.host.request(self._run(event), "question", event["message"], details={"questions": questions},
                              token=event["request"])

    def _on_usage(self, event: Dict[str, Any]) -> None:
        self.activity.usage(self._run(event), input_tokens=event.get("input_tokens"),
                            output_tokens=event.get("output_tokens"))

    def _on_warning(self, event: Dict[str, Any]) -> None:
        self.activity.warning(self._run(event), event["message"], event.get("source"))

    def _on_message(self, event: Dict[str, Any]) -> None:
        self.host.message(self._run(event), self._message_id(event), event["text"])

    def _on_done(self, event: Dict[str, Any]) -> None:
        run_id = self.runs.pop(event["turn"], None)
        if event.get("deltas") or event.get("request_waits"):
            self.host.log("diagnostic", run_id=run_id, message="stand-in stream statistics",
                          deltas=event["deltas"], write_seconds=event.get("write_seconds"),
                          longest_write=event.get("longest_write"), request_waits=event.get("request_waits"))
        self.host.result(run_id, event["inputs"], event["status"], output=event["output"], usage=event.get("usage"),
                         error=event.get("error"))


def _command(subject: Optional[str]) -> Optional[str]:
    """A command subject as written, or given as JSON: a string (a line with
    a newline in it) or an argv (`["bash","-lc","make"]`), as harnesses send them."""
    if subject and subject[0] in "[\"":
        try:
            value = json.loads(subject)
        except ValueError:
            return subject
        if isinstance(value, list) and value and all(isinstance(word, str) for word in value):
            return argv_line(value)
        return value if isinstance(value, str) else subject
    return subject


def _subject(tool: Optional[str], subject: Optional[str]) -> Dict[str, Any]:
    """What a permission is about (`/permission KIND:SUBJECT`): a command line,
    `server.tool` of an MCP call, or a path."""
    if not tool:
        return {}
    if tool == "command":
        return permission_subject(tool, command=_command(subject))
    if tool == "mcp":
        return permission_subject(tool, mcp_tool=subject)
    return permission_subject(tool, paths=[subject] if subject else None)
