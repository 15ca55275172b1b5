"""The binding cannot be dropped, rolled back or swapped (issue 32, item 7):
a used file is never bound anew, only the latest binding recorded for this
very file is trusted, the records are found whatever HOME says, `rebind` gets
a locked-out session back with its policy, the seal key is never used
through a second name, and a new file's first run uses nothing planted in
its sidecar."""

from __future__ import annotations

import json
import os
import shlex
import shutil

from cliutil import ROOT, cli_env, of_type, ok, run, runtime_pids, wait_for

FAKE = os.path.join(ROOT, "tests", "support", "acp_support", "fake_agent.py")
POLICY = ("--mode", "ask", "--max-tokens", "100000")


def state_env(state, **more: str):
    return cli_env(HARNESSCTL_STATE_DIR=str(state), HARNESSCTL_IDLE_TIMEOUT="0.3", **more)


def bound(path: str, state, *flags: str) -> dict:
    """A session with one finished run, its runtime gone; its binding.json."""
    ok("send", path, "hi", "--adapter", "mock", *flags, "--wait", env=state_env(state))
    wait_for(lambda: not runtime_pids(path), what="idle exit")
    with open(path + ".d/binding.json") as f:
        return json.load(f)


def binding_of(path: str) -> dict:
    with open(path + ".d/binding.json") as f:
        return json.load(f)


def write_binding(path: str, binding: dict) -> None:
    with open(path + ".d/binding.json", "w") as f:
        json.dump(binding, f)


def test_a_used_file_whose_binding_was_deleted_is_not_bound_anew_and_stays_unchanged(workdir):
    path, state = str(workdir / "s.jsonl"), workdir / "state"
    bound(path, state, *POLICY)
    os.unlink(path + ".d/binding.json")
    before = open(path, "rb").read()
    proc = run("send", path, "again", "--wait", env=state_env(state, HARNESSCTL_ADAPTER="mock"))
    assert proc.returncode == 2 and b"has events but no binding" in proc.stderr, proc.stderr
    assert b"harnessctl rebind" in proc.stderr and proc.stderr.count(b"\n") == 1
    assert open(path, "rb").read() == before and not os.path.exists(path + ".d/binding.json")


def test_rebind_restores_a_deleted_binding_with_its_mode_and_budget(workdir):
    path, state = str(workdir / "s.jsonl"), workdir / "state"
    original = bound(path, state, *POLICY)
    os.unlink(path + ".d/binding.json")
    proc = ok("rebind", path, env=state_env(state))
    assert json.loads(proc.stdout) == original and original["mode"] == "ask" and original["max_tokens"] == 100000
    assert b"restored" in proc.stderr
    ok("send", path, "again", "--wait", env=state_env(state))


def test_an_earlier_binding_written_back_after_a_budget_raise_is_refused(workdir):
    path, state = str(workdir / "s.jsonl"), workdir / "state"
    earlier = bound(path, state, "--max-tokens", "100000")
    ok("send", path, "more", "--max-tokens", "200000", "--wait", env=state_env(state))
    wait_for(lambda: not runtime_pids(path), what="idle exit")
    write_binding(path, earlier)
    before = open(path, "rb").read()
    proc = run("send", path, "again", "--wait", env=state_env(state))
    assert proc.returncode == 2 and b"latest binding (generation 2" in proc.stderr, proc.stderr
    assert open(path, "rb").read() == before
    ok("rebind", path, env=state_env(state))
    assert binding_of(path)["max_tokens"] == 200000


def test_another_sessions_binding_copied_in_is_refused(workdir, project):
    a, b, state = str(workdir / "a.jsonl"), str(workdir / "b.jsonl"), workdir / "state"
    bound(a, state, "--cwd", project, "--mode", "ask")
    bound(b, state, "--cwd", project, "--mode", "full", "--on-result", "true")
    shutil.copy(b + ".d/binding.json", a + ".d/binding.json")
    proc = run("send", a, "again", "--wait", env=state_env(state))
    assert proc.returncode == 2 and b"has no record of it as this file's latest binding" in proc.stderr, proc.stderr


