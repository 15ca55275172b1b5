"""One event file driven through the ACP adapter by the fake agent
(fake_agent.py), as the CLI drives it: the bed of the tests over the fake."""

from __future__ import annotations

import json
import os
import shlex
from typing import Optional

from cliutil import ROOT, cli_env, of_type, run

FAKE = os.path.join(ROOT, "tests", "support", "acp_support", "fake_agent.py")


class Agent:
    """One event file driven with `--adapter acp --agent <the fake, with flags>`."""

    def __init__(self, directory, *flags: str, preset: Optional[str] = None, **env: str) -> None:
        """`preset`: run the fake as that preset (its command variable), else as a command line."""
        self.path = os.path.join(str(directory), "events.jsonl")
        self.log = os.path.join(str(directory), "agent.log")
        self.agent = " ".join(shlex.quote(a) for a in (FAKE,) + flags)
        if preset is not None:
            env["HARNESSCTL_ACP_%s_CMD" % preset.upper()], self.agent = self.agent, preset
        self.env = cli_env(FAKE_ACP_HOME=os.path.join(str(directory), "sessions"), FAKE_ACP_LOG=self.log, **env)

    def send(self, text: str, *flags: str, env=None):
        return run("send", self.path, text, "--adapter", "acp", "--agent", self.agent, *flags, env=env or self.env)

    def start(self, text: str) -> str:
        """Send without waiting; the input id."""
        proc = self.send(text, "--print-id")
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.decode().strip()

    def wait(self, input_id: str):
        proc = run("wait", self.path, input_id, env=self.env)
        return proc.returncode, json.loads(proc.stdout)

    def received(self, method: str):
        with open(self.log, encoding="utf-8") as f:
            return [m for m in map(json.loads, f) if m.get("method") == method]

    def streaming(self) -> bool:
        return any(e["kind"] == "text.delta" and "working" in e["text"] for e in of_type(self.path, "log"))

    def accepted(self, input_id: str):
        return [a for a in of_type(self.path, "accepted") if a["input_id"] == input_id]
