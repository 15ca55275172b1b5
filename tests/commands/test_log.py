"""`harnessctl log`: the session as people read it (docs/PROTOCOL-COMMANDS.md section 16).

Black-box through the CLI: mostly on files the mock writes, plus hand-written
files for what no adapter writes on purpose (torn lines, unknown kinds, every
vocabulary kind at once)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading

import pytest
from cliutil import ROOT, cli_env, interruptible, of_type, ok, run, runtime_pids, start, wait_for, wait_results
from logutil import RUN, accepted, log, result, write_events


def mock_session(path, text, *flags):
    return run("send", path, text, "--adapter", "mock", "--wait", *flags)


# -- what a mock session shows ----------------------------------------------------------


def test_a_mock_run_shows_its_input_tools_file_change_plan_message_and_result(efile):
    mock_session(efile, "/tool ls -la\n/tool exit=2 false\n/edit src/a.py\n/plan x read | > fix | test\nhello")
    lines = log(efile).splitlines()
    assert lines[0].startswith(">>> input (start, run ") and lines[1] == "    /tool ls -la"
    assert "--- session: mock built in" in lines
    assert "  $ ls -la  ok (exit 0, 0 ms)" in lines
    assert "      mock output of: ls -la" in lines
    assert "  $ false  failed (exit 2, 0 ms)" in lines
    assert "    +1 -0 src/a.py (new)" in lines
    plan = lines.index("  plan")
    assert lines[plan + 1:plan + 4] == ["    [x] read", "    [>] fix", "    [ ] test"]
    assert lines[-3:-1] == ["<<< assistant", "    echo: hello"]
    assert lines[-1].startswith("=== result completed (run ")


def test_each_tool_is_one_line_whatever_lines_its_log_had(efile):
    mock_session(efile, "/tool make")
    text = log(efile)
    assert text.count("$ make") == 1 and "running" not in text


def test_streamed_deltas_of_a_message_that_exists_are_not_shown(efile):
    mock_session(efile, "/sleep 0.3\nhi")
    text = log(efile)
    assert "working" not in text and "echo: hi" in text


def test_a_mock_sleep_streams_one_working_delta_not_a_flood(efile):
    """`log` and the serve page show a cut-off run's streamed text: a /sleep fills it with one word."""
    assert mock_session(efile, "/sleep 1.5\nhi").returncode == 0
    streamed = "".join(e["text"] for e in of_type(efile, "log") if e["kind"] == "text.delta")
    assert streamed == "working… "


def test_a_run_cut_off_while_streaming_shows_its_streamed_text_marked_cut_off(efile):
    ok("send", efile, "/sleep 30", "--adapter", "mock")
    wait_for(lambda: "working" in open(efile).read(), what="a streamed delta")
    ok("cancel", efile)
    wait_results(efile, 1)
    text = log(efile)
    assert "<<< assistant (cut off: streamed text, no complete message)" in text
    assert "    working" in text and "=== result cancelled" in text


def test_a_pending_permission_shows_a_reply_command_per_option_that_works_as_printed(workdir):
    path = str(workdir / "my session.jsonl")
    assert mock_session(path, "/permission may I?").returncode == 9
    lines = log(path).splitlines()
    assert "??? req-1 permission: may I?  (pending: reply with)" in lines
    commands = [line.strip() for line in lines if line.strip().startswith("harnessctl reply")]
    assert commands == ["harnessctl reply '%s' req-1 allow" % path, "harnessctl reply '%s' req-1 deny" % path]
    ok(*shlex.split(commands[0])[1:])
    wait_results(path, 1)
    assert "??? req-1 permission: may I?  -> allow" in log(path).splitlines()


def test_a_pending_question_shows_its_reply_commands_plain_text_and_json(efile):
    assert mock_session(efile, "/question Which colour?").returncode == 9
    lines = log(efile).splitlines()
    assert "    q1: Which colour?" in lines
    commands = [line.strip() for line in lines if line.strip().startswith("harnessctl reply")]
    assert commands == ["harnessctl reply %s req-1 '...'" % efile,
                        "harnessctl reply %s req-1 '{\"q1\":\"...\"}'" % efile]


