"""pi (pi-acp 0.0.34 over @earendil-works/pi-coding-agent 1.6.0): how it runs offline against the project's
mock (the lab's recipe).

pi-acp starts `pi --mode rpc`; pi reads its providers from ~/.pi/agent/models.json, where a provider of api
`openai-completions` points at the Chat Completions mock.  pi 1.6.0 needs Node >= 22.19 (older pi versions
hang pi-acp's session/new).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict

PREFIX = "pi"
BIN = "pi-acp"
NODE = "node22"
MOCK = "chat"
TRAITS: Dict[str, Any] = {
    "asks": False,  # pi has no permission prompts: every tool runs unasked (its ACP modes are thinking levels)
    # a 401 (any model error) ends pi's turn, but pi-acp answers the prompt end_turn with no text and no error
    "error_401": None,
}


def env(root: str, base_url: str) -> Dict[str, str]:
    """models.json (the mock as provider `mock`) and settings.json (it is the default) in ~/.pi/agent."""
    agent = os.path.join(root, "home", ".pi", "agent")
    os.makedirs(agent, exist_ok=True)
    models = {"providers": {"mock": {
        "baseUrl": base_url + "/v1", "api": "openai-completions", "apiKey": "mock-key",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": "mock-model", "name": "Mock Model", "reasoning": False,
                    "contextWindow": 128000, "maxTokens": 4096}]}}}
    settings = {"defaultProvider": "mock", "defaultModel": "mock-model", "quietStartup": True}
    for name, value in (("models.json", models), ("settings.json", settings)):
        with open(os.path.join(agent, name), "w", encoding="utf-8") as f:
            json.dump(value, f)
    return {"PI_OFFLINE": "1", "PI_CODING_AGENT_DIR": agent}
