"""The files the bad-input cases start from (tests/commands/test_bad_input.py,
tests/torture/test_torture_bad_input.py): each a function of the test's
workdir that makes one and returns its path, and the bytes a case must leave
as they were."""

from __future__ import annotations

import os

from cliutil import of_type, ok, wait_for, wait_results


def existing(workdir):
    """An event file with one finished run, bound to the mock adapter and workdir."""
    path = str(workdir / "bound.jsonl")
    ok("send", path, "hello", "--adapter", "mock", "--cwd", str(workdir), "--model", "m1")
    wait_results(path, 1)
    return path


def asked(workdir, task):
    """existing()'s file with a run waiting on the one request `task` makes it ask."""
    path = existing(workdir)
    ok("send", path, task)
    wait_for(lambda: len(of_type(path, "request")) == 1, what="request")
    return path


def with_pending_request(workdir):
    return asked(workdir, "/permission go?")


def with_expired_request(workdir):
    path = with_pending_request(workdir)
    ok("cancel", path)
    wait_results(path, 2)
    return path


def with_question(workdir):
    return asked(workdir, "/question colour?")


def file_with(workdir, name, text):
    """workdir/name holding `text`: a file that is not harnessctl's."""
    path = str(workdir / name)
    with open(path, "w") as f:
        f.write(text)
    return path


def foreign_text(workdir):
    return file_with(workdir, "notes.txt", "my precious notes\n")


def foreign_binary(workdir):
    path = str(workdir / "blob.bin")
    with open(path, "wb") as f:
        f.write(os.urandom(512))
    return path


def foreign_json(workdir):
    return file_with(workdir, "other.jsonl", '{"hello": "world"}\n')


def new_path(workdir):
    return str(workdir / "new.jsonl")


def a_directory(workdir):
    return str(workdir)


def missing_dir(workdir):
    return str(workdir / "nope" / "events.jsonl")


def missing_folder(workdir):
    return str(workdir / "nope") + "/"


def symlink_to_dir(workdir):
    link = str(workdir / "dirlink.jsonl")
    os.symlink(str(workdir), link)
    return link


def a_file(workdir):
    path = str(workdir / "plain-file")
    open(path, "w").close()
    return path


def snapshot_files(workdir):
    """Bytes of every event file and foreign file (not sidecar internals)."""
    out = {}
    for entry in os.scandir(str(workdir)):
        if entry.is_file(follow_symlinks=False) and not entry.name.endswith(".tmp"):
            with open(entry.path, "rb") as f:
                out[entry.name] = f.read()
    return out


