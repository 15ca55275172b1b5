"""`harnessctl fork FILE NEWFILE [--cwd DIR]` over the mock (issue 36, item 3):
NEWFILE continues FILE's conversation (the stand-in's `/history` says what
its conversation holds), FILE never sees NEWFILE's turns and is never
written, and every refusal comes before anything is made."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

from cliutil import ROOT, bind, cli_env, events, ok, run, runtime_pids, status, wait_for

FAKE = os.path.join(ROOT, "tests", "support", "acp_support", "fake_agent.py")


def sent(path: str, text: str, *flags: str, env=None) -> dict:
    """Send and wait: the result line."""
    return json.loads(ok("send", path, text, "--wait", *flags, env=env).stdout)


def history(path: str, env=None) -> list:
    """What the stand-in's conversation holds at its next run: every earlier input."""
    output = sent(path, "/history", env=env)["output"]
    assert output.startswith("history: "), output
    return json.loads(output[len("history: "):])


def session(workdir, name: str = "a.jsonl", env=None) -> str:
    """A mock session with one finished run ("first words"), in its own cwd."""
    path, project = str(workdir / name), workdir / "project"
    project.mkdir(exist_ok=True)
    sent(path, "first words", "--adapter", "mock", "--cwd", str(project), env=env)
    return path


def sidecar(path: str) -> dict:
    """Every file of the sidecar (but its socket), by name: its bytes."""
    found = {}
    for name in sorted(os.listdir(path + ".d")):
        full = os.path.join(path + ".d", name)
        if os.path.isfile(full):
            with open(full, "rb") as f:
                found[name] = f.read()
    return found


def test_the_forked_files_next_run_holds_the_conversation_of_its_source(workdir):
    source = session(workdir)
    new = str(workdir / "b.jsonl")
    ok("fork", source, new)
    assert history(new) == ["first words"]


def test_the_sources_next_run_does_not_hold_the_forks_turns(workdir):
    source = session(workdir)
    new = str(workdir / "b.jsonl")
    ok("fork", source, new)
    sent(new, "only in the fork")
    assert history(source) == ["first words"]
    assert history(new) == ["first words", "only in the fork"]


def test_after_its_first_run_the_fork_resumes_its_own_conversation_not_the_fork_file(workdir):
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="0.3")
    source, new = session(workdir, env=env), str(workdir / "b.jsonl")
    ok("fork", source, new, env=env)
    sent(new, "only in the fork", env=env)
    wait_for(lambda: not runtime_pids(new), what="the idle exit")
    assert history(new, env) == ["first words", "only in the fork"]


def test_fork_prints_one_line_with_the_new_file_its_source_and_the_seq(workdir):
    source = session(workdir)
    new = str(workdir / "b.jsonl")
    proc = ok("fork", source, new)
    assert json.loads(proc.stdout) == {"file": new, "forked_from": source, "seq": events(source)[-1]["seq"]}
    assert proc.stdout.count(b"\n") == 1 and proc.stderr == b""


def test_the_first_line_of_the_fork_says_from_which_file_and_seq(workdir):
    source = session(workdir)
    new = str(workdir / "b.jsonl")
    last = events(source)[-1]["seq"]
    ok("fork", source, new)
    first = events(new)[0]
    assert (first["type"], first["seq"], first["level"], first["kind"]) == ("log", 1, "info", "forked")
    assert (first["from"], first["from_seq"], first["inputs"]) == (os.path.realpath(source), last, 1)
    assert (status(new)["state"], status(new)["runtime"]) == ("idle", "stopped")  # no runtime until its first send


def test_a_fork_whose_source_took_an_input_before_the_forks_first_send_is_refused_not_widened(workdir):
    source = session(workdir)
    new = str(workdir / "b.jsonl")
    ok("fork", source, new)
    sent(source, "after the fork")
    proc = run("send", new, "too late")
    assert proc.returncode == 5 and b"took 1 input(s) since" in proc.stderr
    assert history(source) == ["first words", "after the fork"]


def test_a_fork_that_ran_once_goes_on_whatever_its_source_does(workdir):
    source = session(workdir)
    new = str(workdir / "b.jsonl")
    ok("fork", source, new)
    sent(new, "in the fork")
    sent(source, "in the source")
    assert history(new) == ["first words", "in the fork"]


def test_the_source_and_its_sidecar_are_not_written(workdir):
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="0.3")
    source = session(workdir, env=env)
    wait_for(lambda: not runtime_pids(source), what="the idle exit")
    with open(source, "rb") as f:
        before, files = f.read(), sidecar(source)
    ok("fork", source, str(workdir / "b.jsonl"), env=env)
    with open(source, "rb") as f:
        assert f.read() == before
    assert sidecar(source) == files and "mock-transcript.jsonl" in files


