"""`harnessctl agents`: every preset of the manifests, its command, whether it
is found on PATH (and its npm or PyPI package's version), and what is proven of it."""

from __future__ import annotations

import json
import os

from cliutil import cli_env, ok, run

from harnessctl.store import registry

PRESETS = list(registry.manifest("acp")["agents"])


def listed(*args, **env):
    return ok("agents", *args, env=cli_env(**dict({"PATH": "/nonexistent"}, **env))).stdout.decode()


def as_json(**env):
    return [json.loads(line) for line in listed("--json", **env).splitlines()]


def npm_install(root, package, version, binary):
    """A package as npm lays it out: node_modules/PACKAGE/{package.json,bin/x.js}
    and node_modules/.bin/BINARY linking to it."""
    folder = root / "node_modules" / package
    (folder / "bin").mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"name": package, "version": version}))
    script = folder / "bin" / "cli.js"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    (root / "node_modules" / ".bin").mkdir()
    os.symlink(os.path.relpath(script, root / "node_modules" / ".bin"), root / "node_modules" / ".bin" / binary)
    return str(root / "node_modules" / ".bin")


def venv_install(root, distribution, version, binary):
    """A distribution as pip lays it out in a venv: lib/python3.12/site-packages/
    NAME-VERSION.dist-info/METADATA and bin/BINARY."""
    info = root / "lib" / "python3.12" / "site-packages" / ("%s-%s.dist-info" % (distribution, version))
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.4\nName: %s\nVersion: %s\n\nReadme text: Version: 0\n"
                                   % (distribution.replace("_", "-"), version))
    (root / "bin").mkdir()
    (root / "bin" / binary).write_text("#!/bin/sh\n")
    (root / "bin" / binary).chmod(0o755)
    return str(root / "bin")


def test_agents_prints_a_header_and_one_line_per_preset_in_manifest_order():
    lines = listed().splitlines()
    assert lines[0].split() == ["AGENT", "COMMAND", "FOUND", "PROVEN"]
    assert [line.split()[0] for line in lines[1:]] == PRESETS


def test_agents_json_is_one_object_per_preset_with_its_claims():
    entries = as_json()
    assert [e["agent"] for e in entries] == PRESETS
    codex = entries[0]
    preset = registry.manifest("acp")["agents"]["codex"]
    assert (codex["command"], codex["found"], codex["version"]) == (preset["command"], None, None)
    assert (codex["tested_version"], codex["capabilities"]) == (preset["version"], preset["capabilities"])


def test_a_preset_on_path_shows_the_version_of_its_npm_package(tmp_path):
    bin_dir = npm_install(tmp_path, "opencode-ai", "1.2.3", "opencode")
    entry = next(e for e in as_json(PATH=bin_dir) if e["agent"] == "opencode")
    assert entry["found"] == os.path.join(bin_dir, "opencode") and entry["version"] == "1.2.3"
    line = next(line for line in listed(PATH=bin_dir).splitlines() if line.startswith("opencode "))
    assert line.split()[3] == "1.2.3"


def test_a_pypi_preset_on_path_shows_the_version_of_the_distribution_in_its_venv(tmp_path):
    bin_dir = venv_install(tmp_path / "venv", "mistral_vibe", "3.0.3", "vibe-acp")
    entry = next(e for e in as_json(PATH=bin_dir) if e["agent"] == "vibe")
    assert (entry["registry"], entry["found"], entry["version"]) == ("pypi", os.path.join(bin_dir, "vibe-acp"), "3.0.3")


def test_a_pypi_preset_linked_from_elsewhere_reads_the_venv_of_the_real_command(tmp_path):
    """pipx links ~/.local/bin/X to its venv's bin/X."""
    real = venv_install(tmp_path / "venvs" / "hermes-agent", "hermes_agent", "0.19.0", "hermes-acp")
    (tmp_path / "local").mkdir()
    os.symlink(os.path.join(real, "hermes-acp"), str(tmp_path / "local" / "hermes-acp"))
    entry = next(e for e in as_json(PATH=str(tmp_path / "local")) if e["agent"] == "hermes")
    assert entry["version"] == "0.19.0"


def test_the_override_variable_replaces_the_command_and_its_script_gives_the_version(tmp_path):
    bin_dir = npm_install(tmp_path, "@agentclientprotocol/codex-acp", "9.9.9", "codex-acp")
    script = os.path.join(bin_dir, os.readlink(os.path.join(bin_dir, "codex-acp")))
    entry = as_json(HARNESSCTL_ACP_CODEX_CMD="/bin/sh %s --flag" % script)[0]
    assert entry["command"] == "/bin/sh %s --flag" % script
    assert (entry["found"], entry["version"]) == ("/bin/sh", "9.9.9")


def test_a_preset_that_claims_nothing_says_why():
    qoder = next(line for line in listed().splitlines() if line.startswith("qoder "))
    assert "nothing: " in qoder and "login" in qoder


def test_agents_takes_no_arguments():
    proc = run("agents", "extra", env=cli_env())
    assert proc.returncode == 2 and proc.stderr.decode().count("\n") == 1


def test_a_command_npm_links_to_a_platform_binary_shows_the_presets_package_version(tmp_path):
    bin_dir = npm_install(tmp_path, "@cline/cli-linux-x64", "3.0.65", "cline")  # what cline 3.0.65 links
    shim = tmp_path / "node_modules" / "cline"  # the package the preset names, whose postinstall picked the binary
    shim.mkdir()
    (shim / "package.json").write_text(json.dumps({"name": "cline", "version": "3.0.65"}))
    entry = next(e for e in as_json(PATH=bin_dir) if e["agent"] == "cline")
    assert entry["version"] == "3.0.65"