M = ("--adapter", "mock")
CASES = {
    # name: (setup, args with {f} for the path and {w} for workdir, stdin, env, exit code, stderr fragment)
    "send_empty_text": (new_path, ("send", "{f}", "", *M), None, None, 2, "empty text"),
    "send_only_whitespace": (new_path, ("send", "{f}", "  \n\t ", *M), None, None, 2, "empty text"),
    "send_empty_stdin": (new_path, ("send", "{f}", *M), b"", None, 2, "empty text"),
    "send_invalid_utf8_stdin": (new_path, ("send", "{f}", *M), b"caf\xe9\n", None, 2, "not valid UTF-8"),
    "send_nul_byte": (new_path, ("send", "{f}", *M), b"a\x00b", None, 2, "NUL"),
    "send_10mb_prompt": (new_path, ("send", "{f}", *M), b"x" * (10 * 1024 * 1024), None, 2, "larger than"),
    "send_cwd_missing": (new_path, ("send", "{f}", "hi", "--cwd", "{w}/nope", *M), None, None, 2, "cwd is not a directory"),
    "send_cwd_is_a_file": (new_path, ("send", "{f}", "hi", "--cwd", "{w}/plain", *M), None, None, 2, "not a directory"),
    "send_path_is_a_directory": (a_directory, ("send", "{f}", "hi", *M), None, None, 2, "is a directory"),
    "send_path_in_missing_directory": (missing_dir, ("send", "{f}", "hi", *M), None, None, 2, "does not exist"),
    "send_path_symlink_to_directory": (symlink_to_dir, ("send", "{f}", "hi", *M), None, None, 2, "is a directory"),
    "send_to_a_text_file": (foreign_text, ("send", "{f}", "hi", *M), None, None, 2, "not a harnessctl event file"),
    "send_to_a_binary_file": (foreign_binary, ("send", "{f}", "hi", *M), None, None, 2, "not a harnessctl event file"),
    "send_to_other_jsonl": (foreign_json, ("send", "{f}", "hi", *M), None, None, 2, "not a harnessctl event file"),
    "send_cwd_conflict": (existing, ("send", "{f}", "hi", "--cwd", "/"), None, None, 2, "cwd is bound to this event path"),
    "send_model_conflict": (existing, ("send", "{f}", "hi", "--model", "m2"), None, None, 2, "model is bound"),
    "send_adapter_conflict": (existing, ("send", "{f}", "hi", "--adapter", "codex"), None, None, 2, "adapter is bound"),
    "send_unknown_adapter": (new_path, ("send", "{f}", "hi", "--adapter", "nosuch"), None, None, 2, "unknown adapter"),
    "send_no_adapter": (new_path, ("send", "{f}", "hi"), None, None, 2, "--adapter"),
    "send_unknown_flag": (new_path, ("send", "{f}", "hi", "--colour", "red", *M), None, None, 2, "unknown option"),
    "send_flag_without_value": (new_path, ("send", "{f}", "hi", "--cwd"), None, None, 2, "needs a value"),
    "send_empty_model": (new_path, ("send", "{f}", "hi", "--model=", *M), None, None, 2, "must not be empty"),
    "send_too_many_arguments": (new_path, ("send", "{f}", "hi", "there", *M), None, None, 2, "quote it"),
    "send_without_file": (new_path, ("send",), None, None, 2, "missing FILE"),
    "send_max_tokens_too_many_digits": (new_path, ("send", "{f}", "hi", "--max-tokens", "7" * 5000, *M), None, None, 2,
                                        "--max-tokens must be a whole number"),
    "send_max_tokens_beyond_10_18": (new_path, ("send", "{f}", "hi", "--max-tokens", "1" + "0" * 18, *M), None, None, 2,
                                     "--max-tokens must be a whole number"),
    "send_max_tokens_not_ascii_digits": (new_path, ("send", "{f}", "hi", "--max-tokens", "\u0663", *M), None, None, 2,
                                         "--max-tokens must be a whole number"),
    "unknown_command": (new_path, ("launch", "{f}"), None, None, 2, "unknown command"),
    "bad_timeout_knob": (new_path, ("send", "{f}", "hi", *M), None, {"HARNESSCTL_TIMEOUT": "soon"}, 2, "HARNESSCTL_TIMEOUT"),
    "status_missing_file": (new_path, ("status", "{f}"), None, None, 4, "no such event file"),
    "cancel_missing_file": (new_path, ("cancel", "{f}"), None, None, 4, "no such event file"),
    "reply_missing_file": (new_path, ("reply", "{f}", "req-1", "allow"), None, None, 4, "no such event file"),
    "status_on_a_text_file": (foreign_text, ("status", "{f}"), None, None, 2, "not a harnessctl event file"),
    "status_on_a_missing_directory": (missing_folder, ("status", "{f}"), None, None, 4, "no such directory"),
    "wait_any_without_file": (existing, ("wait", "--any"), None, None, 2, "wait --any: missing FILE"),
    "status_with_send_flag": (existing, ("status", "{f}", "--cwd", "/"), None, None, 2, "unknown option"),
    "reply_unknown_request": (existing, ("reply", "{f}", "req-7", "allow"), None, None, 3, "unknown request id"),
    "reply_not_a_request_id": (existing, ("reply", "{f}", "banana", "allow"), None, None, 3, "unknown request id"),
    "reply_expired_request": (with_expired_request, ("reply", "{f}", "req-1", "allow"), None, None, 3, "expired"),
    "reply_answer_not_allowed": (with_pending_request, ("reply", "{f}", "req-1", "maybe"), None, None, 2, "allow, deny"),
    "reply_empty_answer": (with_pending_request, ("reply", "{f}", "req-1"), b"  \n", None, 2, "empty answer"),
    "reply_unknown_question_id": (with_question, ("reply", "{f}", "req-1", '{"q9": "x"}'), None, None, 2, "unknown question"),
    "reply_question_non_string": (with_question, ("reply", "{f}", "req-1", '{"q1": 3}'), None, None, 2, "non-empty string"),
    "reply_without_request_id": (existing, ("reply", "{f}"), None, None, 2, "missing REQUEST_ID"),
}
