"""package.py builds a self-contained per-adapter tar.gz whose entry point works from anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile

import pytest
from cliutil import ROOT, cli_env, wait_results

from harnessctl import registry


def build(adapter, out):
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "package.py"), "--adapter", adapter,
                           "--output-dir", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    return proc.stdout.decode().strip()


@pytest.mark.parametrize("adapter", registry.names())
def test_package_contains_entry_point_manifest_and_lib(adapter, tmp_path):
    archive = build(adapter, tmp_path)
    assert os.path.basename(archive).startswith("harnessctl-%s-" % adapter) and archive.endswith("-linux.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile("%s/manifest.json" % adapter))
    assert "%s/harnessctl" % adapter in names and "%s/lib/harnessctl/cli.py" % adapter in names
    assert "%s/lib/adapters/%s/manifest.json" % (adapter, adapter) in names
    assert not [n for n in names if "/adapters/" in n and "/adapters/%s/" % adapter not in n
                and not n.endswith("adapters/__init__.py")]
    assert manifest["adapter"] == adapter and manifest["protocol_version"] == 1
    assert manifest["python_requires"] == ">=3.9" and manifest["capabilities"]


def test_extracted_mock_package_sends_from_any_directory(tmp_path, workdir):
    archive = build("mock", tmp_path / "dist")
    target = tmp_path / "home" / ".harness"
    target.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(str(target))
    entry = str(target / "mock" / "harnessctl")
    env = cli_env()
    del env["PYTHONPATH"]
    missing = subprocess.run([entry, "status", str(workdir / "none.jsonl")], env=env, cwd="/",
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert missing.returncode == 4
    path = str(workdir / "demo.jsonl")
    sent = subprocess.run([entry, "send", path, "hello"], env=env, cwd=str(workdir),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert sent.returncode == 0 and sent.stdout == b"", sent.stderr
    assert wait_results(path, 1)[0]["output"] == "echo: hello"
    status = subprocess.run([entry, "status", path], env=env, stdout=subprocess.PIPE, check=True)
    assert json.loads(status.stdout)["adapter"] == "mock"


def test_package_entry_point_refuses_another_adapter(tmp_path, workdir):
    archive = build("mock", tmp_path / "dist")
    with tarfile.open(archive) as tar:
        tar.extractall(str(tmp_path / "x"))
    proc = subprocess.run([str(tmp_path / "x" / "mock" / "harnessctl"), "send", str(workdir / "e.jsonl"), "hi",
                           "--adapter", "codex"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 2 and b"mock adapter" in proc.stderr


@pytest.mark.parametrize("adapter", registry.names())
def test_every_extracted_package_entry_point_works(adapter, tmp_path):
    archive = build(adapter, tmp_path / "dist")
    with tarfile.open(archive) as tar:
        tar.extractall(str(tmp_path / "harness"))
    entry = str(tmp_path / "harness" / adapter / "harnessctl")
    env = cli_env()
    del env["PYTHONPATH"]
    version = subprocess.run([entry, "--version"], env=env, cwd="/", stdout=subprocess.PIPE, check=True)
    assert ("(%s adapter)" % adapter).encode() in version.stdout
    missing = subprocess.run([entry, "status", str(tmp_path / "none.jsonl")], env=env, cwd="/",
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert missing.returncode == 4 and missing.stderr.startswith(b"harnessctl: ")
