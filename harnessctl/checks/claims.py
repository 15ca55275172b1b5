"""What a bound harness claims it can do: the capabilities of its adapter's
manifest (store/registry.py reads it), or of the bound agent's preset.  A
check that needs a capability (a cost for --max-cost-usd, structured output
for --schema, fork) asks here, and names who lacks it."""

from __future__ import annotations

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple


def claims(manifest: Dict[str, Any], agent: Optional[str]) -> Tuple[str, List[str]]:
    """(who, the capabilities claimed): an adapter's own, or with `agents` the
    bound preset's (a command line that is no preset claims nothing)."""
    agents = manifest.get("agents")
    if agents is None:
        return "the %s adapter" % manifest.get("name"), list(manifest.get("capabilities") or [])
    preset = agents.get(agent) if isinstance(agents, dict) else None
    words = preset.get("capabilities") if isinstance(preset, dict) else None
    return "the %s agent %s" % (manifest.get("name"), agent), list(words or [])
