"""`status FILE...` and `wait --any FILE...`: many sessions at once
(docs/PROTOCOL-COMMANDS.md sections 7 and 9), black-box through the CLI with the mock
adapter."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

from cliutil import cli_env, of_type, ok, run, runtime_pids, start, wait_for

M = ("--adapter", "mock")


def lines(proc):
    return [json.loads(line) for line in proc.stdout.decode().splitlines()]


def idle(path):
    ok("send", path, "hello", "--wait", *M)
    return path


def running(path):
    ok("send", path, "/sleep 60\nwork", *M)
    return path


def stopped(path):
    """A session whose runtime exited (idle timeout)."""
    ok("send", path, "hello", "--wait", *M, env=cli_env(HARNESSCTL_IDLE_TIMEOUT="0.2"))
    wait_for(lambda: not runtime_pids(path), 30, "the idle exit of %s" % path)
    return path


def sockets(pid):
    """How many sockets the process holds open."""
    count = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            count += os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:")
        except OSError:
            pass
    return count


def watching(proc, count):
    """Wait until `wait --any` holds a watch on `count` runtimes; it is still waiting then."""
    wait_for(lambda: proc.poll() is not None or sockets(proc.pid) >= count, 30, "the watches")
    assert proc.poll() is None, proc.communicate()


# -- status FILE... -------------------------------------------------------------


def test_status_prints_one_line_per_file_in_the_order_given_each_with_its_file(workdir):
    a, b = idle(str(workdir / "a.jsonl")), running(str(workdir / "b.jsonl"))
    proc = ok("status", b, a)
    assert [(line["file"], line["state"]) for line in lines(proc)] == [(b, "running"), (a, "idle")]
    assert proc.stderr == b""


def test_file_is_the_first_key_and_the_path_exactly_as_given(workdir):
    idle(str(workdir / "a.jsonl"))
    proc = ok("status", "./a.jsonl", "a.jsonl", cwd=str(workdir))
    assert [list(line)[0] for line in lines(proc)] == ["file", "file"]
    assert [line["file"] for line in lines(proc)] == ["./a.jsonl", "a.jsonl"]


def test_the_single_file_status_line_has_file_first_too(workdir):
    path = idle(str(workdir / "a.jsonl"))
    (line,) = lines(ok("status", path))
    assert list(line)[:2] == ["file", "state"] and line["file"] == path and line["state"] == "idle"


def test_a_missing_and_a_non_event_file_among_good_ones_are_error_lines_and_the_exit_is_the_highest(workdir):
    a = idle(str(workdir / "a.jsonl"))
    missing, text = str(workdir / "missing.jsonl"), str(workdir / "notes.txt")
    with open(text, "w") as f:
        f.write("not an event\n")
    proc = run("status", text, a, missing)
    assert proc.returncode == 4 and proc.stderr == b""
    first, good, last = lines(proc)
    assert first == {"file": text, "exit_code": 2, "error": "not a harnessctl event file (left untouched): %s" % text}
    assert good["file"] == a and good["state"] == "idle"
    assert last == {"file": missing, "exit_code": 4, "error": "no such event file: %s (a send creates it)" % missing}


def test_only_non_event_files_exit_2(workdir):
    text = str(workdir / "notes.txt")
    with open(text, "w") as f:
        f.write("not an event\n")
    proc = run("status", text, text)
    assert proc.returncode == 2 and [line["exit_code"] for line in lines(proc)] == [2, 2]


def test_one_bad_file_alone_keeps_the_one_line_error_on_stderr_and_nothing_on_stdout(workdir):
    missing = str(workdir / "missing.jsonl")
    proc = run("status", missing)
    assert (proc.returncode, proc.stdout) == (4, b"")
    assert proc.stderr == b"harnessctl: no such event file: %s (a send creates it)\n" % missing.encode()


def test_a_glob_of_many_stopped_sessions_gives_a_line_each_in_glob_order(workdir):
    names = ["s%02d.jsonl" % i for i in range(12)]
    for name in names:
        stopped(str(workdir / name))
    # through bash on purpose: the shell expands the glob, as a user's would
    proc = subprocess.run(["bash", "-c", '"$0" -m harnessctl status *.jsonl', sys.executable], cwd=str(workdir),
                          env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [(line["file"], line["state"], line["runtime"]) for line in lines(proc)] == [
        (name, "idle", "stopped") for name in names]


def test_a_path_that_is_not_utf8_still_gives_valid_json(workdir):
    path = os.path.join(os.fsencode(str(workdir)), b"caf\xe9.jsonl")
    good = idle(str(workdir / "a.jsonl"))
    proc = run("status", path, good.encode())
    assert proc.returncode == 4, proc.stderr
    bad, fine = [json.loads(line.decode("utf-8")) for line in proc.stdout.splitlines()]
    assert os.fsencode(bad["file"]) == path and bad["exit_code"] == 4
    assert fine["file"] == good


def test_a_path_with_control_characters_is_escaped_in_the_json(workdir):
    hostile = str(workdir / "events\x1b]52;c;aGk=\x07\u202e.jsonl")
    proc = run("status", hostile, idle(str(workdir / "a.jsonl")))
    out = proc.stdout.decode()
    assert proc.returncode == 4 and "\x1b" not in out and "\u202e" not in out
    assert lines(proc)[0]["file"] == hostile


# -- wait --any FILE... -----------------------------------------------------------


def test_wait_any_returns_at_once_the_first_in_order_of_those_idle_already(workdir):
    a, b = idle(str(workdir / "a.jsonl")), running(str(workdir / "b.jsonl"))
    c = idle(str(workdir / "c.jsonl"))
    proc = ok("wait", "--any", b, c, a)
    (line,) = lines(proc)
    assert list(line)[0] == "file" and line["file"] == c and line["state"] == "idle"


def test_wait_any_answers_a_session_without_runtime_from_the_file(workdir):
    busy, quiet = running(str(workdir / "busy.jsonl")), stopped(str(workdir / "quiet.jsonl"))
    (line,) = lines(ok("wait", "--any", busy, quiet))
    assert (line["file"], line["state"], line["runtime"]) == (quiet, "idle", "stopped")


def test_wait_any_blocks_while_all_run_and_returns_the_one_that_finished(workdir):
    a, b = running(str(workdir / "a.jsonl")), running(str(workdir / "b.jsonl"))
    waiting = start("wait", "--any", a, b)
    watching(waiting, 2)
    ok("cancel", b)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    (line,) = [json.loads(x) for x in out.decode().splitlines()]
    assert (line["file"], line["state"]) == (b, "idle")


def test_wait_any_counts_a_pending_request_as_needing_attention(workdir):
    """b's run works a second, then asks: whether the wait starts before or after, it returns b."""
    a, b = running(str(workdir / "a.jsonl")), str(workdir / "b.jsonl")
    ok("send", b, "/sleep 1\n/permission may I?", *M)
    waiting = start("wait", "--any", a, b)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    line = json.loads(out)
    assert (line["file"], line["state"]) == (b, "awaiting_reply")
    assert [r["message"] for r in line["requests"]] == ["may I?"]