def test_the_plain_text_reply_log_suggests_for_one_question_works_as_printed(efile):
    assert mock_session(efile, "/question Which colour?").returncode == 9
    plain = [line.strip() for line in log(efile).splitlines() if line.strip().startswith("harnessctl reply")][0]
    ok(*shlex.split(plain.replace("'...'", "'dark red'"))[1:])
    wait_results(efile, 1)
    assert '??? req-1 question: Which colour?  -> {"q1": "dark red"}' in log(efile).splitlines()


def test_an_expired_request_is_marked_expired(efile):
    mock_session(efile, "/permission may I?")
    ok("cancel", efile)
    wait_results(efile, 1)
    assert "??? req-1 permission: may I?  (expired)" in log(efile).splitlines()


def test_a_failed_run_shows_its_error(efile):
    assert mock_session(efile, "/fail the disk is on fire").returncode == 7
    lines = log(efile).splitlines()
    assert lines[-2].startswith("=== result failed") and lines[-1] == "    the disk is on fire"


def test_log_works_after_the_runtime_is_gone_and_changes_nothing(efile):
    mock_session(efile, "hello")
    for pid in runtime_pids(efile):
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not runtime_pids(efile), what="the runtime gone")
    before = open(efile, "rb").read(), sorted(os.listdir(efile + ".d"))
    assert "echo: hello" in log(efile)
    assert runtime_pids(efile) == [] and (open(efile, "rb").read(), sorted(os.listdir(efile + ".d"))) == before


# -- every kind, hand-written -------------------------------------------------------------


def test_a_message_replaced_by_a_later_snapshot_is_shown_once_the_latest(efile):
    write_events(efile, accepted("go"),
                 {"type": "message", "run_id": RUN, "message_id": "m1", "role": "assistant", "text": "draft"},
                 {"type": "message", "run_id": RUN, "message_id": "m1", "role": "assistant", "text": "final"})
    text = log(efile)
    assert "final" in text and "draft" not in text and text.count("<<< assistant") == 1


def test_tool_output_is_folded_to_its_first_and_last_lines(efile):
    output = "".join("line %d\n" % i for i in range(1, 21))
    write_events(efile, {"kind": "tool.completed", "tool_id": "t1", "tool": "command", "name": "shell",
                         "title": "seq 20", "status": "completed", "exit_code": 0, "output": output,
                         "duration_ms": 1500})
    lines = log(efile).splitlines()
    assert lines[0] == "  $ seq 20  ok (exit 0, 1.5 s)"
    assert [x.strip() for x in lines[1:]] == ["line 1", "line 2", "line 3", "... 12 more lines ...", "line 16",
                                              "line 17", "line 18", "line 19", "line 20"]


def test_a_tool_started_without_completion_shows_as_running(efile):
    write_events(efile, {"kind": "tool.started", "tool_id": "t1", "tool": "web_search", "name": "search",
                         "title": "harnessctl docs", "input": {}})
    assert log(efile).splitlines() == ["  web harnessctl docs  ... running"]


def test_a_tool_still_running_when_its_run_ended_shows_as_ended_with_the_run(efile):
    """An ACP agent may leave a tool `running` (no tool.completed): once the run's result is written, the tool
    is no longer running, and how it ended is unknown."""
    write_events(efile, accepted("look it up"),
                 {"kind": "tool.started", "tool_id": "t1", "tool": "web_search", "name": "search",
                  "title": "harnessctl docs", "input": {}},
                 {"kind": "tool.output", "tool_id": "t1", "text": "half a page"},
                 result())
    lines = log(efile).splitlines()
    assert "  web harnessctl docs  ended with its run, outcome unknown" in lines and "      half a page" in lines
    assert not [line for line in lines if "running" in line]
    [tool] = [json.loads(line) for line in log(efile, "--json").splitlines() if '"entry":"tool"' in line]
    assert tool["status"] == "ended"


def test_a_tool_of_another_run_stays_running_when_one_run_ends(efile):
    write_events(efile, {"kind": "tool.started", "tool_id": "t1", "tool": "command", "title": "make"},
                 result(run_id="another-run"))
    assert "  $ make  ... running" in log(efile).splitlines()


def test_a_declined_tool_says_declined(efile):
    write_events(efile, {"kind": "tool.completed", "tool_id": "t1", "tool": "command", "name": "Bash",
                         "title": "rm -rf /", "status": "declined", "exit_code": None, "output": "",
                         "duration_ms": None})
    assert log(efile).splitlines() == ["  $ rm -rf /  declined"]


