"""One command on another machine: `$HARNESSCTL_SSH … HOST -- $HARNESSCTL_REMOTE_COMMAND WORDS…`.

Every word is quoted for a POSIX shell (the remote login shell parses the
command line; sh, bash, dash, zsh and ksh all read single quotes alike), and
what the user wrote as text (TEXT, ANSWER, a schema) goes on stdin, where no
shell looks.  ssh's own failure (255) and a remote command that is not there
(126, 127) become errors with a human message; every other exit code is the
remote harnessctl's own, returned unchanged."""

from __future__ import annotations

import os

from ..errors import UnavailableError, UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Set, Tuple

    Machine = Tuple[Optional[str], str, Optional[str]]

SSH_FAILED = 255  # ssh's own exit code: no connection, no authentication
NOT_RUN = (126, 127)  # the remote shell found no such command, or could not run it
PERSIST = "60"  # seconds a shared connection outlives its last command (when harnessctl adds sharing)
CONFIGS = ("~/.ssh/config", "/etc/ssh/ssh_config", "/etc/ssh/ssh_config.d")
CHUNK = 65536  # bytes read or written at once


SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def command_line(machine: Machine, words: List[str], settings: Optional[Dict[str, str]] = None) -> List[str]:
    """The argv that runs `harnessctl WORDS…` on `machine` (with `settings` in
    its environment); never a local shell."""
    user, host, port = machine
    configured = os.environ.get("HARNESSCTL_SSH")
    argv = _split(configured) if configured else ["ssh"] + defaults()
    if not argv:
        raise UsageError("HARNESSCTL_SSH is empty: unset it for ssh, or name the command")
    if port is not None:
        argv += ["-p", port]
    if user is not None:
        argv += ["-l", user]
    program = os.environ.get("HARNESSCTL_REMOTE_COMMAND") or "harnessctl"
    assignments = ["%s=%s" % (name, quote(value)) for name, value in (settings or {}).items()]
    return argv + ["--", host, " ".join(assignments + [program] + [quote(word) for word in words])]