def test_wait_any_looks_again_when_a_watched_runtime_dies(workdir):
    a, b = running(str(workdir / "a.jsonl")), running(str(workdir / "b.jsonl"))
    waiting = start("wait", "--any", a, b)
    watching(waiting, 2)
    for pid in runtime_pids(a):
        os.kill(pid, signal.SIGKILL)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    line = json.loads(out)
    assert (line["file"], line["state"], line["runtime"]) == (a, "failed", "stopped")  # the lost-runtime rule


def test_wait_any_answers_for_the_file_at_the_path_now_when_a_watched_one_is_replaced(workdir):
    """The watched runtime stops when its file is replaced, and says its own
    run failed: that is the old file's news, and the file at the path is idle."""
    a, earlier = idle(str(workdir / "a.jsonl")), str(workdir / "earlier.jsonl")
    shutil.copyfile(a, earlier)
    running(a)
    waiting = start("wait", "--any", a)
    watching(waiting, 1)
    os.replace(earlier, a)  # another file at that name, whose last run completed
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    line = json.loads(out)
    assert (line["file"], line["state"]) == (a, "idle"), line


def test_wait_any_on_a_file_removed_while_watched_exits_6_with_nothing_printed(workdir):
    a, b = running(str(workdir / "a.jsonl")), running(str(workdir / "b.jsonl"))
    waiting = start("wait", "--any", a, b)
    watching(waiting, 2)
    os.rename(a, str(workdir / "elsewhere.jsonl"))
    out, err = waiting.communicate(timeout=60)
    assert (waiting.returncode, out) == (6, b""), err
    assert len(err.splitlines()) == 1 and b"removed" in err


def test_wait_any_timeout_exits_10_with_nothing_printed(workdir):
    a, b = running(str(workdir / "a.jsonl")), running(str(workdir / "b.jsonl"))
    proc = run("wait", "--any", a, b, "--timeout", "0.3")
    assert (proc.returncode, proc.stdout, proc.stderr) == (10, b"", b"")


def test_wait_any_with_a_missing_file_exits_4_at_once_with_its_error(workdir):
    a, missing = running(str(workdir / "a.jsonl")), str(workdir / "typo.jsonl")
    proc = run("wait", "--any", a, missing, timeout=20)
    assert (proc.returncode, proc.stdout) == (4, b"")
    assert proc.stderr == b"harnessctl: no such event file: %s (a send creates it)\n" % missing.encode()


def test_wait_any_with_a_non_event_file_exits_2_at_once_even_after_an_idle_one(workdir):
    a, text = idle(str(workdir / "a.jsonl")), str(workdir / "notes.txt")
    with open(text, "w") as f:
        f.write("not an event\n")
    proc = run("wait", "--any", a, text, timeout=20)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert b"not a harnessctl event file" in proc.stderr


def test_wait_any_without_a_file_is_exit_2():
    proc = run("wait", "--any", "--timeout", "1")
    assert proc.returncode == 2 and b"wait --any: missing FILE" in proc.stderr


def test_wait_without_any_still_takes_file_and_input_id(workdir):
    path = str(workdir / "a.jsonl")
    input_id = ok("send", path, "hello", "--print-id", *M).stdout.decode().strip()
    proc = ok("wait", path, input_id)
    result = json.loads(proc.stdout)
    assert result["type"] == "result" and input_id in result["input_ids"] and "file" not in result
    assert of_type(path, "result")


def test_wait_without_an_input_id_prints_the_status_line_with_file_first_too(workdir):
    path = idle(str(workdir / "a.jsonl"))
    (line,) = lines(ok("wait", path))
    assert list(line)[:2] == ["file", "state"] and line["file"] == path


def test_wait_without_any_still_refuses_a_third_argument(workdir):
    path = idle(str(workdir / "a.jsonl"))
    proc = run("wait", path, "in-1", path)
    assert proc.returncode == 2 and b"wait takes 2 arguments" in proc.stderr