FILE_CHANGE = {"kind": "file.changed", "tool_id": "t1", "path": "old.py", "change": "move", "move_path": "new.py",
               "diff": "--- a/old.py\n+++ b/new.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n", "added": 1, "removed": 1}


def test_a_moved_file_shows_its_counts_and_both_paths(efile):
    write_events(efile, FILE_CHANGE)
    assert log(efile).splitlines() == ["    +1 -1 old.py -> new.py"]


def test_the_diff_is_shown_only_with_the_diff_flag(efile):
    write_events(efile, FILE_CHANGE)
    lines = log(efile, "--diff").splitlines()
    assert lines[1:] == ["      --- a/old.py", "      +++ b/new.py", "      @@ -1 +1 @@", "      -x = 1",
                         "      +x = 2"]


def test_reasoning_shows_its_first_line_and_redacted_thinking_is_withheld(efile):
    write_events(efile, {"kind": "reasoning.delta", "text": "Look at the tests first.\nThen ", "form": "summary"},
                 {"kind": "reasoning.delta", "text": "fix them.", "form": "summary"},
                 {"kind": "text.delta", "message_id": "m", "text": "x"},
                 {"kind": "reasoning.delta", "text": "", "form": "redacted"})
    lines = log(efile).splitlines()
    assert lines[0] == "  ~ Look at the tests first." and "  ~ (thinking withheld)" in lines
    assert not any("fix them" in line for line in lines)


def test_usage_log_lines_feed_a_result_that_has_none(efile):
    write_events(efile, {"kind": "usage", "input_tokens": 1234, "cached_input_tokens": 1000, "output_tokens": 56,
                         "reasoning_tokens": None, "context_window": 200000, "context_used": 20000},
                 result())
    assert log(efile).splitlines() == [
        "=== result completed (run 0b9e1111, 1234 in (1000 cached), 56 out, context 20000/200000 tokens)"]


def test_a_result_shows_its_usage_cost_and_error_class(efile):
    write_events(efile, result("failed", usage={"input_tokens": 10, "output_tokens": 2}, cost_usd=0.0123,
                               error="context window exceeded", error_class="contextWindowExceeded"))
    assert log(efile).splitlines() == ["=== result failed (run 0b9e1111, 10 in, 2 out tokens, $0.0123)",
                                       "    [contextWindowExceeded] context window exceeded"]


def test_a_cost_too_large_for_a_float_is_left_out_not_a_crash(efile):
    write_events(efile, result(cost_usd=10 ** 400))
    proc = run("log", efile)
    assert proc.returncode == 0 and proc.stdout.decode().splitlines() == ["=== result completed (run 0b9e1111)"]


def test_the_session_line_is_one_header_line(efile):
    write_events(efile, {"kind": "session", "session_id": "s", "harness": "codex", "version": "0.171.0",
                         "model": "gpt-5", "approval_policy": "on-request", "sandbox": "workspace-write"})
    assert log(efile).splitlines() == [
        "--- session: codex 0.171.0, model gpt-5, approval on-request, sandbox workspace-write"]


def test_warnings_and_diagnostics_above_info_are_shown_native_and_debug_are_hidden(efile):
    write_events(efile, {"kind": "warning", "level": "warning", "message": "model is deprecated", "source": "config"},
                 {"kind": "diagnostic", "level": "warning", "message": "3 log events dropped"},
                 {"kind": "diagnostic", "message": "stand-in stream statistics", "deltas": 5},
                 {"kind": "native", "level": "debug", "method": "thread/started", "data": {}},
                 {"kind": "task.started", "level": "debug", "task": "x"})
    assert log(efile).splitlines() == ["  ! warning (config): model is deprecated",
                                       "  ! warning diagnostic: 3 log events dropped"]


def test_an_unknown_log_kind_at_info_is_shown_generically(efile):
    write_events(efile, {"kind": "api.retry", "level": "warning", "attempt": 2, "max_retries": 10,
                         "error": "overloaded"})
    assert log(efile).splitlines() == ["  ! warning api.retry (attempt=2, max_retries=10, error=overloaded)"]


