"""An idle runtime sleeps until something it depends on changes (issue 50):
its reachability is checked when inotify says the event file, the sidecar,
the socket or a folder above them changed (harnessctl/runtime/reachwatch.py),
never on a timer, except where inotify cannot watch (then each second)."""

from __future__ import annotations

import ctypes
import os
import queue
import shutil
import sys

import pytest

from harnessctl.runtime import reachwatch
from harnessctl.runtime.lifetime import REACHABLE_CHECK, SETTLE, Lifetime
from harnessctl.runtime.server import identity
from harnessctl.store.address import Address

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


class Loop:
    """The loop's two doors, recorded: the timers armed, the jobs posted (from the watch's thread)."""

    def __init__(self):
        self.later = []
        self.posted = queue.Queue()

    def call_later(self, seconds, fn):
        self.later.append((seconds, fn))

    def post(self, fn):
        self.posted.put(fn)

    def run_timers(self):
        due, self.later = self.later, []
        for _, fn in due:
            fn()

    def next_job(self):
        return self.posted.get(timeout=10)

    def news(self):
        """Run the job the watch posted, then the check it armed."""
        self.next_job()()
        assert [seconds for seconds, _ in self.later] == [SETTLE]
        self.run_timers()


class Identified:
    """The event log's and the server's identity checks, on real paths."""

    def __init__(self, path):
        self.path = path
        self.identity = identity(path)

    def replaced(self):
        return identity(self.path) != self.identity

    def is_ours(self):
        return identity(self.path) == self.identity


class NoInotify:
    """A C library whose inotify_init1 fails (out of instances: EMFILE)."""

    def inotify_init1(self, flags):
        return -1


class NoWatch:
    """A C library that runs out of watches (ENOSPC) at the third one."""

    def __init__(self):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.added = 0
        self.fd = -1

    def inotify_init1(self, flags):
        self.fd = self.libc.inotify_init1(flags)
        return self.fd

    def inotify_add_watch(self, fd, path, mask):
        self.added += 1
        return -1 if self.added == 3 else self.libc.inotify_add_watch(fd, path, mask)


@pytest.fixture
def session(tmp_path):
    """An event file, its sidecar and its socket (a plain file stands in), and a Lifetime over them."""
    addr = Address(str(tmp_path / "events.jsonl"))
    open(addr.path, "w").close()
    os.mkdir(addr.sidecar)
    socket = os.path.join(addr.sidecar, "runtime.sock")
    open(socket, "w").close()

    def lifetime(libc=None):
        loop, stopped = Loop(), []
        life = Lifetime(60.0, addr, Identified(addr.path), Identified(socket), loop, stopped.append, libc)
        life.watch_reachable()
        return life, loop, stopped

    yield addr, lifetime
    shutil.rmtree(str(tmp_path), ignore_errors=True)


def test_an_idle_runtime_arms_no_timer_once_its_first_check_found_it_reachable(session):
    _, lifetime = session
    life, loop, stopped = lifetime()
    try:
        assert [seconds for seconds, _ in loop.later] == [0]  # what changed before the watches were in place
        loop.run_timers()
        assert loop.later == [] and stopped == [] and loop.posted.empty()
    finally:
        life.close()


def test_a_moved_event_file_posts_the_check_that_stops_the_runtime(session):
    addr, lifetime = session
    life, loop, stopped = lifetime()
    try:
        loop.run_timers()
        os.rename(addr.path, addr.path + ".old")
        loop.news()
        assert stopped == ["the event file was moved, removed or replaced"]
    finally:
        life.close()


def test_an_event_file_renamed_there_and_back_is_no_move(session):
    addr, lifetime = session
    life, loop, stopped = lifetime()
    try:
        loop.run_timers()
        os.rename(addr.path, addr.path + ".old")
        os.rename(addr.path + ".old", addr.path)
        loop.news()
        while not loop.posted.empty():  # a second batch of the same news arms nothing more
            loop.next_job()()
            loop.run_timers()
        assert stopped == [] and loop.later == []
    finally:
        life.close()


def test_a_removed_sidecar_posts_the_check_that_stops_the_runtime(session):
    addr, lifetime = session
    life, loop, stopped = lifetime()
    try:
        loop.run_timers()
        shutil.rmtree(addr.sidecar)
        while not stopped:  # the news, or the sidecar's watch ending with it (then the timer's first check)
            loop.next_job()()
            loop.run_timers()
        assert stopped == ["the sidecar or the socket was removed or replaced"]
    finally:
        life.close()


def test_a_renamed_folder_above_the_event_file_posts_the_check(tmp_path):
    folder = tmp_path / "deep" / "er"
    folder.mkdir(parents=True)
    addr = Address(str(folder / "events.jsonl"))
    open(addr.path, "w").close()
    os.mkdir(addr.sidecar)
    loop, stopped = Loop(), []
    life = Lifetime(60.0, addr, Identified(addr.path), Identified(addr.sidecar), loop, stopped.append)
    life.watch_reachable()
    try:
        loop.run_timers()
        os.rename(str(tmp_path / "deep"), str(tmp_path / "moved"))
        loop.news()
        assert stopped == ["the event file was moved, removed or replaced"]
    finally:
        life.close()


def test_a_file_written_beside_the_event_file_is_not_a_change(tmp_path):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert fd >= 0
    try:
        wd = libc.inotify_add_watch(fd, os.fsencode(str(tmp_path)), reachwatch.NAMES)
        names = {wd: frozenset(["events.jsonl", "events.jsonl.d"])}
        open(str(tmp_path / "other.jsonl"), "w").close()  # another session in the same folder
        os.mkdir(str(tmp_path / "other.jsonl.d"))
        assert reachwatch.relevant(os.read(fd, 4096), names) == (False, False)
        open(str(tmp_path / "events.jsonl"), "w").close()
        assert reachwatch.relevant(os.read(fd, 4096), names) == (True, False)
    finally:
        os.close(fd)


def test_without_inotify_the_runtime_checks_each_second(session):
    _, lifetime = session
    life, loop, stopped = lifetime(NoInotify())
    assert life.watch is None
    assert [seconds for seconds, _ in loop.later] == [REACHABLE_CHECK]
    loop.run_timers()
    assert [seconds for seconds, _ in loop.later] == [REACHABLE_CHECK] and stopped == []


def test_a_watch_that_cannot_be_added_leaves_the_timer_and_no_descriptor(session):
    _, lifetime = session
    libc = NoWatch()
    life, loop, _ = lifetime(libc)
    assert life.watch is None and libc.fd >= 0
    assert [seconds for seconds, _ in loop.later] == [REACHABLE_CHECK]
    assert not is_inotify(libc.fd)


def test_a_watch_that_ends_by_itself_hands_over_to_the_timer(session):
    _, lifetime = session
    life, loop, stopped = lifetime()
    loop.run_timers()
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.inotify_rm_watch(life.watch.fd, min(life.watch._names)) == 0  # as an unmount would
    loop.next_job()()
    assert life.watch is None and stopped == []
    assert [seconds for seconds, _ in loop.later] == [REACHABLE_CHECK]


def test_stopping_closes_the_inotify_descriptor(session):
    _, lifetime = session
    life, _, _ = lifetime()
    watch = life.watch
    assert is_inotify(watch.fd)
    life.close()
    watch.thread.join(10)
    assert not watch.thread.is_alive() and not is_inotify(watch.fd)


def is_inotify(fd):
    try:
        return os.readlink("/proc/self/fd/%d" % fd) == "anon_inode:inotify"
    except OSError:
        return False
