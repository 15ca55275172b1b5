#!/usr/bin/env python3
"""The torture suite's figures at the issue's full counts (issue 5).

    python3 bench/torture_report.py [--rounds 200] [--senders 64] [--sends 10] [--files 100]
                                    [--sender-kills 40] [--move-rounds 60] [--line-rounds 40]
                                    [--hostile-rounds 40] [--many-waiters 2000] [--seed N] [--quick]

Runs the counted scenarios of tests/torture/test_torture_*.py with the mock adapter,
and the kill -9 roulette also with the Codex and Claude Code adapters over
their fake harnesses (the same drivers, from tests/support/torture_support.py, and the same invariant
checks: the project's fold AND the independent line-by-line checker), then
prints what they survived: kill -9 rounds, inputs checked, and the recovery
times; the "another local user" hunt (as root, with a throw-away user) and
the rename/link/unlink rounds (issue 9), the waiters under cancel, replies
and kill -9 (issue 10), the hostile foreign lines, the hostile agent's rounds
(an ACP agent attacking harnessctl's files, its record and the reader's
terminal), the waits held at once on one runtime and an agent that tries to
wedge its runtime (issue 19) add their counts.  Any violated
invariant stops it with the checker's message.  The
one-shot scenarios (crash, disk full, torn tails, bad input, signals,
security) are plain tests: HARNESSCTL_TORTURE=full python3 -m pytest -m torture.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))

import cliutil  # noqa: E402
import torture_hostile  # noqa: E402
import torture_lines  # noqa: E402
import torture_moves  # noqa: E402
import torture_support as torture  # noqa: E402
import torture_users  # noqa: E402
import torture_waiters  # noqa: E402
import torture_wedge  # noqa: E402


def scenario(name, fn, *args):
    directory = tempfile.mkdtemp(prefix="harnessctl-torture-")
    started = time.monotonic()
    try:
        stats = fn(directory, *args)
        torture.assert_no_leftovers(directory, [])
    finally:
        cliutil.kill_all_under(directory)
        shutil.rmtree(directory, ignore_errors=True)
    stats["seconds"] = time.monotonic() - started
    print("%-14s %s" % (name, "  ".join("%s=%s" % (k, _fmt(v)) for k, v in stats.items())), flush=True)
    return stats


def _fmt(value):
    return "%.3f" % value if isinstance(value, float) else value


def roulette(directory, rounds, seed, roulette_class=torture.Roulette):
    return roulette_class(directory, seed).play(rounds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--adapter-rounds", type=int, default=50, help="kill -9 rounds for codex and claudecode")
    parser.add_argument("--senders", type=int, default=64)
    parser.add_argument("--sends", type=int, default=10)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--sender-kills", type=int, default=40)
    parser.add_argument("--move-rounds", type=int, default=60, help="rename/link/unlink rounds")
    parser.add_argument("--waiter-rounds", type=int, default=60, help="waiters under cancel/reply/kill -9")
    parser.add_argument("--line-rounds", type=int, default=40, help="rounds of hostile foreign lines")
    parser.add_argument("--many-waiters", type=int, default=2000, help="waits held at once on one runtime")
    parser.add_argument("--hostile-rounds", type=int, default=40, help="rounds of the hostile ACP agent")
    parser.add_argument("--wedge-rounds", type=int, default=40, help="rounds of an agent that tries to wedge it")
    parser.add_argument("--seed", type=int, default=random.randrange(1 << 30))
    parser.add_argument("--quick", action="store_true", help="the default test run's small counts")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.senders, args.sends, args.files, args.sender_kills = 30, 16, 4, 12, 8
        args.adapter_rounds, args.move_rounds, args.waiter_rounds = 6, 10, 8
        args.line_rounds, args.hostile_rounds = 6, 6
        args.wedge_rounds = 6
    print("seed %d (replay: --seed %d)" % (args.seed, args.seed), flush=True)
    results = {
        "roulette": scenario("kill-9", roulette, args.rounds, args.seed),
        "kill-9-codex": scenario("kill-9 codex", roulette, args.adapter_rounds, args.seed, torture.CodexRoulette),
        "kill-9-claude": scenario("kill-9 claude", roulette, args.adapter_rounds, args.seed, torture.ClaudeRoulette),
        "fan-in": scenario("fan-in", torture.fan_in, args.senders, args.sends),
        "many-files": scenario("many-files", torture.many_files, args.files),
        "sender-kills": scenario("sender-kills", torture.kill_senders, args.sender_kills, args.seed),
        "idle-race": scenario("idle-race", torture.idle_race, 12, 25),
        "storm": scenario("storm", torture.storm, 4, 50),
        "moves": scenario("moves", torture_moves.moves, args.move_rounds, args.seed),
        "waiters": scenario("waiters", torture_waiters.waiters, args.waiter_rounds, args.seed),
        "hostile-lines": scenario("hostile-lines", torture_lines.hostile_lines, args.line_rounds, args.seed),
        "many-waiters": scenario("many-waiters", torture_waiters.many_waiters, args.many_waiters),
        "hostile": scenario("hostile-agent", torture_hostile.hostile, args.hostile_rounds, args.seed,
                            torture_hostile.BEHAVIOURS, torture_hostile.sizes(full=not args.quick)),
        "wedge": scenario("wedge", torture_wedge.wedges, args.wedge_rounds, args.seed),
    }
    try:
        users = scenario("other-user", torture_users.other_user_report)
    except torture_users.Unavailable as e:
        users = None
        print("other-user     skipped: %s" % e, flush=True)
    r = results["roulette"]
    inputs = sum(s.get("inputs", s.get("accepted", 0)) for s in results.values())
    print()
    print("kill -9 rounds survived   %d with the mock (plus %d rounds that found no runtime left to kill)"
          % (r["kills"], r["missed"]))
    for name in ("kill-9-codex", "kill-9-claude"):
        a = results[name]
        print("  %-23s %d over its fake harness, max recovery %.3f s, no input delivered twice"
              % (name.replace("kill-9-", "") + ":", a["kills"], a["max_recovery_s"]))
    print("kills by moment           %s" % ", ".join("%s %d" % kv for kv in r["by_moment"].items()))
    print("inputs checked            %d (each accepted once, one result, never delivered or echoed twice)" % inputs)
    print("max recovery time         %.3f s (kill -9 -> a status that applied the lost-runtime rule)"
          % max(results[k]["max_recovery_s"] for k in ("roulette", "kill-9-codex", "kill-9-claude")))
    print("max time to a new runtime %.3f s (kill -9 -> the next send exited 0)"
          % max(results[k]["max_respawn_s"] for k in ("roulette", "kill-9-codex", "kill-9-claude")))
    print("fan-in                    %d accepted of %d x %d sends in %.1f s"
          % (results["fan-in"]["accepted"], args.senders, args.sends, results["fan-in"]["seconds"]))
    print("many files                %d runtimes alive at once, all idled out in %.1f s, nothing left behind"
          % (results["many-files"]["alive_at_once"], results["many-files"]["idle_out_s"]))
    k = results["sender-kills"]
    print("senders killed            %d kill -9, %d while the send was still running (%d inputs accepted whole, "
          "%d absent, none half)" % (k["kills"], k["killed_mid_send"], k["accepted"], k["absent"]))
    print("idle-exit race            %d sends, %d idle exits, every send exit 0"
          % (results["idle-race"]["sends"], results["idle-race"]["idle_exits"]))
    print("send/cancel/reply storm   %d sends, %d cancels, %d replies at once: %d results, none lost or doubled"
          % (results["storm"]["sends"], results["storm"]["cancels"], results["storm"]["replies"],
             results["storm"]["results"]))
    m = results["moves"]
    print("rename/link/unlink        %d rounds (%s): %d files checked, %d inputs, %d results, one writer each"
          % (m["rounds"], ", ".join("%s %d" % kv for kv in sorted(m["by_op"].items())), m["files_checked"],
             m["inputs"], m["results"]))
    w = results["waiters"]
    print("waiters                   %d rounds (%s): %d send --wait, each printed a line of the file and exited by it "
          "(%s), %d waited again after a reply"
          % (w["rounds"], ", ".join("%s %d" % kv for kv in w["by_moment"].items()), w["waiters"],
             ", ".join("exit %s: %d" % kv for kv in sorted(w["by_exit"].items())), w["rewaits"]))
    h = results["hostile-lines"]
    print("hostile lines             %d rounds (%s): %d wrong-typed foreign lines of %d variants appended, every "
          "command exited as documented (%s), the record intact"
          % (h["rounds"], ", ".join("%s %d" % kv for kv in h["by_stop"].items()), h["lines"], h["variants"],
             "; ".join("%s %s" % (name, ", ".join("exit %s: %d" % kv for kv in sorted(codes.items())))
                       for name, codes in h["by_exit"].items())))
    w = results["many-waiters"]
    print("many waiters              %d waits held at once (runtime started under ulimit -n 1024): status %.3f s and "
          "cancel %.3f s with all held, every one answered with the result line in %.3f s"
          % (w["waiters"], w["status_s"], w["cancel_s"], w["all_answered_s"]))
    print_hostile(results["hostile"])
    w = results["wedge"]
    print("agent that wedges         %d rounds (%s): each ended as it deserved, status answered in each, "
          "runtime log within its cap" % (w["rounds"], ", ".join("%s %d" % kv for kv in w["by_move"].items())))
    if users is not None:
        print("another local user        %d planted sidecar entries (%d files x %d attacks x %d commands x 2 stops): "
              "%d refused with exit 2, %d ignored, %d victims intact; %d sockets of theirs, %d refused"
              % (users["attacks"], users["sidecar_files"], users["attack_kinds"], users["commands"],
                 users["refused"], users["ignored"], users["victims_intact"], users["socket_attacks"],
                 users["socket_refused"]))
    return 0


def print_hostile(h):
    """The hostile agent's counts (tests/support/torture_hostile.py): what it tried, and what held."""
    print("hostile agent             %d rounds (%s), %d commands (%s), no PWNED marker, nothing left running"
          % (h["rounds"], ", ".join("%s %d" % kv for kv in h["by_behaviour"].items()), h["commands"],
             ", ".join("exit %s: %d" % kv for kv in sorted(h["exit_codes"].items()))))
    print("  harnessctl's files      %d fs requests at them, %d refused; %d forged lines appended, %d appends flagged; "
          "%d forged bindings refused, %d forged snapshots ignored"
          % (h.get("fs_requests", 0), h.get("fs_refused", 0), h.get("forged_lines", 0), h.get("foreign_flagged", 0),
             h.get("binding_forged_now", 0) + h.get("binding_forged_later", 0), h["by_behaviour"]["state"]))
    print("  escapes                 %d rounds with escapes in every field, %d refused sessions; %d lines of log "
          "output, none raw" % (h.get("escape_rounds", 0), h.get("refused_sessions", 0), h.get("log_lines", 0)))
    print("  flood                   %d updates over %d message ids, %d statuses answered while running "
          "(slowest %.3f s), runtime peak %d MiB"
          % (h.get("flood_updates", 0), h.get("flood_ids", 0), h.get("status_during_flood", 0),
             h.get("max_status_s", 0.0), h.get("max_flood_rss_mb", 0)))
    print("  ignored cancel / junk   %d cancels the agent ignored, ended cancelled within %.3f s; %d MiB of lines "
          "without newline, runtime peak %d MiB"
          % (h["by_behaviour"]["cancel"], h.get("max_cancel_end_s", 0.0), h.get("junk_mb", 0),
             h.get("max_rss_mb", 0)))


if __name__ == "__main__":
    sys.exit(main())
