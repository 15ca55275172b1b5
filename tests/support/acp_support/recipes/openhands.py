"""openhands (openhands 1.16.0 from PyPI, its `openhands acp`): how it runs offline against the project's mock.

`openhands acp` opens no session (session/new: "Authentication required") until an agent spec is stored in
~/.openhands/agent_settings.json, as its setup screen or `openhands login` would write it: an LLM of LiteLLM's
`openai/` provider at the mock's base_url with its key, and the CLI's tools.  Its LLM_* variables count only under
`--override-with-envs`, which `openhands acp` ignores for that check.  Two things it would fetch are kept on the
machine: LiteLLM's model cost map (LITELLM_LOCAL_MODEL_COST_MAP), and the public skills repository every session
clones from GitHub (a git `insteadOf` sends that clone to a folder that does not exist: it fails at once, as it
does offline).  num_retries 0: LiteLLM retries a failed model call 5 times, 8 s apart, by default.  Where tmux
is installed its terminal runs the commands in a tmux server (`tmux -L openhands`) that outlives the agent:
TMUX_TMPDIR gives each test its own, and around() ends it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from typing import Any, Dict, Iterator

PREFIX = None
VENV = "openhands"
BIN = "openhands"
NODE = None
MOCK = "chat"
TRAITS: Dict[str, Any] = {
    # always-ask (its default) asks before every action; always-approve runs everything; llm-approve asks only
    # for what a model rates high risk, and no mode lets edits through while commands ask
    "modes": {"ask": "always-ask", "full": "always-approve"},
    "streams": False,
    "request_names_tool": False,
    "cancels": False,  # its LLM is called without streaming: a reply's text comes in one chunk, when complete
}


def env(root: str, base_url: str) -> Dict[str, str]:
    """The agent spec in the scratch HOME's ~/.openhands, and the fetches turned away."""
    home = os.path.join(root, "home", ".openhands")
    os.makedirs(home, exist_ok=True)
    spec = {"llm": {"model": "openai/mock-model", "base_url": base_url + "/v1", "api_key": "mock-key",
                    "usage_id": "agent", "num_retries": 0},
            "tools": [{"name": "terminal"}, {"name": "file_editor"}, {"name": "task_tracker"}]}
    with open(os.path.join(home, "agent_settings.json"), "w", encoding="utf-8") as f:
        json.dump(spec, f)
    return {
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENHANDS_SUPPRESS_BANNER": "1",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "url.file:///nonexistent/.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://github.com/",
        "TMUX_TMPDIR": os.path.join(root, "tmp"),
    }


@contextlib.contextmanager
def around(root: str, env: Dict[str, str]) -> Iterator[None]:
    """Ends the tmux server its terminal started under this root's TMUX_TMPDIR."""
    try:
        yield
    finally:
        tmux = shutil.which("tmux", path=env.get("PATH"))
        if tmux:
            subprocess.run([tmux, "-L", "openhands", "kill-server"], env={"TMUX_TMPDIR": env["TMUX_TMPDIR"]},
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
