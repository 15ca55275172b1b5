"""package.py builds a self-contained per-adapter tar.gz whose entry point works from anywhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest
from cliutil import ROOT, cli_env, extract_archive, wait_results

from harnessctl.store import registry


def package(adapter, out, *extra):
    return subprocess.run([sys.executable, os.path.join(ROOT, "package.py"), "--adapter", adapter,
                           "--output-dir", str(out), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def build(adapter, out, *extra):
    proc = package(adapter, out, *extra)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode().strip()


def extract_entry(archive, target, adapter="mock"):
    extract_archive(archive, str(target))
    return str(target / adapter / "harnessctl")


def first_line(path):
    with open(path, "rb") as f:
        return f.readline().decode()


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
    assert manifest["description"] == registry.manifest(adapter)["description"]


def test_extracted_mock_package_sends_from_any_directory(tmp_path, workdir):
    archive = build("mock", tmp_path / "dist")
    target = tmp_path / "home" / ".harness"
    target.mkdir(parents=True)
    extract_archive(archive, str(target))
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
    extract_archive(archive, str(tmp_path / "x"))
    proc = subprocess.run([str(tmp_path / "x" / "mock" / "harnessctl"), "send", str(workdir / "e.jsonl"), "hi",
                           "--adapter", "codex"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 2 and b"mock adapter" in proc.stderr


def test_package_entry_point_takes_its_own_adapter_name_so_scripts_run_unchanged(tmp_path, workdir):
    archive = build("mock", tmp_path / "dist")
    extract_archive(archive, str(tmp_path / "x"))
    path = str(workdir / "e.jsonl")
    env = cli_env()
    del env["PYTHONPATH"]
    proc = subprocess.run([str(tmp_path / "x" / "mock" / "harnessctl"), "send", path, "hi", "--adapter", "mock",
                           "--wait"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 0 and json.loads(proc.stdout)["output"] == "echo: hi", proc.stderr


@pytest.mark.parametrize("adapter", registry.names())
def test_every_extracted_package_entry_point_works(adapter, tmp_path):
    archive = build(adapter, tmp_path / "dist")
    extract_archive(archive, str(tmp_path / "harness"))
    entry = str(tmp_path / "harness" / adapter / "harnessctl")
    env = cli_env()
    del env["PYTHONPATH"]
    version = subprocess.run([entry, "--version"], env=env, cwd="/", stdout=subprocess.PIPE, check=True)
    assert ("(%s adapter)" % adapter).encode() in version.stdout
    missing = subprocess.run([entry, "status", str(tmp_path / "none.jsonl")], env=env, cwd="/",
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert missing.returncode == 4 and missing.stderr.startswith(b"harnessctl: ")


def test_entry_point_shebang_names_the_resolved_interpreter_that_built_it(tmp_path):
    entry = extract_entry(build("mock", tmp_path / "dist"), tmp_path / "x")
    assert first_line(entry) == "#!%s -IS\n" % os.path.realpath(sys.executable)


def test_default_entry_point_runs_without_any_python_on_path(tmp_path):
    entry = extract_entry(build("mock", tmp_path / "dist"), tmp_path / "x")
    env = cli_env(PATH=str(tmp_path / "empty"))
    del env["PYTHONPATH"]
    missing = subprocess.run([entry, "status", str(tmp_path / "none.jsonl")], env=env, cwd="/",
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert missing.returncode == 4, missing.stderr


def test_python_path_override_is_recorded_resolved(tmp_path):
    link = tmp_path / "bin" / "python3"
    link.parent.mkdir()
    link.symlink_to(sys.executable)
    entry = extract_entry(build("mock", tmp_path / "dist", "--python", str(link)), tmp_path / "x")
    assert first_line(entry) == "#!%s -IS\n" % os.path.realpath(sys.executable)


def test_python_bare_name_keeps_the_portable_env_shebang(tmp_path):
    entry = extract_entry(build("mock", tmp_path / "dist", "--python", "python3"), tmp_path / "x")
    assert first_line(entry) == "#!/usr/bin/env -S python3 -I -S\n"


def test_portable_entry_point_runs_status_with_python3_from_path(tmp_path):
    entry = extract_entry(build("mock", tmp_path / "dist", "--python", "python3"), tmp_path / "x")
    env = cli_env()
    del env["PYTHONPATH"]
    missing = subprocess.run([entry, "status", str(tmp_path / "none.jsonl")], env=env, cwd="/",
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert missing.returncode == 4, missing.stderr


def test_python_that_is_a_script_like_a_pyenv_shim_is_refused(tmp_path):
    shim = tmp_path / "python3"
    shim.write_text('#!/bin/sh\nexec "%s" "$@"\n' % sys.executable)
    shim.chmod(0o755)
    proc = package("mock", tmp_path / "dist", "--python", str(shim))
    assert proc.returncode == 2 and b"not an ELF binary" in proc.stderr
    assert not (tmp_path / "dist").exists()


def tiny_project(root, mutate=None):
    """A throwaway copy of the project (package.py, the core) whose adapters/ holds one new adapter,
    `tiny`: the mock adapter's files under another name, plus what is not Python (an executable script,
    a data file in a subfolder) and Python's caches.  Nothing outside adapters/tiny/ names it."""
    caches = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(os.path.join(ROOT, "harnessctl"), str(root / "harnessctl"), ignore=caches)
    shutil.copy(os.path.join(ROOT, "package.py"), str(root))
    (root / "adapters").mkdir()
    shutil.copy(os.path.join(ROOT, "adapters", "__init__.py"), str(root / "adapters"))
    tiny = root / "adapters" / "tiny"
    shutil.copytree(os.path.join(ROOT, "adapters", "mock"), str(tiny), ignore=caches)
    manifest = json.loads((tiny / "manifest.json").read_text())
    manifest["name"] = "tiny"
    if mutate:
        mutate(manifest)
    (tiny / "manifest.json").write_text(json.dumps(manifest))
    (tiny / "helper.sh").write_text("#!/bin/sh\necho helped\n")
    (tiny / "helper.sh").chmod(0o755)
    (tiny / "data").mkdir()
    (tiny / "data" / "table.txt").write_text("one\n")
    (tiny / "__pycache__").mkdir()
    (tiny / "__pycache__" / "backend.cpython-39.pyc").write_bytes(b"stale")
    (tiny / "stray.pyc").write_bytes(b"stale")
    return str(root / "package.py")


