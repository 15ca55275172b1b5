"""docs/FLEET.md's Slurm recipe runs, as written, on a real Slurm cluster (issue 37).

The cluster (tests/support/slurm_cluster.py) is munged, slurmctld and two slurmd, node names n1 and n2, on
this machine; the blocks of the page's "## Slurm" section run in one bash, in order, with $FLEET a
fresh folder (the shared storage: every node is this machine), `harnessctl` this checkout, and
HARNESSCTL_IDLE_TIMEOUT short, as it sets how long each job lasts after its last turn.  Then the test
reads the event file and asks Slurm which node ran each job."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile

import pytest
import readme
import slurm_cluster
from cliutil import cli_env, command, events, of_type, runtime_pids

FLEET_MD = os.path.join(os.path.dirname(readme.README), "docs", "FLEET.md")


def recipe() -> str:
    """The bash blocks of the Slurm section, one script."""
    return "\n".join(code for language, code in readme.FENCE.findall(readme.section("## Slurm", FLEET_MD))
                     if language == "bash")


@pytest.fixture(scope="module")
def cluster():
    why = slurm_cluster.missing() or next(("the recipe uses %s, which is not installed" % name
                                           for name in ("jq", "flock") if shutil.which(name) is None), None)
    if why:
        if os.environ.get("HARNESSCTL_REQUIRE_REAL") == "1":
            pytest.fail(why)
        pytest.skip(why)
    root = tempfile.mkdtemp(prefix="harnessctl-slurm-")
    os.chmod(root, 0o755)  # munged checks the folders on its socket's path
    started = slurm_cluster.Cluster(root)
    try:
        started.start()
        yield started
    finally:
        started.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_the_slurm_recipe_parks_an_approval_answers_it_from_outside_and_resumes_on_the_other_node(cluster, workdir):
    fleet = workdir / "fleet"
    fleet.mkdir()
    bin_dir = workdir / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "harnessctl"
    launcher.write_text('#!/bin/sh\nexec %s "$@"\n' % " ".join(map(shlex.quote, command())))
    launcher.chmod(0o755)
    env = cli_env(FLEET=str(fleet), HARNESSCTL_IDLE_TIMEOUT="1", SLURM_CONF=cluster.env["SLURM_CONF"],
                  PATH="%s%s%s" % (bin_dir, os.pathsep, os.environ["PATH"]))
    proc = subprocess.run(["bash", "-euc", recipe() + '\necho "jobs: $J $K"'], cwd=str(workdir), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    out = proc.stdout.decode()
    assert proc.returncode == 0, (out, proc.stderr.decode())

    path = str(fleet / "s1.jsonl")
    asked, answered = of_type(path, "request")
    assert (asked["state"], answered["state"]) == ("pending", "replied")
    assert (answered["answer"], answered["by"]) == ("allow", "reply")
    first, later, resumed = of_type(path, "result")
    assert first["output"] == "echo: run the tests\npermission: allow"
    assert later["output"] == "echo: now the docs" and later["status"] == "completed"
    assert resumed["output"] == 'history: ["/permission command:make test\\nrun the tests", "now the docs"]'
    assert [e["resumed_turns"] for e in events(path) if e.get("resumed_turns")] == [2]
    assert '"output":"echo: now the docs"' in out.splitlines()[-2]  # the recipe's last command

    j, k = out.split("jobs: ")[1].split()
    assert slurm_cluster.job_nodes(cluster.env, j) == "n1"
    assert slurm_cluster.job_nodes(cluster.env, k) == "n2"
    assert runtime_pids(path) == []  # each job waited for its runtime
