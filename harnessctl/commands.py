"""The commands as both faces ask them: the layer under cli.py (argv) and
mcp/tools.py (MCP tool arguments), so that neither face imports the other and
a tool never behaves otherwise than its command.

Here are a send as data (`Send`, built by either face and handed to
client.py), the checks of what a send carries (its text, the adapter and
agent a package fixes), the exit code of each
outcome a wait can have, the status line of one file among several, and
the files a directory stands for in `status DIR`.
What a face alone knows stays with it: the CLI reads files and stdin, the
MCP server holds paths to its roots.
"""

from __future__ import annotations

import os

from .errors import HarnessctlError, NotFoundError, UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

MAX_TEXT = 4 * 1024 * 1024
S_IFMT, S_IFDIR = 0o170000, 0o040000  # stat's, without importing stat (start-up cost)

# What `--wait`, `wait` and the MCP wait exit with, by what they waited for (the status line: 0).
OUTCOME_CODES = {"completed": 0, "status": 0, "failed": 7, "cancelled": 8, "request": 9, "timeout": 10}


# -- a send -----------------------------------------------------------------------


class Send:
    """What a send asks, checked: the face that built it is gone from it.
    `wish` holds the bound fields it gives, by binding key, as
    fields.parsed reads them (a field it does not give is absent);
    `schema` and how it is delivered are this send's alone."""

    __slots__ = ("file", "text", "wish", "schema", "deliver")

    def __init__(self, file: str, text: str, wish: Dict[str, Any], schema: Optional[Dict[str, Any]] = None,
                 deliver: Optional[str] = None) -> None:
        self.file = file
        self.text = text
        self.wish = wish
        self.schema = schema
        self.deliver = deliver  # binding.DELIVERIES (send --queue, --interrupt), or None: steer where it can


def deliver(queue: bool, interrupt: bool) -> Optional[str]:
    """How a send lands (binding.DELIVERIES): --queue, --interrupt, or None (steer where the harness can)."""
    if queue and interrupt:
        raise UsageError("queue and interrupt both say how the input lands: give one")
    return "queue" if queue else "interrupt" if interrupt else None


def send(request: Send) -> str:
    """Hand the send to the runtime; the accepted input's id."""
    from . import client

    return client.send(request.file, request.text, request.wish, request.schema, request.deliver)


