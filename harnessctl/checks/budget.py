"""Budgets (`send --max-tokens N`, `--max-cost-usd X`): limits on what a
conversation may spend, bound to its event file, and the running totals they
are checked against.

A limit is bound like --model, but unlike --model a later send may change it:
that is how a user raises a spent budget and keeps the conversation (the new
value is recorded like any binding, trusted.py)."""

from __future__ import annotations

import math

from ..errors import UsageError

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional

CLASS = "budget"  # the error_class of a run the budget ended


MAX_TOKEN_DIGITS = 18  # a budget below 10^18 tokens fits any reader's 64-bit integer


def tokens(value: str) -> int:
    """--max-tokens: a whole number of tokens > 0 (ASCII digits, fewer than
    19 of them: Python refuses to read more than 4300)."""
    if not (value.isascii() and value.isdigit()) or len(value.lstrip("0")) > MAX_TOKEN_DIGITS or int(value) <= 0:
        shown = value if len(value) <= 40 else "%s... (%d characters)" % (value[:20], len(value))
        raise UsageError("--max-tokens must be a whole number of tokens, 1 to 10^18 - 1, got %r" % shown)
    return int(value)


def cost(value: str) -> float:
    """--max-cost-usd: a finite number of dollars > 0."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise UsageError("--max-cost-usd must be a number of US dollars > 0, got %r" % value)
    return number


def check_cost_reported(manifest: Dict[str, Any], agent: Optional[str]) -> None:
    """--max-cost-usd needs a harness that reports cost (the `cost` capability):
    a limit nothing can reach would never stop a run."""
    from .claims import claims

    who, words = claims(manifest, agent)
    if "cost" not in words:
        raise UsageError("--max-cost-usd: %s reports no cost, so a cost limit could never stop a run; "
                         "use --max-tokens" % who)


def is_valid(binding: Dict[str, Any]) -> bool:
    """The bound limits have their types (bindingfile.read_binding)."""
    tokens_ok = binding.get("max_tokens") is None or (type(binding["max_tokens"]) is int and binding["max_tokens"] > 0)
    limit = binding.get("max_cost_usd")
    return tokens_ok and (limit is None or (type(limit) in (int, float) and math.isfinite(limit) and limit > 0))


def exceeded(binding: Dict[str, Any], tokens: int, cost: Optional[float]) -> Optional[str]:
    """Why the bound limits are spent (reached or passed), or None."""
    limit = binding.get("max_tokens")
    if limit is not None and tokens >= limit:
        return "the conversation spent %d tokens of its --max-tokens %d" % (tokens, limit)
    limit = binding.get("max_cost_usd")
    if limit is not None and cost is not None and cost >= limit:
        return "the conversation spent $%.4f of its --max-cost-usd %g" % (cost, limit)
    return None
