"""The README's set-up works on a fresh machine, in a fresh venv, as a newcomer
types it: one bash runs the venv block under "Install", the "Try it" block and
then every bash recipe, as written or as its `# mock:` line says (a command
first, or a task the mock understands in place of the quoted one), with a
scratch HOME and no harnessctl variable the README does not set.  That runs
once for this module (the install takes a while); each test checks one thing
about what it made.  The whole suite is never run inside it.  Each user route
(`pipx install .`, the venv, a per-adapter package) then runs the Try-it block
as written and forks its session, as a user goes on from there."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from typing import List

import pytest
import readme
from cliutil import ROOT, cli_env, copy_checkout, extract_archive, kill_all_under, matching, run, wait_results

from harnessctl.store import registry

TRY = "## Try it: no model, no network"
FOLLOW = "tail -n +1 -F"  # the recipe that follows the file for ever: run for a few seconds


def newcomer_script(folder):
    """The README's blocks as one bash script: install, try it, then each recipe of docs/RECIPES.md
    (on the mock as its `# mock:` line says) in a file of its own, run in order
    from the shell the README set up, its output and exit code kept under
    `folder`.  Returns the script and the recipes as the README writes them."""
    install = [code for language, code in readme.blocks("## Install") if "venv" in code]
    lines = [install[0], readme.block_after(TRY)]
    recipes = [code for language, code in readme.recipes() if language == "bash"]
    for i, code in enumerate(recipes):
        path = os.path.join(folder, "recipe-%d" % i)
        with open(path + ".sh", "w") as f:
            f.write(readme.on_the_mock(code) if readme.MOCK.search(code) else code)
        limit = 5 if code.startswith(FOLLOW) else 120
        run = "timeout -s KILL %d bash %s.sh >%s.out 2>%s.err </dev/null" % (limit, path, path, path)
        lines.append("if %s; then echo 0; else echo $?; fi >%s.code" % (run, path))
    return "\n".join(lines), recipes


def newcomer_env(home):
    """The caller's environment as a new user's shell has it: no harnessctl
    variable, no PYTHONPATH, a HOME of its own; `python3` is the one running the tests."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESSCTL_") and k != "PYTHONPATH"}
    env["HOME"] = home
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Runs the newcomer's script in a copy of the checkout; returns the venv, the
    script's stdout, the scratch HOME and the recipes' folder."""
    if shutil.which("jq") is None:
        pytest.skip("the recipes use jq, which is not installed")
    if subprocess.run([sys.executable, "-m", "venv", "--help"], stdout=subprocess.DEVNULL).returncode != 0:
        pytest.skip("python3 -m venv is not available")
    top = tmp_path_factory.mktemp("install")
    checkout, home, folder = copy_checkout(top), top / "home", top / "recipes"
    home.mkdir()
    folder.mkdir()
    script, _ = newcomer_script(str(folder))
    try:
        ran = subprocess.run(["bash", "-e", "-c", script], cwd=str(checkout), env=newcomer_env(str(home)),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
    finally:
        kill_all_under(str(home))
    assert ran.returncode == 0, (script, ran.stdout.decode()[-2000:], ran.stderr.decode()[-2000:])
    return checkout / ".venv", ran.stdout.decode(), home, folder


@pytest.fixture(scope="module")
def venv(setup):
    return setup[0]


def demo_output(out):
    """The try-it block's output: the result line `send --wait` printed, then what `log` printed."""
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith('{"type":"result"'))
    return json.loads(lines[first]), lines[first + 1:]


def test_try_it_send_wait_prints_the_completed_result_of_hello(setup):
    result, _ = demo_output(setup[1])
    assert result["status"] == "completed" and result["output"] == "echo: hello"


def unvarying(lines):
    """Log lines with what differs from run to run (run ids, durations) replaced."""
    return [re.sub(r"\b\d+ ms\b", "N ms", re.sub(r"run [0-9a-f]{8}", "run ID", line)) for line in lines]


