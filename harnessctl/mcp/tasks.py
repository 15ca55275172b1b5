"""A harnessctl run as an MCP task (the Tasks extension of 2026-07-28): a
`send` with `wait` or a `wait`, answered at once with a task handle its
caller polls (`tasks/get`), answers (`tasks/update`) and cancels
(`tasks/cancel`).

A task holds no thread and no copy of the run: each look asks the run's
event file what it holds now (waiting.wait with no time to wait: the live
runtime answers from memory), so a request answered from a shell moves the
task on as one answered here does, and the file stays the one source of
truth.  Only the answer a task ended with is kept, so that it is given out
the same however often it is asked for.

The ids are random (no `tasks/list` exists: an id is the caller's bearer
token) and name nothing on disk; a connection knows only its own."""

from __future__ import annotations

import json
import secrets
import threading
import time

from ..errors import HarnessctlError, StateError, UnavailableError
from ..visible import shown
from . import protocol
from .outcomes import INTERNAL_ERROR, INVALID_PARAMS, RpcError, rpc_error, tool_error, tool_result

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    from .call import Deferred

MAX_TASKS = 32  # tasks one connection holds at once
TTL = 24 * 3600.0  # seconds a task is kept after it was created (its run goes on)
KEEP_GIVEN = 60.0  # seconds an ended task is kept after its answer was first given out
POLL_MS = 1000  # the pollIntervalMs hint
TERMINAL = ("completed", "failed", "cancelled")
SUBSCRIPTION_LOOK = 0.25  # seconds between two looks at a subscription's tasks


class Task:
    """One run followed for its caller: what `tasks/get` tells of it."""

    def __init__(self, deferred: Deferred, now: float) -> None:
        self.id = secrets.token_urlsafe(24)
        self.lock = threading.Lock()  # a look, an update or a cancel at a time (calls run in threads)
        self.deferred = deferred
        self.created = _iso(now)
        self.updated = self.created
        self.started = time.monotonic()
        self.status = "working"
        self.message = "working"
        self.request: Optional[Dict[str, Any]] = None  # the parked request while input_required
        self.answer: Optional[Dict[str, Any]] = None  # the CallToolResult it ended with
        self.cancel_asked = False
        self.given: Optional[float] = None  # when its end was first given out (monotonic)

    def current(self) -> Dict[str, Any]:
        """The task as its event file has it now (tasks/get, notifications/tasks)."""
        with self.lock:
            self.look()
            if self.status in TERMINAL and self.given is None:
                self.given = time.monotonic()  # its end is given out now: kept KEEP_GIVEN longer
            return self.detailed()

    def look(self) -> None:
        """Bring the task up to what its event file holds now."""
        if self.status in TERMINAL:
            return
        deferred = self.deferred
        try:
            kind, line = deferred.session.wait(deferred.input_id, 0.0)
            if kind == "timeout" and deferred.timeout is not None and \
                    time.monotonic() - self.started >= deferred.timeout:
                self.end("completed", tool_result(*deferred.finish(("timeout", ""))))
            elif kind == "timeout":
                self.move("working", deferred.session.latest_activity(), None)
            elif kind == "request":
                request = json.loads(line)
                self.move("input_required", "waiting for a reply: %s" % shown(str(request.get("message", ""))),
                          request)
            elif kind == "cancelled" and self.cancel_asked:
                self.end("cancelled", None)
            else:
                self.end("completed", tool_result(*deferred.finish((kind, line))))
        except HarnessctlError as e:
            self.end("completed", tool_error(str(e), e.exit_code))

    def move(self, status: str, message: str, request: Optional[Dict[str, Any]]) -> None:
        if (status, message, request) != (self.status, self.message, self.request):
            self.status, self.message, self.request = status, message, request
            self.updated = _iso(time.time())

    def end(self, status: str, answer: Optional[Dict[str, Any]]) -> None:
        self.move(status, "the run was cancelled" if status == "cancelled" else "done", None)
        self.answer = answer
        self.deferred.session.close()

    def detailed(self) -> Dict[str, Any]:
        """The task as tasks/get and notifications/tasks show it."""
        shown_task: Dict[str, Any] = {
            "taskId": self.id, "status": self.status, "statusMessage": self.message, "createdAt": self.created,
            "lastUpdatedAt": self.updated, "ttlMs": int(TTL * 1000), "pollIntervalMs": POLL_MS}
        if self.status == "input_required" and self.request is not None:
            shown_task["inputRequests"] = {self.request["request_id"]: elicitation(self.request)}
        if self.status == "completed" and self.answer is not None:
            shown_task["result"] = self.answer
        return shown_task

    def answers(self, responses: Dict[str, Any]) -> List[Tuple[str, str]]:
        """(request id, the answer `reply` takes) for each response to the
        request parked now; a response to any other key is ignored (it was
        answered already, from here or a shell, or never asked)."""
        request = self.request
        if request is None or request.get("request_id") not in responses:
            return []
        request_id = request["request_id"]
        answer = reply_answer(request, responses[request_id])
        return [] if answer is None else [(request_id, answer)]