def test_torn_lines_and_unknown_types_are_one_line_each_never_a_traceback(efile):
    write_events(efile, accepted("go"), b'{"type":"log","ts":"2026-12-02T1\n', {"type": "checkpoint", "x": 1},
                 b"[1, 2]\n", {"type": "result", "run_id": RUN, "input_ids": 5, "status": ["odd"]},
                 {"type": "message", "run_id": RUN, "message_id": "m", "text": "still readable"})
    proc = run("log", efile)
    assert proc.returncode == 0 and proc.stderr == b""
    lines = proc.stdout.decode().splitlines()
    offset = len(open(efile, "rb").readline())
    assert "? byte %d: not JSON (33 bytes)" % offset in lines
    assert any(line.startswith("? byte ") and "unknown type 'checkpoint'" in line for line in lines)
    assert any(line.startswith("? byte ") and "not an event (not an object) (7 bytes)" in line for line in lines)
    assert "    still readable" in lines


def test_a_partial_last_line_is_not_shown(efile):
    write_events(efile, accepted("go"), b'{"type":"message","ts":"2026-12-02T10:40:33.794Z","seq":2,"text":"hal')
    assert "hal" not in log(efile) and "? byte" not in log(efile)


def test_a_file_whose_first_line_is_still_being_written_is_read(efile):
    with open(efile, "wb") as f:
        f.write(b'{"type":"accepted","ts":"2026-12-02T10:40:33.794Z","seq":1,"input_id":"in-1","text":"go')
    proc = run("log", efile)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


def test_a_file_whose_torn_first_line_is_not_ours_is_refused(efile):
    with open(efile, "wb") as f:
        f.write(b'{"name":"package.json","version":"1')
    proc = run("log", efile)
    assert proc.returncode == 2 and b"not a harnessctl event file" in proc.stderr


def test_every_vocabulary_kind_renders_without_raw_json(efile):
    write_events(efile, {"kind": "session", "session_id": None, "harness": "mock", "version": None, "model": None,
                         "approval_policy": None, "sandbox": None},
                 accepted("go"),
                 {"kind": "text.delta", "message_id": "cut", "text": "half a sent"},
                 {"kind": "reasoning.delta", "text": "think", "form": "raw"},
                 {"kind": "tool.started", "tool_id": "t", "tool": "mcp", "name": "srv.q", "title": "srv.q",
                  "input": {"a": 1}},
                 {"kind": "tool.output", "tool_id": "t", "text": "{\"partial\": true}"},
                 {"kind": "tool.completed", "tool_id": "t", "tool": "mcp", "name": "srv.q", "title": "srv.q",
                  "status": "completed", "exit_code": None, "output": "fine", "duration_ms": 65000},
                 FILE_CHANGE,
                 {"kind": "plan", "entries": [{"text": "a", "status": "completed"}], "explanation": "why"},
                 {"kind": "usage", "input_tokens": 1, "cached_input_tokens": None, "output_tokens": 1,
                  "reasoning_tokens": None, "context_window": None, "context_used": None},
                 {"kind": "warning", "level": "warning", "message": "w", "source": None},
                 result("cancelled"))
    text = log(efile)
    assert "{" not in text, text
    assert "  mcp srv.q  ok (1m05s)" in text and "half a sent" in text and "    why" in text


def test_control_characters_from_the_file_are_shown_not_obeyed(efile):
    write_events(efile, {"type": "message", "run_id": RUN, "message_id": "m", "text": "a\x1b]0;pwned\x07b"})
    assert "a\\x1b]0;pwned\\x07b" in log(efile)


# -- JSON ----------------------------------------------------------------------------------


def test_json_prints_one_object_per_entry_with_the_same_folding(efile):
    mock_session(efile, "/tool ls\n/permission ok?")
    entries = [json.loads(line) for line in log(efile, "--json").splitlines()]
    assert [e["entry"] for e in entries] == ["input", "session", "tool", "request"]
    tool = entries[2]
    assert {k: tool[k] for k in ("tool", "title", "status", "exit_code", "output")} == {
        "tool": "command", "title": "ls", "status": "completed", "exit_code": 0, "output": "mock output of: ls\n"}
    assert isinstance(tool["seq"], int) and isinstance(tool["duration_ms"], int) and tool["run_id"]
    assert entries[3]["reply"] == ["harnessctl reply %s req-1 allow" % efile, "harnessctl reply %s req-1 deny" % efile]


def test_json_says_in_a_note_that_earlier_lines_were_not_read(efile):
    three_runs(efile)
    first = json.loads(log(efile, "--json", "--runs", "1").splitlines()[0])
    assert first["entry"] == "note" and first["text"].startswith("earlier lines not shown")