def shown_log() -> List[str]:
    """The `log` output the README shows under Try it."""
    return next(code for language, code in readme.blocks(TRY) if language == "text").splitlines()


def test_try_it_log_prints_what_the_readme_shows(setup):
    _, log = demo_output(setup[1])
    assert unvarying(log) == unvarying(shown_log())


def assert_demo_runs_and_forks(bin_dir: str, home: str) -> None:
    """A route's install, as its user goes on: the README's Try-it block run by bash as written, with
    `bin_dir`'s harnessctl first on PATH and `home` as HOME, prints the log the README shows; then
    `fork` of its session and a send to the fork, from ~/agent, complete, the fork continuing the
    conversation.  `fork` imports the bound adapter's backend in the command itself, which each install
    layout must find (issue 47).  Reaps what the route left running."""
    env = newcomer_env(home)
    env["PATH"] = bin_dir + os.pathsep + env["PATH"]
    harnessctl = shutil.which("harnessctl", path=env["PATH"])
    assert harnessctl == os.path.join(bin_dir, "harnessctl")
    agent = os.path.join(home, "agent")
    try:
        demo = subprocess.run(["bash", "-e", "-c", readme.block_after(TRY)], cwd=home, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=300)
        assert demo.returncode == 0, demo.stderr.decode()[-2000:]
        _, log = demo_output(demo.stdout.decode())
        assert unvarying(log) == unvarying(shown_log())
        for args in (("fork", "demo.jsonl", "forked.jsonl"), ("send", "forked.jsonl", "again", "--wait")):
            proc = subprocess.run([harnessctl, *args], cwd=agent, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=120)
            assert proc.returncode == 0, (args, proc.stderr.decode())
    finally:
        kill_all_under(home)
    result = json.loads(proc.stdout)
    assert result["status"] == "completed" and result["output"] == "echo: again"
    resumed = matching(os.path.join(agent, "forked.jsonl"), "log", message="resumed the stand-in conversation")
    assert [e["resumed_turns"] for e in resumed] == [2]


def recipe_output(setup, first_line, suffix):
    """What the recipe that starts with `first_line` left in its .out, .err or .code file."""
    folder = setup[3]
    _, recipes = newcomer_script(str(folder))
    (i,) = [i for i, code in enumerate(recipes) if code.startswith(first_line)]
    with open(str(folder / ("recipe-%d.%s" % (i, suffix)))) as f:
        return f.read()


def test_every_recipe_runs_after_try_it(setup):
    _, recipes = newcomer_script(str(setup[3]))
    failed = {}
    for code in recipes:
        first = code.splitlines()[0]
        exit_code = int(recipe_output(setup, first, "code"))
        expected = 137 if code.startswith(FOLLOW) else 0  # killed by `timeout`, as Ctrl-C would end it
        if exit_code != expected:
            failed[first] = (exit_code, recipe_output(setup, first, "err")[-500:])
    assert not failed, failed


def test_the_follow_recipe_showed_the_session_so_far(setup):
    shown = [json.loads(line) for line in recipe_output(setup, FOLLOW, "out").splitlines()]
    assert shown[0]["type"] == "accepted" and shown[-1]["type"] == "result"


def test_the_answer_recipe_printed_the_mocks_answer(setup):
    assert recipe_output(setup, "answer=$(", "out") == "echo: what does src/main.py do? one paragraph\n"


