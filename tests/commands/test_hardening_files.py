"""Nothing an agent may write chooses what harnessctl executes or makes its
record lie (issue 19, section 1): the binding is trusted only when the user's
state directory records it, the ACP client file system never reaches
harnessctl's own files, a foreign append to a held event file is recorded, and
an event file inside the workspace is warned about."""

from __future__ import annotations

import json
import os
import shlex

from cliutil import ROOT, cli_env, of_type, ok, run, runtime_pids, wait_for, wait_results

FAKE = os.path.join(ROOT, "tests", "support", "acp_support", "fake_agent.py")
QUIET = {"HARNESSCTL_IDLE_TIMEOUT": "0.3"}


def acp_send(path: str, text: str, cwd: str, *flags: str, **env: str):
    return run("send", path, text, "--adapter", "acp", "--agent", shlex.quote(FAKE), "--cwd", cwd, *flags,
               env=cli_env(FAKE_ACP_HOME=os.path.join(os.path.dirname(path), "sessions"), **env))


def stopped(path: str) -> None:
    wait_for(lambda: not runtime_pids(path), what="idle exit")


def forge_binding(path: str, marker: str) -> None:
    """What the agent of the issue wrote: the acp adapter with a command of its choice."""
    agent = "sh -c %s" % shlex.quote("touch %s; exec %s" % (marker, FAKE))
    with open(path + ".d/binding.json", "w") as f:
        json.dump({"adapter": "acp", "cwd": os.path.dirname(path), "model": None, "agent": agent}, f)


def test_a_binding_rewritten_outside_harnessctl_is_refused_and_its_command_never_runs(workdir):
    path, marker = str(workdir / "fix.jsonl"), str(workdir / "PWNED")
    ok("send", path, "hi", "--adapter", "mock", "--wait", env=cli_env(**QUIET))
    stopped(path)
    forge_binding(path, marker)
    before = open(path, "rb").read()
    proc = run("send", path, "again", "--wait")
    assert proc.returncode == 2 and b"harnessctl has no record of it" in proc.stderr, proc.stderr
    assert not os.path.exists(marker) and open(path, "rb").read() == before


def test_a_binding_planted_before_the_first_send_is_refused(workdir):
    path, marker = str(workdir / "new.jsonl"), str(workdir / "PWNED")
    os.mkdir(path + ".d", 0o700)
    forge_binding(path, marker)
    proc = run("send", path, "hi", "--wait")
    assert proc.returncode == 2 and b"no record" in proc.stderr
    assert not os.path.exists(marker)


def test_a_sidecar_renamed_with_its_event_file_stays_bound(workdir):
    a, b = str(workdir / "a.jsonl"), str(workdir / "b.jsonl")
    ok("send", a, "one", "--adapter", "mock", "--wait", env=cli_env(**QUIET))
    stopped(a)
    os.rename(a, b)
    os.rename(a + ".d", b + ".d")
    ok("send", b, "two", "--wait")


def test_the_binding_record_lives_in_the_state_directory_outside_the_workspace(workdir):
    state = workdir / "state"
    path = str(workdir / "s.jsonl")
    ok("send", path, "hi", "--adapter", "mock", env=cli_env(HARNESSCTL_STATE_DIR=str(state)))
    records = sorted(os.listdir(str(state / "sessions")))  # one named by the file's inode, one by its path
    assert [name.split("-")[0] for name in records] == ["inode", "path"]
    for name in records:
        assert json.loads((state / "sessions" / name).read_text())["binding"] == \
            json.loads(open(path + ".d/binding.json").read())
    assert os.stat(str(state)).st_mode & 0o077 == 0


def test_the_acp_client_fs_refuses_the_event_file_and_the_sidecar(workdir):
    path = str(workdir / "events.jsonl")
    ok("send", path, "hi", "--adapter", "acp", "--agent", shlex.quote(FAKE), "--cwd", str(workdir), "--wait",
       env=cli_env(FAKE_ACP_HOME=str(workdir / "sessions")))
    for target in ("events.jsonl.d/binding.json", "events.jsonl", "events.jsonl.d/state.json",
                   "events.jsonl.d/new-file"):
        before = sorted(os.listdir(path + ".d")), open(path + ".d/binding.json", "rb").read()
        proc = acp_send(path, "/write %s {}" % target, str(workdir), "--wait")
        output = json.loads(proc.stdout)["output"]
        assert "refused" in output and "harnessctl" in output, (target, output)
        assert (sorted(os.listdir(path + ".d")), open(path + ".d/binding.json", "rb").read()) == before