def test_package_ships_every_file_of_a_new_adapters_folder_with_its_modes(tmp_path, workdir):
    script = tiny_project(tmp_path / "project")
    proc = subprocess.run([sys.executable, script, "--adapter", "tiny", "--output-dir", str(tmp_path / "dist")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr
    archive = proc.stdout.decode().strip()
    with tarfile.open(archive) as tar:
        modes = {m.name: m.mode for m in tar.getmembers() if m.name.startswith("tiny/lib/adapters/tiny/")}
    extract_archive(archive, str(tmp_path / "x"))
    shipped = {name[len("tiny/lib/adapters/tiny/"):]: mode for name, mode in modes.items()}
    assert shipped == {"__init__.py": 0o644, "backend.py": 0o644, "standin.py": 0o644, "manifest.json": 0o644,
                       "conformance.json": 0o644, "helper.sh": 0o755, "data/table.txt": 0o644}
    helped = subprocess.run([str(tmp_path / "x" / "tiny" / "lib" / "adapters" / "tiny" / "helper.sh")],
                            stdout=subprocess.PIPE, check=True)
    assert helped.stdout == b"helped\n"
    env = cli_env()
    del env["PYTHONPATH"]
    path = str(workdir / "tiny.jsonl")
    sent = subprocess.run([str(tmp_path / "x" / "tiny" / "harnessctl"), "send", path, "hi", "--wait"], env=env,
                          cwd=str(workdir), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert sent.returncode == 0 and json.loads(sent.stdout)["output"] == "echo: hi", sent.stderr


@pytest.mark.parametrize("mutate, said", [
    (lambda m: m["capabilities"].append("teleport"), "unknown capability 'teleport'"),
    (lambda m: m.pop("harness"), "missing key harness"),
], ids=["unknown capability", "missing key"])
def test_package_refuses_a_manifest_that_breaks_the_schema_in_one_line(mutate, said, tmp_path):
    script = tiny_project(tmp_path / "project", mutate)
    proc = subprocess.run([sys.executable, script, "--adapter", "tiny", "--output-dir", str(tmp_path / "dist")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.count(b"\n") == 1 and proc.stderr.startswith(b"package.py: error: adapters/tiny/manifest.json: ")
    assert said.encode() in proc.stderr, proc.stderr
    assert not (tmp_path / "dist").exists()


# -- an ACP preset fixed in the entry point -------------------------------------------------

FAKE_AGENT = os.path.join(ROOT, "tests", "support", "acp_support", "fake_agent.py")


def acp_gemini_entry(tmp_path):
    archive = build("acp", tmp_path / "dist", "--agent", "gemini")
    assert os.path.basename(archive).startswith("harnessctl-acp-gemini-")
    extract_archive(archive, str(tmp_path / "harness"))
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile("acp-gemini/manifest.json"))
    return str(tmp_path / "harness" / "acp-gemini" / "harnessctl"), manifest


def test_an_acp_package_with_agent_carries_that_preset_and_what_was_proved_against_it(tmp_path):
    _, manifest = acp_gemini_entry(tmp_path)
    preset = registry.manifest("acp")["agents"]["gemini"]
    assert manifest["name"] == "harnessctl-acp-gemini" and manifest["agent"] == dict(preset, name="gemini")


def test_an_acp_package_with_agent_sends_without_adapter_or_agent_and_refuses_another_agent(tmp_path, workdir):
    entry, _ = acp_gemini_entry(tmp_path)
    env = cli_env(HARNESSCTL_ACP_GEMINI_CMD="%s %s --no-steering" % (sys.executable, FAKE_AGENT),
                  FAKE_ACP_HOME=str(workdir / "sessions"))
    del env["PYTHONPATH"]
    path = str(workdir / "e.jsonl")
    sent = subprocess.run([entry, "send", path, "hi", "--wait"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    assert sent.returncode == 0 and json.loads(sent.stdout)["status"] == "completed", sent.stderr
    status = subprocess.run([entry, "status", path], env=env, stdout=subprocess.PIPE, check=True)
    assert json.loads(status.stdout)["agent"] == "gemini"
    other = subprocess.run([entry, "send", path, "hi", "--agent", "claude"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    assert other.returncode == 2 and b"runs the gemini agent" in other.stderr


def test_a_package_agent_that_is_not_a_preset_is_refused(tmp_path):
    proc = package("acp", tmp_path, "--agent", "nope")
    assert proc.returncode == 2 and b"--agent nope is not a preset of the acp adapter" in proc.stderr
    assert not os.path.exists(tmp_path) or not os.listdir(tmp_path)


@pytest.mark.parametrize("name", ["python3\nimport os; os.system('id > PWNED')", "python3 -c", "-python3",
                                  "python3;id", "pyth\u00f6n", ""])
def test_python_bare_name_that_is_not_a_plain_command_name_is_refused(tmp_path, name):
    """A bare --python goes into the #! line: nothing but a command name may (issue 19, section 7)."""
    proc = package("mock", tmp_path / "dist", "--python=" + name)
    assert proc.returncode == 2 and b"not a plain interpreter name" in proc.stderr, proc.stderr
    assert not (tmp_path / "dist").exists()
