"""Torture scenario: rename, hard-link and unlink an event file during a run (issue 9).

The writer lock of a session follows the file (its inode), not its name.  `moves()`
starts a run in a fresh event file, round after round, and at a random moment of
its life (from the runtime's own start-up to its last tenths, sometimes with a
permission request pending or steering sends in flight) applies one operation to
the file or its sidecar: rename the file; rename file and sidecar together;
hard-link the file; remove the sidecar; unlink the file; replace the file at the
path with a copy; copy the file without its sidecar and run concurrent statuses
on the copy.  Then it sends to the old and the new names, answers or cancels what
is pending and, once every file has settled, checks every distinct file involved
(the moved, linked or unlinked one too, through a descriptor kept open) with the
independent checker, and the round's sends with Sends.verify.  Between rounds no
two live runtimes may have one event file open, and each must hold the lock of
the file it has open.  The helpers below are shared with tests/torture/test_torture_moves.py.

Exit codes: a send racing the operation may be refused (2: no binding under
that name yet or any more; 5: the file is held by a runtime under another name,
or that runtime stopped before taking the input), or exit 6 only as "the
runtime stopped (...) while confirming the input": its harness had the input
when the file moved away, so the input is in no file, yet the harness may have
acted on it.  A send after the operation must exit as the names' state says
(0; 2 without --adapter where nothing is bound; 5 for a hard link's other name).
"""

from __future__ import annotations

import os
import random
import shutil
import stat
import subprocess
import time
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from cliutil import alive, cli_env, processes_under, run, start, wait_for
from torture_support import Scan, Sends, assert_no_leftovers, check, fold, popen_send, read_events

Identity = Tuple[int, int]  # (st_dev, st_ino): the file itself, whatever its names

MOCK = ("--adapter", "mock")
OPS = ("rename", "rename_with_sidecar", "link", "remove_sidecar", "unlink", "replace_with_copy", "copy_and_status")
# Small knobs: runtimes idle out quickly (a hard link's second name waits for
# that), and a send that waits for a runtime under another name gives up (exit
# 5) after 0.8 x 10 s instead of 24 s.
ENV = {"HARNESSCTL_IDLE_TIMEOUT": "0.6", "HARNESSCTL_TIMEOUT": "10"}
STARTUP = 0.35  # about how long a cold send takes to get its runtime and harness going here
# The one exit 6 a move may cause: the runtime stopped (its file moved away) after
# handing the input to the harness and before the harness confirmed it.  The
# accepted line was never written, but the harness may have acted on the input.
UNCERTAIN = "while confirming the input"


# -- files, descriptors, runtimes, locks ------------------------------------------------


def identity(path: str) -> Optional[Identity]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def copy_lines(source: str, target: str) -> int:
    """Copy the complete lines of `source` into a new 0600 file `target` (as `cp`
    does for a reader that catches no half-written line); returns how many."""
    with open(source, "rb") as f:
        data = f.read()
    data = data[:data.rfind(b"\n") + 1]
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return data.count(b"\n")


def remove_tree(path: str) -> None:
    """`rm -rf`, repeated while a runtime or its harness still creates files in it."""
    def gone() -> bool:
        shutil.rmtree(path, ignore_errors=True)
        return not os.path.lexists(path)

    wait_for(gone, 10, "%s removed" % path, 0.005)


def runtimes(directory: str) -> Dict[int, str]:
    """pid -> event path (from its command line) of every live runtime under `directory`."""
    found = {}
    for pid in processes_under(directory):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        paths = [arg for arg in argv if arg.endswith(b".jsonl")]
        if b"harnessctl.runtime." in b" ".join(argv) and paths and alive(pid):
            found[pid] = os.fsdecode(paths[0])
    return found


def open_event_files(pid: int) -> Set[Identity]:
    """The event files (regular *.jsonl files outside a sidecar, wherever they
    are now, removed ones too) that process `pid` has open."""
    found: Set[Identity] = set()
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return found
    for fd in fds:
        link = "/proc/%d/fd/%s" % (pid, fd)
        try:
            target = os.readlink(link)
            st = os.stat(link)
        except OSError:
            continue
        if target.endswith(" (deleted)"):
            target = target[:-len(" (deleted)")]
        if stat.S_ISREG(st.st_mode) and target.endswith(".jsonl") and ".jsonl.d/" not in target:
            found.add((st.st_dev, st.st_ino))
    return found


