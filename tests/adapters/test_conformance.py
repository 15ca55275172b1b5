"""The adapter conformance suite: every adapter (registry.names()), over its fake
harness, keeps the same promises, black-box through the CLI.

An adapter takes part by shipping `conformance.json` in its folder
(docs/ADAPTERS.md): the environment that points it at its fake harness and
the texts that make that harness answer at once, work until steered or
cancelled, ask for a permission, or crash.  A new adapter is picked up with
no edit here.  The suite reads the manifest: a test of a capability the
adapter does not claim is skipped, saying so."""

from __future__ import annotations

import json
import os

import pytest
import schemacheck
from cliutil import ROOT, cli_env, critical, events, of_type, ok, run, runtime_pids, wait_for, wait_results

from harnessctl.store import registry

ADAPTERS = registry.names()


class Profile:
    """One adapter as its conformance.json describes it, on one event file."""

    def __init__(self, adapter: str, directory: str) -> None:
        with open(os.path.join(registry.ADAPTERS_DIR, adapter, "conformance.json"), encoding="utf-8") as f:
            data = json.load(f)
        self.adapter = adapter
        self.directory = directory
        self.path = os.path.join(directory, "events.jsonl")
        self.texts = data["texts"]
        self.outputs = data["outputs"]
        self.release = data.get("release")
        self.capabilities = registry.manifest(adapter).get("capabilities") or []
        self.folder = os.path.join(registry.ADAPTERS_DIR, adapter)
        self.harness_env = {k: self.fill(v) for k, v in data["env"].items()}

    def fill(self, value: str, n: int = 0) -> str:
        """{root}: the repository, {adapter}: the adapter's folder, {dir}: the test's, {n}: a number."""
        for name, real in (("{root}", ROOT), ("{adapter}", self.folder), ("{dir}", self.directory), ("{n}", str(n))):
            value = value.replace(name, real)
        return value

    def needs(self, capability: str) -> None:
        """Skip the test when the adapter does not claim `capability`."""
        if capability not in self.capabilities:
            pytest.skip("%s does not claim %s" % (self.adapter, capability))

    def text(self, name: str, n: int) -> str:
        return self.fill(self.texts[name], n)

    def env(self, **extra: str):
        return cli_env(**dict(self.harness_env, **extra))

    def send(self, name: str, n: int, *flags: str, env=None):
        return run("send", self.path, self.text(name, n), "--adapter", self.adapter, *flags,
                   env=env or self.env())

    def check_file(self) -> None:
        """Every line is a valid event; every input accepted is covered by exactly one result."""
        for event in events(self.path):
            assert not schemacheck.check_event(event), event
        covered = [i for r in of_type(self.path, "result") for i in r["input_ids"]]
        accepted = {a["input_id"] for a in of_type(self.path, "accepted")}
        assert sorted(covered) == sorted(accepted), critical(self.path)


@pytest.fixture(params=ADAPTERS)
def profile(request, workdir):
    p = Profile(request.param, str(workdir))
    yield p
    p.check_file()


def test_every_adapter_ships_a_conformance_profile():
    for adapter in ADAPTERS:
        assert os.path.isfile(os.path.join(registry.ADAPTERS_DIR, adapter, "conformance.json")), adapter


def test_a_send_starts_a_run_whose_result_completes_with_the_answer(profile):
    proc = profile.send("quick", 1, "--wait")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    (accepted,) = {a["input_id"]: a for a in of_type(profile.path, "accepted")}.values()
    assert accepted["delivery"] == "start" and accepted["run_id"] == result["run_id"]
    assert result["status"] == "completed" and profile.fill(profile.outputs["quick"], 1) in result["output"]
    assert [m["run_id"] for m in of_type(profile.path, "message")][-1:] == [result["run_id"]]


