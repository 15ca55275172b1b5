"""A tiny JSON Schema checker: exactly the keywords schema/events.schema.json
uses (type, const, enum, required, properties, additionalProperties (false or a schema),
items, oneOf, not, $ref, pattern, minimum, minLength, maxLength).  Stdlib only, for tests."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "schema",
                           "events.schema.json")
TYPES = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
    "integer": int, "number": (int, float),
}


def load() -> Dict[str, Any]:
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        return json.load(f)


def errors(value: Any, schema: Dict[str, Any], root: Dict[str, Any], where: str = "$") -> List[str]:
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return errors(value, target, root, where)
    found: List[str] = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        ok = any(isinstance(value, TYPES[n]) and not (n in ("integer", "number") and isinstance(value, bool))
                 for n in names)
        if not ok:
            return ["%s: %r is not %s" % (where, value, schema["type"])]
    if "const" in schema and value != schema["const"]:
        found.append("%s: %r != %r" % (where, value, schema["const"]))
    if "enum" in schema and value not in schema["enum"]:
        found.append("%s: %r not in %r" % (where, value, schema["enum"]))
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        found.append("%s: %r does not match %s" % (where, value, schema["pattern"]))
    if "minLength" in schema and isinstance(value, str) and len(value) < schema["minLength"]:
        found.append("%s: too short" % where)
    if "maxLength" in schema and isinstance(value, str) and len(value) > schema["maxLength"]:
        found.append("%s: too long" % where)
    if "not" in schema and not errors(value, schema["not"], root, where):
        found.append("%s: %r matches what is not allowed" % (where, value))
    if "minimum" in schema and isinstance(value, (int, float)) and value < schema["minimum"]:
        found.append("%s: below minimum" % where)
    if isinstance(value, dict):
        found += ["%s: missing %s" % (where, k) for k in schema.get("required", []) if k not in value]
        extra = schema.get("additionalProperties")
        if extra is False:
            found += ["%s: unexpected field %s" % (where, k) for k in value if k not in schema.get("properties", {})]
        elif isinstance(extra, dict):
            for key in (k for k in value if k not in schema.get("properties", {})):
                found += errors(value[key], extra, root, "%s.%s" % (where, key))
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                found += errors(value[key], sub, root, "%s.%s" % (where, key))
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += errors(item, schema["items"], root, "%s[%d]" % (where, i))
    if "oneOf" in schema:
        matches = [s for s in schema["oneOf"] if not errors(value, s, root, where)]
        if len(matches) != 1:
            found.append("%s: matches %d of oneOf" % (where, len(matches)))
    return found


def check_event(event: Dict[str, Any]) -> List[str]:
    schema = load()
    return errors(event, schema, schema)
