"""Hooks: `send --on-request CMD` / `--on-result CMD` (docs/PROTOCOL-POLICY.md section 19), black-box through
the CLI with the mock adapter, with the recording hook of hookutil.py."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys

from cliutil import alive, cli_env, matching, ok, run, runtime_pids, wait_for, wait_matching, wait_results
from hookutil import gone, hook, raw_line, records, wait_records


def test_a_parked_request_runs_the_request_hook_with_its_line_env_and_cwd(efile, workdir):
    command, out = hook(workdir)
    project = workdir / "project"
    project.mkdir()
    ok("send", efile, "/permission ask me", "--adapter", "mock", "--cwd", str(project), "--on-request", command)
    record = wait_records(out, 1)[0]
    request = matching(efile, "request", request_id="req-1")[0]
    assert request["state"] == "pending"
    assert record["stdin"].encode("utf-8") == raw_line(efile, request["seq"])
    assert record["event"] == "request" and record["file"] == os.path.abspath(efile)
    assert record["cwd"] == os.path.realpath(str(project))
    assert record["argv"][1:] == [str(out), "ok"]  # the line is on stdin only: never in argv or the environment
    assert not any("ask me" in value for value in record["env"].values())
    assert record["env"]["HARNESSCTL_IDLE_TIMEOUT"] == "600"  # the environment of the send that started the runtime
    ok("reply", efile, "req-1", "allow")
    wait_results(efile, 1)
    assert len(records(out)) == 1  # the reply and the result run no request hook


def test_a_request_a_rule_answers_runs_no_request_hook(efile, workdir, project):
    command, out = hook(workdir)
    ok("send", efile, "/permission command:ls", "--adapter", "mock", "--cwd", project, "--mode", "ask",
       "--allow", "command:*", "--on-request", command, "--wait")
    assert matching(efile, "request", request_id="req-1", state="replied")
    ok("send", efile, "/permission ask me")  # parked: its hook is the first and only one
    record = wait_records(out, 1)[0]
    assert json.loads(record["stdin"])["request_id"] == "req-2"
    ok("reply", efile, "req-2", "deny")
    wait_results(efile, 2)
    assert len(records(out)) == 1


def test_every_result_runs_the_result_hook_with_its_line(efile, workdir, project):
    command, out = hook(workdir)
    ok("send", efile, "one", "--adapter", "mock", "--cwd", project, "--on-result", command, "--wait")
    ok("send", efile, "two", "--wait")
    ran = wait_records(out, 2)
    results = wait_results(efile, 2)
    assert sorted(r["stdin"].encode("utf-8") for r in ran) == sorted(raw_line(efile, e["seq"]) for e in results)
    assert {r["event"] for r in ran} == {"result"}


def test_a_cancelled_run_runs_the_result_hook(efile, workdir, project):
    command, out = hook(workdir)
    ok("send", efile, "/sleep 30", "--adapter", "mock", "--cwd", project, "--on-result", command)
    ok("cancel", efile)
    result = wait_results(efile, 1)[0]
    assert json.loads(wait_records(out, 1)[0]["stdin"]) == result and result["status"] == "cancelled"


def test_the_hooks_default_to_the_variables_for_a_new_file(efile, workdir, project):
    command, out = hook(workdir)
    env = cli_env(HARNESSCTL_ON_REQUEST=command, HARNESSCTL_ON_RESULT=command)
    ok("send", efile, "/permission ask me", "--adapter", "mock", "--cwd", project, env=env)
    assert wait_records(out, 1)[0]["event"] == "request"
    ok("reply", efile, "req-1", "allow")
    assert {r["event"] for r in wait_records(out, 2)} == {"request", "result"}
    binding = json.load(open(efile + ".d/binding.json"))
    assert binding["on_request"] == binding["on_result"]
    assert shlex.split(binding["on_result"])[2:] == shlex.split(command)[2:]


def test_a_hook_that_hangs_is_killed_with_its_process_group_and_logged(efile, workdir, project):
    command, out = hook(workdir, "hang")
    env = cli_env(HARNESSCTL_HOOK_TIMEOUT="1")
    ok("send", efile, "/permission ask me", "--adapter", "mock", "--cwd", project, "--on-request", command, env=env)
    ok("reply", efile, "req-1", "allow")
    assert wait_results(efile, 1)[0]["status"] == "completed"
    note = wait_matching(efile, "log", kind="diagnostic", hook="on_request")[0]
    assert note["level"] == "warning" and note["request_id"] == "req-1" and note["timeout"] == 1
    assert "--on-request hook for request req-1" in note["message"] and "killed after 1 s" in note["message"]
    assert "its stderr went to %s.d/runtime.log" % os.path.realpath(efile) in note["message"]
    assert note["event_seq"] == matching(efile, "request", request_id="req-1", state="pending")[0]["seq"]
    gone(out)  # the hook and the child in its process group
    ok("send", efile, "again", "--wait")  # the session goes on


def test_a_hanging_hook_does_not_delay_the_run_or_its_result(efile, workdir, project):
    command, out = hook(workdir, "hang")
    ok("send", efile, "/permission ask me", "--adapter", "mock", "--cwd", project, "--on-request", command,
       "--on-result", command, env=cli_env(HARNESSCTL_HOOK_TIMEOUT="600"))
    first = wait_records(out, 1)[0]
    ok("reply", efile, "req-1", "allow")
    assert wait_results(efile, 1)[0]["status"] == "completed"
    ok("send", efile, "more", "--wait")
    assert alive(first["pid"])  # both results came while the first hook still runs
    wait_records(out, 3)


def test_a_hook_that_fails_is_logged_with_its_exit_code(efile, workdir, project):
    command, out = hook(workdir, "fail")
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--on-result", command, "--wait")
    note = wait_matching(efile, "log", kind="diagnostic", hook="on_result")[0]
    result = matching(efile, "result")[0]
    assert note["exit_code"] == 3 and note["run_id"] == result["run_id"] and note["event_seq"] == result["seq"]
    assert "--on-result hook for the completed result of run %s" % result["run_id"] in note["message"]
    assert "exited with code 3" in note["message"]


def test_a_failing_hooks_diagnostic_names_the_runtime_log_that_holds_its_stderr(efile, workdir, project):
    command = "%s -c %s" % (shlex.quote(sys.executable), shlex.quote("import sys; sys.exit('hook says no')"))
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--on-result", command, "--wait")
    note = wait_matching(efile, "log", kind="diagnostic", hook="on_result")[0]
    runtime_log = os.path.realpath(efile) + ".d/runtime.log"
    assert note["message"].endswith("exited with code 1; its stderr went to %s" % runtime_log), note["message"]
    assert b"hook says no" in open(runtime_log, "rb").read()


def test_a_hook_that_succeeds_leaves_no_line_in_the_file(efile, workdir, project):
    command, out = hook(workdir)
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--on-result", command, "--wait")
    wait_records(out, 1)
    wait_for(lambda: b"succeeded" in open(efile + ".d/runtime.log", "rb").read(), what="the runtime log's note")
    assert not matching(efile, "log", kind="diagnostic")


def test_a_hook_program_removed_after_the_first_send_is_logged(efile, workdir, project):
    gone_later = program(workdir / "bin", "gone-later", "cat >/dev/null")
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--on-result", gone_later + " --flag", "--wait")
    wait_for(lambda: b"succeeded" in open(efile + ".d/runtime.log", "rb").read(), what="the first hook's end")
    os.unlink(gone_later)  # not before: the shell may not have read it yet
    ok("send", efile, "again", "--wait")
    note = wait_matching(efile, "log", kind="diagnostic", hook="on_result")[0]
    assert "could not be started" in note["message"] and gone_later in note["message"]
    assert note["message"].endswith("(see %s.d/runtime.log)" % os.path.realpath(efile)), note["message"]
    ok("send", efile, "third", "--wait")


def test_a_hook_program_that_does_not_exist_is_refused_by_the_first_send(efile, workdir, project):
    proc = run("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--on-result",
               str(workdir / "no-such-hook") + " --flag")
    assert proc.returncode == 2 and b"is not a file" in proc.stderr and proc.stderr.count(b"\n") == 1
    assert not os.path.exists(efile)


def test_at_most_four_hooks_run_at_once_and_the_others_wait(efile, workdir, project):
    command, out = hook(workdir, "release")
    ok("send", efile, "0", "--adapter", "mock", "--cwd", project, "--on-result", command, "--wait")
    for n in range(1, 6):
        ok("send", efile, str(n), "--wait")
    assert len(wait_records(out, 4)) == 4
    released = set()

    def all_ended():
        for record in records(out):  # let go of every hook running, so the waiting ones start
            if record["pid"] not in released:
                (out / ("release-%d" % record["pid"])).write_text("")
                released.add(record["pid"])
        return len([n for n in os.listdir(str(out)) if n.startswith("end-")]) == 6
    wait_for(all_ended, 60, "six hooks ended")
    spans = [(r["start"], float((out / ("end-%d" % r["pid"])).read_text())) for r in records(out)]
    most = max(sum(1 for s, e in spans if s <= t <= e) for t, _ in spans)
    assert most <= 4, spans
    assert len({json.loads(r["stdin"])["seq"] for r in records(out)}) == 6


def test_an_idle_exit_waits_for_the_running_hooks(efile, workdir, project):
    command, out = hook(workdir, "release")
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--on-result", command, "--wait",
       env=cli_env(HARNESSCTL_IDLE_TIMEOUT="0.2"))
    record = wait_records(out, 1)[0]
    assert runtime_pids(efile)  # the hook keeps it: it would have idled out
    (out / ("release-%d" % record["pid"])).write_text("")
    wait_for(lambda: not runtime_pids(efile), what="the idle exit")
    assert os.path.exists(str(out / ("end-%d" % record["pid"])))


def test_a_binding_edited_to_add_a_hook_is_refused_and_the_hook_never_runs(efile, workdir, project):
    command, out = hook(workdir)
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--wait", env=cli_env(HARNESSCTL_IDLE_TIMEOUT="0.3"))
    wait_for(lambda: not runtime_pids(efile), what="idle exit")
    binding = json.load(open(efile + ".d/binding.json"))
    with open(efile + ".d/binding.json", "w") as f:
        json.dump(dict(binding, on_request=command, on_result=command), f)
    proc = run("send", efile, "/permission ask me", "--wait")
    assert proc.returncode == 2 and b"harnessctl has no record of it" in proc.stderr, proc.stderr
    assert run("status", efile).returncode == 2
    assert records(out) == []


def test_a_later_send_cannot_change_or_add_a_hook(efile, workdir, project):
    command, _ = hook(workdir)
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--wait")
    proc = run("send", efile, "again", "--on-result", command)
    assert proc.returncode == 2 and b"on_result is bound" in proc.stderr


def test_send_help_lists_the_hooks_and_their_knobs():
    text = ok("send", "--help").stdout.decode()
    for part in ("--on-request CMD", "--on-result CMD", "HARNESSCTL_HOOK_TIMEOUT (30 s)", "HARNESSCTL_ON_REQUEST",
                 "HARNESSCTL_ON_RESULT"):
        assert part in text, part


def test_sigterm_kills_the_running_hooks_and_the_results_it_writes_run_none(efile, workdir, project):
    command, out = hook(workdir, "hang")
    ok("send", efile, "/permission ask me", "--adapter", "mock", "--cwd", project, "--on-request", command,
       "--on-result", command, env=cli_env(HARNESSCTL_HOOK_TIMEOUT="600"))
    wait_records(out, 1)
    (pid,) = runtime_pids(efile)
    os.kill(pid, signal.SIGTERM)
    assert wait_results(efile, 1)[0]["status"] == "failed"
    gone(out)
    wait_for(lambda: not runtime_pids(efile), what="the runtime's exit")
    assert len(records(out)) == 1 and not matching(efile, "log", kind="diagnostic")


def test_a_hook_timeout_that_is_not_a_number_is_refused_by_the_send(efile, workdir, project):
    command, _ = hook(workdir)
    proc = run("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--on-result", command,
               env=cli_env(HARNESSCTL_HOOK_TIMEOUT="soon"))
    assert proc.returncode == 2 and b"HARNESSCTL_HOOK_TIMEOUT" in proc.stderr


def test_a_run_the_harness_ends_by_crashing_runs_the_result_hook(efile, workdir, project):
    command, out = hook(workdir)
    ok("send", efile, "/crash", "--adapter", "mock", "--cwd", project, "--on-result", command)
    result = wait_results(efile, 1)[0]
    assert result["status"] == "failed"
    record = wait_records(out, 1)[0]
    assert record["stdin"].encode("utf-8") == raw_line(efile, result["seq"]) and record["event"] == "result"


def test_hooks_beyond_four_running_and_sixty_four_waiting_are_dropped_with_a_diagnostic(tmp_path):
    """The queue's bound, on the Hooks object itself (69 runs through the CLI would take long)."""
    from harnessctl.runtime import hookrunner

    binding = {"on_result": "%s -c 'import time; time.sleep(600)'" % sys.executable, "cwd": str(tmp_path)}
    env = dict(os.environ, HARNESSCTL_HOOK_TIMEOUT="600")
    addr = type("Addr", (), {"path": str(tmp_path / "events.jsonl")})
    log_fd = os.open(os.devnull, os.O_WRONLY)
    loop = type("Loop", (), {"post": staticmethod(lambda job: None)})
    dropped = []  # the diagnostics' fields
    runner = hookrunner.Hooks(binding, env, addr, log_fd, loop,
                              lambda message, **f: dropped.append(dict(f, message=message)), lambda text: None)
    runner.arm()
    try:
        results = [{"type": "result", "seq": n, "run_id": "run-%d" % n, "status": "completed"} for n in range(70)]
        runner.written(results)
        assert runner.busy() and len(runner._queue) == 64
        assert [(f["hook"], f["event_seq"], f["run_id"]) for f in dropped] == [
            ("on_result", 68, "run-68"), ("on_result", 69, "run-69")]
        assert "dropped: 4 hooks are running and 64 waiting" in dropped[0]["message"]
        wait_for(lambda: len(runner._children) == 4, what="four hooks running")
    finally:
        runner.stop()
        os.close(log_fd)
    assert not runner._queue