class Tasks:
    """One connection's tasks, by id; at most MAX_TASKS at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tasks: Dict[str, Task] = {}
        self.reserved = 0

    def reserve(self) -> bool:
        """Hold a place for a task a call may make; False when there is none."""
        with self.lock:
            self._forget()
            if len(self.tasks) + self.reserved >= MAX_TASKS:
                return False
            self.reserved += 1
            return True

    def release(self) -> None:
        with self.lock:
            self.reserved -= 1

    def create(self, deferred: Deferred) -> Task:
        """A task in a place reserved before (`reserve`)."""
        task = Task(deferred, time.time())
        with self.lock:
            self.reserved -= 1
            self.tasks[task.id] = task
        return task

    def find(self, task_id: Any) -> Optional[Task]:
        with self.lock:
            self._forget()
            return self.tasks.get(task_id) if isinstance(task_id, str) else None

    def close(self) -> None:
        """The client is gone: what each task's session holds open ends (Session.close)."""
        with self.lock:
            for task in self.tasks.values():
                task.deferred.session.close()

    def _forget(self) -> None:
        now = time.monotonic()
        for task_id, task in list(self.tasks.items()):
            if now - task.started >= TTL or task.given is not None and now - task.given >= KEEP_GIVEN:
                del self.tasks[task_id]
                task.deferred.session.close()


def update(task: Task, responses: Dict[str, Any], reply: Callable[[str, str], None]) -> None:
    """tasks/update: answer the parked request as `reply` does.  One
    answered meanwhile from elsewhere is no error: the file moved on."""
    with task.lock:
        for request_id, answer in task.answers(responses):
            try:
                reply(request_id, answer)
            except StateError:
                pass  # answered already, or expired: the next look shows what it became
            task.move("working", "the reply was sent", None)


def cancel(task: Task, cancel_run: Callable[[], None]) -> None:
    """tasks/cancel: the run is cancelled as `cancel` does; the task ends
    `cancelled` when the run's result says so (it may end otherwise first)."""
    with task.lock:
        if task.status in TERMINAL:
            return
        task.cancel_asked = True
        cancel_run()


# -- the requests of a task client ---------------------------------------------------------