N_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_a_schema_send_gives_output_json_where_claimed_and_exits_2_elsewhere(profile):
    schema = os.path.join(profile.directory, "n.schema.json")
    with open(schema, "w", encoding="utf-8") as f:
        json.dump(N_SCHEMA, f)
    claimed = "structured-output" in profile.capabilities
    text = profile.texts.get("structured", "hello") if claimed else "hello"
    proc = run("send", profile.path, profile.fill(text, 7), "--adapter", profile.adapter, "--schema", schema,
               "--wait", env=profile.env())
    if not claimed:
        assert proc.returncode == 2 and b"cannot promise an answer that fits a schema" in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output_json"] == {"n": 7}
    assert [a["schema"] for a in of_type(profile.path, "accepted")] == [N_SCHEMA]


def test_a_fork_continues_the_conversation_where_claimed_and_exits_2_before_anything_is_written_elsewhere(profile):
    assert profile.send("quick", 1, "--wait").returncode == 0
    new = os.path.join(profile.directory, "fork.jsonl")
    proc = run("fork", profile.path, new, env=profile.env())
    if "fork" not in profile.capabilities:
        assert proc.returncode == 2 and b"cannot fork" in proc.stderr, proc.stderr
        assert not os.path.lexists(new) and not os.path.lexists(new + ".d")
        return
    assert proc.returncode == 0, proc.stderr
    assert "history" in profile.texts, "conformance.json must give the `history` text: its answer shows the " \
                                       "conversation, where `outputs.history` is found after a fork"
    with open(profile.path, "rb") as f:
        before = f.read()
    forked = run("send", new, profile.text("history", 2), "--wait", env=profile.env())
    assert forked.returncode == 0, forked.stderr
    assert profile.fill(profile.outputs["history"], 1) in json.loads(forked.stdout)["output"]
    with open(profile.path, "rb") as f:
        assert f.read() == before
    for event in events(new):
        assert not schemacheck.check_event(event), event


def test_a_send_into_a_busy_run_is_steered_or_queued_and_its_attribution_is_confirmed(profile):
    profile.needs("steer")
    ok("send", profile.path, profile.text("slow", 1), "--adapter", profile.adapter, env=profile.env())
    proc = profile.send("quick", 2, "--print-id", "--wait")
    assert proc.returncode == 0, proc.stderr
    steer_id, line = proc.stdout.decode().splitlines()
    result = json.loads(line)
    assert steer_id in result["input_ids"]
    first = [a for a in of_type(profile.path, "accepted") if a["input_id"] != steer_id][0]
    steers = [a for a in of_type(profile.path, "accepted") if a["input_id"] == steer_id]
    assert steers[0]["delivery"] in ("steer", "queued")
    assert [a["run_id"] for a in steers if a["run_id"] is not None] in ([], [result["run_id"]])
    if first["input_id"] in result["input_ids"]:  # joined the running run: one result covers both
        assert result["run_id"] == first["run_id"]
    wait_results(profile.path, 1)


def test_sends_into_a_busy_run_of_a_harness_that_cannot_steer_are_held_and_start_the_next_run(profile):
    if "steer" in profile.capabilities:
        pytest.skip("%s claims steer" % profile.adapter)
    assert profile.release, "conformance.json must name the `release` file that ends a slow run by itself"
    ok("send", profile.path, profile.text("slow", 1), "--adapter", profile.adapter, env=profile.env())
    held = [profile.send("quick", n, "--print-id").stdout.decode().strip() for n in (2, 3)]
    accepted = {a["input_id"]: a for a in of_type(profile.path, "accepted")}
    assert [(accepted[i]["delivery"], accepted[i]["run_id"]) for i in held] == [("queued", None)] * 2
    open(profile.fill(profile.release, 1), "w").close()  # the slow run ends by itself
    first, batch = wait_results(profile.path, 2)
    assert first["status"] == "completed" and batch["input_ids"] == held and batch["status"] == "completed"
    attributed = [a for a in of_type(profile.path, "accepted") if a["input_id"] in held and a["run_id"]]
    assert [a["run_id"] for a in attributed] == [batch["run_id"]] * 2 and batch["run_id"] != first["run_id"]


