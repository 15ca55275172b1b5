"""The help texts: `harnessctl --help` and `harnessctl COMMAND --help`.

Kept apart from cli.py so the parser stays short; imported only when help
is asked for or a command line is wrong."""

from __future__ import annotations

from .commandtable import BY_NAME, EXIT_CODES
from .fields import FIELDS

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import List, Optional

SYNOPSIS_WIDTH = 100
INDENT = " " * len("harnessctl send   ")


def _wrapped(words: List[str]) -> str:
    """A synopsis's parts on lines of at most SYNOPSIS_WIDTH, the later ones indented."""
    lines = [words[0]]
    for word in words[1:]:
        if len(lines[-1]) + 1 + len(word) > SYNOPSIS_WIDTH:
            lines.append(INDENT + word)
        else:
            lines[-1] += " " + word
    return "\n".join(lines)


SYNOPSIS = {
    "send": _wrapped(["harnessctl send   FILE [TEXT]"] + [field.usage for field in FIELDS if field.usage]
                     + ["[--schema SCHEMA_FILE]", "[--queue | --interrupt]", "[--print-id]",
                        "[--wait [--timeout S]]"]),
    "wait": "harnessctl wait   FILE [INPUT_ID] [--timeout S]\n"
            "       harnessctl wait   --any FILE... [--timeout S]",
    "status": "harnessctl status FILE|DIR...",
    "reply": "harnessctl reply  FILE REQUEST_ID [ANSWER]",
    "cancel": "harnessctl cancel FILE [INPUT_ID]",
    "log": "harnessctl log    FILE [--follow] [--since SEQ | --runs N] [--json] [--diff]",
    "rebind": "harnessctl rebind FILE [--accept FINGERPRINT]",
    "agents": "harnessctl agents [--json]",
    "mcp": "harnessctl mcp    [--root DIR]... [--allow-agent-commands] [--max-mode ask|edit|full]\n"
           "                  [--allow-rules] [--sandbox]",
    "fork": "harnessctl fork   FILE NEWFILE [--cwd DIR | --worktree]",
    "diff": "harnessctl diff   FILE",
    "prune": "harnessctl prune  DIR|FILE... [--older-than DURATION] [--events] [--force] [--dry-run] [--json]",
    "serve": "harnessctl serve  [DIR|FILE]... [--port N] [--host ADDR]",
}

OVERVIEW = """\
usage: {send}
       {wait}
       {status}
       {reply}
       {cancel}
       {log}
       {rebind}
       {agents}
       {mcp}
       {fork}
       {diff}
       {prune}
       {serve}
       harnessctl COMMAND --help | --help | --version

FILE is the event file: its path is the session; ssh://[user@]host[:port]/PATH
names one on another machine (the command runs there over ssh).  TEXT and
ANSWER are read from stdin (all of it, UTF-8) when omitted.  send, reply and cancel print
nothing and exit 0 on success; status and fork print one JSON line; --wait and wait
print the line they waited for; log prints the session for people to read.

Exit codes: 0 ok, 1 internal error, 2 usage or input error, 3 refused by state,
4 event file does not exist, 5 harness unavailable, 6 outcome unknown (timed
out; read the event file before retrying); --wait and wait: 7 failed,
8 cancelled, 9 a request awaits a reply, 10 --timeout passed first,
130 interrupted (the run goes on).

`harnessctl COMMAND --help` describes one command; the event format is in
EVENT.md and the contract in docs/PROTOCOL.md (in the project's repository)."""

def exit_codes(command: str) -> str:
    """The `exit codes:` lines of a command, in numeric order."""
    codes = BY_NAME[command].codes
    return "\n".join("  %-3d %s" % (code, text or EXIT_CODES[code]) for code, text in sorted(codes.items()))


