"""droid (@factory/cli 0.225.1 + @factory/cli-linux-x64@0.225.2): how it runs offline against the project's mock
(the lab's recipe).

FACTORY_AIRGAP_ENABLED=1 keeps droid off Factory's servers (no login), and a `customModels` entry in
~/.factory/settings.json (provider `generic-chat-completion-api`) points it at the Chat Completions mock.
`droid exec --output-format acp` is its ACP mode.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict

PREFIX = "droid"
BIN = "droid"
NODE = None  # a native binary behind a node shim: the system node does
MOCK = "chat"
TRAITS: Dict[str, Any] = {
    "streams": False,  # a reply's text comes in one agent_message_chunk once the model's answer is complete
    "deny_ends_turn": True,  # "No, cancel" ends the turn: `completed`, the model is not asked again
    # a model error ends the prompt in a JSON-RPC error "Agent error"; the endpoint's own text ("Error: 401 mock
    # says 401") comes before it as the run's output
    "error_401": "Agent error",
    # normal asks for every change and command; auto-low auto-approves file edits (and commands the model
    # rates low-risk); auto-high auto-approves everything
    "modes": {"ask": "normal", "edit": "auto-low", "full": "auto-high"},
}


def env(root: str, base_url: str) -> Dict[str, str]:
    """~/.factory/settings.json with the mock as the default model (custom:Mock-0)."""
    factory = os.path.join(root, "home", ".factory")
    os.makedirs(factory, exist_ok=True)
    settings = {
        "customModels": [{"model": "mock-model", "displayName": "Mock", "baseUrl": base_url + "/v1",
                          "apiKey": "mock-key", "provider": "generic-chat-completion-api", "maxOutputTokens": 4096}],
        "model": "custom:Mock-0",
        "sessionDefaultSettings": {"model": "custom:Mock-0"},
    }
    with open(os.path.join(factory, "settings.json"), "w", encoding="utf-8") as f:
        json.dump(settings, f)
    return {"FACTORY_AIRGAP_ENABLED": "1", "FACTORY_DISABLE_KEYRING": "1"}
