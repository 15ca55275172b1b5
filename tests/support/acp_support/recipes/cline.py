"""cline (cline 3.0.65): how it runs offline against the project's mock (the lab's recipe).

`cline auth -p openai -k KEY -m MODEL -b URL` stores an OpenAI-compatible provider under ~/.cline; in ACP mode
cline restores only its own sign-ins unless CLINE_API_KEY is set, and CLINE_PROVIDER/CLINE_MODEL pick the stored
provider.  `cline --acp` starts a `cline --cline-hub-daemon` that detaches (parent pid 1) and outlives the agent and
harnessctl's runtime: around() kills the ones started under this root's HOME.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from typing import Any, Dict, Iterator, List

PREFIX = "cline"
BIN = "cline"
NODE = None
MOCK = "chat"
TRAITS: Dict[str, Any] = {
    # act (its default) asks before every command and edit; plan refuses changes outright; no mode edits
    # unasked while commands ask, and "run everything" is the boolean config option auto_approve, not a mode
    "modes": {"ask": "act"},
}
REACH_ENV = "HARNESSCTL_TEST_ACP_REACH"
PROVIDERS = "providers.json"
_AUTHED: Dict[str, Any] = {}  # the providers.json the first `cline auth` of this process wrote


def env(root: str, base_url: str) -> Dict[str, str]:
    """The provider `cline auth` stores, in the scratch HOME.  `cline auth` itself takes ~4 s, so it runs once per
    test process; later roots get the file it wrote with their own mock's URL."""
    settings = os.path.join(root, "home", ".cline", "data", "settings")
    url = base_url + "/v1"
    if not _AUTHED:
        authenticate(os.path.join(root, "home"), url)
        with open(os.path.join(settings, PROVIDERS), encoding="utf-8") as f:
            _AUTHED.update(json.load(f))
    else:
        stored = json.loads(json.dumps(_AUTHED))
        stored["providers"]["openai-compatible"]["settings"]["baseUrl"] = url
        os.makedirs(settings, exist_ok=True)
        with open(os.path.join(settings, PROVIDERS), "w", encoding="utf-8") as f:
            json.dump(stored, f)
    return {"CLINE_API_KEY": "mock-key", "CLINE_PROVIDER": "openai-compatible", "CLINE_MODEL": "mock-model"}


def authenticate(home: str, url: str) -> None:
    """`cline auth -p openai ...` as a user runs it (it writes ~/.cline/data/settings/providers.json)."""
    binary = os.path.join(os.environ.get(REACH_ENV, ""), PREFIX, "node_modules", ".bin", BIN)
    auth_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "LANG": "C.UTF-8"}
    subprocess.run([binary, "auth", "-p", "openai", "-k", "mock-key", "-m", "mock-model", "-b", url],
                   env=auth_env, cwd=home, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=60, check=True)


@contextlib.contextmanager
def around(root: str, env: Dict[str, str]) -> Iterator[None]:
    """Reaps the hub daemons cline leaves (found by the HOME in their environment)."""
    try:
        yield
    finally:
        for pid in daemons(env.get("HOME") or os.path.join(root, "home")):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def daemons(home: str) -> List[int]:
    """The `cline --cline-hub-daemon` processes whose HOME is `home`."""
    found = []
    wanted = ("HOME=%s" % home).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
            if b"--cline-hub-daemon" not in argv:
                continue
            with open("/proc/%s/environ" % entry, "rb") as f:
                if wanted in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found
