"""Which adapters exist: data, not code.  Each `adapters/<name>/manifest.json`
names its backend class; the core imports nothing of an adapter until a
runtime needs that backend."""

from __future__ import annotations

import importlib
import json
import os

from .errors import UsageError

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from typing import Any, Dict, List

ADAPTERS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "adapters")


def names() -> List[str]:
    try:
        entries = sorted(os.listdir(ADAPTERS_DIR))
    except OSError:
        return []
    return [n for n in entries if os.path.isfile(os.path.join(ADAPTERS_DIR, n, "manifest.json"))]


def manifest(name: str) -> Dict[str, Any]:
    path = os.path.join(ADAPTERS_DIR, name, "manifest.json")
    if not name.isidentifier() or not os.path.isfile(path):
        known = ", ".join(names()) or "none installed"
        raise UsageError("unknown adapter %r (known: %s)" % (name, known))
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def backend_class(name: str) -> Any:
    module_name, _, class_name = manifest(name)["backend"].partition(":")
    return getattr(importlib.import_module(module_name), class_name)
