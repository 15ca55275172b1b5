"""The tools `harnessctl mcp` offers: each one's input JSON Schema and a
handler that builds what the command line builds (commands.py, the layer
under both) and calls what it calls (client.py, log.py), so a tool never
behaves otherwise than its command.

A handler gets the call (call.Call: the allowed roots, the progress-aware
wait) and the checked arguments, and returns (structured result, its text:
the same serialized); a HarnessctlError it raises becomes a tool error with
that message and exit code (server.py).  Each tool's outputSchema, the
shapes of its structured results, is results.py's."""

from __future__ import annotations

import json

from .. import commands, fields
from ..commands import OUTCOME_CODES, Send, check_text, fixed, waited_line
from ..errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    from .call import Call

    Result = Tuple[Dict[str, Any], str]

FILE = {"type": "string", "minLength": 1,
        "description": "the event file (its path is the session); it must lie under an allowed root"}
TIMEOUT = {"type": "number", "minimum": 0, "description": "stop waiting after this many seconds (default: no limit)"}


def _tool(description: str, properties: Dict[str, Any], required: List[str]) -> Dict[str, Any]:
    return {"description": description, "inputSchema": {"type": "object", "properties": properties,
                                                        "required": required, "additionalProperties": False}}


SCHEMAS = {
    "send": _tool(
        "Start a run of the agent on FILE when it is idle, or steer the run going on (harnessctl send). "
        "Returns the accepted input_id; with wait: true, also waits for its result or the first request "
        "that needs a reply (outcome completed, failed, cancelled, request or timeout).",
        {"file": FILE, "text": {"type": "string", "description": "the input"}, **fields.mcp_properties(),
         "schema": {"type": "object", "description": "a JSON Schema the run's final answer must fit"},
         "queue": {"type": "boolean", "description": "never steer: a busy session holds the input for a run of "
                   "its own (cancel with its input_id takes it back until then)"},
         "interrupt": {"type": "boolean", "description": "cancel the running run; this input starts the next"},
         "wait": {"type": "boolean", "description": "wait for the result (or a request) of this input"},
         "timeout": TIMEOUT},
        ["file", "text"]),
    "wait": _tool(
        "Wait for the result of an input (or the first request of its run that needs a reply); without "
        "input_id, until the conversation is neither running nor cancelling (harnessctl wait).",
        {"file": FILE, "input_id": {"type": "string", "minLength": 1}, "timeout": TIMEOUT}, ["file"]),
    "status": _tool(
        "The status of each session: state, run, pending requests, binding (harnessctl status).",
        {"files": {"type": "array", "minItems": 1, "items": dict(
            FILE, description="an event file, or a directory: each *.jsonl file directly in it, sorted by name; "
                              "it must lie under an allowed root")}}, ["files"]),
    "reply": _tool(
        "Answer a pending request: a permission or a mode switch takes one of its options (allow, deny ...), "
        "a question an object keyed by question id, for one question text, or one of its options (an "
        "elicitation's decline, cancel) (harnessctl reply).",
        {"file": FILE, "request_id": {"type": "string"},
         "answer": {"type": ["string", "object"], "description": "the answer"}},
        ["file", "request_id", "answer"]),
    "cancel": _tool(
        "Interrupt the active run, drop queued inputs and expire pending requests (harnessctl cancel); with "
        "input_id, take back only that queued input, which the agent then never sees.",
        {"file": FILE, "input_id": {"type": "string", "minLength": 1}}, ["file"]),
    "log": _tool(
        "The session as people read it: the transcript text and its entries (harnessctl log --json).",
        {"file": FILE, "runs": {"type": "integer", "minimum": 1, "description": "the last N runs (default 20)"},
         "since": {"type": "integer", "minimum": 1, "description": "from the first line of this seq on"}},
        ["file"]),
    "fork": _tool(
        "Make new_file a new session that continues file's conversation with the harness's own fork, "
        "bound as file is (cwd: another working directory, such as a git worktree); file must be idle and "
        "is never written (harnessctl fork).",
        {"file": FILE, "new_file": dict(FILE, description="the new event file: must not exist; under an allowed root"),
         "cwd": {"type": "string", "description": "the new file's working directory, under an allowed root "
                                                  "(default: file's)"},
         "worktree": {"type": "boolean", "description": "the new file works in a git worktree of its own that starts "
                                                        "with file's files as they are now (not with cwd)"}},
        ["file", "new_file"]),
}


