"""A throw-away OpenSSH test bed on the loopback interface: two real sshd
("hosts" h1 and h2, each its own port and host key), one user key, an
ssh_config naming them (and "down", a port nothing listens on), connection
sharing on.  The tests of ssh:// addresses (tests/remote/) and bench/run use
it; it imports nothing from pytest, so the bench can start it too.

The remote harnessctl runs through sshd, which gives it a clean environment:
HARNESSCTL_REMOTE_COMMAND carries what the local command's environment says
(`env NAME=VALUE ... PYTHON -m harnessctl`), each piece quoted for the remote
shell."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Dict, List, Optional, Sequence

SSHD = "/usr/sbin/sshd"
HOSTS = ("h1", "h2")
DOWN = "down"  # a name whose port refuses every connection
START_SECONDS = 30


def missing() -> Optional[str]:
    """Why the test bed cannot start here, or None when it can."""
    if not os.access(SSHD, os.X_OK):
        return "%s not found (the distribution's openssh-server package)" % SSHD
    for program in ("ssh", "ssh-keygen"):
        if not shutil.which(program):
            return "%s not found on PATH (the distribution's openssh-client package)" % program
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keygen(path: str) -> str:
    """A new ed25519 key without a passphrase at `path`; its public line."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "harnessctl-test", "-f", path],
                   check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    with open(path + ".pub") as f:
        return f.read().strip()


def banner(port: int) -> bool:
    """Whether an SSH server answers on the port: it accepts and sends its version line."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            return s.recv(64).startswith(b"SSH-")
    except OSError:
        return False


SSHD_CONFIG = """\
ListenAddress 127.0.0.1
HostKey {folder}/host_key
AuthorizedKeysFile {folder}/authorized_keys
PidFile {folder}/sshd.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
PrintLastLog no
X11Forwarding no
# one master connection carries every session of a test (a `log --follow`, a `wait --any`, sends)
MaxSessions 100
MaxStartups 100:30:200
LogLevel ERROR
"""

SSH_CONFIG_HOST = """\
Host {name}
  HostName 127.0.0.1
  Port {port}
"""

SSH_CONFIG_ALL = """\
Host *
  IdentityFile {folder}/user_key
  IdentitiesOnly yes
  UserKnownHostsFile {folder}/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 10
  ControlMaster auto
  ControlPath {folder}/cm-%C
  ControlPersist 60
  LogLevel ERROR