def test_the_fork_recipe_kept_the_worktree_of_a_fork_whose_tests_pass(setup):
    out = recipe_output(setup, "for i in 1 2 3; do", "out")
    assert out in ("keep ~/try-1\n", "keep ~/try-2\n", "keep ~/try-3\n"), out


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
    a [project.scripts] entry point imports `re` (with enum and functools, slower than a whole `status`).
    `re` is checked on the command itself: under 3.9, `-m` imports it too (runpy's pkgutil imports typing)."""
    path = str(workdir / "demo.jsonl")
    subprocess.run([str(venv / "bin" / "harnessctl"), "send", path, "hello", "--adapter", "mock"],
                   env=outside_env(), check=True)
    wait_results(path, 1)
    command = imported([str(venv / "bin" / "harnessctl"), "status", path], str(workdir))
    # the venv's interpreter, not cliutil's: the installed package is what is measured
    module = imported([str(venv / "bin" / "python"), "-m", "harnessctl", "status", path], str(workdir))
    assert "harnessctl.cli" in command and "re" not in command
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


def test_venv_python_runs_the_module_from_any_directory(venv):  # the venv's interpreter on purpose
    version = subprocess.run([str(venv / "bin" / "python"), "-m", "harnessctl", "--version"], env=outside_env(),
                             cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert version.returncode == 0 and version.stdout.startswith(b"harnessctl "), version.stderr


def test_adapters_install_under_harnessctl_with_every_file_and_no_top_level_adapters(venv):
    """pip puts the repository's adapters/ at harnessctl/adapters (a top-level `adapters` would collide
    with the PyPI distribution of that name), and the registry finds and imports them there."""
    probe = textwrap.dedent("""\
        import json, os, site, sys
        import harnessctl.adapters.mock
        from harnessctl.store import registry
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


def test_venv_route_runs_the_demo_and_forks(venv, workdir):
    (workdir / "home").mkdir()
    assert_demo_runs_and_forks(str(venv / "bin"), str(workdir / "home"))


@pytest.fixture(scope="module")
def development(tmp_path_factory):
    """The README's Development install (editable, with the test extra) in a copy of the checkout."""
    checkout = copy_checkout(tmp_path_factory.mktemp("development"))
    (code,) = [line for line in readme.block_after("## Development").splitlines() if "pip install" in line]
    home = checkout.parent / "home"
    home.mkdir()
    ran = subprocess.run(["bash", "-e", "-c", code], cwd=str(checkout), env=newcomer_env(str(home)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
    assert ran.returncode == 0, (code, ran.stderr.decode()[-2000:])
    return checkout


def test_development_install_gives_the_venv_python_pytest(development):
    probe = subprocess.run([str(development / ".venv" / "bin" / "python"), "-c", "import pytest"],
                           env=outside_env(), cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert probe.returncode == 0, probe.stderr


def test_development_install_sees_an_adapter_added_to_the_checkout(development):
    shutil.copytree(os.path.join(ROOT, "tests", "support", "tiny_adapter"), str(development / "adapters" / "tiny"))
    try:
        helped = subprocess.run([str(development / ".venv" / "bin" / "harnessctl"), "send", "--help"],
                                env=outside_env(), cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        shutil.rmtree(str(development / "adapters" / "tiny"))
    assert helped.returncode == 0 and b"tiny" in helped.stdout, helped.stderr


def test_development_install_runs_the_hook_tests(development):
    """The README's test command on the hook tests, from the venv it puts inside the checkout: they bind a
    scratch cwd, never the checkout, which holds the interpreter their hooks run (issue 47: before, 14 hooks
    refused as lying inside the bound cwd)."""
    env = newcomer_env(str(development.parent / "home"))
    env["PATH"] = str(development / ".venv" / "bin") + os.pathsep + env["PATH"]  # as `. .venv/bin/activate`
    ran = subprocess.run(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/commands/test_hooks.py",
                          "--basetemp", str(development.parent / "hooks-tmp")], cwd=str(development), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    assert ran.returncode == 0, ran.stdout.decode()[-3000:]


def test_development_install_forks_a_session(development, workdir):
    """`fork` imports the bound adapter's backend in the command itself, which the editable install runs
    without the checkout on sys.path (issue 47: before, `No module named 'adapters'`)."""
    harnessctl = str(development / ".venv" / "bin" / "harnessctl")
    for args in (("send", "a.jsonl", "hi", "--adapter", "mock", "--wait"), ("fork", "a.jsonl", "b.jsonl"),
                 ("send", "b.jsonl", "again", "--wait")):
        proc = subprocess.run([harnessctl, *args], env=outside_env(), cwd=str(workdir), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=120)
        assert proc.returncode == 0, (args, proc.stderr.decode())
    assert json.loads(proc.stdout)["status"] == "completed"


def test_module_outside_the_repository_needs_the_install(workdir):
    """Without the install (or PYTHONPATH), `python3 -m harnessctl` works only from the repository root."""
    proc = run("--version", env=outside_env(), cwd=str(workdir), timeout=None)
    if proc.returncode == 0:
        pytest.skip("harnessctl is installed for %s itself" % sys.executable)
    assert proc.returncode == 1 and b"No module named harnessctl" in proc.stderr


def pip_install(python, *args, env=None):
    """`python -m pip install --no-deps ARGS` (harnessctl has none; setuptools comes from the index)."""
    return subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                           *args], env=env or outside_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=600)


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


def pipx_command():
    """pipx as a newcomer runs it (on PATH), else the one installed into the Python running the tests (a
    pyenv shim may not list it yet).  Missing, the test skips, or fails under HARNESSCTL_REQUIRE_REAL=1:
    .ci/run installs pipx, so a clean run tests this route."""
    found = shutil.which("pipx")
    if found:
        return [found]
    if importlib.util.find_spec("pipx") is not None:
        return [sys.executable, "-m", "pipx"]
    if os.environ.get("HARNESSCTL_REQUIRE_REAL") == "1":
        pytest.fail("pipx is not installed (.ci/run installs it)")
    pytest.skip("pipx is not installed")


@pytest.fixture(scope="module")
def pipx_bin(tmp_path_factory):
    """`pipx install .` in a copy of the checkout; the folder pipx put the command in.  Every folder pipx
    writes to is under the fixture's own, never the user's."""
    pipx = pipx_command()
    top = tmp_path_factory.mktemp("pipx")
    env = dict(outside_env(), PIPX_HOME=str(top / "pipx"), PIPX_BIN_DIR=str(top / "bin"),
               PIPX_MAN_DIR=str(top / "man"), PIPX_COMPLETION_DIR=str(top / "completion"))
    installed = subprocess.run([*pipx, "install", "."], cwd=str(copy_checkout(top)), env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    assert installed.returncode == 0, installed.stderr.decode()[-2000:]
    yield top / "bin"
    kill_all_under(str(top))


def test_pipx_install_command_runs(pipx_bin):
    """pipx exposes the launcher (a script of the distribution, as an entry point's would be) on its PATH."""
    version = subprocess.run([str(pipx_bin / "harnessctl"), "--version"], env=outside_env(), cwd="/",
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert version.returncode == 0 and version.stdout.startswith(b"harnessctl "), version.stderr


def test_pipx_route_runs_the_demo_and_forks(pipx_bin, workdir):
    (workdir / "home").mkdir()
    assert_demo_runs_and_forks(str(pipx_bin), str(workdir / "home"))


def test_per_adapter_package_route_runs_the_demo_and_forks(workdir):
    """docs/PROTOCOL.md section 13's archive, extracted: its entry point fixes the adapter to mock, which
    Try-it's HARNESSCTL_ADAPTER=mock names too."""
    built = subprocess.run([sys.executable, os.path.join(ROOT, "package.py"), "--adapter", "mock", "--output-dir",
                            str(workdir / "dist")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert built.returncode == 0, built.stderr
    home = workdir / "home"
    extract_archive(built.stdout.decode().strip(), str(home / ".harness"))
    assert_demo_runs_and_forks(str(home / ".harness" / "mock"), str(home))


def test_pyproject_lists_every_subpackage_of_harnessctl_for_pip():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        listed = re.search(r"^packages = \[(.*?)\]", f.read(), re.S | re.M).group(1)
    packages = {"harnessctl.adapters"}
    for directory, dirs, files in os.walk(os.path.join(ROOT, "harnessctl")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        if "__init__.py" in files:
            packages.add(os.path.relpath(directory, ROOT).replace(os.sep, "."))
    assert set(re.findall(r'"([\w.]+)"', listed)) == packages
