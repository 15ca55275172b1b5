"""An MCP elicitation form as harnessctl questions, and the answers back:
pure functions of the form's JSON Schema fields (MCP 2025-06-18 and later,
which ACP's `elicitation/create` carries unchanged).  The codex adapter
(codex's mcpServer/elicitation/request) and the ACP adapter share them, so a
form reads and converts the same whoever relays it."""

from __future__ import annotations

import json

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Tuple


def form_fields(schema: Any) -> Dict[str, Any]:
    """The fields of a `requestedSchema` ({name: field schema}); {} for none."""
    fields = schema.get("properties") if isinstance(schema, dict) else None
    return {str(name): spec for name, spec in fields.items()} if isinstance(fields, dict) else {}


def field_questions(schema: Any) -> List[Dict[str, Any]]:
    """One question per field of a `requestedSchema`: its title (else
    description, else name), its choices as options (`true`/`false` for a
    boolean), `answer_type`, and `optional` for a field the schema does not
    require (JSON Schema: none is, unless listed), which an answer may leave
    out (claude-agent-acp's AskUserQuestion form requires none)."""
    required = schema.get("required") if isinstance(schema, dict) else None
    required = required if isinstance(required, list) else []
    questions = []
    for name, spec in form_fields(schema).items():
        question = field_question(name, spec)
        if name not in required:
            question["optional"] = True
        questions.append(question)
    return questions


def field_question(name: str, spec: Any) -> Dict[str, Any]:
    spec = spec if isinstance(spec, dict) else {}
    entry: Dict[str, Any] = {"id": name, "question": str(spec.get("title") or spec.get("description") or name)}
    labels, _ = field_choices(spec)
    if spec.get("type") == "boolean":
        labels = ["true", "false"]
    if labels:
        entry["options"] = labels
    if spec.get("description") and spec.get("title"):
        entry["description"] = str(spec["description"])
    entry["answer_type"] = "list" if spec.get("type") == "array" else str(spec.get("type") or "string")
    return entry


def field_choices(spec: Dict[str, Any]) -> Tuple[List[str], Dict[str, str]]:
    """(labels, label -> value) of an enum field (titled, untitled or legacy)."""
    items = spec.get("items") if spec.get("type") == "array" else spec
    items = items if isinstance(items, dict) else {}
    titled = items.get("oneOf") or items.get("anyOf")
    if isinstance(titled, list):
        pairs = [(str(o.get("title")), str(o.get("const"))) for o in titled if isinstance(o, dict)]
    elif isinstance(items.get("enum"), list):
        values = [str(v) for v in items["enum"]]
        names = spec.get("enumNames")
        names = [str(n) for n in names] if isinstance(names, list) and len(names) == len(values) else values
        pairs = list(zip(names, values))
    else:
        pairs = []
    return [p[0] for p in pairs], dict(pairs)


def field_values(fields: Dict[str, Any], answer: Any) -> Dict[str, Any]:
    """{field: text} -> the accepted content, each value converted to its
    field's type (a text that does not convert is sent as given: the MCP
    server says what is wrong)."""
    content = {}
    for name, text in (answer if isinstance(answer, dict) else {}).items():
        spec = fields.get(name)
        content[name] = convert(spec if isinstance(spec, dict) else {}, str(text))
    return content


def convert(spec: Dict[str, Any], text: str) -> Any:
    """One answer text as its field's type: a list from JSON or commas, a
    boolean from yes/no words, a number, or a choice's value for its label."""
    _, values = field_choices(spec)
    kind = spec.get("type")
    if kind == "array":
        try:
            parts = json.loads(text)
        except ValueError:
            parts = None
        if not isinstance(parts, list):
            parts = [p.strip() for p in text.split(",") if p.strip()]
        return [values.get(str(p), str(p)) for p in parts]
    if kind == "boolean":
        lowered = text.strip().lower()
        if lowered in ("true", "yes", "y", "1"):
            return True
        if lowered in ("false", "no", "n", "0"):
            return False
        return text
    if kind in ("number", "integer"):
        try:
            return int(text) if kind == "integer" else float(text)
        except ValueError:
            return text
    return values.get(text, text)