def flock_holders() -> Dict[Identity, Set[int]]:
    """Who holds a flock on which file, from /proc/locks (waiters, `->`, left out)."""
    holders: Dict[Identity, Set[int]] = {}
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 6 or fields[1] != "FLOCK":
                continue
            major, minor, inode = fields[5].split(":")
            key = (os.makedev(int(major, 16), int(minor, 16)), int(inode))
            holders.setdefault(key, set()).add(int(fields[4]))
    return holders


def writer_problems(directory: str) -> List[str]:
    """Two live runtimes with one event file open, or a runtime with an event file
    open whose lock it does not hold (it would be writing, or waiting, beside the writer)."""
    holders = flock_holders()
    seen: Dict[Identity, int] = {}
    problems = []
    for pid, path in sorted(runtimes(directory).items()):
        for ident in open_event_files(pid):
            if ident in seen:
                problems.append("runtimes %d and %d (%s) both have file %s open" % (seen[ident], pid, path, ident))
            seen[ident] = pid
            if pid not in holders.get(ident, set()):
                problems.append("runtime %d (%s) has file %s open without holding its lock" % (pid, path, ident))
    return problems


def assert_one_writer_per_file(directory: str, timeout: float = 5) -> None:
    """writer_problems() stays empty, allowing for the moment a runtime that exits
    reads its file once more (its snapshot) after letting go of the lock."""
    last: List[List[str]] = [[]]

    def clean() -> bool:
        last[0] = writer_problems(directory)
        return not last[0]

    try:
        wait_for(clean, timeout, "one writer per file", 0.05)
    except AssertionError:
        raise AssertionError("more than one writer: %s" % last[0]) from None


def conversation(path: str) -> Any:
    return fold(event for event, _ in read_events(path))


def allowed(returncode: int, stderr: bytes, codes: Sequence[int]) -> bool:
    return returncode in codes or (returncode == 6 and UNCERTAIN.encode() in stderr and 6 in codes)


# -- one round ------------------------------------------------------------------------


class Command:
    """A command running in the background and the exit codes it may end with."""

    def __init__(self, proc: subprocess.Popen, kind: str, path: str, text: str, codes: Tuple[int, ...]) -> None:
        self.proc = proc
        self.kind = kind
        self.path = path
        self.text = text
        self.codes = codes
        self.ended = False


