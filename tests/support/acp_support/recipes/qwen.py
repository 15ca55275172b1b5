"""qwen (@qwen-code/qwen-code@0.15.10): how it runs offline against the project's mock (the lab's recipe).

The OpenAI auth type chosen in ~/.qwen/settings.json, the endpoint and key in
OPENAI_*; no `authenticate` call needed.  Telemetry, usage statistics and
update checks off.
"""

from __future__ import annotations

import json
import os
from typing import Dict

PREFIX = "qwen"
BIN = "qwen"
NODE = None
MOCK = "chat"
TRAITS: Dict[str, object] = {
    # default asks before commands and edits; auto-edit lets edits through; yolo runs everything; plan plans
    "modes": {"ask": "default", "edit": "auto-edit", "full": "yolo"},
}


def env(root: str, base_url: str) -> Dict[str, str]:
    home = os.path.join(root, "home")
    os.makedirs(os.path.join(home, ".qwen"), exist_ok=True)
    with open(os.path.join(home, ".qwen", "settings.json"), "w", encoding="utf-8") as f:
        json.dump({"security": {"auth": {"selectedType": "openai"}},
                   "model": {"name": "mock-model"},
                   "privacy": {"usageStatisticsEnabled": False},
                   "telemetry": {"enabled": False},
                   "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}, f)
    return {
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "OPENAI_BASE_URL": base_url + "/v1",
        "OPENAI_API_KEY": "mock-key",
        "OPENAI_MODEL": "mock-model",
    }