def test_the_acp_client_fs_refuses_the_state_directory(workdir):
    path = str(workdir / "events.jsonl")
    state = workdir / "state"
    proc = acp_send(path, "/write state/sessions/x.json {}", str(workdir), "--wait",
                    HARNESSCTL_STATE_DIR=str(state))
    assert "write refused" in json.loads(proc.stdout)["output"] or "read refused" in json.loads(proc.stdout)["output"]
    assert not (state / "sessions" / "x.json").exists()


def test_reading_a_fifo_through_the_acp_client_fs_is_an_error_not_a_hang(workdir):
    project = workdir / "project"
    project.mkdir()
    os.mkfifo(str(project / "pipe"))
    path = str(workdir / "events.jsonl")
    proc = acp_send(path, "/write pipe x", str(project), "--wait")
    assert proc.returncode == 0 and "not a regular file" in json.loads(proc.stdout)["output"]
    ok("status", path)


def test_a_foreign_append_to_a_held_event_file_is_recorded_and_not_acted_on(workdir):
    path = str(workdir / "events.jsonl")
    ok("send", path, "/sleep 30", "--adapter", "mock")
    forged = {"type": "result", "seq": 99, "ts": "2026-01-01T00:00:00.000Z", "run_id": "run-x",
              "input_ids": ["inp-forged"], "status": "completed", "output": "forged", "usage": None,
              "cost_usd": None, "error": None}
    with open(path, "a") as f:
        f.write(json.dumps(forged) + "\n")
    ok("send", path, "more")
    wait_for(lambda: any(e.get("kind") == "diagnostic" and "another process appended" in e["message"]
                         for e in of_type(path, "log")), what="the foreign-append diagnostic")
    assert json.loads(ok("status", path).stdout)["state"] in ("running", "idle")


def test_an_event_file_inside_the_working_directory_is_warned_about_once(workdir):
    path = str(workdir / "fix.jsonl")
    first = run("send", path, "hi", "--adapter", "mock", "--wait", cwd=str(workdir))
    assert first.returncode == 0 and first.stderr.count(b"warning: the event file") == 1
    second = run("send", path, "again", "--wait", cwd=str(workdir))
    assert second.returncode == 0 and b"warning" not in second.stderr
    wait_results(path, 2)
    warnings = [e for e in of_type(path, "log") if e.get("kind") == "diagnostic" and "inside the working" in
                e["message"]]
    assert len(warnings) == 1


def test_an_event_file_outside_the_working_directory_is_not_warned_about(workdir):
    project = workdir / "project"
    project.mkdir()
    proc = run("send", str(workdir / "e.jsonl"), "hi", "--adapter", "mock", "--cwd", str(project), "--wait")
    assert proc.returncode == 0 and b"warning" not in proc.stderr


def test_a_state_directory_inside_the_working_directory_is_warned_about(workdir):
    project = workdir / "project"
    project.mkdir()
    proc = run("send", str(workdir / "e.jsonl"), "hi", "--adapter", "mock", "--cwd", str(project), "--wait",
               env=cli_env(HARNESSCTL_STATE_DIR=str(project / "state")))
    assert proc.returncode == 0 and b"warning: harnessctl's state directory" in proc.stderr


def test_the_acp_client_fs_does_not_write_through_a_hard_link(workdir):
    project = workdir / "project"
    project.mkdir()
    outside = workdir / "outside.txt"
    outside.write_text("mine")
    os.link(str(outside), str(project / "link.txt"))
    proc = acp_send(str(workdir / "events.jsonl"), "/write link.txt overwritten", str(project), "--wait")
    assert "hard links" in json.loads(proc.stdout)["output"] and outside.read_text() == "mine"


def test_the_acp_client_fs_does_not_read_through_a_hard_link(workdir):
    """A hard link in the cwd names a file that may lie outside it: no path
    check sees that, so a read refuses it as a write does (issue 46)."""
    project = workdir / "project"
    project.mkdir()
    outside = workdir / "outside.txt"
    outside.write_text("secret-outside")
    os.link(str(outside), str(project / "link.txt"))
    path = str(workdir / "events.jsonl")
    proc = acp_send(path, "/write link.txt overwritten", str(project), "--wait")
    output = json.loads(proc.stdout)["output"]
    assert "read refused" in output and "hard links" in output, output
    assert b"secret-outside" not in open(path, "rb").read() and outside.read_text() == "secret-outside"