def quote(word: str) -> str:
    """`word` as one word of a POSIX shell, as shlex.quote writes it (shlex
    imports re: a tenth of a warm remote command's time here)."""
    if word and all(c in SAFE for c in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def _split(configured: str) -> List[str]:
    """HARNESSCTL_SSH's words, as a shell would split them (shlex when it quotes)."""
    if not any(c in configured for c in "'\"\\"):
        return configured.split()
    import shlex

    try:
        return shlex.split(configured)
    except ValueError as e:
        raise UsageError("HARNESSCTL_SSH is not a command line: %s" % e) from None


def defaults() -> List[str]:
    """The ssh options harnessctl adds when HARNESSCTL_SSH is unset, each one
    only where the user's ssh config says nothing of it: connection sharing
    (a warm command then costs one round trip, no handshake) and a connect
    timeout of HARNESSCTL_TIMEOUT (a machine that drops packets would hold a
    fleet's `status` for the kernel's two minutes)."""
    said = _config_words()
    options = []
    if not said & {b"controlmaster", b"controlpath"}:
        from ..store.address import fallback_socket_dir
        from ..store.private import make_dir

        directory = fallback_socket_dir()
        make_dir(directory)
        options += ["-o", "ControlMaster=auto", "-o", "ControlPath=%s/ssh-%%C" % directory,
                    "-o", "ControlPersist=" + PERSIST]
    if b"connecttimeout" not in said:
        from ..knobs import seconds

        options += ["-o", "ConnectTimeout=%d" % max(1, round(seconds(os.environ, "HARNESSCTL_TIMEOUT", 30)))]
    return options


def _config_words() -> Set[bytes]:
    """The first word of every line of the user's ssh config files, lower case."""
    words: Set[bytes] = set()
    for path in _config_files():
        try:
            with open(path, "rb") as f:
                text = f.read(1 << 20).lower()
        except OSError:
            continue
        words.update(line.split(None, 1)[0].split(b"=")[0] for line in text.splitlines() if line.strip())
    return words


def _config_files() -> List[str]:
    found = []
    for path in CONFIGS:
        path = os.path.expanduser(path)
        if os.path.isdir(path):
            try:
                found += [os.path.join(path, name) for name in sorted(os.listdir(path)) if name.endswith(".conf")]
            except OSError:
                pass
        else:
            found.append(path)
    return found


class Child:
    """ssh started with posix_spawn, its stdin, stdout and stderr pipes as
    asked (else /dev/null, or ours): the one way a remote command runs,
    which `subprocess` (with the selectors, signal and locale it imports)
    would make a few milliseconds slower.  Each pipe is our end's fd, or
    None."""

    def __init__(self, argv: List[str], stdin: bool, stdout: bool) -> None:
        actions: List[Tuple[Any, ...]] = []
        ours: List[int] = []
        theirs: List[int] = []
        for target, wanted in ((0, stdin), (1, stdout), (2, True)):
            if wanted:
                read, write = os.pipe()
                child, parent = (read, write) if target == 0 else (write, read)
                theirs.append(child)
                ours.append(parent)
                actions.append((os.POSIX_SPAWN_DUP2, child, target))
            elif target == 0:
                actions.append((os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0))
        try:
            self.pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)
        except OSError as e:
            for fd in ours:
                os.close(fd)
            raise UnavailableError("cannot run %s: %s (HARNESSCTL_SSH)" % (argv[0], e.strerror)) from None
        finally:
            for fd in theirs:
                os.close(fd)
        self.stderr = ours.pop()
        self.stdout = ours.pop() if stdout else None
        self.stdin = ours.pop() if stdin else None
        self.code: Optional[int] = None  # once it is reaped

    @classmethod
    def on(cls, machine: Machine, words: List[str], stdin: bool = False, stdout: bool = True,
           settings: Optional[Dict[str, str]] = None) -> Child:
        """ssh running WORDS on `machine` (command_line)."""
        return cls(command_line(machine, words, settings), stdin, stdout)

    def communicate(self, data: bytes = b"") -> Tuple[int, bytes, bytes]:
        """(exit code, stdout, stderr) once it ended, `data` written to its
        stdin; each output's lines joined again (its last newline dropped)."""
        out: List[bytes] = []
        err: List[bytes] = []
        try:
            self.pump(data, err.append, out.append)
        except BaseException:
            self.kill()
            raise
        return self.wait(), b"\n".join(out), b"\n".join(err)

    def pump(self, data: bytes, on_stderr: Callable[[bytes], None], on_stdout: Callable[[bytes], None]) -> None:
        """Write `data` to its stdin (then close it: the remote reads to EOF)
        while its stderr and stdout come line by line, until both end."""
        import select

        poller = select.poll()
        readers = {self.stderr: on_stderr}
        if self.stdout is not None:
            readers[self.stdout] = on_stdout
        pending = dict.fromkeys(readers, b"")
        for fd in readers:
            poller.register(fd, select.POLLIN)
        left = memoryview(data)
        if self.stdin is not None:
            os.set_blocking(self.stdin, False)
            poller.register(self.stdin, select.POLLOUT)
        while pending:
            for fd, _ in poller.poll():
                if fd == self.stdin:
                    left = self._feed(left, poller)
                    continue
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    poller.unregister(fd)
                    os.close(fd)
                    rest = pending.pop(fd)
                    if rest:
                        readers[fd](rest)
                    continue
                lines = (pending[fd] + chunk).split(b"\n")
                pending[fd] = lines.pop()
                for line in lines:
                    readers[fd](line)
        if self.stdin is not None:  # the remote ended before it read all: nobody reads the rest
            os.close(self.stdin)
            self.stdin = None

    def _feed(self, left: memoryview, poller: Any) -> memoryview:
        """Write what stdin can take now; close it once all is written (or the
        remote stopped reading: its exit code says why)."""
        assert self.stdin is not None
        try:
            left = left[os.write(self.stdin, left[:CHUNK]):]
        except BrokenPipeError:
            left = left[len(left):]
        if not left:
            poller.unregister(self.stdin)
            os.close(self.stdin)
            self.stdin = None
        return left

    def wait(self) -> int:
        """Its exit code (128 + N when signal N ended it, as a shell says)."""
        if self.code is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:  # reaped meanwhile by kill() on another thread
                return self.code if self.code is not None else 128 + 9
            code = os.waitstatus_to_exitcode(status)
            self.code = 128 - code if code < 0 else code
        return self.code

    def kill(self) -> None:
        """Kill it, unless it has ended and been reaped already (its pid may be another's then)."""
        import signal

        if self.code is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.wait()


def end_with_signals() -> None:
    """SIGTERM and SIGHUP end this command as an exception would, so that
    the ssh it started is killed on the way out (the command's own cleanup):
    an ssh left behind would keep the remote command waiting, unseen.  The
    remote command ends once its ssh is gone (stdio.end_with_reader)."""
    import signal

    def leave(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, leave)


def failure(machine: Machine, code: int, said: str) -> Optional[UnavailableError]:
    """The error an exit code means when it is not the remote harnessctl's own;
    `said`: what ssh printed that was not harnessctl's (its last line names the cause)."""
    said = "\n".join(line for line in said.splitlines() if not line.startswith("harnessctl: "))
    user, host, port = machine
    where = host + (":" + port if port else "")
    last = said.strip().splitlines()[-1] if said.strip() else ""
    if code == SSH_FAILED:
        return UnavailableError("cannot reach %s over ssh: %s" % (where, last or "ssh exited 255"))
    if code in NOT_RUN:
        program = os.environ.get("HARNESSCTL_REMOTE_COMMAND") or "harnessctl"
        return UnavailableError("cannot run %r on %s (exit %d%s): install harnessctl there or set "
                                "HARNESSCTL_REMOTE_COMMAND" % (program, where, code, ": " + last if last else ""))
    return None
