"""Transcript entries -> text for a person (`harnessctl log`).

Functions of one entry each; `Style` says whether to colour and what FILE to
put into the `harnessctl reply` commands.  A renderer never sees the file's
text: `render` hands it a copy of the entry whose every string went through
the one cleaner (visible.py) first, so nothing the agent wrote can drive the
terminal, and a newline splits only the fields that are text of several lines
(a message, an output, a diff), never a one-line field such as a path.
"""

from __future__ import annotations

from ..visible import shown

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    Entry = Dict[str, Any]

FOLD_HEAD = 3  # lines of a tool's output shown from its start ...
FOLD_TAIL = 5  # ... and from its end; the middle is folded away
LINE_LIMIT = 240  # characters of one output line shown
TOOL_MARKS = {"command": "$", "file_change": "edit", "mcp": "mcp", "web_search": "web", "read": "read",
              "search": "search", "subagent": "agent", "other": "tool"}
PLAN_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
PLACEHOLDER = "..."  # what a suggested answer to a question with no options holds
COLOURS = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35",
           "cyan": "36"}


class Style:
    """How to write: colour or not, and the FILE a reply command names
    (shell-quoted, as the user spelled it)."""

    def __init__(self, colour: bool, file: str, diff: bool = False) -> None:
        from shlex import quote

        self.colour = colour
        self.file = quote(file)
        self.diff = diff

    def paint(self, text: str, *names: str) -> str:
        if not self.colour or not text:
            return text
        return "\033[%sm%s\033[0m" % (";".join(COLOURS[n] for n in names), text)


def render(entry: Entry, style: Style) -> List[str]:
    """The lines of one entry (without newlines)."""
    safe = cleaned(entry)
    if entry["entry"] == "request" and entry.get("state") == "pending":
        safe["reply"] = [shown(command) for command in reply_commands(entry, style.file)]
    return RENDERERS.get(entry["entry"], _unknown)(safe, style)


# The fields whose text has lines of its own (kept); in every other string a
# newline is shown escaped like any control character.
TEXT_FIELDS = {"text", "output", "diff", "explanation", "error"}
TEXT_FIELDS_OF = {"request": {"message"}}


def cleaned(entry: Entry) -> Entry:
    """A copy of `entry` for the renderers: every string in it cleaned, an
    answer and a log line's fields already spelled as shown."""
    lines = TEXT_FIELDS | TEXT_FIELDS_OF.get(entry.get("entry") or "", set())
    safe = {key: _cleaned(value, key in lines) for key, value in entry.items()}
    if "answer" in entry:
        safe["answer"] = shown(_answer(entry["answer"]))
    if "output_json" in entry:  # pretty-printed, then cleaned like any text with lines
        safe["output_json"] = shown(_pretty(entry["output_json"]), True)
    if isinstance(entry.get("fields"), dict):
        safe["fields"] = {shown(str(k)): shown(_spelled(v)) for k, v in entry["fields"].items()}
    return safe


# Nesting kept when a value is cleaned: deeper (an agent's choice, in a
# field no renderer shows whole) is TOO_DEEP, so no walk here recurses far.
MAX_DEPTH = 50
TOO_DEEP = "[nested too deep]"


def _cleaned(value: Any, lines: bool = False, depth: int = 0) -> Any:
    if isinstance(value, str):
        return shown(value, lines)
    if isinstance(value, list):
        return [_cleaned(v, False, depth + 1) for v in value] if depth < MAX_DEPTH else TOO_DEEP
    if isinstance(value, dict):
        return {shown(str(k)): _cleaned(v, False, depth + 1) for k, v in value.items()} if depth < MAX_DEPTH \
            else TOO_DEEP
    return value


def short_id(value: Optional[str]) -> str:
    """The first 8 characters of a run id: enough to tell runs apart on screen."""
    return (value or "-")[:8]


def indented(text: str, prefix: str = "  ") -> List[str]:
    return [prefix + line for line in text.rstrip("\n").split("\n")] if text.strip() else []


