"""One command on another machine: `$HARNESSCTL_SSH … HOST -- $HARNESSCTL_REMOTE_COMMAND WORDS…`.

Every word is quoted for a POSIX shell (the remote login shell parses the
command line; sh, bash, dash, zsh and ksh all read single quotes alike), and
what the user wrote as text (TEXT, ANSWER, a schema) goes on stdin, where no
shell looks.  ssh's own failure (255) and a remote command that is not there
(126, 127) become errors with a human message; every other exit code is the
remote harnessctl's own, returned unchanged."""

from __future__ import annotations

import os
import subprocess

from ..errors import UnavailableError, UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple

    Machine = Tuple[Optional[str], str, Optional[str]]

SSH_FAILED = 255  # ssh's own exit code: no connection, no authentication
NOT_RUN = (126, 127)  # the remote shell found no such command, or could not run it
PERSIST = "60"  # seconds a shared connection outlives its last command (when harnessctl adds sharing)
CONFIGS = ("~/.ssh/config", "/etc/ssh/ssh_config", "/etc/ssh/ssh_config.d")


def command_line(machine: Machine, words: List[str], settings: Optional[Dict[str, str]] = None) -> List[str]:
    """The argv that runs `harnessctl WORDS…` on `machine` (with `settings` in
    its environment); never a local shell."""
    import shlex

    user, host, port = machine
    configured = os.environ.get("HARNESSCTL_SSH")
    try:
        argv = shlex.split(configured) if configured else ["ssh"] + sharing()
    except ValueError as e:
        raise UsageError("HARNESSCTL_SSH is not a command line: %s" % e) from None
    if not argv:
        raise UsageError("HARNESSCTL_SSH is empty: unset it for ssh, or name the command")
    if port is not None:
        argv += ["-p", port]
    if user is not None:
        argv += ["-l", user]
    program = os.environ.get("HARNESSCTL_REMOTE_COMMAND") or "harnessctl"
    assignments = ["%s=%s" % (name, shlex.quote(value)) for name, value in (settings or {}).items()]
    return argv + ["--", host, " ".join(assignments + [program] + [shlex.quote(word) for word in words])]


def sharing() -> List[str]:
    """ssh options that share one connection between commands (a warm command
    then costs one round trip, no handshake): none when the user's ssh config
    speaks of ControlMaster or ControlPath, whose choice it then is."""
    if any(_mentions_sharing(path) for path in _config_files()):
        return []
    from ..address import fallback_socket_dir
    from ..private import make_dir

    directory = fallback_socket_dir()
    make_dir(directory)
    return ["-o", "ControlMaster=auto", "-o", "ControlPath=%s/ssh-%%C" % directory, "-o", "ControlPersist=" + PERSIST]


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


def _mentions_sharing(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            text = f.read(1 << 20).lower()
    except OSError:
        return False
    return any(line.strip().startswith((b"controlmaster", b"controlpath")) for line in text.splitlines())


def start(machine: Machine, words: List[str], stdin: bool, settings: Optional[Dict[str, str]] = None,
          **popen: object) -> subprocess.Popen[bytes]:
    """The ssh process running WORDS on `machine`: stdin a pipe when `stdin`, else
    /dev/null (ssh would otherwise forward a terminal's keys); stdout and stderr
    as `popen` says."""
    argv = command_line(machine, words, settings)
    try:
        return subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, **popen)  # type: ignore[call-overload]
    except OSError as e:
        raise UnavailableError("cannot run %s: %s (HARNESSCTL_SSH)" % (argv[0], e.strerror)) from None


def end_with_signals() -> None:
    """SIGTERM and SIGHUP end this command as an exception would, so that
    the ssh it started is killed on the way out (the command's own cleanup):
    an ssh left behind would keep the remote command waiting, unseen.  The
    remote command ends once its ssh is gone (cli.end_with_reader)."""
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