# -- where it starts ---------------------------------------------------------------------


def three_runs(path):
    write_events(path, *[e for n in (1, 2, 3) for e in (
        accepted("prompt %d" % n, run_id="run-%d" % n, input_id="in-%d" % n),
        {"type": "message", "run_id": "run-%d" % n, "message_id": "m%d" % n, "text": "answer %d" % n},
        result(run_id="run-%d" % n, input_ids=["in-%d" % n]))])


def test_since_starts_at_the_first_line_with_that_seq(efile):
    three_runs(efile)
    text = log(efile, "--since", "5")
    assert "prompt 1" not in text and "answer 2" in text and "prompt 2" not in text and "prompt 3" in text
    assert text.startswith("--- earlier lines not shown")


def test_since_1_shows_everything(efile):
    three_runs(efile)
    text = log(efile, "--since", "1")
    assert all("prompt %d" % n in text for n in (1, 2, 3)) and "earlier lines" not in text


def test_since_is_not_misled_by_foreign_lines_with_a_lower_seq(efile):
    """A block of foreign lines claiming seq 1 in the middle of a file of 4000
    messages: wherever the bisection probes, it starts at the seq asked for."""
    foreign = b'{"type":"log","ts":"2026-12-02T10:00:00.000Z","seq":1,"level":"debug","kind":"task.started"}\n'
    write_events(efile, accepted("the first prompt", run_id="run-1"))
    with open(efile, "ab") as f:
        for seq in range(2, 4001):
            f.write(json.dumps({"type": "message", "ts": "2026-12-02T10:00:00.000Z", "seq": seq, "run_id": "run-1",
                                "message_id": "m%d" % seq, "role": "assistant", "text": "line %d" % seq}).encode()
                    + b"\n")
            if 1500 <= seq <= 2500:
                f.write(foreign)
    lines = log(efile, "--since", "100").splitlines()
    assert lines[1:3] == ["<<< assistant", "    line 100"]


def test_runs_shows_the_last_n_runs(efile):
    three_runs(efile)
    text = log(efile, "--runs", "2")
    assert "prompt 1" not in text and "prompt 2" in text and "prompt 3" in text


def test_a_steer_does_not_count_as_a_run(efile):
    three_runs(efile)
    write_events(efile, accepted("steered", run_id="run-3", delivery="steer", input_id="in-4"), mode="a")
    text = log(efile, "--runs", "1")
    assert "prompt 2" not in text and "prompt 3" in text and "steered" in text


def big_file(path, megabytes=50):
    """An early run, `megabytes` of streamed text, then a last run."""
    line = '{"type":"log","ts":"2026-12-02T10:00:00.000Z","seq":%d,"level":"info","kind":"text.delta",' \
           '"run_id":"run-1","message_id":"m1","text":"%s"}\n'
    write_events(path, accepted("the first prompt", run_id="run-1"))
    seq, written, chunk = 1, 0, []
    with open(path, "ab") as f:
        while written < megabytes * 1024 * 1024:
            seq += 1
            chunk.append((line % (seq, "x" * 400)).encode())
            written += len(chunk[-1])
            if len(chunk) == 10000:
                f.write(b"".join(chunk))
                chunk = []
        f.write(b"".join(chunk))
        for event in (result(run_id="run-1"), accepted("the last prompt", run_id="run-2", input_id="in-2"),
                      {"type": "message", "run_id": "run-2", "message_id": "m2", "text": "the last answer"}):
            seq += 1
            f.write(json.dumps(dict(event, ts="2026-12-02T10:00:00.000Z", seq=seq)).encode() + b"\n")
    return seq


