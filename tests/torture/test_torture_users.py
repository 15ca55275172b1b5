"""Torture scenario 10: another local user (issue 9, Hardening).

A throw-away local user plants symlinks, files, directories, pid files and
sockets wherever a session of root's looks: the event path, the sidecar and
each file in it, the fallback socket directory.  Root's commands refuse them
(exit 2, one line naming the path and its owner) or go on without them; they
never follow, write, trust or kill through them, and never send the other user
a byte.  The drivers live in tests/support/torture_users.py (also run by
bench/torture_report.py)."""

from __future__ import annotations

import os
import subprocess
from typing import Iterator

import pytest
from cliutil import processes_under, run, runtime_pids, wait_for
from torture_support import check, of_kind, one_clear_line
from torture_users import (
    COMMANDS,
    ENV,
    PLANTED,
    PROMPT,
    SIDECAR_FILES,
    SOCKET_PLACES,
    Hunt,
    OtherUser,
    VictimProcess,
    as_user,
    command_argv,
    copy_session,
    fingerprint,
    forged_snapshot,
    give,
    hunt_cases,
    listener_case,
    long_session,
    ok,
    other_user,
    read,
    shared_dir,
    stale_socket,
    stop_runtimes,
    their_fallback_dir,
    unavailable,
    write_file,
)

from harnessctl.store.address import Address

pytestmark = pytest.mark.torture


