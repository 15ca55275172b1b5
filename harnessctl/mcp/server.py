"""`harnessctl mcp`: the commands as an MCP server over stdio (docs/PROTOCOL-MCP.md
section 21), for agents that take their tools from an MCP client.

JSON-RPC 2.0, one message per line, in both protocol lines (protocol.py:
the legacy `initialize` handshake and the per-request `_meta` of
2026-07-28).  The main thread reads stdin; each tools/call, tasks/* and
subscriptions/listen runs in a thread of its own (a long wait never holds
up a status), at most MAX_CALLS at once (one more is answered busy: a
client must not be able to make the server run out of threads and exit),
and every line to stdout goes through one lock.  stdout carries nothing
else: the server moves fd 1 to stderr's file before anything can print.
What the tools do is tools.py's, what a tool may ask of the server
call.py's, tasks tasks.py's and the roots roots.py's; here are the
dispatch, the threads and cancellation."""

from __future__ import annotations

import json
import os
import sys
import threading

from .. import __version__, jsonfile
from ..errors import HarnessctlError, UsageError
from ..remote.address import is_remote, parse
from ..sessions import Sessions
from ..visible import shown
from ..vocabulary import MODES
from . import protocol
from .call import Call, Cancelled, Deferred, Grants
from .outcomes import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
    busy,
    rpc_error,
    tool_error,
    tool_result,
)
from .protocol import TASKS, Revision
from .roots import Roots
from .tasks import Task, Tasks, listen, task_method, too_many

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Callable, Dict, Iterator, List, Optional, Tuple

    Work = Callable[[threading.Event], Optional[Dict[str, Any]]]  # a call's thread: its result, or None

TASK_METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
MAX_LINE = 16 * 1024 * 1024  # bytes of one message: a send's text (4 MiB) and schema fit, escaped
MAX_CALLS = 16  # calls running at once (a thread each); one more is answered "busy" at once
INSTRUCTIONS = ("harnessctl drives coding agents (codex, claude, ACP agents, a mock) in sessions, each an event "
                "file. send starts or steers a run; wait/status show its result or a request that needs a reply; "
                "reply answers it; cancel stops it; log shows the transcript; fork branches a session. Paths must lie "
                "under the allowed roots.")
SERVER_INFO = {"name": "harnessctl", "version": __version__}


def serve(roots: List[str], allow_agent_commands: bool, fixed_adapter: Optional[str] = None,
          fixed_agent: Optional[str] = None, max_mode: str = "ask", allow_rules: bool = False,
          sandbox: bool = False) -> int:
    """Run the server until stdin ends; 0.  A per-adapter package fixes the
    adapter (and agent) of its sends, as its `send` does.  `max_mode` and
    `allow_rules` are what the operator lets a call grant a new file;
    `sandbox`, that every file a call binds is boxed (send --sandbox)."""
    for root in roots:
        if is_remote(root):
            parse(root)  # a malformed address fails here; the folder is looked at there, by each command
        elif not os.path.isdir(root):
            raise UsageError("mcp: --root %s: %s" % (root, not_a_root(root)))
    if max_mode not in MODES:
        raise UsageError("--max-mode must be one of %s (got %r)" % (", ".join(MODES), max_mode))
    if sandbox:
        from ..landlock import why_not

        reason = why_not()
        if reason is not None:
            raise UsageError(reason)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever prints by mistake lands on stderr, never amid the JSON-RPC lines
    sys.stdout = sys.stderr
    server = Server([root if is_remote(root) else os.path.realpath(root) for root in roots], allow_agent_commands, out,
                    (fixed_adapter, fixed_agent), max_mode, allow_rules, sandbox)
    server.run(sys.stdin.buffer)
    return 0


def not_a_root(root: str) -> str:
    """Why `root` cannot be a root, for stderr: an MCP client that starts us
    shows its user only that the server failed to connect."""
    if root.startswith("~"):
        return "no such directory (the client ran no shell to expand ~: give the full path)"
    if not os.path.exists(root):
        return "no such directory (create it first)"
    return "not a directory"


