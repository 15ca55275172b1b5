"""kilocode (@kilocode/cli@7.7.7): how it runs offline against the project's mock (the lab's recipe).

Kilo is an opencode fork: the same config (opencode.config) in the file
KILO_CONFIG names, the same switches spelled KILO_, plus its own telemetry
(session ingest, presence, codebase indexing) off.  No login.  7.8.1, the
newest, lacks its platform binary on the registry; 7.7.7 installs.
"""

from __future__ import annotations

import json
import os
from typing import Dict

from . import opencode

PREFIX = "kilocode"
BIN = "kilo"
NODE = None
MOCK = "chat"
TRAITS = dict(opencode.TRAITS,  # kilo behaves as opencode does in every scenario but fork
              config_mode=("plan", "# Native Plan Mode"),  # with its own plan prompt
              forks=True)  # its fork runs in the fork's cwd (opencode's keeps the source session's)


def env(root: str, base_url: str) -> Dict[str, str]:
    path = os.path.join(root, "home", "kilo.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dict(opencode.config(base_url), **{"$schema": "https://app.kilo.ai/config.json"}), f)
    out = opencode.xdg(root)
    out["KILO_CONFIG"] = path
    for switch in ("MODELS_FETCH", "AUTOUPDATE", "SHARE", "LSP_DOWNLOAD", "DEFAULT_PLUGINS", "SESSION_INGEST",
                   "PRESENCE", "CODEBASE_INDEXING"):
        out["KILO_DISABLE_" + switch] = "1"
    return out