class Round:
    """One run in a fresh event file, one operation at a random moment of its
    life, the sends that follow, and the check of every file involved."""

    def __init__(self, directory: str, number: int, op: str, rng: random.Random, env: Dict[str, str]) -> None:
        self.directory = directory
        self.op = op
        self.rng = rng
        self.env = env
        self.a = os.path.join(directory, "m%03d.jsonl" % number)  # the name the run starts under
        self.b = os.path.join(directory, "m%03d-new.jsonl" % number)  # the new name, the link or the copy
        self.names = [self.a]
        self.first = ""  # the text of the run the operation strikes
        self.creating = False  # whether the first send was still in flight when the operation struck
        self.label = "m%03d" % number
        self.n = 0
        self.sends = Sends()
        self.procs: List[Command] = []
        self.kept: Dict[Identity, int] = {}  # a descriptor on every file seen, to read it once nameless
        self.copies: Dict[Identity, int] = {}  # a copy -> how many lines it got from its original
        self.answered: Set[Tuple[Identity, str]] = set()
        self.problems: List[str] = []
        self.commands = 0
        self.uncertain = 0
        self.started = time.monotonic()
        self.story: List[str] = []

    def token(self, what: str) -> str:
        self.n += 1
        return "%s-%d-%s" % (self.label, self.n, what)

    # -- the scenario ------------------------------------------------------------------

    def play(self) -> None:
        sleep = self.rng.uniform(0.2, 0.6)
        first = "/sleep %.2f\n" % sleep
        if self.rng.random() < 0.3:
            first += "/permission may I?\n"
        self.first = first + self.token("first")
        self.background("send", self.a, self.first, MOCK, (0, 2, 5, 6))
        wait_for(lambda: os.path.exists(self.a) or self.procs[0].proc.poll() is not None, 30,
                 "the first send creating %s" % self.a, 0.002)
        self.keep(self.a)
        # A moment of the run's life, its runtime's own start-up weighted up (it is short).
        moment = self.rng.uniform(0, STARTUP if self.rng.random() < 0.3 else STARTUP + sleep)
        if self.rng.random() < 0.4:
            time.sleep(max(0.0, moment - 0.1))
            self.steer()
            time.sleep(self.rng.uniform(0, 0.1))
        else:
            time.sleep(moment)
        self.note("op %s" % self.op)
        self.creating = self.procs[0].proc.poll() is None
        getattr(self, "_" + self.op)()
        self.note("op done")
        self.follow_up()
        self.wait("every command", self.idle)
        self.settle()

    def steer(self) -> None:
        """Sends in flight into the run when the operation strikes (also racing its start)."""
        for _ in range(self.rng.randint(1, 2)):
            flags = MOCK if self.rng.random() < 0.5 else ()
            self.background("send", self.a, self.token("steer"), flags, (0, 2, 5, 6))

    def follow_up(self) -> None:
        """A send to the old and to the new name: --adapter where no binding is there
        (now and then left out, which must exit 2), with or without it elsewhere."""
        for name in self.names:
            bound = os.path.exists(os.path.join(name + ".d", "binding.json"))
            used = os.path.exists(name) and os.path.getsize(name) > 0  # never bound anew: exit 2 without a binding
            if bound:
                flags: Tuple[str, ...] = MOCK if self.rng.random() < 0.3 else ()
            else:
                flags = MOCK if self.rng.random() < 0.85 else ()
            codes: Tuple[int, ...] = (0,) if bound or (flags and not used) else (2,)
            if self.sending(name):
                codes = (0, 2)  # a send still in flight may bind the name first, or its file get events
            elif not bound and not used and (self.growing(name) or self.creating):
                # a send in flight under its other name (a link), or the runtime of the first send the
                # operation struck (it keeps the renamed file open), may give the file events first
                codes += (2,)
            elif bound and name != self.a and self.creating:
                codes += (2,)  # moved while the first send made it: a binding it had not yet recorded is refused
            if self.op == "link" and name == self.b and 0 in codes and not bound:
                codes += (5,)  # waits for the runtime serving the file as self.a; exit 5 if it outlives 8 s
            head = self.rng.choice(["", "", "/sleep 0.2\n", "/permission ok?\n"])
            self.background("send", name, head + self.token("after"), flags, codes)
        for name in self.names:
            if self.rng.random() < 0.5:  # a status meanwhile: from the runtime, the file, or "no such file"
                codes = (0,) if os.path.exists(name) else (0, 4)
                if self.sending(name):  # a first send that fails takes back the empty file it made (README)
                    codes = (0, 2, 4)
                self.background("status", name, "", (), codes)

    def sending(self, name: str) -> bool:
        return any(c.kind == "send" and c.path == name and c.proc.poll() is None for c in self.procs)

    def growing(self, name: str) -> bool:
        """Whether a send in flight under another name of the same file (a hard link) may write to it."""
        ident = identity(name)
        return ident is not None and any(c.kind == "send" and c.path != name and c.proc.poll() is None
                                         and identity(c.path) == ident for c in self.procs)

    # -- the operations ------------------------------------------------------------------

    def _rename(self) -> None:
        os.rename(self.a, self.b)
        self.names.append(self.b)

    def _rename_with_sidecar(self) -> None:
        os.rename(self.a, self.b)
        self.names.append(self.b)
        try:
            os.rename(self.a + ".d", self.b + ".d")
        except FileNotFoundError:  # a first send that failed took its sidecar back
            pass

    def _link(self) -> None:
        os.link(self.a, self.b)
        self.names.append(self.b)

    def _remove_sidecar(self) -> None:
        remove_tree(self.a + ".d")

    def _unlink(self) -> None:
        os.unlink(self.a)

    def _replace_with_copy(self) -> None:
        temporary = self.a + ".copy"
        lines = copy_lines(self.a, temporary)
        self.copies[identity(temporary)] = lines
        self.keep(temporary)
        os.rename(temporary, self.a)

    def _copy_and_status(self) -> None:
        lines = copy_lines(self.a, self.b)
        self.copies[identity(self.b)] = lines
        self.names.append(self.b)
        self.keep(self.b)
        for _ in range(self.rng.randint(3, 8)):
            self.background("status", self.b, "", (), (0,))
        if self.rng.random() < 0.7:  # else the sends below race the statuses
            self.wait("the statuses on the copy", self.idle)

    # -- commands --------------------------------------------------------------------------

    def background(self, kind: str, path: str, text: str, flags: Sequence[str], codes: Tuple[int, ...]) -> None:
        if kind == "send":
            proc = popen_send(path, text, *flags, env=self.env)
        else:
            proc = start(kind, path, stdin=subprocess.DEVNULL, env=self.env)
        self.procs.append(Command(proc, kind, path, text or os.path.basename(path), codes))
        self.note("%s %s %s %s" % (kind, os.path.basename(path), " ".join(flags), text[-14:]))

    def note(self, what: str) -> None:
        """The round's story, told when it fails."""
        self.story.append("%.3f %s" % (time.monotonic() - self.started, what))

    def idle(self) -> bool:
        """Tend the files; True once no command of ours is running."""
        self.tend()
        running = False
        for command in self.procs:
            if command.proc.poll() is None:
                running = True
            elif not command.ended:
                command.ended = True
                self.note("%s %s exited %d" % (command.kind, command.text[-14:], command.proc.returncode))
        return not running

    def collect(self) -> None:
        """Record the outcome of every finished command (once)."""
        for command in self.procs:
            out, err = command.proc.communicate(timeout=60)
            returncode = command.proc.returncode
            self.commands += 1
            if command.kind == "send":
                self.sends.add(command.text, returncode, err)
                self.uncertain += returncode == 6
            elif returncode == 0 and len(out.splitlines()) != 1:
                self.problems.append("%s printed %r" % (command.kind, out[:200]))
            if returncode:
                self.note("(%s %s: %s)" % (command.kind, command.text[-14:], err.decode(errors="replace").strip()))
            if not allowed(returncode, err, command.codes):
                self.problems.append("%s %r exited %d (allowed %s): %s" % (
                    command.kind, command.text[-30:], returncode, command.codes, err.decode(errors="replace").strip()))
        self.procs = []

    def tend(self) -> None:
        """Answer (or cancel) each pending request once, through the name of the
        runtime that holds its file's lock, when that name still names the file."""
        holders = flock_holders()
        serving = runtimes(self.directory)
        for ident, path in self.files().items():
            pending = conversation(path).pending
            # Its writer holds the lock; failing that (a bug), any runtime started for one of its names.
            writers = holders.get(ident) or set(serving)
            for pid in writers:
                name = serving.get(pid)
                if name is None or identity(name) != ident:
                    continue
                for request_id in pending:
                    if (ident, request_id) not in self.answered:
                        self.answered.add((ident, request_id))
                        self.answer(name, request_id)

    def answer(self, name: str, request_id: str) -> None:
        if self.rng.random() < 0.25:
            argv, codes = ["cancel", name], (0,)
        else:
            argv, codes = ["reply", name, request_id, self.rng.choice(["allow", "deny"])], (0, 3)  # 3: expired
        proc = run(*argv, stdin=subprocess.DEVNULL, env=self.env)
        self.commands += 1
        self.note("%s -> %d" % (" ".join(argv[:1] + argv[2:]), proc.returncode))
        if proc.returncode not in codes:
            self.problems.append("%s exited %d: %s" % (" ".join(argv[:1] + argv[2:3]), proc.returncode,
                                                       proc.stderr.decode(errors="replace").strip()))

    def wait(self, what: str, predicate: Any, timeout: float = 45) -> None:
        wait_for(predicate, timeout, "%s (round %s, %s)" % (what, self.label, self.op), 0.05)

    # -- settling and checking ---------------------------------------------------------------

    def keep(self, path: str) -> None:
        ident = identity(path)
        if ident is not None and ident not in self.kept:
            try:
                self.kept[ident] = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                pass

    def files(self) -> Dict[Identity, str]:
        """Every distinct file involved, with a path to read it: a name, or the
        descriptor kept open on it once it has none."""
        found: Dict[Identity, str] = {}
        for name in self.names:
            self.keep(name)
            ident = identity(name)
            if ident is not None and ident not in found:
                found[ident] = name
        for ident, fd in self.kept.items():
            found.setdefault(ident, "/proc/self/fd/%d" % fd)
        return found

    def settle(self) -> None:
        """Until no file shows open work: pending requests answered, a runtime at
        work waited for, and a file nobody writes any more recovered by a status
        through one of its names (the lost-runtime rule, as a caller would see it).
        torture_support.settle() finds a file's runtime by its name, which a moved
        or linked file no longer tells, and answers no request."""
        self.collect()
        last: List[str] = []

        def settled() -> bool:
            self.tend()
            holders = flock_holders()
            for ident, path in self.files().items():
                writing = holders.get(ident)
                if not conversation(path).is_busy():
                    continue
                last[:] = ["%s (%s) busy, writer %s: %s" % (path, ident, writing, conversation(path).status())]
                if writing:
                    return False
                if path.startswith("/proc/"):
                    return False  # nameless and nobody writes it: lost for good, unless a writer comes
                proc = run("status", path, stdin=subprocess.DEVNULL, env=self.env)
                self.commands += 1
                self.note("settling status %s -> %d" % (os.path.basename(path), proc.returncode))
                if proc.returncode:
                    self.problems.append("status of %s exited %d: %s" % (path, proc.returncode, proc.stderr))
                return False
            return True

        try:
            self.wait("every file settled", settled)
        except AssertionError as e:
            raise AssertionError("%s: %s" % (e, last)) from None
        assert not self.problems, "round %s (%s): %s" % (self.label, self.op, "\n".join(self.problems))

    def verify(self, strict: bool) -> Dict[str, int]:
        """check() every file; Sends.verify over all of them, lines a copy got from
        its original left out (they are not new acceptances)."""
        merged = Scan()
        results = 0
        files = self.files()
        for ident, path in files.items():
            try:
                s = check(path, torn_tail_ok=not strict)
            except AssertionError as e:
                raise AssertionError("round %s (%s), file %s: %s" % (self.label, self.op, ident, e)) from None
            results += s.results
            skip = self.copies.get(ident, 0)
            for input_id, info in s.inputs.items():
                if info["line"] > skip:
                    merged.inputs["%s %s" % (ident, input_id)] = info
        try:
            self.sends.verify(merged)
        except AssertionError as e:
            raise AssertionError("round %s (%s): %s" % (self.label, self.op, e)) from None
        return {"files": len(files), "inputs": len(merged.inputs), "results": results}

    def first_outcome(self) -> str:
        """How the first input ended: refused, completed, cancelled, stopped (by the
        runtime the operation stopped) or lost (recovered by the next writer)."""
        copies = set(self.copies)
        for ident, path in self.files().items():
            if ident in copies:
                continue
            events = [e for e, _ in read_events(path)]
            ids = {e["input_id"] for e in events if e["type"] == "accepted" and e.get("text") == self.first}
            for e in events:
                if e["type"] == "result" and ids & set(e["input_ids"]):
                    if e["status"] != "failed":
                        return e["status"]
                    error = e.get("error") or ""
                    return "stopped" if error.startswith("the runtime stopped") else error[:40]
        return "refused"

    def close(self) -> None:
        for fd in self.kept.values():
            os.close(fd)
        self.kept = {}