class Server:
    """One client's connection: the revision its handshake chose (a modern
    request names its own), its calls in flight, its tasks and roots."""

    def __init__(self, roots: List[str], allow_agent_commands: bool, out: BinaryIO,
                 fixed: Tuple[Optional[str], Optional[str]] = (None, None), max_mode: str = "ask",
                 allow_rules: bool = False, sandbox: bool = False) -> None:
        self.grants = Grants(fixed, allow_agent_commands, max_mode, allow_rules, sandbox)
        self.out = out
        self.write_lock = threading.Lock()
        self.roots = Roots(roots, self.send)
        self.sessions = Sessions(roots)
        self.tasks = Tasks()
        self.revision = protocol.NEWEST_LEGACY  # the legacy connection's, until `initialize` says
        self.state = threading.Lock()  # guards what follows
        self.calls: Dict[str, threading.Event] = {}  # by json.dumps(id): set when the client cancels it
        self.closing = threading.Event()  # stdin ended: every wait ends
        self.threads: List[threading.Thread] = []
        self.running = 0  # calls whose thread started and has not ended (at most MAX_CALLS)

    def run(self, reader: BinaryIO) -> None:
        """Serve until stdin ends; then the waits end (unanswered: the client
        is gone) and the calls that act (a send, a reply) finish first."""
        for raw in lines(reader):
            if raw is None:
                self.error(None, PARSE_ERROR, "parse error: a line longer than %d MiB was skipped"
                           % (MAX_LINE // (1024 * 1024)))
            elif raw.strip():
                self.receive(raw)
        self.closing.set()
        with self.state:
            threads = list(self.threads)
        for thread in threads:
            thread.join()
        self.tasks.close()  # their remote waits end with the client

    # -- messages in ------------------------------------------------------------

    def receive(self, raw: bytes) -> None:
        """Handle one line: never raises, answers a bad one with one error."""
        try:
            message = jsonfile.loads(raw.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError too
            self.error(None, PARSE_ERROR, "parse error: the line is not JSON")
            return
        if not isinstance(message, dict):
            self.error(None, INVALID_REQUEST, "invalid request: not a JSON object")
            return
        ident, method = message.get("id"), message.get("method")
        valid_id = isinstance(ident, (str, int)) and not isinstance(ident, bool)
        if method is None and "id" in message and ("result" in message or "error" in message):
            self.roots.answered(message)
            return
        if not isinstance(method, str) or ("id" in message and not valid_id):
            self.error(ident if valid_id else None, INVALID_REQUEST,
                       "invalid request: %s" % ("no method" if not isinstance(method, str) else "bad id"))
            return
        params = message.get("params", {})
        if not isinstance(params, dict):
            if "id" in message:
                self.error(ident, INVALID_PARAMS, "invalid params: not an object")
            return
        if "id" not in message:
            self.notified(method, params)
            return
        version = protocol.modern_request(params)
        if version is None:
            self.requested(ident, method, params, self.revision)
        elif version in protocol.BY_NAME and protocol.BY_NAME[version].modern:
            self.requested(ident, method, params, protocol.BY_NAME[version])
        else:
            self.fail(ident, protocol.unsupported(version))

    def requested(self, ident: Any, method: str, params: Dict[str, Any], revision: Revision) -> None:
        if method == "server/discover":
            self.respond(ident, protocol.discovery(SERVER_INFO, INSTRUCTIONS))
        elif method == "initialize":
            self.respond(ident, self.initialize(params))
        elif method == "ping":
            self.respond(ident, protocol.complete(revision, {}))
        elif method == "tools/list":
            from .tools import listing

            self.respond(ident, protocol.tool_list(revision, listing()))
        elif method == "tools/call":
            self.start(ident, revision, lambda cancelled: self.tool_call(params, revision, cancelled), tool=True)
        elif method in TASK_METHODS and not (revision.modern and protocol.client_has(params, TASKS)):
            self.fail(ident, protocol.missing_tasks())
        elif method in TASK_METHODS:
            self.start(ident, revision, lambda cancelled: task_method(self.tasks, method, params))
        elif method == "subscriptions/listen" and revision.modern:
            self.start(ident, revision, lambda cancelled: listen(self.tasks, ident, params, self.send,
                                                                 cancelled, self.closing))
        else:
            self.error(ident, METHOD_NOT_FOUND, "method not found: %s" % shown(method))

    def notified(self, method: str, params: Dict[str, Any]) -> None:
        """notifications/cancelled ends a call's wait (or a subscription); a
        changed list of roots is asked again when next needed; the rest
        (initialized ...) needs nothing."""
        if method == "notifications/cancelled":
            with self.state:
                cancelled = self.calls.get(json.dumps(params.get("requestId")))
            if cancelled is not None:
                cancelled.set()
        elif method == "notifications/roots/list_changed":
            self.roots.changed()

    def initialize(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """The legacy handshake: the client's revision when it is one of
        ours, else our newest legacy one, for the rest of the connection."""
        revision = protocol.negotiated(params.get("protocolVersion"))
        capabilities = params.get("capabilities")
        self.revision = revision
        self.roots.declared(isinstance(capabilities, dict) and isinstance(capabilities.get("roots"), dict))
        return {"protocolVersion": revision.name, "capabilities": protocol.capabilities(False),
                "serverInfo": SERVER_INFO, "instructions": INSTRUCTIONS}

    # -- calls in threads -----------------------------------------------------------

    def start(self, ident: Any, revision: Revision, work: Work, tool: bool = False) -> None:
        """Run `work` in a thread of its own and answer with what it returns
        (None: no answer, the client cancelled); busy past MAX_CALLS, as a
        tool error to a tool call, else as a JSON-RPC error."""
        cancelled = threading.Event()
        with self.state:
            full = self.running >= MAX_CALLS
            if not full:
                self.running += 1
                self.calls[json.dumps(ident)] = cancelled
        if full:
            self.refuse(ident, revision, tool, "%d calls are running, as many as it runs at once" % MAX_CALLS)
            return
        thread = threading.Thread(target=self.finish, args=(ident, revision, work, cancelled), daemon=True)
        try:
            thread.start()
        except RuntimeError as e:  # no thread to be had (ulimit -u): this call is refused, the server lives on
            self.ended(ident)
            self.refuse(ident, revision, tool, "it cannot start a thread for the call (%s)" % e)
            return
        with self.state:
            self.threads = [t for t in self.threads if t.is_alive()] + [thread]

    def refuse(self, ident: Any, revision: Revision, tool: bool, why: str) -> None:
        """The server is busy: a tool error to a tool call, else a JSON-RPC error."""
        if tool:
            self.respond(ident, protocol.complete(revision, busy(why)))
        else:
            self.error(ident, INTERNAL_ERROR, busy(why)["structuredContent"]["error"])

    def finish(self, ident: Any, revision: Revision, work: Work, cancelled: threading.Event) -> None:
        """A call's thread: its answer, unless the client cancelled it (it
        wants none then, as the MCP specification says)."""
        error: Optional[Dict[str, Any]] = None
        try:
            result = work(cancelled)
        except RpcError as e:
            result, error = None, e.error
        finally:
            self.ended(ident)
        if error is not None:
            self.fail(ident, error)
        elif result is not None and not cancelled.is_set():
            self.respond(ident, protocol.complete(revision, result))

    def ended(self, ident: Any) -> None:
        """A call's thread is done (or never started): its slot is free."""
        with self.state:
            if self.calls.pop(json.dumps(ident), None) is not None:
                self.running -= 1

    # -- what the threads do ----------------------------------------------------------

    def tool_call(self, params: Dict[str, Any], revision: Revision, cancelled: threading.Event
                  ) -> Optional[Dict[str, Any]]:
        """Run a tool: its result, a task handle (a wait a task client takes
        as a task), a tool error, or None when the client cancelled it."""
        from .tools import SCHEMAS
        from .tools import call as run_tool

        name, arguments = params.get("name"), params.get("arguments", {})
        if name not in SCHEMAS:
            raise RpcError(rpc_error(INVALID_PARAMS, "unknown tool: %s (tools: %s)"
                                     % (shown(str(name)), ", ".join(SCHEMAS))))
        if not isinstance(arguments, dict):
            raise RpcError(rpc_error(INVALID_PARAMS, "invalid params: arguments must be an object"))
        meta = params.get("_meta")
        as_task = revision.modern and protocol.client_has(params, TASKS)
        if as_task and not self.tasks.reserve():
            return too_many()
        ask = not revision.modern
        call = Call(self.grants, lambda path, what: self.roots.inside(path, what, ask), self.send, self.closing,
                    cancelled, meta.get("progressToken") if isinstance(meta, dict) else None, as_task, self.sessions)
        task: Optional[Task] = None
        try:
            structured, text = run_tool(name, arguments, call)
            return tool_result(structured, text)
        except Deferred as deferred:
            task = self.tasks.create(deferred)
            return dict(task.current(), resultType="task")
        except Cancelled:
            return None  # cancelled, or stdin ended: nobody wants the answer
        except HarnessctlError as e:
            return tool_error(str(e), e.exit_code)
        except Exception as e:
            if os.environ.get("HARNESSCTL_DEBUG") == "1":
                import traceback

                traceback.print_exc()
            return tool_error("internal error: %s: %s (set HARNESSCTL_DEBUG=1 for a traceback on stderr)"
                              % (type(e).__name__, e), 1)
        finally:
            if as_task and task is None:
                self.tasks.release()

    # -- messages out -------------------------------------------------------------

    def respond(self, ident: Any, result: Dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": ident, "result": result})

    def error(self, ident: Any, code: int, message: str) -> None:
        self.fail(ident, rpc_error(code, message))

    def fail(self, ident: Any, error: Dict[str, Any]) -> None:
        """An error to a request, or to a line whose id is unknown (None):
        that one has no `id` where the connection's revision allows it."""
        answer: Dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "error": error}
        if ident is None and self.revision.id_optional:
            del answer["id"]
        self.send(answer)

    def send(self, message: Dict[str, Any]) -> None:
        """One line to the client; a client gone is noticed by the reader (EOF)."""
        text = json.dumps(message, separators=(",", ":"))
        if "\\ud" in text:  # a surrogate, maybe a lone one: what the client sent, echoed
            text = json.dumps(whole(message), separators=(",", ":"))
        data = text.encode("ascii") + b"\n"
        with self.write_lock:
            try:
                self.out.write(data)
                self.out.flush()
            except (OSError, ValueError):
                pass


def whole(value: Any) -> Any:
    """`value` with each lone surrogate of its strings (keys too) replaced by
    U+FFFD: json.dumps would write it as `\\ud800`, which is no character, and
    a strict parser (jq) refuses the whole line.  A client's id, method or
    arguments may hold one (a JSON escape), and an answer echoes them."""
    if isinstance(value, str):
        if value.isprintable():  # a surrogate is not
            return value
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value)
    if isinstance(value, dict):
        return {whole(key): whole(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [whole(item) for item in value]
    return value


def lines(reader: BinaryIO) -> Iterator[Optional[bytes]]:
    """The lines of `reader`, each at most MAX_LINE bytes: None for one that is
    longer (read to its end and dropped), so a client cannot make the server
    hold a line of any length."""
    while True:
        raw = reader.readline(MAX_LINE + 1)
        if not raw:
            return
        if len(raw) <= MAX_LINE or raw.endswith(b"\n"):
            yield raw
            continue
        while raw and not raw.endswith(b"\n"):
            raw = reader.readline(MAX_LINE)
        yield None
