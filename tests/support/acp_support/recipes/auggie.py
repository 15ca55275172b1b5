"""auggie (@augmentcode/auggie@0.36.0): how it runs offline against the project's mock (the lab's recipe).

auggie has no model API: every turn goes to Augment's backend, the `tenantURL`
of its session.  No login exists offline, so AUGMENT_SESSION_AUTH names a fake
session whose tenantURL is the project's mock of that backend
(mock_augment.MockAugment).  The preset command `auggie --acp --allow-indexing`
skips the "Workspace Indexing Permission" question auggie asks in every new
workspace, and indexes it at once, as `auggie --print` does: it sends the
files' blob names to /find-missing and uploads what the backend lacks (the
mock lacks nothing).

auggie runs its tools without asking by default, and its ACP modes (`default`,
`ask`) do not change that (`ask` only prefixes the prompt with "do not modify
files").  Only a `toolPermissions` rule of type `ask-user` in its settings
makes it send session/request_permission (options Allow / Deny), so the
recipe sets one for the shell and file tools.
"""

from __future__ import annotations

import json
import os
from typing import Dict

PREFIX = "auggie"
BIN = "auggie"
NODE = None  # engines: node >= 20 (the system node)
MOCK = "augment"
TRAITS: Dict[str, object] = {
    # everything else is the default: asks (the ask-user rules below), the model is told of a deny
    # ("Tool execution denied by user: launch-process") and answers, queued busy sends (no
    # _meta.steering), resumes by session/load, runs in the cwd, a 401's error names "401 Unauthorized"
    # (the status line: auggie drops the body), no usage (the backend's token_usage node is not
    # reported over ACP), and no --mode table: its modes (default, ask) do not change what asks.
}
ASK_TOOLS = ("launch-process", "save-file", "str-replace-editor", "remove-files", "apply_patch")


def env(root: str, base_url: str) -> Dict[str, str]:
    """~/.augment/settings.json with ask-user rules for the tools that change
    something, and the fake session pointing auggie at the mock."""
    settings = os.path.join(root, "home", ".augment")
    os.makedirs(settings, exist_ok=True)
    rules = [{"toolName": name, "permission": {"type": "ask-user"}} for name in ASK_TOOLS]
    with open(os.path.join(settings, "settings.json"), "w", encoding="utf-8") as f:
        json.dump({"toolPermissions": rules}, f)
    session = {"accessToken": "mock-token", "tenantURL": base_url + "/", "scopes": ["read", "write"]}
    return {"AUGMENT_SESSION_AUTH": json.dumps(session), "AUGMENT_DISABLE_AUTO_UPDATE": "1"}