def task_method(tasks: Tasks, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
    """tasks/get, tasks/update, tasks/cancel on one of this connection's
    tasks; any other id (guessed, another connection's, forgotten) is
    the same error, which says nothing of what exists."""
    task = tasks.find(params.get("taskId"))
    if task is None:
        raise RpcError(rpc_error(INVALID_PARAMS, "no such task (a task is forgotten %d s after its result "
                                 "was fetched, or a day after it began)" % KEEP_GIVEN))
    if method == "tasks/update":
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise RpcError(rpc_error(INVALID_PARAMS, "invalid params: inputResponses must be an object"))
        try:
            update(task, responses, task.deferred.session.reply)
        except HarnessctlError as e:
            raise RpcError(rpc_error(INVALID_PARAMS, "the answer was refused: %s" % e)) from None
        return {}
    if method == "tasks/cancel":
        try:
            cancel(task, task.deferred.session.cancel)
        except HarnessctlError as e:
            raise RpcError(rpc_error(INTERNAL_ERROR, "the run could not be cancelled: %s" % e)) from None
        return {}
    return task.current()


def listen(tasks: Tasks, ident: Any, params: Dict[str, Any], send: Callable[[Dict[str, Any]], None],
           cancelled: threading.Event, closing: threading.Event) -> Optional[Dict[str, Any]]:
    """subscriptions/listen: notifications/tasks for the connection's
    tasks among `taskIds`, each time one changes, until every one has
    ended (then the subscription ends with its result), the client
    cancels it, or stdin ends.  Other notification kinds are not offered."""
    notifications = params.get("notifications")
    wanted = notifications.get("taskIds") if isinstance(notifications, dict) else None
    if isinstance(wanted, list) and wanted and not protocol.client_has(params, protocol.TASKS):
        raise RpcError(protocol.missing_tasks())
    followed = [task for task in (tasks.find(i) for i in wanted or []) if task is not None]
    meta = {protocol.SUBSCRIPTION_KEY: ident}
    send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
        "_meta": meta, "notifications": {"taskIds": [task.id for task in followed]} if followed else {}}})
    said: Dict[str, Any] = {}
    while not (cancelled.is_set() or closing.is_set()):
        for task in followed:
            shown_task = task.current()
            if said.get(task.id) != shown_task:
                said[task.id] = shown_task
                send({"jsonrpc": "2.0", "method": "notifications/tasks", "params": dict(shown_task, _meta=meta)})
        if all(task.status in TERMINAL for task in followed):
            return {"_meta": meta}
        closing.wait(SUBSCRIPTION_LOOK)
    return None


# -- the parked request as an elicitation, and its answer back ---------------------


def elicitation(request: Dict[str, Any]) -> Dict[str, Any]:
    """A pending request as the elicitation/create a client shows its user
    or model: a permission's or a mode switch's options to pick one of, a
    question's fields (a question with none, such as a URL to open: its
    options)."""
    if request.get("kind") == "question" and request.get("questions"):
        questions = [q for q in request.get("questions") or [] if isinstance(q, dict)]
        properties = {str(q.get("id")): _field(q) for q in questions}
        required = sorted(str(q.get("id")) for q in questions if q.get("optional") is not True)
    else:
        descriptions = request.get("option_descriptions") or {}
        options = [str(o) for o in request.get("options") or []]
        properties = {"answer": {"type": "string", "title": "answer", "oneOf": [
            {"const": o, "title": shown(str(descriptions.get(o) or o)) if isinstance(descriptions, dict) else o}
            for o in options]}}
        required = ["answer"]
    return {"method": "elicitation/create", "params": {
        "mode": "form", "message": shown(str(request.get("message") or request.get("kind") or "a request")),
        "requestedSchema": {"type": "object", "properties": properties, "required": required}}}


def _field(question: Dict[str, Any]) -> Dict[str, Any]:
    field: Dict[str, Any] = {"type": "string", "title": shown(str(question.get("question") or question.get("id")))}
    if question.get("options"):
        field["enum"] = [str(o) for o in question["options"]]
    return field


def reply_answer(request: Dict[str, Any], response: Any) -> Optional[str]:
    """The answer `reply` takes for an elicitation's result, or None to
    leave the request parked: `accept` answers with what was filled in;
    `decline` denies a permission that offers `deny`, or picks a question's
    `decline`; `cancel` (dismissed) answers nothing."""
    if not isinstance(response, dict):
        return None
    action, content = response.get("action"), response.get("content")
    options = request.get("options") or []
    if action == "decline" and request.get("kind") != "question" and "deny" in options:
        return "deny"
    if action == "decline" and request.get("kind") == "question" and "decline" in options:
        return "decline"
    if action != "accept" or not isinstance(content, dict):
        return None
    if request.get("kind") == "question" and request.get("questions"):
        return json.dumps(content, ensure_ascii=False)
    answer = content.get("answer")
    return answer if isinstance(answer, str) else None


# -- what the run is doing -------------------------------------------------------------


def _iso(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % int(now % 1 * 1000)


def too_many() -> Dict[str, Any]:
    """The answer to a call that would make one task too many: nothing was done."""
    return tool_error("this connection holds %d tasks, as many as it may: a task is forgotten %d s after its "
                      "result was fetched (or cancel one); nothing was done" % (MAX_TASKS, KEEP_GIVEN),
                      UnavailableError.exit_code)
