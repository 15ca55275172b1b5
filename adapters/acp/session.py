"""The ACP session of an initialized agent, set up: the stored one reopened,
a forked one, or a new one; then its mode and its model; then the `session`
line and ready.  Any step the agent refuses fails the start with its reason.

* the stored session is reopened by session/resume (no replay), else by
  session/load (its history replayed as session/update, which is already in
  the event file: `replaying`); an agent that can do neither, or refuses
  both, gets a new session, and a warning says the conversation is lost;
* `--mode` is the preset's own mode id (manifest `agents.<preset>.modes`),
  set by `session/set_mode` at every start, a resumed session's included;
  it wins over HARNESSCTL_ACP_MODE.  An agent that does not
  offer that mode (claude-agent-acp's bypassPermissions as root, gemini's
  autoEdit/yolo in an untrusted folder) fails the start with its reason;
* a file `harnessctl fork` made opens its first session by `session/fork`
  of the copied session id, in its own cwd (a new session id, the history
  of the source; both agents answer like session/new, without `models`),
  when the agent's init offers sessionCapabilities.fork; else its start
  fails saying so.
"""

from __future__ import annotations

from . import wire

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Protocol, Tuple

    from harnessctl.kit import Activity, Calls, Config, Host

    class Parts(Protocol):
        """What every part of the backend (the set-up, the watch) reads of it."""

        host: Host
        activity: Activity
        config: Config
        calls: Calls
        session_id: Optional[str]  # the session: the stored one, then the one opened

    class Owner(Parts, Protocol):
        """What the set-up asks of the backend of the agent process."""

        label: str  # the agent, for messages

        def save_resume(self, name: str, value: str, key: Optional[str] = None) -> None: ...

        def fail_start(self, message: str) -> None: ...

        def opened(self) -> None: ...

SESSION_FILE = "acp-session.json"  # in FILE.d: {"session_id": ...}, so a new runtime resumes it
MODE_ENV = "HARNESSCTL_ACP_MODE"


