"""The activity vocabulary's one spelling (harnessctl/kit/activity.py): what each
call writes, checked against schema/events.schema.json, and how fragments of
different streams stay apart when the event log merges them."""

from __future__ import annotations

import json
import os

import pytest
from fakehost import FakeHost

from harnessctl.eventfile.eventlog import EventLog
from harnessctl.kit import activity
from harnessctl.kit.activity import Activity


@pytest.fixture
def host():
    return FakeHost()


def fields(host, kind):
    return [call[4] for call in host.logs(kind)]


def test_tool_completed_repeats_the_kind_name_and_title_its_start_gave(host):
    a = Activity(host)
    a.tool_started("r1", "t1", "command", "Bash", "ls -la\nsecond line", {"command": "ls -la"})
    a.tool_completed("r1", "t1", "completed", exit_code=0, output="a\nb\n")
    (done,) = fields(host, "tool.completed")
    assert (done["tool"], done["name"], done["title"], done["exit_code"]) == ("command", "Bash", "ls -la", 0)
    assert isinstance(done["duration_ms"], int) and done["duration_ms"] >= 0
    assert host.vocabulary_problems() == []


def test_a_harness_duration_is_kept_and_an_unknown_tool_completes_as_other(host):
    Activity(host).tool_completed("r1", "never-started", "failed", exit_code=3, duration_ms=1500)
    (done,) = fields(host, "tool.completed")
    assert (done["tool"], done["duration_ms"], done["exit_code"]) == ("other", 1500, None)
    assert host.vocabulary_problems() == []


def test_only_commands_carry_an_exit_code(host):
    a = Activity(host)
    a.tool_started("r1", "t1", "read", "Read", "/etc/hosts")
    a.tool_completed("r1", "t1", "completed", exit_code=0)
    assert fields(host, "tool.completed")[0]["exit_code"] is None


def test_tool_output_keeps_the_last_4000_characters(host):
    a = Activity(host)
    a.tool_started("r1", "t1", "command", "shell", "yes")
    a.tool_completed("r1", "t1", "completed", exit_code=0, output="x" * 5000 + "END")
    output = fields(host, "tool.completed")[0]["output"]
    assert len(output) == activity.OUTPUT_TAIL and output.endswith("END")


@pytest.mark.parametrize("call", [
    lambda a: a.tool_started("r", "t", "shell", "Bash", "ls"),
    lambda a: a.tool_completed("r", "t", "done"),
    lambda a: a.file_changed("r", "t", "f", "create"),
    lambda a: a.plan("r", [("step", "doing")]),
    lambda a: a.reasoning("r", "hm", "secret"),
    lambda a: a.usage("r", tokens=3),
])
def test_a_value_outside_the_vocabulary_is_refused_and_nothing_is_written(host, call):
    with pytest.raises(ValueError):
        call(Activity(host))
    assert host.calls == []


def test_file_changed_counts_the_whole_diff_and_cuts_a_huge_one(host):
    diff = activity.unified_diff("src/a.py", None, "".join("line %d\n" % i for i in range(20000)))
    Activity(host).file_changed("r1", "t1", "src/a.py", "add", diff)
    (change,) = fields(host, "file.changed")
    assert (change["added"], change["removed"]) == (20000, 0)
    assert len(change["diff"]) < len(diff) and change["diff"].endswith("characters]\n")
    assert host.vocabulary_problems() == []


def test_unified_diff_of_an_update_names_both_sides_and_counts_its_lines():
    diff = activity.unified_diff("/repo/a.txt", "one\ntwo\n", "one\nthree\nfour")
    assert diff.startswith("--- a/repo/a.txt\n+++ b/repo/a.txt\n")
    assert "\\ No newline at end of file\n" in diff
    assert activity.count_diff(diff) == (2, 1)


def test_optional_fields_are_absent_when_they_have_no_value(host):
    a = Activity(host)
    a.text("r1", "m1", "hi")
    a.plan("r1", [("read", "completed"), ("fix", "in_progress")])
    a.session("s1", "mock")
    assert "parent_tool_id" not in fields(host, "text.delta")[0]
    assert "explanation" not in fields(host, "plan")[0] and "capabilities" not in fields(host, "session")[0]
    assert host.vocabulary_problems() == []


def test_empty_fragments_are_not_written_but_withheld_thinking_is_marked(host):
    a = Activity(host)
    a.text("r1", "m1", "")
    a.tool_output("r1", "t1", "")
    a.reasoning("r1", "", "raw")
    a.reasoning("r1", "", "redacted")
    assert [c[1] for c in host.calls] == ["reasoning.delta"]
    assert fields(host, "reasoning.delta") == [{"text": "", "form": "redacted"}]


def test_usage_has_every_field_null_where_the_harness_does_not_say(host):
    Activity(host).usage("r1", input_tokens=10, output_tokens=2)
    (usage,) = fields(host, "usage")
    assert usage == {"input_tokens": 10, "cached_input_tokens": None, "output_tokens": 2,
                     "reasoning_tokens": None, "context_window": None, "context_used": None}
    assert host.vocabulary_problems() == []


def test_a_warning_is_logged_at_level_warning(host):
    Activity(host).warning("r1", "model metadata not found", "warning")
    assert [(c[1], c[2]) for c in host.calls] == [("warning", "warning")]
    assert host.vocabulary_problems() == []


def test_fragments_merge_per_stream_never_across_messages_or_tools(tmp_path):
    path = str(tmp_path / "e.jsonl")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    log = EventLog(fd, path, 0)
    for message_id, text in (("m1", "a"), ("m1", "b"), ("m2", "c"), ("m2", "d")):
        log.log({"type": "log", "level": "info", "kind": "text.delta", "run_id": "r", "message_id": message_id,
                 "text": text})
    for tool_id, text in (("t1", "x"), ("t2", "y"), ("t2", "z")):
        log.log({"type": "log", "level": "info", "kind": "tool.output", "run_id": "r", "tool_id": tool_id,
                 "text": text})
    log.close()
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert [(e.get("message_id") or e.get("tool_id"), e["text"]) for e in lines] == [
        ("m1", "ab"), ("m2", "cd"), ("t1", "x"), ("t2", "yz")]


def test_a_tool_the_harness_ends_without_output_completes_with_the_tail_it_streamed(host):
    a = Activity(host)
    a.tool_started("r1", "t1", "command", "shell", "make")
    assert a.is_open("t1")
    a.tool_output("r1", "t1", "x" * 5000)
    a.tool_output("r1", "t1", "done\n")
    a.tool_completed("r1", "t1", "completed", exit_code=0)
    output = fields(host, "tool.completed")[0]["output"]
    assert len(output) == activity.OUTPUT_TAIL and output.endswith("done\n") and not a.is_open("t1")
