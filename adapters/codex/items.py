"""What codex says of a turn's items, in the activity vocabulary
(harnessctl/kit/activity.py): tools started and completed with their streamed
output, file changes, agent messages, text and reasoning deltas, plans, token
usage, warnings and errors, and the one warning that codex cannot sandbox its
commands.  turns.py owns the turns (runs) and backend.py the thread; this holds
what a turn's items build: its run's output, usage and last error, and each
file change's latest patch (what an approval shows, and what file.changed
reports when item/completed carries none)."""

from __future__ import annotations

from harnessctl.kit import Activity, Config, Host

from . import wire

TYPE_CHECKING = False  # keeps typing out of start-up (~7 ms under -I -S); mypy reads it as True (pyproject.toml)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional

    from .run import Run


class Items:
    """Turns one app-server's item notifications into host calls.  Each
    on_* handler gets the params, the run of its turn or None, the raw message."""

    def __init__(self, host: Host, activity: Activity, config: Config, stderr: Callable[[], str]) -> None:
        self.host = host
        self.activity = activity
        self.config = config
        self.stderr = stderr  # the end of the app-server's stderr, where codex says why it made no helpers
        self.file_changes: Dict[str, List[Dict[str, Any]]] = {}  # "turn:item" -> its latest changes
        self.sandbox: Optional[str] = None  # the warning that codex cannot sandbox its commands, once said

    def native(self, msg: Dict[str, Any], run: Optional[Run]) -> None:
        """The wire message itself, as a droppable `native` log line."""
        self.host.log("native", "debug", run_id=_run_id(run), method=msg.get("method"), data=msg)

    def changes(self, params: Dict[str, Any]) -> Optional[List[Dict[str, Any]]]:
        """The latest changes of the file change item a request names, if seen."""
        return self.file_changes.get(_key(params.get("turnId"), params.get("itemId")))

    def forget(self, turn_id: str) -> None:
        """Drop the patches of a finished turn's items (those an interrupt cut never complete)."""
        prefix = turn_id + ":"
        for key in [k for k in self.file_changes if k.startswith(prefix)]:
            del self.file_changes[key]

    # -- items

    def started(self, run: Optional[Run], params: Dict[str, Any], item: Dict[str, Any]) -> None:
        """item/started of any item but a userMessage (the backend's)."""
        tool_id = _key(params.get("turnId"), item.get("id"))
        if item.get("type") == "fileChange":
            self.file_changes[tool_id] = _objects(item.get("changes"))
        self._tool_started(run, tool_id, item)  # other items say all they have on completion

    def _tool_started(self, run: Optional[Run], tool_id: str, item: Dict[str, Any]) -> bool:
        """tool.started for a tool-like item (once); False for any other item."""
        info = wire.tool_info(item)
        if info is None:
            return False
        if not self.activity.is_open(tool_id):
            self.activity.tool_started(_run_id(run), tool_id, *info)
        return True

    def on_completed(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        item = wire.as_object(params.get("item"))
        if item.get("type") == "agentMessage":
            self._message(run, item, msg)
            return
        tool_id = _key(params.get("turnId"), item.get("id"))
        if not self._tool_started(run, tool_id, item):  # completion-only items get their start too
            self.native(msg, run)
            return
        status = wire.tool_status(item)
        if item.get("type") == "fileChange":
            self._files_changed(_run_id(run), tool_id, item, status)
        self.activity.tool_completed(_run_id(run), tool_id, status, _int(item.get("exitCode")),
                                     wire.tool_output(item), _int(item.get("durationMs")))
        failure = wire.sandbox_failure(item)
        if failure:
            self.sandbox_failed(_run_id(run), failure)

    def _message(self, run: Optional[Run], item: Dict[str, Any], msg: Dict[str, Any]) -> None:
        text = item.get("text") or ""
        if run is None:
            self.native(msg, None)
            return
        run.output = text
        self.host.message(run.run_id, _key(run.turn_id, item.get("id")), text)

    def _files_changed(self, run_id: Optional[str], tool_id: str, item: Dict[str, Any], status: str) -> None:
        """file.changed for each file a completed change touched: the item's
        own changes, else its patch as last seen."""
        remembered = self.file_changes.pop(tool_id, [])
        changes = _objects(item.get("changes")) or remembered
        if status != "completed":
            return
        for change in changes:
            mapped = wire.file_change(change)
            if mapped is not None:
                path, how, move_path, diff = mapped
                self.activity.file_changed(run_id, tool_id, path, how, diff, move_path)

    def on_patch_updated(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        """The patch of a file change as it now stands: what an approval shows and
        what file.changed reports if item/completed carries no changes."""
        changes = params.get("changes")
        if isinstance(changes, list):
            self.file_changes[_key(params.get("turnId"), params.get("itemId"))] = _objects(changes)
        self.native(msg, run)

    # -- streams

    def on_text_delta(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        self.activity.text(_run_id(run), _key(params.get("turnId"), params.get("itemId")),
                           str(params.get("delta") or ""))

    def on_reasoning_summary(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        self.activity.reasoning(_run_id(run), str(params.get("delta") or ""), "summary")

    def on_reasoning_raw(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        self.activity.reasoning(_run_id(run), str(params.get("delta") or ""), "raw")

    def on_tool_output(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        tool_id, delta = _key(params.get("turnId"), params.get("itemId")), str(params.get("delta") or "")
        self.activity.tool_output(_run_id(run), tool_id, delta)

    def on_plan(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        explanation = params.get("explanation")
        self.activity.plan(_run_id(run), wire.plan_entries(params.get("plan")),
                           str(explanation) if explanation else None)

    def on_token_usage(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        usage = wire.as_object(params.get("tokenUsage"))
        last = usage.get("last")
        # after thread/resume codex repeats the previous turn's usage: only count our open turns
        if run is not None and run.final is None and isinstance(last, dict):
            run.usage = wire.add_usage(run.usage, last)
            self.activity.usage(run.run_id, **wire.usage_fields(run.usage, usage))
        else:
            self.native(msg, run)

    # -- warnings and errors

    def on_warning(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        method = str(msg.get("method"))
        self.activity.warning(_run_id(run), wire.warning_text(method, params), method)

    def on_error(self, params: Dict[str, Any], run: Optional[Run], msg: Dict[str, Any]) -> None:
        """A retry is a warning; the final error is kept for the result (its
        turn/completed usually repeats it)."""
        error = params.get("error")
        if params.get("willRetry"):
            self.activity.warning(_run_id(run), wire.error_text(error), "error")
            return
        if run is not None and isinstance(error, dict):
            run.error = error
        self.native(msg, run)

    def check_helpers(self, sandbox: Optional[str]) -> None:
        """Warn at once when codex said at start that it made no helpers, bubblewrap
        is on the harness's PATH and the thread sandboxes its commands: codex
        then runs each through `bwrap`, which cannot find codex-linux-sandbox, and
        codex sends a failed command only now and then (0.171.0 as recorded:
        often no item at all), so the failure cannot be waited for."""
        import os
        import shutil  # only here: it would cost every runtime start 1.5 ms

        if sandbox != "dangerFullAccess" and wire.helpers_refused(self.stderr()) \
                and shutil.which("bwrap", path=self.config.env.get("PATH", os.defpath)):
            self.sandbox_failed(None, None)

    def sandbox_failed(self, run_id: Optional[str], failure: Optional[str]) -> None:
        """Say once per app-server, as a warning (a note of `send --wait`), that
        codex cannot sandbox its commands: codex itself hands bubblewrap's
        complaint only to the model, as each command's output, and its reason
        only to its stderr (issue 47)."""
        if self.sandbox is None:
            self.sandbox = wire.sandbox_warning(failure, wire.helpers_refused(self.stderr()))
            self.activity.cannot_sandbox(run_id, self.sandbox)


def _key(turn_id: Any, item_id: Any) -> str:
    """An item's id for harnessctl: codex item ids come from the model and are
    only unique within a turn."""
    return "%s:%s" % (turn_id, item_id)


def _run_id(run: Optional[Run]) -> Optional[str]:
    return run.run_id if run else None


def _objects(values: Any) -> List[Dict[str, Any]]:
    """The JSON objects of a list from the wire (codex's FileUpdateChanges)."""
    return [c for c in values or [] if isinstance(c, dict)]


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
