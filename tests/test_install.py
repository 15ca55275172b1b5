"""`pip install .` gives a working `harnessctl` console script (the README's first set-up command)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cliutil import ROOT, cli_env, wait_results


def test_pip_install_gives_a_harnessctl_command_that_sends(workdir):
    tmp_path = workdir
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if made.returncode != 0:
        pytest.skip("python3 -m venv is not available: %s" % made.stderr.decode()[-200:])
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-cache-dir", ROOT],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert pip.returncode == 0, pip.stderr.decode()[-2000:]
    command = str(venv / "bin" / "harnessctl")
    env = cli_env()
    del env["PYTHONPATH"]
    path = str(tmp_path / "x" / "demo.jsonl")
    os.mkdir(str(tmp_path / "x"))
    try:
        sent = subprocess.run([command, "send", path, "hello", "--adapter", "mock"], env=env, cwd=str(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert sent.returncode == 0 and sent.stdout == b"", sent.stderr
        result = wait_results(path, 1)[0]
        assert result["status"] == "completed" and result["output"] == "echo: hello"
        status = subprocess.run([command, "status", path], env=env, stdout=subprocess.PIPE, check=True)
        assert json.loads(status.stdout)["adapter"] == "mock"
        missing = subprocess.run([command, "status", str(tmp_path / "x" / "none.jsonl")], env=env)
        assert missing.returncode == 4
    finally:
        subprocess.run([command, "cancel", path], env=env)