def test_the_records_are_found_whatever_home_and_xdg_state_home_say(workdir):
    path, elsewhere = str(workdir / "s.jsonl"), workdir / "elsewhere"
    elsewhere.mkdir()
    interactive = cli_env(HARNESSCTL_IDLE_TIMEOUT="0.3")
    del interactive["HARNESSCTL_STATE_DIR"]  # the default: under the passwd entry's home
    ok("send", path, "hi", "--adapter", "mock", "--mode", "ask", "--wait", env=interactive)
    wait_for(lambda: not runtime_pids(path), what="idle exit")
    cron = dict(interactive, HOME=str(elsewhere), XDG_STATE_HOME=str(elsewhere / "state"))
    ok("send", path, "from cron", "--wait", env=cron)
    assert json.loads(ok("status", path, env=cron).stdout)["mode"] == "ask"
    assert os.listdir(str(elsewhere)) == []


def test_the_lock_out_message_says_what_happened_and_how_to_rebind(workdir):
    path = str(workdir / "s.jsonl")
    bound(path, workdir / "state", *POLICY)
    other = workdir / "other-state"
    proc = run("status", path, env=state_env(other))
    message = proc.stderr.decode()
    assert proc.returncode == 2 and message.count("\n") == 1, message
    assert "harnessctl has no record of it in %s" % other in message
    assert "state directory was deleted or is another one" in message and "harnessctl rebind %s" % path in message
    assert "agent" in message and "or by an agent" in message  # one cause among others, not the one blamed


def test_rebind_shows_an_unrecorded_binding_and_records_it_only_with_its_fingerprint(workdir):
    path, other = str(workdir / "s.jsonl"), workdir / "other-state"
    original = bound(path, workdir / "state", *POLICY)
    shown = ok("rebind", path, env=state_env(other))
    assert json.loads(shown.stdout) == original
    said = shown.stderr.decode()
    fingerprint = said.rsplit("--accept ", 1)[1].split()[0]
    assert run("send", path, "not yet", env=state_env(other)).returncode == 2  # showing recorded nothing
    ok("rebind", path, "--accept", fingerprint, env=state_env(other))
    ok("send", path, "again", "--wait", env=state_env(other))
    assert binding_of(path) == original  # mode, budget: the policy kept


def test_rebind_refuses_a_fingerprint_of_a_binding_changed_since_it_was_shown(workdir):
    path, other = str(workdir / "s.jsonl"), workdir / "other-state"
    original = bound(path, workdir / "state", "--mode", "ask")
    said = ok("rebind", path, env=state_env(other)).stderr.decode()
    fingerprint = said.rsplit("--accept ", 1)[1].split()[0]
    write_binding(path, dict(original, mode="full"))
    proc = run("rebind", path, "--accept", fingerprint, env=state_env(other))
    assert proc.returncode == 2 and b"not the fingerprint" in proc.stderr
    assert run("send", path, "again", env=state_env(other)).returncode == 2


def test_a_relative_state_directory_is_refused(workdir):
    proc = run("send", str(workdir / "s.jsonl"), "hi", "--adapter", "mock", env=cli_env(HARNESSCTL_STATE_DIR="state"))
    assert proc.returncode == 2 and b"HARNESSCTL_STATE_DIR must be an absolute path" in proc.stderr


def test_a_binding_recorded_by_an_older_harnessctl_is_taken_over_once(workdir):
    from harnessctl.store import trusted

    path, state = str(workdir / "s.jsonl"), workdir / "state"
    binding = bound(path, state, "--mode", "ask")
    shutil.rmtree(str(state / "sessions"))
    digest = trusted.blake2()(trusted.canonical(binding).encode("utf-8"), digest_size=20).hexdigest()
    (state / "bindings").mkdir(mode=0o700)
    (state / "bindings" / (digest + ".json")).write_text(trusted.canonical(binding) + "\n")
    ok("send", path, "again", "--wait", env=state_env(state))
    assert len(os.listdir(str(state / "sessions"))) == 2


