"""`harnessctl mcp`: the commands as an MCP server over stdio (docs/PROTOCOL.md
section 21), for agents that take their tools from an MCP client.

JSON-RPC 2.0, one message per line.  The main thread reads stdin; each
tools/call runs in a thread of its own (a long wait never holds up a
status), at most MAX_CALLS at once (one more is answered busy: a client
must not be able to make the server run out of threads and exit), and
every line to stdout goes through one lock.  stdout carries
nothing else: the server moves fd 1 to stderr's file before anything can
print.  What the tools do is tools.py's, what a tool may ask of the
server call.py's; here are the lifecycle, the roots a path must lie
under, and cancellation."""

from __future__ import annotations

import json
import os
import sys
import threading

from .. import __version__, jsonfile
from ..errors import HarnessctlError, UnavailableError, UsageError
from ..visible import shown
from ..vocabulary import MODES
from .call import Call, Grants, check_path

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Tuple

# Newest first: the answer to a client that asks for none of these.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
MAX_LINE = 16 * 1024 * 1024  # bytes of one message: a send's text (4 MiB) and schema fit, escaped
ROOTS_PATIENCE = 10.0  # seconds a client gets to answer roots/list
MAX_CALLS = 16  # tool calls running at once (a thread each); one more is answered "busy" at once
INSTRUCTIONS = ("harnessctl drives coding agents (codex, claude, ACP agents, a mock) in sessions, each an event "
                "file. send starts or steers a run; wait/status show its result or a request that needs a reply; "
                "reply answers it; cancel stops it; log shows the transcript. Paths must lie under the allowed "
                "roots.")


