"""Helpers for black-box tests: run the real CLI in a subprocess, read the
event file back, wait for conditions (never a bare sleep), find and reap the
runtimes a test started."""

from __future__ import annotations

import json
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Union

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli_env(**overrides: str) -> Dict[str, str]:
    env = dict(os.environ)
    for name in list(env):
        if name.startswith("HARNESSCTL_") and not name.startswith(("HARNESSCTL_TEST", "HARNESSCTL_REQUIRE")):
            del env[name]
    env["PYTHONPATH"] = ROOT
    env.update(session_dirs())
    # Long enough that no runtime idles out in the middle of a test that checks
    # it is alive, however loaded the machine; a test about the idle exit sets
    # its own value, and conftest.py kills what a test leaves running.
    env["HARNESSCTL_IDLE_TIMEOUT"] = "600"
    env["HARNESSCTL_TIMEOUT"] = "30"
    env.update(overrides)
    return env


def session_dirs() -> Dict[str, str]:
    """This test session's own state and socket folders (conftest.py), for every environment a test builds:
    test runs side by side never meet in the user's."""
    return {name: os.environ[name] for name in ("HARNESSCTL_STATE_DIR", "HARNESSCTL_SOCKET_DIR") if name in os.environ}


def command(*args: Union[str, bytes]) -> List[Union[str, bytes]]:
    """The command line of `python3 -m harnessctl ARGS` with the interpreter running
    the tests: the one spelling of the CLI every test and bench uses (an argument
    may be bytes: a name that is not UTF-8)."""
    return [sys.executable, "-m", "harnessctl", *args]


def _popen_args(env: Optional[Dict[str, str]], cwd: Optional[str], popen: Dict[str, Any]) -> Dict[str, Any]:
    """subprocess's arguments for a command: stdout and stderr piped unless the caller
    says otherwise, the test environment, the repository as working directory."""
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    popen["env"] = env if env is not None else cli_env()
    popen["cwd"] = cwd or ROOT
    return popen


def run(*args: Union[str, bytes], input: Optional[bytes] = None, env: Optional[Dict[str, str]] = None,
        cwd: Optional[str] = None, timeout: Optional[float] = 60, **popen: Any) -> subprocess.CompletedProcess:
    """`python3 -m harnessctl ARGS` exactly as a user would run it, to its end.  Its
    stdin is empty unless `input` or a `stdin=` says otherwise; `popen` takes
    subprocess's other arguments (stdout, preexec_fn, pass_fds, ...)."""
    if "stdin" not in popen:
        popen["input"] = input if input is not None else b""
    return subprocess.run(command(*args), timeout=timeout, **_popen_args(env, cwd, popen))


def start(*args: Union[str, bytes], env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
          **popen: Any) -> subprocess.Popen:
    """`python3 -m harnessctl ARGS` started in the background (a `wait`, a `log
    --follow`, sends racing each other); as `run`, but stdin is the test's own
    unless `popen` gives one."""
    return subprocess.Popen(command(*args), **_popen_args(env, cwd, popen))


def launcher(bin_dir: pathlib.Path) -> None:
    """bin_dir/harnessctl, a launcher of `command()`: a shell block spells
    `harnessctl`, and finds this checkout's with bin_dir on its PATH."""
    path = bin_dir / "harnessctl"
    path.write_text('#!/bin/sh\nexec %s "$@"\n' % " ".join(map(shlex.quote, command())))
    path.chmod(0o755)


def copy_checkout(parent: pathlib.Path) -> pathlib.Path:
    """A copy of the repository as parent/harnessctl, without git's folder or what
    a build or a venv left in it: pip builds in the source tree, and a doc's
    block may write into its working directory (package.py's dist/)."""
    checkout = parent / "harnessctl"
    shutil.copytree(ROOT, str(checkout), ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "build",
                                                                          "dist", "*.egg-info"))
    return checkout


def interruptible() -> None:
    """preexec_fn of a command a test interrupts with SIGINT as Ctrl-C would:
    SIGINT as a terminal gives it, whatever the test runner inherited (a
    runner started in the background of a script has SIGINT ignored, and
    that disposition passes on to every child)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ok(*args: str, **kwargs: Any) -> subprocess.CompletedProcess:
    proc = run(*args, **kwargs)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr.decode())
    return proc


def events(path: str) -> List[Dict[str, Any]]:
    """Every complete, valid line of an event file."""
    out = []
    try:
        with open(path, "rb") as f:
            for line in f:
                if line.endswith(b"\n"):
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    except FileNotFoundError:
        pass
    return out


def critical(path: str) -> List[Dict[str, Any]]:
    return [e for e in events(path) if e["type"] != "log"]


def of_type(path: str, kind: str) -> List[Dict[str, Any]]:
    return [e for e in events(path) if e["type"] == kind]


def matching(path: str, type_: Optional[str] = None, kind: Optional[str] = None,
             **fields: Any) -> List[Dict[str, Any]]:
    """The file's events of that type (and log kind), whose fields have these values."""
    return [e for e in events(path) if (type_ is None or e["type"] == type_)
            and (kind is None or e.get("kind") == kind) and all(e.get(k) == v for k, v in fields.items())]