def listing() -> List[Dict[str, Any]]:
    """tools/list's `tools`: each with the outputSchema of its structuredContent (results.py)."""
    from .results import output_schemas

    outputs = output_schemas()
    return [dict(schema, name=name, outputSchema=outputs[name]) for name, schema in SCHEMAS.items()]


def call(name: str, arguments: Dict[str, Any], call: Call) -> Result:
    """Run tool `name`; UsageError for arguments its schema refuses."""
    check(SCHEMAS[name]["inputSchema"], arguments, "arguments")
    check_strings(arguments)
    return HANDLERS[name](arguments, call)


# -- the handlers -----------------------------------------------------------------


def send(args: Dict[str, Any], call: Call) -> Result:
    file = call.inside(args["file"], "file")
    adapter, agent = fixed(args.get("adapter"), args.get("agent"), *call.grants.fixed)
    if agent is not None:
        call.grants.check_agent(adapter, agent)
    session = call.sessions.at(file)
    cwd = args.get("cwd")
    if cwd is None:  # a new file's cwd is the server's: it too must be allowed
        cwd = session.new_cwd()
    if cwd is not None:
        cwd = session.held_cwd(cwd, call.inside)
    if "timeout" in args and not args.get("wait"):
        raise UsageError("timeout applies to wait: add \"wait\": true, or leave timeout out")
    rules = [(verb, rule) for verb, rule in args.get("rules", [])]
    if any(verb not in ("allow", "deny") for verb, _ in rules):
        raise UsageError('a rule is ["allow" or "deny", "KIND[:GLOB]"]')
    call.grants.check_grant(session.binding(), args.get("mode"), rules)
    if args.get("worktree"):
        session.hold_worktree(cwd, None, call.inside)
    text = check_text(args["text"])
    if "schema" in args:
        from ..checks.structured import check_size

        check_size(args["schema"])
    given = {name: args.get(name) for name in fields.mcp_properties()}
    given.update(cwd=cwd, adapter=adapter, agent=agent, rules=rules or None,
                 sandbox=call.grants.boxed(args.get("sandbox")))
    request = Send(file, text, fields.parsed(given), args.get("schema"),
                   commands.deliver(bool(args.get("queue")), bool(args.get("interrupt"))))
    input_id = session.send(request)
    if not args.get("wait"):
        return _json({"outcome": "accepted", "exit_code": 0, "input_id": input_id})
    return call.wait(file, input_id, args.get("timeout"), lambda found: outcome(found, input_id))


def wait(args: Dict[str, Any], call: Call) -> Result:
    file = call.inside(args["file"], "file")
    return call.wait(file, args.get("input_id"), args.get("timeout"),
                     lambda found: outcome(waited_line(args["file"], found), args.get("input_id")))


def status(args: Dict[str, Any], call: Call) -> Result:
    """Each file's line; a directory's event files in its place, each held
    to the roots too (a symlink in it may lead out)."""
    lines = call.sessions.statuses(args["files"], lambda path: call.inside(path, "file"))
    return _json({"statuses": [json.loads(line) for found in lines for line in found]})


def reply(args: Dict[str, Any], call: Call) -> Result:
    file = call.inside(args["file"], "file")
    answer = args["answer"]
    if not isinstance(answer, str):
        answer = json.dumps(answer, ensure_ascii=False)
    call.sessions.at(file).reply(args["request_id"], answer)
    return _json({"outcome": "replied", "exit_code": 0, "request_id": args["request_id"]})


def cancel(args: Dict[str, Any], call: Call) -> Result:
    input_id = args.get("input_id")
    call.sessions.at(call.inside(args["file"], "file")).cancel(input_id)
    if input_id is not None:
        return _json({"outcome": "revoked", "exit_code": 0, "input_id": input_id})
    return _json({"outcome": "done", "exit_code": 0})


def log(args: Dict[str, Any], call: Call) -> Result:
    file = call.inside(args["file"], "file")
    if "runs" in args and "since" in args:
        raise UsageError("since and runs both say where to start: give one")
    session = call.sessions.at(file)
    text = "\n".join(session.pieces(args.get("since"), args.get("runs"), False))
    entries = [json.loads(piece) for piece in session.pieces(args.get("since"), args.get("runs"), True)]
    return _json({"text": text, "entries": entries})


