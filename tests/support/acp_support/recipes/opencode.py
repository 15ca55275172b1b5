"""opencode (opencode-ai@1.18.33): how it runs offline against the project's mock (the lab's recipe).

A custom provider `mock` (@ai-sdk/openai-compatible, bundled) in the file
OPENCODE_CONFIG names; no login.  bash and edit are set to "ask": opencode's
default lets both run unasked.  Its modes (build/plan) are agents, not
permission levels, and come only as a config option of category mode.
"""

from __future__ import annotations

import json
import os
from typing import Dict

PREFIX = "opencode"
BIN = "opencode"
NODE = None
MOCK = "chat"
TRAITS = {
    "deny_ends_turn": True,  # a declined tool ends the turn: `completed`, no further model request
    "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 5, "total_tokens": 15},
    "cost": 0.0,  # priced from the config's model entry, which names no price
    # build/plan are agents (prompt and tool rules), not permission levels: no --mode table.  plan tells the
    # model it must not change anything (a system reminder appended to the prompt)
    "config_mode": ("plan", "you MUST NOT make any edits"),
}


def config(base_url: str) -> Dict[str, object]:
    """The opencode.json (kilo.json) of the recipe: one mock provider and model, commands and edits ask."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"bash": "ask", "edit": "ask"},
        "model": "mock/mock-model",
        "small_model": "mock/mock-model",
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Mock",
            "options": {"baseURL": base_url + "/v1", "apiKey": "mock-key"},
            "models": {"mock-model": {"name": "Mock Model", "tool_call": True,
                                      "limit": {"context": 128000, "output": 4096}}},
        }},
    }


def xdg(root: str) -> Dict[str, str]:
    """The XDG folders inside the scratch HOME (opencode keeps its sessions in XDG_DATA_HOME)."""
    home = os.path.join(root, "home")
    return {"XDG_CONFIG_HOME": os.path.join(home, ".config"), "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
            "XDG_CACHE_HOME": os.path.join(home, ".cache"), "XDG_STATE_HOME": os.path.join(home, ".local", "state")}


def env(root: str, base_url: str) -> Dict[str, str]:
    path = os.path.join(root, "home", "opencode.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config(base_url), f)
    out = xdg(root)
    out.update({
        "OPENCODE_CONFIG": path,
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    })
    return out