# -- the driver -------------------------------------------------------------------------


def moves(directory: str, rounds: int, seed: int) -> Dict[str, Any]:
    """`rounds` rounds, every operation at least once when rounds >= len(OPS).
    Counts: sends and their exit codes, how the struck run's first input ended,
    the inputs accepted (a copy's inherited ones left out), the result lines and
    the distinct files checked."""
    rng = random.Random(seed)
    env = cli_env(**ENV)
    ops = list(OPS)
    rng.shuffle(ops)
    played: List[Round] = []
    by_op = {op: 0 for op in OPS}
    try:
        for number in range(rounds):
            op = ops[number] if number < len(ops) else rng.choice(OPS)
            this = Round(directory, number, op, rng, env)
            played.append(this)
            try:
                this.play()
                this.verify(strict=False)
            except AssertionError as e:
                raise AssertionError("%s\nthe round's story:\n%s" % (e, "\n".join(this.story))) from None
            assert_one_writer_per_file(directory)
            by_op[op] += 1
        wait_for(lambda: not runtimes(directory), 30, "every runtime idled out", 0.1)
        totals = {"files": 0, "inputs": 0, "results": 0}
        first: Dict[str, int] = {}
        for this in played:  # once more, now that nothing can write any more: no torn tail either
            for key, value in this.verify(strict=True).items():
                totals[key] += value
            outcome = this.first_outcome()
            first[outcome] = first.get(outcome, 0) + 1
        assert_no_leftovers(directory, [name for this in played for name in this.names])
    finally:
        for this in played:
            this.close()
    outcomes = [o for this in played for o in this.sends.outcomes]
    codes: Dict[int, int] = {}
    for _, returncode, _ in outcomes:
        codes[returncode] = codes.get(returncode, 0) + 1
    return {"rounds": len(played), "by_op": by_op, "sends": len(outcomes),
            "sends_ok": sum(1 for o in outcomes if o[1] == 0), "send_exit_codes": codes, "first_input": first,
            "inputs": totals["inputs"], "results": totals["results"], "files_checked": totals["files"],
            "uncertain_sends": sum(this.uncertain for this in played),
            "commands": sum(this.commands for this in played)}
