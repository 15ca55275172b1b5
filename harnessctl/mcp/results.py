"""The `outputSchema` of each tool: a JSON Schema of the structuredContent
its results carry (docs/PROTOCOL-MCP.md section 21), built from the tables the
results are built from, so a new outcome, bound field or event field shows
in the schema without an edit here: the outcomes and their exit codes
(commands.OUTCOME_CODES), the fields a status line shows of the binding
(fields.FIELDS), which fields a result or request line has and which it
must have (eventfile.wellformed.FIELDS, EVENT.md).  What those tables do
not say is below: the JSON type of each event field, which line a wait's
outcome returns, and the conversation part of a status line (section 7).

A tool error's structuredContent ({"error", "exit_code"}) is one of the
shapes of every tool: the MCP TypeScript SDK, in most clients, holds the
structuredContent of an error result to the outputSchema too.

Only keywords every JSON Schema draft reads alike (type, const, enum,
properties, required, items, anyOf, minLength, minimum): a client may
validate with a draft-07 validator (Ajv) though MCP says 2020-12."""

from __future__ import annotations

from .. import fields
from ..commands import OUTCOME_CODES
from ..eventfile.wellformed import FIELDS as EVENT_FIELDS

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List

STRING: Dict[str, Any] = {"type": "string"}
ID: Dict[str, Any] = {"type": "string", "minLength": 1}
NULLABLE_ID: Dict[str, Any] = {"type": ["string", "null"], "minLength": 1}
NULLABLE_STRING: Dict[str, Any] = {"type": ["string", "null"]}
COUNT: Dict[str, Any] = {"type": "integer", "minimum": 0}

# The JSON type of each field of the lines a wait returns (EVENT.md); which
# fields a line has, and which it must have, is wellformed.FIELDS's.
EVENT_TYPES: Dict[str, Dict[str, Any]] = {
    "type": STRING, "ts": STRING, "seq": {"type": "integer", "minimum": 1},
    "run_id": NULLABLE_ID, "input_ids": {"type": "array", "items": ID}, "status": STRING, "output": STRING,
    "usage": {"type": ["object", "null"]}, "cost_usd": {"type": ["number", "null"]}, "error": NULLABLE_STRING,
    "error_class": NULLABLE_STRING, "output_json": {}, "totals": {"type": "object"},
    "request_id": ID, "state": STRING, "kind": STRING, "message": STRING, "options": {"type": "array", "items": STRING},
    "tool": NULLABLE_STRING, "questions": {"type": "array", "items": {"type": "object", "properties": {
        "id": STRING, "question": STRING}, "required": ["id", "question"]}},
    "answer": {"type": ["string", "object"]},
}

# The line a wait returns for each outcome (section 9): an event line of that
# type, the status line, or nothing but the input id (a timeout).
WAITED = {"completed": "result", "failed": "result", "cancelled": "result", "request": "request", "status": "status",
          "timeout": None}

# The conversation part of a status line (section 7, state.Conversation.status) and what follows the binding.
STATES = ("idle", "running", "awaiting_reply", "cancelling", "failed")
STATUS_HEAD: Dict[str, Dict[str, Any]] = {
    "file": STRING, "state": {"type": "string", "enum": list(STATES)}, "run_id": NULLABLE_ID, "queued": COUNT,
    "requests": {"type": "array", "items": {"type": "object", "properties": {
        "request_id": ID, "kind": STRING, "message": STRING}, "required": ["request_id", "kind", "message"]}},
}
STATUS_TAIL: Dict[str, Dict[str, Any]] = {
    "runtime": {"type": "string", "enum": ["alive", "stopped", "elsewhere"]}, "last_activity": NULLABLE_STRING,
    "totals": {"type": "object", "properties": {"tokens": COUNT, "cost_usd": {"type": ["number", "null"]}},
               "required": ["tokens", "cost_usd"]},
}