def _input(e: Entry, style: Style) -> List[str]:
    how = e.get("delivery") or "?"
    run = "run %s" % short_id(e.get("run_id")) if e.get("run_id") else "run not known yet"
    schema = ", --schema" if "schema" in e else ""
    head = style.paint(">>> input", "bold", "blue") + style.paint(" (%s, %s%s)" % (how, run, schema), "dim")
    return [head] + indented(e.get("text") or "", "    ")


def _message(e: Entry, style: Style) -> List[str]:
    return [style.paint("<<< %s" % (e.get("role") or "assistant"), "bold", "green")] + indented(e["text"], "    ")


def _stream(e: Entry, style: Style) -> List[str]:
    text = e.get("text") or ""
    if e.get("omitted"):
        half = len(text) // 2
        text = text[:half] + "\n[... %d characters not shown ...]\n" % e["omitted"] + text[half:]
    state = "cut off" if e.get("cut_off") else "still streaming"
    note = style.paint(" (%s: streamed text, no complete message)" % state, "yellow")
    return [style.paint("<<< assistant", "bold", "green") + note] + indented(text, "    ")


def _reasoning(e: Entry, style: Style) -> List[str]:
    if e.get("form") == "redacted" or not (e.get("text") or "").strip():
        return [style.paint("  ~ (thinking withheld)", "dim")]
    first = e["text"].strip().split("\n", 1)[0]
    if len(first) > 100:
        first = first[:99] + "…"
    return [style.paint("  ~ " + first, "dim")]


def _tool(e: Entry, style: Style) -> List[str]:
    mark = TOOL_MARKS.get(e.get("tool") or "other", "tool")
    title = e.get("title") or e.get("name") or ""
    status = e.get("status")
    facts = []
    if e.get("exit_code") is not None:
        facts.append("exit %d" % e["exit_code"])
    if e.get("duration_ms") is not None:
        facts.append(_duration(e["duration_ms"]))
    if status == "running":
        outcome = style.paint("... running", "yellow")
    elif status == "completed":
        outcome = style.paint("ok", "green")
    elif status == "ended":  # transcript.ENDED_WITH_RUN
        outcome = style.paint("ended with its run, outcome unknown", "yellow")
    else:
        outcome = style.paint(status or "?", "red")
    line = "  %s %s  %s" % (style.paint(mark, "bold", "cyan"), title, outcome)
    if facts:
        line += style.paint(" (%s)" % ", ".join(facts), "dim")
    if status == "running":
        return [line]
    return [line] + [style.paint(x, "dim") for x in fold(e.get("output") or "")]


def fold(output: str) -> List[str]:
    """A tool's output, indented: its first and last lines, the middle folded."""
    lines = [line if len(line) <= LINE_LIMIT else line[:LINE_LIMIT - 1] + "…"
             for line in output.rstrip("\n").split("\n")] if output.strip() else []
    if len(lines) > FOLD_HEAD + FOLD_TAIL + 1:
        lines = lines[:FOLD_HEAD] + ["... %d more lines ..." % (len(lines) - FOLD_HEAD - FOLD_TAIL)] \
            + lines[-FOLD_TAIL:]
    return ["      " + line for line in lines]


