"""The sidecar snapshot: a cache of the fold that is used only while it matches the file."""

from __future__ import annotations

import json
import os

from harnessctl.eventfile import snapshot
from harnessctl.eventfile.eventlog import EventLog
from harnessctl.store import locks
from harnessctl.store.address import Address
from harnessctl.store.bindingfile import write_binding


def writer(path, last_seq):
    """An EventLog as the runtime opens one: the file, locked, we its one writer."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    assert locks.lock_fd(fd)
    return EventLog(fd, path, last_seq)


def session(tmp_path):
    addr = Address(str(tmp_path / "e.jsonl"))
    os.mkdir(addr.sidecar)
    log = writer(addr.path, 0)
    log.append({"type": "accepted", "input_id": "i1", "text": "t", "delivery": "start", "run_id": "r1"})
    log.append({"type": "result", "run_id": "r1", "input_ids": ["i1"], "status": "completed", "output": "",
                "usage": None, "cost_usd": None, "error": None})
    log.close()
    return addr


def test_a_saved_snapshot_gives_the_status_line_while_the_file_is_unchanged(tmp_path):
    addr = session(tmp_path)
    conv, offset, stale = snapshot.load(addr)
    assert stale and conv.results_seen == 1
    binding = {"adapter": "mock", "cwd": "/", "model": None}
    write_binding(addr, binding)
    snapshot.save(addr, conv, offset, binding)
    line = snapshot.current_status(addr)
    assert json.loads(line)["state"] == "idle" and json.loads(line)["runtime"] == "stopped"
    assert snapshot.load(addr)[2] is False


def test_an_appended_event_makes_the_status_line_stale_and_only_the_tail_is_folded(tmp_path):
    addr = session(tmp_path)
    conv, offset, _ = snapshot.load(addr)
    snapshot.save(addr, conv, offset, None)
    log = writer(addr.path, conv.seq)
    log.append({"type": "accepted", "input_id": "i2", "text": "t", "delivery": "start", "run_id": "r2"})
    log.close()
    assert snapshot.current_status(addr) is None
    again, end, stale = snapshot.load(addr)
    assert stale and end == os.path.getsize(addr.path) and again.open_inputs == {"i2": "r2"}


def test_a_rewritten_file_invalidates_the_snapshot(tmp_path):
    addr = session(tmp_path)
    conv, offset, _ = snapshot.load(addr)
    snapshot.save(addr, conv, offset, None)
    with open(addr.path, "r+b") as f:
        f.seek(offset - 10)
        f.write(b"X")
    assert snapshot.current_status(addr) is None


def test_a_corrupt_snapshot_is_ignored(tmp_path):
    addr = session(tmp_path)
    with open(addr.snapshot, "w") as f:
        f.write("harnessctl-snapshot 2 nonsense\n{\n")
    conv, offset, stale = snapshot.load(addr)
    assert conv.results_seen == 1 and offset == os.path.getsize(addr.path) and stale


def test_a_snapshot_is_not_believed_once_the_binding_beside_it_changed(tmp_path):
    addr = session(tmp_path)
    conv, offset, _ = snapshot.load(addr)
    write_binding(addr, {"adapter": "mock", "cwd": "/", "model": None})
    snapshot.save(addr, conv, offset, {"adapter": "mock", "cwd": "/", "model": None})
    with open(addr.binding, "w") as f:
        f.write('{"adapter": "acp", "cwd": "/", "model": null, "agent": "sh -c id"}')
    assert snapshot.current_status(addr) is None


def test_a_snapshot_written_without_the_users_key_is_not_believed(tmp_path):
    addr = session(tmp_path)
    conv, offset, _ = snapshot.load(addr)
    snapshot.save(addr, conv, offset, None)
    with open(addr.snapshot) as f:
        header, rest = f.read().split("\n", 1)
    fields = header.split(" ")
    fields[4] = "0" * 32  # the seal an agent without the key can only guess
    with open(addr.snapshot, "w") as f:
        f.write(" ".join(fields) + "\n" + rest)
    assert snapshot.current_status(addr) is None