def serve(roots: List[str], allow_agent_commands: bool, fixed_adapter: Optional[str] = None,
          fixed_agent: Optional[str] = None, max_mode: str = "ask", allow_rules: bool = False) -> int:
    """Run the server until stdin ends; 0.  A per-adapter package fixes the
    adapter (and agent) of its sends, as its `send` does.  `max_mode` and
    `allow_rules` are what the operator lets a call grant a new file."""
    for root in roots:
        if not os.path.isdir(root):
            raise UsageError("mcp: --root %s: %s" % (root, not_a_root(root)))
    if max_mode not in MODES:
        raise UsageError("--max-mode must be one of %s (got %r)" % (", ".join(MODES), max_mode))
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever prints by mistake lands on stderr, never amid the JSON-RPC lines
    sys.stdout = sys.stderr
    server = Server([os.path.realpath(root) for root in roots], allow_agent_commands, out, (fixed_adapter, fixed_agent),
                    max_mode, allow_rules)
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
    """One client's connection: what it declared, its calls in flight, and
    the answers to the requests the server sent it (roots/list)."""

    def __init__(self, roots: List[str], allow_agent_commands: bool, out: BinaryIO,
                 fixed: Tuple[Optional[str], Optional[str]] = (None, None), max_mode: str = "ask",
                 allow_rules: bool = False) -> None:
        self.fixed_roots = roots
        self.grants = Grants(fixed, allow_agent_commands, max_mode, allow_rules)
        self.out = out
        self.write_lock = threading.Lock()
        self.state = threading.Condition()  # guards what follows
        self.calls: Dict[str, threading.Event] = {}  # by json.dumps(id): set when the client cancels it
        self.answers: Dict[str, Dict[str, Any]] = {}  # responses to our own requests, by id
        self.roots_capable = False
        self.client_roots: Optional[List[str]] = None  # None: not asked yet (or changed since)
        self.asked = 0
        self.closing = threading.Event()  # stdin ended: every wait ends
        self.threads: List[threading.Thread] = []
        self.running = 0  # tool calls whose thread started and has not ended (at most MAX_CALLS)

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
            self.answered(message)
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
        else:
            self.requested(ident, method, params)

    def requested(self, ident: Any, method: str, params: Dict[str, Any]) -> None:
        if method == "initialize":
            self.respond(ident, self.initialize(params))
        elif method == "ping":
            self.respond(ident, {})
        elif method == "tools/list":
            from .tools import listing

            self.respond(ident, {"tools": listing()})
        elif method == "tools/call":
            self.start_call(ident, params)
        else:
            self.error(ident, METHOD_NOT_FOUND, "method not found: %s" % shown(method))

    def notified(self, method: str, params: Dict[str, Any]) -> None:
        """notifications/cancelled ends a call's wait; a changed list of roots
        is asked again when next needed; the rest (initialized ...) needs nothing."""
        with self.state:
            if method == "notifications/cancelled":
                cancelled = self.calls.get(json.dumps(params.get("requestId")))
                if cancelled is not None:
                    cancelled.set()
            elif method == "notifications/roots/list_changed":
                self.client_roots = None

    def answered(self, message: Dict[str, Any]) -> None:
        with self.state:
            self.answers[json.dumps(message["id"])] = message
            self.state.notify_all()

    def initialize(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """Speak the client's revision when it is one of ours, else our newest."""
        asked = params.get("protocolVersion")
        capabilities = params.get("capabilities")
        with self.state:
            self.roots_capable = isinstance(capabilities, dict) and isinstance(capabilities.get("roots"), dict)
        return {"protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "harnessctl", "version": __version__},
                "instructions": INSTRUCTIONS}

    # -- tool calls ---------------------------------------------------------------

    def start_call(self, ident: Any, params: Dict[str, Any]) -> None:
        from .tools import SCHEMAS

        name, arguments = params.get("name"), params.get("arguments", {})
        if name not in SCHEMAS:
            self.error(ident, INVALID_PARAMS, "unknown tool: %s (tools: %s)" % (shown(str(name)), ", ".join(SCHEMAS)))
            return
        if not isinstance(arguments, dict):
            self.error(ident, INVALID_PARAMS, "invalid params: arguments must be an object")
            return
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        cancelled = threading.Event()
        with self.state:
            full = self.running >= MAX_CALLS
            if not full:
                self.running += 1
                self.calls[json.dumps(ident)] = cancelled
        if full:
            self.respond(ident, busy("%d tool calls are running, as many as it runs at once" % MAX_CALLS))
            return
        call = Call(self.grants, self.inside, self.send, self.closing, cancelled, token)
        thread = threading.Thread(target=self.finish_call, args=(ident, name, arguments, call), daemon=True)
        try:
            thread.start()
        except RuntimeError as e:  # no thread to be had (ulimit -u): this call is refused, the server lives on
            self.ended(ident)
            self.respond(ident, busy("it cannot start a thread for the call (%s)" % e))
            return
        with self.state:
            self.threads = [t for t in self.threads if t.is_alive()] + [thread]

    def finish_call(self, ident: Any, name: str, arguments: Dict[str, Any], call: Call) -> None:
        """Run the tool and answer, unless the client cancelled the call (it
        wants no answer then, as the MCP specification says)."""
        from .tools import Cancelled
        from .tools import call as run_tool

        result: Optional[Dict[str, Any]] = None
        try:
            structured, text = run_tool(name, arguments, call)
            result = {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}
        except Cancelled:
            pass  # cancelled, or stdin ended: nobody wants the answer
        except HarnessctlError as e:
            result = tool_error(str(e), e.exit_code)
        except Exception as e:
            if os.environ.get("HARNESSCTL_DEBUG") == "1":
                import traceback

                traceback.print_exc()
            result = tool_error("internal error: %s: %s (set HARNESSCTL_DEBUG=1 for a traceback on stderr)"
                                % (type(e).__name__, e), 1)
        finally:
            self.ended(ident)
        if result is not None and not call.cancelled.is_set():
            self.respond(ident, result)

    def ended(self, ident: Any) -> None:
        """A call's thread is done (or never started): its slot is free."""
        with self.state:
            self.calls.pop(json.dumps(ident), None)
            self.running -= 1

    # -- roots --------------------------------------------------------------------

    def roots(self) -> List[str]:
        """The directories a path must lie under: --root, else the client's
        roots (when it has the capability and lists any), else our cwd."""
        if self.fixed_roots:
            return self.fixed_roots
        with self.state:
            capable, known = self.roots_capable, self.client_roots
        if capable and known is None:
            known = self.ask_roots()
            with self.state:
                self.client_roots = known
        return known or [os.path.realpath(os.getcwd())]

    def ask_roots(self) -> List[str]:
        """roots/list, answered within ROOTS_PATIENCE: its file:// roots,
        resolved; none when it fails or lists none."""
        from urllib.parse import unquote, urlparse

        with self.state:
            self.asked += 1
            ident = "harnessctl-roots-%d" % self.asked
        self.send({"jsonrpc": "2.0", "id": ident, "method": "roots/list"})
        key = json.dumps(ident)
        with self.state:
            self.state.wait_for(lambda: key in self.answers, ROOTS_PATIENCE)
            answer = self.answers.pop(key, {})
        found = (answer.get("result") or {}).get("roots") if isinstance(answer.get("result"), dict) else None
        roots = []
        for root in found if isinstance(found, list) else []:
            uri = urlparse(root.get("uri", "")) if isinstance(root, dict) and isinstance(root.get("uri"), str) else None
            if uri is not None and uri.scheme == "file" and uri.path:
                roots.append(os.path.realpath(unquote(uri.path)))
        return roots

    def inside(self, path: str, what: str) -> str:
        """`path` resolved (symlinks and all), if it lies under an allowed root."""
        if not path:
            raise UsageError("%s must not be empty" % what)
        check_path(path, what)
        real = os.path.realpath(path)
        roots = self.roots()
        if not any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots):
            raise UsageError("refusing %s %s: it is not under the allowed roots (%s)" % (what, real, ", ".join(roots)))
        return real

    # -- messages out -------------------------------------------------------------

    def respond(self, ident: Any, result: Dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": ident, "result": result})

    def error(self, ident: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})

    def send(self, message: Dict[str, Any]) -> None:
        """One line to the client; a client gone is noticed by the reader (EOF)."""
        data = json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n"
        with self.write_lock:
            try:
                self.out.write(data)
                self.out.flush()
            except (OSError, ValueError):
                pass


def tool_error(message: str, code: int) -> Dict[str, Any]:
    """A tool's failure: the CLI's one-line message and exit code, with the
    caller's text in it made inert as the CLI's stderr line is (visible.py)."""
    message = shown(message)
    return {"content": [{"type": "text", "text": "harnessctl: %s (exit %d)" % (message, code)}],
            "structuredContent": {"error": message, "exit_code": code}, "isError": True}


def busy(why: str) -> Dict[str, Any]:
    """The answer to a call the server runs no thread for: nothing was done;
    exit 5 (unavailable), as a runtime that holds no more waits answers."""
    return tool_error("the server is busy: %s; nothing was done, retry when a call has ended" % why,
                      UnavailableError.exit_code)


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