def test_a_binding_edited_under_a_live_runtime_to_add_a_hook_never_runs_it(efile, workdir, project):
    command, out = hook(workdir)
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--wait", env=cli_env(HARNESSCTL_IDLE_TIMEOUT="1"))
    binding = json.load(open(efile + ".d/binding.json"))
    with open(efile + ".d/binding.json", "w") as f:
        json.dump(dict(binding, on_result=command), f)
    # a live runtime goes on with the binding it read, which has no hook (0); a new one refuses it (2)
    assert run("send", efile, "again", "--wait").returncode in (0, 2)
    wait_for(lambda: not runtime_pids(efile), what="idle exit")
    proc = run("send", efile, "third", "--wait")  # a new runtime would read it: refused
    assert proc.returncode == 2 and b"harnessctl has no record of it" in proc.stderr, proc.stderr
    assert records(out) == []


# -- hooks outside the agent's reach ------------------------------------------------------


def program(folder, name, body):
    """An executable shell script `name` in `folder`: its path."""
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n%s\n" % body)
    path.chmod(0o755)
    return str(path)


def test_a_hook_program_inside_the_cwd_is_refused_with_exit_2(efile, workdir):
    project = workdir / "project"
    program(project, "notify.sh", "cat >/dev/null")
    proc = run("send", efile, "hi", "--adapter", "mock", "--on-result", "./notify.sh", cwd=str(project))
    assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1, proc.stderr
    assert b"notify.sh lies inside the bound cwd" in proc.stderr and b"the agent can rewrite it" in proc.stderr
    assert not os.path.exists(efile)