def fork(args: Dict[str, Any], call: Call) -> Result:
    file = call.inside(args["file"], "file")
    new_file = call.inside(args["new_file"], "new_file")
    session = call.sessions.at(file)
    cwd = session.held_cwd(args["cwd"], call.inside) if "cwd" in args else None
    if cwd is not None:  # the source's policy granted in another place: held to the cap as a new file's
        bound = session.binding() or {}
        call.grants.check_grant(None, bound.get("mode"), [(verb, rule) for verb, rule in bound.get("rules") or []])
    if args.get("worktree"):
        session.hold_worktree(None, new_file, call.inside)
    return _json(json.loads(session.fork(new_file, cwd, bool(args.get("worktree")))))


HANDLERS: Dict[str, Callable[[Dict[str, Any], Call], Result]] = {
    "send": send, "wait": wait, "status": status, "reply": reply, "cancel": cancel, "log": log, "fork": fork}


def outcome(found: Tuple[str, str], input_id: Optional[str]) -> Result:
    """A wait's result: the line parsed, with `outcome` (the CLI's kind of
    what it waited for: completed, failed, cancelled, request, timeout, or
    status without an input id) and the exit code the CLI would give."""
    kind, line = found
    result: Dict[str, Any] = json.loads(line) if line else {}
    if input_id is not None:
        result.setdefault("input_id", input_id)
    result.update(outcome=kind, exit_code=OUTCOME_CODES.get(kind, 1))
    return _json(result)


def _json(structured: Dict[str, Any]) -> Result:
    """A result and its text: the same object serialized, as the MCP
    specification asks of a tool with structured content (a client that
    shows only text, or a model that reads only text, sees everything)."""
    return structured, json.dumps(structured, ensure_ascii=False, separators=(",", ":"))


# -- arguments ---------------------------------------------------------------------

PATHS = ("file", "files", "cwd", "new_file")  # checked path by path (mcp.check_path): one bad path fails only itself


def check_strings(arguments: Dict[str, Any]) -> None:
    """Every string of the arguments but the paths must be UTF-8 text (a lone
    surrogate is none: it could not reach the runtime, the harness or the
    event file), and hold no NUL (it would end an argv word), but in a schema,
    which travels as JSON.  Walked without recursion: any depth JSON allows."""
    stack = [(name, value, name != "schema") for name, value in arguments.items() if name not in PATHS]
    while stack:
        where, value, no_nul = stack.pop()
        if isinstance(value, dict):
            stack.extend(("%s key" % where, key, no_nul) for key in value)
            stack.extend(("%s.%s" % (where, key), item, no_nul) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend(("%s[%d]" % (where, index), item, no_nul) for index, item in enumerate(value))
        elif isinstance(value, str):
            if no_nul and "\0" in value:
                raise UsageError("%s holds a NUL character" % where)
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise UsageError("%s is not valid UTF-8: it holds a lone surrogate" % where) from None

TYPES: Dict[str, Any] = {"string": str, "object": dict, "array": list, "boolean": bool, "number": (int, float),
                         "integer": int}


def check(schema: Dict[str, Any], value: Any, where: str) -> None:
    """Hold `value` to the small part of JSON Schema the tool schemas use, so
    a caller learns which argument is wrong (exit 2) before anything runs."""
    kinds = schema.get("type")
    if kinds is not None:
        names = kinds if isinstance(kinds, list) else [kinds]
        if isinstance(value, bool) and "boolean" not in names or not isinstance(value, tuple(TYPES[n] for n in names)):
            raise UsageError("%s must be %s" % (where, " or ".join("an " + n if n[0] in "aeiou" else "a " + n
                                                                   for n in names)))
    if "enum" in schema and value not in schema["enum"]:
        raise UsageError("%s must be one of %s" % (where, ", ".join(schema["enum"])))
    if "minimum" in schema and value < schema["minimum"]:
        raise UsageError("%s must be at least %s" % (where, schema["minimum"]))
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        raise UsageError("%s must be more than %s" % (where, schema["exclusiveMinimum"]))
    if isinstance(value, (str, list)) and len(value) < schema.get("minLength", schema.get("minItems", 0)):
        raise UsageError("%s must not be empty" % where)
    if isinstance(value, list):
        if len(value) > schema.get("maxItems", len(value)):
            raise UsageError("%s has too many items" % where)
        for i, item in enumerate(value):
            check(schema.get("items", {}), item, "%s[%d]" % (where, i))
    if isinstance(value, dict) and "properties" in schema:
        for name in schema.get("required", []):
            if name not in value:
                raise UsageError("%s: missing %s" % (where, name))
        for name, item in value.items():
            if name not in schema["properties"]:
                raise UsageError("%s: unknown argument %s (known: %s)" % (where, name, ", ".join(schema["properties"])))
            check(schema["properties"][name], item, name)