"""


class Sshd:
    """One sshd -D on 127.0.0.1 with its own folder, host key and port."""

    def __init__(self, folder: str, authorized: str) -> None:
        os.makedirs(folder, 0o700)
        self.folder = folder
        self.host_key = keygen(os.path.join(folder, "host_key"))
        with open(os.path.join(folder, "authorized_keys"), "w") as f:
            f.write(authorized + "\n")
        self.config = os.path.join(folder, "sshd_config")
        with open(self.config, "w") as f:
            f.write(SSHD_CONFIG.format(folder=folder))
        self.port = 0
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> None:
        """Start on a free port and wait for its banner; another port if one was taken meanwhile."""
        for _ in range(5):
            self.port = free_port()
            with open(os.path.join(self.folder, "sshd.log"), "ab") as log:
                self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", self.config, "-p", str(self.port)],
                                             stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            deadline = time.monotonic() + START_SECONDS
            while self.proc.poll() is None and time.monotonic() < deadline:
                if banner(self.port):
                    return
                time.sleep(0.02)
            self.stop()
        raise RuntimeError("sshd did not start: %s" % self.log())

    def log(self) -> str:
        with open(os.path.join(self.folder, "sshd.log"), errors="replace") as f:
            return f.read()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class SshBed:
    """Two sshd ("h1", "h2"), a user key they accept, an ssh_config naming them and "down"."""

    def __init__(self) -> None:
        # short: ControlPath sockets must fit a sockaddr_un (108 bytes)
        self.folder = tempfile.mkdtemp(prefix="hc-ssh-")
        self.config = os.path.join(self.folder, "ssh_config")
        self.servers: Dict[str, Sshd] = {}
        self._refuser: Optional[socket.socket] = None

    def start(self) -> "SshBed":
        os.makedirs("/run/sshd", 0o755, exist_ok=True)  # sshd's privilege separation directory
        user = keygen(os.path.join(self.folder, "user_key"))
        try:
            for name in HOSTS:
                server = Sshd(os.path.join(self.folder, name), user)
                server.start()
                self.servers[name] = server
            # bound, never listening: a connection is refused, and no other program gets the port meanwhile
            self._refuser = socket.socket()
            self._refuser.bind(("127.0.0.1", 0))
            self._write_config(self._refuser.getsockname()[1])
        except BaseException:
            self.stop()
            raise
        return self

    def _write_config(self, down_port: int) -> None:
        with open(os.path.join(self.folder, "known_hosts"), "w") as f:
            for server in self.servers.values():
                f.write("[127.0.0.1]:%d %s\n" % (server.port, " ".join(server.host_key.split()[:2])))
        hosts = [(name, server.port) for name, server in self.servers.items()] + [(DOWN, down_port)]
        with open(self.config, "w") as f:
            f.writelines(SSH_CONFIG_HOST.format(name=name, port=port) for name, port in hosts)
            f.write(SSH_CONFIG_ALL.format(folder=self.folder))

    def ssh(self) -> List[str]:
        """The ssh command line of this bed (HARNESSCTL_SSH, split): the ssh found on PATH now, by its
        full path, so that a test may put a recording `ssh` of its own first on PATH."""
        return [shutil.which("ssh") or "ssh", "-F", self.config]

    def env(self, local: Dict[str, str], remote: Sequence[str], **remote_env: str) -> Dict[str, str]:
        """`local` (a command's environment) with HARNESSCTL_SSH naming this bed and
        HARNESSCTL_REMOTE_COMMAND running `remote` (a command line) there with the
        HARNESSCTL_* and PYTHONPATH values of `local`, then `remote_env`."""
        passed = {k: v for k, v in local.items() if k == "PYTHONPATH" or (
            k.startswith("HARNESSCTL_") and not k.startswith(("HARNESSCTL_TEST", "HARNESSCTL_REQUIRE")))}
        passed.update(remote_env)
        words = ["env", *("%s=%s" % item for item in sorted(passed.items())), *remote]
        return dict(local, HARNESSCTL_SSH=shlex.join(self.ssh()),
                    HARNESSCTL_REMOTE_COMMAND=" ".join(shlex.quote(w) for w in words))

    def logged_env(self, local: Dict[str, str], log: str) -> Dict[str, str]:
        """`env` of this checkout's harnessctl there, each remote command's words appended to `log` first."""
        import cliutil

        remote = ["sh", "-c", 'echo "$*" >> "$HC_REMOTE_LOG"; exec "$@"', "sh", *cliutil.command()]
        return self.env(local, remote, HC_REMOTE_LOG=log)

    def warm(self) -> None:
        """Open each host's master connection (the first ssh to it starts one)."""
        for name in self.servers:
            subprocess.run([*self.ssh(), name, "true"], check=True, stdin=subprocess.DEVNULL)

    def stop(self) -> None:
        """The masters asked to exit, the servers stopped, the folder removed."""
        for name in self.servers:
            subprocess.run([*self.ssh(), "-O", "exit", name], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        for server in self.servers.values():
            server.stop()
        if self._refuser is not None:
            self._refuser.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def remote_commands(log: str) -> List[str]:
    """The remote commands a logged_env ran so far, each as one line of its words (the log emptied)."""
    try:
        with open(log) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    os.unlink(log)
    return lines


def address(host: str, path: str) -> str:
    """The ssh:// address of an absolute path on a host of the bed."""
    return "ssh://%s%s" % (host, path)


def commands_on(path: str, *words: str) -> List[int]:
    """Processes of this machine (the remote ends of the bed's commands are here too) whose command
    line holds `path` and each of `words`: a remote `log --follow` or `wait` still running."""
    needles = [os.fsencode(path)] + [w.encode() for w in words]
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if all(needle in argv for needle in needles):
            found.append(int(entry))
    return found