def test_a_seal_key_with_a_second_hard_link_is_replaced_and_never_used(workdir):
    path, state = str(workdir / "s.jsonl"), workdir / "state"
    bound(path, state)
    ok("status", path, env=state_env(state))
    key = str(state / "key")
    linked = str(workdir / "key-copy")
    os.link(key, linked)
    planted = open(linked).read()
    ok("status", path, env=state_env(state))
    assert os.stat(key).st_nlink == 1 and open(key).read() != planted


def test_a_planted_mock_transcript_is_not_resumed_by_the_first_send(workdir):
    path, state = str(workdir / "s.jsonl"), workdir / "state"
    os.mkdir(path + ".d", 0o700)
    with open(path + ".d/mock-transcript.jsonl", "w") as f:
        f.write('{"planted": 1}\n{"planted": 2}\n')
    os.symlink(str(workdir / "keep.txt"), path + ".d/link")
    (workdir / "keep.txt").write_text("mine")
    bound(path, state)
    assert not [e for e in of_type(path, "log") if e.get("kind") == "diagnostic" and "resumed" in e["message"]]
    assert "planted" not in open(path + ".d/mock-transcript.jsonl").read()
    assert not os.path.lexists(path + ".d/link") and (workdir / "keep.txt").read_text() == "mine"


def test_a_planted_acp_session_id_is_not_resumed_by_the_first_send(workdir):
    path, project = str(workdir / "s.jsonl"), workdir / "project"
    project.mkdir()
    os.mkdir(path + ".d", 0o700)
    with open(path + ".d/acp-session.json", "w") as f:
        json.dump({"session_id": "planted-session"}, f)
    ok("send", path, "hi", "--adapter", "acp", "--agent", shlex.quote(FAKE), "--cwd", str(project), "--wait",
       env=state_env(workdir / "state", FAKE_ACP_HOME=str(workdir / "sessions")))
    assert "planted-session" not in open(path, encoding="utf-8").read()
    assert json.load(open(path + ".d/acp-session.json"))["session_id"] != "planted-session"


def test_a_new_files_sidecar_holding_a_foreign_directory_is_refused(workdir):
    path = str(workdir / "s.jsonl")
    os.makedirs(path + ".d/planted", 0o700)
    os.chmod(path + ".d", 0o700)
    proc = run("send", path, "hi", "--adapter", "mock", env=state_env(workdir / "state"))
    assert proc.returncode == 2 and b"holds a directory planted" in proc.stderr, proc.stderr
    assert os.path.isdir(path + ".d/planted")


def test_a_session_moved_with_its_sidecar_is_recorded_under_its_new_name(workdir):
    a, b, state = str(workdir / "a.jsonl"), str(workdir / "b.jsonl"), workdir / "state"
    original = bound(a, state, *POLICY)
    os.rename(a, b)
    os.rename(a + ".d", b + ".d")
    ok("send", b, "again", "--wait", env=state_env(state))
    wait_for(lambda: not runtime_pids(b), what="idle exit")
    os.unlink(b + ".d/binding.json")
    assert b"restored" in ok("rebind", b, env=state_env(state)).stderr  # no --accept: it is this name's record
    assert binding_of(b) == original


def test_a_new_file_given_a_deleted_files_inode_number_is_judged_by_its_paths_record(workdir):
    path, state = str(workdir / "s.jsonl"), workdir / "state"
    binding = bound(path, state, *POLICY)
    os.unlink(path)
    open(path, "w").close()
    st = os.stat(path)  # the record a deleted session left under the inode number this new file got
    stale = {"path": str(workdir / "gone.jsonl"), "dev": st.st_dev, "ino": st.st_ino, "generation": 3,
             "binding": dict(binding, mode="full")}
    fd = os.open(str(state / "sessions" / ("inode-%d-%d.json" % (st.st_dev, st.st_ino))),
                 os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(stale, f)
    ok("send", path, "again", "--wait", env=state_env(state))
    assert [e["text"] for e in of_type(path, "accepted")] == ["again"] and binding_of(path) == binding
