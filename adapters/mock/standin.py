"""The mock harness stand-in: a separate child process speaking JSON lines on
stdio, so the runtime drives it exactly like a real harness (docs/PROTOCOL.md section 14).

stdin:  {"op": "input", "id", "text", "schema"?} | {"op": "interrupt"} | {"op": "answer", "request", "answer"}
stdout: {"ev": "ready", "resumed_turns"} | {"ev": "received", "id", "turn", "delivery"}
        | {"ev": "delta", "turn", "text"}
        | {"ev": "request", "turn", "request", "kind", "message", "tool", "subject"}
        | {"ev": "message", "turn", "id", "text"}
        | {"ev": "tool", "turn", "id", "command", "exit_code", "declined"}
        | {"ev": "edit", "turn", "id", "path", "declined"} | {"ev": "plan", "turn", "steps": [[text, status]]}
        | {"ev": "usage", "turn", "input_tokens", "output_tokens"}
        | {"ev": "warning", "turn", "source", "message"}
        | {"ev": "done", "turn", "status", "inputs", "output", "error", "usage", statistics}

Usage: standin.py TRANSCRIPT [MODE]   (a JSONL file of finished turns, resumed on
start; MODE ask, edit or full, as --mode: under `ask` a /tool or /edit asks
first, under `edit` a /tool and an /edit outside the cwd do; without one,
nothing asks unless told to)

A turn started by an input with a schema (send --schema) answers with JSON
only: the text of a `/json TEXT` directive as it is (so a caller can test an
answer that does not parse), else a value built from the schema
(`placeholder`).
"""

import json
import os
import select
import sys
import time

# How often a /sleep repeats its "working… " text delta, in seconds.  Unset: once, as the sleep starts
# (more would flood `log` and the serve page); the benchmark floods with a tiny interval.
DELTA_INTERVAL = float(os.environ.get("HARNESSCTL_MOCK_DELTA_INTERVAL") or "inf")
# The tool kinds a `/permission KIND:SUBJECT` may name (the activity vocabulary's).
KINDS = ("command", "file_change", "mcp", "web_search", "read", "search", "subagent", "other")
VERBS = {"command": "Run", "file_change": "Edit", "read": "Read"}  # a permission's message: "Run: CMD"