class Opening:
    """The set-up of one agent process's session, from its initialize answer
    to ready (the owner's `opened`), each step a request whose answer starts
    the next."""

    def __init__(self, owner: Owner) -> None:
        self.owner = owner
        self.host, self.activity, self.config, self.calls = owner.host, owner.activity, owner.config, owner.calls
        self.init: Dict[str, Any] = {}  # the initialize result
        self.replaying = False  # session/load replays history as session/update: not new activity

    def open(self, init: Dict[str, Any], fork_from: Optional[str], no_resume: Optional[str]) -> None:
        """A fork of `fork_from` for a forked file's first session; else the
        stored session reopened (not tried when the preset says `no_resume`:
        the same every time, even when the agent's load works by chance);
        else a new one."""
        self.init = init
        session_id = self.owner.session_id
        if fork_from and not session_id:
            self._fork(fork_from)
        elif session_id and no_resume:
            self._reopen([], ["not tried: %s" % no_resume])
        else:
            self._reopen(wire.resume_method(init) if session_id else [])

    def _reopen(self, methods: List[str], failures: Optional[List[str]] = None) -> None:
        """Reopen the stored session by the first method left, else a new one."""
        failures = failures or []
        params: Dict[str, Any] = {"cwd": self.config.cwd, "mcpServers": []}
        owner = self.owner
        if methods:
            method = methods[0]
            self.replaying = method == "session/load"
            self.calls.call(method, dict(params, sessionId=owner.session_id),
                            lambda r, e: self._on_reopened(methods, failures, r, e))
            return
        if owner.session_id:
            reason = "; ".join(failures) or "the agent offers neither session/resume nor session/load"
            self.host.log("diagnostic", "warning", message="the ACP agent %s cannot resume session %s (%s): "
                          "a new session starts, without the earlier conversation" % (owner.label, owner.session_id,
                                                                                      reason))
            owner.session_id = None
        self.calls.call("session/new", params, self._on_new)

    def _fork(self, source: str) -> None:
        """A new session holding the source session's history, in this file's cwd."""
        label = self.owner.label
        if not wire.can_fork(self.init):
            self.owner.fail_start("the ACP agent %s cannot fork session %s: it does not offer session/fork "
                                  "(no sessionCapabilities.fork in its initialize answer)" % (label, source))
            return

        def forked(result: Optional[Dict[str, Any]], error: Any) -> None:
            if error is not None:
                self.owner.fail_start("the ACP agent %s cannot fork session %s: %s" % (label, source,
                                                                                     wire.rpc_error_text(error)))
            else:
                self._on_new(result, None)

        self.calls.call("session/fork", {"sessionId": source, "cwd": self.config.cwd, "mcpServers": []}, forked)

    def _on_reopened(self, methods: List[str], failures: List[str], result: Optional[Dict[str, Any]],
                     error: Any) -> None:
        self.replaying = False
        if error is not None:
            failures = failures + ["%s: %s" % (methods[0], wire.rpc_error_text(error))]
            self._reopen(methods[1:], failures)
            return
        self._configure(wire.as_object(result))

    def _on_new(self, result: Optional[Dict[str, Any]], error: Any) -> None:
        session_id = wire.text_or_none(wire.as_object(result).get("sessionId"))
        if error is not None or session_id is None:
            text = wire.rpc_error_text(error) if error is not None else "no sessionId in the answer"
            self.owner.fail_start("the ACP agent %s refused a new session: %s" % (self.owner.label, text))
            return
        self.owner.session_id = session_id
        self._configure(wire.as_object(result))  # first: the fsync below then overlaps the agent's work
        try:
            self.owner.save_resume(SESSION_FILE, session_id, "session_id")
        except OSError as exc:  # the run can go on; only a later resume would miss it
            self.host.log("diagnostic", "warning", message="cannot keep the ACP session id: %s" % exc)

    def _configure(self, session: Dict[str, Any]) -> None:
        """The mode by session/set_mode, or the mode config option where the
        agent has no `modes` (--mode through the preset's table, else
        HARNESSCTL_ACP_MODE), then --model, then ready.  The mode is set at every
        start, a resumed session's included: what mode an agent restores with
        a session is its own business."""
        owner = self.owner
        try:
            mode, why = self._mode_id()
        except ValueError as exc:
            owner.fail_start(str(exc))
            return
        config_id, offered, current = wire.mode_selector(session)
        if not mode:
            self._select_model(session, current)
            return
        chosen = wire.offered_mode(mode, offered)
        if chosen is None:
            owner.fail_start("%s: the ACP agent %s does not offer mode %s (it offers %s)" % (
                why, owner.label, mode, ", ".join(offered) if offered else "no modes"))
            return
        mode = chosen

        def moded(result: Optional[Dict[str, Any]], error: Any) -> None:
            if error is not None:
                owner.fail_start("%s: the ACP agent %s refused mode %s: %s" % (why, owner.label, mode,
                                                                             wire.rpc_error_text(error)))
            else:
                self._select_model(session, mode)

        if config_id is None:
            self.calls.call("session/set_mode", {"sessionId": owner.session_id, "modeId": mode}, moded)
        else:
            self.calls.call("session/set_config_option", {"sessionId": owner.session_id, "configId": config_id,
                                                          "value": mode}, moded)

    def _mode_id(self) -> Tuple[str, str]:
        """(the agent's mode id to set, or "" for none; what asked for it).
        --mode wins over HARNESSCTL_ACP_MODE, which says so in a diagnostic;
        ValueError for a --mode the agent's table lacks (the core refuses
        that before it starts one: this keeps a mode from being lost)."""
        config = self.config
        raw = config.env.get(MODE_ENV, "").strip()
        if config.mode is None:
            return raw, "%s=%s" % (MODE_ENV, raw)
        modes = wire.as_object(wire.as_object(config.agents.get(config.agent or "")).get("modes"))
        mode = wire.text_or_none(modes.get(config.mode)) or ""
        if not mode:
            raise ValueError("--mode %s: the ACP agent %s has no mode for it; set %s to one of its own mode ids"
                             % (config.mode, self.owner.label, MODE_ENV))
        if raw and raw != mode:
            self.host.log("diagnostic", "info", message="%s=%s is not applied: --mode %s sets the ACP agent's mode %s"
                          % (MODE_ENV, raw, config.mode, mode))
        return mode, "--mode %s" % config.mode

    def _select_model(self, session: Dict[str, Any], mode: Optional[str]) -> None:
        model = self.config.model
        selector = wire.model_selector(session)
        if not model:
            self._ready(session, mode, wire.current_model(session))
            return
        if selector is None:
            self.host.log("diagnostic", "warning", message="the ACP agent %s offers no model selection: --model %s "
                          "is not applied" % (self.owner.label, model))
            self._ready(session, mode, wire.current_model(session))
            return
        method, config_id = selector
        params: Dict[str, Any] = {"sessionId": self.owner.session_id}
        params.update({"modelId": model} if config_id is None else {"configId": config_id, "value": model})

        def selected(result: Optional[Dict[str, Any]], error: Any) -> None:
            if error is not None:
                self.owner.fail_start("the ACP agent %s refused model %s: %s" % (self.owner.label, model,
                                                                               wire.rpc_error_text(error)))
            else:
                self._ready(session, mode, model)

        self.calls.call(method, params, selected)

    def _ready(self, session: Dict[str, Any], mode: Optional[str], model: Optional[str]) -> None:
        info = wire.as_object(self.init.get("agentInfo"))
        approval = mode if wire.modes_are_permissions(session) else None
        self.activity.session(self.owner.session_id, str(info.get("name") or self.owner.label),
                              wire.text_or_none(info.get("version")), model, approval, None,
                              capabilities=wire.session_capabilities(self.init))
        self.owner.opened()
