"""A throw-away Slurm cluster on this machine, for the fleet tests (docs/FLEET.md).

munged with its own key and socket, slurmctld and two slurmd, node names n1 and n2, all on the
loopback interface and all in one scratch folder, in the foreground as our children: stopping
them is terminating them, and nothing outlives the test session.  Debian's slurm-wlm 22.05 runs
several slurmd on one host (`slurmd -N NAME`, each node its own port); no cgroups, no systemd,
no accounting database.  `python3 tests/support/slurm_cluster.py DIR` starts one by hand and prints the
SLURM_CONF to export; Ctrl-C (or SIGTERM) stops it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "sinfo")
NODES = ("n1", "n2")


def missing() -> Optional[str]:
    """Why no cluster can be started here, or None."""
    absent = [name for name in PROGRAMS if shutil.which(name) is None]
    if absent:
        return "%s not installed (apt-get install slurm-wlm munge)" % ", ".join(absent)
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs"
    return None


def free_ports(count: int) -> List[int]:
    """Ports nobody listens on now (the kernel's choice; held together, so they differ)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def slurm_conf(root: str, ports: List[int]) -> str:
    """slurm.conf: everything under `root`, a node per slurmd, each with its own port."""
    nodes = "".join("NodeName=%s NodeHostname=localhost NodeAddr=127.0.0.1 Port=%d CPUs=%d State=UNKNOWN\n"
                    % (name, port, os.cpu_count() or 1) for name, port in zip(NODES, ports[1:]))
    return """ClusterName=harnessctl
SlurmctldHost=localhost
SlurmctldPort={ctld}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdParameters=config_overrides
{nodes}PartitionName=debug Nodes={names} Default=YES MaxTime=INFINITE State=UP
""".format(ctld=ports[0], root=root, nodes=nodes, names=",".join(NODES))


class Cluster:
    """The daemons of one cluster; `env` is what a client needs (SLURM_CONF)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.env = dict(os.environ, SLURM_CONF=os.path.join(root, "slurm.conf"))
        self.daemons: List[Tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, timeout: float = 60) -> None:
        """Start everything and return once every node is idle."""
        for folder in ("munge", "state", "spool", "log"):
            os.makedirs(os.path.join(self.root, folder), exist_ok=True)
        munge = os.path.join(self.root, "munge")
        os.chmod(munge, 0o755)  # munged wants its socket's folder searchable by all
        key = os.path.join(munge, "key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400), "wb") as f:
            f.write(os.urandom(1024))
        with open(self.env["SLURM_CONF"], "w", encoding="utf-8") as f:
            f.write(slurm_conf(self.root, free_ports(1 + len(NODES))))
        self._daemon("munged", "-F", "--key-file=" + key, "--socket=" + os.path.join(munge, "socket"),
                     "--pid-file=" + os.path.join(munge, "pid"), "--seed-file=" + os.path.join(munge, "seed"),
                     "--log-file=" + os.path.join(munge, "log"))
        self._daemon("slurmctld", "-D", "-f", self.env["SLURM_CONF"])
        for name in NODES:
            self._daemon("slurmd", "-D", "-f", self.env["SLURM_CONF"], "-N", name)
        self._wait_idle(timeout)

    def _daemon(self, *argv: str) -> None:
        log = open(os.path.join(self.root, "log", argv[0] + ".out"), "ab")
        with log:
            self.daemons.append((argv[0], subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                                           env=self.env)))

    def _wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.states() != ["idle"] * len(NODES):
            dead = [name for name, proc in self.daemons if proc.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError("the Slurm cluster did not come up (%s; nodes: %s): see %s/log"
                                   % ("exited: " + ", ".join(dead) if dead else "timed out", self.states(),
                                      self.root))
            time.sleep(0.1)

    def states(self) -> List[str]:
        """Each node's state as sinfo says it (empty while slurmctld does not answer)."""
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, timeout=30)
        return proc.stdout.decode().split() if proc.returncode == 0 else []

    def stop(self) -> None:
        """Cancel what still runs, then terminate the daemons (slurmd first, munged last) and reap them."""
        subprocess.run(["scancel", "--full", "--partition=debug"], env=self.env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30)
        for _, proc in reversed(self.daemons):
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.daemons = []


def job_nodes(env: Dict[str, str], job_id: str) -> str:
    """The node list Slurm gave job `job_id` (it remembers ended jobs for MinJobAge, 300 s)."""
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], env=env, stdout=subprocess.PIPE,
                         check=True, timeout=30).stdout.decode()
    return next(field.split("=", 1)[1] for field in out.split() if field.startswith("NodeList="))


if __name__ == "__main__":
    import signal
    import sys

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # kill PID stops it as Ctrl-C does
    cluster = Cluster(os.path.abspath(sys.argv[1]))
    try:
        cluster.start()
        print("export SLURM_CONF=%s" % cluster.env["SLURM_CONF"], flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
