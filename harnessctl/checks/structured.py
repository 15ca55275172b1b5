"""Structured answers (`send --schema FILE`): the schema a send brings, and the
answer a run started with one must be.

The harness enforces the schema (codex: the model API's strict json_schema
format; Claude: its StructuredOutput tool, which validates); harnessctl keeps
its own promise small and checkable: `output_json` is there only when the
final answer is one JSON value, else the run fails with error_class
"schema" and the text stays in `output`.  It does not validate the value
against the schema a second time: that would be a JSON Schema implementation
in the core, and both harnesses already reject an answer that does not fit."""

from __future__ import annotations

import json

from .. import jsonfile
from ..errors import UsageError
from ..jsonfile import MAX_DEPTH, deeper_than

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

# A schema is recorded whole in the `accepted` line of its send (EVENT.md), so
# it is bounded like a line should be; real answer schemas are a few KiB.
MAX_SCHEMA = 256 * 1024
CLASS = "schema"  # the result's error_class when the answer does not fit


def read_file(path: str) -> Dict[str, Any]:
    """The JSON Schema document in `path`: one JSON object, UTF-8, at most MAX_SCHEMA bytes."""
    schema = jsonfile.read(path, "--schema", MAX_SCHEMA)
    if not isinstance(schema, dict):
        raise UsageError("--schema %s is not a JSON Schema: a schema document is a JSON object" % path)
    return schema


def split(data: str) -> Tuple[Dict[str, Any], str]:
    """`--schema -`: the schema document that leads stdin, and what follows it
    (after one newline): a remote send's stdin is the schema's line, then TEXT."""
    try:
        schema, end = json.JSONDecoder().raw_decode(data.lstrip())
    except ValueError as e:
        raise UsageError("--schema -: stdin does not start with a JSON document (%s)" % e) from None
    if not isinstance(schema, dict):
        raise UsageError("--schema -: a schema document is a JSON object")
    check_size(schema)
    rest = data.lstrip()[end:]
    return schema, rest[1:] if rest.startswith("\n") else rest


def check_size(schema: Dict[str, Any]) -> None:
    """A schema given as a value (harnessctl mcp) is held to the file's bound."""
    if len(to_field(schema).encode("utf-8", "surrogatepass")) > MAX_SCHEMA:
        raise UsageError("the schema is larger than %d KiB" % (MAX_SCHEMA // 1024))


def to_field(schema: Dict[str, Any]) -> str:
    """The schema as one compact line, as the client hands it to the runtime."""
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


def from_field(field: str) -> Optional[Dict[str, Any]]:
    """The runtime's side of to_field: None for no schema."""
    if not field:
        return None
    schema = jsonfile.loads(field)
    if not isinstance(schema, dict):
        raise UsageError("the schema is not a JSON object")
    return schema


def answer(output: str) -> Tuple[Any, Optional[str]]:
    """(the value, None) when the final answer is one JSON value, else (None, why not)."""
    try:
        value = jsonfile.loads(output)
    except ValueError as e:
        return None, "the final answer is not JSON (%s)" % e
    return checked(value)


def checked(value: Any) -> Tuple[Any, Optional[str]]:
    """(the value, None), or (None, why not) for one nested deeper than
    MAX_DEPTH: the agent chose it, and the event file, its readers and their
    tools (recursive JSON encoders) must all be able to hold it."""
    if deeper_than(value, MAX_DEPTH):
        return None, "the final answer nests more than %d levels deep" % MAX_DEPTH
    return value, None


def check_claimed(manifest: Dict[str, Any], agent: Optional[str]) -> None:
    """Refuse a send with --schema to a harness that cannot promise the answer
    fits (before anything is sent): an adapter, or with `agents` the bound
    preset, must claim structured-output.  A prompt asking for JSON is no such
    promise, so harnessctl never imitates one."""
    from .claims import claims

    who, words = claims(manifest, agent)
    if "structured-output" in words:
        return
    why = (manifest.get("harness") or {}).get("schema_refusal") or "no test proved that it can"
    raise UsageError("--schema: %s cannot promise an answer that fits a schema (%s); send without --schema"
                     % (who, why))