# A tool error, and a status line's error line in place of a file's status (section 21, section 7).
ERROR = {"type": "object", "properties": {"error": STRING, "exit_code": {"type": "integer", "minimum": 1}},
         "required": ["error", "exit_code"]}
FILE_ERROR = {"type": "object", "properties": {"file": STRING, "error": STRING,
                                               "exit_code": {"type": "integer", "minimum": 1}},
              "required": ["file", "error", "exit_code"]}


def shape(properties: Dict[str, Any], required: List[str]) -> Dict[str, Any]:
    """An object with these properties (others allowed: readers ignore unknown fields)."""
    return {"type": "object", "properties": properties, "required": required}


def done(outcome: str, **properties: Any) -> Dict[str, Any]:
    """An act's result: `outcome` (its exit code 0) and `properties`, all there."""
    return shape(dict(outcome={"const": outcome}, exit_code={"const": 0}, **properties),
                 ["outcome", "exit_code", *properties])


def event_line(kind: str) -> Dict[str, Any]:
    """A line of the event file, of type `kind`, parsed."""
    properties = {"type": {"const": kind}, "ts": EVENT_TYPES["ts"], "seq": EVENT_TYPES["seq"]}
    required = ["type", "ts", "seq"]
    for name, _, must in EVENT_FIELDS[kind]:
        properties[name] = EVENT_TYPES[name]
        if must:
            required.append(name)
    return shape(properties, required)


def bound(field: fields.Field) -> Dict[str, Any]:
    """What a status line shows of one bound field: its value, of the type its
    MCP property gives (or null, when always shown), or only `true`."""
    if field.status == fields.THAT_BOUND:
        return {"const": True}
    schema = {key: value for key, value in (field.mcp or {}).items() if key in ("type", "items", "enum")}
    if field.status == fields.ALWAYS and "type" in schema:
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    return schema


def status_line() -> Dict[str, Any]:
    """A status line with `file` (section 7): the binding's fields as the binding table shows them."""
    properties = dict(STATUS_HEAD)
    properties.update((field.name, bound(field)) for field in fields.FIELDS)
    properties.update(STATUS_TAIL)
    always = [field.name for field in fields.FIELDS if field.status == fields.ALWAYS]
    return shape(properties, [*STATUS_HEAD, *always, *STATUS_TAIL])


def waited(outcome: str) -> Dict[str, Any]:
    """A wait's result for one outcome: the line it found, with `input_id`,
    `outcome` and the exit code the CLI gives for it."""
    kind = WAITED[outcome]
    line = shape({}, []) if kind is None else status_line() if kind == "status" else event_line(kind)
    properties = dict(line["properties"], outcome={"const": outcome}, exit_code={"const": OUTCOME_CODES[outcome]},
                      input_id=ID)
    if kind == "result":
        properties["status"] = {"const": outcome}
    return shape(properties, ["outcome", "exit_code", *line["required"]])


def one_of(*shapes: Dict[str, Any]) -> Dict[str, Any]:
    """Any of `shapes`, or a tool error."""
    return {"type": "object", "anyOf": [*shapes, ERROR]}


def output_schemas() -> Dict[str, Dict[str, Any]]:
    """Each tool's outputSchema, by tool name."""
    waits = [waited(outcome) for outcome in OUTCOME_CODES]
    return {
        "send": one_of(done("accepted", input_id=ID), *waits),
        "wait": one_of(*waits),
        "status": one_of(shape({"statuses": {"type": "array", "items": {"anyOf": [status_line(), FILE_ERROR]}}},
                               ["statuses"])),
        "reply": one_of(done("replied", request_id=STRING)),
        "cancel": one_of(done("done"), done("revoked", input_id=ID)),
        "log": one_of(shape({"text": STRING, "entries": {"type": "array", "items": {"type": "object"}}},
                            ["text", "entries"])),
        "fork": one_of(shape({"file": STRING, "forked_from": STRING, "seq": EVENT_TYPES["seq"]},
                             ["file", "forked_from", "seq"])),
    }

