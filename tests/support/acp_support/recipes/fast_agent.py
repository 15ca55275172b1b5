"""fast-agent (fast-agent-mcp 0.10.48 from PyPI, its `fast-agent-acp`): how it runs offline against the project's
mock.

The model `generic.mock-model` (FAST_AGENT_MODEL) is fast-agent's OpenAI-compatible provider `generic`, whose
endpoint and key are GENERIC_BASE_URL and GENERIC_API_KEY; LLM_RETRIES=0 (its setting llm_retries, read from the
environment) turns off its two retries of a failed model call, 30 s for a 401 otherwise (FAST_AGENT_RETRIES, the
variable it documents, loses to that setting's default).  No config file: FAST_AGENT_HOME would also move the
shell's working folder there.  The preset's `--shell` gives it a shell tool.
"""

from __future__ import annotations

from typing import Any, Dict

PREFIX = None
VENV = "fast-agent-mcp"
BIN = "fast-agent-acp"
NODE = None
MOCK = "chat"
TRAITS: Dict[str, Any] = {
    # fast-agent asks the client only before a command it runs through the client's terminal (ACP
    # terminal/*), which harnessctl does not offer: its own shell runs every command unasked
    "asks": False,
    # a model error is the agent's text ("... (status=401): Error code: 401 ...") and the turn's stopReason
    # `refusal`: the run fails with that stop reason as its error, the agent's words in its output
    "error_401": "refusal",
}


def env(root: str, base_url: str) -> Dict[str, str]:
    return {"FAST_AGENT_MODEL": "generic.mock-model", "GENERIC_BASE_URL": base_url + "/v1",
            "GENERIC_API_KEY": "mock-key", "LLM_RETRIES": "0"}
