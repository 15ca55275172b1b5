"""The watch on a run the agent shows no progress on.

An agent that cannot reach its model may say nothing over ACP for minutes
(claude-agent-acp retries for about 3, codex-acp "waits for network" for
longer): a run with no progress QUIET seconds after its prompt gets a
`warning` with the agent's own words (a waiting send prints it), and one
still without progress after HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT is
cancelled and ends `failed` with the reason.  Progress is what the agent
shows of the run (text, a thought, a tool, a plan, a request: Run.progressed).
"""

from __future__ import annotations

from . import wire

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Optional, Protocol

    from .session import Parts
    from .updates import Run

    class Owner(Parts, Protocol):
        """What the watch asks of the backend of the agent process."""

        run: Optional[Run]  # the run whose session/prompt is open
        short: str  # the agent, where a message must be short
        unreadable: str  # its last stdout line that was no message
        STOP_GRACE: float

        def stderr_words(self) -> str: ...

        def finish_if_done(self, run: Run) -> None: ...

        def kill_agent(self) -> None: ...

QUIET = 10.0  # seconds after session/prompt with no progress: a `warning` says so (docs/ACP.md)
NO_PROGRESS_ENV = "HARNESSCTL_ACP_NO_PROGRESS_TIMEOUT"
NO_PROGRESS = 300.0  # seconds with no progress after which a run is given up: cancelled, `failed`


class Watch:
    """The two timers of each run of one agent process, set at its prompt."""

    def __init__(self, owner: Owner) -> None:
        self.owner = owner
        self.host, self.activity, self.config, self.calls = owner.host, owner.activity, owner.config, owner.calls

    def start(self, run: Run) -> None:
        """Watch a run whose prompt was just sent."""
        limit = wire.seconds(self.config.env.get(NO_PROGRESS_ENV), NO_PROGRESS)
        quiet = min(QUIET, limit / 2)  # a short limit: still warned of first
        self.host.call_later(quiet, lambda: self._quiet(run, quiet))
        self.host.call_later(limit, lambda: self._stalled(run, limit))

    def _waiting(self, run: Run) -> bool:
        """The run is still open and the agent has shown nothing of it."""
        return run is self.owner.run and run.response is None and not run.progressed and not run.stalled

    def _quiet(self, run: Run, seconds: float) -> None:
        if self._waiting(run):
            self.activity.stalled(run.run_id, "the ACP agent %s has shown no progress %g s after the prompt%s"
                                  % (self.owner.short, seconds, self._words(run)))

    def _stalled(self, run: Run, seconds: float) -> None:
        """No progress for the whole limit: cancel the turn; it ends `failed`
        when the agent answers, or after STOP_GRACE without that answer."""
        if not self._waiting(run):
            return
        run.stalled = "the ACP agent %s showed no progress in %g s (%s)%s" % (
            self.owner.short, seconds, NO_PROGRESS_ENV, self._words(run))
        self.calls.notify("session/cancel", {"sessionId": self.owner.session_id})
        self.host.call_later(self.owner.STOP_GRACE, lambda: self._abandon(run))

    def _abandon(self, run: Run) -> None:
        """The agent never answered that cancel: the run ends `failed`, and the
        agent is stopped (the next send starts it again)."""
        if run is not self.owner.run or run.response is not None:
            return
        run.response, run.steering = {"result": {}}, 0
        self.owner.finish_if_done(run)
        self.owner.kill_agent()

    def _words(self, run: Run) -> str:
        return wire.agent_words(run.said, self.owner.unreadable, self.owner.stderr_words())