def check_text(text: str) -> str:
    """A send's text: not blank, no NUL, at most MAX_TEXT, UTF-8."""
    if not text.strip():
        raise UsageError("empty text: nothing to send")
    if "\0" in text:
        raise UsageError("text contains a NUL byte")
    if len(text.encode("utf-8", "surrogateescape")) > MAX_TEXT:
        raise UsageError("text is larger than %d MiB" % (MAX_TEXT // (1024 * 1024)))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("text is not valid UTF-8") from None
    return text


def fixed(adapter: Optional[str], agent: Optional[str], fixed_adapter: Optional[str],
          fixed_agent: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """The adapter and agent a send binds: those given, else a per-adapter
    package's own; one that differs from the package's is refused."""
    if fixed_adapter and adapter not in (None, fixed_adapter):
        raise UsageError("this harnessctl is the %s adapter's; --adapter %s is not available"
                         % (fixed_adapter, adapter))
    if fixed_agent and agent not in (None, fixed_agent):
        raise UsageError("this harnessctl runs the %s agent; --agent %s is not available" % (fixed_agent, agent))
    return adapter or fixed_adapter, agent or fixed_agent


# -- status lines -----------------------------------------------------------------


def waited_line(file: str, found: Tuple[str, str]) -> Tuple[str, str]:
    """What a wait found, with "file" in the status line a wait without an
    input id ends with (FILE as the caller gave it), and its worktree's
    changes as `status` counts them."""
    kind, line = found
    if kind != "status" or not line:
        return kind, line
    from .client import with_changes

    return kind, with_file(file, with_changes(line))


def listed(path: str) -> Optional[List[str]]:
    """The event files a `status` argument stands for when it is a directory
    (or a symlink to one): its entries named `*.jsonl` that are regular files
    (or symlinks to one: resolve() still refuses one another user planted),
    not dot files, not recursive, sorted by their bytes, each joined to `path`
    as given, as the shell's `DIR/*.jsonl` would be.  Chosen by name, as
    run-parts and conf.d folders choose: no file is opened to choose (its
    status opens it anyway), so a `.jsonl` that is no session gets its error
    line from its status.  None when `path` is not a directory: it is a FILE,
    and its status says what is wrong with it; but a path ending in `/` names
    a directory, so its absence is that path's error."""
    try:
        is_dir = os.stat(path).st_mode & S_IFMT == S_IFDIR
    except (OSError, ValueError) as e:  # ValueError: a NUL, which resolve() names
        if not path.endswith("/") or isinstance(e, ValueError):
            return None
        if isinstance(e, FileNotFoundError):
            raise NotFoundError("no such directory: %s" % path) from None
        raise UsageError("cannot access directory %s: %s" % (path, e.strerror)) from None
    if not is_dir:
        return None
    from .store.address import in_a_listing

    try:
        with os.scandir(path) as entries:
            names = [entry.name for entry in entries if in_a_listing(entry.name) and _is_file(entry)]
    except OSError as e:
        raise UsageError("cannot read directory %s: %s" % (path, e.strerror)) from None
    return [os.path.join(path, name) for name in sorted(names, key=os.fsencode)]


def _is_file(entry: os.DirEntry[str]) -> bool:
    """A regular file, or a symlink to one (a dangling one is not)."""
    try:
        return entry.is_file()
    except OSError:
        return False


def file_status(file: str, count: bool = True) -> Tuple[str, int]:
    """One file's line among several (`status FILE...`, the MCP status tool):
    its status line with "file", or its error line; and that exit code.
    Without `count`, a worktree's changes are not counted (file_statuses)."""
    from . import client

    try:
        return with_file(file, client.status(file, count)), 0
    except HarnessctlError as e:
        return error_line(file, str(e), e.exit_code), e.exit_code
    except Exception as e:
        if os.environ.get("HARNESSCTL_DEBUG") == "1":
            raise
        return error_line(file, "internal error: %s: %s" % (type(e).__name__, e), 1), 1


def file_statuses(files: List[str]) -> List[Tuple[str, int]]:
    """file_status of each file, in order, the changes of the worktrees
    counted side by side: each count is git looking at every file of its
    folder (~40 ms for 10,000 files), time spent in the kernel and on the
    disk, not in Python, so a folder of such sessions takes a fraction of
    one count each on a machine with cores to spare."""
    from .client import WORKTREE, with_changes

    lines = [file_status(file, count=False) for file in files]
    trees = [i for i, (line, _) in enumerate(lines) if WORKTREE in line]
    if len(trees) < 2:
        return [(with_changes(line), code) for line, code in lines]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(len(trees), 2 * (os.cpu_count() or 1))) as pool:
        for i, line in zip(trees, pool.map(with_changes, [lines[i][0] for i in trees])):
            lines[i] = (line, lines[i][1])
    return lines


def with_file(file: str, line: str) -> str:
    """A status line with `"file": FILE` (the path as given) as its first key."""
    return '{"file":%s,%s' % (json_string(file), line[1:])


def error_line(file: str, message: str, code: int) -> str:
    """The line of a file that is not a session: the message a command on it
    alone prints (without `harnessctl: `, made inert as it is: visible.py), and its exit code."""
    from .visible import shown

    return '{"file":%s,"error":%s,"exit_code":%d}' % (json_string(file), json_string(shown(message.replace("\n", " "))),
                                                     code)


def json_string(text: str) -> str:
    """`text` as a JSON string, valid UTF-8 whatever it holds: a path that is
    not UTF-8 (its bytes are lone surrogates here) is written with \\u escapes,
    as state.status_line does.  A plain path costs no import of json."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return '"%s"' % text
    import json

    quoted = json.dumps(text, ensure_ascii=False)
    try:
        quoted.encode("utf-8")
    except UnicodeEncodeError:
        quoted = json.dumps(text)
    return quoted