HELP = {
    "send": """\
usage: {synopsis}

Start a run when the conversation is idle, or steer the run going on now:
the caller never checks first.  Exits 0 once the input is accepted: the
harness confirmed it and the `accepted` line is fsynced in FILE.

arguments:
  FILE            the event file; the first send creates it and binds it
  TEXT            the input (quote it: one argument); omitted: read from stdin

options:
{bound}  --schema FILE   a JSON Schema the run's final answer must fit (this send only, starting a run):
                  the result carries it parsed as output_json; an answer that does not fit
                  fails the run (error_class schema).  codex, claudecode and mock; exit 2 elsewhere.
                  `-`: the schema leads stdin, TEXT (when omitted) follows it
  --queue         never steer: while a run is going the input is accepted `queued` and starts
                  the next run of its own (`cancel FILE INPUT_ID` takes it back until then)
  --interrupt     cancel the running run (and drop what is queued); this input starts the next
  --print-id      print the accepted input_id on one line
  --wait          then wait for the result that covers the input; print it as one JSON line
                  (a harness that warns or retries meanwhile gets one line on stderr)
  --timeout S     with --wait: stop waiting after S seconds (default: no limit)
A later send may omit --cwd, --model, --adapter, --agent, the policy and the hooks; a different
value exits 2.

knobs: HARNESSCTL_ADAPTER (none), HARNESSCTL_TIMEOUT (30 s), HARNESSCTL_IDLE_TIMEOUT (60 s),
       HARNESSCTL_CANCEL_GRACE (15 s), HARNESSCTL_HOOK_TIMEOUT (30 s), HARNESSCTL_ON_REQUEST,
       HARNESSCTL_ON_RESULT (none), HARNESSCTL_CODEX_BIN / _CLAUDE_BIN and _ARGS, HARNESSCTL_DEBUG

exit codes:
{codes}""",
    "wait": """\
usage: {synopsis}

With INPUT_ID (printed by `send --print-id`, or the `input_id` of an
`accepted` line): wait for the result that covers that input and print it as
one JSON line, or return early with the pending request of its run.  Returns at
once when the result is in FILE already, also after the runtime exited.
Without INPUT_ID: wait until the conversation is not running or cancelling
(idle, awaiting_reply or failed) and print the status line.
With --any: the same for many sessions at once: print the status line (with
"file") of the first one that is not running or cancelling (of those that are
already, the first given).  A FILE that is not a session exits at once.
While it waits, a harness warning or retry is said on stderr (once per kind,
as it comes); stdout holds the answer only.

arguments:
  FILE            the event file (with --any: one or more)
  INPUT_ID        the input to wait for (an empty one is exit 2: leave it out instead)

options:
  --any           every argument is a FILE: wait for the first session that needs you
  --timeout S     stop waiting after S seconds (default: no limit)

knobs: HARNESSCTL_TIMEOUT (30 s: reaching the runtime), HARNESSCTL_DEBUG

exit codes:
{codes}""",
    "status": """\
usage: {synopsis}

Print one JSON line per FILE, in the order given: file (the path as given),
state (idle, running, awaiting_reply, cancelling, failed), run_id, queued,
pending requests, cwd, model, adapter, runtime (alive, stopped, or elsewhere
with held_by) and last_activity.  A stopped runtime's open work is settled
first (the lost-runtime rule).  With two or more files, one that is not a
session is a line {{"file", "error", "exit_code"}}, the others as ever.

arguments:
  FILE            the event file; any number of them (a shell glob)
  DIR             a directory: each *.jsonl file directly in it (not dot files,
                  not sidecars, not subdirectories), sorted by name, a line each
                  (none for an empty one)

knobs: HARNESSCTL_TIMEOUT (30 s), HARNESSCTL_DEBUG

exit codes:
{codes}""",
    "reply": """\
usage: {synopsis}

Answer a pending request.  Permissions: allow or deny, plus what the request's
options list (e.g. allow-session).  Questions: JSON keyed by question id
({{"q1":"Go"}}) or, for a single question, plain text.  Exits 0 once the
`replied` line is fsynced in FILE, before the harness gets the answer.

arguments:
  FILE            the event file
  REQUEST_ID      the request's id (req-1, req-2 ...), as in `status` or the file
  ANSWER          the answer (quote it: one argument); omitted: read from stdin

knobs: HARNESSCTL_TIMEOUT (30 s), HARNESSCTL_DEBUG

exit codes:
{codes}""",
    "cancel": """\
usage: {synopsis}

Interrupt the active run (its result becomes `cancelled`), drop queued inputs
(each gets a `cancelled` result) and expire pending requests; the conversation
history stays.  Nothing running: exit 0, no event.  With INPUT_ID: take back
that queued input only (a `cancelled` result with error_class `revoked`); the
harness never sees it, and the running run goes on.

arguments:
  FILE            the event file
  INPUT_ID        an input accepted `queued` (send --queue, --interrupt, or held by an agent
                  that cannot steer)

knobs: HARNESSCTL_TIMEOUT (30 s), HARNESSCTL_DEBUG

exit codes:
{codes}""",
    "log": """\
usage: {synopsis}

Print the session as a person reads it: each input with its delivery and
run, the assistant's messages, each tool as one line (title, exit code,
duration) with its output folded, file changes as +N -M PATH, plans as
checklists, requests (a pending one with the `harnessctl reply` commands that
answer it), results with status, tokens and cost.  Reads only FILE: works on
any adapter's file, also after the runtime is gone, and starts nothing.
Colour only on a terminal, and not when NO_COLOR is set.

arguments:
  FILE            the event file

options:
  --since SEQ     start at the first line whose seq is SEQ or more (--since 1: everything)
  --runs N        start at the last N runs (default: the last 20 runs found in
                  the file's last 8 MiB, so a long file's tail is quick)
  --follow        then print what is appended until Ctrl-C, like tail -F
  --json          one JSON object per entry instead of text (its fields:
                  docs/PROTOCOL-COMMANDS.md section 16)
  --diff          show the unified diff under each file change

knobs: NO_COLOR, HARNESSCTL_DEBUG

exit codes:
  0   printed
  2   usage or input error (bad flags, FILE is not an event file)
  4   FILE does not exist (no send created it)
  130 --follow ended by Ctrl-C (or the output was interrupted)""",
    "rebind": """\
usage: {synopsis}

Get back a session whose binding.json is refused or gone, policy (mode,
rules, hooks, limits) included.  When the state directory
(~/.local/state/harnessctl of your passwd home, or HARNESSCTL_STATE_DIR)
holds a record of FILE, the recorded binding is written back.  When it holds
none under this name (it was deleted or is another one, the session was
copied, or moved without its sidecar), the binding found is printed with its
fingerprint and taken only with --accept: read it first, it decides what runs.

arguments:
  FILE            the event file

options:
  --accept FINGERPRINT
                  take the binding shown, if it still has this fingerprint

knobs: HARNESSCTL_STATE_DIR, HARNESSCTL_DEBUG

exit codes:
  0   restored, recorded, or shown (the line on stderr says which)
  2   usage error, a fingerprint that does not match, nothing to rebind
  4   FILE does not exist""",
    "agents": """\
usage: {synopsis}

List the agent presets (--agent NAME of the acp adapter): each one's command
(its HARNESSCTL_ACP_<NAME>_CMD variable replaces it), whether that command is
on PATH here and the version of its npm package, and what the project's tests
proved it does at the version they pin (capabilities, and the degraded ones).
Runs nothing: the version is read from the package's package.json.

options:
  --json          one JSON object per preset instead of the table

exit codes:
  0   listed
  2   usage error""",
    "fork": """\
usage: {synopsis}

Make NEWFILE a new session that continues FILE's conversation as it stands,
with the harness's own fork (codex thread/fork, Claude Code --fork-session,
ACP session/fork, the mock's transcript), for adapters that claim `fork`.
NEWFILE gets FILE's binding (with --cwd: another working directory, such as a
git worktree of the same repository) and a first line that says what it was
forked from: FILE's path and the seq of its last line.  The harness forks at
NEWFILE's first send, so a turn FILE runs before then is in the fork too.
FILE is never written.  Prints {{"file": NEWFILE, "forked_from": FILE, "seq": N}}.

arguments:
  FILE            the event file to fork: idle, with a conversation (a run has started)
  NEWFILE         the new event file: must not exist

options:
  --cwd DIR       NEWFILE's working directory (default: FILE's)
  --worktree      NEWFILE works in a git worktree of its own, on a new branch harnessctl/NAME
                  (NAME: NEWFILE's name), that starts with FILE's files as they are now,
                  committed or not (as send --worktree; FILE's files are not touched)

knobs: HARNESSCTL_TIMEOUT (30 s), HARNESSCTL_DEBUG

exit codes:
{codes}""",
    "diff": """\
usage: {synopsis}

Print what FILE's session changed in its worktree (send or fork --worktree)
since the commit it started from, as one patch `git apply` takes there: its
commits, uncommitted edits and new files, binary ones too.  To a terminal,
control characters are shown escaped; to a pipe, the bytes are exact.

exit codes:
{codes}""",
    "prune": """\
usage: {synopsis}

Remove what stopped sessions leave: the sidecar (FILE.d), the records in the
state folder, the worktree and its branch, and with --events the event file
(else it stays, a log no send may continue).  Never a live session, nor a
file harnessctl did not bind; a worktree holding uncommitted changes or
unmerged commits keeps its session unless --force.  A DIR's records of event
files gone from it are dropped too.  One line per session: removed or kept.

options:
  --older-than DURATION  only sessions whose file changed longer ago (90s, 30m, 12h, 7d, 2w)
  --events        remove the event files too       --force    remove worktrees that hold work
  --dry-run       say what would go; remove nothing
  --json          one object per session: {{"file", "removed", "kept", "refused", "dry_run"}}

exit codes:
{codes}""",
    "serve": """\
usage: {synopsis}

Show the sessions in a browser, live: the fleet page has one row per
session (awaiting a reply stands out), a session's page its transcript as
`log` shows it, its pending requests as buttons, a box that sends (steers a
busy run) and a cancel button; what the page does is recorded as the command
line records it.  Prints one URL with a random token, and serves until
interrupted.  Every request needs the token; a page shows only the sessions
of the arguments.

arguments:
  DIR|FILE        event files, and folders of them (their *.jsonl, new ones as
                  they appear); ssh://host/PATH on another machine (default: .);
                  a FILE not there yet warns, and shows once a send creates it

options:
  --port N        the port (default 0: any free one)
  --host ADDR     the address to listen on (default 127.0.0.1); any other than
                  loopback warns: the token is then all that guards your agents

knobs: HARNESSCTL_SERVE_TIMEOUT (10 s: to send a request), HARNESSCTL_DEBUG

exit codes:
{codes}""",
    "mcp": """\
usage: {synopsis}

Serve the commands to an MCP client (Claude Code, Codex, an editor) over
stdio: JSON-RPC 2.0, one message per line, MCP 2025-11-25 down to 2024-11-05.
Tools: send (with wait: true, the result or the pending request), wait,
status, reply, cancel, log, fork; each does what its command does, and a failure
is a tool error with the command's message and exit code.  A waiting call
sends progress notifications (given a progressToken) and ends, the run going
on, when the client cancels it.

Every event file and cwd must lie (symlinks resolved) under an allowed root:
the --root directories, else the roots the client lists, else the current
directory.  An agent must be a preset name (harnessctl agents).  A send
that binds a new file gets at most --max-mode and no allow rule unless
--allow-rules: the model cannot grant its sub-agent more than you did.

  claude mcp add harnessctl -- harnessctl mcp --root ~/agent

options:
  --root DIR      a directory the tools may use, its subdirectories too (repeatable);
                  ssh://host/DIR: a directory of another machine
  --allow-agent-commands
                  let a send name an agent command line, not only a preset
  --max-mode MODE the most a send may bind a new file to: ask, edit or full (default: ask)
  --allow-rules   let a send bind allow rules (deny rules are always accepted)
  --sandbox       box every new file a send binds (send --sandbox); a call cannot turn it off,
                  so --max-mode full grants "anything inside the box"

knobs: HARNESSCTL_ADAPTER (none), HARNESSCTL_TIMEOUT (30 s), HARNESSCTL_DEBUG

exit codes:
  0   stdin ended
  2   usage error (a --root that is not a directory, a --max-mode that is not a mode,
      --sandbox on a system without Landlock ABI 6)""",
}


def overview() -> str:
    return OVERVIEW.format(**SYNOPSIS)


def command_help(command: str, fixed_adapter: Optional[str]) -> str:
    from .store.registry import names

    adapters = ("only this package's own, %s" % fixed_adapter if fixed_adapter
                else "%s; default: $HARNESSCTL_ADAPTER" % ", ".join(names()))
    codes = exit_codes(command)
    bound = "".join(field.help for field in FIELDS).format(adapters=adapters)  # send's options, fields.FIELDS
    return HELP[command].format(synopsis=SYNOPSIS[command], adapters=adapters, codes=codes, bound=bound)