def log_measured(path, proc_file, field, *args, timeout=120):
    """`log` run in a process that reports one figure of its own from /proc/self
    (`field:` of `proc_file`) when it is done: (its output, the figure)."""
    code = ("import sys\nfrom harnessctl.cli import main\ncode = main(sys.argv[1:])\n"
            "sys.stderr.write(open('/proc/self/%s').read())\nsys.exit(code)\n" % proc_file)
    proc = subprocess.run([sys.executable, "-c", code, "log", path, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=cli_env(), cwd=ROOT, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    value = [int(line.split()[1]) for line in proc.stderr.decode().splitlines() if line.startswith(field + ":")]
    return proc.stdout.decode(), value[0]


def log_reading(path, *args):
    """`log`'s output and its bytes read (rchar)."""
    return log_measured(path, "io", "rchar", *args)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("big") / "big.jsonl")
    return path, big_file(path)


def test_the_default_renders_a_large_files_tail_reading_a_bounded_part(big):
    path, _ = big
    text, read = log_reading(path)
    assert "the last answer" in text and "the first prompt" not in text
    assert read < 30 * 1024 * 1024 < os.path.getsize(path)  # about 2 x 8 MiB (back, then forth) and imports


def test_runs_on_a_large_file_reads_back_only_to_the_runs_it_shows(big):
    path, _ = big
    text, read = log_reading(path, "--runs", "1")
    assert "the last prompt" in text and "the first prompt" not in text and read < 8 * 1024 * 1024


def test_since_on_a_large_file_bisects_instead_of_reading_from_the_start(big):
    path, last = big
    text, read = log_reading(path, "--since", str(last - 1))
    assert text.splitlines()[1:] == [">>> input (start, run run-2)", "    the last prompt", "<<< assistant",
                                     "    the last answer"]
    assert read < 8 * 1024 * 1024


def log_peak_memory(path, *args):
    """`log`'s peak resident memory, in kB (VmHWM)."""
    return log_measured(path, "status", "VmHWM", *args, timeout=600)[1]


def test_the_default_goes_back_over_a_last_line_longer_than_the_read_chunk_without_holding_it(efile):
    """The backwards reader carries where a long line ends, not its bytes: a
    48 MB last line is never held (it once was, copied again at every chunk)."""
    write_events(efile, accepted("go"), {"type": "message", "run_id": RUN, "message_id": "m", "text": "x" * 1000})
    small = log_peak_memory(efile)
    write_events(efile, {"type": "message", "run_id": RUN, "message_id": "m2", "text": "x" * (48 << 20)}, mode="a")
    assert log_peak_memory(efile) < small + 16 * 1024


def test_folding_a_result_does_not_visit_the_entries_of_other_runs():
    """`log --since 1` of many runs: each result finds its run's cut-off
    streams by the run, never by looking at every entry so far."""
    from harnessctl.log.transcript import Transcript

    class Counting(dict):
        visited = 0

        def items(self):
            for item in super().items():
                Counting.visited += 1
                yield item

        def values(self):
            for value in super().values():
                Counting.visited += 1
                yield value

    transcript = Transcript()
    transcript.entries = Counting()
    for n in range(200):
        run_id = "run-%d" % n
        transcript.add(accepted("prompt", run_id=run_id, input_id="in-%d" % n))
        transcript.add({"type": "log", "kind": "text.delta", "run_id": run_id, "message_id": "m%d" % n, "text": "x"})
        transcript.add(result(run_id=run_id, input_ids=["in-%d" % n]))
    assert Counting.visited == 0 and len(transcript.visible()) == 600


# -- colour --------------------------------------------------------------------------------


def on_a_terminal(path, env):
    """`log` with its stdout on a pseudo-terminal; what it wrote."""
    import pty

    master, slave = pty.openpty()
    proc = start("log", path, stdout=slave, env=env)
    os.close(slave)
    data = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the writer closed the terminal
            break
        if not chunk:
            break
        data += chunk
    os.close(master)
    assert proc.wait(timeout=60) == 0
    return data


def test_colour_on_a_terminal(efile):
    mock_session(efile, "/tool false")
    assert b"\x1b[" in on_a_terminal(efile, cli_env())


def test_no_colour_on_a_terminal_when_no_color_is_set(efile):
    mock_session(efile, "/tool false")
    assert b"\x1b[" not in on_a_terminal(efile, cli_env(NO_COLOR="1"))


def test_no_colour_when_stdout_is_not_a_terminal(efile):
    mock_session(efile, "/tool false")
    assert "\x1b[" not in log(efile)


# -- follow --------------------------------------------------------------------------------


class Follower:
    """`log --follow` in the background, its output collected as it comes."""

    def __init__(self, path, *args):
        self.proc = start("log", path, "--follow", *args, preexec_fn=interruptible)
        self.out = b""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for chunk in iter(lambda: self.proc.stdout.read1(65536), b""):
            self.out += chunk

    def has(self, text):
        return wait_for(lambda: text in self.text(), what="%r in the followed output" % text)

    def text(self):
        return self.out.decode(errors="replace")

    def interrupt(self):
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=30)
        self.reader.join(timeout=30)
        return code, self.proc.stderr.read()


