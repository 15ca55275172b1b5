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
    checkout = copy_checkout(tmp_path_factory.mktemp("install"))
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


def copy_checkout(parent):
    """A copy of the repository to install from (pip builds in the source tree) as parent/harnessctl."""
    checkout = parent / "harnessctl"
    shutil.copytree(ROOT, str(checkout), ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "build",
                                                                          "dist", "*.egg-info"))
    return checkout


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


def imported(argv, cwd):
    """The modules a command imports, in Python's own words (PYTHONPROFILEIMPORTTIME on stderr)."""
    env = dict(outside_env(), PYTHONPROFILEIMPORTTIME="1")
    proc = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.decode().splitlines()
            if line.startswith("import time:") and "imported package" not in line}


def test_installed_command_imports_nothing_that_running_the_package_does_not(venv, workdir):
    """The launcher pip installs (bin/harnessctl) adds no import of its own: the script pip generates for
    a [project.scripts] entry point imports `re` (with enum and functools, slower than a whole `status`)."""
    path = str(workdir / "demo.jsonl")
    subprocess.run([str(venv / "bin" / "harnessctl"), "send", path, "hello", "--adapter", "mock"],
                   env=outside_env(), check=True)
    wait_results(path, 1)
    command = imported([str(venv / "bin" / "harnessctl"), "status", path], str(workdir))
    module = imported([str(venv / "bin" / "python"), "-m", "harnessctl", "status", path], str(workdir))
    assert "harnessctl.cli" in command and "re" not in module
    assert command <= module, sorted(command - module)


def test_installed_command_imports_nothing_from_its_own_directory(venv, workdir):
    """Python puts a script's directory first on sys.path; the launcher takes it off, so a bin/ holding
    a .py file of a module's name cannot stand in for it (and a big bin/ is not listed at start-up)."""
    decoy = venv / "bin" / "__future__.py"  # the first module harnessctl imports that start-up has not
    decoy.write_text("raise SystemExit('imported from bin/')\n")
    try:
        version = subprocess.run([str(venv / "bin" / "harnessctl"), "--version"], env=outside_env(),
                                 cwd=str(workdir), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        decoy.unlink()
    assert version.returncode == 0 and version.stdout.startswith(b"harnessctl "), version.stderr


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


def pip_install(python, *args, env=None):
    """`python -m pip install --no-deps ARGS` (harnessctl has none; setuptools comes from the index)."""
    return subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                           *args], env=env or outside_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=600)


def test_editable_install_command_sees_an_adapter_folder_added_after_it(tmp_path):
    """The Development flow (`pip install -e`): the command runs the checkout, new adapters included."""
    checkout = copy_checkout(tmp_path)
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    installed = pip_install(tmp_path / "venv" / "bin" / "python", "-e", str(checkout))
    assert installed.returncode == 0, installed.stderr.decode()[-2000:]
    shutil.copytree(os.path.join(ROOT, "tests", "tiny_adapter"), str(checkout / "adapters" / "tiny"))
    unknown = subprocess.run([str(tmp_path / "venv" / "bin" / "harnessctl"), "send", str(tmp_path / "x.jsonl"),
                              "hello", "--adapter", "nosuch"], env=outside_env(), cwd="/", stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    assert unknown.returncode == 2 and b"known: acp, claudecode, codex, mock, tiny)" in unknown.stderr, \
        unknown.stderr


def test_user_install_command_runs(tmp_path):
    """`pip install --user` puts the command in ~/.local/bin (here PYTHONUSERBASE) for the base interpreter."""
    python = os.path.join(sys.base_prefix, "bin", "python3")  # a venv's pip refuses --user
    env = dict(outside_env(), PYTHONUSERBASE=str(tmp_path / "user"))
    if subprocess.run([python, "-m", "pip", "--version"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        pytest.skip("%s has no pip" % python)
    installed = pip_install(python, "--user", str(copy_checkout(tmp_path)), env=env)
    if b"externally-managed-environment" in installed.stderr:
        pytest.skip("%s is externally managed (PEP 668)" % python)
    assert installed.returncode == 0, installed.stderr.decode()[-2000:]
    version = subprocess.run([str(tmp_path / "user" / "bin" / "harnessctl"), "--version"], env=env, cwd="/",
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert version.returncode == 0 and version.stdout.startswith(b"harnessctl "), version.stderr


def test_pipx_install_command_runs(tmp_path):
    """pipx exposes the launcher (a script of the distribution, as an entry point's would be) on its PATH."""
    pipx = shutil.which("pipx")
    if pipx is None:
        pytest.skip("pipx is not installed")
    env = dict(outside_env(), PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "bin"),
               PIPX_MAN_DIR=str(tmp_path / "man"))
    installed = subprocess.run([pipx, "install", str(copy_checkout(tmp_path))], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=600)
    assert installed.returncode == 0, installed.stderr.decode()[-2000:]
    version = subprocess.run([str(tmp_path / "bin" / "harnessctl"), "--version"], env=env, cwd="/",
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert version.returncode == 0 and version.stdout.startswith(b"harnessctl "), version.stderr
