"""The adapter kit: everything an adapter may use of harnessctl, and nothing else.

An adapter (adapters/<name>/) imports from this module only, so what the
core promises adapters is this one list, documented in docs/ADAPTERS.md:

- the contract (backend.py): `Backend` to subclass, the `Host` it reports
  to, the `Config` it is created with (which also offers the session's own
  files, the `edit` mode's judgement and the agent's file channel), the
  `Input` it is sent, the `Child` a spawn gives, and the values a report may
  carry;
- the activity vocabulary (activity.py): `Activity` (a backend's
  `self.activity`), the tool kinds, and the helpers that build its fields;
- the shared plumbing: `ChildBackend` (childbackend.py) for a harness that is
  one child speaking JSON lines, `HeldInputs` (holding.py) for one that
  cannot steer, `Calls` (jsonrpc.py) for one that speaks JSON-RPC, and an
  MCP elicitation form's fields as questions and answers (elicitation.py);
- the errors a backend's start may raise (errors.py): a HarnessctlError
  fails the waiting sends with its own exit code, anything else with 5.

Everything else of the package may change without notice to adapters.
"""

from __future__ import annotations

from ..errors import HarnessctlError, UnavailableError, UsageError
from ..vocabulary import TOOL_KINDS
from .activity import Activity, amount, argv_line, permission_subject, unified_diff
from .backend import DELIVERIES, REQUEST_KINDS, RESULT_STATUSES, Backend, Child, Config, Host, Input
from .childbackend import ChildBackend, on_handlers
from .elicitation import field_questions, field_values, form_fields
from .holding import HeldInputs
from .jsonrpc import Calls

__all__ = [
    # the contract
    "Backend", "Host", "Config", "Input", "Child", "DELIVERIES", "RESULT_STATUSES", "REQUEST_KINDS",
    # the activity vocabulary
    "Activity", "TOOL_KINDS", "amount", "argv_line", "permission_subject", "unified_diff",
    # the shared plumbing
    "ChildBackend", "on_handlers", "HeldInputs", "Calls",
    # MCP elicitation forms
    "form_fields", "field_questions", "field_values",
    # errors
    "HarnessctlError", "UsageError", "UnavailableError",
]
