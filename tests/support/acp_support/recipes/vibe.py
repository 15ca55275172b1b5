"""vibe (mistral-vibe 3.0.3 from PyPI, its `vibe-acp`): how it runs offline against the project's mock.

~/.vibe/config.toml (VIBE_HOME) names a provider of api_style `openai` at the Chat Completions mock, its key's
variable, and a model on it made the active one; telemetry, update checks and auto-update off.  mistral-vibe pins
every dependency exactly, and its pin certifi==2026.10.19 is not on PyPI (only 2026.10.19.post1 is), so a plain
`pip install mistral-vibe==3.0.3` fails: .ci/run installs it with --no-deps and then its pins with that one
replaced.
"""

from __future__ import annotations

import os
from typing import Any, Dict

PREFIX = None
VENV = "mistral-vibe"
BIN = "vibe-acp"
NODE = None
MOCK = "chat"
TRAITS: Dict[str, Any] = {
    # ask asks before every tool; accept-edits (its default) lets file edits through and asks for commands;
    # auto-approve runs everything
    "modes": {"ask": "ask", "edit": "accept-edits", "full": "auto-approve"},
    "error_401": "Invalid API key",  # vibe's own words for a 401: "Invalid API key (from env var MOCK_API_KEY)..."
}
CONFIG = """\
active_model = "mock"
enable_telemetry = false
enable_update_checks = false
enable_auto_update = false

[[providers]]
name = "mock"
api_base = "{base_url}/v1"
api_key_env_var = "MOCK_API_KEY"
api_style = "openai"

[[models]]
name = "mock-model"
provider = "mock"
alias = "mock"
"""


def env(root: str, base_url: str) -> Dict[str, str]:
    """The config file in the scratch HOME's ~/.vibe, the key in its variable."""
    home = os.path.join(root, "home", ".vibe")
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as f:
        f.write(CONFIG.format(base_url=base_url))
    return {"MOCK_API_KEY": "mock-key"}