def test_follow_prints_appended_lines_and_exits_130_quietly_on_ctrl_c(efile):
    mock_session(efile, "first")
    follower = Follower(efile)
    follower.has("echo: first")
    mock_session(efile, "/tool make\nsecond")
    follower.has("echo: second")
    assert follower.text().count("$ make") == 1
    assert follower.interrupt() == (130, b"")


def test_follow_prints_a_pending_request_with_its_reply_command_when_it_appears(efile):
    mock_session(efile, "first")
    follower = Follower(efile)
    follower.has("echo: first")
    mock_session(efile, "/permission may I?")
    follower.has("harnessctl reply %s req-1 allow" % efile)
    ok("reply", efile, "req-1", "deny")
    follower.has("??? req-1 permission: may I?  -> deny")
    follower.interrupt()


def test_follow_prints_a_line_only_once_it_is_complete(efile):
    write_events(efile, accepted("go"))
    follower = Follower(efile)
    follower.has("    go")
    with open(efile, "ab") as f:
        f.write(b'{"type":"message","ts":"2026-12-02T10:40:33.794Z","seq":2,"run_id":"r","message_id":"m",')
        f.flush()
        f.write(b'"text":"now whole"}\n{"type":"message","ts":"2026-12-02T10:40:33.794Z","seq":3,"run_id":"r",'
                b'"message_id":"n","text":"after"}\n')
    follower.has("after")
    assert "now whole" in follower.text() and "? byte" not in follower.text()
    follower.interrupt()


def test_follow_reads_a_file_that_replaced_the_path_from_its_start(efile):
    write_events(efile, accepted("old file"))
    follower = Follower(efile)
    follower.has("old file")
    write_events(efile + ".new", accepted("new file"))
    os.replace(efile + ".new", efile)
    follower.has("new file")
    assert "was replaced or truncated: reading it from the start" in follower.text()
    follower.interrupt()


def test_follow_refuses_a_replacement_that_is_not_an_event_file(efile):
    write_events(efile, accepted("old file"))
    follower = Follower(efile)
    follower.has("old file")
    with open(efile + ".new", "w") as f:
        f.write("just notes\n")
    os.replace(efile + ".new", efile)
    assert follower.proc.wait(timeout=60) == 2
    follower.reader.join(timeout=30)
    assert b"not a harnessctl event file" in follower.proc.stderr.read() and "just notes" not in follower.text()


def test_follow_json_prints_a_changed_entry_again_with_the_same_id(efile):
    write_events(efile, {"kind": "tool.started", "tool_id": "t", "tool": "command", "name": "sh", "title": "make",
                         "input": {}})
    follower = Follower(efile, "--json")
    follower.has('"status":"running"')
    write_events(efile, {"kind": "tool.completed", "tool_id": "t", "tool": "command", "name": "sh", "title": "make",
                         "status": "completed", "exit_code": 0, "output": "", "duration_ms": 5}, mode="a")
    follower.has('"status":"completed"')
    follower.interrupt()
    ids = [json.loads(line)["id"] for line in follower.text().splitlines()]
    assert len(ids) == 2 and ids[0] == ids[1]


# -- errors and help -----------------------------------------------------------------------


def test_a_file_that_does_not_exist_exits_4(workdir):
    proc = run("log", str(workdir / "none.jsonl"))
    assert proc.returncode == 4 and proc.stderr.startswith(b"harnessctl: no such event file")


def test_a_file_that_is_not_an_event_file_exits_2(workdir):
    path = workdir / "notes.txt"
    path.write_text("just notes\n")
    proc = run("log", str(path))
    assert proc.returncode == 2 and b"not a harnessctl event file" in proc.stderr


def test_a_directory_exits_2(workdir):
    proc = run("log", str(workdir))
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize("flags", [("--since", "0"), ("--since", "x"), ("--runs", "-1"), ("--runs", "1.5"),
                                   ("--since", "1", "--runs", "1"), ("--tail",)])
def test_bad_flags_exit_2_with_one_line(efile, flags):
    write_events(efile, accepted("go"))
    proc = run("log", efile, *flags)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and proc.stdout == b""


def test_an_empty_event_file_says_no_run_started(efile):
    open(efile, "w").close()
    assert log(efile).startswith("--- no run started: no input was accepted")


