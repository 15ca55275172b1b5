"""copilot (@github/copilot@1.0.102): how it runs offline against the project's mock (the lab's recipe).

Bring-your-own-key through the environment only: COPILOT_OFFLINE=true and the
COPILOT_PROVIDER_* variables name the mock as an OpenAI provider (Chat
Completions wire); no GitHub login.  Its mode ids are URLs.
"""

from __future__ import annotations

import os
from typing import Dict

PREFIX = "copilot"
BIN = "copilot"
NODE = None
MOCK = "chat"
MODE = "https://agentclientprotocol.com/protocol/session-modes#"
TRAITS: Dict[str, object] = {
    "deny_ends_turn": True,  # a denied tool ends the turn, with "Info: Operation cancelled by user" as its text
    "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 5, "total_tokens": 15},
    "error_as_text": True,  # a model error: retried twice, then end_turn with "Error: ... (HTTP 401)" as text
    "error_401": "Authentication failed with provider",
    # #agent asks before commands and file edits.  #plan blocks both without asking (the model is told
    # "Plan mode does not permit changes", to call exit_plan_mode first).  #autopilot turns allow-all on
    # (nothing asks) and persists: until the model calls task_complete, copilot sends it "You have not
    # yet marked the task as complete" turns (5 more here).  No mode lets edits alone through, so no "edit".
    # (The config option allow_all, category permissions, on/off, is the same switch without the
    # persistence, but HARNESSCTL_ACP_MODE sets only the mode.)
    "modes": {"ask": MODE + "agent", "full": MODE + "autopilot"},
}


def env(root: str, base_url: str) -> Dict[str, str]:
    home = os.path.join(root, "home")
    return {
        "COPILOT_HOME": os.path.join(home, ".copilot"),
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PROVIDER_BASE_URL": base_url + "/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "mock-key",
        "COPILOT_MODEL": "mock-model",
        "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": "100000",
        "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS": "4096",
    }