def _duration(ms: int) -> str:
    if ms < 1000:
        return "%d ms" % ms
    if ms < 60000:
        return "%.1f s" % (ms / 1000)
    return "%dm%02ds" % (ms // 60000, ms // 1000 % 60)


def _file(e: Entry, style: Style) -> List[str]:
    path = e.get("path") or "?"
    if e.get("move_path"):
        path = "%s -> %s" % (path, e["move_path"])
    change = e.get("change")
    note = {"add": " (new)", "delete": " (deleted)"}.get(change or "", "")
    counts = style.paint("+%d" % (e.get("added") or 0), "green") + " " + style.paint("-%d" % (e.get("removed") or 0),
                                                                                     "red")
    lines = ["    %s %s%s" % (counts, path, style.paint(note, "dim"))]
    if style.diff and e.get("diff"):
        for line in e["diff"].rstrip("\n").split("\n"):
            colour = "green" if line.startswith("+") else "red" if line.startswith("-") else \
                "cyan" if line.startswith("@@") else "dim"
            lines.append("      " + style.paint(line, colour))
    return lines


def _plan(e: Entry, style: Style) -> List[str]:
    lines = [style.paint("  plan", "bold", "magenta")]
    if e.get("explanation"):
        lines += indented(e["explanation"], "    ")
    for step in e.get("steps") or ():
        mark = PLAN_MARKS.get(step.get("status"), "[?]")
        text = "    %s %s" % (mark, step.get("text") or "")
        lines.append(style.paint(text, "bold") if step.get("status") == "in_progress" else text)
    return lines


def _request(e: Entry, style: Style) -> List[str]:
    state = e.get("state") or "?"
    head = "%s %s %s: %s" % (style.paint("???", "bold", "yellow"), e.get("request_id"), e.get("kind") or "request",
                             (e.get("message") or "").strip().split("\n", 1)[0])
    if state == "replied" and e.get("by"):  # "allowed by rule command:npm test*"
        verb = {"allow": "allowed", "deny": "denied"}.get(str(e.get("answer")), "answered %s" % e.get("answer"))
        return [head + style.paint("  %s by %s" % (verb, e["by"]), "green" if verb == "allowed" else "red")]
    if state == "replied":
        return [head + style.paint("  -> %s" % e.get("answer"), "green")]
    if state != "pending":
        return [head + style.paint("  (%s)" % state, "dim")]
    lines = [head + style.paint("  (pending: reply with)", "yellow")]
    for question in e.get("questions") or ():
        options = [str(o) for o in question.get("options") or () if isinstance(o, (str, int, float))]
        lines.append("    %s: %s%s" % (question.get("id"), question.get("question") or "",
                                       " (%s)" % " | ".join(options) if options else ""))
    lines += ["      " + style.paint(command, "bold") for command in e.get("reply") or ()]
    return lines


def reply_commands(e: Entry, file: str) -> List[str]:
    """The exact commands that answer a pending request (FILE already quoted)."""
    from shlex import quote

    base = "harnessctl reply %s %s " % (file, quote(str(e.get("request_id"))))
    choices, questions = answers_of(e)
    options = [base + quote(option) for option in choices]
    if e.get("kind") == "question":  # its fields, then its other answers (an elicitation's decline, cancel)
        import json

        questions = [q for q in questions if q.get("optional") is not True] or questions[:1]
        answer = {str(q.get("id")): _first_option(q) for q in questions}
        fields = [base + quote(json.dumps(answer, ensure_ascii=False, separators=(",", ":")))] if questions else []
        text = _first_option(questions[0]) if len(questions) == 1 else None
        if text is not None and text not in choices:  # plain text answers the one question (checks/answers.py)
            fields.insert(0, base + ("'%s'" % text if text == PLACEHOLDER else quote(text)))
        return fields + options
    return options


def answers_of(e: Entry) -> Tuple[List[str], List[Dict[str, Any]]]:
    """What answers a pending request, for `reply` (the commands above, the
    page's buttons): its options (allow and deny for a permission that names
    none), and a question's fields (one, q1, when it names no field and no option)."""
    options = [str(option) for option in e.get("options") or ()]
    if e.get("kind") != "question":
        return options or ["allow", "deny"], []
    return options, e.get("questions") or ([] if options else [{"id": "q1"}])


def _first_option(question: Dict[str, Any]) -> str:
    options = question.get("options")
    if isinstance(options, list) and options and isinstance(options[0], str):
        return options[0]
    return PLACEHOLDER


def _answer(answer: Any) -> str:
    return answer if isinstance(answer, str) else _spelled(answer)


def _spelled(value: Any) -> str:
    """A value as one piece of text: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return TOO_DEEP


def _pretty(value: Any) -> str:
    """Indented JSON; on one line when it nests too deeply for the (recursive)
    indenting encoder; a marker when too deeply even for the compact one."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except RecursionError:
        pass
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return "%s (read it in the event file)" % TOO_DEEP


def _result(e: Entry, style: Style) -> List[str]:
    status = e.get("status") or "?"
    colour = {"completed": "green", "failed": "red"}.get(status, "yellow")
    facts = [usage_summary(e.get("usage"))] if e.get("usage") else []
    if e.get("cost_usd") is not None:
        facts.append("$%.4f" % e["cost_usd"])
    totals = e.get("totals") or {}
    if totals.get("tokens") or totals.get("cost_usd") is not None:
        facts.append("conversation %d tokens" % totals["tokens"] + (
            ", $%.4f" % totals["cost_usd"] if totals.get("cost_usd") is not None else ""))
    line = "%s %s" % (style.paint("=== result", "bold"), style.paint(status, "bold", colour))
    line += style.paint(" (run %s%s)" % (short_id(e.get("run_id")), "".join(", " + f for f in facts if f)), "dim")
    lines = [line]
    if e.get("error"):
        error = e["error"]
        if e.get("error_class"):
            error = "[%s] %s" % (e["error_class"], error)
        lines += [style.paint(x, "red") for x in indented(error, "    ")]
    if "output_json" in e:
        lines += indented(e["output_json"], "    ")
    return lines


def usage_summary(usage: Any) -> str:
    """`1234 in (1000 cached), 56 out, context 20000/200000`: what the harness reported."""
    if not isinstance(usage, dict):
        return ""
    number = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
    parts = []
    if "input_tokens" in number:
        cached = number.get("cached_input_tokens") or number.get("cache_read_input_tokens")
        parts.append("%d in" % number["input_tokens"] + (" (%d cached)" % cached if cached else ""))
    if "output_tokens" in number:
        parts.append("%d out" % number["output_tokens"] + (" (%d reasoning)" % number["reasoning_tokens"]
                                                            if number.get("reasoning_tokens") else ""))
    if "context_used" in number:
        parts.append("context %d" % number["context_used"] + ("/%d" % number["context_window"]
                                                               if "context_window" in number else ""))
    return ", ".join(parts) + (" tokens" if parts else "")


def _session(e: Entry, style: Style) -> List[str]:
    parts = [e.get("harness") or "?"]
    if e.get("version"):
        parts[0] += " " + e["version"]
    for field, label in (("model", "model"), ("approval_policy", "approval"), ("sandbox", "sandbox")):
        if e.get(field):
            parts.append("%s %s" % (label, e[field]))
    return [style.paint("--- session: " + ", ".join(parts), "dim")]


def _warning(e: Entry, style: Style) -> List[str]:
    source = " (%s)" % e["source"] if e.get("source") else ""
    return [style.paint("  ! warning%s: %s" % (source, e.get("message") or ""), "yellow")]


def _log(e: Entry, style: Style) -> List[str]:
    fields = []
    for key, text in (e.get("fields") or {}).items():
        fields.append("%s=%s" % (key, text if len(text) <= 60 else text[:59] + "…"))
    text = "  ! %s %s%s%s" % (e.get("level"), e.get("kind"), ": " + e["message"] if e.get("message") else "",
                              " (%s)" % ", ".join(fields) if fields else "")
    return [style.paint(text, "red" if e.get("level") == "error" else "yellow")]


def _unreadable(e: Entry, style: Style) -> List[str]:
    return [style.paint("? byte %d: %s (%d bytes)" % (e.get("offset") or 0, e.get("reason") or "",
                                                      e.get("bytes") or 0), "dim")]


def _unknown(e: Entry, style: Style) -> List[str]:
    return ["? %s" % e.get("entry")]


RENDERERS: Dict[str, Callable[[Entry, Style], List[str]]] = {
    "input": _input, "message": _message, "stream": _stream, "reasoning": _reasoning, "tool": _tool,
    "file": _file, "plan": _plan, "request": _request, "result": _result, "session": _session,
    "warning": _warning, "log": _log, "unreadable": _unreadable,
}
