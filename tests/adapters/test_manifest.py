"""Every adapter's manifest.json follows schema/manifest.schema.json (one
capability vocabulary, every key documented), and registry.problems(), what
package.py refuses to build on, agrees with that schema.  A new adapter folder
is picked up with no edit here."""

from __future__ import annotations

import ast
import copy
import json
import os

import pytest
import schemacheck
from cliutil import ROOT

from harnessctl.kit.backend import Backend
from harnessctl.store import registry

with open(os.path.join(ROOT, "schema", "manifest.schema.json"), encoding="utf-8") as _f:
    SCHEMA = json.load(_f)
HARNESS = SCHEMA["properties"]["harness"]


def schema_errors(manifest):
    return schemacheck.errors(manifest, SCHEMA, SCHEMA)


@pytest.mark.parametrize("name", registry.names())
def test_manifest_follows_the_schema(name):
    manifest = registry.manifest(name)
    assert schema_errors(manifest) == []
    assert registry.problems(name) == []
    assert manifest["name"] == name


@pytest.mark.parametrize("name", registry.names())
def test_manifest_backend_is_a_backend_class_of_the_adapters_own_package(name):
    cls = registry.backend_class(name)
    assert isinstance(cls, type) and issubclass(cls, Backend)
    assert cls.__module__.startswith("%s.%s." % (registry.ADAPTERS_PACKAGE, name))


@pytest.mark.parametrize("name", registry.names())
def test_adapter_imports_its_own_modules_relatively(name):
    """`adapters.<name>` is `harnessctl.adapters.<name>` once installed: an absolute import breaks there."""
    folder = os.path.join(registry.ADAPTERS_DIR, name)
    absolute = []
    for directory, _, files in os.walk(folder):
        for file in (f for f in files if f.endswith(".py")):
            path = os.path.join(directory, file)
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                           else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                absolute += ["%s: %s" % (os.path.relpath(path, folder), m) for m in modules
                             if m == "adapters" or m.startswith("adapters.")]
    assert absolute == []


def test_registry_checks_the_schemas_vocabulary_and_keys():
    assert [c["const"] for c in SCHEMA["$defs"]["capability"]["oneOf"]] == list(registry.CAPABILITIES)
    agent = SCHEMA["$defs"]["agent"]
    assert list(SCHEMA["properties"]) == list(registry.KEYS)
    assert list(HARNESS["properties"]) == list(registry.HARNESS_KEYS)
    assert list(agent["properties"]) == list(registry.AGENT_KEYS)
    optional = [set(s["properties"]) - set(s["required"]) for s in (SCHEMA, HARNESS, agent)]
    assert sorted(set().union(*optional)) == sorted(registry.OPTIONAL)
    assert SCHEMA["additionalProperties"] is False and HARNESS["additionalProperties"] is False
    assert SCHEMA["properties"]["capabilities"]["uniqueItems"] is True
    assert SCHEMA["properties"]["backend"]["pattern"] == "^%s$" % registry.BACKEND
    for key in ("binary_env", "args_env", "agent_env"):
        assert HARNESS["properties"][key]["pattern"] == "^%s$" % registry.ENV_NAME
    assert agent["properties"]["command_env"]["pattern"] == "^%s$" % registry.ENV_NAME
    kinds = {"string": "string", "object": "object", "array": "array", "string or null": ["string", "null"]}
    for schema, keys in ((SCHEMA, registry.KEYS), (HARNESS, registry.HARNESS_KEYS), (agent, registry.AGENT_KEYS)):
        assert {k: s["type"] for k, s in schema["properties"].items()} == {k: kinds[v] for k, v in keys.items()}


def _parent(manifest, path):
    *keys, last = path.split(".")
    for key in keys:
        manifest = manifest[key]
    return manifest, last


def _drop(path):
    def mutate(manifest):
        parent, key = _parent(manifest, path)
        del parent[key]
    return mutate


def _set(path, value):
    def mutate(manifest):
        parent, key = _parent(manifest, path)
        parent[key] = value
    return mutate


# (mutation of the mock manifest, what registry.problems says, whether schemacheck sees it too:
# it has no uniqueItems, and the folder name is not in the file)
BROKEN = {
    "unknown capability": (_set("capabilities", ["steer", "permission"]), "unknown capability 'permission'", True),
    "old mock word": (_set("capabilities", ["start"]), "unknown capability 'start'", True),
    "missing capabilities": (_drop("capabilities"), "missing key capabilities", True),
    "missing harness": (_drop("harness"), "missing key harness", True),
    "missing args_env": (_drop("harness.args_env"), "missing key harness.args_env", True),
    "missing description": (_drop("description"), "missing key description", True),
    "capabilities not a list": (_set("capabilities", "steer"), "capabilities is not array", True),
    "empty version": (_set("version", ""), "version is empty", True),
    "absolute backend": (_set("backend", "adapters.mock.backend:MockBackend"), "backend 'adapters.mock", True),
    "binary_env not ours": (_set("harness.binary_env", "PATH"), "harness.binary_env 'PATH'", True),
    "duplicate capability": (_set("capabilities", ["steer", "steer"]), "capability 'steer' listed twice", False),
    "unknown key": (_set("harness.path", "/bin/mock"), "unknown key harness.path", True),
    "name of another folder": (_set("name", "other"), "name 'other' is not the adapter's folder name", False),
    "preset without command": (_set("agents", {"x": {"command_env": "HARNESSCTL_X_CMD", "package": None,
                                                     "version": None, "capabilities": []}}),
                               "missing key agents.x.command", True),
    "preset claims an unknown word": (_set("agents", {"x": {"command": "x acp", "command_env": "HARNESSCTL_X_CMD",
                                                            "package": None, "version": None,
                                                            "capabilities": ["telepathy"]}}),
                                      "agents.x.unknown capability 'telepathy'", True),
    "preset variable not ours": (_set("agents", {"x": {"command": "x acp", "command_env": "PATH", "package": None,
                                                       "version": None, "capabilities": []}}),
                                 "agents.x.command_env 'PATH'", True),
    "preset from an unknown registry": (_set("agents", {"x": {"command": "x acp", "command_env": "HARNESSCTL_X_CMD",
                                                              "package": "x", "registry": "pip", "version": None,
                                                              "capabilities": []}}),
                                        "agents.x.registry 'pip' is not one of npm, pypi", True),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_manifest_that_breaks_the_schema_is_refused(case, tmp_path, monkeypatch):
    mutate, said, schema_sees_it = BROKEN[case]
    manifest = copy.deepcopy(registry.manifest("mock"))
    mutate(manifest)
    (tmp_path / "mock").mkdir()
    (tmp_path / "mock" / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(registry, "ADAPTERS_DIR", str(tmp_path))
    found = registry.problems("mock")
    assert len(found) == 1 and found[0].startswith(said), found
    assert bool(schema_errors(manifest)) is schema_sees_it


def test_a_manifest_that_is_not_json_is_refused(tmp_path, monkeypatch):
    (tmp_path / "mock").mkdir()
    (tmp_path / "mock" / "manifest.json").write_text('{"name": "mock",')
    monkeypatch.setattr(registry, "ADAPTERS_DIR", str(tmp_path))
    assert registry.problems("mock")[0].startswith("not valid JSON")
