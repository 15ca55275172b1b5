"""hermes (hermes-agent 0.19.0 from PyPI with its `acp` extra, its `hermes-acp`): how it runs offline against the
project's mock.

~/.hermes/config.yaml sets the model's provider `custom`: an OpenAI-compatible base_url, key and model.  Its
background reviews (every 10 turns it asks the model, with tools, what to keep in its memory and skill library) are
turned off: they are model calls the scenario did not script.  Without the `acp` extra `hermes-acp` cannot import
the ACP SDK.  It looks the model's context length up at openrouter.ai unless the config gives it (context_length).
"""

from __future__ import annotations

import os
from typing import Any, Dict

PREFIX = None
VENV = "hermes-agent"
BIN = "hermes-acp"
NODE = None
MOCK = "chat"
TRAITS: Dict[str, Any] = {
    # hermes asks the client only before a command its own rules find dangerous (rm -r, chmod 777, ...) and,
    # in its default mode, before a file edit: `touch` runs unasked
    "asks": False,
    # a model error ends the turn end_turn with "HTTP 401: mock says 401" as the agent's text
    "error_as_text": True,
    "forks": True,
}
CONFIG = """\
model:
  provider: custom
  base_url: {base_url}/v1
  default: mock-model
  api_key: mock-key
  context_length: 128000
memory:
  nudge_interval: 0
skills:
  creation_nudge_interval: 0
"""


def env(root: str, base_url: str) -> Dict[str, str]:
    """The config file in the scratch HOME's ~/.hermes."""
    home = os.path.join(root, "home", ".hermes")
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "config.yaml"), "w", encoding="utf-8") as f:
        f.write(CONFIG.format(base_url=base_url))
    return {}