def test_the_fork_is_bound_to_another_cwd_a_git_worktree(workdir):
    repo, tree = workdir / "repo", workdir / "tree"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q", str(repo)], check=True)
    subprocess.run(git + ["-C", str(repo), "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    subprocess.run(git + ["-C", str(repo), "worktree", "add", "-q", str(tree)], check=True)
    source = str(workdir / "a.jsonl")
    sent(source, "first words", "--adapter", "mock", "--cwd", str(repo))
    new = str(workdir / "b.jsonl")
    ok("fork", source, new, "--cwd", str(tree))
    assert status(new)["cwd"] == os.path.realpath(str(tree)) and status(source)["cwd"] == os.path.realpath(str(repo))
    assert history(new) == ["first words"]


def test_a_fork_inside_its_cwd_gets_the_warning_a_first_send_gets(workdir):
    source = session(workdir)
    proc = ok("fork", source, str(workdir / "project" / "b.jsonl"))
    assert b"warning" in proc.stderr and b"lies inside the working directory" in proc.stderr, proc.stderr


def test_a_hook_that_lies_inside_the_new_cwd_is_refused_with_exit_2(workdir):
    other = workdir / "other"
    other.mkdir()
    hook = other / "hook.sh"
    hook.write_text("#!/bin/sh\ncat >/dev/null\n")
    hook.chmod(0o755)
    source = str(workdir / "a.jsonl")
    (workdir / "project").mkdir()
    sent(source, "hi", "--adapter", "mock", "--cwd", str(workdir / "project"), "--on-result", str(hook))
    new = str(workdir / "b.jsonl")
    proc = run("fork", source, new, "--cwd", str(other))
    assert proc.returncode == 2 and b"refusing the hook" in proc.stderr, proc.stderr
    assert not os.path.lexists(new) and not os.path.lexists(new + ".d")


def test_a_forked_file_is_bound_a_send_with_another_binding_exits_2(workdir):
    source = session(workdir)
    new = str(workdir / "b.jsonl")
    ok("fork", source, new)
    proc = run("send", new, "hi", "--model", "another")
    assert proc.returncode == 2 and b"model is bound" in proc.stderr, proc.stderr


def test_a_new_file_that_exists_exits_2_and_stays_as_it_was(workdir):
    source = session(workdir)
    new = workdir / "b.jsonl"
    new.write_bytes(b"")
    proc = run("fork", source, str(new))
    assert proc.returncode == 2 and b"exists" in proc.stderr and proc.stderr.count(b"\n") == 1, proc.stderr
    assert new.read_bytes() == b"" and not os.path.exists(str(new) + ".d")


def test_a_new_file_that_is_bound_exits_2(workdir):
    source, other = session(workdir), session(workdir, "other.jsonl")
    os.unlink(other)
    proc = run("fork", source, other)
    assert proc.returncode == 2 and b"exists" in proc.stderr, proc.stderr


def test_an_adapter_that_does_not_claim_fork_exits_2_before_anything_is_written(workdir):
    source, project = str(workdir / "a.jsonl"), workdir / "project"
    project.mkdir()
    env = cli_env(FAKE_ACP_HOME=str(workdir / "sessions"))
    ok("send", source, "hi", "--adapter", "acp", "--agent", shlex.quote(FAKE), "--cwd", str(project), "--wait",
       env=env)
    new = str(workdir / "b.jsonl")
    proc = run("fork", source, new, env=env)
    assert proc.returncode == 2 and b"cannot fork" in proc.stderr and proc.stderr.count(b"\n") == 1, proc.stderr
    assert not os.path.lexists(new) and not os.path.lexists(new + ".d")


def test_a_busy_file_exits_3(workdir):
    source = session(workdir)
    ok("send", source, "/sleep 30")
    wait_for(lambda: status(source)["state"] == "running", what="the run")
    new = str(workdir / "b.jsonl")
    proc = run("fork", source, new)
    assert proc.returncode == 3 and b"has a run going" in proc.stderr, proc.stderr
    assert not os.path.lexists(new) and not os.path.lexists(new + ".d")
    ok("cancel", source)


def test_a_file_whose_request_waits_for_a_reply_exits_3(workdir):
    source = session(workdir)
    assert run("send", source, "/permission may I?", "--wait").returncode == 9
    proc = run("fork", source, str(workdir / "b.jsonl"))
    assert proc.returncode == 3 and b"waiting for a reply" in proc.stderr, proc.stderr


def test_a_file_never_sent_exits_3(workdir):
    source = str(workdir / "a.jsonl")
    with open(source, "w") as f:  # what a first send that failed before its agent started leaves
        f.write('{"type":"log","ts":"2026-12-05T10:00:00.000Z","seq":1,"level":"warning","kind":"diagnostic",'
                '"message":"the agent did not start"}\n')
    bind(source, {"adapter": "mock", "cwd": str(workdir), "model": None})
    proc = run("fork", source, str(workdir / "b.jsonl"))
    assert proc.returncode == 3 and b"no conversation to fork yet" in proc.stderr, proc.stderr


def test_a_file_without_a_binding_exits_3(workdir):
    source = str(workdir / "a.jsonl")
    with open(source, "w") as f:
        f.write('{"type":"log","ts":"2026-12-05T10:00:00.000Z","seq":1,"level":"info","kind":"diagnostic",'
                '"message":"made by hand"}\n')
    proc = run("fork", source, str(workdir / "b.jsonl"))
    assert proc.returncode == 3 and b"no conversation to fork" in proc.stderr, proc.stderr


def test_a_file_whose_harness_never_kept_a_conversation_exits_3(workdir):
    env = cli_env(HARNESSCTL_IDLE_TIMEOUT="0.3")
    source = session(workdir, env=env)
    wait_for(lambda: not runtime_pids(source), what="the idle exit")
    os.unlink(source + ".d/mock-transcript.jsonl")
    proc = run("fork", source, str(workdir / "b.jsonl"))
    assert proc.returncode == 3 and b"no run ever started" in proc.stderr, proc.stderr


def test_a_missing_file_exits_4(workdir):
    proc = run("fork", str(workdir / "none.jsonl"), str(workdir / "b.jsonl"))
    assert proc.returncode == 4, proc.stderr


def test_fork_help_gives_the_synopsis_and_the_exit_codes_in_order():
    text = ok("fork", "--help").stdout.decode()
    assert text.startswith("usage: harnessctl fork   FILE NEWFILE [--cwd DIR | --worktree]")
    codes = [int(line.split()[0]) for line in text.split("exit codes:\n", 1)[1].splitlines()]
    assert codes == [0, 1, 2, 3, 4, 6]