def wait_matching(path: str, type_: str, count: int = 1, timeout: float = 60, **fields: Any) -> List[Dict[str, Any]]:
    """Wait until the file holds `count` such events; they, in order."""
    def found() -> Optional[List[Dict[str, Any]]]:
        hits = matching(path, type_, **fields)
        return hits if len(hits) >= count else None
    return wait_for(found, timeout, "%d %s events matching %s" % (count, type_, fields))


def real_binary(variable: str, name: str) -> str:
    """Path of a real harness binary ($variable, else `name` on PATH), or skip
    the test with the reason; under HARNESSCTL_REQUIRE_REAL=1 (CI) fail instead."""
    import shutil


    path = os.environ.get(variable) or shutil.which(name)
    if path and os.access(path, os.X_OK):
        return path
    missing_part("real %s binary not found (set %s or put %s on PATH)" % (name, variable, name))
    raise AssertionError  # unreachable


def missing_part(reason: Optional[str]) -> None:
    """A real part the test needs is missing (`reason`; None: it is there):
    skip with the reason, or under HARNESSCTL_REQUIRE_REAL=1 (CI) fail."""
    import pytest

    if reason is None:
        return
    if os.environ.get("HARNESSCTL_REQUIRE_REAL") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def wait_for(predicate: Callable[[], Any], timeout: float = 20, what: str = "condition",
             interval: float = 0.02) -> Any:
    """Poll `predicate` until it returns something truthy; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %gs waiting for %s" % (timeout, what))
        time.sleep(interval)


def timed(argv: List[str], env: Dict[str, str], stdin: bytes = b"") -> float:
    """Wall seconds of one command that must succeed (for the benchmarks)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (argv, proc.returncode, proc.stderr.decode()))
    return time.perf_counter() - start


def results(path: str) -> List[Dict[str, Any]]:
    return of_type(path, "result")


def wait_results(path: str, count: int, timeout: float = 20) -> List[Dict[str, Any]]:
    return wait_for(lambda: len(results(path)) >= count and results(path), timeout, "%d results" % count)


def status(path: str, env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    proc = ok("status", path, env=env)
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def only(items: List[Any]) -> Any:
    """The one item of a list a test expects exactly one of."""
    assert len(items) == 1, items
    return items[0]


def runtime_pids(path: str) -> List[int]:
    """Runtimes serving `path` (their command line carries the event path)."""
    real = os.path.realpath(path)
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"harnessctl.runtime" in b" ".join(argv) and os.fsencode(real) in argv:
            pids.append(int(entry))
    return pids


def processes_under(directory: str) -> List[int]:
    """Every process whose command line mentions `directory` (runtimes, stand-ins)."""
    needle = os.fsencode(os.path.realpath(directory))
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                if needle in f.read():
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def kill_all_under(directory: str) -> None:
    for pid in processes_under(directory):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def alive(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def rebind(path: str, env: Optional[Dict[str, str]] = None) -> None:
    """`harnessctl rebind` as a person uses it: run it, and when it shows a
    binding to check instead of restoring one, accept what it showed."""
    shown = ok("rebind", path, env=env)
    said = shown.stderr.decode()
    if "--accept " in said:
        ok("rebind", path, "--accept", said.rsplit("--accept ", 1)[1].split()[0], env=env)


def bind(path: str, binding: Dict[str, Any]) -> None:
    """Give an event file written by a test (a made-up history) the binding a
    first send would have given it, recorded as this file's: a file with
    events is never bound anew by a send."""
    from harnessctl.store import trusted

    os.mkdir(path + ".d", 0o700)
    fd = os.open(os.path.join(path + ".d", "binding.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(binding, f)
    trusted.record(os.path.realpath(path), binding)


def extract_archive(archive: str, target: str) -> None:
    """Unpack a package archive into target, with tarfile's "data" filter where
    it has one (3.12, and 3.9's later security releases): from 3.12 on,
    extracting without a filter warns."""
    import tarfile

    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(target, filter="data")
        else:
            tar.extractall(target)