def test_a_hook_program_outside_the_cwd_is_recorded_absolute_and_runs(efile, workdir):
    project = workdir / "project"
    project.mkdir()
    path = program(workdir / "bin", "notify", 'cat > "$1"')
    got = workdir / "got.json"
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", str(project), "--on-result", "bin/notify %s" % got,
       "--wait", cwd=str(workdir))
    binding = json.load(open(efile + ".d/binding.json"))
    assert binding["on_result"] == "%s %s" % (os.path.realpath(path), got)
    wait_for(lambda: got.exists() and got.read_text().endswith("\n"), what="the hook's output")
    assert json.loads(got.read_text())["type"] == "result"


def test_an_interpreters_script_inside_the_cwd_is_refused(efile, workdir):
    project = workdir / "project"
    project.mkdir()
    (project / "hook.py").write_text("import sys; sys.stdin.read()\n")
    proc = run("send", efile, "hi", "--adapter", "mock", "--on-result", "python3 hook.py", cwd=str(project))
    assert proc.returncode == 2 and b"script" in proc.stderr and b"hook.py lies inside the bound cwd" in proc.stderr
    assert not os.path.exists(efile)


def test_an_interpreters_script_outside_the_cwd_is_recorded_absolute(efile, workdir):
    project = workdir / "project"
    project.mkdir()
    (workdir / "hook.py").write_text("import sys; sys.stdin.read()\n")
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", str(project), "--on-result", "python3 -u hook.py x",
       cwd=str(workdir))
    words = shlex.split(json.load(open(efile + ".d/binding.json"))["on_result"])
    assert os.path.isabs(words[0]) and os.path.basename(words[0]) == "python3"
    assert words[1:] == ["-u", os.path.realpath(str(workdir / "hook.py")), "x"]


