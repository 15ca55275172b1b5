"""Unit tests of the event log: locked fsynced critical appends, merged logs, torn tails."""

from __future__ import annotations

import json
import os

import pytest

from harnessctl.eventfile import eventlog
from harnessctl.eventfile.eventlog import EventLog, read_events
from harnessctl.store import locks


def writer(path, last_seq):
    """An EventLog as the runtime opens one: the file, locked, we its one writer."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    assert locks.lock_fd(fd)
    return EventLog(fd, path, last_seq)


def lines(path):
    with open(path, "rb") as f:
        return f.read().split(b"\n")


def test_append_numbers_events_and_writes_one_line_each(tmp_path):
    path = str(tmp_path / "e.jsonl")
    log = writer(path, 0)
    first = log.append({"type": "message", "run_id": "r", "message_id": "m", "role": "assistant", "text": "a\nb"})
    second = log.append({"type": "result", "run_id": "r", "input_ids": [], "status": "completed"})
    log.close()
    assert (first["seq"], second["seq"]) == (1, 2)
    raw = lines(path)
    assert len(raw) == 3 and raw[-1] == b""
    assert json.loads(raw[0])["text"] == "a\nb"
    assert list(json.loads(raw[0]))[:3] == ["type", "ts", "seq"]


def test_append_continues_from_the_given_seq(tmp_path):
    path = str(tmp_path / "e.jsonl")
    log = writer(path, 41)
    assert log.append({"type": "message"})["seq"] == 42
    log.close()


def test_text_deltas_of_one_run_merge_into_one_line(tmp_path):
    path = str(tmp_path / "e.jsonl")
    log = writer(path, 0)
    for _ in range(1000):
        log.log({"type": "log", "level": "info", "kind": "text.delta", "run_id": "r", "text": "x"})
    log.flush_logs()
    log.close()
    written = [e for e, _ in read_events(path)]
    assert len(written) == 1 and written[0]["text"] == "x" * 1000


def test_deltas_of_different_runs_do_not_merge(tmp_path):
    path = str(tmp_path / "e.jsonl")
    log = writer(path, 0)
    log.log({"type": "log", "level": "info", "kind": "text.delta", "run_id": "r1", "text": "a"})
    log.log({"type": "log", "level": "info", "kind": "text.delta", "run_id": "r2", "text": "b"})
    log.close()
    assert [e["text"] for e, _ in read_events(path)] == ["a", "b"]


def test_buffered_logs_are_written_before_the_next_critical_event(tmp_path):
    path = str(tmp_path / "e.jsonl")
    log = writer(path, 0)
    log.log({"type": "log", "level": "info", "kind": "tool.started", "run_id": "r"})
    log.append({"type": "message", "text": "done"})
    log.close()
    assert [(e["type"], e["seq"]) for e, _ in read_events(path)] == [("log", 1), ("message", 2)]


def test_a_log_flood_is_capped_and_the_drop_is_reported(tmp_path):
    path = str(tmp_path / "e.jsonl")
    log = writer(path, 0)
    for i in range(eventlog.MAX_BUFFERED_LOGS + 10):
        log.log({"type": "log", "level": "info", "kind": "native", "n": i})
    log.close()
    written = [e for e, _ in read_events(path)]
    assert len(written) == eventlog.MAX_BUFFERED_LOGS + 1
    assert written[-1]["message"] == "10 log events dropped"


def test_a_torn_tail_is_terminated_before_the_next_append(tmp_path):
    path = str(tmp_path / "e.jsonl")
    with open(path, "wb") as f:
        f.write(b'{"type":"message","ts":"x","seq":1}\n{"type":"resu')
    log = writer(path, 1)
    log.append({"type": "message", "text": "next"})
    log.close()
    raw = lines(path)
    assert raw[1] == b'{"type":"resu' and json.loads(raw[2])["text"] == "next"


def test_a_failed_write_is_truncated_back(tmp_path, monkeypatch):
    path = str(tmp_path / "e.jsonl")
    log = writer(path, 0)
    log.append({"type": "message", "text": "kept"})
    size = os.path.getsize(path)
    real_write = os.write

    def half_then_enospc(fd, data):
        if len(data) > 10:
            return real_write(fd, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(eventlog.os, "write", half_then_enospc)
    with pytest.raises(OSError):
        log.append({"type": "message", "text": "lost " * 20})
    monkeypatch.undo()
    assert os.path.getsize(path) == size
    assert log.append({"type": "message", "text": "after"})["seq"] == 2
    log.close()


def test_read_events_skips_fragments_and_stops_at_an_incomplete_tail(tmp_path):
    path = str(tmp_path / "e.jsonl")
    with open(path, "wb") as f:
        f.write(b'{"type":"log","seq":1}\nnot json\n{"type":"message","seq":2}\n{"type":"res')
    got = list(read_events(path))
    assert [e["seq"] for e, _ in got] == [1, 2]
    assert got[-1][1] == len(b'{"type":"log","seq":1}\nnot json\n{"type":"message","seq":2}\n')


def test_timestamp_is_utc_with_milliseconds():
    assert eventlog.timestamp(0.5) == "1970-01-01T00:00:00.500Z"


def test_log_stubs_carry_type_ts_and_seq_without_a_parse(tmp_path):
    path = str(tmp_path / "e.jsonl")
    log = writer(path, 0)
    log.log({"type": "log", "level": "info", "kind": "text.delta", "run_id": "r", "text": "x"})
    log.append({"type": "message", "text": "m"})
    log.close()
    full = [e for e, _ in read_events(path)]
    stubs = [e for e, _ in read_events(path, full_logs=False)]
    assert stubs[0] == {"type": "log", "ts": full[0]["ts"], "seq": 1}
    assert stubs[1] == full[1]


def test_a_foreign_log_line_is_parsed_in_full(tmp_path):
    path = str(tmp_path / "e.jsonl")
    with open(path, "wb") as f:
        f.write(b'{"type":"log","ts":"odd","seq":5,"kind":"x"}\n')
    assert [e for e, _ in read_events(path, full_logs=False)][0]["kind"] == "x"