def emit(**event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def emit_deltas(turn, count):
    """Write `count` deltas at once, timing the write: a runtime that does not
    keep up fills the pipe and makes this block (the flood benchmark reads it)."""
    line = json.dumps({"ev": "delta", "turn": turn.number, "text": "working… "}) + "\n"
    start = time.monotonic()
    sys.stdout.write(line * count)
    sys.stdout.flush()
    spent = time.monotonic() - start
    turn.write_seconds += spent
    turn.longest_write = max(turn.longest_write, spent)
    turn.deltas += count


def steps_of(input_id, text):
    """An input becomes steps: its echo line, then one step per directive."""
    plain, steps = [], []
    for line in text.split("\n"):
        name, _, arg = line.partition(" ")
        if name == "/sleep":
            try:
                steps.append(("sleep", max(0.0, float(arg))))
                continue
            except ValueError:
                pass
        if name in ("/permission", "/question", "/fail", "/tool", "/edit", "/plan", "/json", "/usage",
                    "/warning", "/history"):
            steps.append((name[1:], arg))
        elif line.strip() == "/crash":
            steps.append(("crash", ""))
        else:
            plain.append(line)
    echo = "\n".join(plain).strip("\n")
    return ([("echo", "echo: " + echo)] if echo.strip() else []) + steps


class Turn:
    def __init__(self, number):
        self.number = number
        self.inputs = []
        self.texts = []
        self.steps = []
        self.lines = []
        self.sleep_until = None
        self.next_delta = None
        self.deltas = 0
        self.write_seconds = 0.0
        self.longest_write = 0.0
        self.request = None  # (request id, kind) while waiting for an answer
        self.asked_for = None  # the /tool or /edit step the request asks about
        self.asked_at = 0.0
        self.request_waits = []  # seconds from each request to its answer (the benchmark reads them)
        self.schema = None  # the starting input's schema: the turn answers with JSON
        self.answer = None  # a /json directive's text
        self.usage = None  # the tokens /usage directives reported: {"input_tokens", "output_tokens"}

    def add(self, input_id, text):
        self.inputs.append(input_id)
        self.texts.append(text)
        self.steps.extend(steps_of(input_id, text))


class StandIn:
    def __init__(self, transcript, mode=None):
        self.transcript = transcript
        self.mode = mode
        self.turns_done = self._count_turns()
        self.turn = None
        self.requests = 0

    def _count_turns(self):
        try:
            with private_file(self.transcript, os.O_RDONLY, "r") as f:
                return sum(1 for _ in f)
        except FileNotFoundError:
            return 0

    def run(self):
        emit(ev="ready", resumed_turns=self.turns_done)
        buffer = b""
        while True:
            ready = select.select([0], [], [], self._wait_time())[0]
            if ready:
                chunk = os.read(0, 65536)
                if not chunk:
                    return
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        self.handle(json.loads(line))
            self.advance()

    def _wait_time(self):
        turn = self.turn
        if turn is None or turn.request is not None:
            return None
        if turn.sleep_until is None:
            return 0
        return max(0.0, min(turn.sleep_until, turn.next_delta) - time.monotonic())

    def handle(self, message):
        op = message.get("op")
        if op == "input":
            if self.turn is None:
                self.turns_done += 1
                self.turn = Turn(self.turns_done)
                delivery = "start"
            else:
                delivery = "steer"
            self.turn.add(message["id"], message["text"])
            if delivery == "start":
                self.turn.schema = message.get("schema")
            emit(ev="received", id=message["id"], turn=self.turn.number, delivery=delivery)
        elif op == "interrupt" and self.turn is not None:
            self.finish("cancelled")
        elif op == "answer" and self.turn is not None and self.turn.request:
            request, kind = self.turn.request
            if message.get("request") == request:
                answer = message["answer"]
                self.turn.request_waits.append(round(time.monotonic() - self.turn.asked_at, 6))
                if kind == "permission":
                    self.turn.lines.append("permission: " + answer)
                else:
                    self.turn.lines.append("answer: " + "; ".join(answer.values()))
                self.turn.request = None
                if self.turn.asked_for is not None:
                    step, self.turn.asked_for = self.turn.asked_for, None
                    self.activity(self.turn, step[0], step[1], declined=answer != "allow")

    def advance(self):
        """Run the current turn's steps as far as they go without waiting."""
        turn = self.turn
        while turn is not None and turn.request is None:
            now = time.monotonic()
            if turn.sleep_until is not None:
                if now < turn.sleep_until:
                    if now >= turn.next_delta:
                        due = 1 + int((now - turn.next_delta) / DELTA_INTERVAL)
                        emit_deltas(turn, due)
                        turn.next_delta += due * DELTA_INTERVAL
                    return
                turn.sleep_until = None
            if not turn.steps:
                self.finish("completed")
                return
            kind, arg = turn.steps.pop(0)
            if kind == "echo":
                turn.lines.append(arg)
            elif kind == "sleep":
                turn.sleep_until = now + arg
                turn.next_delta = now
            elif kind in ("permission", "question"):
                tool, _, subject = arg.partition(":") if kind == "permission" else ("", "", "")
                if tool in KINDS:
                    arg = "%s: %s" % (VERBS.get(tool, "Allow " + tool), subject.strip())
                else:
                    tool, subject = "", ""
                self.ask(turn, kind, arg, tool, subject.strip())
            elif kind in ("tool", "edit") and self.asks(kind, arg):
                turn.asked_for = (kind, arg)
                tool, subject = ("command", tool_command(arg)[1]) if kind == "tool" else ("file_change", arg.strip())
                self.ask(turn, "permission", "%s: %s" % (VERBS[tool], subject), tool, subject)
            elif kind in ("tool", "edit", "plan"):
                self.activity(turn, kind, arg)
            elif kind == "json":
                turn.answer = arg
            elif kind == "history":  # what the conversation holds: the inputs of every earlier turn
                turn.lines.append("history: " + json.dumps(self.history()))
            elif kind == "usage":
                self.spend(turn, arg)
            elif kind == "warning":  # `/warning SOURCE TEXT`: a harness warning, e.g. a retry (source api_retry)
                source, _, message = arg.partition(" ")
                emit(ev="warning", turn=turn.number, source=source or None, message=message)
            elif kind == "fail":
                self.finish("failed", error=arg)
                return
            elif kind == "crash":
                os._exit(3)

    def history(self):
        """The texts of every finished turn's inputs, oldest first."""
        try:
            with private_file(self.transcript, os.O_RDONLY, "r") as f:
                return [text for line in f for text in json.loads(line)["inputs"]]
        except FileNotFoundError:
            return []

    def spend(self, turn, arg):
        """`/usage IN OUT`: the model read IN tokens and wrote OUT more (the run's totals grow)."""
        counts = [int(word) for word in arg.split() if word.isdigit()] + [0, 0]
        usage = turn.usage or {"input_tokens": 0, "output_tokens": 0}
        turn.usage = {"input_tokens": usage["input_tokens"] + counts[0],
                      "output_tokens": usage["output_tokens"] + counts[1]}
        emit(ev="usage", turn=turn.number, **turn.usage)

    def ask(self, turn, kind, message, tool, subject):
        self.requests += 1
        turn.request = ("r%d" % self.requests, kind)
        emit(ev="request", turn=turn.number, request=turn.request[0], kind=kind, message=message,
             tool=tool or None, subject=subject or None)
        turn.asked_at = time.monotonic()

    def asks(self, kind, arg):
        """Whether the mode makes a /tool or /edit ask first."""
        if self.mode == "ask":
            return True
        if self.mode == "edit":
            return kind == "tool" or not inside(arg.strip(), os.getcwd())
        return False

    def activity(self, turn, kind, arg, declined=False):
        """Simulated work, for callers testing what reads the log: nothing runs
        and no file is written.  `/tool [exit=N] CMD`, `/edit PATH`,
        `/plan x done | > doing | to do` (x: completed, >: in progress).
        A declined one (refused when it asked) says so and does nothing."""
        self.requests += 1
        tool_id = "tool-%d" % self.requests
        if kind == "tool":
            exit_code, command = tool_command(arg)
            emit(ev="tool", turn=turn.number, id=tool_id, command=command, exit_code=exit_code, declined=declined)
        elif kind == "edit":
            emit(ev="edit", turn=turn.number, id=tool_id, path=arg.strip(), declined=declined)
        else:
            marks = {"x": "completed", ">": "in_progress"}
            steps = []
            for step in arg.split("|"):
                mark, _, text = step.strip().partition(" ")
                steps.append([text.strip(), marks[mark]] if mark in marks else [step.strip(), "pending"])
            emit(ev="plan", turn=turn.number, steps=steps)

    def finish(self, status, error=None):
        turn, self.turn = self.turn, None
        output = "\n".join(turn.lines) if status != "cancelled" else ""
        if status == "completed" and turn.schema is not None:
            output = turn.answer if turn.answer is not None else json.dumps(placeholder(turn.schema))
        # saved before the turn is said done, as a real harness saves its session: a `fork` right after the
        # result finds the turn.  A full disk loses the turn's transcript, not the turn.
        try:
            with private_file(self.transcript, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "a") as f:
                f.write(json.dumps({"turn": turn.number, "inputs": turn.texts, "output": output}) + "\n")
        except OSError:
            pass
        if status != "cancelled":
            emit(ev="message", turn=turn.number, id="msg-%d" % turn.number, text=output)
        emit(ev="done", turn=turn.number, status=status, inputs=turn.inputs, output=output, error=error,
             usage=turn.usage, deltas=turn.deltas, write_seconds=round(turn.write_seconds, 3),
             longest_write=round(turn.longest_write, 4), request_waits=turn.request_waits)


def placeholder(schema):
    """A value that fits a plain JSON Schema: an object's required properties
    (all of them without `required`), each a typed placeholder; the first of an
    enum, a const, the first of anyOf/oneOf.  No $ref: it gives null."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return placeholder(schema[key][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    properties = schema.get("properties")
    if kind == "object" or (kind is None and isinstance(properties, dict)):
        properties = properties if isinstance(properties, dict) else {}
        names = schema.get("required") if isinstance(schema.get("required"), list) else list(properties)
        return {name: placeholder(properties.get(name, {})) for name in names if isinstance(name, str)}
    if kind == "array":
        least = schema.get("minItems") if isinstance(schema.get("minItems"), int) else 0
        return [placeholder(schema.get("items")) for _ in range(min(least, 100))]
    return {"string": "string", "integer": 0, "number": 0, "boolean": False}.get(kind)


def tool_command(arg):
    """`[exit=N] CMD` -> (N, CMD)."""
    first, _, rest = arg.partition(" ")
    if first.startswith("exit=") and first[5:].lstrip("-").isdigit():
        return int(first[5:]), rest
    return 0, arg


def inside(path, cwd):
    """Where the path really is, symlinks followed before `..`, as a harness's own edit mode should judge it."""
    full = os.path.realpath(os.path.join(cwd, path)) if "\0" not in path else "\0"
    return full.startswith(os.path.realpath(cwd).rstrip("/") + "/")


def private_file(path, flags, mode):
    """The transcript in the sidecar: never through a symlink, created 0600, and
    only a regular file of ours (this script runs with -I -S: no harnessctl import)."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    st = os.fstat(fd)
    if st.st_mode & 0o170000 != 0o100000 or st.st_uid != os.getuid() or st.st_mode & 0o022:
        os.close(fd)
        raise SystemExit("refusing transcript %s: not a regular file of ours" % path)
    return os.fdopen(fd, mode, encoding="utf-8")

if __name__ == "__main__":
    StandIn(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None).run()