def test_a_hook_program_found_on_path_is_recorded_absolute(efile, workdir, project):
    path = program(workdir / "bin", "my-notify", "cat >/dev/null")
    env = cli_env(PATH="%s:%s" % (workdir / "bin", os.environ["PATH"]))
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--on-result", "my-notify --quiet", env=env)
    assert json.load(open(efile + ".d/binding.json"))["on_result"] == os.path.realpath(path) + " --quiet"


def test_a_symlink_in_the_cwd_to_a_program_outside_is_refused(efile, workdir):
    project = workdir / "project"
    project.mkdir()
    os.symlink(program(workdir / "bin", "notify", "cat >/dev/null"), str(project / "notify"))
    proc = run("send", efile, "hi", "--adapter", "mock", "--on-result", "./notify", cwd=str(project))
    assert proc.returncode == 2 and b"inside the bound cwd" in proc.stderr  # the agent could point it elsewhere


def test_a_hook_from_the_variable_inside_the_cwd_is_refused(efile, workdir):
    project = workdir / "project"
    path = program(project, "notify.sh", "cat >/dev/null")
    proc = run("send", efile, "hi", "--adapter", "mock", "--cwd", str(project),
               env=cli_env(HARNESSCTL_ON_RESULT=path))
    assert proc.returncode == 2 and b"HARNESSCTL_ON_RESULT: refusing the hook" in proc.stderr


def test_status_shows_that_a_hook_is_bound_never_its_command_line(efile, workdir, project):
    secret = "sh -c 'cat >/dev/null' -- 'Authorization: Bearer s3cret'"
    ok("send", efile, "hi", "--adapter", "mock", "--cwd", project, "--on-result", secret, "--wait",
       env=cli_env(HARNESSCTL_IDLE_TIMEOUT="0.3"))
    line = ok("status", efile).stdout
    assert json.loads(line)["on_result"] is True and "on_request" not in json.loads(line)
    assert b"s3cret" not in line
    wait_for(lambda: not runtime_pids(efile), what="idle exit")
    stopped = ok("status", efile).stdout  # from the snapshot
    assert json.loads(stopped)["on_result"] is True and b"s3cret" not in stopped
    refused = run("send", efile, "again", "--on-result", "sh -c 'echo other'")
    assert refused.returncode == 2 and b"on_result is bound" in refused.stderr and b"s3cret" not in refused.stderr
