"""The harness a runtime drives: the adapter's backend, its child process and
pid record, and which incarnation of it is current.

Each start is a new generation; lines, exits and start timeouts of an older
one are ignored, so a harness that went away can never report into its
successor's runs.  What a start or an exit means for the waiting commands
and the open runs is the runtime's to decide: the supervisor only tells it
(`Moments`).
"""

from __future__ import annotations

import time

from ..checks.policy import native_mode
from ..errors import HarnessctlError, UnavailableError
from ..kit.backend import Config, stderr_words
from ..store import pidfile, registry
from .proc import MAX_LINE, Process

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence

    from ..box import Box
    from ..kit.backend import Backend, Host
    from .loop import Loop, Timer

    class Moments(Protocol):
        """What the supervisor tells its runtime (what a start or an exit means is the runtime's)."""

        def harness_refused(self, error: HarnessctlError) -> None: ...

        def harness_exited(self, while_starting: bool, returncode: Optional[int], said: str) -> None: ...

        def diagnostic(self, message: str, level: str = "warning", **fields: Any) -> None: ...

        def debug(self, text: str) -> None: ...


STOPPED, STARTING, READY = "stopped", "starting", "ready"


class Supervisor:
    def __init__(self, moments: Moments, loop: Loop, sidecar: str, harness_pid: str,
                 stderr: Callable[[bytes], None]) -> None:
        """`moments` hears of refused starts and exits, and takes what is
        logged.  The harness's stderr goes to `stderr` (the runtime log's write)."""
        self.moments = moments
        self.loop = loop
        self.sidecar = sidecar
        self.harness_pid = harness_pid
        self.stderr = stderr
        self.state = STOPPED
        self.generation = 0
        self.backend: Optional[Backend] = None
        self.box: Optional[Box] = None  # --sandbox: what each harness process of this start enters
        self.child: Optional[Process] = None
        self.recorded_pid: Optional[int] = None  # the harness pid in FILE.d/harness.pid
        self.last_activity: Optional[float] = None  # time.time() of the harness's last line
        self._deadline: Optional[Timer] = None  # when a start not ready yet is given up

    def start(self, host: Host, binding: Dict[str, Any], env: Dict[str, str], debug: bool, timeout: float,
              schema: Optional[Dict[str, Any]] = None) -> None:
        """Create the backend and start it; it reports ready or failed through `host`.
        `schema`: the first waiting input's (Config.schema)."""
        self.state = STARTING
        self.generation += 1
        generation = self.generation
        self._deadline = self.loop.call_later(timeout, lambda: self._start_timed_out(generation, timeout))
        try:
            manifest = registry.manifest(binding["adapter"])
            self.box = self._box(binding, manifest, env)
            if self.box is not None:
                env = dict(env, **self.box.env())
            config = Config(cwd=binding["cwd"], model=binding.get("model"), sidecar=self.sidecar, env=dict(env),
                            debug=debug, harness=manifest.get("harness") or {}, agent=binding.get("agent"),
                            mode=native_mode(binding), schema=schema, agents=manifest.get("agents"),
                            box=self.box.folder if self.box is not None else None)
            self.backend = registry.backend_class(binding["adapter"])(host, config)
            self.backend.start()
        except HarnessctlError as e:  # e.g. private.py refused one of the adapter's sidecar files
            self.moments.debug("backend.start refused: %s" % e)
            self.refused(e)
        except Exception as e:
            import traceback

            self.moments.debug("backend.start failed:\n" + traceback.format_exc())
            self.refused(UnavailableError(str(e)))

    def _box(self, binding: Dict[str, Any], manifest: Dict[str, Any], env: Dict[str, str]) -> Optional[Box]:
        """The session's box (--sandbox), checked now, or None; every harness
        process of this start enters it (`spawn`)."""
        if not binding.get("sandbox"):
            return None
        from ..box import Box, declared, git_folders
        from ..landlock import why_not

        reason = why_not()
        if reason is not None:
            raise UnavailableError(reason)  # never run unboxed what was bound boxed
        box = Box(self.sidecar[:-len(".d")], binding["cwd"], binding.get("sandbox_write") or [],
                  declared(manifest, binding.get("agent"), env), git=git_folders(binding))
        box.check()
        return box

    def ready(self) -> bool:
        """The backend says the harness is up; True if that is news."""
        if self.state != STARTING:
            return False
        self.state = READY
        if self._deadline is not None:  # up in time: an idle runtime does not wake for the deadline
            self.loop.cancel(self._deadline)
            self._deadline = None
        return True

    def refused(self, error: HarnessctlError) -> None:
        """The start failed: the waiting sends fail with `error`."""
        if self.state == STARTING:
            self.drop()
            self.moments.harness_refused(error)

    def spawn(self, argv: Sequence[str], env: Dict[str, str], cwd: str) -> Process:
        generation = self.generation
        ruleset = self.box.ruleset() if self.box is not None else None
        try:
            self.child = Process(
                argv, env, cwd, self.stderr,
                on_lines=lambda lines: self.loop.post(lambda: self._lines(generation, lines)),
                on_overlong=lambda size: self.loop.post(lambda: self._overlong(generation, size)),
                on_exit=lambda code: self.loop.post(lambda: self._exit(generation, code)),
                enter=ruleset.enter_fn() if ruleset is not None else None,
            )
        finally:
            if ruleset is not None:
                ruleset.close()
        self.recorded_pid = self.child.pid
        pidfile.record(self.harness_pid, self.child.pid)
        self.moments.debug("started harness pid %d: %s" % (self.child.pid, " ".join(argv)))
        return self.child

    def stop(self) -> None:
        """End the harness gracefully (the backend's own way), then for good."""
        if self.backend is not None:
            self.loop.guard(self.backend.stop)
        self.drop()

    def drop(self) -> None:
        """Forget the current harness; callbacks from it are ignored from now on."""
        self.generation += 1
        self.state = STOPPED
        self.backend = None
        if self.child is not None:
            self.child.kill()
            self.child.wait(5)
            self.child = None
        if self.recorded_pid is not None:
            pidfile.forget(self.harness_pid, self.recorded_pid)
            self.recorded_pid = None

    def _start_timed_out(self, generation: int, timeout: float) -> None:
        if generation == self.generation and self.state == STARTING:
            self.refused(UnavailableError("the harness did not become ready within %g s" % timeout))

    def _lines(self, generation: int, lines: List[str]) -> None:
        self.last_activity = time.time()
        for line in lines:
            if generation != self.generation or self.backend is None:
                return  # a line before this one (or a command between two) ended the harness
            self.loop.guard(self.backend.on_line, line)
            self.loop.run_commands()  # one read may hold hundreds of lines, each maybe an fsync

    def _overlong(self, generation: int, size: int) -> None:
        if generation != self.generation:
            return
        message = ("the harness wrote a line of %d bytes, longer than the %d MiB a line may have: it was discarded"
                   % (size, MAX_LINE // (1024 * 1024)))
        self.moments.debug(message)
        self.moments.diagnostic(message, bytes=size)

    def _exit(self, generation: int, returncode: Optional[int]) -> None:
        if generation != self.generation:
            return
        was, backend = self.state, self.backend
        # the harness's own reason (codex's "Error: approval_policy ... is no longer
        # supported"), for whatever the exit ends: otherwise only in the runtime log
        said = stderr_words(self.child.stderr_tail()) if self.child is not None else ""
        self.child = None
        try:
            if backend is not None:
                backend.on_exit(returncode)
        finally:
            self.drop()
        self.moments.harness_exited(was == STARTING, returncode, said)