def test_cancel_ends_a_busy_run_cancelled(profile):
    profile.needs("cancel")
    sent = run("send", profile.path, profile.text("slow", 1), "--adapter", profile.adapter, "--print-id",
               env=profile.env())
    input_id = sent.stdout.decode().strip()
    ok("cancel", profile.path, env=profile.env())
    proc = run("wait", profile.path, input_id)
    assert proc.returncode == 8 and json.loads(proc.stdout)["status"] == "cancelled", (proc.stdout, proc.stderr)


def test_a_permission_request_answered_by_reply_reaches_the_harness(profile):
    profile.needs("approvals")
    proc = profile.send("request", 1, "--print-id", "--wait")
    assert proc.returncode == 9, (proc.stdout, proc.stderr)
    input_id, line = proc.stdout.decode().splitlines()
    request = json.loads(line)
    assert request["kind"] == "permission" and "allow" in request["options"] and "deny" in request["options"]
    ok("reply", profile.path, request["request_id"], "allow", env=profile.env())
    waited = run("wait", profile.path, input_id)
    assert waited.returncode == 0, (waited.stdout, waited.stderr)
    assert profile.outputs["allowed"] in json.loads(waited.stdout)["output"]


def test_a_harness_crash_fails_the_run_and_the_next_send_restarts_it(profile):
    profile.needs("crash-recovery")
    proc = profile.send("crash", 1, "--wait")
    assert proc.returncode == 7 and json.loads(proc.stdout)["status"] == "failed", (proc.stdout, proc.stderr)
    again = profile.send("quick", 2, "--wait")
    assert again.returncode == 0, again.stderr


def test_after_an_idle_exit_the_next_send_starts_the_harness_again(profile):
    env = profile.env(HARNESSCTL_IDLE_TIMEOUT="0.5")
    assert profile.send("quick", 1, "--wait", env=env).returncode == 0
    wait_for(lambda: not runtime_pids(profile.path), what="the runtime to idle out")
    proc = profile.send("quick", 2, "--wait", env=env)
    assert proc.returncode == 0, proc.stderr
    assert profile.fill(profile.outputs["quick"], 2) in json.loads(proc.stdout)["output"]
    assert len(of_type(profile.path, "result")) == 2


def test_a_shell_command_the_harness_runs_is_logged_in_the_shared_vocabulary(profile):
    proc = profile.send("tool", 1, "--wait")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    logs = of_type(profile.path, "log")
    started = [e for e in logs if e["kind"] == "tool.started"]
    completed = [e for e in logs if e["kind"] == "tool.completed"]
    assert [e["tool"] for e in started] == ["command"], logs
    assert [(e["tool_id"], e["tool"], e["status"]) for e in completed] == [(started[0]["tool_id"], "command",
                                                                            "completed")]
    exit_code = completed[0]["exit_code"]  # null where the harness does not say (EVENT.md)
    assert (exit_code is None or isinstance(exit_code, int)) and started[0]["title"]


def test_an_answer_the_request_does_not_offer_is_refused_and_the_request_stays_pending(profile):
    profile.needs("approvals")
    proc = profile.send("request", 1, "--print-id", "--wait")
    assert proc.returncode == 9, (proc.stdout, proc.stderr)
    input_id, line = proc.stdout.decode().splitlines()
    request = json.loads(line)
    refused = run("reply", profile.path, request["request_id"], "perhaps", env=profile.env())
    assert refused.returncode == 2 and b"perhaps" in refused.stderr
    status = json.loads(ok("status", profile.path, env=profile.env()).stdout)
    assert [r["request_id"] for r in status["requests"]] == [request["request_id"]]
    ok("reply", profile.path, request["request_id"], "deny", env=profile.env())
    assert run("wait", profile.path, input_id).returncode in (0, 7)  # denied: the run ends either way
