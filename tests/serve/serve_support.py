"""What the tests of `harnessctl serve` share: a mock environment with a scratch HOME, serve started as a user
starts it (its one URL line read from its stdout) and stopped as a user stops it (SIGTERM, exit 0), and mock
sessions made with the real CLI."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from typing import Dict, List, Optional, Tuple

import cliutil

START_SECONDS = 30.0  # a loaded machine's first import of harnessctl takes a while


def mock_env(home: str, **overrides: str) -> Dict[str, str]:
    """The CLI's test environment with the mock adapter and `home` as HOME (made when missing): nothing read
    from or written to the user's own."""
    os.makedirs(home, exist_ok=True)
    return cliutil.cli_env(HARNESSCTL_ADAPTER="mock", HOME=home, **overrides)


def send(env: Dict[str, str], file: str, text: str, cwd: str, *extra: str) -> Dict[str, str]:
    """`harnessctl send FILE TEXT --cwd CWD EXTRA...`, which must succeed; its JSON answer (--wait's result)
    or {} when it printed nothing.  Run from `cwd`'s parent, so nothing lands in the repository."""
    proc = cliutil.run("send", file, text, "--cwd", cwd, *extra, env=env, cwd=os.path.dirname(cwd))
    assert proc.returncode == 0, (text, proc.returncode, proc.stderr.decode())
    out = proc.stdout.decode().strip()
    return json.loads(out.splitlines()[-1]) if out else {}


def start_serve(args: List[str], env: Dict[str, str], cwd: Optional[str] = None) -> Tuple[subprocess.Popen, str]:
    """`harnessctl serve ARGS...` in the background, and the URL it printed (token included)."""
    proc = cliutil.start("serve", *args, env=env, cwd=cwd, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    deadline = time.monotonic() + START_SECONDS
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            stop_serve(proc, check=False)
            raise AssertionError("serve printed no URL within %s s" % START_SECONDS)
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            proc.wait()
            raise AssertionError("serve exited %s: %s" % (proc.returncode, proc.stderr.read().decode()))
        line += chunk
    url = line.decode().strip()
    assert url.startswith("http://") and "?token=" in url, url
    return proc, url


def stop_serve(proc: subprocess.Popen, check: bool = True) -> None:
    """SIGTERM, as a service manager stops it; it must exit 0 (unless `check` is false)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("serve did not exit within 30 s of SIGTERM") from None
    finally:
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    if check:
        assert proc.returncode == 0, "serve exited %s after SIGTERM" % proc.returncode
