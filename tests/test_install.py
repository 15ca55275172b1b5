"""The README's set-up commands work on a fresh machine, in a fresh venv:

    python3 -m venv .venv && .venv/bin/pip install '.[test]'
    .venv/bin/python -m pytest -q

The venv is made once for this module (the install takes a while); each test
checks one thing about it.  The whole suite is never run inside it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from cliutil import ROOT, cli_env, wait_results


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """`python3 -m venv` then `pip install '.[test]'` from the repository root, as the README says."""
    where = tmp_path_factory.mktemp("install") / ".venv"
    made = subprocess.run([sys.executable, "-m", "venv", str(where)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if made.returncode != 0:
        pytest.skip("python3 -m venv is not available: %s" % made.stderr.decode()[-200:])
    pip = subprocess.run([str(where / "bin" / "pip"), "install", "-q", "--no-cache-dir", ".[test]"], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert pip.returncode == 0, pip.stderr.decode()[-2000:]
    return where


def outside_env():
    """The caller's environment without the repository on PYTHONPATH: only the install counts."""
    env = cli_env()
    del env["PYTHONPATH"]
    return env


def test_installed_command_sends_with_the_mock_adapter(venv, workdir):
    path = str(workdir / "demo.jsonl")
    sent = subprocess.run([str(venv / "bin" / "harnessctl"), "send", path, "hello", "--adapter", "mock"],
                          env=outside_env(), cwd=str(workdir), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert sent.returncode == 0 and sent.stdout == b"", sent.stderr
    result = wait_results(path, 1)[0]
    assert result["status"] == "completed" and result["output"] == "echo: hello"


def test_installed_command_status_names_the_mock_adapter(venv, workdir):
    path = str(workdir / "demo.jsonl")
    command = str(venv / "bin" / "harnessctl")
    subprocess.run([command, "send", path, "hello", "--adapter", "mock"], env=outside_env(), check=True)
    status = subprocess.run([command, "status", path], env=outside_env(), stdout=subprocess.PIPE, check=True)
    assert json.loads(status.stdout)["adapter"] == "mock"


def test_installed_command_exits_4_for_a_file_no_send_created(venv, workdir):
    missing = subprocess.run([str(venv / "bin" / "harnessctl"), "status", str(workdir / "none.jsonl")],
                             env=outside_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert missing.returncode == 4 and missing.stderr.startswith(b"harnessctl: ")


def test_venv_python_runs_the_module_from_any_directory(venv):
    version = subprocess.run([str(venv / "bin" / "python"), "-m", "harnessctl", "--version"], env=outside_env(),
                             cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert version.returncode == 0 and version.stdout.startswith(b"harnessctl "), version.stderr


def test_test_extra_gives_the_venv_python_pytest(venv):
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import pytest; print(pytest.__version__)"],
                           env=outside_env(), cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert probe.returncode == 0 and probe.stdout.strip(), probe.stderr


def test_module_outside_the_repository_needs_the_install(workdir):
    """Without the install (or PYTHONPATH), `python3 -m harnessctl` works only from the repository root."""
    proc = subprocess.run([sys.executable, "-m", "harnessctl", "--version"], env=outside_env(), cwd=str(workdir),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode == 0:
        pytest.skip("harnessctl is installed for %s itself" % sys.executable)
    assert proc.returncode == 1 and b"No module named harnessctl" in proc.stderr