@pytest.fixture(scope="module")
def user() -> Iterator[OtherUser]:
    """A throw-away local user for this module, removed afterwards even when a test failed."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with other_user() as created:
        yield created


@pytest.fixture(scope="module")
def hunt(user, tmp_path_factory) -> Iterator[Hunt]:
    """Stopped sessions to copy (idle exit, kill -9) and a process of ours for pid files to name."""
    made = Hunt(str(tmp_path_factory.mktemp("templates")), user)
    yield made
    made.close()


def refused(proc: subprocess.CompletedProcess, *fragments: str) -> bool:
    """Exit 2 with one clear line carrying `fragments`."""
    return proc.returncode == 2 and one_clear_line(proc.stderr, *fragments)


def owned_by(user: OtherUser) -> str:
    return "owned by %s (uid %d)" % (user.name, user.uid)


# -- the hunt's own coverage and controls -----------------------------------------------


def test_every_file_a_session_leaves_in_its_sidecar_is_hunted(hunt):
    """The hunt's list comes from Address and the adapters' sources: a sidecar file
    that a session creates some other way would escape it."""
    assert hunt.templates.leftovers() == []
    assert {"harness.pid", "runtime.log", "runtime.sock", "mock-transcript.jsonl"} <= set(SIDECAR_FILES)


def test_control_a_pid_file_of_ours_does_make_status_kill_the_process_it_names(hunt, efile):
    """Without this, "our process survived" could pass because nothing ever kills."""
    copy_session(hunt.templates.paths["killed"], efile)
    sacrifice = VictimProcess()
    try:
        write_file(Address(efile).harness_pid, sacrifice.line, 0o600)
        ok("status", efile)
        wait_for(lambda: not sacrifice.intact(), 10, "the named process killed")
    finally:
        sacrifice.stop()


def test_control_the_forged_snapshot_bait_shows_in_status_when_it_is_ours(hunt, efile):
    """Without this, a planted state.json could look ignored because the forgery was invalid."""
    hunt.templates.copy("idle", efile)
    forged = forged_snapshot(efile)
    write_file(Address(efile).snapshot, forged, 0o600)
    assert PLANTED in ok("status", efile).stdout.decode()


# -- the instances ------------------------------------------------------------------


def test_a_sidecar_they_made_before_our_first_send_is_refused_and_its_symlinks_never_followed(user, hunt, workdir):
    """They guess the path of our next event file and make FILE.d/ first (0777) with
    harness.pid and runtime.log as symlinks to files of ours: our send must not log
    into our file, take our file for a pid file, nor leave a runtime or a file behind."""
    shared = shared_dir(str(workdir))
    victims = {"harness.pid": (str(workdir / "victim.pid"), hunt.victim.line),
               "runtime.log": (str(workdir / "victim.log"), b"a log of ours\n")}
    for victim, content in victims.values():
        write_file(victim, content, 0o600)
    before = {victim: fingerprint(victim) for victim, _ in victims.values()}

    def their_sidecar() -> None:
        os.mkdir("events.jsonl.d", 0o777)
        for name, (victim, _) in victims.items():
            os.symlink(victim, os.path.join("events.jsonl.d", name))

    as_user(user, shared, their_sidecar)
    path = os.path.join(shared, "events.jsonl")
    proc = run("send", path, PROMPT, env=ENV)
    assert refused(proc, path + ".d", owned_by(user)), (proc.returncode, proc.stderr)
    assert {victim: fingerprint(victim) for victim in before} == before
    assert hunt.victim.intact()
    assert not os.path.exists(path), "a refused first send leaves no event file behind"
    assert not runtime_pids(path) and not processes_under(str(workdir))


def test_their_pid_file_in_a_sidecar_they_own_never_makes_status_kill_our_process(user, hunt, workdir):
    """Our event file, their FILE.d/ next to it with a harness.pid naming a
    process of ours (pid and start time right): status refuses the sidecar."""
    shared = shared_dir(str(workdir))
    path = os.path.join(shared, "events.jsonl")
    copy_session(hunt.templates.paths["killed"], path)
    os.rename(path + ".d", str(workdir / "ours.d"))  # our sidecar is gone; theirs takes its place

    def their_sidecar() -> None:
        os.mkdir("events.jsonl.d", 0o777)
        write_file(os.path.join("events.jsonl.d", "harness.pid"), hunt.victim.line, 0o644)

    as_user(user, shared, their_sidecar)
    before = read(path)
    proc = run("status", path, env=ENV)
    assert refused(proc, path + ".d", owned_by(user)), (proc.returncode, proc.stderr)
    assert hunt.victim.intact()
    assert read(path) == before


def test_their_pid_file_in_our_killed_sidecar_never_makes_status_kill_our_process(user, hunt, workdir, efile):
    """kill -9 of our runtime leaves harness.pid for the next command to act on;
    one that they wrote (naming a process of ours, pid and start time right) is refused."""
    ok("send", efile, "/permission hold on\nmine")
    wait_for(lambda: of_kind(efile, "request"), 20, "request")
    stop_runtimes(efile, str(workdir))
    pid_file = Address(efile).harness_pid
    write_file(pid_file, hunt.victim.line, 0o644)
    give(pid_file, user)
    before = read(efile)
    proc = run("status", efile, env=ENV)
    assert refused(proc, pid_file, owned_by(user)), (proc.returncode, proc.stderr)
    assert hunt.victim.intact()
    assert read(efile) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_an_event_file_they_created_is_refused_and_left_untouched(command, user, hunt, workdir):
    """Their 0666 file holding valid events, at a path we use: refused for its owner alone."""
    shared = shared_dir(str(workdir))
    path = os.path.join(shared, "events.jsonl")
    events = read(hunt.templates.paths["idle"])
    as_user(user, shared, write_file, "events.jsonl", events, 0o666)
    before = fingerprint(path)
    proc = run(*command_argv(command, path), env=ENV)
    assert refused(proc, path, owned_by(user)), (proc.returncode, proc.stderr)
    assert fingerprint(path) == before
    assert not os.path.lexists(path + ".d") and not runtime_pids(path)


@pytest.mark.parametrize("command", COMMANDS)
def test_their_symlink_at_the_event_path_is_refused_and_its_target_stays_empty(command, user, workdir):
    """Their symlink to an empty file of ours: following it would make our file an event file."""
    shared = shared_dir(str(workdir))
    target = str(workdir / "ours.jsonl")
    write_file(target, b"", 0o600)
    as_user(user, shared, os.symlink, target, "events.jsonl")
    path = os.path.join(shared, "events.jsonl")
    before = fingerprint(target)
    proc = run(*command_argv(command, path), env=ENV)
    assert refused(proc, path, owned_by(user)), (proc.returncode, proc.stderr)
    assert fingerprint(target) == before
    assert not os.path.lexists(target + ".d") and not os.path.lexists(path + ".d")


@pytest.mark.parametrize("command", COMMANDS)
def test_an_event_file_of_ours_writable_by_others_is_refused(command, hunt, efile):
    """Anyone could have rewritten a 0666 event file: its lines cannot be trusted."""
    hunt.templates.copy("idle", efile)
    os.chmod(efile, 0o666)
    before = fingerprint(efile)
    proc = run(*command_argv(command, efile), env=ENV)
    assert refused(proc, efile, "mode 0666"), (proc.returncode, proc.stderr)
    assert fingerprint(efile) == before
    assert not runtime_pids(efile)


@pytest.mark.parametrize("command", COMMANDS)
def test_their_directory_symlink_on_the_event_path_is_refused(command, user, hunt, workdir):
    """shared/link -> our session's directory, planted by them: a path through it is not ours."""
    ours = str(workdir / "ours")
    os.mkdir(ours)
    real = os.path.join(ours, "events.jsonl")
    hunt.templates.copy("idle", real)
    shared = shared_dir(str(workdir))
    as_user(user, shared, os.symlink, ours, "link")
    before = read(real)
    proc = run(*command_argv(command, os.path.join(shared, "link", "events.jsonl")), env=ENV)
    assert refused(proc, os.path.join(shared, "link"), owned_by(user)), (proc.returncode, proc.stderr)
    assert read(real) == before


