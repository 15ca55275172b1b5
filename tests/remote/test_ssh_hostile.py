"""Hostile paths, texts and answers over ssh:// arrive byte-exact and run nothing: each payload would
create the file PWNED in the test's folder if any shell on the way (the remote login shell parses
the remote command line) evaluated it.  An answer is held to what the same reply records locally."""

from __future__ import annotations

import json
import os

import pytest
from cliutil import of_type, run, wait_for, wait_results
from ssh_support import address

M = ("--adapter", "mock")

# {pwn}: the sentinel's absolute path; a "/" in a path payload makes folders, which the test creates
PAYLOADS = {
    "command-substitution": "$(touch {pwn})",
    "backticks": "`touch {pwn}`",
    "semicolons": "x; touch {pwn}; y",
    "newlines": "x\ntouch {pwn}\ny",
    "quotes": "it's \"quoted\" '$(touch {pwn})'",
    "pipe-and-redirect": "x | touch {pwn} > {pwn}.out &",
    "variables-and-globs": "$HOME ${{IFS}} * ~ ? [a] \\ {pwn}",
    "leading-dash": "-x --wait {pwn}",
}

TEXTS = dict(PAYLOADS, **{
    "leading-double-dash": "--help; touch {pwn}",
    "spaces-tabs-crlf": "  a\tb\r\nc  \n",
    "unicode": "caf\u00e9 \u2713 \u65e5\u672c \U0001f600 $(touch {pwn})",
})


def mib(piece):
    """One MiB of `piece` repeated."""
    return (piece * ((1 << 20) // len(piece) + 1))[: 1 << 20]


def ok(*args, env, **kwargs):
    proc = run(*args, env=env, **kwargs)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr.decode())
    return proc


@pytest.fixture
def pwn(workdir):
    path = str(workdir / "PWNED")
    yield path
    assert not os.path.exists(path), "a payload was run by a shell"
    assert not os.path.exists(path + ".out"), "a payload was run by a shell"


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_a_hostile_path_is_the_file_it_names_on_the_host(workdir, pwn, ssh_env, name):
    path = str(workdir) + "/" + PAYLOADS[name].format(pwn=pwn) + ".jsonl"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    addr = address("h1", path)
    ok("send", addr, "hello", "--wait", *M, env=ssh_env)
    assert of_type(path, "accepted")[0]["text"] == "hello"
    (line,) = ok("status", addr, env=ssh_env).stdout.decode().splitlines()
    assert json.loads(line)["file"] == addr


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_a_hostile_text_arrives_byte_exact(efile, pwn, ssh_env, name):
    text = TEXTS[name].format(pwn=pwn)
    ok("send", address("h2", efile), *M, "--wait", "--", text, env=ssh_env)
    assert of_type(efile, "accepted")[0]["text"] == text


def test_a_text_of_one_mib_on_stdin_arrives_byte_exact(efile, pwn, ssh_env):
    text = mib("0123456789abcdef$(touch %s)`touch %s`\n" % (pwn, pwn))
    ok("send", address("h1", efile), *M, "--wait", input=text.encode(), env=ssh_env)
    assert of_type(efile, "accepted")[0]["text"] == text


def asked(path, addr, env):
    """A session parked on a question; its request id."""
    proc = run("send", addr, "/question which one?", "--wait", *M, env=env)
    assert proc.returncode == 9, proc.stderr
    wait_for(lambda: of_type(path, "request"), what="the question")
    return json.loads(proc.stdout)["request_id"]


def recorded_answer(path):
    wait_results(path, 1)
    (replied,) = [e for e in of_type(path, "request") if e["state"] == "replied"]
    assert replied["by"] == "reply"
    return replied["answer"]


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_a_hostile_answer_is_recorded_as_the_same_reply_records_it_locally(workdir, pwn, ssh_env, name):
    answer = TEXTS[name].format(pwn=pwn)
    here, there = str(workdir / "here.jsonl"), str(workdir / "there.jsonl")
    ok("reply", here, asked(here, here, ssh_env), "--", answer, env=ssh_env)
    ok("reply", address("h1", there), asked(there, address("h1", there), ssh_env), "--", answer, env=ssh_env)
    assert recorded_answer(there) == recorded_answer(here)


def test_an_answer_of_one_mib_on_stdin_is_recorded_as_locally(workdir, pwn, ssh_env):
    answer = mib("$(touch %s) " % pwn).encode()
    here, there = str(workdir / "here.jsonl"), str(workdir / "there.jsonl")
    ok("reply", here, asked(here, here, ssh_env), input=answer, env=ssh_env)
    ok("reply", address("h2", there), asked(there, address("h2", there), ssh_env), input=answer, env=ssh_env)
    assert recorded_answer(there) == recorded_answer(here)


@pytest.mark.parametrize("host", ["-oProxyCommand=touch${IFS}PWNED", "-oProxyCommand=touch PWNED"])
def test_a_host_that_looks_like_an_ssh_option_runs_nothing(workdir, ssh_env, host):
    """ssh must never read the host as an option (git's CVE-2017-1000117): the ProxyCommand would
    run locally, in the command's working folder."""
    proc = run("status", "ssh://%s%s" % (host, workdir / "x.jsonl"), env=ssh_env, cwd=str(workdir))
    assert proc.returncode in (2, 5), (proc.returncode, proc.stderr)
    assert proc.stderr.startswith(b"harnessctl: ") and proc.stderr.count(b"\n") == 1, proc.stderr
    assert not os.path.exists(str(workdir / "PWNED"))
