"""Every line `harnessctl mcp` writes, held to the official MCP JSON Schema
of the revision it speaks (the files beside this module, schemas/README.md
says where they come from), with the PyPI `jsonschema` package: a test-only
check, the server itself stays stdlib.

The revisions name their definitions differently (2024-11-05 .. 2025-06-18:
draft-07 `definitions`, JSONRPCResponse / JSONRPCError; 2025-11-25 on:
2020-12 `$defs`, JSONRPCResultResponse / JSONRPCErrorResponse), and the
Tasks extension's results live in a schema of their own: those differences
are the tables below, the rest is one path."""

from __future__ import annotations

import functools
import json
import os
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas")
REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
LEGACY = REVISIONS[:4]  # the revisions with the initialize handshake
TASKS = "tasks-draft"  # the Tasks extension (io.modelcontextprotocol/tasks), read with 2026-07-28

# The envelope of a success and of an error, by revision (the older name where the newer is missing).
RESULT_ENVELOPES = ("JSONRPCResultResponse", "JSONRPCResponse")
ERROR_ENVELOPES = ("JSONRPCErrorResponse", "JSONRPCError")

# What a request's result must be, by the request's method.
RESULTS = {
    "initialize": "InitializeResult",
    "server/discover": "DiscoverResult",
    "ping": "EmptyResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "tasks/get": "GetTaskResult",
    "tasks/update": "UpdateTaskResult",
    "tasks/cancel": "CancelTaskResult",
    "subscriptions/listen": "SubscriptionsListenResult",
}
TASK_HANDLE = "CreateTaskResult"  # a tools/call answered with a task (resultType "task")


def jsonschema_or_skip() -> Any:
    """The jsonschema module; without it the test skips with the reason, or
    fails under HARNESSCTL_REQUIRE_REAL=1 (CI installs it)."""
    import pytest

    try:
        import jsonschema
    except ImportError:
        reason = "the PyPI package jsonschema is not installed (pip install jsonschema): the MCP schema checks need it"
        if os.environ.get("HARNESSCTL_REQUIRE_REAL") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return jsonschema


@functools.lru_cache(maxsize=None)
def load(name: str) -> Dict[str, Any]:
    """One vendored schema file: a revision, or TASKS."""
    with open(os.path.join(HERE, name + ".json"), encoding="utf-8") as f:
        schema: Dict[str, Any] = json.load(f)
    return schema


def definitions(name: str) -> Tuple[str, Dict[str, Any]]:
    """The key a schema keeps its definitions under ($defs or definitions), and them."""
    schema = load(name)
    key = "$defs" if "$defs" in schema else "definitions"
    return key, schema[key]


def find(revision: str, *names: str) -> Tuple[str, str]:
    """(schema file, definition) of the first of `names` the revision
    defines, looking in the Tasks extension too for 2026-07-28."""
    files = (revision, TASKS) if revision == "2026-07-28" else (revision,)
    for name in names:
        for file in files:
            if name in definitions(file)[1]:
                return file, name
    raise AssertionError("revision %s defines none of %s" % (revision, ", ".join(names)))


def by_method(revision: str, method: str) -> Optional[Tuple[str, str]]:
    """(schema file, definition) of the request or notification whose
    `method` is the constant `method`, if the revision defines one."""
    files = (revision, TASKS) if revision == "2026-07-28" else (revision,)
    for file in files:
        for name, definition in definitions(file)[1].items():
            if method in constant_methods(definition):
                return file, name
    return None


def constant_methods(definition: Dict[str, Any]) -> Tuple[str, ...]:
    """The `method` constants a definition pins, directly or in an allOf
    part (the Tasks extension writes its messages as allOf)."""
    parts = [definition, *definition.get("allOf", [])]
    found = []
    for part in parts:
        method = part.get("properties", {}).get("method", {}) if isinstance(part, dict) else {}
        if isinstance(method, dict) and "const" in method:
            found.append(method["const"])
    return tuple(found)


def validate(value: Any, file: str, definition: str, what: str) -> None:
    """AssertionError naming the definition, where in `value` and why, when
    `value` is not valid against `definition` of schema `file`."""
    jsonschema = jsonschema_or_skip()
    key, _ = definitions(file)
    schema = dict(load(file), **{"$ref": "#/%s/%s" % (key, definition)})
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        raise AssertionError("%s is not a valid %s of %s: %s\n%s" % (
            what, definition, file, explain(jsonschema, error), json.dumps(value)[:2000]))


def check_message(message: Dict[str, Any], revision: str, method: Optional[str] = None) -> None:
    """Hold one server→client line to `revision`'s schema: a response to a
    request of `method` by its envelope and its result's definition (a task
    handle for a tools/call answered with one), an error by the error
    envelope, a request or notification by the definition of its method."""
    if revision not in REVISIONS:
        raise ValueError("no schema for revision %r (known: %s)" % (revision, ", ".join(REVISIONS)))
    if "method" in message:
        kind = "JSONRPCRequest" if "id" in message else "JSONRPCNotification"
        validate(message, *find(revision, kind), what="a %s line" % message["method"])
        own = by_method(revision, message["method"])
        if own is not None:
            validate(message, *own, what="a %s line" % message["method"])
        return
    if "error" in message or "result" not in message:
        validate(message, *find(revision, *ERROR_ENVELOPES), what="an error line")
        return
    validate(message, *find(revision, *RESULT_ENVELOPES), what="a response line")
    if method is None:
        return
    result = message["result"]
    if method == "tools/call" and isinstance(result, dict) and result.get("resultType") == "task":
        validate(result, *find(revision, TASK_HANDLE), what="the task handle answering tools/call")
    elif method in RESULTS:
        validate(result, *find(revision, RESULTS[method]), what="the result of %s" % method)
    else:
        raise ValueError("no result definition known for method %r (known: %s)" % (method, ", ".join(RESULTS)))


def check_tool_result(result: Dict[str, Any], output_schema: Dict[str, Any]) -> None:
    """A tool's structuredContent against the outputSchema it declares (JSON
    Schema 2020-12 where the schema names no dialect, as the MCP revisions
    that have outputSchema say)."""
    jsonschema = jsonschema_or_skip()
    cls = jsonschema.validators.validator_for(output_schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(output_schema)
    errors = list(cls(output_schema).iter_errors(result.get("structuredContent")))
    if errors:
        reasons = "; ".join(explain(jsonschema, error) for error in errors)
        raise AssertionError("structuredContent does not fit the tool's outputSchema: %s\n%s" % (
            reasons, json.dumps(result.get("structuredContent"))[:2000]))


def explain(jsonschema: Any, error: Any) -> str:
    """Where and why, for people: for an anyOf that no alternative matched,
    the likeliest reason of each alternative (one line each)."""
    where = "".join("[%s]" % json.dumps(step) for step in error.absolute_path) or " (the whole value)"
    if not error.context:
        return "at %s: %s" % (where, error.message)
    branches: Dict[Any, List[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    return "at %s: no alternative of %s fits:%s" % (where, error.validator, "".join(
        "\n  alternative %s: %s" % (index, explain(jsonschema, jsonschema.exceptions.best_match(subs)))
        for index, subs in sorted(branches.items())))
