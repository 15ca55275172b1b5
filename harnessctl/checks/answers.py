"""Checking a `reply` ANSWER against the request it answers (docs/PROTOCOL-COMMANDS.md section 8).

The runtime validates every answer here before an adapter sees it, so all
adapters refuse the same bad answers with the same exit code.
"""

from __future__ import annotations

import json

from ..errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List


def validate(request: Dict[str, Any], answer: str) -> Any:
    """Return the normalized answer: an option string for a permission or a
    mode switch, a {question id: text} dict for a question.  A question may
    offer options besides its questions (an elicitation's `decline`,
    `cancel`): an answer that is one of them picks it.  Raises UsageError
    (exit 2)."""
    text = answer.strip()
    if not text:
        raise UsageError("empty answer")
    options = request.get("options") or []
    if request.get("kind") == "question" and text not in options:
        if not request.get("questions"):
            raise UsageError("%s asks nothing to fill in; answer one of: %s" % (request["request_id"],
                                                                               ", ".join(options)))
        return _question(request.get("questions") or [], text)
    if text not in options:
        raise UsageError("%s does not allow %r; answer one of: %s" % (request["request_id"], text, ", ".join(options)))
    return text


def _question(questions: List[Dict[str, Any]], text: str) -> Dict[str, str]:
    """Every question must be answered but an `optional` one; plain text
    answers the one question that must be (or the first, when none must)."""
    ids = [str(q.get("id")) for q in questions]
    needed = [str(q.get("id")) for q in questions if q.get("optional") is not True]
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        if len(needed) == 1 or len(needed) == 0 < len(ids):
            return {(needed or ids)[0]: text}
        raise UsageError('several questions: answer with a JSON object such as {"%s": "..."}' % ids[0])
    unknown = [k for k in parsed if k not in ids]
    if unknown:
        raise UsageError("unknown question id %s (questions: %s)" % (unknown[0], ", ".join(ids)))
    missing = [i for i in needed if i not in parsed]
    if missing:
        raise UsageError("no answer for question %s" % ", ".join(missing))
    answers = {}
    for key, value in parsed.items():
        if not isinstance(value, str) or not value.strip():
            raise UsageError("the answer to %s must be a non-empty string" % key)
        answers[key] = value
    return answers


def for_agent(request: Dict[str, Any], value: Any) -> Any:
    """The validated answer as the adapter hands it to the agent: an option
    recorded under another name (host.plain_options) is the agent's own id."""
    renamed = request.get("agent_options")
    if isinstance(value, str) and isinstance(renamed, dict) and isinstance(renamed.get(value), str):
        return renamed[value]
    return value
