"""Bad input: each case gets its documented exit code and ONE clear stderr line,
and nothing already in an event file changes (README "Exit codes" lists them)."""

from __future__ import annotations

import os

import pytest
from badinput import CASES, new_path, snapshot_files
from cliutil import cli_env, run, runtime_pids


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input(name, workdir):
    setup, args, stdin, env_extra, code, fragment = CASES[name]
    open(str(workdir / "plain"), "w").close()
    path = setup(workdir)
    before = snapshot_files(workdir)
    argv = [a.replace("{f}", path).replace("{w}", str(workdir)) for a in args]
    proc = run(*argv, input=stdin, env=cli_env(**(env_extra or {})))
    err = proc.stderr.decode()
    assert proc.returncode == code, (argv, proc.returncode, err)
    assert err.startswith("harnessctl: ") and err.count("\n") == 1, err
    assert fragment in err, err
    assert proc.stdout == b""
    after = snapshot_files(workdir)
    for name_, data in before.items():
        assert after.get(name_, b"")[: len(data)] == data, "%s changed" % name_
    assert set(after) - set(before) <= {"new.jsonl"} or code != 2
    if code == 2 and setup is new_path:
        assert not os.path.exists(path), "a refused first send must not create the event file"
        assert not runtime_pids(path), "a refused first send left a runtime behind"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_send_in_a_read_only_directory_exits_2(workdir):
    ro = workdir / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    proc = run("send", str(ro / "e.jsonl"), "hi", "--adapter", "mock")
    assert proc.returncode == 2 and b"cannot create" in proc.stderr