def test_a_first_send_whose_harness_never_started_shows_no_run_started_and_names_the_runtime_log(efile):
    assert run("send", efile, "hi", "--adapter", "acp", "--agent", "false").returncode == 5
    last = log(efile).splitlines()[-1]
    assert last.startswith("--- no run started: ") and os.path.realpath(efile) + ".d/runtime.log" in last


def test_a_file_with_only_a_diagnostic_shows_it_then_no_run_started(efile):
    write_events(efile, {"kind": "diagnostic", "level": "warning", "message": "the event file lies in the cwd",
                         "run_id": None})
    lines = log(efile).splitlines()
    assert lines[0] == "  ! warning diagnostic: the event file lies in the cwd"
    assert lines[1].startswith("--- no run started: ") and len(lines) == 2


def test_log_help_has_its_synopsis_flags_and_exit_codes():
    text = ok("log", "--help").stdout.decode()
    assert text.startswith("usage: harnessctl log ")
    for part in ("--follow", "--since SEQ", "--runs N", "--json", "--diff", "NO_COLOR", "exit codes:", "  4 ",
                 "  130 "):
        assert part in text, part
    assert "harnessctl log " in ok("--help").stdout.decode()


def test_a_file_change_is_shown_under_its_tool_even_when_logged_later(efile):
    write_events(efile, {"kind": "tool.completed", "tool_id": "t1", "tool": "file_change", "name": "patch",
                         "title": "a.py", "status": "completed", "exit_code": None, "output": "", "duration_ms": 3},
                 {"type": "request", "run_id": RUN, "request_id": "req-1", "state": "replied", "kind": "permission",
                  "message": "Apply?", "options": ["allow", "deny"], "answer": "allow"},
                 dict(FILE_CHANGE, path="a.py", move_path=None, change="update"))
    assert log(efile).splitlines() == ["  edit a.py  ok (3 ms)", "    +1 -1 a.py",
                                       "??? req-1 permission: Apply?  -> allow"]



def started_first(request_fields, tool_id="call_touch", **tool):
    """A command as codex and Claude write it: the tool starts, then its approval is asked and answered."""
    pending = dict({"type": "request", "run_id": RUN, "request_id": "req-1", "state": "pending",
                    "kind": "permission", "message": "Run command: touch a", "options": ["allow", "deny"],
                    "tool": "command", "command": "touch a"}, **request_fields)
    started = dict({"kind": "tool.started", "tool_id": tool_id, "tool": "command", "name": "commandExecution",
                    "title": "touch a", "input": {}}, **tool)
    completed = dict(started, kind="tool.completed", status="completed", exit_code=0, output="", duration_ms=4)
    return [accepted("touch a"), started, pending, dict(pending, state="replied", answer="allow", by="reply"),
            completed, result()]


TRANSCRIPT_APPROVED_FIRST = ["??? req-1 permission: Run command: touch a  -> allow", "  $ touch a  ok (exit 0, 4 ms)"]


def test_an_approval_asked_after_its_tool_started_is_shown_above_the_tool(efile):
    write_events(efile, *started_first({}))
    lines = log(efile).splitlines()
    assert lines[2:4] == TRANSCRIPT_APPROVED_FIRST, lines


def test_an_approval_naming_its_tool_is_shown_above_that_tool(efile):
    events = started_first({"tool_use_id": "toolu_2"}, tool_id="toolu_2")
    other = {"kind": "tool.started", "tool_id": "toolu_1", "tool": "command", "name": "Bash", "title": "ls",
             "input": {}}
    write_events(efile, *events[:2], other, *events[2:])  # the latest running command is not the one asked about
    lines = log(efile).splitlines()
    assert lines[2:5] == TRANSCRIPT_APPROVED_FIRST + ["  $ ls  ended with its run, outcome unknown"], lines


def test_json_lists_an_approval_before_the_tool_it_approved(efile):
    write_events(efile, *started_first({}))
    kinds = [json.loads(line)["entry"] for line in log(efile, "--json").splitlines()]
    assert kinds == ["input", "request", "tool", "result"], kinds


def test_an_approval_of_a_tool_not_yet_started_stays_where_it_was_asked(efile):
    events = started_first({})
    write_events(efile, events[0], events[2], events[3], events[1], events[4], events[5])
    lines = log(efile).splitlines()
    assert lines[2:4] == TRANSCRIPT_APPROVED_FIRST, lines

