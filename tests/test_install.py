"""The README's set-up commands work on a fresh machine, in a fresh venv: the
block under "Try it on a fresh machine" is run as written, once for this
module (the install takes a while); each test checks one thing about what it
made.  The whole suite is never run inside it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import readme
from cliutil import ROOT, cli_env, kill_all_under, wait_results

from harnessctl import registry


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The README's set-up block, run as written (bash, stop at the first failure) in a
    copy of the checkout; its demo directory is moved under the test's own."""
    checkout = tmp_path_factory.mktemp("install") / "harnessctl"
    shutil.copytree(ROOT, str(checkout), ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "build",
                                                                          "dist", "*.egg-info"))
    demo = str(checkout.parent / "demo")
    block = readme.block_after("## Try it on a fresh machine").replace("/tmp/demo", demo)
    if subprocess.run([sys.executable, "-m", "venv", "--help"], stdout=subprocess.DEVNULL).returncode != 0:
        pytest.skip("python3 -m venv is not available")
    env = outside_env()
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")  # `python3` is ours
    try:
        ran = subprocess.run(["bash", "-e", "-c", block], cwd=str(checkout), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=600)
    finally:
        kill_all_under(demo)
    assert ran.returncode == 0, (block, ran.stdout.decode()[-2000:], ran.stderr.decode()[-2000:])
    return checkout / ".venv", ran.stdout.decode(), demo


@pytest.fixture(scope="module")
def venv(setup):
    return setup[0]


def test_setup_block_demo_prints_the_completed_result_then_the_file(setup):
    _, out, demo = setup
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]  # after pip's own lines
    assert lines[0]["type"] == "result" and lines[0]["status"] == "completed"
    assert lines[0]["output"] == "echo: hello" and lines[1:][-1] == lines[0]
    assert [e.get("kind", e["type"]) for e in lines[1:]] == ["accepted", "session", "message", "result"]


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


def test_adapters_install_under_harnessctl_with_every_file_and_no_top_level_adapters(venv):
    """pip puts the repository's adapters/ at harnessctl/adapters (a top-level `adapters` would collide
    with the PyPI distribution of that name), and the registry finds and imports them there."""
    probe = textwrap.dedent("""\
        import json, os, site, sys
        import harnessctl.adapters.mock
        from harnessctl import registry
        top = site.getsitepackages()[0]
        files = sorted(os.path.relpath(os.path.join(d, f), registry.ADAPTERS_DIR)
                       for d, _, fs in os.walk(registry.ADAPTERS_DIR) if "__pycache__" not in d for f in fs)
        json.dump({"top": sorted(os.listdir(top)), "dir": os.path.relpath(registry.ADAPTERS_DIR, top),
                   "package": registry.ADAPTERS_PACKAGE, "names": registry.names(), "files": files,
                   "mock": registry.backend_class("mock").__module__,
                   "imported": harnessctl.adapters.mock.__file__.startswith(top)}, sys.stdout)
        """)
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", probe], env=outside_env(), cwd="/",
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert "adapters" not in found["top"] and "harnessctl" in found["top"]
    assert found["dir"] == os.path.join("harnessctl", "adapters") and found["package"] == "harnessctl.adapters"
    assert found["imported"] and found["mock"] == "harnessctl.adapters.mock.backend"
    source = str(venv.parent / "adapters")  # the copy of the checkout that was installed
    shipped = sorted(os.path.relpath(os.path.join(d, f), source) for d, _, fs in os.walk(source)
                     if "__pycache__" not in d for f in fs if not f.endswith(".pyc"))
    assert found["files"] == shipped and "mock/manifest.json" in shipped
    assert found["names"] == registry.names() and {"mock", "codex", "claudecode"} <= set(found["names"])


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
