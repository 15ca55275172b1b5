"""The ACP adapter end to end through the CLI against the reach agents (issue
21): opencode, copilot, qwen, pi, cline, kilocode, droid, auggie, openclaw, each
started by its PRESET command from its pinned npm prefix
(HARNESSCTL_TEST_ACP_REACH), offline against the project's mock model on
127.0.0.1 as its recipe says (tests/acp_support/recipes/).

Each scenario runs for the agents whose recipe's TRAITS allow it; where the
agents differ, the test says what each does.  Skipped when an agent's prefix
is missing, failed instead under HARNESSCTL_REQUIRE_REAL=1 (as .ci/run sets).
No test sleeps: a turn is held open at a gate of the mock until the test has
done what it must do mid-turn.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Dict, List

import pytest


from acp_support.agents import real_agent
from acp_support.recipes import trait, written

pytestmark = pytest.mark.real

LONG = "PART1 This is the first part of a deliberately slow answer that streams in many small pieces. " * 3


def agents(**want: Any) -> List[str]:
    """The reach agents with a recipe whose TRAITS have these values."""
    return [name for name in written() if all(trait(name, key) == value for key, value in want.items())]


def agents_with(key: str) -> List[str]:
    """The reach agents whose trait `key` is set (truthy)."""
    return [name for name in written() if trait(name, key)]


@pytest.fixture
def start(workdir):
    """start(agent, **env) -> a Session over that real agent (several per test allowed)."""
    with contextlib.ExitStack() as stack:
        yield lambda agent, **env: stack.enter_context(real_agent(workdir / agent, agent, **env))


def only(items):
    assert len(items) == 1, items
    return items[0]


def last_json(proc) -> Dict[str, Any]:
    return json.loads(proc.stdout.decode().splitlines()[-1])


@pytest.mark.parametrize("agent", agents())
def test_plain_run_completes_with_the_agents_answer(start, agent):
    s = start(agent)
    s.model.answer("Hello from the mock.")
    s.send("Say hello.")
    result = only(s.wait("result"))
    accepted = only(s.events("accepted"))
    assert accepted["delivery"] == "start" and accepted["run_id"] == result["run_id"]
    assert (result["status"], result["error"], result["output"]) == ("completed", None, "Hello from the mock.")
    assert result["input_ids"] == [accepted["input_id"]]
    assert s.events("message")[-1]["text"] == "Hello from the mock."
    body = s.model.wait_requests(1)[-1]
    assert "Say hello." in s.model.user_texts(body)[-1]  # copilot and kilo decorate the prompt
