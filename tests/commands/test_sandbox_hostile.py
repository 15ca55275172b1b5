"""A hostile agent against its `--sandbox` box (issue 46, "Done means"): the
agent of tests/support/acp_support/box_breaker.py writes, renames and links the
session's files, reads the state folder, runs `harnessctl reply` on its own
request, talks to the runtime's socket, signals the runtime and reads its
/proc entries, from the agent process and from a grandchild that detached
(fork, setsid, fork).  Boxed, every attempt fails and nothing outside the
cwd changes; the same agent bound without --sandbox succeeds at each, so the
tests prove the box, not the agent.

Each run (boxed, unboxed) is one session, shared by the tests of this
module: the agent parks two permission requests (its own and its
grandchild's), the test says "go" once harnessctl has them (ws/go.json),
the agent attacks and writes ws/report.json; the boxed run's requests are
then answered by the test itself."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from typing import Any, Dict

import pytest
from cliutil import ROOT, cli_env, events, kill_all_under, matching, ok, status, wait_for, wait_results

from harnessctl import box, landlock

pytestmark = pytest.mark.skipif(landlock.why_not() is not None, reason=str(landlock.why_not()))

BREAKER = os.path.join(ROOT, "tests", "support", "acp_support", "box_breaker.py")
WAIT = 120  # seconds: how long a condition may take on a loaded machine (the tests wait for it, never sleep)

# Every attack box_breaker.py makes, by the name in its report.
ATTACKS = ["write_outside", "write_state", "write_sidecar", "append_event", "write_binding", "rename_event",
           "link_event", "symlink_event", "read_key", "read_event", "reply", "socket_proof", "signal_runtime",
           "runtime_fds"]
# What the box lets through by design (docs/OPERATIONS.md, "The box"): the names in every folder,
# the state folder's and the sidecar's too, never a file's content.
LISTED = ["list_state", "list_sidecar"]
# As root the box does not keep the runtime's /proc/PID/environ (also maps, auxv) from the agent:
# Landlock's ptrace rule stops the stronger reads (mem, fd) only.  Those variables are the agent's own
# (the runtime gives the agent its environment), as OPERATIONS.md says; as another user it is refused.
if os.geteuid() == 0:
    LISTED.append("runtime_environ")
else:
    ATTACKS.append("runtime_environ")
if os.geteuid() == 0:  # the key by its file handle (open_by_handle_at): root's CAP_DAC_READ_SEARCH only
    ATTACKS.append("key_by_handle")
BOXED_ONLY = ["reply_box_env"]  # `harnessctl reply` with the environment the box gives (its own state folder)
CONTROL = "socket_no_proof"  # refused by every runtime, boxed or not: what the proof is for
# What refuses an attack in the box: the kernel (Landlock), or the runtime for want of a proof.
REFUSALS = {"EACCES", "EPERM", "EXDEV", "refused"}
WHO = ["agent", "child"]


def agent_command(root: str, state: str) -> str:
    return shlex.join([sys.executable, BREAKER, "--state", state, "--outside", os.path.join(root, "outside")])


def pending_ids(path: str) -> Dict[str, str]:
    """The pending request of the agent (`touch agent.txt`) and of its grandchild (`touch child.txt`)."""
    found = {}
    for event in matching(path, "request", state="pending"):
        command = (event.get("input") or {}).get("command", "")
        for who in WHO:
            if command == "touch %s.txt" % who:
                found[who] = event["request_id"]
    return found


def tree(root: str) -> Dict[str, Any]:
    """Every path beneath `root` but the cwd's (the agent's to write), with its bytes for a file."""
    found: Dict[str, Any] = {}
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        if rel == "ws" or rel.startswith("ws" + os.sep):
            dirs[:] = []
            continue
        for name in dirs:
            found[os.path.join(rel, name)] = "dir"
        for name in files:
            found[os.path.join(rel, name)] = "file"
    return found


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def break_in(root: str, sandbox: bool) -> Dict[str, Any]:
    """One session of the box breaker: bind, wait for both requests to be
    pending, say go, wait for its report; what a test needs, before and after."""
    ws, outside = os.path.join(root, "ws"), os.path.join(root, "outside")
    os.mkdir(ws)
    os.mkdir(outside)
    path = os.path.join(root, "events.jsonl")
    state = os.environ["HARNESSCTL_STATE_DIR"]  # conftest.py: this test session's state folder
    env = cli_env(FAKE_ACP_HOME=os.path.join(ws, ".fake-acp"))
    ok("send", path, "/break", "--adapter", "acp", "--agent", agent_command(root, state), "--cwd", ws,
       *(["--sandbox"] if sandbox else []), env=env)
    ids = wait_for(lambda: (lambda found: found if len(found) == 2 else None)(pending_ids(path)), WAIT,
                   "both permission requests pending")
    run: Dict[str, Any] = {"path": path, "ws": ws, "outside": outside, "state": state, "ids": ids, "env": env,
                           "binding": read_bytes(path + ".d/binding.json"), "events": read_bytes(path),
                           "tree": tree(root), "status_before": status(path, env=env)}
    with open(os.path.join(ws, "go.json.part"), "w", encoding="utf-8") as f:
        json.dump(ids, f)
    os.rename(os.path.join(ws, "go.json.part"), os.path.join(ws, "go.json"))
    report_path = os.path.join(ws, "report.json")
    wait_for(lambda: os.path.exists(report_path), WAIT, "the agent's report")
    with open(report_path, encoding="utf-8") as f:
        run["report"] = json.load(f)
    run["status_after"] = status(path, env=env)
    run["binding_after"] = read_bytes(path + ".d/binding.json")
    run["tree_after"] = tree(root)
    return run


@pytest.fixture(scope="module")
def boxed(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("boxed"))
    try:
        run = break_in(root, sandbox=True)
        # Only now does the test answer: the agent's own request allowed, its grandchild's denied.
        ok("reply", run["path"], run["ids"]["agent"], "allow", env=run["env"])
        ok("reply", run["path"], run["ids"]["child"], "deny", env=run["env"])
        run["result"] = wait_results(run["path"], 1, WAIT)[0]
        run["status_end"] = status(run["path"], env=run["env"])
        run["events_end"] = read_bytes(run["path"])
        run["binding_end"] = read_bytes(run["path"] + ".d/binding.json")
        run["tree_end"] = tree(root)
        yield run
    finally:
        kill_all_under(root)
        folder = box.folder(os.path.join(root, "events.jsonl"))
        shutil.rmtree(folder, ignore_errors=True)
        try:
            os.rmdir(os.path.dirname(folder))  # <state>-boxes, when no other box is left in it
        except OSError:
            pass


@pytest.fixture(scope="module")
def unboxed(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("unboxed"))
    try:
        run = break_in(root, sandbox=False)
        run["result"] = wait_results(run["path"], 1, WAIT)[0]
        yield run
    finally:
        kill_all_under(root)


def attack_cases(who_list, names):
    return [pytest.param(who, name, id="%s-%s" % (who, name)) for who in who_list for name in names]


# -- boxed: every attempt fails ---------------------------------------------------------------------


def test_the_boxed_agent_and_its_grandchild_report_every_attack(boxed):
    report = boxed["report"]
    for who in WHO:
        assert sorted(report[who]) == sorted(ATTACKS + LISTED + BOXED_ONLY + [CONTROL]), (who, sorted(report[who]))


@pytest.mark.parametrize("who,attack", attack_cases(WHO, LISTED))
def test_in_the_box_what_the_docs_say_it_may_still_read_it_reads(boxed, who, attack):
    assert boxed["report"][who][attack]["ok"] is True, (who, attack, boxed["report"][who][attack])


@pytest.mark.parametrize("who,attack", attack_cases(WHO, ATTACKS + BOXED_ONLY))
def test_in_the_box_the_attack_fails_with_a_refusal(boxed, who, attack):
    found = boxed["report"][who][attack]
    assert found["ok"] is False, (who, attack, found)
    assert found["error"] in REFUSALS, (who, attack, found)


@pytest.mark.parametrize("who", WHO)
def test_in_the_box_harnessctl_reply_is_refused_with_exit_5(boxed, who):
    for attack in ("reply", "reply_box_env"):
        found = boxed["report"][who][attack]
        assert found["ok"] is False and found["detail"].startswith("exit 5: "), (who, attack, found)


@pytest.mark.parametrize("who", WHO)
def test_in_the_box_the_runtime_socket_is_reached_but_refuses_a_request_without_a_proof(boxed, who):
    found = boxed["report"][who][CONTROL]
    assert found["ok"] is False and found["error"] == "refused", found
    assert "connected to" in found["detail"] and "5 refused: " in found["detail"], found


@pytest.mark.parametrize("who", WHO)
def test_in_the_box_no_proof_can_be_made_for_want_of_the_key(boxed, who):
    found = boxed["report"][who]["socket_proof"]
    assert found["error"] == "EACCES" and "key" in found["detail"], found


def test_the_grandchild_detached_from_the_agent(boxed):
    child = boxed["report"]["child_process"]
    assert child["sid"] != child["agent_sid"], child  # a session of its own (setsid)
    assert child["ppid"] != child["agent_pid"], child  # its parent (the first fork) is gone
    assert child["pid"] != child["sid"], child  # not the session leader: the second fork


def test_in_the_box_the_event_file_keeps_its_bytes_and_stays_well_formed(boxed):
    before, after = boxed["events"], boxed["events_end"]
    assert after.startswith(before)
    assert after.endswith(b"\n")
    seqs = [json.loads(line)["seq"] for line in after.splitlines()]
    assert seqs == list(range(1, len(seqs) + 1))
    assert not os.path.islink(boxed["path"]) and os.stat(boxed["path"]).st_nlink == 1


def test_in_the_box_the_sidecar_binding_is_unchanged(boxed):
    assert boxed["binding_after"] == boxed["binding"]
    assert boxed["binding_end"] == boxed["binding"]


def test_in_the_box_nothing_appears_outside_the_cwd(boxed):
    assert boxed["tree_after"] == boxed["tree"]
    assert os.listdir(boxed["outside"]) == []
    assert not [name for name in os.listdir(boxed["state"]) if name.startswith("hostile-")]
    assert not [name for name in os.listdir(boxed["path"] + ".d") if name.startswith("hostile-")]


def test_in_the_box_the_cwd_holds_no_renamed_linked_or_symlinked_event_file(boxed):
    names = set(os.listdir(boxed["ws"]))
    assert not {name for name in names if name.startswith(("stolen-", "linked-", "sym-"))}, names


def test_in_the_box_the_requests_stay_pending_after_the_agents_reply(boxed):
    before, after = boxed["status_before"], boxed["status_after"]
    ids = sorted(boxed["ids"].values())
    assert sorted(r["request_id"] for r in before["requests"]) == ids
    assert after["state"] == "awaiting_reply"
    assert sorted(r["request_id"] for r in after["requests"]) == ids


def test_in_the_box_only_the_tests_own_replies_answer_the_requests(boxed):
    replied = [e for e in events(boxed["path"]) if e["type"] == "request" and e["state"] != "pending"]
    answers = {e["request_id"]: (e.get("answer"), e.get("by")) for e in replied}
    assert answers == {boxed["ids"]["agent"]: ("allow", "reply"), boxed["ids"]["child"]: ("deny", "reply")}
    assert boxed["result"]["output"] == "permission: agent allow_once, child cancel"  # the agent tried allow on both
    assert boxed["status_end"]["requests"] == []


# -- unboxed: the same agent succeeds at each ----------------------------------------------------------


@pytest.mark.parametrize("who,attack", attack_cases(WHO, ATTACKS + LISTED))
def test_without_the_box_the_same_attack_succeeds(unboxed, who, attack):
    found = unboxed["report"][who][attack]
    assert found["ok"] is True, (who, attack, found)


@pytest.mark.parametrize("who", WHO)
def test_without_the_box_a_request_without_a_proof_is_refused_too(unboxed, who):
    found = unboxed["report"][who][CONTROL]
    assert found["ok"] is False and found["error"] == "refused", found


def test_without_the_box_the_agents_own_reply_answers_both_requests(unboxed):
    replied = [e for e in events(unboxed["path"]) if e["type"] == "request" and e["state"] != "pending"]
    answers = {e["request_id"]: (e.get("answer"), e.get("by")) for e in replied}
    assert answers == {unboxed["ids"]["agent"]: ("allow", "reply"), unboxed["ids"]["child"]: ("allow", "reply")}
    assert unboxed["result"]["output"] == "permission: agent allow_once, child allow_once"


def test_without_the_box_the_outside_file_is_written(unboxed):
    assert sorted(os.listdir(unboxed["outside"])) == ["new-agent.txt", "new-child.txt"]


def test_without_the_box_the_attacks_leave_the_session_whole(unboxed):
    """The unboxed attacks are harmless: the rename and link undone, zero bytes
    written, the binding as it was (so the boxed tests' comparison is fair)."""
    after = read_bytes(unboxed["path"])
    assert after.startswith(unboxed["events"])
    assert unboxed["binding_after"] == unboxed["binding"]
    assert os.stat(unboxed["path"]).st_nlink == 1
    assert not [name for name in os.listdir(unboxed["state"]) if name.startswith("hostile-")]
