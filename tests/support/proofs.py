"""Named tests as proofs: a manifest's claim is backed by tests named
"FILE::TEST" (FILE from the checkout's root), found by reading FILE, so that
no test module imports another to name its tests."""

from __future__ import annotations

import ast
import os
from typing import Dict, Iterable, List

from cliutil import ROOT


def defined(path: str) -> Dict[str, ast.FunctionDef]:
    """The test functions FILE defines at its top, by name."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def missing(proofs: Iterable[str]) -> List[str]:
    """The proofs ("FILE::TEST") whose test FILE does not define."""
    return [proof for proof in proofs if proof.partition("::")[2] not in defined(proof.partition("::")[0])]