SIDECAR_KINDS = ("their-dir-0777", "their-dir-0700", "their-symlink-to-our-dir", "our-symlink-to-their-dir",
                 "our-dir-0777", "our-dir-0770")


def not_ours_alone(kind: str, user: OtherUser, hunt: Hunt, workdir: str, path: str) -> None:
    """FILE.d for `kind`, holding a harness.pid that names our victim process."""
    sidecar = path + ".d"
    if kind.startswith("our-dir"):
        os.chmod(sidecar, int(kind[-4:], 8))
    elif kind == "their-symlink-to-our-dir":
        os.rename(sidecar, os.path.join(workdir, "ours.d"))
        as_user(user, os.path.dirname(path), os.symlink, os.path.join(workdir, "ours.d"), os.path.basename(sidecar))
    else:
        os.rename(sidecar, os.path.join(workdir, "ours.d"))
        theirs = os.path.join(os.path.dirname(path), "theirs") if kind.startswith("our-") else sidecar
        mode = 0o700 if kind == "their-dir-0700" else 0o777
        as_user(user, os.path.dirname(path), os.mkdir, os.path.basename(theirs), mode)
        give(theirs, user)
        write_file(os.path.join(theirs, "harness.pid"), hunt.victim.line, 0o600)
        give(os.path.join(theirs, "harness.pid"), user)
        if theirs != sidecar:
            os.symlink(theirs, sidecar)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", SIDECAR_KINDS)
def test_a_sidecar_that_is_not_ours_alone_is_refused(kind, command, user, hunt, workdir):
    """FILE.d must be our directory (or our symlink to one), not writable by group or
    others.  Each kind holds a harness.pid naming our process; in ours, that file is
    even our own and valid, so trusting the sidecar would kill the process."""
    shared = shared_dir(str(workdir))
    path = os.path.join(shared, "events.jsonl")
    copy_session(hunt.templates.paths["killed"], path)
    write_file(Address(path).harness_pid, hunt.victim.line, 0o600)
    not_ours_alone(kind, user, hunt, str(workdir), path)
    before = read(path)
    proc = run(*command_argv(command, path), env=ENV)
    assert refused(proc, path + ".d"), (proc.returncode, proc.stderr)
    assert hunt.victim.intact()
    assert read(path) == before
    assert not runtime_pids(path)


# -- the hunt: every sidecar file x attack x command ----------------------------------------

HUNT = [pytest.param(*case, id="-".join(case)) for case in hunt_cases()]


@pytest.mark.parametrize("name,attack,command,stopped", HUNT)
def test_a_planted_sidecar_entry_is_refused_or_ignored_never_followed(name, attack, command, stopped, hunt, workdir):
    """Their symlink to a file of ours, their 0666 file, their directory, or our own
    file left 0666, at FILE.d/NAME of a session whose runtime idled out or was
    killed: the command exits 0 (3 for the reply) without trusting it, or 2 naming
    it; our file and our process stay intact, nothing outside the sidecar is
    written, the event file stays valid."""
    hunt.sidecar_case(str(workdir), name, attack, command, stopped)


# -- sockets --------------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("place", SOCKET_PLACES)
def test_their_listener_never_receives_a_command(place, command, user, hunt, workdir):
    """Their socket (or their symlink to it) in our sidecar, or in the fallback
    directory they made or symlinked before us, served by a process of theirs that
    answers like a runtime: refused after connect (peer uid), not one byte sent."""
    listener_case(user, hunt.templates, str(workdir), place, command)


@pytest.mark.parametrize("first", [True, False], ids=["first-send", "stopped-session"])
@pytest.mark.parametrize("kind", ["dir", "symlink"])
def test_a_fallback_socket_dir_of_theirs_is_refused_before_a_runtime_listens_there(kind, first, user, hunt,
                                                                                     workdir):
    """A stale socket of theirs in the fallback directory they made (or symlinked):
    nobody answers, so a send starts a runtime, which must refuse to listen there
    rather than replace their socket; a refused first send leaves no file behind."""
    path = long_session(hunt.templates, str(workdir))
    if first:
        os.unlink(path)
        os.rename(path + ".d", str(workdir / "unused.d"))
    before = fingerprint(path)
    with their_fallback_dir(user, kind) as served:
        name = os.path.basename(Address(path).socket)
        as_user(user, served, stale_socket, name)
        theirs = fingerprint(os.path.join(served, name))
        proc = run("send", path, PROMPT, env=ENV)
        assert fingerprint(os.path.join(served, name)) == theirs
    assert refused(proc, os.path.dirname(Address(path).socket), owned_by(user)), (proc.returncode, proc.stderr)
    assert fingerprint(path) == before
    assert not runtime_pids(path) and not processes_under(str(workdir))
    if not first:
        check(path)
